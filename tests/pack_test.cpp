// Panel packing (passes/pack.h): which reduces get their operand packed, and that the packed
// kernels (with and without the heuristic's actions) compute what the interpreter does. A
// profile with a 1 KiB L2 makes small matmuls "large" so the reference backend can run them.
#include <gtest/gtest.h>

#include "passes/kernel_eval.h"
#include "passes/opt.h"
#include "passes/pack.h"
#include "ran_cleanly.h"
#include "test_util.h"

namespace tgc {
namespace {

TargetProfile tiny_l2() {
  TargetProfile t = cpu_profile([](const std::string& f) { return f == "avx2"; }, false);  // 8 lanes: panels of 16
  t.l2_bytes = 1024;
  return t;
}

class PackTest : public ::testing::Test, protected test::Env {
 protected:
  // Schedules `out`, packs, runs every kernel (after the heuristic's actions when `opts`) and
  // compares with the interpreter. Returns the packed schedule.
  Schedule check(const Tensor& out, bool opts) {
    HostTensor want = run({out})[0];
    Schedule s = schedule(g, {out.uop()});
    pack_panels(g, s, tiny_l2());
    KernelEvaluator m(g, feeds);
    for (const Kernel& plain : s.kernels) {
      Kernel k = opts ? apply_opts(g, plain, heuristic_opts(g, plain, tiny_l2()), tiny_l2()) : plain;
      SCOPED_TRACE(k.name);
      EXPECT_TRUE(test::ran_cleanly(m.run(k)));
    }
    EXPECT_TRUE(test::all_close(m.result(s.outputs[0]), test::values(want), {1e-5, 1e-6}));
    return s;
  }
  // The buffers named "*_panels" that the schedule's kernels read.
  int packed_reads(const Schedule& s) {
    int n = 0;
    for (const Kernel& k : s.kernels)
      for (int64_t b : k.inputs) n += g.buffer(b).name.ends_with("_panels");
    return n;
  }
};

TEST_F(PackTest, InputOperandGetsAPackKernel) {
  Schedule s = check(input({24, 40}).matmul(input({40, 48})), false);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(g.buffer(s.kernels[0].output).shape, (Shape{3, 40, 16}));  // 48 columns in panels of 16
  EXPECT_EQ(packed_reads(s), 1);
  // The panel axis is outermost: a work item keeps its panel while it passes the rows.
  EXPECT_EQ(range_extent(s.kernels[1].global_ranges.front()), 3);
}

TEST_F(PackTest, PackedKernelKeepsResultsUnderHeuristicOpts) {
  Schedule s = check((input({16, 32}).matmul(input({32, 64})) + 1.0f).relu(), true);
  EXPECT_EQ(packed_reads(s), 1);
}

TEST_F(PackTest, WeightIsPackedAtCompileTime) {
  Schedule s = check(input({9, 20}).matmul(weight({20, 32})), false);
  ASSERT_EQ(s.kernels.size(), 1u);  // no copy kernel
  EXPECT_EQ(packed_reads(s), 1);
}

TEST_F(PackTest, BatchedOperandPacksEveryMatrix) {
  Schedule s = check(input({2, 12, 24}).matmul(input({2, 24, 32})), true);
  EXPECT_EQ(packed_reads(s), 1);
}

TEST_F(PackTest, LeavesAloneWhatWouldNotPay) {
  EXPECT_EQ(packed_reads(check(input({4, 40}).matmul(input({40, 48})), false)), 0);   // B read once: one tile of rows
  EXPECT_EQ(packed_reads(check(input({24, 40}).matmul(input({40, 20})), false)), 0);  // no whole panel of columns
  EXPECT_EQ(packed_reads(check(input({24, 40}).matmul(input({48, 40}).permute({1, 0})), false)), 0);  // reduce axis contiguous
  Schedule s = schedule(g, {input({24, 8}).matmul(input({8, 16})).uop()});
  TargetProfile big = tiny_l2();
  big.l2_bytes = 1 << 20;  // B's 512 bytes fit in L2
  pack_panels(g, s, big);
  EXPECT_EQ(packed_reads(s), 0);
}

}  // namespace
}  // namespace tgc
