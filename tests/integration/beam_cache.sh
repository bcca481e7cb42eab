#!/usr/bin/env bash
# tgc compile --beam for one target, candidates timed by tgc-agent on this machine: the first
# compile searches and its artifact still matches the interpreter; the second takes everything
# from the tuning cache (through --tune-via, a wrapper command) and searches nothing; an agent
# without the target's device is a clear error.
#   cpu:    shared objects; also a foreign triple needs --tune-via, --target=cuda on an agent
#           without CUDA, and an aarch64 target with the agent under qemu
#   qcom:   OpenCL C on this machine's OpenCL device (pocl here; host code for this machine)
#   vulkan: SPIR-V on this machine's Vulkan device (lavapipe here, the validation layer on, so a
#           candidate that misuses the API fails)
# usage: beam_cache.sh TGC_BINARY REPO_ROOT [cpu|qcom|vulkan]   (exit 77: no such device, skipped)
set -euo pipefail
tgc="$1"; root="$2"; target="${3:-cpu}"; build="$(cd "$(dirname "$tgc")" && pwd)"

# The target's compile flags, its agent API (greeting line), the cache key and an agent without it.
case "$target" in
  cpu) flags=(); api="" ;;
  qcom) flags=(--target=qcom --triple=x86_64-linux-gnu); api=opencl; title=OpenCL; line=2
        no_device="env OCL_ICD_VENDORS=/nonexistent-dir" ;;
  vulkan) flags=(--target=vulkan); api=vulkan; title=Vulkan; line=3
          no_device="env VK_DRIVER_FILES=/nonexistent.json VK_ICD_FILENAMES=/nonexistent.json" ;;
  *) echo "usage: beam_cache.sh TGC_BINARY REPO_ROOT [cpu|qcom|vulkan]" >&2; exit 2 ;;
esac
if [ -n "$api" ]; then
  greeting=$(echo quit | "$build/tgc-agent" | sed -n "${line}p")
  case "$greeting" in
    "$api "*) echo "agent: $greeting"; device="${greeting#"$api "}" ;;
    *) echo "skipped: tgc-agent has no $title device ($greeting)"; exit 77 ;;
  esac
  key="$api $target"; [ "$target" = vulkan ] && key="$key $device"  # SPIR-V: keyed by the device too
fi
source "$root/tests/integration/beam_lib.sh"

echo "== first compile ($target): searches every kernel"
"$tgc" compile "$work/mlp.onnx" -o "$work/m1" "${flags[@]}" --beam=2 --tune-cache="$work/tune.sqlite" 2> "$work/log1"
cat "$work/log1"
searched_all "$work/log1"
if [ -n "$api" ]; then
  check "timed on the agent's $title device" grep -qF "on $device" "$work/log1"
  if command -v sqlite3 > /dev/null; then
    check "cached under '$key'" [ "$(sqlite3 "$work/tune.sqlite" "select count(*) from tune where target = '$key'")" = "$distinct" ]
  fi
fi
matches "$work/m1"

echo "== second compile: everything from the cache, through --tune-via"
"$tgc" compile "$work/mlp.onnx" -o "$work/m2" "${flags[@]}" --beam=2 --tune-cache="$work/tune.sqlite" \
  --tune-via="env TMPDIR='$work' '$build/tgc-agent'" 2> "$work/log2"
cat "$work/log2"
all_from_cache "$work/log2"
matches "$work/m2"

# fails_in_one_line WHAT LOG PATTERN tgc-arguments...: the compile fails with one line naming it.
fails_in_one_line() {
  local what="$1" log="$2" pattern="$3"; shift 3
  echo "== $what"
  if "$tgc" compile "$work/mlp.onnx" "$@" --tune-cache="$work/tune.sqlite" 2> "$log"; then
    echo "FAIL compiled: $what"; fail=1
  else
    cat "$log"
    check "one-line error: $pattern" grep -q -- "$pattern" "$log"
    check "the error is one line" [ "$(wc -l < "$log")" -eq 1 ]
  fi
}

if [ -n "$api" ]; then
  fails_in_one_line "an agent without a $title device" "$work/log3" "has no $title device" -o "$work/m3" "${flags[@]}" \
    --beam=2 --tune-via="$no_device '$build/tgc-agent'"
  exit $fail
fi

fails_in_one_line "a foreign triple needs --tune-via" "$work/log3" "--tune-via" -o "$work/ma" --triple=aarch64-linux-gnu --beam=1
if "$build/tgc-agent" < /dev/null 2> /dev/null | grep -q '^no-cuda '; then
  fails_in_one_line "--target=cuda on an agent without CUDA" "$work/log5" "has no CUDA device" -o "$work/mc" --target=cuda --beam=1
fi

if command -v qemu-aarch64 > /dev/null && [ -x "$build/tgc-agent-aarch64" ] && [ -e "$build/runtime/aarch64-linux-gnu/libtgc_runtime.a" ]; then
  echo "== aarch64 target, agent under qemu"
  qemu="qemu-aarch64 -L /usr/aarch64-linux-gnu"
  "$tgc" compile "$work/mlp.onnx" -o "$work/ma" --triple=aarch64-linux-gnu --beam=1 --tune-cache="$work/tune.sqlite" \
    --tune-via="$qemu '$build/tgc-agent-aarch64'" 2> "$work/log4"
  cat "$work/log4"
  check "searched on an aarch64 agent" grep -qE '^beam: .* searched, .* on aarch64' "$work/log4"
  check "aarch64 searched all kernels (its own cache entries)" [ "$(summary "$work/log4" searched)" = "$distinct" ]
  matches "$work/ma" $qemu
else
  echo "== skipped aarch64 under qemu (needs qemu-aarch64 and the aarch64 agent and runtime)"
fi
exit $fail
