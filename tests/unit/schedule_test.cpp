// The scheduler: how a graph is cut into kernels, what the kernels' index expressions simplify
// to, and (by executing the kernel ASTs with a small evaluator) that the kernels compute exactly
// what the reference interpreter computes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <ostream>
#include <set>

#include "ir/print.h"
#include "ir/symbolic.h"
#include "passes/schedule.h"
#include "ran_cleanly.h"
#include "test_util.h"

namespace tgc {
namespace {

using test::all_close;

class ScheduleTest : public ::testing::Test, protected test::Env {
 protected:
  // Schedules `outs`, executes the kernels and compares every output with the interpreter.
  Schedule schedule_and_check(const std::vector<Tensor>& outs, const ScheduleOptions& o = {}) {
    std::vector<HostTensor> want = run(outs);  // before scheduling adds buffers to the graph
    std::vector<const UOp*> roots;
    for (const Tensor& t : outs) roots.push_back(t.uop());
    Schedule s = schedule(g, roots, o);
    if (std::getenv("TGC_TEST_VERBOSE")) std::cout << listing(s);
    EXPECT_EQ(s.outputs.size(), outs.size());
    KernelEvaluator m(g, feeds);
    for (const Kernel& k : s.kernels) {
      ::testing::AssertionResult ok = test::ran_cleanly(m.run(k));
      EXPECT_TRUE(ok);
      if (!ok) break;
    }
    for (size_t i = 0; i < outs.size() && i < s.outputs.size(); ++i)
      EXPECT_TRUE(all_close(m.result(s.outputs[i]), test::values(want[i]), {1e-5, 1e-6})) << "output " << i;
    return s;
  }
  std::string listing(const Schedule& s) const { return describe(g, s); }
  static int total_reduces(const Schedule& s) {
    int n = 0;
    for (const Kernel& k : s.kernels) n += k.num_reduces;
    return n;
  }
};

void collect(const UOp* u, Op op, std::set<const UOp*>& out) {
  if (u->op == op) out.insert(u);
  for (const UOp* s : u->src) collect(s, op, out);
}

TEST_F(ScheduleTest, ElementwiseChainIsOneKernel) {
  Tensor x = input({3, 5, 7});
  Tensor t = x;
  for (int i = 0; i < 20; ++i) {
    switch (i % 5) {
      case 0: t = t * 1.25; break;
      case 1: t = t + 0.5; break;
      case 2: t = t.sin(); break;
      case 3: t = -t; break;
      default: t = t.maximum(t.full_like(-0.5)); break;
    }
  }
  Schedule s = schedule_and_check({t});
  ASSERT_EQ(s.kernels.size(), 1u) << listing(s);
  EXPECT_EQ(s.kernels[0].num_reduces, 0);
  EXPECT_EQ(s.kernels[0].inputs, std::vector<int64_t>{x.uop()->ival()});
  EXPECT_EQ(s.kernels[0].output, s.outputs[0]);
  EXPECT_EQ(g.buffer(s.outputs[0]).kind, BufferKind::Output);
  EXPECT_EQ(s.kernels[0].global_ranges.size(), 3u);
}

TEST_F(ScheduleTest, ValueReusedAtTheSameIndexIsComputedOnceInline) {
  Tensor x = input({5, 7});
  Tensor y = x.exp();
  Schedule s = schedule_and_check({y * y + y});
  EXPECT_EQ(s.kernels.size(), 1u) << listing(s);
  std::set<const UOp*> exps;
  collect(s.kernels[0].ast, Op::Exp2, exps);
  EXPECT_EQ(exps.size(), 1u) << "exp must be one shared node in the kernel";
}

// Padding read inside a reduce's window is stored first (one copy kernel), so the conv reads
// without masks; conv + bias + relu is the second kernel.
void expect_pad_then_reduce(const Graph& g, const Schedule& s, const std::string& listing) {
  ASSERT_EQ(s.kernels.size(), 2u) << listing;
  EXPECT_EQ(s.kernels[0].num_reduces, 0) << listing;
  EXPECT_EQ(g.buffer(s.kernels[0].output).kind, BufferKind::Intermediate);
  EXPECT_EQ(s.kernels[1].num_reduces, 1) << listing;
  // The reduce's loads carry no masks.
  for (const UOp* u : toposort({s.kernels[1].ast}))
    if (u->op == Op::Load) {
      EXPECT_EQ(u->src.size(), 2u) << listing;
    }
}

// Dequantized weights (an elementwise function of a weight buffer alone) are recomputed
// in the matmul that reads them, however many rows reuse them: realizing them would put an
// expanded copy of the weights in the arena. The same expression of an input is realized.
TEST_F(ScheduleTest, ExpandedFunctionOfWeightsStaysInline) {
  Tensor x = input({16, 32});
  Tensor q = int_weight({32, 32}, test::random_floats(rng, 32 * 32, 0, 255), DType::U8);
  Tensor w = ((q.bitwise(Op::Shr, q.scalar(4)).cast(DType::F32) - 8.0) * 0.25).sin();  // costly enough to realize
  Schedule s = schedule_and_check({x.matmul(w)});
  EXPECT_EQ(s.kernels.size(), 1u) << listing(s);
  Tensor xi = input({32, 32}, 0, 255).cast(DType::U8);
  Tensor wi = ((xi.bitwise(Op::Shr, xi.scalar(4)).cast(DType::F32) - 8.0) * 0.25).sin();
  Schedule s2 = schedule_and_check({x.matmul(wi)});
  EXPECT_EQ(s2.kernels.size(), 2u) << "the same function of an input is realized: " << listing(s2);
}
TEST_F(ScheduleTest, PaddedConvBiasReluIsPadCopyPlusOneKernel) {
  Tensor x = input({1, 3, 9, 7});
  Tensor w = weight({4, 3, 3, 3}), b = weight({4});
  Tensor y = x.conv(w, b, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1).relu();
  Schedule s = schedule_and_check({y});
  expect_pad_then_reduce(g, s, listing(s));
  std::vector<int64_t> reads = s.kernels[1].inputs;
  std::sort(reads.begin(), reads.end());
  EXPECT_EQ(reads, (std::vector<int64_t>{w.uop()->ival(), b.uop()->ival(), s.kernels[0].output}));
}

// On GPUs a short reduce (a first conv over 3 channels: 27 products) reads its padding through
// masks instead of a copy kernel; a longer one (8 channels: 72) still reads a stored copy.
TEST_F(ScheduleTest, GpuShortConvReadsItsPaddingThroughMasks) {
  Tensor x = input({1, 3, 9, 7});
  Tensor y = x.conv(weight({4, 3, 3, 3}), weight({4}), {1, 1}, {1, 1, 1, 1}, {1, 1}, 1).relu();
  Schedule s = schedule_and_check({y}, {.parallel_outputs = true});
  ASSERT_EQ(s.kernels.size(), 1u) << listing(s);
  Tensor x8 = input({1, 8, 9, 7});
  Tensor y8 = x8.conv(weight({4, 8, 3, 3}), weight({4}), {1, 1}, {1, 1, 1, 1}, {1, 1}, 1).relu();
  Schedule s8 = schedule_and_check({y8}, {.parallel_outputs = true});
  expect_pad_then_reduce(g, s8, listing(s8));
}

// A pool feeding a global mean: on a CPU the pool is stored first (fused, its outputs would come
// one at a time in the mean's serial order); on GPUs a thread's loops over both (48 x 4 elements)
// cost less than a launch, so it is one kernel; long nests (a mean over 64 x 64 pools of 2 x 2) are not.
TEST_F(ScheduleTest, GpuShortNestedReducesAreOneKernel) {
  Tensor x = input({1, 8, 12, 16});
  Tensor y = x.max_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false).mean({2, 3});
  EXPECT_EQ(schedule_and_check({y}).kernels.size(), 2u);
  Schedule s = schedule_and_check({y}, {.parallel_outputs = true});
  ASSERT_EQ(s.kernels.size(), 1u) << listing(s);
  EXPECT_EQ(s.kernels[0].num_reduces, 2) << listing(s);
  Tensor big = input({1, 2, 128, 128});
  Tensor z = big.max_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false).mean({2, 3});
  EXPECT_EQ(schedule_and_check({z}, {.parallel_outputs = true}).kernels.size(), 2u);
}

