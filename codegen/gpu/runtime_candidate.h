// A kernel as a tuning candidate that tgc-agent runs through the tgc runtime's own backend for its
// API (docs/tuning.md): `time-cl` (OpenCL C), `time-vk` (SPIR-V), `time-cuda` (PTX). The launch as
// the runtime makes it, then the kernel's blob. Parsed by tools/tgc-agent/cl_candidate.c
// (tgc_cl_candidate_parse, tgc_vk_candidate_parse, tgc_cuda_candidate_parse); keep them in sync.
//   tgc-cl 1  |  tgc-vk 1  |  tgc-cuda 1
//   kernel <name>
//   global <threads>                     (dimension 0)
//   local <work-group size>              (OpenCL: 0 lets the driver choose; Vulkan: specialization
//                                         constant 0; CUDA: the block)
//   buffer <bytes> <enum tgc_dtype>      one line per kernel argument, output first
//   source  |  spirv  |  ptx
//   <the OpenCL C source, the SPIR-V binary or the PTX text, to the end of the payload>
#pragma once
#include <string>

#include "codegen/dialect.h"

namespace tgc {

enum class RuntimeApi { OpenCl, Vulkan, Cuda };

// `k` as the dialect renders it for the artifact, so that what is timed is what runs.
std::string runtime_candidate(RuntimeApi api, const Graph& g, const LoopProgram& p, const GpuKernel& k);

}  // namespace tgc
