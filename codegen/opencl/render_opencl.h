// Renders a loop program as OpenCL C 1.2 (the qcom target): one work item per output element,
// global dims flattened into dimension 0. f16 buffers go through vload_half/vstore_half so the
// kernels also build on devices without cl_khr_fp16 (pocl in CI).
#pragma once
#include <string>

#include "passes/lower.h"

namespace tgc {

std::string render_opencl(const Graph& g, const LoopProgram& p);
// Launch sizes (dimension 0): threads in all, and threads per work-group (1 without locals).
int64_t opencl_global_size(const LoopProgram& p);
int64_t opencl_local_size(const LoopProgram& p);

}  // namespace tgc
