// Serial launches: where a launch costs the host more than a small kernel's work (OpenCL on
// NVIDIA's driver: ~5 us of enqueue per launch, docs/performance-gpu.md), consecutive small
// kernels run as one launch of a single work-group, one after another, a barrier between them
// (a squeeze-excite block's channel means, its two FC layers; a classifier head). Each kernel
// keeps its buffers and its own index space, which the group's threads walk in rounds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "passes/opt.h"
#include "passes/schedule.h"
#include "target/profile.h"

namespace tgc {

// Kernels s.kernels[first, first + count) run as one launch.
struct SerialLaunch {
  size_t first, count;
};

// Elements a serial stage may read in all. One work-group reads 32K in about the time a launch
// costs (H200, NVIDIA's OpenCL: a squeeze-excite block's channel means over 88 x 288 values
// add ~4 us to its FC layers' launch; over 200 x 192, ~18 us).
constexpr double kSerialStageWork = 1 << 15;
// Loads a stage's thread issues at once (serial_stage_opts).
constexpr int64_t kSerialUnroll = 64;

// Whether a kernel of `outputs` elements reading `reads` elements in all may be a stage of a
// serial launch on a target whose serial work-group has `group` threads (0: none).
bool fits_serial_stage(int64_t outputs, double reads, int64_t group);

// The runs of two or more consecutive kernels of s that fit a serial launch of t
// (TargetProfile::serial_group; none where it is 0). A kernel over a run-time dim never joins.
std::vector<SerialLaunch> plan_serial_launches(const Schedule& s, const TargetProfile& t);

// The launch's kernel name, after its first and last stage ("k3_k5").
std::string serial_launch_name(const Schedule& s, const SerialLaunch& l);
// Launches that run s's kernels.
size_t launch_count(const Schedule& s, const std::vector<SerialLaunch>& serial);

// A stage's actions: its longest reduce split over the threads the group has to spare for each
// output (the group walks the outputs in rounds; a group reduce's threads share one round).
std::vector<Opt> serial_stage_opts(const Kernel& k, const TargetProfile& t);

}  // namespace tgc
