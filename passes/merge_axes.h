// Merges the two innermost output axes of a CPU kernel where every load and store walks them as
// one (a 1x1 convolution's rows and columns: 20 x 20 as 400) and the merged axis takes a wider
// vector than the innermost alone: 20 columns took vectors of 4, 400 take vectors of 16 (det's
// 192-channel 1x1 convolutions on 20x20 ran at 45 GFLOP/s). Likewise a reduce over two axes that
// every load of its value walks as one (a global average pool's 14 x 14 as 196; EfficientNet's
// squeeze-excite pools ran at 15 GB/s: 0.49 -> 0.06 ms in all, the model 9.19 -> 8.8 ms at 1
// thread on a Zen 5).
#pragma once
#include "passes/schedule.h"
#include "target/profile.h"

namespace tgc {

void merge_axes(Graph& g, Schedule& s, const TargetProfile& t);

}  // namespace tgc
