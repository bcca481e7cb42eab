#!/bin/sh
# Command-line test of a generated-style executable (tgc_main).
#   run_cli.sh MODE EXE NPYTOOL WORKDIR [EMULATOR ARGS...]
# MODE: cpu | opencl (adds the binary-cache checks; exits 77 = skipped when there is no OpenCL device)
set -u
MODE=$1 EXE=$2 NPYTOOL=$3 WORK=$4
shift 4
# "$@" is the emulator command line (e.g. qemu-aarch64 -L /usr/aarch64-linux-gnu), possibly empty.
PROG=$(basename "$EXE")
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }

rm -rf "$WORK" && mkdir -p "$WORK" || exit 2
"$NPYTOOL" gen "$WORK/in" || exit 2
IN=$WORK/in
export POCL_KERNEL_CACHE=0 TGC_CL_CACHE="$WORK/clcache"

# exe ARGS...: runs the program (through the emulator, if any); stdout/stderr -> $WORK, status -> $RC
RC=0
exe() {
  if [ -n "${EMU:-}" ]; then $EMU "$EXE" "$@" >"$WORK/stdout" 2>"$WORK/stderr"; else "$EXE" "$@" >"$WORK/stdout" 2>"$WORK/stderr"; fi
  RC=$?
}
EMU="$*"

# expect_error DESCRIPTION PATTERN ARGS...: exit 1, one stderr line "PROG: error: ...PATTERN...", no -o output
expect_error() {
  desc=$1 pat=$2
  shift 2
  rm -rf "$WORK/err_out"
  exe "$@"
  lines=$(wc -l <"$WORK/stderr")
  if [ "$RC" -ne 1 ]; then fail "$desc: exit status $RC, expected 1"; fi
  if [ "$lines" -ne 1 ]; then fail "$desc: $lines stderr lines, expected 1: $(cat "$WORK/stderr")"; fi
  if ! grep -q "^$PROG: error: " "$WORK/stderr"; then fail "$desc: stderr does not start with '$PROG: error: ': $(cat "$WORK/stderr")"; fi
  if ! grep -qF -- "$pat" "$WORK/stderr"; then fail "$desc: stderr lacks '$pat': $(cat "$WORK/stderr")"; fi
  if [ -e "$WORK/err_out" ]; then fail "$desc: output directory was created"; fi
  echo "ok: $desc -> $(cat "$WORK/stderr")"
}

# ---- --help, --info
exe --help
[ "$RC" -eq 0 ] && grep -q "usage: $PROG" "$WORK/stdout" || fail "--help"
exe --info
[ "$RC" -eq 0 ] || fail "--info exit $RC"
for want in "model: rt_test" "backend: $MODE" "inputs: 2" "  a: f32[10,100]" "  b:0: f32[1000] (file-safe name: b_0)" \
  "outputs: 2" "  out: f32[10,100]" "  pos/count:0: i64[10] (file-safe name: pos_count_0)" "arena: 8096 bytes" \
  "weights: 4004 bytes, embedded" "launches: 4"; do
  grep -qF -- "$want" "$WORK/stdout" || fail "--info lacks '$want'"
done
echo "ok: --info"; sed 's/^/    /' "$WORK/stdout"

# ---- -i / -o against the reference (bit-exact: inputs are chosen so that f32 math is exact)
if [ "$MODE" = opencl ]; then export TGC_VERBOSE=1; fi
exe -i a="$IN/a.npy" -i b_0="$IN/b.npy" -o "$WORK/o1"
if [ "$MODE" = opencl ] && [ "$RC" -ne 0 ] && grep -qE "cannot load libOpenCL|no OpenCL" "$WORK/stderr"; then
  echo "SKIP: $(cat "$WORK/stderr")"
  exit 77
fi
[ "$RC" -eq 0 ] || fail "-i/-o run: $(cat "$WORK/stderr")"
if [ "$MODE" = opencl ]; then
  cp "$WORK/stderr" "$WORK/cl_first.log"
  n_src=$(grep -c "built from source" "$WORK/cl_first.log")
  n_bin=$(ls "$WORK/clcache" 2>/dev/null | grep -c '\.clbin$')
  [ "$n_src" -eq 3 ] || fail "first OpenCL run: $n_src programs built from source, expected 3"
  [ "$n_bin" -eq 3 ] || fail "first OpenCL run: $n_bin cache files, expected 3"
  echo "ok: first OpenCL run built $n_src programs, cached $n_bin binaries"; sed 's/^/    /' "$WORK/cl_first.log"