// A squeeze-excite block: channel means, two FC layers, the scaling, a 1x1 conv. GPUs with serial
// launches (passes/serial_launches.h) realize the second FC on its own (it joins the means and the
// first FC in one launch) and scale inside the conv; elsewhere the scaling recomputes the FC in a
// kernel of its own.
TEST_F(ScheduleTest, SerialTargetsRunSqueezeExciteScalingInsideTheNextConv) {
  Tensor x = input({1, 32, 6, 16});
  Tensor w1 = weight({8, 32, 1, 1}), b1 = weight({8}), w2 = weight({32, 8, 1, 1}), b2 = weight({32}),
         w3 = weight({16, 32, 1, 1});
  Tensor se = x.mean({2, 3}, true).conv(w1, b1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1).relu();
  se = se.conv(w2, b2, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1).sigmoid();
  Tensor y = (x * se).conv(w3, std::nullopt, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
  ScheduleOptions gpu{.parallel_outputs = true, .redundant_work = 1 << 22};
  Schedule plain = schedule_and_check({y}, gpu);
  ASSERT_EQ(plain.kernels.size(), 4u) << listing(plain);  // mean, FC, FC inside the scaling, conv
  EXPECT_EQ(plain.kernels[2].global_ranges.size(), 3u) << listing(plain);
  gpu.serial_group = 256;
  Schedule s = schedule_and_check({y}, gpu);
  ASSERT_EQ(s.kernels.size(), 4u) << listing(s);  // mean, FC, FC, conv scaling its inputs
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(numel(g.buffer(s.kernels[size_t(i)].output).shape), i == 1 ? 8 : 32) << listing(s);
  EXPECT_EQ(s.kernels[3].output, s.outputs[0]);
}

TEST_F(ScheduleTest, UnpaddedConvBiasReluIsOneKernel) {
  Tensor x = input({1, 3, 9, 7});
  Tensor w = weight({4, 3, 3, 3}), b = weight({4});
  Tensor y = x.conv(w, b, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1).relu();
  Schedule s = schedule_and_check({y});
  ASSERT_EQ(s.kernels.size(), 1u) << listing(s);
  EXPECT_EQ(s.kernels[0].num_reduces, 1);
  EXPECT_NE(describe(g, s).find("reduces=1"), std::string::npos) << describe(g, s);
}

TEST_F(ScheduleTest, StridedGroupedConvIsPadCopyPlusOneKernel) {
  Tensor x = input({2, 4, 7, 6});
  Tensor w = weight({6, 2, 3, 3}), b = weight({6});
  Tensor y = x.conv(w, b, {2, 1}, {1, 0, 0, 2}, {1, 2}, 2).relu();
  Schedule s = schedule_and_check({y});
  expect_pad_then_reduce(g, s, listing(s));
}

TEST_F(ScheduleTest, ConvFeedingAPoolIsStoredFirst) {
  Tensor x = input({1, 3, 8, 8});
  Tensor w = weight({4, 3, 1, 1});
  Tensor y =
      x.conv(w, std::nullopt, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1).max_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false);
  Schedule s = schedule_and_check({y});
  ASSERT_EQ(s.kernels.size(), 2u) << listing(s);
  EXPECT_EQ(s.kernels[0].num_reduces, 1);
  EXPECT_EQ(s.kernels[1].num_reduces, 1);
}

