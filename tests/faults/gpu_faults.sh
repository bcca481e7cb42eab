#!/usr/bin/env bash
# GPU runtime faults without a GPU (docs/robustness.md): the cuda and qcom (OpenCL) artifacts of
# the digits CNN run against a stand-in libcuda.so.1 (tests/faults/fake_cuda.c) and a stand-in
# libOpenCL.so.1 (fake_opencl.c) that run out of device memory at each allocation in turn, refuse
# the kernels, fail a launch, lose the device after create, or have no device (and a model whose
# weight is an image, on a device without images or out of memory for it). Each must end in
# exit status 1 with one line on stderr that names the failure, never a crash; with no fault the
# artifact runs.
# usage: gpu_faults.sh TGC_BINARY REPO_ROOT FAKE_LIBCUDA_SO FAKE_LIBOPENCL_SO
set -uo pipefail
tgc="$1"; root="$2"; fake_cuda="$3"; fake_cl="$4"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
mkdir -p "$work/cuda" "$work/cl"
cp "$fake_cuda" "$work/cuda/libcuda.so.1"
cp "$fake_cl" "$work/cl/libOpenCL.so.1"
export XDG_CACHE_HOME="$work/cache" # the OpenCL binary cache stays here
image="$root/models/digits_samples/image_0.npy"
for t in cuda qcom; do # qcom's host code is aarch64 unless told
  "$tgc" compile "$root/models/digits_cnn.onnx" --target=$t --triple=x86_64-linux-gnu -o "$work/digits_$t" >/dev/null 2>"$work/err" ||
    { echo "FAIL compile $t: $(cat "$work/err")"; exit 1; }
done

# run TARGET FAULT: runs the artifact on the stand-in driver with FAULT; sets rc and lines.
# TARGET qcom_image: the model whose weight is an image (below).
run() {
  local t="$1" fault="$2"
  case "$t" in
    cuda) TGC_FAKE_CUDA_FAIL="$fault" LD_LIBRARY_PATH="$work/cuda" "$work/digits_cuda" -i image="$image" -o "$work/out" >/dev/null 2>"$work/err" ;;
    qcom) TGC_FAKE_CL_FAIL="$fault" LD_LIBRARY_PATH="$work/cl" "$work/digits_qcom" -i image="$image" -o "$work/out" >/dev/null 2>"$work/err" ;;
    qcom_image) TGC_FAKE_CL_FAIL="$fault" LD_LIBRARY_PATH="$work/cl" "$work/fc_qcom" -i x="$work/x.npy" -o "$work/out" >/dev/null 2>"$work/err" ;;
  esac
  rc=$?
  lines=$(wc -l < "$work/err")
}

# expect TARGET FAULT STATUS TEXT: the run's exit status and a one-line error containing TEXT.
expect() {
  local t="$1" fault="$2" status="$3" text="$4"
  run "$t" "$fault"
  if [ "$rc" != "$status" ] || { [ "$status" = 1 ] && { [ "$lines" != 1 ] || ! grep -qF -- "$text" "$work/err"; }; }; then
    echo "FAIL $t ${fault:-no fault}: exit $rc (want $status), stderr: $(head -c 400 "$work/err")"
    fail=1
  else
    echo "ok   $t ${fault:-no fault}: exit $rc${text:+, $(head -c 200 "$work/err")}"
  fi
}

expect cuda "" 0 ""
# Every cuMemAlloc of a create in turn: the arena, the weights, then each input and output.
for n in 1 2 3 4; do expect cuda "alloc:$n" 1 "CUDA_ERROR_OUT_OF_MEMORY"; done
expect cuda jit 1 "JIT log: ptxas fatal"
expect cuda launch 1 "CUDA_ERROR_LAUNCH_FAILED"
expect cuda lost 1 "CUDA_ERROR_ILLEGAL_ADDRESS"
expect cuda nodevice 1 "no CUDA device found"
expect cuda small 1 "bytes of device memory; 'Fake CUDA device' has 1024 free of 2147483648"

expect qcom "" 0 ""
# Every clCreateBuffer of a create in turn, until the create makes no more: the model's buffers
# must fail with the one-line error; the mapped host-side buffers of inputs and outputs come last,
# and without them the run goes on in the runtime's own memory.
refused=0
for n in $(seq 1 200); do
  run qcom "alloc:$n"
  [ "$rc" = 0 ] && break
  if [ "$rc" != 1 ] || [ "$lines" != 1 ] || ! grep -qF "CL_MEM_OBJECT_ALLOCATION_FAILURE" "$work/err"; then
    echo "FAIL qcom alloc:$n: exit $rc, stderr: $(head -c 400 "$work/err")"; fail=1; break
  fi
  refused=$n
done
if [ "$refused" -lt 2 ] || [ "$rc" != 0 ]; then
  echo "FAIL qcom alloc: $refused allocations refused, then exit $rc"; fail=1
else
  echo "ok   qcom alloc:1..$refused: one line naming CL_MEM_OBJECT_ALLOCATION_FAILURE each; alloc:$n (a host-side buffer) runs"
fi
expect qcom build 1 "build log: <kernel>:3:12: error"
expect qcom launch 1 "CL_OUT_OF_RESOURCES"
expect qcom lost 1 "CL_INVALID_COMMAND_QUEUE"
expect qcom nodevice 1 "no OpenCL device found"

# A weight read as an image (a 1x1-conv-like product, its weight contiguous along the reduce):
# created on the stand-in, refused by a device without image support, and its allocation failing.
/usr/bin/python3 - "$work/fc.onnx" <<'PY' || { echo "FAIL making the image model"; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
w = numpy_helper.from_array(np.ones((32, 64), np.float32), "w")
g = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)], "fc",
                      [helper.make_tensor_value_info("x", T.FLOAT, [256, 64])], [helper.make_tensor_value_info("y", T.FLOAT, [256, 32])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
/usr/bin/python3 -c "import numpy as np; np.save('$work/x.npy', np.ones((256, 64), np.float32))"
"$tgc" compile "$work/fc.onnx" --target=qcom --triple=x86_64-linux-gnu -o "$work/fc_qcom" >/dev/null 2>"$work/err" || { echo "FAIL compile fc: $(cat "$work/err")"; fail=1; }
grep -aq read_imagef "$work/fc_qcom" || { echo "FAIL fc: its weight is not an image"; fail=1; }
expect qcom_image "" 0 ""
expect qcom_image noimages 1 "has no image support"
for n in 1 2 3; do expect qcom_image "alloc:$n" 1 "CL_MEM_OBJECT_ALLOCATION_FAILURE"; done

# Without any libcuda.so.1 at all (a machine without the NVIDIA driver; where one is installed,
# the loader would find it).
if /sbin/ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  echo "skip no libcuda: this machine has the NVIDIA driver's libcuda.so.1"
elif LD_LIBRARY_PATH="$work/none" "$work/digits_cuda" -i image="$image" -o "$work/out" >/dev/null 2>"$work/err"; then
  echo "FAIL no libcuda: the run succeeded"; fail=1
elif [ "$(wc -l < "$work/err")" = 1 ] && grep -q "cannot load libcuda.so.1" "$work/err"; then
  echo "ok   no libcuda: $(cat "$work/err")"
else
  echo "FAIL no libcuda: $(head -c 400 "$work/err")"; fail=1
fi
exit $fail
