// Renders a loop program as a GLSL 450 compute shader (the vulkan and adreno targets): the GPU
// lowering (codegen/gpu/gpu_lowering.h) printed in GLSL's spellings. Each kernel argument is a
// std430 storage buffer at binding i of set 0; the work-group size is specialization constant 0
// (tgc_launch.local_size[0]); the runtime may spread the work-groups over dispatch dimensions x
// and y (Vulkan guarantees only 65535 per dimension), and the shader flattens them back. f16/bf16
// live in 16-bit storage and compute in float (f16 in float16_t where the kernel computes in half:
// passes/precision.h compute_in_half). Run-time dims are read from the vars buffer, the low int
// of each i64 slot (no Int64 needed). With o.subgroups, group
// reduces use subgroup arithmetic where they can (codegen/gpu/c_renderer.cpp).
#pragma once
#include <string>

#include "codegen/gpu/gpu_lowering.h"

namespace tgc {

// Threads per work-group of kernels without local ranges (the lowering leaves their size to us).
constexpr int64_t kGlslDefaultLocalSize = 64;

// Throws tgc::Error where o.index_bits is 32 and the kernel does not fit (see lower_gpu).
std::string render_glsl(const Graph& g, const LoopProgram& p, const GpuOptions& o = {});

}  // namespace tgc
