#!/usr/bin/env bash
# The main job: build tgc, compile the bundled digits CNN into a standalone executable, run it on
# the sample images and check its outputs against the probabilities computed at training time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
"$root/tools/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" --target tgc
tgc="$root/build/tgc"
out="$root/build/main-job"
echo "== kernels of models/digits_cnn.onnx"
"$tgc" inspect "$root/models/digits_cnn.onnx" --stage=kernels | grep -E '^(#|k[0-9])'
echo "== compile"
"$tgc" compile "$root/models/digits_cnn.onnx" -o "$out/digits"
echo "== run the artifact"
"$out/digits" --info
for k in 0 1 2 3; do
  "$out/digits" -i image="$root/models/digits_samples/image_$k.npy" -o "$out/$k"
  /usr/bin/python3 - "$out/$k/probs.npy" "$root/models/digits_samples/expected_probs_$k.npy" "$k" "$root/models/digits_samples/labels.txt" <<'PY'
import sys, numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
label = open(sys.argv[4]).read().split("\n")[int(sys.argv[3])].split()[1]
err = float(np.abs(got - want).max())
print(f"image_{sys.argv[3]}: predicted {int(got.argmax())} (true label {label}), max abs diff to expected {err:.2g}")
sys.exit(0 if err < 1e-4 else 1)
PY
done
"$out/digits" --bench 200 | tail -1
