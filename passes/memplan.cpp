#include "passes/memplan.h"

#include <algorithm>
#include <vector>

namespace tgc {

namespace {
int64_t align(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

struct Live {
  int64_t buffer, bytes;
  size_t first, last;  // kernel indices of the write and of the last read
};
}  // namespace

MemoryPlan plan_memory(const Graph& g, const Schedule& s, int64_t alignment) {
  std::map<int64_t, Live> live;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const Kernel& kn = s.kernels[k];
    if (g.buffer(kn.output).kind == BufferKind::Intermediate) {
      const BufferInfo& b = g.buffer(kn.output);
      live[kn.output] = {kn.output, align(numel(b.shape) * dtype_size(b.dtype), alignment), k, k};
    }
    for (int64_t in : kn.inputs)
      if (auto it = live.find(in); it != live.end()) it->second.last = k;
  }
  std::vector<Live> order;
  for (auto& [_, l] : live) order.push_back(l);
  std::sort(order.begin(), order.end(),
            [](const Live& a, const Live& b) { return a.bytes != b.bytes ? a.bytes > b.bytes : a.buffer < b.buffer; });
  MemoryPlan plan;
  std::vector<std::pair<Live, int64_t>> placed;
  for (const Live& l : order) {
    plan.intermediate_bytes += l.bytes;
    // Lowest offset that does not overlap any placed buffer alive at the same time.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (auto& [p, off] : placed)
      if (!(p.last < l.first || l.last < p.first)) busy.push_back({off, off + p.bytes});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto [b, e] : busy) {
      if (off + l.bytes <= b) break;
      off = std::max(off, e);
    }
    placed.push_back({l, off});
    plan.arena_offset[l.buffer] = off;
    plan.arena_bytes = std::max(plan.arena_bytes, off + l.bytes);
  }
  return plan;
}

}  // namespace tgc
