#!/usr/bin/env bash
# tgc compile --beam --target=vulkan: SPIR-V candidates timed by tgc-agent on this machine's
# Vulkan device (lavapipe here, validation layer on, so a candidate that misuses the API fails).
# The first compile searches and its artifact still matches the interpreter; the second takes
# everything from the cache; an agent without a Vulkan device is a clear error.
# usage: beam_cache_vulkan.sh TGC_BINARY REPO_ROOT   (exit 77: no Vulkan device, skipped)
set -euo pipefail
tgc="$1"; root="$2"; build="$(cd "$(dirname "$tgc")" && pwd)"
greeting=$(echo quit | "$build/tgc-agent" | sed -n 3p)
case "$greeting" in
  "vulkan "*) echo "agent: $greeting" ;;
  *) echo "skipped: tgc-agent has no Vulkan device ($greeting)"; exit 77 ;;
esac
source "$root/tests/tune/beam_lib.sh"
device="${greeting#vulkan }"

echo "== first compile: searches every kernel on the Vulkan device"
"$tgc" compile "$work/mlp.onnx" -o "$work/m1" --target=vulkan --beam=2 --tune-cache="$work/tune.sqlite" 2> "$work/log1"
cat "$work/log1"
searched_all "$work/log1"
check "timed on the agent's Vulkan device" grep -qF "on $device" "$work/log1"
if command -v sqlite3 > /dev/null; then
  check "cached under the Vulkan target and device" \
    [ "$(sqlite3 "$work/tune.sqlite" "select count(*) from tune where target = 'vulkan vulkan $device'")" = "$distinct" ]
fi
matches "$work/m1"

echo "== second compile: everything from the cache, through --tune-via"
"$tgc" compile "$work/mlp.onnx" -o "$work/m2" --target=vulkan --beam=2 --tune-cache="$work/tune.sqlite" \
  --tune-via="env TMPDIR='$work' '$build/tgc-agent'" 2> "$work/log2"
cat "$work/log2"
all_from_cache "$work/log2"
matches "$work/m2"

echo "== an agent without a Vulkan device"
if "$tgc" compile "$work/mlp.onnx" -o "$work/m3" --target=vulkan --beam=2 --tune-cache="$work/tune.sqlite" \
    --tune-via="env VK_DRIVER_FILES=/nonexistent.json VK_ICD_FILENAMES=/nonexistent.json '$build/tgc-agent'" 2> "$work/log3"; then
  echo "FAIL tuned Vulkan kernels on an agent without Vulkan"; fail=1
else
  cat "$work/log3"
  check "one-line error saying the agent has no Vulkan device" grep -q "has no Vulkan device" "$work/log3"
  check "the error is one line" [ "$(wc -l < "$work/log3")" -eq 1 ]
fi
exit $fail
