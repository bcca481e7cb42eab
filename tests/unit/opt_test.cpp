// Kernel optimizations: every action and every heuristic choice must leave what a kernel
// computes unchanged. Kernels are executed from their ASTs on the reference backend
// (passes/kernel_eval.h) after the actions, on shapes with odd and prime sizes, and compared with
// the reference interpreter. The lowering must accept every optimized kernel and expand its
// UPCAST ranges into the right number of copies.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "ir/error.h"
#include "padded_opts.h"
#include "passes/lower.h"
#include "passes/opt.h"
#include "ran_cleanly.h"
#include "test_util.h"

namespace tgc {
namespace {

using test::all_close;

TargetProfile avx512() {
  return cpu_profile([](const std::string& f) { return f == "avx512f" || f == "avx2"; }, false);
}
TargetProfile avx2() {
  return cpu_profile([](const std::string& f) { return f == "avx2"; }, false);
}
TargetProfile neon() {
  return cpu_profile([](const std::string&) { return false; }, true);
}

struct Case {
  const char* name;
  std::function<Tensor(test::Env&)> build;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"matmul_primes", [](test::Env& e) { return e.input({13, 29}).matmul(e.weight({29, 17})); }},
      {"matmul_64", [](test::Env& e) { return e.input({16, 64}).matmul(e.weight({64, 48})); }},
      {"matmul_197_rows", [](test::Env& e) { return e.input({197, 32}).matmul(e.weight({32, 64})); }},
      {"gemv_transposed", [](test::Env& e) { return e.input({1, 96}).matmul(e.weight({40, 96}).permute({1, 0})); }},
      {"batched_matmul", [](test::Env& e) { return e.input({3, 8, 12}).matmul(e.weight({3, 12, 32})); }},
      {"conv3x3_bias_relu",
       [](test::Env& e) {
         return e.input({1, 5, 11, 32})
             .conv(e.weight({8, 5, 3, 3}), e.weight({8}), {1, 1}, {1, 1, 1, 1}, {1, 1}, 1)
             .relu();
       }},
      {"conv_strided_grouped",
       [](test::Env& e) {
         return e.input({2, 4, 9, 7}).conv(e.weight({6, 2, 3, 3}), std::nullopt, {2, 1}, {1, 0, 0, 2}, {1, 2}, 2);
       }},
      {"depthwise5x5",
       [](test::Env& e) {
         return e.input({1, 6, 7, 48}).conv(e.weight({6, 1, 5, 5}), std::nullopt, {1, 1}, {2, 2, 2, 2}, {1, 1}, 6);
       }},
      {"depthwise3x3_28_columns",
       [](test::Env& e) {
         return e.input({1, 4, 5, 28}).conv(e.weight({4, 1, 3, 3}), e.weight({4}), {1, 1}, {1, 1, 1, 1}, {1, 1}, 4);
       }},
      {"sum_rows_prime", [](test::Env& e) { return e.input({31, 37}).sum({1}); }},
      {"max_columns", [](test::Env& e) { return e.input({23, 64}).max({0}); }},
      {"softmax", [](test::Env& e) { return e.input({7, 33}, -3, 3).softmax(-1); }},
      {"avg_pool",
       [](test::Env& e) { return e.input({1, 3, 17, 16}).avg_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, false, false); }},
      {"elementwise_broadcast", [](test::Env& e) { return (e.input({5, 1, 48}) * e.weight({7, 1}) + 1.5).tanh(); }},
  };
  return c;
}

class OptTest : public ::testing::TestWithParam<Case>, protected test::Env {
 protected:
  // Schedules the case, lets `pick` choose each kernel's actions, runs the optimized kernels and
  // compares with the interpreter. Returns how many kernels got at least one action.
  int check(const std::function<std::vector<Opt>(const Kernel&)>& pick, const TargetProfile& t,
            const std::string& what) {
    Tensor out = GetParam().build(*this);
    HostTensor want = run({out})[0];
    Schedule s = schedule(g, {out.uop()});
    KernelEvaluator m(g, feeds);
    int optimized = 0;
    for (const Kernel& plain : s.kernels) {
      std::vector<Opt> opts = pick(plain);
      Kernel k = apply_opts(g, plain, opts, t);
      optimized += !opts.empty();
      SCOPED_TRACE(what + " " + k.name + " " + opts_str(opts));
      int64_t copies = 1;
      for (const UOp* u : toposort({k.ast}))
        if (u->op == Op::Range && u->range().kind == RangeKind::Upcast &&
            !std::count(k.local_ranges.begin(), k.local_ranges.end(), u)) {
          bool in_reduce = false;
          for (const UOp* r : toposort({k.ast}))
            if (r->op == Op::KReduce) in_reduce = in_reduce || std::count(r->src.begin() + 1, r->src.end(), u);
          if (!in_reduce) copies *= u->src[0]->ival();
        }
      EXPECT_EQ(int64_t(expand_upcasts(g, k.ast).size()), copies);
      EXPECT_NO_THROW(lower(g, k, {.inner_loop = true}));
      ::testing::AssertionResult ok = test::ran_cleanly(m.run(k));
      EXPECT_TRUE(ok);
      if (!ok) return optimized;
    }
    EXPECT_TRUE(all_close(m.result(s.outputs[0]), test::values(want), {1e-5, 1e-6})) << what;
    return optimized;
  }
};

