#!/usr/bin/env bash
# The qcom target's f16 arithmetic (--precision=fp16), which pocl cannot run (it has no
# cl_khr_fp16): every OpenCL C kernel of real models is type-checked by clang's offline OpenCL C
# compiler twice, as a device with cl_khr_fp16 builds it (half registers) and as one without
# (the float fallback in the same source), and some kernels must compute in half.
# usage: opencl_half_offline.sh TGC_BINARY REPO_ROOT   (TGC_REAL_MODELS overrides the model dir)
set -euo pipefail
tgc="$1"; root="$2"
real="${TGC_REAL_MODELS:-$root/../shared/models/real}"
clang="$(command -v clang-19 || true)"
[ -n "$clang" ] || { echo "FAIL clang-19 is not installed (run tools/scripts/install-deps.sh)"; exit 1; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cl=("$clang" -x cl -cl-std=CL1.2 -Xclang -finclude-default-header --target=spir64 -fsyntax-only)
fail=0
while IFS='|' read -r name model args; do
  # shellcheck disable=SC2086
  "$tgc" inspect "$real/$model" $args --target=qcom --precision=fp16 --stage=source > "$work/$name.cl"
  # One file per kernel: each is its own program at run time (inspect starts each with its opts).
  mkdir "$work/$name"
  awk -v d="$work/$name" '/^\/\/ opts:/ { n++ } { print > (d "/k" n ".cl") }' "$work/$name.cl"
  kernels=$(find "$work/$name" -name 'k*.cl' | wc -l)
  half=$(grep -l '^  tgc_half v' "$work/$name"/k*.cl | wc -l)
  echo "$name: $kernels kernels, $half computing in half"
  [ "$half" -gt 0 ] || { echo "FAIL $name: no kernel computes in half at --precision=fp16"; fail=1; }
  for k in "$work/$name"/k*.cl; do
    "${cl[@]}" "$k" || { echo "FAIL $name: $(basename "$k") does not build with cl_khr_fp16"; fail=1; }
    "${cl[@]}" -Xclang -cl-ext=-cl_khr_fp16 "$k" || { echo "FAIL $name: $(basename "$k") does not build without cl_khr_fp16"; fail=1; }
  done
done <<'EOF'
cls|ch_ppocr_mobile_v2.0_cls_infer.onnx|--input-shape x=1,3,48,192
embedding|embedding_model.onnx|--input-shape input_1=1,76,32,1
silero_v5|silero_vad_v5.onnx|--input-shape input=1,512 --input-shape state=2,1,128 --input-value sr=16000
EOF
exit $fail
