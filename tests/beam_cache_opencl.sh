#!/usr/bin/env bash
# tgc compile --beam --target=qcom: OpenCL candidates timed by tgc-agent on this machine's OpenCL
# device (pocl here). The first compile searches and its artifact still matches the interpreter;
# the second takes everything from the cache; an agent without OpenCL is a clear error.
# usage: beam_cache_opencl.sh TGC_BINARY REPO_ROOT   (exit 77: no OpenCL device, skipped)
set -euo pipefail
tgc="$1"; root="$2"; build="$(cd "$(dirname "$tgc")" && pwd)"
greeting=$(echo quit | "$build/tgc-agent" | sed -n 2p)
case "$greeting" in
  "opencl "*) echo "agent: $greeting" ;;
  *) echo "skipped: tgc-agent has no OpenCL device ($greeting)"; exit 77 ;;
esac
source "$root/tests/tune/beam_lib.sh"
# The artifact's host code for this machine, so that it runs here on the same device.
qcom=(--target=qcom --triple=x86_64-linux-gnu)

echo "== first compile: searches every kernel on the OpenCL device"
"$tgc" compile "$work/mlp.onnx" -o "$work/m1" "${qcom[@]}" --beam=2 --tune-cache="$work/tune.sqlite" 2> "$work/log1"
cat "$work/log1"
searched_all "$work/log1"
check "timed on the agent's OpenCL device" grep -qF "on ${greeting#opencl }" "$work/log1"
if command -v sqlite3 > /dev/null; then
  check "cached under the OpenCL target" [ "$(sqlite3 "$work/tune.sqlite" "select count(*) from tune where target = 'opencl qcom'")" = "$distinct" ]
fi
matches "$work/m1"

echo "== second compile: everything from the cache, through --tune-via"
"$tgc" compile "$work/mlp.onnx" -o "$work/m2" "${qcom[@]}" --beam=2 --tune-cache="$work/tune.sqlite" \
  --tune-via="env TMPDIR='$work' '$build/tgc-agent'" 2> "$work/log2"
cat "$work/log2"
all_from_cache "$work/log2"
matches "$work/m2"

echo "== an agent without an OpenCL device"
if "$tgc" compile "$work/mlp.onnx" -o "$work/m3" "${qcom[@]}" --beam=2 --tune-cache="$work/tune.sqlite" \
    --tune-via="env OCL_ICD_VENDORS='$work/no-such-dir' '$build/tgc-agent'" 2> "$work/log3"; then
  echo "FAIL tuned OpenCL kernels on an agent without OpenCL"; fail=1
else
  cat "$work/log3"
  check "one-line error saying the agent has no OpenCL device" grep -q "has no OpenCL device" "$work/log3"
fi
exit $fail