TEST_F(ScheduleTest, SoftmaxIsAtMostTwoKernels) {
  Tensor x = input({5, 7}, -3, 3);
  Schedule s = schedule_and_check({x.softmax(-1)});
  EXPECT_LE(s.kernels.size(), 2u) << listing(s);
  EXPECT_LE(total_reduces(s), 2) << listing(s);
}

TEST_F(ScheduleTest, MatmulOfMatmulRealizesTheFirstProduct) {
  Tensor a = input({3, 5}), b = weight({5, 7}), c = weight({7, 4});
  Schedule s = schedule_and_check({a.matmul(b).matmul(c)});
  ASSERT_EQ(s.kernels.size(), 2u) << listing(s);
  EXPECT_EQ(s.kernels[0].num_reduces, 1);
  EXPECT_EQ(s.kernels[1].num_reduces, 1);
  EXPECT_EQ(g.buffer(s.kernels[0].output).kind, BufferKind::Intermediate);
  EXPECT_EQ(numel(g.buffer(s.kernels[0].output).shape), 3 * 7);
  const auto& second = s.kernels[1].inputs;
  EXPECT_NE(std::find(second.begin(), second.end(), s.kernels[0].output), second.end()) << listing(s);
}

TEST_F(ScheduleTest, ReduceSharedByTwoOutputsIsRealizedOnce) {
  Tensor x = input({5, 64});
  Tensor sum = x.sum({1}, true);
  Schedule s = schedule_and_check({x - sum, x * sum});
  // 64 terms per row is far more than reading one realized value back.
  ASSERT_EQ(s.kernels.size(), 3u) << listing(s);
  EXPECT_EQ(total_reduces(s), 1) << listing(s);
  EXPECT_EQ(s.kernels[0].num_reduces, 1);
  EXPECT_EQ(numel(g.buffer(s.kernels[0].output).shape), 5);
  for (size_t i = 1; i < 3; ++i) {
    const auto& in = s.kernels[i].inputs;
    EXPECT_NE(std::find(in.begin(), in.end(), s.kernels[0].output), in.end()) << listing(s);
  }
}

