// Renders a loop program as OpenCL C 1.2 (the qcom target): the GPU lowering
// (codegen/gpu/gpu_lowering.h) printed in OpenCL C's spellings. f16 buffers go through
// vload_half/vstore_half so the kernels also build on devices without cl_khr_fp16 (pocl in CI); a
// kernel that computes in half (passes/precision.h compute_in_half) does so where the device has
// cl_khr_fp16 and in float elsewhere, from one source.
#pragma once
#include <string>

#include "codegen/gpu/gpu_lowering.h"

namespace tgc {

// Throws tgc::Error where o.index_bits is 32 and the kernel does not fit (see lower_gpu).
std::string render_opencl(const Graph& g, const LoopProgram& p, const GpuOptions& o = {});

}  // namespace tgc
