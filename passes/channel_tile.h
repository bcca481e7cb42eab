// The register tile of a CPU kernel whose vector lanes run along output channels (a dense conv
// whose rows would fill its vectors only in part: 56, 28, 14 or 7 columns on AVX-512), as
// onnxruntime's NCHWc convs block theirs: m vectors of channels times a tile of positions, each
// weight vector loaded feeding every position and each input element, broadcast, every channel
// vector. Chosen from the target's vector width and registers, not from timings: the tile whose
// multiply-adds per load are most (m*p / (m + p)) among those whose m*p accumulators fill at most
// half the vector registers and at least half of that less one (fewer chains leave the FMA units
// waiting on each other's latency; 7 of 8, a 7x7 map's rows, still beat no tile: ShuffleNetV2's
// 232-channel 1x1 convs at 7x7 took 0.14 ms each with scalar lanes along 7 columns, the model
// 2.82 -> 2.06 ms at 1 thread on a Zen 5).
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "passes/schedule.h"
#include "target/profile.h"

namespace tgc {

struct ChannelTile {
  int64_t lanes = 0;                                      // along the channel axis: m vectors
  std::vector<std::pair<const UOp*, int64_t>> positions;  // copies along each position axis
};

// The tile for lanes along output axis `c` of `k`, at most `most_lanes` of them, with the
// positions along its innermost output axes (the columns, then the rows where they are not `c`);
// none where no tile has enough
// accumulators, or where the reduce is too short for its scattered stores to pay (a squeeze
// layer's 16 input channels).
std::optional<ChannelTile> channel_tile(const Kernel& k, const UOp* c, const TargetProfile& t, int64_t most_lanes);

}  // namespace tgc