TEST_F(ScheduleTest, CheapSharedReduceIsNeverRecomputedPerElement) {
  // A 3-term reduce may be inlined into both outputs, but only per row: never per column.
  Tensor x = input({5, 3});
  Tensor sum = x.sum({1}, true);
  Schedule s = schedule_and_check({x - sum, x * sum});
  EXPECT_LE(s.kernels.size(), 3u);
  for (const Kernel& k : s.kernels) {
    std::set<const UOp*> reduces;
    collect(k.ast, Op::KReduce, reduces);
    EXPECT_LE(reduces.size(), 1u) << listing(s);
    for (const UOp* column : k.global_ranges) {
      if (column->src[0]->ival() != 3) continue;
      for (const UOp* r : reduces)
        EXPECT_FALSE(depends_on(r, column)) << "reduce recomputed per column\n" << listing(s);
    }
  }
}

TEST_F(ScheduleTest, OneNodeRequestedThriceGetsThreeBuffers) {
  // The same node as three model outputs (e.g. two equal empty splits): each must be written.
  Tensor y = input({4, 3}).exp();
  Schedule s = schedule_and_check({y, y, y});
  std::set<int64_t> buffers(s.outputs.begin(), s.outputs.end());
  EXPECT_EQ(buffers.size(), 3u) << listing(s);
  std::set<int64_t> written;
  for (const Kernel& k : s.kernels) written.insert(k.output);
  for (int64_t b : s.outputs)
    EXPECT_TRUE(written.count(b)) << "output buffer " << b << " is never written\n" << listing(s);
}

