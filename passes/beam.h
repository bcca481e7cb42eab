// BEAM search over kernel optimization actions (as in tinygrad): start from no actions and the
// heuristic's, then repeatedly extend each of the `width` fastest action lists by one more legal
// action, time every new candidate, and keep the fastest; stop when a round brings no gain.
// Timing is the caller's: a callback measures a batch of candidates on the target (tune/ builds
// and runs them through tgc-agent) and may drop any of them.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "passes/opt.h"

namespace tgc {

struct BeamOptions {
  int width = 4;            // action lists kept per round
  int max_rounds = 4;       // moves added at most, beyond the heuristic's
  int max_candidates = 48;  // timed per kernel, the starting points included
  double min_gain = 0.03;   // a round must beat the best so far by this fraction to go on
  uint64_t seed = 1;        // which candidates a capped round keeps (deterministic)
};

// Microseconds per run of each candidate, or nullopt where it failed (did not build, crashed,
// timed out, computed something else).
using MeasureFn = std::function<std::vector<std::optional<double>>(const std::vector<std::vector<Opt>>&)>;
// Called after every round: candidates timed so far and the best time.
using BeamProgressFn = std::function<void(int round, int tried, double best_us)>;

struct BeamResult {
  std::vector<Opt> opts;     // the fastest candidate (the heuristic's when nothing ran)
  double us = -1;            // its time; -1 when every candidate failed
  double heuristic_us = -1;  // the heuristic's time; -1 when it failed
  int tried = 0, failed = 0;
};

// The moves that may extend `opts` on kernel `k` (legality is apply_opts' to decide): one action,
// or a PADTO with the split it makes possible (padding alone gains nothing, so a round would stop).
std::vector<std::vector<Opt>> candidate_moves(Graph& g, const Kernel& k, const std::vector<Opt>& opts,
                                              const TargetProfile& t);

BeamResult beam_search(Graph& g, const Kernel& k, const TargetProfile& t, const BeamOptions& opt,
                       const MeasureFn& measure, const BeamProgressFn& progress = {});

// A hash of the kernel's structure with its buffers and ranges numbered in order of use, so the
// same computation on other buffers (the next layer, another model) shares tuning results.
// Stable across runs, like Kernel::hash().
size_t tuning_key(Graph& g, const Kernel& k);

}  // namespace tgc
