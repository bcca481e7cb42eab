#!/usr/bin/env bash
# The GPU targets checked on a machine with a GPU, in two steps, because tgc (LLVM, clang, lld)
# runs where it is built and the GPU may be elsewhere:
#
#   tools/scripts/gpu-check.sh prepare DIR [TARGET...]   here: compile every real model (and the
#       bundled digits CNN, and batches and run-time dims of four of them: shape_cases) for each
#       TARGET (default: cuda qcom), with seeded inputs and
#       onnxruntime-node's outputs; and every Tensor API op for cuda, with the interpreter's
#       outputs. Needs build/ (tools/scripts/test.sh builds it; TGC=path overrides build/tgc).
#       TARGET none: no artifacts; the models are copied into DIR/models instead, to compile there.
#   tools/scripts/gpu-check.sh compile DIR LABEL TGC_ARGS...   compile every case (those whose name
#       matches $TGC_CASES, a grep -E pattern, if set) with `tgc compile TGC_ARGS` into DIR/LABEL,
#       which `run` then checks. On the GPU machine with a tgc from tools/scripts/pack-tgc.sh
#       (TGC=path), this is how --beam tunes there: compile DIR vulkan-beam2 --target=vulkan --beam=2.
#   tools/scripts/gpu-check.sh run DIR [BENCH_RUNS]      on the GPU machine (bash, python3 + numpy):
#       runs each artifact, compares its outputs (models: max|tgc-ort| <= 1e-4 max|ort|, or the
#       tolerance of tests/integration/real_models_lib.sh at the label's --precision; ops:
#       |tgc-interp| <= atol + rtol|interp|, the case's tolerance), times each model artifact (--bench, median), checks
#       every PTX kernel with ptxas when it is there, and prints a table. Exit 1 on any failure.
#
# TARGET qcom is built for the host triple (an x86-64 machine with an OpenCL GPU driver).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

