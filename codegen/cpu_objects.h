// CPU kernels into object files on every core: each thread renders its share of the distinct
// kernels into an LLVM module of its own context, optimizes it (O3) and writes an object. The
// model object references the kernels by symbol (hidden: never exported from a .so).
#pragma once
#include <string>
#include <vector>

#include "target/targets.h"
#include "passes/lower.h"

namespace tgc {

struct CpuKernels {
  std::vector<std::string> objects;  // to link into the artifact
  std::vector<std::string> symbols;  // per program: its function (identical kernels share one)
  std::vector<int64_t> items;        // per program: work items of its launch
};

// `keys[i]` identifies program i's code: programs with equal keys share one function. Only reads
// the graph. `jobs` <= 0: one thread per core.
CpuKernels build_cpu_kernels(const Graph& g, const std::vector<LoopProgram>& programs, const std::vector<size_t>& keys,
                             const ResolvedTarget& t, const std::string& workdir, int jobs);

}  // namespace tgc
