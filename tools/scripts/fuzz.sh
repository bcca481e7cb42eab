#!/usr/bin/env bash
# Runs the libFuzzer harnesses of tests/fuzz (docs/robustness.md), one job each, for a time or an
# execution count, and keeps every crash input as a regression file under
# tests/fuzz/regressions/<harness>/ (replayed by ctest's fuzz_replay_<harness> in every build).
#
#   tools/scripts/fuzz.sh [--time S | --runs N] [--build DIR] [HARNESS...]
#
# HARNESS: npy rt_npy onnx gguf tune_cache agent_reply (default: all). The build (clang-19,
# -DTGC_FUZZ=ON -DTGC_SANITIZE=address,undefined) goes to DIR (default build-fuzz); the growing
# corpus stays in DIR/fuzz-corpus/<harness>, seeded from tests/fuzz/corpus/<harness>. Prints one
# line per harness: executions, coverage (edges), crashes, seconds; exits 1 if any harness crashed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build-fuzz"
limit=(-max_total_time=30)
harnesses=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2"); shift 2 ;;
    --build) build="$(realpath -m "$2")"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 1 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
[ ${#harnesses[@]} -gt 0 ] || harnesses=(npy rt_npy onnx gguf tune_cache agent_reply)

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-19 \
    -DCMAKE_CXX_COMPILER=clang++-19 -DTGC_FUZZ=ON -DTGC_SANITIZE=address,undefined >/dev/null
fi
cmake --build "$build" --target $(printf 'fuzz_%s ' "${harnesses[@]}")

# Leaks are reported (detect_leaks), UB aborts (the build has -fno-sanitize-recover).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
failed=0
printf '%-12s %12s %8s %8s %8s\n' harness executions cov crashes seconds
for h in "${harnesses[@]}"; do
  corpus="$build/fuzz-corpus/$h" artifacts="$build/fuzz-artifacts/$h" log="$build/fuzz-logs/$h.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")" "$root/tests/fuzz/regressions/$h"
  start=$(date +%s)
  # -rss/-malloc limits: an input that makes a reader allocate more than 2 GiB is a finding.
  set +e
  (cd "$artifacts" && "$build/tests/fuzz/fuzz_$h" "${limit[@]}" -timeout=20 -rss_limit_mb=2560 -malloc_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$root/tests/fuzz/corpus/$h") >"$log" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  crashes=0
  for f in "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-*; do
    [ -f "$f" ] || continue
    cp "$f" "$root/tests/fuzz/regressions/$h/"
    rm "$f"
    crashes=$((crashes + 1))
  done
  [ "$rc" -eq 0 ] || [ "$crashes" -gt 0 ] || crashes="rc=$rc"
  printf '%-12s %12s %8s %8s %8s\n' "$h" "${execs:-?}" "${cov:-?}" "$crashes" "$secs"
  if [ "$crashes" != 0 ]; then
    failed=1
    echo "  log: $log (inputs kept in tests/fuzz/regressions/$h/)"
    grep -m3 -E 'ERROR: |runtime error|SUMMARY' "$log" | sed 's/^/  /' || true
  fi
done
exit $failed
