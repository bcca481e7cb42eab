#!/usr/bin/env bash
# Compiled artifacts of the bundled model: executable (host, aarch64 under qemu, qcom/OpenCL on
# pocl), the C API of shared libraries, two models in one program, and the dependency list.
# usage: compile_artifacts.sh TGC_BINARY REPO_ROOT
set -euo pipefail
tgc="$1"; root="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# Concurrent pocl processes share one kernel dir (~/.cache/pocl/uncached with the kernel cache
# off) and fail ("Can't get stat() on .../uncached/..."): this test uses a dir of its own.
export POCL_KERNEL_CACHE=0 POCL_CACHE_DIR="$work/pocl" TGC_CL_CACHE="$work/clcache"
fail=0
. "$root/tests/integration/digits_lib.sh"

echo "== cpu executable"
"$tgc" compile "$model" -o "$work/digits"
for k in 0 1 2 3; do "$work/digits" -i image="$samples/image_$k.npy" -o "$work/cpu$k"; expect_probs "$work/cpu$k" $k; done
"$work/digits" --bench 20 | tail -1 | grep -q '"median_ms"' || { echo "FAIL --bench has no median_ms"; fail=1; }
deps=$(ldd "$work/digits" | awk '{print $1}' | grep -vE '^(linux-vdso|/lib64/ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so)' || true)
[ -z "$deps" ] || { echo "FAIL unexpected dependencies: $deps"; fail=1; }

echo "== without clang-19: the system's cc links for the host; other triples say what is missing"
mkdir -p "$work/nocl"
for b in sh cc ld as collect2; do p="$(command -v $b || true)"; [ -z "$p" ] || ln -s "$p" "$work/nocl/$b"; done
PATH="$work/nocl" "$tgc" compile "$model" -o "$work/cc/digits" 2>/dev/null
"$work/cc/digits" -i image="$samples/image_0.npy" -o "$work/cc0"; expect_probs "$work/cc0" 0
if PATH="$work/nocl" "$tgc" compile "$model" --triple=aarch64-linux-gnu -o "$work/cc/a64" 2>"$work/cc.err" ||
   ! grep -q "linking for aarch64 needs clang-19 and lld on PATH" "$work/cc.err"; then
  echo "FAIL aarch64 without clang-19: $(cat "$work/cc.err")"; fail=1
fi

echo "== cpu executable, external weights"
"$tgc" compile "$model" --weights=external -o "$work/ext/digits"
[ -s "$work/ext/digits.weights" ] || { echo "FAIL no external weights file"; fail=1; }
"$work/ext/digits" -i image="$samples/image_1.npy" -o "$work/ext1"; expect_probs "$work/ext1" 1

echo "== shared libraries: two models in one program"
"$tgc" compile "$model" --shared -o "$work/libdigitsa.so"
"$tgc" compile "$model" --shared -o "$work/libdigitsb.so"
cc -O2 -I"$work" "$root/tests/integration/c_api/two_models.c" -L"$work" -ldigitsa -ldigitsb -lm -Wl,-rpath,"$work" -o "$work/two_models"
"$work/two_models" "$samples/image_2.npy" "$samples/expected_probs_2.npy" || fail=1
exported=$(nm -D --defined-only "$work/libdigitsa.so" | awk '{print $3}' | grep -v '^digitsa_' || true)
[ -z "$exported" ] || { echo "FAIL libdigitsa.so exports more than its API: $exported"; fail=1; }
# The header states the threading contract that concurrent_models tests (one object per thread).
grep -q "a model object is used by one thread at a time" "$work/digitsa.h" && grep -q "digitsa_last_error()" "$work/digitsa.h" ||
  { echo "FAIL digitsa.h does not state which calls may run concurrently"; fail=1; }

if [ -e "$(dirname "$tgc")/runtime/aarch64-linux-gnu/libtgc_runtime.a" ]; then
  echo "== aarch64 executable under qemu"
  "$tgc" compile "$model" --triple=aarch64-linux-gnu -o "$work/digits_a64"
  qemu-aarch64 -L /usr/aarch64-linux-gnu "$work/digits_a64" -i image="$samples/image_3.npy" -o "$work/a64"
  expect_probs "$work/a64" 3
else
  echo "note: no aarch64 runtime stub built, aarch64 skipped"
fi

echo "== qcom (OpenCL) executable for the host, on pocl"
"$tgc" compile "$model" --target=qcom --triple=x86_64-linux-gnu -o "$work/digits_cl" 2>"$work/cl_compile"
cat "$work/cl_compile"
cl_kernels="$(sed -n 's/.*: \([0-9]*\) kernels .*/\1/p' "$work/cl_compile")"
cl_launches="$(sed -n 's/.* in \([0-9]*\) launch.*/\1/p' "$work/cl_compile")"  # serial launches run several kernels
cl_launches="${cl_launches:-$cl_kernels}"
"$work/digits_cl" -i image="$samples/image_0.npy" -o "$work/cl0"; expect_probs "$work/cl0" 0
"$work/digits_cl" -i image="$samples/image_0.npy" -o "$work/cl0b"; expect_probs "$work/cl0b" 0   # cached binaries
TGC_VERBOSE=1 "$work/digits_cl" -i image="$samples/image_0.npy" -o "$work/cl0p" 2>"$work/cl_verbose"
grep -q "every buffer but the images in one pool of" "$work/cl_verbose" ||
  { echo "FAIL the OpenCL runtime did not put the buffers in one pool"; fail=1; }
TGC_CL_IMAGES=0 TGC_VERBOSE=1 "$work/digits_cl" -i image="$samples/image_0.npy" -o "$work/cl0i" 2>"$work/cl_verbose_images"
expect_probs "$work/cl0i" 0
grep -q "every buffer in one pool of" "$work/cl_verbose_images" ||
  { echo "FAIL TGC_CL_IMAGES=0 did not put the image weights in the pool"; fail=1; }
TGC_CL_POOL=0 "$work/digits_cl" -i image="$samples/image_0.npy" -o "$work/cl0d"; expect_probs "$work/cl0d" 0   # a buffer each
TGC_CL_POOL=0 TGC_CL_SUBBUFFERS=1 "$work/digits_cl" -i image="$samples/image_0.npy" -o "$work/cl0c"; expect_probs "$work/cl0c" 0   # one arena
# TGC_PROFILE: event timestamps per launch, every launch the compile reported listed with TGC_PROFILE=all.
TGC_PROFILE=all "$work/digits_cl" --bench 3 2>"$work/profile" >"$work/bench.json"
runs=$(( $(grep -o '"warmup": [0-9]*' "$work/bench.json" | grep -o '[0-9]*$') + 3 ))  # the warm-up runs and the 3
grep -q "^tgc profile: $runs runs on .*OpenCL event timestamps" "$work/profile" && [ "$(grep -c ' ms .*%  k[0-9]' "$work/profile")" -eq "$cl_launches" ] ||
  { echo "FAIL TGC_PROFILE on opencl:"; cat "$work/profile"; fail=1; }
"$tgc" compile "$model" --target=qcom -o "$work/digits_cl_a64" && file "$work/digits_cl_a64" | grep -q aarch64 || { echo "FAIL default qcom artifact is not aarch64"; fail=1; }
exit $fail