// A gather (a one-hot reduce in the Tensor API) is a load at the index: no reduce over the
// table; out-of-range indices give 0, as the one-hot does.
TEST_F(ScheduleTest, GatherIsALoadNotAOneHotReduce) {
  Tensor table = weight({50, 8});
  Tensor idx = Tensor::input(g, "idx", DType::I32, {4});
  HostTensor ids(DType::I32, {4});
  for (int i = 0; i < 4; ++i) ids.set(i, std::vector<double>{3, -1, 49, 60}[size_t(i)]);  // -1: the last row; 60: none
  feeds[idx.uop()->ival()] = ids;
  Schedule s = schedule_and_check({table.gather(idx, 0) * 2.0});
  EXPECT_EQ(total_reduces(s), 0) << listing(s);
  ASSERT_EQ(s.kernels.size(), 1u) << listing(s);
}

// An ASSIGN is one kernel storing its value into the state buffer at a run-time offset along
// its axis; its consumers read the state buffer after it.
TEST_F(ScheduleTest, AssignStoresIntoTheStateBufferAtItsOffset) {
  const UOp* n = g.declare_var("n", 1, 6);
  Tensor state = Tensor::state(g, "cache", DType::F32, {4, 6});
  Tensor x = input({4, 2});
  Sym sym{g};
  Tensor after = state.assign(x * 3.0, 1, sym.add(n, -2));  // columns n-2, n-1
  HostTensor vars(DType::I64, {1});
  vars.set(0, 5);
  feeds[g.vars_buffer()] = vars;
  Schedule s = schedule_and_check({after.sum({1}, true) + after * 1.0});
  ASSERT_GE(s.kernels.size(), 2u) << listing(s);
  EXPECT_EQ(s.kernels[0].output, state.uop()->ival()) << listing(s);
  EXPECT_EQ(g.buffer(s.kernels[0].output).kind, BufferKind::State);
  for (size_t k = 1; k < s.kernels.size(); ++k)
    EXPECT_NE(std::find(s.kernels[k].inputs.begin(), s.kernels[k].inputs.end(), state.uop()->ival()),
              s.kernels[k].inputs.end())
        << listing(s);
}

TEST_F(ScheduleTest, ContiguousForcesAKernel) {
  Tensor x = input({5, 7});
  Schedule s = schedule_and_check({x.exp().contiguous() + 1.0});
  EXPECT_EQ(s.kernels.size(), 2u) << listing(s);
}

TEST_F(ScheduleTest, PermuteReshapeIsOneCopyKernel) {
  Tensor x = input({2, 3, 5});
  Schedule s = schedule_and_check({x.permute({2, 0, 1}).reshape({5, 6})});
  ASSERT_EQ(s.kernels.size(), 1u) << listing(s);
  const Kernel& k = s.kernels[0];
  EXPECT_EQ(k.num_reduces, 0);
  EXPECT_EQ(k.inputs, std::vector<int64_t>{x.uop()->ival()});
  ASSERT_EQ(k.ast->src[2]->op, Op::Load) << listing(s);
}

TEST_F(ScheduleTest, PaddedCropIsOneKernelWithMaskedLoads) {
  Tensor x = input({5, 7});
  Tensor y = x.pad({{1, 2}, {-2, 3}}, 0).flip({1}).shrink({{0, 8}, {1, 7}});
  Schedule s = schedule_and_check({y});
  EXPECT_EQ(s.kernels.size(), 1u) << listing(s);
}