fi
"$NPYTOOL" cmp "$WORK/o1/out.npy" "$IN/expect/out.npy" || fail "out.npy differs from the reference"
"$NPYTOOL" cmp "$WORK/o1/pos_count_0.npy" "$IN/expect/pos_count_0.npy" || fail "pos_count_0.npy differs"
ls "$WORK/o1" | grep -q tmp && fail "temporary files left in -o directory"
[ "$(ls "$WORK/o1" | wc -l)" -eq 2 ] || fail "-o directory holds $(ls "$WORK/o1")"
echo "ok: -i/-o output matches the reference"

if [ "$MODE" = opencl ]; then
  exe -i a="$IN/a.npy" -i b_0="$IN/b.npy" -o "$WORK/o2"
  [ "$RC" -eq 0 ] || fail "second OpenCL run: $(cat "$WORK/stderr")"
  n_cached=$(grep -c "loaded from the binary cache" "$WORK/stderr")
  n_src=$(grep -c "built from source" "$WORK/stderr")
  [ "$n_cached" -eq 3 ] && [ "$n_src" -eq 0 ] || fail "second OpenCL run: $n_cached cached, $n_src from source"
  "$NPYTOOL" cmp "$WORK/o2/out.npy" "$IN/expect/out.npy" || fail "cached-binary run: out.npy differs"
  "$NPYTOOL" cmp "$WORK/o2/pos_count_0.npy" "$IN/expect/pos_count_0.npy" || fail "cached-binary run: counts differ"
  echo "ok: second OpenCL run used $n_cached cached binaries, same outputs"; sed 's/^/    /' "$WORK/stderr"
  # A corrupt cache entry (right key, garbage binary) must fall back to building from source.
  f=$(ls "$WORK/clcache"/*.clbin | head -n 1)
  head -c 48 "$f" >"$WORK/hdr" && printf 'garbage garbage garbage garbage' >>"$WORK/hdr" && mv "$WORK/hdr" "$f"
  exe -i a="$IN/a.npy" -i b_0="$IN/b.npy" -o "$WORK/o3"
  [ "$RC" -eq 0 ] && [ "$(grep -c "built from source" "$WORK/stderr")" -eq 1 ] || fail "corrupt cache entry: $(cat "$WORK/stderr")"
  "$NPYTOOL" cmp "$WORK/o3/out.npy" "$IN/expect/out.npy" || fail "after corrupt cache: out.npy differs"
  echo "ok: corrupt cache entry rebuilt from source"
  unset TGC_VERBOSE
fi

# ONNX names instead of file-safe ones, nested new -o directory, several thread counts
for t in 1 2 3 7; do
  exe --threads $t -i a="$IN/a.npy" -i "b:0=$IN/b.npy" -o "$WORK/o_t$t/deep/er"
  [ "$RC" -eq 0 ] || fail "--threads $t: $(cat "$WORK/stderr")"
  "$NPYTOOL" cmp "$WORK/o_t$t/deep/er/out.npy" "$IN/expect/out.npy" || fail "--threads $t: out.npy differs"
  "$NPYTOOL" cmp "$WORK/o_t$t/deep/er/pos_count_0.npy" "$IN/expect/pos_count_0.npy" || fail "--threads $t: counts differ"
done
echo "ok: ONNX input names, nested -o, --threads 1/2/3/7"

# -i without -o: checksums of the given inputs; out = sum(2*relu(.)+1)
exe --input=a="$IN/a.npy" --input "b_0=$IN/b.npy"
[ "$RC" -eq 0 ] && grep -q "^out: f32\[10,100\] checksum " "$WORK/stdout" || fail "-i without -o: $(cat "$WORK/stdout" "$WORK/stderr")"

# ---- no arguments: deterministic random inputs, checksums
exe
[ "$RC" -eq 0 ] || fail "no-argument run: $(cat "$WORK/stderr")"
cp "$WORK/stdout" "$WORK/noargs1"
[ "$(wc -l <"$WORK/noargs1")" -eq 2 ] && grep -q "^out: f32\[10,100\] checksum -\{0,1\}[0-9]" "$WORK/noargs1" &&
  grep -q "^pos/count:0: i64\[10\] checksum [0-9]" "$WORK/noargs1" || fail "no-argument output: $(cat "$WORK/noargs1")"
exe --threads 1
cmp -s "$WORK/stdout" "$WORK/noargs1" || fail "no-argument output not deterministic: $(cat "$WORK/stdout")"
echo "ok: no-argument run:"; sed 's/^/    /' "$WORK/noargs1"
exe -o "$WORK/o_rand"
[ "$RC" -eq 0 ] && [ -f "$WORK/o_rand/out.npy" ] || fail "-o with random inputs"

# ---- --bench: last line is JSON with median_ms
exe --bench 20 --threads 2
[ "$RC" -eq 0 ] || fail "--bench: $(cat "$WORK/stderr")"
last=$(tail -n 1 "$WORK/stdout")
echo "$last" | grep -qE '^\{.*"median_ms": [0-9]+\.[0-9]+.*\}$' || fail "--bench last line: $last"
for k in min_ms mean_ms iters threads; do echo "$last" | grep -q "\"$k\": " || fail "--bench JSON lacks $k"; done
echo "$last" | grep -q '"iters": 20' || fail "--bench iters: $last"
echo "ok: --bench: $last"
exe --bench=3 -i a="$IN/a.npy" -i b_0="$IN/b.npy" -o "$WORK/o_bench"
[ "$RC" -eq 0 ] && tail -n 1 "$WORK/stdout" | grep -q median_ms || fail "--bench with -i/-o"
"$NPYTOOL" cmp "$WORK/o_bench/out.npy" "$IN/expect/out.npy" || fail "--bench -o: out.npy differs"

# ---- errors: exit 1, one line, nothing written
expect_error "wrong shape" "-i a: expected f32[10,100], got f32[1000]" -i a="$IN/a_flat.npy" -i b_0="$IN/b.npy" -o "$WORK/err_out"
expect_error "wrong dtype" "expected f32[10,100], got f64[10,100]" -i a="$IN/a_f64.npy" -i b_0="$IN/b.npy" -o "$WORK/err_out"
expect_error "unknown input" "-i zzz: the model has no input of that name (inputs: a, b:0)" -i zzz="$IN/a.npy" -o "$WORK/err_out"
expect_error "missing file" "nonexistent.npy: cannot open" -i a="$IN/nonexistent.npy" -i b_0="$IN/b.npy" -o "$WORK/err_out"
expect_error "missing input" "missing input 'b:0' (pass -i b_0=FILE.npy)" -i a="$IN/a.npy" -o "$WORK/err_out"
expect_error "duplicate input" "given twice" -i a="$IN/a.npy" -i a="$IN/a.npy" -i b_0="$IN/b.npy" -o "$WORK/err_out"
expect_error "truncated file" "truncated data" -i a="$IN/trunc.npy" -i b_0="$IN/b.npy" -o "$WORK/err_out"
expect_error "not npy" "not a .npy file" -i a="$IN/garbage.npy" -i b_0="$IN/b.npy" -o "$WORK/err_out"
expect_error "fortran order" "Fortran-order" -i a="$IN/fortran.npy" -i b_0="$IN/b.npy" -o "$WORK/err_out"
expect_error "big-endian" "big-endian" -i a="$IN/bigend.npy" -i b_0="$IN/b.npy" -o "$WORK/err_out"
expect_error "-i without =" "expects NAME=FILE.npy" -i a -o "$WORK/err_out"
expect_error "unknown option" "unknown option '--frobnicate'" --frobnicate -o "$WORK/err_out"
expect_error "stray argument" "unexpected argument 'foo'" foo
expect_error "--bench 0" "--bench needs a positive" --bench 0 -o "$WORK/err_out"
expect_error "--bench x" "--bench needs a positive" --bench x
expect_error "--threads -1" "--threads needs" --threads -1
expect_error "-o without value" "-o needs a directory" -o
touch "$WORK/a_file"
expect_error "-o is a file" "cannot create directory" -o "$WORK/a_file"

if [ "$FAILS" -ne 0 ]; then
  echo "$FAILS check(s) failed" >&2
  exit 1
fi
echo "all command-line checks passed ($MODE${EMU:+, via $EMU})"
