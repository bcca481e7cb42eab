// Merges the two innermost output axes of a CPU kernel where every load and store walks them as
// one (a 1x1 convolution's rows and columns: 20 x 20 as 400) and the merged axis takes a wider
// vector than the innermost alone: 20 columns took vectors of 4, 400 take vectors of 16 (det's
// 192-channel 1x1 convolutions on 20x20 ran at 45 GFLOP/s).
#pragma once
#include "passes/schedule.h"
#include "target/profile.h"

namespace tgc {

void merge_axes(Graph& g, Schedule& s, const TargetProfile& t);

}  // namespace tgc