TEST_F(ScheduleTest, PaddedPoolingIsPadCopyPlusOneKernel) {
  Tensor x = input({1, 2, 9, 7});
  Schedule s = schedule_and_check({x.max_pool({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true)});
  expect_pad_then_reduce(g, s, listing(s));
}

// A chain of reshapes (or permutes) that ends where it started loads at the store index itself.
struct RoundTrip {
  const char* name;
  std::function<Tensor(const Tensor&)> f;
  Shape in;
};
void PrintTo(const RoundTrip& c, std::ostream* os) { *os << c.name; }

class MovementRoundTrip : public ScheduleTest, public ::testing::WithParamInterface<RoundTrip> {};

TEST_P(MovementRoundTrip, LoadIndexEqualsStoreIndex) {
  Tensor x = input(GetParam().in);
  Schedule s = schedule_and_check({GetParam().f(x)});
  ASSERT_EQ(s.kernels.size(), 1u);
  const UOp* store = s.kernels[0].ast;
  ASSERT_EQ(store->src[2]->op, Op::Load) << listing(s);
  EXPECT_EQ(store->src[2]->src[1], store->src[1]) << listing(s);
}

INSTANTIATE_TEST_SUITE_P(
    Schedule, MovementRoundTrip,
    ::testing::Values(
        RoundTrip{"reshape_6_2x3_6", [](auto& x) { return x.reshape({2, 3}).reshape({6}); }, {6}},
        RoundTrip{"reshape_2x3_6_2x3", [](auto& x) { return x.reshape({6}).reshape({2, 3}); }, {2, 3}},
        RoundTrip{"reshape_24_2x3x4_24", [](auto& x) { return x.reshape({2, 3, 4}).reshape({24}); }, {24}},
        RoundTrip{"reshape_3x5x7_105_3x5x7", [](auto& x) { return x.reshape({105}).reshape({3, 5, 7}); }, {3, 5, 7}},
        RoundTrip{"reshape_6x4_2x3x4_6x4", [](auto& x) { return x.reshape({2, 3, 4}).reshape({6, 4}); }, {6, 4}},
        RoundTrip{"permute_twice", [](auto& x) { return x.permute({2, 0, 1}).permute({1, 2, 0}); }, {3, 5, 7}},
        RoundTrip{"flip_twice", [](auto& x) { return x.flip({0, 1}).flip({1, 0}); }, {3, 5}},
        RoundTrip{"expand_shrink",
                  [](auto& x) { return x.reshape({1, 15}).expand({4, 15}).shrink({{2, 3}, {0, 15}}).reshape({15}); },
                  {15}}),
    [](const auto& info) { return std::string(info.param.name); });

// Whatever the plan, executing the kernels must give what the interpreter gives.
struct GraphCase {
  const char* name;
  std::function<std::vector<Tensor>(test::Env&)> build;
};
void PrintTo(const GraphCase& c, std::ostream* os) { *os << c.name; }

class KernelsMatchInterpreter : public ScheduleTest, public ::testing::WithParamInterface<GraphCase> {};

TEST_P(KernelsMatchInterpreter, OnEveryOutput) {
  std::vector<Tensor> outs = GetParam().build(*this);
  Schedule s = schedule_and_check(outs);
  EXPECT_GE(s.kernels.size(), 1u);
}

using Outs = std::vector<Tensor>;
INSTANTIATE_TEST_SUITE_P(
    Schedule, KernelsMatchInterpreter,
    ::testing::Values(
        GraphCase{
            "layer_norm",
            [](test::Env& e) { return Outs{e.input({3, 5, 7}).layer_norm({-1}, e.weight({7}), e.weight({7}), 1e-5)}; }},
        GraphCase{"softmax_axis0", [](test::Env& e) { return Outs{e.input({5, 7}, -3, 3).softmax(0)}; }},
        GraphCase{"log_softmax_axis1", [](test::Env& e) { return Outs{e.input({3, 5, 7}, -3, 3).log_softmax(1)}; }},
        GraphCase{"mean_axes_0_2", [](test::Env& e) { return Outs{e.input({3, 5, 7}).mean({0, 2}, true)}; }},
        GraphCase{"prod_min",
                  [](test::Env& e) {
                    Tensor x = e.input({3, 5, 7});
                    return Outs{x.prod({1}), x.min({0, 1})};
                  }},
        GraphCase{"expanded_reduce", [](test::Env& e) { return Outs{e.input({3, 1, 5}).expand({3, 7, 5}).sum({1})}; }},
        GraphCase{"argmax", [](test::Env& e) { return Outs{e.input({3, 5, 7}).argmax(1)}; }},
        GraphCase{"batched_matmul",
                  [](test::Env& e) { return Outs{e.input({2, 1, 3, 5}).matmul(e.weight({4, 5, 7}))}; }},
        GraphCase{"matmul_chain",
                  [](test::Env& e) { return Outs{e.input({3, 5}).matmul(e.weight({5, 7})).matmul(e.weight({7, 4}))}; }},
        GraphCase{
            "depthwise_conv",
            [](test::Env& e) {
              return Outs{
                  e.input({1, 3, 7, 7}).conv(e.weight({3, 1, 3, 3}), e.weight({3}), {2, 2}, {1, 1, 1, 1}, {1, 1}, 3)};
            }},
        GraphCase{
            "dilated_conv",
            [](test::Env& e) {
              return Outs{
                  e.input({1, 2, 9, 7}).conv(e.weight({3, 2, 3, 3}), std::nullopt, {1, 1}, {0, 1, 0, 1}, {2, 3}, 1)};
            }},
        GraphCase{"avg_pool_ceil",
                  [](test::Env& e) {
                    Tensor x = e.input({2, 1, 6, 6});
                    return Outs{x.avg_pool({3, 3}, {2, 2}, {1, 1, 1, 1}, true, true),
                                x.avg_pool({3, 3}, {2, 2}, {1, 1, 1, 1}, false, true)};
                  }},
        GraphCase{"max_pool_dilated",
                  [](test::Env& e) {
                    return Outs{e.input({1, 2, 8, 7}).max_pool({2, 3}, {2, 2}, {1, 1, 1, 1}, {2, 1}, true)};
                  }},
        GraphCase{"batch_norm",
                  [](test::Env& e) {
                    return Outs{
                        e.input({2, 3, 5, 5})
                            .batch_norm(e.weight({3}), e.weight({3}), e.weight({3}), e.weight({3}, 0.5f, 2), 1e-5)};
                  }},
        GraphCase{
            "gather",
            [](test::Env& e) { return Outs{e.input({5, 7}).gather(e.int_weight({2, 3}, {0, -1, 3, 4, -5, 2}), 0)}; }},
        GraphCase{"cat_slice",
                  [](test::Env& e) {
                    Tensor c = Tensor::cat({e.input({3, 2, 4}), e.weight({3, 5, 4}), e.input({3, 1, 4})}, 1);
                    return Outs{c.slice({6, 3}, {-9, 0}, {1, 2}, {-2, -1})};
                  }},
        GraphCase{
            "pad_repeat_flip",
            [](test::Env& e) { return Outs{e.input({3, 5}).pad({{1, -1}, {-2, 2}}, 2.5).repeat({2, 1}).flip({0})}; }},
        GraphCase{"input_as_output",
                  [](test::Env& e) {
                    Tensor x = e.input({3, 5});
                    return Outs{x, x.transpose(), x};
                  }},
        GraphCase{"shared_exp_two_outputs",
                  [](test::Env& e) {
                    Tensor y = e.input({5, 7}).exp();
                    return Outs{y, y.sum({1})};
                  }},
        GraphCase{"rounding_where",
                  [](test::Env& e) {
                    Tensor x = e.input({5, 7}, -4, 4);
                    return Outs{Tensor::where(x.gt(x.full_like(0)), x.round(), x.floor() + x.ceil())};
                  }},
        GraphCase{"int_ops",
                  [](test::Env& e) {
                    Tensor i = (e.input({5, 7}, -9, 9)).cast(DType::I32);
                    return Outs{i.mod(i.full_like(4)) * i, i.cast(DType::F32).sigmoid()};
                  }}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tgc
