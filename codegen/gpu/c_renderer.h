// Renders a GPU-lowered loop program as the source of one kernel in a C-family language: every
// statement and expression form is here, the language's spellings come from its CDialect.
#pragma once
#include <string>

#include "codegen/gpu/c_dialect.h"
#include "codegen/gpu/gpu_lowering.h"

namespace tgc {

std::string render_c(const Graph& g, const GpuProgram& k, const CDialect& d);

}  // namespace tgc
