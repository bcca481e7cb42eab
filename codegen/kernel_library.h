// One kernel as a shared object for tuning: the candidate ABI of tools/tgc-agent/tgc_candidate.h
// (an exported `tgc_kernel` plus a `tgc_candidate` descriptor with the buffer sizes and dtypes
// and the work-item count), so tgc-agent can load and time it on the target.
#pragma once
#include <string>

#include "target/targets.h"
#include "passes/lower.h"

namespace tgc {

// Renders `p` (lowered for a CPU) into an LLVM module of its own context, optimizes it and links
// it into `path`. Only reads the graph, so several threads may build candidates at once.
// `workdir` holds the intermediate object file. Throws tgc::Error on failure.
void write_kernel_library(const Graph& g, const LoopProgram& p, const ResolvedTarget& t, const std::string& workdir,
                          const std::string& path);

}  // namespace tgc
