// The Vulkan tuning candidate that tgc sends tgc-agent with `time-vk` (docs/tuning.md): the
// launch as the runtime makes it, in the lines of the OpenCL candidate, then the SPIR-V. Parsed
// by tools/tgc-agent/cl_candidate.c (tgc_vk_candidate_parse); keep the two in sync.
//   tgc-vk 1
//   kernel <name>
//   global <threads>                     (dimension 0)
//   local <work-group size>              (specialization constant 0)
//   buffer <bytes> <enum tgc_dtype>      one line per kernel argument, output first
//   spirv
//   <the SPIR-V binary, to the end of the payload>
#pragma once
#include <string>

#include "codegen/dialect.h"

namespace tgc {

std::string vulkan_candidate(const Graph& g, const LoopProgram& p, const GpuKernel& k);

}  // namespace tgc
