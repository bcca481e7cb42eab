#!/usr/bin/env bash
# tgc compile --beam: the first compile searches and its artifact still matches the interpreter;
# the second compile takes everything from the tuning cache and searches nothing. The agent is
# also reached through --tune-via: a wrapper command, and qemu for an aarch64 target.
# usage: beam_cache.sh TGC_BINARY REPO_ROOT
set -euo pipefail
tgc="$1"; root="$2"; build="$(cd "$(dirname "$tgc")" && pwd)"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cmp="/usr/bin/python3 $root/tests/compare_npy.py"
/usr/bin/python3 "$root/tests/tune/make_mlp.py" "$work"
"$tgc" eval "$work/mlp.onnx" -i x="$work/x.npy" -o "$work/want"
fail=0

source "$root/tests/tune/beam_lib.sh"

echo "== first compile: searches every kernel"
"$tgc" compile "$work/mlp.onnx" -o "$work/m1" --beam=2 --tune-cache="$work/tune.sqlite" 2> "$work/log1"
cat "$work/log1"
distinct=$(summary "$work/log1" distinct)
check "searched all $distinct distinct kernels" [ "$(summary "$work/log1" searched)" = "$distinct" ]
check "timed candidates" [ "$(summary "$work/log1" candidates)" -gt "$distinct" ]
check "progress lines per kernel" grep -qE '^beam: kernel 1/[0-9]+ .*: [0-9]+ candidates, best ' "$work/log1"
check "no candidate computed a different output" bash -c "! grep -q WRONG '$work/log1'"
"$work/m1" -i x="$work/x.npy" -o "$work/out1"
$cmp "$work/out1" "$work/want" --rtol 1e-4 --atol 1e-6 || fail=1

echo "== second compile: everything from the cache, through --tune-via"
start=$(date +%s.%N)
"$tgc" compile "$work/mlp.onnx" -o "$work/m2" --beam=2 --tune-cache="$work/tune.sqlite" \
  --tune-via="env TMPDIR='$work' '$build/tgc-agent'" 2> "$work/log2"
cat "$work/log2"
echo "second compile: $(echo "$(date +%s.%N) - $start" | bc) s"
check "searched nothing" [ "$(summary "$work/log2" searched)" = 0 ]
check "timed nothing" [ "$(summary "$work/log2" candidates)" = 0 ]
check "all $distinct kernels from the cache" [ "$(summary "$work/log2" hits)" = "$distinct" ]
"$work/m2" -i x="$work/x.npy" -o "$work/out2"
$cmp "$work/out2" "$work/want" --rtol 1e-4 --atol 1e-6 || fail=1

echo "== a foreign triple needs --tune-via"
if "$tgc" compile "$work/mlp.onnx" -o "$work/ma" --triple=aarch64-linux-gnu --beam=1 --tune-cache="$work/tune.sqlite" 2> "$work/log3"; then
  echo "FAIL compiled for aarch64 with the host's agent"; fail=1
else
  check "one-line error naming --tune-via" grep -q -- "--tune-via" "$work/log3"
fi

if command -v qemu-aarch64 > /dev/null && [ -x "$build/tgc-agent-aarch64" ] && [ -e "$build/runtime/aarch64-linux-gnu/libtgc_runtime.a" ]; then
  echo "== aarch64 target, agent under qemu"
  qemu="qemu-aarch64 -L /usr/aarch64-linux-gnu"
  "$tgc" compile "$work/mlp.onnx" -o "$work/ma" --triple=aarch64-linux-gnu --beam=1 --tune-cache="$work/tune.sqlite" \
    --tune-via="$qemu '$build/tgc-agent-aarch64'" 2> "$work/log4"
  cat "$work/log4"
  check "searched on an aarch64 agent" grep -qE '^beam: .* searched, .* on aarch64' "$work/log4"
  check "aarch64 searched all kernels (its own cache entries)" [ "$(summary "$work/log4" searched)" = "$distinct" ]
  $qemu "$work/ma" -i x="$work/x.npy" -o "$work/outa"
  $cmp "$work/outa" "$work/want" --rtol 1e-4 --atol 1e-6 || fail=1
else
  echo "== skipped aarch64 under qemu (needs qemu-aarch64 and the aarch64 agent and runtime)"
fi
exit $fail
