#!/usr/bin/env bash
# Smoke test of tgc-bench (not a speed test): on the bundled model and a matmul whose operand is packed in panels (passes/pack.h) it
# must compile, run both sides, find their outputs in agreement and print a tgc/ort ratio; then
# the same with --beam and with --batch.
# usage: bench_smoke.sh TGC_BENCH WORK_DIR
set -euo pipefail
bench="$1"; work="$2"
rm -rf "$work"
"$bench" --filter '^(digits_cnn|matmul_1024)$' --iters 3 --rounds 1 --budget 0.1 --work "$work" >"$work.out" 2>"$work.err" || {
  cat "$work.out" "$work.err"; echo "bench_smoke: tgc-bench failed"; exit 1; }
cat "$work.out"
for c in digits_cnn matmul_1024; do
  grep -Eq "\] $c: .*tgc/ort [0-9]+\.[0-9]+" "$work.err" || { cat "$work.err"; echo "bench_smoke: no ratio for $c"; exit 1; }
  grep -Eq "^$c .* ok \(err [0-9.e+-]+\)" "$work.out" || { echo "bench_smoke: outputs of $c not checked"; exit 1; }
done
grep -Eq "^ceiling sgemm 1024 @1T: [0-9.]+ GFLOP/s" "$work.out" || { echo "bench_smoke: no sgemm ceiling"; exit 1; }

# --beam: a third side, the artifact compiled with --beam, checked and timed like the others.
"$bench" --filter '^digits_cnn$' --models-only --beam 1 --iters 3 --rounds 1 --budget 0.1 --work "$work" >"$work.out" 2>"$work.err" || {
  cat "$work.out" "$work.err"; echo "bench_smoke: tgc-bench --beam failed"; exit 1; }
cat "$work.out"
grep -Eq "\] digits_cnn: .*beam/ort [0-9]+\.[0-9]+" "$work.err" || { cat "$work.err"; echo "bench_smoke: no beam ratio"; exit 1; }
grep -Eq "^digits_cnn .* ok \(err [0-9.e+-]+\); beam ok \(err [0-9.e+-]+\)" "$work.out" || { echo "bench_smoke: beam outputs not checked"; exit 1; }
[ -s "$work/tune.sqlite" ] || { echo "bench_smoke: no tuning cache in the work directory"; exit 1; }
# --batch: a real model at batch 3 with its batch dim left to run time in tgc.
"$bench" --filter '^embedding_model$' --batch 3 --iters 3 --rounds 1 --budget 0.1 --work "$work" >"$work.out" 2>"$work.err" || {
  cat "$work.out" "$work.err"; echo "bench_smoke: tgc-bench --batch failed"; exit 1; }
cat "$work.out"
grep -Eq "^embedding_model_batch3 +input_1=3x76x32x1 .* ok \(err [0-9.e+-]+\)" "$work.out" || { echo "bench_smoke: batch-3 outputs not checked"; exit 1; }
echo "bench_smoke: ok"
