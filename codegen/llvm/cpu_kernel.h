// Renders a loop program as an LLVM function for CPUs (the shell around codegen/llvm/llvm_expr.h):
//   void NAME(void* const* buffers, int64_t begin, int64_t end)
// computing work items [begin, end). A work item is one index of the outer global dims and
// one chunk of the innermost dim, which runs as a loop (vectorized by LLVM's O3 pipeline).
#pragma once
#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

#include "passes/lower.h"
#include "target/profile.h"

namespace tgc {

struct CpuWorkSplit {
  int64_t items = 1;  // launch size: outer positions x chunks
  int64_t chunk = 1;  // elements of the innermost dim per work item
};

// Chunks the innermost dim only as far as needed to give every thread several items.
CpuWorkSplit cpu_work_split(const LoopProgram& p, int64_t target_items = 64);

llvm::Function* render_cpu_kernel(llvm::Module& m, const Graph& g, const LoopProgram& p, const CpuWorkSplit& split,
                                  const TargetProfile& t);

}  // namespace tgc
