#!/usr/bin/env bash
# ONNX node test cases whose shape-determining inputs (axes, k, pads, scales, sizes, ...) are
# baked in as initializers (tests/conformance/make_const_node_tests.py), checked against the official
# expected outputs: with the reference interpreter, and compiled for cpu.
# usage: onnx_node_const.sh ONNX_CONFORMANCE_BINARY REPO_ROOT NODE_DATA_DIR
set -euo pipefail
conf="$1"; root="$2"; data="$3"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
list="$root/tests/conformance/onnx_node_const_pass.txt"
/usr/bin/python3 "$root/tests/conformance/make_const_node_tests.py" "$data" "$work/cases" "$list"
fail=0
echo "== interpreter"
"$conf" "$work/cases" --list "$list" || fail=1
echo "== cpu"
grep -v -x -f <(grep -v '^#' "$root/tests/conformance/onnx_node_const_cpu_skip.txt") "$list" >"$work/cpu_list.txt"
"$conf" "$work/cases" --target cpu --list "$work/cpu_list.txt" || fail=1
exit $fail
