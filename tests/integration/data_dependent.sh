#!/usr/bin/env bash
# Models whose output sizes depend on the data (tests/integration/make_data_dependent_models.py): each compiled
# once for cpu, run on every input set at 1 and 2 threads, and compared with onnxruntime-node
# (shapes exact, values within 1e-5 of max|ort|; integers exact).
# usage: data_dependent.sh TGC_BINARY REPO_ROOT
set -euo pipefail
tgc="$1"; root="$2"
ort="$root/tools/ort/ort_run.js"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
[ -d "$root/tools/ort/node_modules/onnxruntime-node" ] || { echo "FAIL onnxruntime-node is not installed (run tools/scripts/install-deps.sh)"; exit 1; }
/usr/bin/python3 "$root/tests/integration/make_data_dependent_models.py" "$work"
fail=0
while read -r name set inputs; do
  echo "== $name, input set $set"
  args=()
  for i in $inputs; do args+=(-i "$i=$work/$name.$set.$i.npy"); done
  flags=()  # <name>.flags: extra compile options
  [ -f "$work/$name.flags" ] && read -ra flags <"$work/$name.flags"
  if [ ! -x "$work/$name" ] && ! "$tgc" compile "$work/$name.onnx" "${flags[@]}" -o "$work/$name" 2>"$work/log"; then cat "$work/log"; fail=1; continue; fi
  node "$ort" "$work/$name.onnx" "${args[@]}" -o "$work/$name.$set.ort"
  for t in 1 2; do
    "$work/$name" "${args[@]}" --threads $t -o "$work/$name.$set.tgc$t" || { echo "FAIL $name set $set: artifact failed"; fail=1; continue; }
    /usr/bin/python3 "$root/tests/integration/compare_npy.py" "$work/$name.$set.tgc$t" "$work/$name.$set.ort" --max-rel 1e-5 || fail=1
  done
done <"$work/manifest.txt"
exit $fail
