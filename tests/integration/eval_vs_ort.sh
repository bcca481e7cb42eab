#!/usr/bin/env bash
# Differential test: `tgc eval` (the reference interpreter) against onnxruntime-node on the
# bundled model's samples and on the real models small enough for the interpreter.
# usage: eval_vs_ort.sh TGC_BINARY REPO_ROOT
set -euo pipefail
tgc="$1"; root="$2"
real="$root/../shared/models/real"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
ort="$root/tools/ort/ort_run.js"
fail=0

check() {  # name model input_name input_file
  local name="$1" model="$2" in="$3" file="$4"
  "$tgc" eval "$model" -i "$in=$file" -o "$work/$name.tgc"
  node "$ort" "$model" -i "$in=$file" -o "$work/$name.ort"
  echo "== $name"
  /usr/bin/python3 "$root/tests/integration/compare_npy.py" "$work/$name.tgc" "$work/$name.ort" --rtol 1e-4 --atol 1e-5 || fail=1
}

for k in 0 1 2 3; do
  check "digits_$k" "$root/models/digits_cnn.onnx" image "$root/models/digits_samples/image_$k.npy"
done

if [ -d "$real" ]; then
  /usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
r = np.random.default_rng(0)
np.save(f"{sys.argv[1]}/hello.npy", r.standard_normal((1, 25, 96)).astype(np.float32))
np.save(f"{sys.argv[1]}/mel.npy", (r.standard_normal((1, 1280)) * 1000).astype(np.float32))
np.save(f"{sys.argv[1]}/cls.npy", r.standard_normal((1, 3, 48, 192)).astype(np.float32))
PY
  check hello_deepa "$real/hello_deepa.onnx" "onnx::Flatten_0" "$work/hello.npy"
  check melspectrogram "$real/melspectrogram.onnx" input "$work/mel.npy"
  check ppocr_cls "$real/ch_ppocr_mobile_v2.0_cls_infer.onnx" x "$work/cls.npy"
else
  echo "note: $real not found, real models skipped"
fi
exit $fail
