// The memory plan (passes/memplan): intermediates alive at the same time never share bytes (every
// buffer a kernel touches is alive for the whole kernel), offsets honour the alignment, a chain
// reuses memory, and only intermediates live in the arena.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "passes/memplan.h"
#include "test_util.h"

namespace tgc {
namespace {

int64_t aligned(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

class MemplanTest : public ::testing::Test, protected test::Env {
 protected:
  Schedule schedule_of(const std::vector<Tensor>& outs) {
    std::vector<const UOp*> roots;
    for (const Tensor& t : outs) roots.push_back(t.uop());
    return schedule(g, roots);
  }
  int64_t bytes(int64_t buf) const { return numel(g.buffer(buf).shape) * dtype_size(g.buffer(buf).dtype); }
  std::set<int64_t> intermediates(const Schedule& s) const {
    std::set<int64_t> ids;
    for (const Kernel& k : s.kernels)
      if (g.buffer(k.output).kind == BufferKind::Intermediate) ids.insert(k.output);
    return ids;
  }

  // Checks the plan against lifetimes worked out here from the schedule: a buffer is alive from
  // the kernel writing it to the last kernel reading it, both included.
  void expect_valid(const Schedule& s, const MemoryPlan& plan, int64_t alignment) {
    std::set<int64_t> ids = intermediates(s);
    std::set<int64_t> planned;
    for (const auto& [b, off] : plan.arena_offset) planned.insert(b);
    EXPECT_EQ(planned, ids) << "the arena holds exactly the intermediates";
    int64_t sum = 0;
    for (int64_t b : ids) {
      int64_t off = plan.arena_offset.at(b);
      EXPECT_EQ(off % alignment, 0) << g.buffer(b).name << " at " << off;
      EXPECT_LE(off + bytes(b), plan.arena_bytes) << g.buffer(b).name << " ends past the arena";
      sum += aligned(bytes(b), alignment);
    }
    EXPECT_EQ(plan.intermediate_bytes, sum);
    // During each kernel, every buffer alive then (its own inputs and output among them) has
    // bytes of its own.
    for (size_t i = 0; i < s.kernels.size(); ++i) {
      std::vector<int64_t> alive;
      for (int64_t b : ids) {
        size_t first = s.kernels.size(), last = 0;
        for (size_t j = 0; j < s.kernels.size(); ++j) {
          const Kernel& k = s.kernels[j];
          if (k.output == b) first = std::min(first, j);
          if (std::count(k.inputs.begin(), k.inputs.end(), b)) last = std::max(last, j);
        }
        if (first <= i && i <= std::max(first, last)) alive.push_back(b);
      }
      for (int64_t a : alive)
        for (int64_t b : alive)
          if (a < b) {
            int64_t oa = plan.arena_offset.at(a), ob = plan.arena_offset.at(b);
            EXPECT_TRUE(oa + bytes(a) <= ob || ob + bytes(b) <= oa)
                << g.buffer(a).name << " [" << oa << ", +" << bytes(a) << ") and " << g.buffer(b).name << " [" << ob
                << ", +" << bytes(b) << ") overlap while both are alive in kernel " << i << "\n"
                << describe(g, s);
          }
    }
  }
};

// x -> 6 kernels in a row, each storing a 3x5 f32 tensor (60 bytes: a misfit for any alignment).
std::vector<Tensor> chain(test::Env& e, int n) {
  Tensor t = e.input({3, 5});
  for (int i = 0; i < n; ++i) t = (t * 1.5 + 0.25).contiguous();
  return {t.exp()};
}

TEST_F(MemplanTest, ChainPingPongsBetweenTwoSlots) {
  Schedule s = schedule_of(chain(*this, 6));
  ASSERT_EQ(intermediates(s).size(), 6u) << describe(g, s);
  for (int64_t alignment : {64, 512}) {
    SCOPED_TRACE("alignment " + std::to_string(alignment));
    MemoryPlan plan = plan_memory(g, s, alignment);
    expect_valid(s, plan, alignment);
    EXPECT_EQ(plan.intermediate_bytes, 6 * alignment);
    EXPECT_EQ(plan.arena_bytes, 2 * alignment) << "each kernel needs its input and output, no more";
  }
}

// A value read again three kernels later (a residual) keeps its slot until then, apart from the
// buffers computed in between.
TEST_F(MemplanTest, ResidualStaysAliveUntilItsLastRead) {
  Tensor x = input({4, 16});
  Tensor a = (x * 2.0).contiguous();
  Tensor b = (a.exp() + 1.0).contiguous();
  Tensor c = (b.sqrt() * 3.0).contiguous();
  Tensor d = (c + 0.5).contiguous();
  Schedule s = schedule_of({(d + a).relu()});
  ASSERT_EQ(intermediates(s).size(), 4u) << describe(g, s);
  MemoryPlan plan = plan_memory(g, s);
  expect_valid(s, plan, 64);
  EXPECT_EQ(plan.arena_bytes, 3 * 256) << "a, plus the two others a kernel between touches";
}

// Buffers of different sizes: the largest are placed first, and smaller ones reuse their space
// once they are dead.
TEST_F(MemplanTest, MixedSizesStayApartWhileAlive) {
  Tensor x = input({8, 32});
  Tensor wide = (x * 2.0).contiguous();               // 1 KiB
  Tensor rows = wide.sum({1}, true).contiguous();     // 32 B
  Tensor scaled = (wide * rows).contiguous();         // 1 KiB, reads both
  Tensor small = scaled.max({0}, true).contiguous();  // 128 B
  Schedule s = schedule_of({(small + 1.0).exp(), rows.exp()});
  for (int64_t alignment : {64, 512}) {
    SCOPED_TRACE("alignment " + std::to_string(alignment));
    MemoryPlan plan = plan_memory(g, s, alignment);
    expect_valid(s, plan, alignment);
    EXPECT_LT(plan.arena_bytes, plan.intermediate_bytes) << describe(g, s);
  }
}

TEST_F(MemplanTest, WeightsInputsAndOutputsAreNotInTheArena) {
  Tensor x = input({4, 8});
  Tensor w = weight({8, 8});
  Tensor h = x.matmul(w).relu().contiguous();
  Schedule s = schedule_of({h.matmul(w), h.exp()});
  MemoryPlan plan = plan_memory(g, s);
  expect_valid(s, plan, 64);
  EXPECT_FALSE(plan.arena_offset.count(x.uop()->ival()));
  EXPECT_FALSE(plan.arena_offset.count(w.uop()->ival()));
  for (int64_t o : s.outputs) EXPECT_FALSE(plan.arena_offset.count(o)) << g.buffer(o).name;
  EXPECT_EQ(plan.arena_offset.size(), 1u) << "only h\n" << describe(g, s);
}

TEST_F(MemplanTest, NoIntermediatesNoArena) {
  Schedule s = schedule_of({(input({5, 5}) * 2.0).exp()});
  MemoryPlan plan = plan_memory(g, s);
  EXPECT_TRUE(plan.arena_offset.empty());
  EXPECT_EQ(plan.arena_bytes, 0);
  EXPECT_EQ(plan.intermediate_bytes, 0);
}

}  // namespace
}  // namespace tgc
