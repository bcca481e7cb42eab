// Renders a loop program as one CUDA kernel (the cuda target): the GPU lowering
// (codegen/gpu/gpu_lowering.h) built as LLVM IR for nvptx64-nvidia-cuda with the expression
// emitter every LLVM target shares (codegen/llvm/llvm_expr.h), optimized and printed as PTX,
// which the CUDA driver JIT-compiles at load time: no CUDA toolkit is needed to compile or run.
// Kernel arguments are global-memory pointers, one per buffer, in the loop program's order; the
// grid is one-dimensional (tgc_launch.global_size[0] / local_size[0] blocks).
#pragma once
#include <string>

#include "codegen/gpu/gpu_lowering.h"

namespace tgc {

// Threads per block of kernels without local ranges: one thread per output element, padding
// threads of the last block return at once.
constexpr int64_t kPtxDefaultBlock = 128;

struct PtxOptions {
  std::string sm = "sm_90";  // the GPU architecture the PTX is written for (.target)
};

// The kernel's PTX text: one .entry named like the loop program. The LLVM module is verified
// before NVPTX codegen; throws tgc::Error naming the kernel where it cannot be rendered.
std::string render_ptx(const Graph& g, const LoopProgram& p, const PtxOptions& o = {});

// Threads per block, and threads in all rounded up to whole blocks.
int64_t ptx_block_size(const LoopProgram& p);
int64_t ptx_grid_threads(const LoopProgram& p);

}  // namespace tgc
