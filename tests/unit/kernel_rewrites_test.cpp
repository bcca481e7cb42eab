// The kernel rewrites between the schedule and the choice of actions (passes/opt.h
// rewrite_kernels): on CPUs panel packing (passes/pack.h), merged axes (passes/merge_axes.h),
// channel vectors (passes/channel_vectors.h) and phase copies (passes/deinterleave.h), and on every target weight-only
// integer kernels folded (passes/fold_weights.h). Which kernels they rewrite, and that the rewritten kernels (with and
// without the heuristic's actions) compute what the interpreter does. A profile with a 1 KiB L2 makes small matmuls
// "large" so the reference backend can run them.
#include <gtest/gtest.h>

#include "passes/fold_weights.h"
#include "passes/kernel_eval.h"
#include "passes/opt.h"
#include "passes/pack.h"
#include "passes/precision.h"
#include "ran_cleanly.h"
#include "test_util.h"

namespace tgc {
namespace {

TargetProfile tiny_l2() {
  TargetProfile t = cpu_profile([](const std::string& f) { return f == "avx2"; }, false);  // 8 lanes: panels of 16
  t.l2_bytes = 1024;
  return t;
}

class KernelRewrites : public ::testing::Test, protected test::Env {
 protected:
  // Schedules `out`, packs, runs every kernel (after the heuristic's actions when `opts`) and
  // compares with the interpreter. Returns the packed schedule.
  Schedule check(const Tensor& out, bool opts, const TargetProfile& t = tiny_l2()) {
    HostTensor want = run({out})[0];
    Schedule s = schedule(g, {out.uop()});
    rewrite_kernels(g, s, t);
    KernelEvaluator m(g, feeds);
    for (const Kernel& plain : s.kernels) {
      Kernel k = opts ? apply_opts(g, plain, heuristic_opts(g, plain, t), t) : plain;
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

TEST_F(KernelRewrites, InputOperandGetsAPackKernel) {
  Schedule s = check(input({24, 40}).matmul(input({40, 48})), false);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(g.buffer(s.kernels[0].output).shape, (Shape{3, 40, 16}));  // 48 columns in panels of 16
  EXPECT_EQ(packed_reads(s), 1);
  // The panel axis is outermost: a work item keeps its panel while it passes the rows.
  EXPECT_EQ(range_extent(s.kernels[1].global_ranges.front()), 3);
}

TEST_F(KernelRewrites, PackedKernelKeepsResultsUnderHeuristicOpts) {
  Schedule s = check((input({16, 32}).matmul(input({32, 64})) + 1.0f).relu(), true);
  EXPECT_EQ(packed_reads(s), 1);
}

TEST_F(KernelRewrites, WeightIsPackedAtCompileTime) {
  Schedule s = check(input({9, 20}).matmul(weight({20, 32})), false);
  ASSERT_EQ(s.kernels.size(), 1u);  // no copy kernel
  EXPECT_EQ(packed_reads(s), 1);
}

TEST_F(KernelRewrites, BatchedOperandPacksEveryMatrix) {
  Schedule s = check(input({2, 12, 24}).matmul(input({2, 24, 32})), true);
  EXPECT_EQ(packed_reads(s), 1);
}

TEST_F(KernelRewrites, LeavesAloneWhatWouldNotPay) {
  EXPECT_EQ(packed_reads(check(input({4, 40}).matmul(input({40, 48})), false)), 0);   // B read once: one tile of rows
  EXPECT_EQ(packed_reads(check(input({24, 40}).matmul(input({40, 20})), false)), 0);  // no whole panel of columns
  EXPECT_EQ(packed_reads(check(input({4, 40}).matmul(input({48, 40}).permute({1, 0})), false)),
            0);  // B^T read for 4 rows only: no transposed copy
  Schedule s = schedule(g, {input({24, 8}).matmul(input({8, 16})).uop()});
  TargetProfile big = tiny_l2();
  big.l2_bytes = 1 << 20;  // B's 512 bytes fit in L2
  pack_panels(g, s, big);
  EXPECT_EQ(packed_reads(s), 0);
}

// A B^T (attention's scores): B's rows run along the reduce, so no load is contiguous along the
// output's columns. B is copied transposed (split by phase with its row length as the stride),
// and the product reads the copy along its columns; 60 columns are padded to 64 (whole vectors of 8).
TEST_F(KernelRewrites, TransposedOperandIsCopiedInColumns) {
  TargetProfile t = tiny_l2();
  t.l2_bytes = 1 << 20;  // (no panels)
  for (int64_t cols : {48, 60}) {
    SCOPED_TRACE(cols);
    Schedule s = check(input({24, 40}).matmul(input({cols, 40}).permute({1, 0})), true, t);
    ASSERT_EQ(s.kernels.size(), 2u);
    const BufferInfo& copy = g.buffer(s.kernels[0].output);
    EXPECT_TRUE(copy.name.ends_with("_phases"));
    EXPECT_EQ(copy.shape, (Shape{40, cols == 60 ? 64 : cols}));
    EXPECT_EQ(range_extent(s.kernels[1].global_ranges.back()), cols == 60 ? 64 : cols);
  }
}

// X W^T with W a weight (a Linear as Gemm with transB): W is transposed at compile time instead.
TEST_F(KernelRewrites, TransposedWeightIsTransposedAtCompileTime) {
  TargetProfile t = tiny_l2();
  t.l2_bytes = 1 << 20;
  Schedule s = check(input({24, 40}).matmul(weight({48, 40}).permute({1, 0})), true, t);
  ASSERT_EQ(s.kernels.size(), 1u);
  const Kernel& k = s.kernels[0];
  bool transposed = false;
  for (int64_t b : k.inputs) transposed = transposed || g.buffer(b).name.ends_with("_by_channel");
  EXPECT_TRUE(transposed);
}

// A 1x1 convolution's rows and columns are one run in memory: 12 x 12 columns take vectors of
// 4, the merged 144 take two vectors of 8.
TEST_F(KernelRewrites, OneByOneConvMergesRowsAndColumns) {
  TargetProfile t = tiny_l2();
  t.l2_bytes = 1 << 20;  // (no packing)
  Schedule s = check(
      input({1, 6, 12, 12}).conv(weight({8, 6, 1, 1}), weight({8}), {1, 1}, {0, 0, 0, 0}, {1, 1}, 1).relu(), true, t);
  ASSERT_EQ(s.kernels.size(), 1u);
  ASSERT_EQ(s.kernels.back().global_ranges.size(), 2u) << describe(g, s);
  EXPECT_EQ(range_extent(s.kernels.back().global_ranges[1]), 144);
}

// A global average pool's rows and columns are one run too: its reduce over 14 x 14 becomes one
// over 196; a reduce whose rows are not one run with its columns (a slice's) keeps both.
TEST_F(KernelRewrites, PoolsReduceRowsAndColumnsAsOne) {
  auto reduce_ranges = [](const Schedule& s) {
    for (const UOp* u : toposort({s.kernels.back().ast}))
      if (u->op == Op::KReduce) return u->src.size() - 1;
    return size_t(0);
  };
  Schedule pool = check(input({1, 6, 14, 14}).mean({2, 3}), true);
  EXPECT_EQ(reduce_ranges(pool), 1u) << describe(g, pool);
  Schedule strided = check(input({6, 14, 16}).shrink({{0, 6}, {0, 14}, {0, 14}}).sum({1, 2}), true);
  EXPECT_EQ(reduce_ranges(strided), 2u) << "rows 16 apart, 14 columns: " << describe(g, strided);
}

TEST_F(KernelRewrites, PaddedConvKeepsItsAxes) {
  // Rows of the padded input are 14 apart, the output's 12: not one run.
  Schedule s =
      check(input({1, 6, 12, 12}).conv(weight({8, 6, 3, 3}), std::nullopt, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1), true);
  EXPECT_EQ(s.kernels.back().global_ranges.size(), 3u);
}

// Rows of 2 columns (a quarter of AVX2's 8 lanes): the weight is transposed at compile time so
// the 16 output channels are contiguous, and the heuristic's lanes run along them, two vectors.
TEST_F(KernelRewrites, NarrowRowsGetChannelVectors) {
  TargetProfile t = tiny_l2();
  t.l2_bytes = 1 << 20;
  Tensor out = input({1, 6, 8, 4}).conv(weight({16, 6, 3, 3}), weight({16}), {1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
  Schedule s = check(out, true, t);
  ASSERT_EQ(s.kernels.size(), 1u);
  const Kernel& k = s.kernels[0];
  EXPECT_TRUE(std::any_of(k.inputs.begin(), k.inputs.end(),
                          [&](int64_t b) { return g.buffer(b).name.ends_with("_by_channel"); }));
  std::vector<Opt> opts = heuristic_opts(g, k, t);
  ASSERT_FALSE(opts.empty());
  EXPECT_EQ(opts[0], (Opt{OptOp::Upcast, 0, 16})) << opts_str(opts);
}

// Rows of 56 columns fill AVX-512's vectors of 16 only in part (two of 8): a dense 3x3 conv's
// lanes run along its 64 output channels instead, a tile of channel vectors x columns that fills
// half the vector registers with accumulators (passes/channel_tile.h), and the results match.
// A depthwise conv reads its input along the channels too: its lanes stay on the rows. So do
// rows of 17 (a prime) of 3 rows, where no tile of channels and positions has enough
// accumulators. A 7x7 map of 232 channels (padded to 240: one vector of channels at a time) takes
// a tile of 7 positions, one chain short of half the registers (ShuffleNetV2's late 1x1 convs).
TEST_F(KernelRewrites, PartialRowVectorsGiveDenseConvsChannelTiles) {
  TargetProfile t = cpu_profile([](const std::string& f) { return f == "avx2" || f == "avx512f"; }, false);
  {
    Schedule s =
        check(input({1, 8, 4, 56}).conv(weight({64, 8, 3, 3}), weight({64}), {1, 1}, {1, 1, 1, 1}, {1, 1}, 1), true, t);
    const Kernel& k = s.kernels.back();
    std::vector<Opt> opts = heuristic_opts(g, k, t);
    ASSERT_EQ(opts.size(), 2u) << opts_str(opts);
    EXPECT_EQ(opts[0], (Opt{OptOp::Upcast, 0, 64})) << opts_str(opts);  // 4 vectors of channels
    EXPECT_EQ(opts[1], (Opt{OptOp::Upcast, 2, 4})) << opts_str(opts);   // x 4 columns: 16 zmm
  }
  {
    Schedule s = check(
        input({1, 32, 6, 56}).conv(weight({32, 1, 3, 3}), std::nullopt, {1, 1}, {1, 1, 1, 1}, {1, 1}, 32), true, t);
    std::vector<Opt> opts = heuristic_opts(g, s.kernels.back(), t);
    ASSERT_FALSE(opts.empty());
    EXPECT_EQ(opts[0].axis, 2) << opts_str(opts);
  }
  {
    Schedule s =
        check(input({1, 8, 3, 17}).conv(weight({32, 8, 3, 3}), std::nullopt, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1), true, t);
    std::vector<Opt> opts = heuristic_opts(g, s.kernels.back(), t);
    ASSERT_FALSE(opts.empty());
    EXPECT_EQ(opts[0], (Opt{OptOp::Upcast, 2, 17})) << opts_str(opts);
  }
  {
    Schedule s = check(
        input({1, 48, 7, 7}).conv(weight({232, 48, 1, 1}), weight({232}), {1, 1}, {0, 0, 0, 0}, {1, 1}, 1), true, t);
    std::vector<Opt> opts = heuristic_opts(g, s.kernels.back(), t);
    ASSERT_EQ(opts.size(), 2u) << opts_str(opts);
    EXPECT_EQ(opts[0], (Opt{OptOp::Upcast, 0, 16})) << opts_str(opts);
    EXPECT_EQ(opts[1].amount, 7) << opts_str(opts);
  }
}

// A conv with a DepthToSpace fused after it reads its input at column x / 3 and its weights at
// channel x % 3 of the output column x: its output axes are split by 3 first (passes/output_phases.h),
// and the split kernel gets vector lanes; the results match.
TEST_F(KernelRewrites, PixelShuffleAfterAConvIsSplitByPhase) {
  TargetProfile t = cpu_profile([](const std::string& f) { return f == "avx2" || f == "avx512f"; }, false);
  Tensor conv = input({1, 8, 6, 32}).conv(weight({9, 8, 3, 3}), weight({9}), {1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  Tensor out = conv.reshape({1, 1, 3, 3, 6, 32}).permute({0, 1, 4, 2, 5, 3}).reshape({1, 1, 18, 96});
  Schedule s = check(out, true, t);
  std::vector<Opt> opts = heuristic_opts(g, s.kernels.back(), t);
  ASSERT_GE(opts.size(), 3u) << opts_str(opts);
  EXPECT_EQ(opts[0], (Opt{OptOp::Upcast, 0, 3})) << opts_str(opts);
  EXPECT_EQ(opts[1], (Opt{OptOp::Upcast, 1, 3})) << opts_str(opts);
}

// A 1x1 conv tiles its output channels alone: on AVX-512 (32 registers) a tile of 4 channels x 2
// vectors fills half the accumulator budget, so it grows to 8 channels; AVX2's 16 registers are
// full at 4.
TEST_F(KernelRewrites, OneTileAxisGrowsToFillTheAccumulatorBudget) {
  TargetProfile avx512 = cpu_profile([](const std::string& f) { return f == "avx2" || f == "avx512f"; }, false);
  TargetProfile avx2 = cpu_profile([](const std::string& f) { return f == "avx2"; }, false);
  for (const TargetProfile& t : {avx512, avx2}) {
    Schedule s = check(
        input({1, 32, 1, 128}).conv(weight({16, 32, 1, 1}), std::nullopt, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1), true, t);
    ASSERT_EQ(s.kernels.size(), 1u) << describe(g, s);
    std::vector<Opt> opts = heuristic_opts(g, s.kernels[0], t);
    int64_t lanes = 2 * t.vector_lanes, channels = t.vector_registers == 32 ? 8 : 4;
    EXPECT_EQ(opts, (std::vector<Opt>{{OptOp::Upcast, 1, lanes}, {OptOp::Upcast, 0, channels}})) << opts_str(opts);
  }
}

// A stride-2 conv reads its input two elements apart along the output's rows: it reads a copy
// split by phase instead, contiguous along them, and the heuristic gives it vector lanes; the
// copy gets one copy of its body per phase (an interleaved load, contiguous stores). Depthwise
// ones too.
TEST_F(KernelRewrites, StridedConvReadsItsInputByPhase) {
  TargetProfile t = tiny_l2();
  t.l2_bytes = 1 << 20;
  Schedule s =
      check(input({1, 3, 18, 34}).conv(weight({8, 3, 3, 3}), weight({8}), {2, 2}, {0, 0, 0, 0}, {1, 1}, 1), true, t);
  ASSERT_EQ(s.kernels.size(), 2u) << describe(g, s);
  EXPECT_EQ(g.buffer(s.kernels[0].output).shape, (Shape{2, 3 * 18 * 17}));
  const Kernel& conv = s.kernels[1];
  EXPECT_TRUE(std::any_of(conv.inputs.begin(), conv.inputs.end(),
                          [&](int64_t b) { return g.buffer(b).name.ends_with("_phases"); }));
  std::vector<Opt> opts = heuristic_opts(g, conv, t);
  ASSERT_FALSE(opts.empty());
  EXPECT_EQ(opts[0].op, OptOp::Upcast);
  EXPECT_EQ(opts[0].axis, int(conv.global_ranges.size()) - 1) << opts_str(opts);
  EXPECT_EQ(heuristic_opts(g, s.kernels[0], t), (std::vector<Opt>{{OptOp::Upcast, 0, 2}}));

  Schedule dw =
      check(input({1, 8, 18, 34}).conv(weight({8, 1, 3, 3}), std::nullopt, {2, 2}, {0, 0, 0, 0}, {1, 1}, 8), true, t);
  EXPECT_EQ(dw.kernels.size(), 2u) << describe(g, dw);
}

// An elementwise chain of special functions (tanh after tanh) is latency-bound: two vectors per
// iteration; one sigmoid keeps the loop vectorizer's choice. Either way the values are the same.
TEST_F(KernelRewrites, ChainsOfSpecialFunctionsRunSeveralVectorsPerIteration) {
  TargetProfile t = tiny_l2();  // 8 lanes, 16 registers: 4 chains of one vector each
  Schedule chain = check(((input({4, 64}) * 0.9 + 0.1).tanh() * 0.9 + 0.1).tanh(), true, t);
  ASSERT_EQ(chain.kernels.size(), 1u) << describe(g, chain);
  EXPECT_EQ(heuristic_opts(g, chain.kernels[0], t), (std::vector<Opt>{{OptOp::Upcast, 1, 32}}));
  Schedule rows = check(((input({4, 48}) * 0.9 + 0.1).tanh() * 0.9 + 0.1).tanh(), true, t);  // 48: two chains divide it
  EXPECT_EQ(heuristic_opts(g, rows.kernels[0], t), (std::vector<Opt>{{OptOp::Upcast, 1, 16}}));
  Schedule one = check(input({4, 64}).sigmoid() * 2.0, true, t);
  ASSERT_EQ(one.kernels.size(), 1u) << describe(g, one);
  EXPECT_TRUE(heuristic_opts(g, one.kernels[0], t).empty());
}

// A weight-only integer kernel runs at compile time and its buffer becomes a weight; the same
// computation in floats stays a kernel (the reference backend rounds otherwise).
TEST_F(KernelRewrites, WeightOnlyIntegerKernelsAreFolded) {
  Tensor w = int_weight({4, 8}, std::vector<float>(32, 3), DType::I32);
  Tensor x = input({5, 4});
  // Reduces over the weights' reduces: each realized in a kernel of its own.
  Tensor sums = (w * 5.0).sum({1}, true), fsums = weight({4, 8}).sum({1}, true);
  Tensor out = (x * 10.0).cast(DType::I32).matmul(sums).cast(DType::F32) + x.matmul(fsums);
  HostTensor want = run({out})[0];
  Schedule s = schedule(g, {out.uop()});
  size_t before = s.kernels.size();
  fold_weight_kernels(g, s);
  EXPECT_EQ(s.kernels.size(), before - 1) << describe(g, s);
  KernelEvaluator m(g, feeds);
  for (const Kernel& k : s.kernels) EXPECT_TRUE(test::ran_cleanly(m.run(k)));
  EXPECT_TRUE(test::all_close(m.result(s.outputs[0]), test::values(want), {1e-5, 1e-6}));
}

// --precision=fp16: weights and intermediates narrow to f16, the input, the output and a weight
// past f16's range stay f32, and the kernels compute what the interpreter does to f16's precision.
TEST_F(KernelRewrites, HalfStorageNarrowsWeightsAndIntermediates) {
  Tensor x = input({16, 32});
  Tensor w = weight({32, 8}), big = weight_data({8}, std::vector<float>(8, 1e5f));
  Tensor out = (x.matmul(w).exp() + 1.0).sum({1}, true) + (x.sum({1}, true) * big.sum({0}, true));
  HostTensor want = run({out})[0];
  Schedule s = schedule(g, {out.uop()});
  ASSERT_GE(s.kernels.size(), 2u);
  store_in_half(g, s, DType::F16);
  EXPECT_EQ(g.buffer(w.uop()->ival()).dtype, DType::F16);
  EXPECT_EQ(g.buffer(w.uop()->ival()).data->size(), 32u * 8 * 2);
  EXPECT_EQ(g.buffer(big.uop()->ival()).dtype, DType::F32);
  EXPECT_EQ(g.buffer(x.uop()->ival()).dtype, DType::F32);
  EXPECT_EQ(g.buffer(s.outputs[0]).dtype, DType::F32);
  int narrowed = 0;
  for (const Kernel& k : s.kernels) narrowed += k.output != s.outputs[0] && g.buffer(k.output).dtype == DType::F16;
  EXPECT_EQ(narrowed, int(s.kernels.size()) - 1) << describe(g, s);
  KernelEvaluator m(g, feeds);
  for (const Kernel& k : s.kernels) EXPECT_TRUE(test::ran_cleanly(m.run(k)));
  EXPECT_TRUE(test::all_close(m.result(s.outputs[0]), test::values(want), {2e-3, 0}));
  EXPECT_FALSE(test::all_close(m.result(s.outputs[0]), test::values(want), {1e-6, 0}));  // it did round
}

// GPU targets with f16 arithmetic: arithmetic between f16 values runs in f16 (a product inside a
// sum too), while sums accumulate in f32 and exp2, squares and f32 operands stay f32.
TEST_F(KernelRewrites, HalfMathNarrowsArithmeticNotSumsOrFunctions) {
  Tensor x = input({16, 32});
  Tensor w1 = weight({32, 8}), w2 = weight({8, 4}), b = weight({4});
  Tensor y = (x.matmul(w1).exp() * 0.5).matmul(w2);  // two kernels: the second reads an f16 intermediate
  Tensor out = ((y + b).relu() + x.sum({1}, true) + (y * y).sum({1}, true)).sum({1}, true);
  HostTensor want = run({out})[0];
  Schedule s = schedule(g, {out.uop()});
  store_in_half(g, s, DType::F16);
  compute_in_half(g, s);
  int half_ops = 0, squares = 0;
  for (const Kernel& k : s.kernels)
    for (const UOp* u : toposort({k.ast})) {
      if (u->op == Op::KReduce || u->op == Op::Exp2) EXPECT_EQ(u->dtype, DType::F32) << describe(g, s);
      half_ops += u->dtype == DType::F16 && (u->op == Op::Mul || u->op == Op::Add || u->op == Op::Max);
      if (u->op == Op::Mul && u->src[0] == u->src[1]) {
        EXPECT_EQ(u->dtype, DType::F32) << "a square: " << describe(g, s);
        ++squares;
      }
    }
  EXPECT_GE(half_ops, 1) << describe(g, s);
  EXPECT_EQ(squares, 1) << describe(g, s);
  KernelEvaluator m(g, feeds);
  for (const Kernel& k : s.kernels) EXPECT_TRUE(test::ran_cleanly(m.run(k)));
  EXPECT_TRUE(test::all_close(m.result(s.outputs[0]), test::values(want), {1e-2, 1e-2}));
}

// On CPUs, an f16 weight or intermediate read for many output positions is widened once: the
// weight gets an f32 twin with the same values, the intermediate becomes an f32 buffer (no longer
// rounded to f16), so the results change only by the roundings left out.
TEST_F(KernelRewrites, ReusedHalvesAreWidenedWithoutChangingResults) {
  auto half_weight = [&](const Shape& shape) {
    return Tensor::weight(g, "h" + std::to_string(g.num_buffers()),
                          test::host(shape, test::random_floats(rng, numel(shape), -1, 1), DType::F16));
  };
  Tensor w1 = half_weight({32, 8}), w2 = half_weight({8, 24}), w3 = half_weight({16, 8});
  // w1 and w2 are read for each of 16 rows, w3 once per output, y for each of 24 columns.
  Tensor y = input({16, 32}).cast(DType::F16).matmul(w1) * w3;
  Tensor out = (y.matmul(w2) + 1.0).cast(DType::F32);
  Schedule s = schedule(g, {out.uop()});
  ASSERT_EQ(s.kernels.size(), 2u) << describe(g, s);
  int64_t inter = s.kernels[0].output;
  ASSERT_EQ(g.buffer(inter).dtype, DType::F16);
  std::vector<double> before;
  {
    KernelEvaluator m(g, feeds);
    for (const Kernel& k : s.kernels) EXPECT_TRUE(test::ran_cleanly(m.run(k)));
    before = m.result(s.outputs[0]);
  }
  size_t buffers = g.num_buffers();
  widen_reused_halves(g, s, tiny_l2());
  EXPECT_EQ(g.buffer(inter).dtype, DType::F32);
  ASSERT_EQ(g.num_buffers(), buffers + 2);  // twins of w1 and w2
  EXPECT_EQ(g.buffer(int64_t(buffers)).name, g.buffer(w1.uop()->ival()).name + "_f32");
  EXPECT_EQ(g.buffer(int64_t(buffers) + 1).name, g.buffer(w2.uop()->ival()).name + "_f32");
  const std::vector<int64_t>& in = s.kernels[0].inputs;
  EXPECT_EQ(std::count(in.begin(), in.end(), int64_t(buffers)), 1);
  EXPECT_EQ(std::count(in.begin(), in.end(), w1.uop()->ival()), 0);
  EXPECT_EQ(std::count(in.begin(), in.end(), w3.uop()->ival()), 1);
  KernelEvaluator m(g, feeds);
  for (const Kernel& k : s.kernels) EXPECT_TRUE(test::ran_cleanly(m.run(k)));
  std::vector<double> after = m.result(s.outputs[0]);
  EXPECT_TRUE(test::all_close(after, before, {2e-3, 2e-3}));
  EXPECT_NE(after, before);  // y is no longer rounded to f16
}

}  // namespace
}  // namespace tgc
