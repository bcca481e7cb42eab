#!/usr/bin/env bash
# The smallest models of tgc-bench's zoo (tools/bench/zoo_models.py --small: the same graphs at
# reduced input sizes) compiled for cpu with tgc, run, and compared with onnxruntime-node on the
# same seeded inputs (max|tgc - ort| <= 1e-3 * max|ort| per output, tgc-bench's check), so the zoo
# keeps generating, importing and agreeing.
# usage: zoo_vs_ort.sh TGC_BINARY REPO_ROOT
set -euo pipefail
tgc="$1"; root="$2"
ort="$root/tools/ort/ort_run.js"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
[ -d "$root/tools/ort/node_modules/onnxruntime-node" ] || { echo "FAIL onnxruntime-node is not installed (run tools/scripts/install-deps.sh)"; exit 1; }
models=blazeface,mobilenet_v3_small,squeezenet1_1,super_resolution,gru_speech
/usr/bin/python3 "$root/tools/bench/zoo_models.py" "$work" --small --only "$models"
fail=0
for name in ${models//,/ }; do
  echo "== $name"
  # Standard normal inputs from a fixed seed, one .npy per graph input; prints the -i arguments.
  args=$(/usr/bin/python3 - "$work/$name.onnx" "$work/$name.in" <<'PY'
import os, sys
import numpy as np
import onnx
m = onnx.load(sys.argv[1])
os.makedirs(sys.argv[2])
rng = np.random.default_rng(0)
for vi in m.graph.input:
    path = f"{sys.argv[2]}/{vi.name}.npy"
    np.save(path, rng.standard_normal([d.dim_value for d in vi.type.tensor_type.shape.dim]).astype(np.float32))
    print(f"-i {vi.name}={path}", end=" ")
PY
)
  if ! "$tgc" compile "$work/$name.onnx" --target=cpu -o "$work/$name" 2>"$work/log"; then
    cat "$work/log"; echo "FAIL $name: compile"; fail=1; continue
  fi
  # shellcheck disable=SC2086
  "$work/$name" $args -o "$work/$name.tgc" || { echo "FAIL $name: artifact failed"; fail=1; continue; }
  # shellcheck disable=SC2086
  node "$ort" "$work/$name.onnx" $args -o "$work/$name.ort"
  /usr/bin/python3 "$root/tests/integration/compare_npy.py" "$work/$name.tgc" "$work/$name.ort" --max-rel 1e-3 || {
    echo "FAIL $name: outputs differ"; fail=1; }
done
exit $fail