prepare() {
  local dir="$1"; shift
  local targets=("$@")
  [ $# -gt 0 ] || targets=(cuda qcom)
  local tgc="${TGC:-$root/build/tgc}"
  real="${TGC_REAL_MODELS:-$root/../shared/models/real}"
  # shellcheck source=tests/integration/real_models_lib.sh
  . "$root/tests/integration/real_models_lib.sh"
  rm -rf "$dir"; mkdir -p "$dir/inputs" "$dir/ort" "$dir/ptx"
  real_model_inputs "$dir/inputs"
  cp "$root/models/digits_samples/image_0.npy" "$dir/inputs/digits_image.npy"
  cp "$root/tests/integration/compare_npy.py" "$root/tests/integration/real_models_lib.sh" "$dir/"
  mkdir -p "$dir/models"
  cp "$root/models/digits_cnn.onnx" "$dir/models/"
  shape_case_inputs "$dir/inputs"
  { real_model_cases; echo "digits|digits_cnn.onnx||image=digits_image.npy|"; shape_cases; } > "$dir/cases.txt"
  : > "$dir/targets.txt"
  while IFS='|' read -r name model cargs ins ort_only; do
    [ -f "$dir/models/$model" ] || cp "$real/$model" "$dir/models/"
    mapfile -t o < <(input_args "$dir/inputs" "$ins $ort_only")
    node "$root/tools/ort/ort_run.js" "$dir/models/$model" "${o[@]}" -o "$dir/ort/$name" >/dev/null
  done < "$dir/cases.txt"
  for t in "${targets[@]}"; do
    [ "$t" != none ] || continue
    local triple=()
    [ "$t" != qcom ] || triple=(--triple=x86_64-linux-gnu)
    compile "$dir" "$t" --target="$t" "${triple[@]}" --cpu=x86-64-v2
    if [ "$t" = cuda ]; then
      while IFS='|' read -r name model cargs _; do
        mkdir -p "$dir/ptx/$name"
        # shellcheck disable=SC2086
        "$tgc" inspect --target=cuda "$dir/models/$model" $cargs --stage=blob -o "$dir/ptx/$name" >/dev/null
      done < "$dir/cases.txt"
    fi
  done
  # The models travel only to be compiled there (TARGET none); artifacts carry their weights.
  printf '%s\n' "${targets[@]}" | grep -qx none || rm -rf "$dir/models"
  if printf '%s\n' "${targets[@]}" | grep -qx cuda; then
    TGC_GPU_BUNDLE="$dir" "$root/build/tests/integration/tgc_compiled_tests" --gtest_filter='*Cuda*' >/dev/null
    strip "$dir"/ops/*/model
  fi
  echo "prepared $dir: $(du -sh "$dir" | cut -f1)"
}

# Batches and run-time dims on the GPU backends (tests/integration/dynamic_dims.sh checks them on lavapipe and
# pocl): a batch bound at run time (cls, embedding), and models compiled for sizes up to a bound
# run at a smaller one (rec's width, det's height and width in multiples of 32). Same form as
# real_model_cases.
shape_cases() {
  cat <<'CASES'
cls_batch2|ch_ppocr_mobile_v2.0_cls_infer.onnx|--input-shape x=?,3,48,192|x=cls_batch2.npy|
embedding_batch3|embedding_model.onnx||input_1=emb_batch3.npy|
rec_width160_of_320|ch_PP-OCRv4_rec_infer.onnx|--input-shape x=1,3,48,? --dynamic p2o.DynamicDimension.1=320|x=rec_w160.npy|
det_256x192_of_320x320|ch_PP-OCRv4_det_infer.onnx|--input-shape x=1,3,?,? --dynamic p2o.DynamicDimension.1=320/32 --dynamic p2o.DynamicDimension.2=320/32|x=det_256x192.npy|
CASES
}

shape_case_inputs() {  # dir (holding real_model_inputs' files)
/usr/bin/python3 - "$1" <<'PY'
import sys, numpy as np
d = sys.argv[1]
r = np.random.default_rng(1)
np.save(f"{d}/cls_batch2.npy", r.standard_normal((2, 3, 48, 192)).astype(np.float32))
np.save(f"{d}/emb_batch3.npy", r.standard_normal((3, 76, 32, 1)).astype(np.float32))
np.save(f"{d}/rec_w160.npy", r.standard_normal((1, 3, 48, 160)).astype(np.float32))
np.save(f"{d}/det_256x192.npy", np.ascontiguousarray(np.load(f"{d}/det_x.npy")[:, :, :256, :192]))
PY
}

# compile DIR LABEL TGC_ARGS...: every case of DIR/cases.txt into DIR/LABEL, LABEL added to targets.txt.
# A case that does not compile (its model left out of the bundle, a tgc error) is reported and
# skipped, and the others still compile; exit 1 at the end if any failed.
compile() {
  local dir="$1" label="$2"; shift 2
  local tgc="${TGC:-$root/build/tgc}" failed=() arg
  mkdir -p "$dir/$label"
  echo fp32 > "$dir/$label/precision"
  for arg in "$@"; do [ "${arg#--precision=}" = "$arg" ] || echo "${arg#--precision=}" > "$dir/$label/precision"; done
  while IFS='|' read -r name model cargs _; do
    [ -z "${TGC_CASES:-}" ] || echo "$name" | grep -qE "$TGC_CASES" || continue
    echo "== $name ($label)"
    # shellcheck disable=SC2086
    if ! "$tgc" compile "$@" "$dir/models/$model" $cargs -o "$dir/$label/$name" </dev/null; then
      failed+=("$name"); continue
    fi
    strip "$dir/$label/$name" 2>/dev/null || true   # smaller to carry; strip may be missing there
  done < "$dir/cases.txt"
  grep -qx "$label" "$dir/targets.txt" 2>/dev/null || echo "$label" >> "$dir/targets.txt"
  [ ${#failed[@]} -eq 0 ] || { echo "gpu-check: $label: did not compile: ${failed[*]}" >&2; return 1; }
}

run() {
  local dir; dir="$(cd "$1" && pwd)"
  local runs="${2:-200}" fail=0
  local cmp="python3 $dir/compare_npy.py"
  local work; work="$(mktemp -d)"
  # shellcheck source=tests/integration/real_models_lib.sh
  . "$dir/real_models_lib.sh"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  if command -v ptxas >/dev/null && compgen -G "$dir/ptx/*/*.bin" >/dev/null; then
    local n=0 bad=0 f
    for f in "$dir"/ptx/*/*.bin; do
      n=$((n + 1))
      ptxas -arch="$(grep -m1 -o "sm_[0-9a-z]*" "$f" || echo sm_90)" "$f" -o /dev/null 2>"$work/ptxas.log" || { bad=$((bad + 1)); echo "ptxas FAIL $f: $(head -3 "$work/ptxas.log")"; }
    done
    echo "ptxas: $((n - bad))/$n PTX kernels accepted"
    [ $bad -eq 0 ] || fail=1
  fi
  if [ -d "$dir/ops" ]; then
    local n=0 bad=0 c
    for c in "$dir"/ops/*/; do
      n=$((n + 1))
      mkdir -p "$c/want"; cp "$c/want.npy" "$c/want/out.npy"
      # shellcheck disable=SC2046
      # `tol` (rtol atol): the case's tolerance, written by the test (f16 cases are looser).
      if ! (cd "$c" && ./model $(cat args) -o out >log 2>&1) || ! $cmp "$c/out" "$c/want" $(read -r r a < "$c/tol"; echo --rtol "$r" --atol "$a") >"$c/cmp" 2>&1; then
        bad=$((bad + 1)); echo "op FAIL $(basename "$c"): $(head -c 300 "$c/log") $(tail -2 "$c/cmp")"
      fi
    done
    echo "ops: $((n - bad))/$n Tensor API cases match the interpreter"
    [ $bad -eq 0 ] || fail=1
  fi
  printf '\n| model | target | vs onnxruntime | median ms (--bench %s) |\n|---|---|---|---|\n' "$runs" > "$work/table"
  while IFS='|' read -r name model cargs ins ort_only; do
    while read -r t; do
      local art="$dir/$t/$name" result="ok" ms="-"
      [ -x "$art" ] || continue
      local a=() kv tolerance
      # shellcheck disable=SC2207
      tolerance=($(real_model_tolerance "${name%%_*}" "$(cat "$dir/$t/precision" 2>/dev/null || echo fp32)"))
      [ "${tolerance[0]}" != skip: ] || { echo "| $name | $t | skipped: ${tolerance[*]:1} | - |" >> "$work/table"; continue; }
      for kv in $ins; do a+=(-i "${kv%%=*}=$dir/inputs/${kv#*=}"); done
      if ! "$art" "${a[@]}" -o "$work/$t-$name" >"$work/log" 2>&1; then
        result="FAIL: $(head -c 200 "$work/log" | tr '\n' ' ')"; fail=1
      elif ! $cmp "$work/$t-$name" "$dir/ort/$name" "${tolerance[@]}" >"$work/cmp" 2>&1; then
        result="WRONG: $(grep FAIL "$work/cmp" | head -2 | tr '\n' ' ')"; fail=1
      else
        result="ok (max rel err $(grep -o 'max rel err [^ ]*' "$work/cmp" | awk '{print $4}' | sort -g | tail -1))"
        ms="$("$art" "${a[@]}" --bench "$runs" 2>/dev/null | tail -1 | python3 -c 'import json,sys; print("%.4f" % json.loads(sys.stdin.read())["median_ms"])' || echo '?')"
      fi
      echo "| $name | $t | $result | $ms |" >> "$work/table"
    done < "$dir/targets.txt"
  done < "$dir/cases.txt"
  cat "$work/table"
  rm -rf "$work"
  return $fail
}

case "${1:-}" in
  prepare) shift; [ $# -ge 1 ] || { echo "usage: $0 prepare DIR [TARGET...]" >&2; exit 2; }; prepare "$@" ;;
  compile) shift; [ $# -ge 2 ] || { echo "usage: $0 compile DIR LABEL TGC_ARGS..." >&2; exit 2; }; compile "$@" ;;
  run) shift; [ $# -ge 1 ] || { echo "usage: $0 run DIR [BENCH_RUNS]" >&2; exit 2; }; run "$@" ;;
  *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
