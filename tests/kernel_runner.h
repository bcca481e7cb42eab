// Executes scheduled (and optimized) kernels directly from their ASTs with the scalar evaluator,
// over host memory: the reference for what kernels compute, independent of any code generator.
#pragma once
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "ir/scalar.h"
#include "passes/schedule.h"
#include "test_util.h"

namespace tgc {

// Ranges a kernel runs in parallel: global and local dims, and UPCAST parts split off them
// (UPCAST and GROUP parts of reduce dims stay in their reduce's list and are iterated there).
inline std::vector<const UOp*> parallel_ranges(const Kernel& k) {
  std::vector<const UOp*> out = k.global_ranges;
  for (const UOp* l : k.local_ranges)
    if (l->range().kind == RangeKind::Local) out.push_back(l);
  std::set<const UOp*> in_reduce;
  std::vector<const UOp*> all = toposort({k.ast});
  for (const UOp* u : all)
    if (u->op == Op::KReduce) in_reduce.insert(u->src.begin() + 1, u->src.end());
  for (const UOp* u : all)
    if (u->op == Op::Range && u->range().kind == RangeKind::Upcast && !in_reduce.count(u)) out.push_back(u);
  return out;
}

// Runs a schedule's kernels in order over host memory; checks bounds and that every output
// element is written exactly once.
class KernelRunner {
 public:
  KernelRunner(const Graph& g, const std::map<int64_t, HostTensor>& feeds) : g_(g) {
    for (size_t id = 0; id < g.num_buffers(); ++id) {
      const BufferInfo& b = g.buffer(int64_t(id));
      if (!b.data) continue;
      HostTensor h(b.dtype, b.shape);
      h.bytes = b.data->to_vector();
      mem_[int64_t(id)] = nums(h);
    }
    for (const auto& [id, h] : feeds) mem_[id] = nums(h);
  }

  void run(const Kernel& k) {
    const BufferInfo& out = g_.buffer(k.output);
    std::vector<Num>& dst = mem_[k.output];
    dst.assign(size_t(numel(out.shape)), Num{});
    std::vector<int> writes(dst.size());
    test::ScalarEval ev;
    ev.load = [&](int64_t buf, int64_t i) -> Num {
      auto it = mem_.find(buf);
      if (it == mem_.end()) {
        ADD_FAILURE() << k.name << " reads buffer '" << g_.buffer(buf).name << "' before it is written";
        return Num{};
      }
      if (i < 0 || i >= int64_t(it->second.size())) {
        ADD_FAILURE() << k.name << " reads '" << g_.buffer(buf).name << "' out of bounds at " << i;
        return Num{};
      }
      return it->second[size_t(i)];
    };
    ev.for_each_position(parallel_ranges(k), [&] {
      if (k.ast->src.size() > 3 && !ev.eval(k.ast->src[3]).i) return;  // a PADTO axis's padding
      int64_t at = ev.index(k.ast->src[1]);
      ASSERT_TRUE(at >= 0 && at < int64_t(dst.size())) << k.name << " stores out of bounds at " << at;
      dst[size_t(at)] = ev.eval(k.ast->src[2]);
      writes[size_t(at)]++;
    });
    for (size_t i = 0; i < writes.size(); ++i)
      ASSERT_EQ(writes[i], 1) << k.name << " writes element " << i << " of '" << out.name << "' " << writes[i] << " times";
  }

  std::vector<double> result(int64_t buf) const {
    std::vector<double> r;
    for (const Num& v : mem_.at(buf)) r.push_back(v.as_double(g_.buffer(buf).dtype));
    return r;
  }

 private:
  static std::vector<Num> nums(const HostTensor& h) {
    std::vector<Num> r;
    for (int64_t i = 0; i < h.numel(); ++i) r.push_back(load_num(h.dtype, &h.bytes[size_t(i * dtype_size(h.dtype))]));
    return r;
  }
  const Graph& g_;
  std::map<int64_t, std::vector<Num>> mem_;
};

}  // namespace tgc
