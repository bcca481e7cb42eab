// Renders a GPU-lowered loop program as the source of one kernel in a C-family language: every
// statement and expression form is here, the language's spellings come from its CDialect.
#pragma once
#include <set>
#include <string>

#include "codegen/gpu/c_dialect.h"
#include "codegen/gpu/gpu_lowering.h"

namespace tgc {

// Whether the kernel computes in f16 (passes/precision.h compute_in_half narrowed some of its
// arithmetic). Its f16 values then live in f16 registers, which its dialect is made to have;
// otherwise f16 values are floats in registers (CDialect::reg_type).
bool computes_in_half(const LoopProgram& p);

// The f32 and f16 buffers whose every load in `p` is part of an aligned 4-vector (an UPCAST or
// UNROLL by 4 along the buffer's contiguous axis): candidates for images, whose texels the
// renderer reads as float 4-vectors.
std::set<int64_t> buffers_read_in_fours(const Graph& g, const LoopProgram& p);

std::string render_c(const Graph& g, const GpuProgram& k, const CDialect& d);

}  // namespace tgc
