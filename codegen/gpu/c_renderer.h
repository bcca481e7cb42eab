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

// The buffers of a serial launch of `stages`, in first-use order: its kernel's arguments.
std::vector<int64_t> serial_launch_args(const std::vector<const LoopProgram*>& stages);

// One kernel `name` running `stages` one after another in a single work-group of `group`
// threads, a global barrier between them (passes/serial_launches.h), taking serial_launch_args.
std::string render_c_serial(const Graph& g, const std::vector<GpuProgram>& stages, const std::string& name,
                            int64_t group, const CDialect& d);

}  // namespace tgc
