// Output axes that a kernel reads its inputs through as x / s and x % s: a conv with a
// DepthToSpace (PixelShuffle) fused after it, whose output column x takes input column x / 3 and
// output channel x % 3. No index is affine along such an axis, so no vector lanes or register
// tile fits it, and the CPU heuristic left the kernel scalar (the super-resolution net's last
// conv: 3 GFLOP/s, half of the model's time). Split by s (UPCAST(axis, s): one copy per phase),
// the outer part is affine, and the heuristic chooses for the split kernel.
#pragma once
#include <vector>

#include "passes/opt.h"

namespace tgc {

// The splits (UPCAST by 2, 3 or 4) that make every load and store index affine along each output
// axis that is not; empty where every axis is affine already, or a split does not make it so.
std::vector<Opt> output_phases(Graph& g, const Kernel& k, const TargetProfile& t);

}  // namespace tgc
