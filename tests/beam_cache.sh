#!/usr/bin/env bash
# tgc compile --beam: the first compile searches and its artifact still matches the interpreter;
# the second compile takes everything from the tuning cache and searches nothing. The agent is
# also reached through --tune-via: a wrapper command, and qemu for an aarch64 target.
# usage: beam_cache.sh TGC_BINARY REPO_ROOT
set -euo pipefail
tgc="$1"; root="$2"; build="$(cd "$(dirname "$tgc")" && pwd)"
source "$root/tests/tune/beam_lib.sh"

echo "== first compile: searches every kernel"
"$tgc" compile "$work/mlp.onnx" -o "$work/m1" --beam=2 --tune-cache="$work/tune.sqlite" 2> "$work/log1"
cat "$work/log1"
searched_all "$work/log1"
matches "$work/m1"

echo "== second compile: everything from the cache, through --tune-via"
start=$(date +%s.%N)
"$tgc" compile "$work/mlp.onnx" -o "$work/m2" --beam=2 --tune-cache="$work/tune.sqlite" \
  --tune-via="env TMPDIR='$work' '$build/tgc-agent'" 2> "$work/log2"
cat "$work/log2"
echo "second compile: $(echo "$(date +%s.%N) - $start" | bc) s"
all_from_cache "$work/log2"
matches "$work/m2"

echo "== a foreign triple needs --tune-via"
if "$tgc" compile "$work/mlp.onnx" -o "$work/ma" --triple=aarch64-linux-gnu --beam=1 --tune-cache="$work/tune.sqlite" 2> "$work/log3"; then
  echo "FAIL compiled for aarch64 with the host's agent"; fail=1
else
  check "one-line error naming --tune-via" grep -q -- "--tune-via" "$work/log3"
fi

if "$build/tgc-agent" < /dev/null 2> /dev/null | grep -q '^no-cuda '; then
  echo "== --target=cuda on an agent without CUDA"
  if "$tgc" compile "$work/mlp.onnx" -o "$work/mc" --target=cuda --beam=1 --tune-cache="$work/tune.sqlite" 2> "$work/log5"; then
    echo "FAIL tuned CUDA kernels on an agent without CUDA"; fail=1
  else
    cat "$work/log5"
    check "one-line error saying the agent has no CUDA device" grep -q "has no CUDA device" "$work/log5"
    check "the error is one line" [ "$(wc -l < "$work/log5")" -eq 1 ]
  fi
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
