#!/usr/bin/env bash
# --cpu and the artifact's CPU check, on CPUs emulated by qemu-user: an artifact started on a CPU
# without a feature its kernels were compiled for refuses in one line (exit 1, no SIGILL) and names
# what the CPU lacks and the --cpu it runs; one compiled for a level the CPU has runs and matches
# the expected probabilities. x86-64: x86-64-v4 and v3 under -cpu Haswell (qemu 7.2 emulates AVX2,
# no AVX-512), v3 and v2 under -cpu Nehalem (SSE4.2, no AVX); the executable and the C API of a
# --shared build. aarch64: neoverse-v1 (sve, dotprod, i8mm, bf16, ...) under -cpu cortex-a53 and max.
# usage: cpu_levels.sh TGC_BINARY REPO_ROOT
set -uo pipefail
tgc="$1"; root="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
. "$root/tests/integration/digits_lib.sh"

# Runs CMD... and leaves its stderr, less qemu's notes on CPU features TCG does not emulate, in $work/err.
run() {
  "$@" 2>"$work/err.raw"
  local rc=$?
  grep -v "^qemu-[a-z0-9_]*: warning: TCG doesn't support" "$work/err.raw" >"$work/err"
  return $rc
}

# expect_refusal WHAT LACKS HINT CMD...: exit 1 and one line saying the CPU lacks LACKS (a feature)
# and naming --cpu=HINT.
expect_refusal() {
  local what="$1" lacks="$2" hint="$3"; shift 3
  run "$@" -i image="$samples/image_0.npy" >/dev/null
  local rc=$?
  if [ $rc -ne 1 ] || [ "$(wc -l <"$work/err")" -ne 1 ] || ! grep -q "this CPU lacks .*\b$lacks\b" "$work/err" ||
     ! grep -q -- "(recompile with --cpu=$hint, which this CPU runs" "$work/err"; then
    echo "FAIL $what: exit $rc (want 1 and one line naming $lacks and --cpu=$hint): $(cat "$work/err")"; fail=1
  else
    echo "ok   $what: $(cat "$work/err")"
  fi
}

# expect_runs WHAT CMD...: samples 0 and 3 give the expected probabilities.
expect_runs() {
  local what="$1"; shift
  for k in 0 3; do
    if ! run "$@" -i image="$samples/image_$k.npy" -o "$work/out_$k"; then
      echo "FAIL $what: sample $k: $(cat "$work/err")"; fail=1; return
    fi
    expect_probs "$work/out_$k" $k
  done
  echo "ok   $what runs"
}

# features EXE [RUNNER...]: the features past the baseline that --info lists.
features() { local exe="$1"; shift; "$@" "$exe" --info | sed -n 's/^cpu: .* (features past the baseline: \(.*\))$/\1/p'; }