TEST_P(OptTest, HeuristicKeepsResults) {
  for (const TargetProfile& t : {avx512(), avx2(), neon(), opencl_profile()}) {
    check([&](const Kernel& k) { return heuristic_opts(g, k, t); }, t,
          t.gpu ? "opencl" : "cpu lanes=" + std::to_string(t.vector_lanes));
  }
}

// Random legal sequences of up to three actions per kernel (illegal draws are skipped), from the
// actions a target has: a GPU's work-groups, a CPU's reduce lanes.
TEST_P(OptTest, RandomActionsKeepResults) {
  TargetProfile gpu = opencl_profile();
  gpu.max_expand = 4096;
  const std::pair<TargetProfile, std::vector<std::vector<OptOp>>> targets[] = {
      {gpu,
       {{OptOp::Upcast, OptOp::Local, OptOp::Padto}, {OptOp::Unroll, OptOp::Group, OptOp::GroupTop, OptOp::Padto}}},
      {avx2(), {{OptOp::Upcast, OptOp::Padto, OptOp::Swap}, {OptOp::Unroll, OptOp::Lanes, OptOp::Padto}}},
  };
  for (const auto& [t, ops] : targets) {
    std::mt19937 pick_rng(42);
    int optimized = check(
        [&](const Kernel& plain) {
          std::vector<Opt> opts;
          for (int tries = 0; tries < 20 && opts.size() < 3; ++tries) {
            Kernel cur = apply_opts(g, plain, opts, t);
            std::vector<const UOp*> axes = kernel_axes(cur);
            if (axes.empty()) break;
            int axis = int(pick_rng() % axes.size());
            const std::vector<OptOp>& choices = ops[size_t(axis) < cur.global_ranges.size() ? 0 : 1];
            OptOp op = choices[pick_rng() % choices.size()];
            // Small factors, or the whole axis (the only choice for a prime size).
            int64_t amount =
                std::vector<int64_t>{2, 3, 4, 5, 7, 8, 16, axes[size_t(axis)]->src[0]->ival()}[pick_rng() % 8];
            if (op == OptOp::Swap) amount = int64_t(pick_rng() % cur.global_ranges.size());  // the other axis
            std::vector<Opt> next = opts;
            next.push_back({op, axis, amount});
            try {
              apply_opts(g, plain, next, t);
              opts = next;
            } catch (const Error&) {
            }
          }
          return opts;
        },
        t, t.gpu ? "random opencl" : "random cpu");
    EXPECT_GT(optimized, 0) << "no action was legal for any kernel";
  }
}

// Padded axes (tests/unit/padded_opts.h): the padding must neither be stored nor read out of bounds
// nor reach a reduce.
TEST_P(OptTest, PaddedAxesKeepResults) {
  for (const TargetProfile& t : {avx512(), opencl_profile()}) {
    int padded = check([&](const Kernel& plain) { return test::padded_split_opts(g, plain, t); }, t,
                       t.gpu ? "opencl padded" : "cpu padded");
    if (std::string(GetParam().name) == "matmul_primes") {
      EXPECT_GT(padded, 0) << "nothing was padded";
    }
  }
}

