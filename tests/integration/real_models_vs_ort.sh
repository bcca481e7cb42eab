#!/usr/bin/env bash
# Every real model in ../shared/models/real compiled for cpu (or TARGET), its artifact run on seeded inputs,
# and each output compared with onnxruntime-node on the same inputs: max|tgc - ort| must be at
# most 1e-4 of max|ort| (fp32); on cpu also bit-identical at 1, 2 and 8 threads. Cases and inputs:
# tests/integration/real_models_lib.sh. On qcom (pocl here) cls must read weights as images, and each artifact that
# has images is run twice: as images, and from the buffer pool (TGC_CL_IMAGES=0, as without images).
# With PRECISION fp16 or bf16 (--precision), each case's tolerance is real_model_tolerance's.
# usage: real_models_vs_ort.sh TGC_BINARY REPO_ROOT [TARGET [PRECISION]]   (TGC_REAL_MODELS overrides the model dir)
set -euo pipefail
tgc="$1"; root="$2"; target="${3:-cpu}"; precision="${4:-fp32}"
real="${TGC_REAL_MODELS:-$root/../shared/models/real}"
ort="$root/tools/ort/ort_run.js"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
[ -d "$real" ] || { echo "FAIL real models not found in $real (set TGC_REAL_MODELS)"; exit 1; }
[ "$target" != vulkan ] || "$root/tests/integration/vulkan_device.sh" "$tgc" "$root" || exit $?
[ -d "$root/tools/ort/node_modules/onnxruntime-node" ] || { echo "FAIL onnxruntime-node is not installed (run tools/scripts/install-deps.sh)"; exit 1; }
# shellcheck source=tests/integration/real_models_lib.sh
. "$root/tests/integration/real_models_lib.sh"
# qcom artifacts are for aarch64 phones by default; here they run on pocl.
host=(); [ "$target" != qcom ] || host=(--triple=x86_64-linux-gnu)
fail=0
real_models_covered || fail=1
real_model_inputs "$work"
while IFS='|' read -r name model cargs ins ort_only; do
  echo "== $name"
  # shellcheck disable=SC2207
  tolerance=($(real_model_tolerance "$name" "$precision"))
  [ "${tolerance[0]}" != skip: ] || { echo "skipped at $precision: ${tolerance[*]:1}"; continue; }
  mapfile -t a < <(input_args "$work" "$ins")
  mapfile -t o < <(input_args "$work" "$ins $ort_only")
  # shellcheck disable=SC2086
  if ! "$tgc" compile --target="$target" "${host[@]}" --precision="$precision" "$real/$model" $cargs -o "$work/$name"; then fail=1; continue; fi
  "$work/$name" "${a[@]}" -o "$work/$name.tgc" || { echo "FAIL $name: artifact failed"; fail=1; continue; }
  # qcom reads the 1x1 convs' weights as images (the artifact carries its OpenCL C as text).
  if [ "$target" = qcom ] && [ "$name" = cls ] && ! grep -aq read_imagef "$work/$name"; then echo "FAIL cls: no weight read as an image"; fail=1; fi
  # CPU results do not depend on the thread count: a split never changes an order of summation.
  if [ "$target" = cpu ] && [ "$precision" = fp32 ]; then
    for t in 1 2 8; do
      "$work/$name" "${a[@]}" --threads "$t" -o "$work/$name.t$t" || { echo "FAIL $name: artifact failed at $t threads"; fail=1; continue; }
      for f in "$work/$name.tgc"/*.npy; do
        cmp -s "$f" "$work/$name.t$t/$(basename "$f")" || { echo "FAIL $name: $(basename "$f") at $t threads differs from the default run"; fail=1; }
      done
    done
  fi
  node "$ort" "$real/$model" "${o[@]}" -o "$work/$name.ort"
  /usr/bin/python3 "$root/tests/integration/compare_npy.py" "$work/$name.tgc" "$work/$name.ort" "${tolerance[@]}" || fail=1
  # TGC_CL_IMAGES=0 (as on a device without images): image weights read from the buffer pool.
  if [ "$target" = qcom ] && grep -aq read_imagef "$work/$name"; then
    TGC_CL_IMAGES=0 "$work/$name" "${a[@]}" -o "$work/$name.img" || { echo "FAIL $name: artifact failed without images"; fail=1; continue; }
    /usr/bin/python3 "$root/tests/integration/compare_npy.py" "$work/$name.img" "$work/$name.ort" "${tolerance[@]}" || fail=1
  fi
done < <(real_model_cases)
exit $fail
