// Vectors along output channels for CPU kernels whose output rows are too narrow for vectors (an
// audio embedding's late convolutions: 96 channels of 12 x 4 positions, vectors of 4 along the
// 4 columns). Such a kernel's weights are read a channel's filter at a time; this pass gives it
// transposed copies, made at compile time, in which the channels are the contiguous axis, and the
// CPU heuristic then puts its vector lanes along the channels (passes/opt.h). An int8 conv has two
// such weights, its packed words and its filter sums: with both transposed, its DOT4s along the
// channels become vpdpbusd (codegen/llvm/cpu_kernel.cpp groups lanes at a stride).
#pragma once
#include "passes/schedule.h"
#include "target/profile.h"

namespace tgc {

void channel_vectors(Graph& g, Schedule& s, const TargetProfile& t);

}  // namespace tgc
