// The tuning candidates that tgc-agent runs through the tgc runtime's own GPU backends
// (docs/tuning.md): `time-vk` (SPIR-V, the Vulkan backend) and `time-cuda` (PTX, the CUDA
// backend). The launch as the runtime makes it, in the lines of the OpenCL candidate, then the
// kernel's blob. Parsed by tools/tgc-agent/cl_candidate.c (tgc_vk_candidate_parse,
// tgc_cuda_candidate_parse); keep them in sync.
//   tgc-vk 1  |  tgc-cuda 1
//   kernel <name>
//   global <threads>                     (dimension 0)
//   local <work-group size>              (Vulkan: specialization constant 0; CUDA: the block)
//   buffer <bytes> <enum tgc_dtype>      one line per kernel argument, output first
//   spirv  |  ptx
//   <the SPIR-V binary or the PTX text, to the end of the payload>
#pragma once
#include <string>

#include "codegen/dialect.h"

namespace tgc {

enum class RuntimeApi { Vulkan, Cuda };

std::string runtime_candidate(RuntimeApi api, const Graph& g, const LoopProgram& p, const GpuKernel& k);

}  // namespace tgc
