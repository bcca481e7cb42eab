#!/usr/bin/env bash
# GPU runtime faults without a GPU (docs/robustness.md): the cuda artifact of the digits CNN run
# against a stand-in libcuda.so.1 (tests/faults/fake_cuda.c) that runs out of device memory at
# each allocation in turn, refuses the PTX, fails a launch, loses the device after create, or has
# no device. Each must end in exit status 1 with one line on stderr that names the failure, never
# a crash; with no fault the artifact runs.
# usage: gpu_faults.sh TGC_BINARY REPO_ROOT FAKE_LIBCUDA_SO
set -uo pipefail
tgc="$1"; root="$2"; fake="$3"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
mkdir -p "$work/lib"
cp "$fake" "$work/lib/libcuda.so.1"
"$tgc" compile "$root/models/digits_cnn.onnx" --target=cuda -o "$work/digits_cu" >/dev/null 2>"$work/err" ||
  { echo "FAIL compile: $(cat "$work/err")"; exit 1; }
image="$root/models/digits_samples/image_0.npy"

# expect FAULT STATUS TEXT: the run's exit status and a one-line error containing TEXT.
expect() {
  local fault="$1" status="$2" text="$3" rc
  TGC_FAKE_CUDA_FAIL="$fault" LD_LIBRARY_PATH="$work/lib" "$work/digits_cu" -i image="$image" -o "$work/out" >/dev/null 2>"$work/err"
  rc=$?
  local lines; lines=$(wc -l < "$work/err")
  if [ "$rc" != "$status" ] || { [ "$status" = 1 ] && { [ "$lines" != 1 ] || ! grep -qF -- "$text" "$work/err"; }; }; then
    echo "FAIL ${fault:-no fault}: exit $rc (want $status), stderr: $(head -c 400 "$work/err")"
    fail=1
  else
    echo "ok   ${fault:-no fault}: exit $rc${text:+, $(head -c 200 "$work/err")}"
  fi
}

expect "" 0 ""
# Every cuMemAlloc of a create in turn: the arena, the weights, then each input and output.
for n in 1 2 3 4; do expect "alloc:$n" 1 "CUDA_ERROR_OUT_OF_MEMORY"; done
expect jit 1 "JIT log: ptxas fatal"
expect launch 1 "CUDA_ERROR_LAUNCH_FAILED"
expect lost 1 "CUDA_ERROR_ILLEGAL_ADDRESS"
expect nodevice 1 "no CUDA device found"
# Without any libcuda.so.1 at all (a machine without the NVIDIA driver; where one is installed,
# the loader would find it).
if /sbin/ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  echo "skip no libcuda: this machine has the NVIDIA driver's libcuda.so.1"
elif LD_LIBRARY_PATH="$work/none" "$work/digits_cu" -i image="$image" -o "$work/out" >/dev/null 2>"$work/err"; then
  echo "FAIL no libcuda: the run succeeded"; fail=1
elif [ "$(wc -l < "$work/err")" = 1 ] && grep -q "cannot load libcuda.so.1" "$work/err"; then
  echo "ok   no libcuda: $(cat "$work/err")"
else
  echo "FAIL no libcuda: $(head -c 400 "$work/err")"; fail=1
fi
exit $fail