TEST_P(OptTest, IllegalActionsAreRejectedWithTheirName) {
  Tensor out = GetParam().build(*this);
  Schedule s = schedule(g, {out.uop()});
  const Kernel& k = s.kernels.back();
  int64_t n = kernel_axes(k).size();
  try {
    apply_opts(g, k, {{OptOp::Upcast, int(n), 2}}, avx512());
    FAIL() << "an axis past the last was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("UPCAST(" + std::to_string(n) + ",2)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(apply_opts(g, k, {{OptOp::Local, 0, 1}}, avx512()), Error) << "LOCAL on a CPU";
  int64_t size = kernel_axes(k)[0]->src[0]->ival();
  EXPECT_THROW(apply_opts(g, k, {{OptOp::Padto, 0, size}}, avx512()), Error) << "PADTO to a multiple already there";
  EXPECT_THROW(apply_opts(g, k, {{OptOp::Padto, 0, 2 * size + 1}}, avx512()), Error) << "PADTO doubling the axis";
}

INSTANTIATE_TEST_SUITE_P(Kernels, OptTest, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// ViT's 197 tokens: no tile of 2, 3, 4, 5 or 7 divides them, so the CPU heuristic pads them to
// 200 for a register tile of 4 rows; 49 positions (7 divides them) are not padded.
TEST(OptHeuristic, PadsAxesNoSmallTileDivides) {
  auto first_opts = [](int64_t rows) {
    test::Env e;
    Tensor out = e.input({rows, 256}).matmul(e.weight({256, 128}));
    Schedule s = schedule(e.g, {out.uop()});
    return heuristic_opts(e.g, s.kernels.back(), avx512());
  };
  auto has = [](const std::vector<Opt>& opts, Opt o) { return std::count(opts.begin(), opts.end(), o) > 0; };
  std::vector<Opt> tokens = first_opts(197);
  EXPECT_TRUE(has(tokens, {OptOp::Padto, 0, 4}) && has(tokens, {OptOp::Upcast, 0, 4})) << opts_str(tokens);
  std::vector<Opt> positions = first_opts(49);
  EXPECT_FALSE(std::any_of(positions.begin(), positions.end(), [](const Opt& o) { return o.op == OptOp::Padto; }))
      << opts_str(positions);
}

// Rows of 28 columns fill no whole AVX-512 vector: a depthwise conv (no channel tile: its input
// moves with every channel) pads them to 32 for two vectors; 24 columns (a third more) are not.
TEST(OptHeuristic, PadsNarrowRowsToWholeVectors) {
  auto row_opts = [](int64_t cols) {
    test::Env e;
    Tensor out = e.input({1, 8, 6, cols}).conv(e.weight({8, 1, 3, 3}), std::nullopt, {1, 1}, {1, 1, 1, 1}, {1, 1}, 8);
    Schedule s = schedule(e.g, {out.uop()});
    return heuristic_opts(e.g, s.kernels.back(), avx512());
  };
  auto pads = [](const std::vector<Opt>& opts) {
    return std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::Padto && o.amount == 16; });
  };
  EXPECT_TRUE(pads(row_opts(28))) << opts_str(row_opts(28));
  EXPECT_FALSE(pads(row_opts(24))) << opts_str(row_opts(24));
}

// A conv whose channel blocks pass over each work item's input window inside it: where that
// window does not fit in half of L2 (taps 18 rows apart: a tile of 4 rows reads 12 rows of each
// of 320 channels), the register tile takes output channels instead of rows.
TEST(OptHeuristic, WideInputWindowsTileChannelsNotRows) {
  auto conv_opts = [](int64_t dilation) {
    test::Env e;
    Tensor out = e.input({1, 320, 32, 32})
                     .conv(e.weight({64, 320, 3, 3}), std::nullopt, {1, 1}, {dilation, dilation, dilation, dilation},
                           {dilation, dilation}, 1);
    Schedule s = schedule(e.g, {out.uop()});
    return heuristic_opts(e.g, s.kernels.back(), avx512());
  };
  auto tile = [](const std::vector<Opt>& opts, int axis) {
    int64_t n = 1;
    for (const Opt& o : opts) n *= o.op == OptOp::Upcast && o.axis == axis ? o.amount : 1;
    return n;
  };
  std::vector<Opt> dilated = conv_opts(18), plain = conv_opts(1);
  EXPECT_EQ(tile(dilated, 1), 1) << opts_str(dilated);
  EXPECT_GE(tile(dilated, 0), 8) << opts_str(dilated);
  EXPECT_GT(tile(plain, 1), 1) << opts_str(plain);
}

TEST(OptText, RoundTrips) {
  std::vector<Opt> opts = {{OptOp::Padto, 1, 16}, {OptOp::Upcast, 1, 16},  {OptOp::Unroll, 2, 4},
                           {OptOp::Local, 0, 32}, {OptOp::GroupTop, 2, 8}, {OptOp::Lanes, 2, 64},
                           {OptOp::Swap, 0, 1}};
  EXPECT_EQ(opts_str(opts), "PADTO(1,16) UPCAST(1,16) UNROLL(2,4) LOCAL(0,32) GROUPTOP(2,8) LANES(2,64) SWAP(0,1)");
  EXPECT_EQ(parse_opts(opts_str(opts)), opts);
  EXPECT_THROW(parse_opts("UPCAST(1"), Error);
  EXPECT_THROW(parse_opts("WIDEN(1,2)"), Error);
}

}  // namespace
}  // namespace tgc
