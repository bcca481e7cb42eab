// One kernel as an OpenCL tuning candidate: the launch description and OpenCL C source that
// tgc-agent's `time-cl` request carries (format: tools/tgc-agent/cl_candidate.h).
#pragma once
#include <string>

#include "codegen/gpu/gpu_lowering.h"

namespace tgc {

// `p` must be lowered for OpenCL (no inner CPU loop), as the emitter does for qcom; `gpu` as the
// artifact renders it, so that what is timed is what runs.
std::string opencl_candidate(const Graph& g, const LoopProgram& p, const GpuOptions& gpu = {});

}  // namespace tgc
