#!/usr/bin/env bash
# Ops and op variants that ONNX's node tests (Debian's onnx 1.12) leave out, as small models
# written by tests/integration/make_op_models.py: each compiled for cpu with tgc, run, and compared with
# onnxruntime-node on the same inputs (max|tgc - ort| <= 1e-4 * max|ort|; integer outputs exact;
# the models in exact.txt, quantizers and the quantized chains, bit for bit, as on x86 CPU targets
# tgc sums float convs before a quantizer in onnxruntime's order; those in tolerances.txt with
# their own), and the quantized chains on vulkan as well.
# usage: ops_vs_ort.sh TGC_BINARY REPO_ROOT
set -euo pipefail
tgc="$1"; root="$2"
ort="$root/tools/ort/ort_run.js"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
[ -d "$root/tools/ort/node_modules/onnxruntime-node" ] || { echo "FAIL onnxruntime-node is not installed (run tools/scripts/install-deps.sh)"; exit 1; }
/usr/bin/python3 "$root/tests/integration/make_op_models.py" "$work"
fail=0
while read -r name inputs; do
  echo "== $name"
  args=()
  for i in $inputs; do args+=(-i "$i=$work/$name.$i.npy"); done
  if ! "$tgc" compile "$work/$name.onnx" -o "$work/$name" 2>"$work/log"; then cat "$work/log"; fail=1; continue; fi
  "$work/$name" "${args[@]}" -o "$work/$name.tgc" || { echo "FAIL $name: artifact failed"; fail=1; continue; }
  node "$ort" "$work/$name.onnx" "${args[@]}" -o "$work/$name.ort"
  tol=(--max-rel 1e-4); grep -qx "$name" "$work/exact.txt" && tol=(--max-rel 0)
  own=$(sed -n "s/^$name //p" "$work/tolerances.txt"); [ -n "$own" ] && read -ra tol <<<"$own"
  /usr/bin/python3 "$root/tests/integration/compare_npy.py" "$work/$name.tgc" "$work/$name.ort" "${tol[@]}" || fail=1
done <"$work/manifest.txt"
# The quantized chains on a GPU target too (vulkan, on lavapipe here): within one quantization
# step of onnxruntime's (its float ops may round otherwise than the CPU's).
for name in dynamic_quant_chain dynamic_quant_chain_wide dynamic_quant_chain_int; do
  echo "== $name (vulkan)"
  "$tgc" compile "$work/$name.onnx" --target=vulkan -o "$work/$name.vk" 2>"$work/log" || { cat "$work/log"; fail=1; continue; }
  "$work/$name.vk" -i "x=$work/$name.x.npy" -o "$work/$name.vko" || { echo "FAIL $name: vulkan artifact failed"; fail=1; continue; }
  /usr/bin/python3 "$root/tests/integration/compare_npy.py" "$work/$name.vko" "$work/$name.ort" --max-rel 5e-3 --mean-rel 1e-5 || fail=1
done
exit $fail