echo "== --cpu names LLVM does not know are refused in one line"
"$tgc" compile "$model" --cpu=pentium-9000 -o "$work/bad" 2>"$work/err" && { echo "FAIL --cpu=pentium-9000 compiled"; fail=1; }
[ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "^tgc: error: --cpu=pentium-9000: not a CPU LLVM knows for" "$work/err" ||
  { echo "FAIL --cpu=pentium-9000: $(cat "$work/err")"; fail=1; }

ran=0
host_arch="$(uname -m)"
if [ "$host_arch" = x86_64 ] && command -v qemu-x86_64 >/dev/null; then
  ran=1
  x86() { qemu-x86_64 -cpu "$@"; }
  for level in x86-64-v2 x86-64-v3 x86-64-v4; do
    "$tgc" compile "$model" --cpu=$level -o "$work/$level" 2>"$work/compile" || { cat "$work/compile"; fail=1; }
    grep -q "cpu=$level," "$work/compile" || { echo "FAIL $level: $(cat "$work/compile")"; fail=1; }
  done
  echo "== the features each level records"
  for want in "x86-64-v2 sse4.2 avx" "x86-64-v3 avx2 avx512f" "x86-64-v4 avx512bw -"; do
    set -- $want
    f=",$(features "$work/$1"),"
    echo "$1: $f"
    case "$f" in *",$2,"*) ;; *) echo "FAIL $1 records no $2"; fail=1 ;; esac
    [ "$3" = - ] || case "$f" in *",$3,"*) echo "FAIL $1 records $3"; fail=1 ;; esac
  done

  echo "== x86-64-v4 and v3 on Haswell, v3 and v2 on Nehalem"
  expect_refusal "x86-64-v4 on Haswell" avx512f x86-64-v3 x86 Haswell "$work/x86-64-v4"
  expect_runs "x86-64-v3 on Haswell" x86 Haswell "$work/x86-64-v3"
  expect_refusal "x86-64-v3 on Nehalem" avx2 x86-64-v2 x86 Nehalem "$work/x86-64-v3"
  expect_runs "x86-64-v2 on Nehalem" x86 Nehalem "$work/x86-64-v2"
  if grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo; then
    expect_runs "x86-64-v4 on this machine" "$work/x86-64-v4"
  fi

  echo "== the default: this machine's CPU"
  "$tgc" compile "$model" -o "$work/host" 2>/dev/null || fail=1
  hf=",$(features "$work/host"),"
  echo "host: $hf"
  expect_runs "the default on this machine" "$work/host"
  case "$hf" in
    *,avx,*) expect_refusal "the default on Nehalem" avx x86-64-v2 x86 Nehalem "$work/host" ;;
    *) expect_runs "the default on Nehalem" x86 Nehalem "$work/host" ;;
  esac

  echo "== --shared: the C API's create fails with the error"
  for level in x86-64-v3 x86-64-v4; do
    "$tgc" compile "$model" --shared --cpu=$level -o "$work/$level.so/libcpumodel.so" 2>/dev/null || fail=1
  done
  grep -q "^/\* The kernels were built for --cpu=x86-64-v4 and use .*avx512f.*: on a CPU without one of them, cpumodel_create fails" \
    "$work/x86-64-v4.so/cpumodel.h" || { echo "FAIL cpumodel.h does not say which CPU features the kernels use"; fail=1; }
  cc -O2 -I"$work/x86-64-v3.so" -I"$root/tests/integration/c_api" "$root/tests/integration/c_api/cpu_check.c" \
    -L"$work/x86-64-v3.so" -lcpumodel -lm -o "$work/cpu_check" || fail=1
  args=("$samples/image_0.npy" "$samples/expected_probs_0.npy")
  LD_LIBRARY_PATH="$work/x86-64-v3.so" run x86 Haswell "$work/cpu_check" "${args[@]}" ||
    { echo "FAIL x86-64-v3 .so on Haswell: exit $?: $(cat "$work/err")"; fail=1; }
  LD_LIBRARY_PATH="$work/x86-64-v4.so" run x86 Haswell "$work/cpu_check" "${args[@]}"
  rc=$?
  if [ $rc -ne 3 ] || ! grep -q "^create failed: model 'cpumodel' was compiled for x86-64 CPUs with the features of --cpu=x86-64-v4; this CPU lacks avx512f" "$work/err"; then
    echo "FAIL x86-64-v4 .so on Haswell: exit $rc (want 3, create failing): $(cat "$work/err")"; fail=1
  else
    echo "ok   x86-64-v4 .so on Haswell: $(cat "$work/err")"
  fi
fi

if [ -e "$(dirname "$tgc")/runtime/aarch64-linux-gnu/libtgc_runtime.a" ] && command -v qemu-aarch64 >/dev/null; then
  ran=1
  a64() { qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "$@"; }
  echo "== aarch64: neoverse-v1 on a Cortex-A53 and on qemu's max; generic on the A53"
  "$tgc" compile "$model" --triple=aarch64-linux-gnu --cpu=neoverse-v1 -o "$work/a64_v1" 2>/dev/null || fail=1
  "$tgc" compile "$model" --triple=aarch64-linux-gnu -o "$work/a64_generic" 2>/dev/null || fail=1
  f=",$(features "$work/a64_v1" a64 max),"
  echo "neoverse-v1: $f"
  case "$f" in *,dotprod,*sve,*) ;; *) echo "FAIL neoverse-v1 records no dotprod, sve"; fail=1 ;; esac
  [ "$(features "$work/a64_generic" a64 max)" = none ] || { echo "FAIL generic records features"; fail=1; }
  expect_refusal "neoverse-v1 on cortex-a53" dotprod generic a64 cortex-a53 "$work/a64_v1"
  expect_runs "neoverse-v1 on max" a64 max "$work/a64_v1"
  expect_runs "generic on cortex-a53" a64 cortex-a53 "$work/a64_generic"
fi

[ $ran = 1 ] || { echo "skipped: neither qemu-x86_64 on an x86-64 machine nor qemu-aarch64 with the aarch64 runtime"; exit 77; }
[ $fail = 0 ] && echo "cpu_levels: all passed"
exit $fail
