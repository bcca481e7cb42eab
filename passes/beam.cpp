#include "passes/beam.h"

#include <algorithm>
#include <bit>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"

namespace tgc {

namespace {
size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

size_t hash_text(const std::string& s) {  // FNV-1a: the same in every run and build
  size_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

struct Timed {
  std::vector<Opt> opts;
  double us;
};

// Times `batch` and files the results; returns those that ran, fastest first.
std::vector<Timed> run_batch(const std::vector<std::vector<Opt>>& batch, const MeasureFn& measure, BeamResult& r) {
  std::vector<std::optional<double>> times = measure(batch);
  check(times.size() == batch.size(), "beam: the measurement returned " + std::to_string(times.size()) + " times for " +
                                          std::to_string(batch.size()) + " candidates");
  std::vector<Timed> ok;
  for (size_t i = 0; i < batch.size(); ++i) {
    ++r.tried;
    if (times[i])
      ok.push_back({batch[i], *times[i]});
    else
      ++r.failed;
  }
  std::stable_sort(ok.begin(), ok.end(), [](const Timed& a, const Timed& b) { return a.us < b.us; });
  return ok;
}
}  // namespace

size_t tuning_key(Graph& g, const Kernel& k) {
  std::unordered_map<const UOp*, size_t> h;
  std::unordered_map<int64_t, size_t> buffer_ordinal;
  std::unordered_map<const UOp*, size_t> range_ordinal;
  for (const UOp* u : toposort({k.ast})) {
    size_t x = mix(mix(0, size_t(u->op)), size_t(u->dtype));
    if (u->op == Op::Buffer) {
      x = mix(x, buffer_ordinal.try_emplace(u->ival(), buffer_ordinal.size()).first->second);
    } else if (u->op == Op::Range) {
      x = mix(mix(x, range_ordinal.try_emplace(u, range_ordinal.size()).first->second), size_t(u->range().kind));
    } else {
      x = std::visit(
          [&](const auto& a) -> size_t {
            using A = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<A, int64_t>)
              return mix(x, size_t(a));
            else if constexpr (std::is_same_v<A, double>)
              return mix(x, std::bit_cast<uint64_t>(a));
            else if constexpr (std::is_same_v<A, std::vector<int64_t>>) {
              for (int64_t v : a) x = mix(x, size_t(v));
              return x;
            } else if constexpr (std::is_same_v<A, ReduceArg>) {
              x = mix(mix(x, size_t(a.op)), size_t(a.ordered));
              for (int64_t v : a.axes) x = mix(x, size_t(v));
              return x;
            } else if constexpr (std::is_same_v<A, VarArg>)
              return mix(mix(mix(x, hash_text(a.name)), size_t(a.min)), size_t(a.max));
            else
              return mix(x, 7);
          },
          u->arg);
    }
    for (const UOp* s : u->src) x = mix(x, h.at(s));
    h[u] = x;
  }
  size_t key = h.at(k.ast);
  // Which ranges are the kernel's axes (and in what order) decides what an action refers to.
  for (const UOp* r : kernel_axes(k)) key = mix(key, range_ordinal.count(r) ? range_ordinal.at(r) : 99991);
  for (const UOp* r : k.local_ranges) key = mix(key, range_ordinal.count(r) ? range_ordinal.at(r) : 99991);
  return k.tensor_cores ? mix(key, k.cuda_cores ? 0x7d : 0x7c) : key;
}

std::vector<std::vector<Opt>> candidate_moves(Graph& g, const Kernel& k, const std::vector<Opt>& opts,
                                              const TargetProfile& t) {
  Kernel cur = apply_opts(g, k, opts, t);
  std::vector<const UOp*> axes = kernel_axes(cur);
  // Threads per work-group so far: LOCAL and GROUP may only grow it up to max_local.
  int64_t threads = 1;
  for (const UOp* l : cur.local_ranges) threads *= l->src[0]->ival();
  std::vector<std::vector<Opt>> out;
  for (size_t a = 0; a < axes.size(); ++a) {
    if (!axes[a]->src[0]->is_const()) continue;  // a run-time dim: not split
    int64_t size = axes[a]->src[0]->ival();
    int axis = int(a);
    bool global = a < cur.global_ranges.size();
    for (int64_t amount : {2, 3, 4, 8, 16, 32, 64, 128, 256}) {
      std::vector<OptOp> splits;
      if (amount <= 32) splits.push_back(global ? OptOp::Upcast : OptOp::Unroll);
      // CPU: a reduce's vector lanes, each its own partial sum.
      if (!t.gpu && !global && amount >= 4 && amount <= 32) splits.push_back(OptOp::Lanes);
      // GPU: a work-group along a global axis, or a reduce split across one (legality, such as
      // its shared memory, is apply_opts' to decide).
      if (t.gpu && threads * amount <= t.max_local) {
        if (global)
          splits.push_back(OptOp::Local);
        else
          splits.insert(splits.end(), {OptOp::Group, OptOp::GroupTop});
      }
      for (OptOp op : splits) {
        if (size % amount == 0)
          out.push_back({{op, axis, amount}});
        else if (amount >= 4 && size > amount)
          out.push_back({{OptOp::Padto, axis, amount}, {op, axis, amount}});
      }
    }
  }
  return out;
}

BeamResult beam_search(Graph& g, const Kernel& k, const TargetProfile& t, const BeamOptions& opt,
                       const MeasureFn& measure, const BeamProgressFn& progress) {
  BeamResult r;
  std::vector<Opt> heuristic = heuristic_opts(g, k, t);
  r.opts = heuristic;
  std::unordered_set<size_t> seen;  // structures already timed (different lists can build the same kernel)
  auto is_new = [&](const std::vector<Opt>& opts) {
    try {
      return seen.insert(tuning_key(g, apply_opts(g, k, opts, t))).second;
    } catch (const Error&) {
      return false;  // not legal on this kernel
    }
  };

  // No actions first: the plainest candidate is the reference the others' outputs must match.
  std::vector<std::vector<Opt>> start = {{}};
  is_new({});
  if (is_new(heuristic)) start.push_back(heuristic);
  std::vector<Timed> timed = run_batch(start, measure, r);
  for (const Timed& c : timed)
    if (c.opts == heuristic) r.heuristic_us = c.us;
  if (timed.empty()) return r;
  r.opts = timed[0].opts, r.us = timed[0].us;
  if (progress) progress(0, r.tried, r.us);

  std::vector<Timed> beam(timed.begin(), timed.begin() + std::min<size_t>(timed.size(), size_t(opt.width)));
  std::mt19937_64 rng(opt.seed ^ tuning_key(g, k));
  for (int round = 1; round <= opt.max_rounds && r.tried < opt.max_candidates; ++round) {
    std::vector<std::vector<Opt>> batch;
    for (const Timed& b : beam)
      for (const std::vector<Opt>& move : candidate_moves(g, k, b.opts, t)) {
        std::vector<Opt> c = b.opts;
        c.insert(c.end(), move.begin(), move.end());
        if (is_new(c)) batch.push_back(std::move(c));
      }
    if (batch.empty()) break;
    size_t room = size_t(opt.max_candidates - r.tried);
    if (batch.size() > room) {
      std::shuffle(batch.begin(), batch.end(), rng);
      batch.resize(room);
    }
    std::vector<Timed> round_best = run_batch(batch, measure, r);
    bool gain = !round_best.empty() && round_best[0].us < r.us * (1 - opt.min_gain);
    if (gain) r.opts = round_best[0].opts, r.us = round_best[0].us;
    if (progress) progress(round, r.tried, r.us);
    if (!gain) break;
    beam.assign(round_best.begin(), round_best.begin() + std::min<size_t>(round_best.size(), size_t(opt.width)));
  }
  return r;
}

}  // namespace tgc
