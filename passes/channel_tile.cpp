#include "passes/channel_tile.h"

namespace tgc {

namespace {
// Divisors of n up to `most`, largest first (of equal tiles, the one longest along the columns
// wins: its broadcasts read neighbours).
std::vector<int64_t> divisors(int64_t n, int64_t most) {
  std::vector<int64_t> out;
  for (int64_t d = std::min(n, most); d >= 1; --d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// The product of the kernel's reduce ranges (a conv's input channels x window).
int64_t reduce_size(const Kernel& k) {
  int64_t n = 1;
  for (const UOp* u : toposort({k.ast}))
    if (u->op == Op::KReduce)
      for (size_t i = 1; i < u->src.size(); ++i) n *= u->src[i]->src[0]->is_const() ? range_extent(u->src[i]) : 1;
  return n;
}
}  // namespace

std::optional<ChannelTile> channel_tile(const Kernel& k, const UOp* c, const TargetProfile& t, int64_t most_lanes) {
  const int64_t lanes = t.vector_lanes, accumulators = std::max(2, t.vector_registers / 2);
  if (!k.num_reduces || !c->src[0]->is_const() || range_extent(c) % lanes || lanes < 4) return std::nullopt;
  // Each accumulator's lanes are stored one element at a time: a reduce of a few steps per
  // output would spend as much on its stores as on its multiply-adds.
  if (reduce_size(k) < 2 * lanes) return std::nullopt;
  std::vector<const UOp*> axes;  // the columns, then the rows
  for (size_t i = k.global_ranges.size(); i-- > 0 && axes.size() < 2;) {
    const UOp* r = k.global_ranges[i];
    if (r == c || !r->src[0]->is_const()) break;
    axes.push_back(r);
  }
  if (axes.empty()) return std::nullopt;
  std::optional<ChannelTile> best;
  double best_score = 0;
  int64_t best_acc = 0;
  for (int64_t m : {1, 2, 4}) {
    if (range_extent(c) % (m * lanes) || m * lanes > most_lanes) continue;
    for (int64_t w : divisors(range_extent(axes[0]), accumulators / m))
      for (int64_t h :
           axes.size() > 1 ? divisors(range_extent(axes[1]), accumulators / (m * w)) : std::vector<int64_t>{1}) {
        int64_t p = w * h, acc = m * p;
        double score = double(acc) / double(m + p);
        if (acc * 2 + 2 < accumulators || score < best_score || (score == best_score && acc <= best_acc)) continue;
        best_score = score, best_acc = acc;
        best = ChannelTile{m * lanes, {}};
        if (w > 1) best->positions.push_back({axes[0], w});
        if (h > 1) best->positions.push_back({axes[1], h});
      }
  }
  return best;
}

}  // namespace tgc
