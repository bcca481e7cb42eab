// The lowering (passes/lower): the loop program of small kernels -- which dims are work items,
// threads or loops, where accumulators, updates, group reduces and stores sit, the argument order
// -- and, run on the reference backend (passes/kernel_eval.h), that the program computes what the
// interpreter computes.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <utility>

#include "padded_opts.h"
#include "passes/lower.h"
#include "passes/opt.h"
#include "ran_cleanly.h"
#include "test_util.h"

namespace tgc {
namespace {

using test::all_close;

const char* kind_name(RangeKind k) {
  switch (k) {
    case RangeKind::Global: return "global";
    case RangeKind::Loop: return "loop";
    case RangeKind::Reduce: return "reduce";
    case RangeKind::Upcast: return "upcast";
    case RangeKind::Local: return "local";
    case RangeKind::Group: return "group";
  }
  return "?";
}

// A program's statements without its Lets, e.g. "for global { init for reduce { update } store }";
// a loop that ends at a run-time dim shows its VAR ("for reduce<T").
std::string outline(const std::vector<LStmt>& body) {
  std::string o;
  auto add = [&](const std::string& s) { o += (o.empty() ? "" : " ") + s; };
  for (const LStmt& s : body) {
    switch (s.kind) {
      case LStmt::Let: break;
      case LStmt::Loop: {
        std::string bound = s.u->src[0]->op == Op::Var ? "<" + s.u->src[0]->var().name : "";
        std::string inside = outline(s.body);
        add("for " + std::string(kind_name(s.u->range().kind)) + bound + " {" + (inside.empty() ? "" : " " + inside) +
            " }");
        break;
      }
      case LStmt::AccInit: add("init"); break;
      case LStmt::AccUpdate: add("update"); break;
      case LStmt::GroupReduce: add("group_reduce"); break;
      case LStmt::Store: add("store"); break;
    }
  }
  return o;
}

// The Lets of `body` (not those of the loops inside it).
std::vector<const UOp*> lets(const std::vector<LStmt>& body) {
  std::vector<const UOp*> out;
  for (const LStmt& s : body)
    if (s.kind == LStmt::Let) out.push_back(s.u);
  return out;
}

// The first loop statement of `body`.
const LStmt& first_loop(const std::vector<LStmt>& body) {
  for (const LStmt& s : body)
    if (s.kind == LStmt::Loop) return s;
  throw std::runtime_error("no loop in the body");
}

bool has_op(const std::vector<const UOp*>& us, Op op) {
  for (const UOp* u : us)
    if (u->op == op) return true;
  return false;
}

TargetProfile cpu() {
  return cpu_profile([](const std::string& f) { return f == "avx2"; }, false);
}
const LowerOptions kCpu{.inner_loop = true}, kGpu{.inner_loop = false};

class LowerTest : public ::testing::Test, protected test::Env {
 protected:
  // The one kernel computing `out`, with `opts` applied for `t`. Remembers what the interpreter
  // computes for `out` (before scheduling adds buffers to the graph).
  Kernel kernel_of(const Tensor& out, const std::vector<Opt>& opts = {}, const TargetProfile& t = cpu()) {
    want_ = test::values(run({out})[0]);
    Schedule s = schedule(g, {out.uop()});
    EXPECT_EQ(s.kernels.size(), 1u) << describe(g, s);
    return apply_opts(g, s.kernels.at(0), opts, t);
  }
  // The program's output, run on the reference backend, which must report no problem.
  std::vector<double> run_program(const LoopProgram& p) {
    KernelEvaluator m(g, feeds);
    EXPECT_TRUE(test::ran_cleanly(m.run(p))) << print_program(g, p);
    return m.result(p.args.at(0));
  }
  void expect_computes_output(const LoopProgram& p) {
    EXPECT_TRUE(all_close(run_program(p), want_, {1e-5, 1e-6})) << print_program(g, p);
  }
  // The GPU lowering with unrolled sums factored (LowerOptions::factor_sums).
  LoopProgram lower_factored(const Kernel& k) {
    LowerOptions gpu = kGpu;
    gpu.factor_sums = true;
    return lower(g, k, gpu);
  }
  // The nodes of the first loop's last update that `is` picks.
  static int update_nodes(const LoopProgram& p, const std::function<bool(const UOp*)>& is) {
    int n = 0;
    for (const UOp* u : toposort({first_loop(p.body).body.back().value})) n += is(u);
    return n;
  }
  std::vector<double> want_;
};

// Elementwise work: on CPUs the innermost dim runs as a loop inside each work item, and what does
// not depend on it (the broadcast weight's exp) is computed once per item, outside that loop.
TEST_F(LowerTest, ElementwiseRunsTheInnermostDimAsALoopOnCpus) {
  Tensor x = input({3, 5}), w = weight({3, 1});
  Kernel k = kernel_of(x * w.exp());
  LoopProgram p = lower(g, k, kCpu);
  EXPECT_EQ(p.name, k.name);
  EXPECT_EQ(p.globals, k.global_ranges);
  ASSERT_EQ(p.globals.size(), 2u);
  EXPECT_EQ(p.inner, p.globals[1]);
  EXPECT_TRUE(p.locals.empty());
  EXPECT_EQ(p.args, (std::vector<int64_t>{k.output, x.uop()->ival(), w.uop()->ival()}));
  EXPECT_EQ(outline(p.body), "for global { store }");
  EXPECT_EQ(p.body.back().u, p.inner);
  EXPECT_TRUE(has_op(lets(p.body), Op::Exp2)) << "the exp is not hoisted out of the inner loop\n"
                                              << print_program(g, p);
  EXPECT_FALSE(has_op(lets(first_loop(p.body).body), Op::Exp2)) << print_program(g, p);
  EXPECT_TRUE(has_op(lets(first_loop(p.body).body), Op::Load)) << "x is read per element\n" << print_program(g, p);
  expect_computes_output(p);
}

TEST_F(LowerTest, ElementwiseOnGpusKeepsEveryDimAWorkItem) {
  Tensor x = input({3, 5}), w = weight({3, 1});
  Kernel k = kernel_of(x * w.exp());
  LoopProgram p = lower(g, k, kGpu);
  EXPECT_EQ(p.globals, k.global_ranges);
  EXPECT_EQ(p.inner, nullptr);
  EXPECT_EQ(outline(p.body), "store");
  expect_computes_output(p);
}

TEST_F(LowerTest, ReduceIsAnAccumulatorItsLoopAndAStore) {
  Tensor x = input({4, 6});
  Kernel k = kernel_of(x.sum({1}));
  LoopProgram p = lower(g, k, kCpu);
  EXPECT_EQ(p.args, (std::vector<int64_t>{k.output, x.uop()->ival()}));
  EXPECT_EQ(outline(p.body), "for global { init for reduce { update } store }");
  const std::vector<LStmt>& item = first_loop(p.body).body;
  EXPECT_EQ(item[0].u, item.back().u->src[2]) << "the accumulator is not the reduce the store writes";
  expect_computes_output(p);
}

// A register tile (UPCAST) is two accumulators updated side by side in one reduce loop and two
// neighbouring stores; the unrolled part of the reduce (UNROLL) is folded into each update.
TEST_F(LowerTest, MatmulTileSharesOneReduceLoop) {
  Tensor x = input({4, 8}), w = weight({8, 6});
  Kernel k = kernel_of(x.matmul(w), {{OptOp::Upcast, 1, 2}, {OptOp::Unroll, 2, 4}});
  LoopProgram p = lower(g, k, kCpu);
  EXPECT_EQ(p.args, (std::vector<int64_t>{k.output, x.uop()->ival(), w.uop()->ival()}));
  EXPECT_EQ(outline(p.body), "for global { init init for reduce { update update } store store }");
  EXPECT_TRUE(p.lanes_expanded);
  const LStmt& reduce = first_loop(first_loop(p.body).body);
  EXPECT_EQ(reduce.u->src[0]->ival(), 2) << "the reduce loop runs 8 / 4 times";
  for (const LStmt& s : reduce.body) {
    if (s.kind != LStmt::AccUpdate) continue;
    int loads_of_x = 0;
    for (const UOp* u : toposort({s.value})) loads_of_x += u->op == Op::Load && u->src[0]->ival() == x.uop()->ival();
    EXPECT_EQ(loads_of_x, 4) << "one load of x per unrolled copy\n" << print_program(g, p);
  }
  expect_computes_output(p);
}

// GPUs: an unrolled sum whose terms share a factor (a quantized block's scale) multiplies by it
// once: x0*(d*w0) + ... + x3*(d*w3) -> d*(x0*w0 + ... + x3*w3). CPUs keep each product.
TEST_F(LowerTest, UnrolledSumTakesTheSharedFactorOutOnGpus) {
  Tensor x = input({1, 8}), w = weight({3, 8}), d = weight({3, 2, 1});
  Tensor scaled = d.expand({3, 2, 4}).reshape({3, 8}) * w;  // a scale per block of 4
  Kernel k = kernel_of((x * scaled).sum({1}), {{OptOp::Unroll, 1, 4}});
  auto scale_product = [&](const UOp* u) {
    return u->op == Op::Mul && std::any_of(u->src.begin(), u->src.end(), [&](const UOp* s) {
             return s->op == Op::Load && s->src[0]->ival() == d.uop()->ival();
           });
  };
  LoopProgram factored = lower_factored(k), plain = lower(g, k, kGpu);
  EXPECT_EQ(update_nodes(factored, scale_product), 1) << print_program(g, factored);
  EXPECT_EQ(update_nodes(plain, scale_product), 4) << print_program(g, plain);
  expect_computes_output(factored);
}

// GPUs: an offset that every term's small integer factor shares (q4_0's nibble - 8) comes out of
// the unrolled sum: x0*f32(q0 - 8) + ... -> (x0*f32(q0) + ...) + -8*(x0 + ...), no integer add
// per term.
TEST_F(LowerTest, UnrolledSumTakesTheSharedOffsetOutOnGpus) {
  std::vector<float> bytes(24);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = float(i * 7 % 16);
  Tensor x = input({1, 8}), w = Tensor::weight(g, "w", test::host({3, 8}, bytes, DType::U8));
  Tensor q = (w.cast(DType::I32) - 8).cast(DType::F32);
  Kernel k = kernel_of((x * q).sum({1}), {{OptOp::Unroll, 1, 4}});
  auto int_add = [](const UOp* u) { return u->op == Op::Add && u->dtype == DType::I32; };
  LoopProgram factored = lower_factored(k), plain = lower(g, k, kGpu);
  EXPECT_EQ(update_nodes(factored, int_add), 0) << print_program(g, factored);
  EXPECT_EQ(update_nodes(plain, int_add), 4) << print_program(g, plain);
  expect_computes_output(factored);
}

// GPUs: LOCAL and GROUP ranges are thread ids. Each thread accumulates its share of the reduce,
// the shares of one row meet in the GroupReduce (not those of the row the LOCAL thread holds),
// and one thread stores.
TEST_F(LowerTest, GroupReduceCombinesTheWorkGroupBeforeTheStore) {
  Tensor x = input({6, 32});
  Kernel k = kernel_of(x.sum({1}), {{OptOp::Local, 0, 2}, {OptOp::Group, 1, 8}}, opencl_profile());
  LoopProgram p = lower(g, k, kGpu);
  ASSERT_EQ(p.locals.size(), 2u);
  EXPECT_EQ(p.locals[0]->range().kind, RangeKind::Local);
  EXPECT_EQ(p.locals[1]->range().kind, RangeKind::Group);
  EXPECT_EQ(p.globals.size(), 1u);
  EXPECT_EQ(p.inner, nullptr);
  EXPECT_EQ(outline(p.body), "init for reduce { update } group_reduce store");
  expect_computes_output(p);
}

// PADTO rounds 7 rows up to 8 and UPCAST makes 4 copies: the copies that can land on the padding
// row are gated, and nothing is stored there.
TEST_F(LowerTest, PaddedAxisGatesTheStores) {
  Tensor x = input({7, 5});
  Kernel k = kernel_of(x * 2.0, {{OptOp::Padto, 0, 8}, {OptOp::Upcast, 0, 4}});
  LoopProgram p = lower(g, k, kCpu);
  EXPECT_EQ(outline(p.body), "for global { store store store store }");
  int gated = 0;
  for (const LStmt& s : first_loop(p.body).body)
    if (s.kind == LStmt::Store) {
      ASSERT_EQ(s.u->src.size(), 4u) << "a store of a padded axis without its gate";
      gated += !s.u->src[3]->is_const();
    }
  EXPECT_GT(gated, 0) << print_program(g, p);
  expect_computes_output(p);
}

TEST_F(LowerTest, PaddedReduceAddsNothingPastTheEnd) {
  Tensor x = input({3, 7});
  Kernel k = kernel_of(x.sum({1}), {{OptOp::Padto, 1, 8}, {OptOp::Unroll, 1, 4}});
  LoopProgram p = lower(g, k, kCpu);
  EXPECT_EQ(outline(p.body), "for global { init for reduce { update } store }");
  expect_computes_output(p);
}

// CPU streams: a laned matrix-vector product walks each weight row and the vector 64 lanes per
// iteration, one stream each from its lowest lane; a column sum moves a row (64 bytes) per
// iteration but reads one element of it, which is no stream.
TEST_F(LowerTest, LanedReduceWalksItsRowsAsStreams) {
  const LowerOptions streams{.inner_loop = true, .streams = true};
  Tensor x = input({1, 256}), w = weight({40, 256});
  Tensor xw = x.matmul(w.permute({1, 0}));
  Kernel plain = kernel_of(xw);
  Kernel k = apply_opts(g, plain, {{OptOp::Lanes, int(plain.global_ranges.size()), 64}}, cpu());
  LoopProgram p = lower(g, k, streams);
  const LStmt& reduce = first_loop(first_loop(p.body).body);
  ASSERT_EQ(reduce.streams.size(), 2u) << print_program(g, p);
  const LStmt& lane0 =
      *std::find_if(reduce.body.begin(), reduce.body.end(), [](const LStmt& s) { return s.kind == LStmt::AccUpdate; });
  for (const LStmt::Stream& st : reduce.streams) {
    EXPECT_EQ(st.stride, 64 * 4);
    for (const UOp* u : toposort({lane0.value}))  // lane 0's loads start the streams
      if (u->op == Op::Load && u->src[0]->ival() == st.buffer) EXPECT_EQ(st.index, u->src[1]) << print_program(g, p);
  }
  EXPECT_TRUE(first_loop(first_loop(lower(g, k, kCpu).body).body).streams.empty())
      << "streams recorded without being asked for";

  Tensor y = input({32, 16});
  LoopProgram column = lower(g, kernel_of(y.sum({0})), streams);
  EXPECT_TRUE(first_loop(first_loop(column.body).body).streams.empty()) << print_program(g, column);
  expect_computes_output(column);
}

// Real kernels with the heuristic's actions (register tiles on CPUs, work-groups on GPUs) and with
// every axis padded and split (tests/unit/padded_opts.h: GROUPTOP reduces on GPUs, softmax's two among
// them): each lowered program runs cleanly and the output is what the interpreter computes.
TEST(LowerOptimized, ProgramsComputeWhatTheInterpreterComputes) {
  const std::vector<std::pair<const char*, std::function<Tensor(test::Env&)>>> cases = {
      {"matmul_primes", [](test::Env& e) { return e.input({13, 29}).matmul(e.weight({29, 17})); }},
      {"conv3x3_bias_relu",
       [](test::Env& e) {
         return e.input({1, 3, 9, 16})
             .conv(e.weight({8, 3, 3, 3}), e.weight({8}), {1, 1}, {1, 1, 1, 1}, {1, 1}, 1)
             .relu();
       }},
      {"softmax", [](test::Env& e) { return e.input({7, 33}, -3, 3).softmax(-1); }},
  };
  using Pick = std::vector<Opt> (*)(Graph&, const Kernel&, const TargetProfile&);
  for (const auto& [name, build] : cases)
    for (const auto& [t, options] : {std::pair{cpu(), kCpu}, std::pair{opencl_profile(), kGpu}})
      for (Pick pick : {Pick([](Graph& g, const Kernel& k, const TargetProfile& t) { return heuristic_opts(g, k, t); }),
                        Pick(test::padded_split_opts)}) {
        test::Env e;
        Tensor out = build(e);
        std::vector<double> want = e.eval(out);
        Schedule s = schedule(e.g, {out.uop()});
        KernelEvaluator m(e.g, e.feeds);
        for (const Kernel& plain : s.kernels) {
          std::vector<Opt> opts = pick(e.g, plain, t);
          SCOPED_TRACE(std::string(name) + (t.gpu ? " opencl " : " cpu ") + opts_str(opts));
          LoopProgram p = lower(e.g, apply_opts(e.g, plain, opts, t), options);
          ASSERT_TRUE(test::ran_cleanly(m.run(p))) << print_program(e.g, p);
        }
        EXPECT_TRUE(all_close(m.result(s.outputs[0]), want, {1e-5, 1e-6})) << name;
      }
}

// Run-time dims: a loop over one ends at its VAR (the vars buffer is the last argument), and the
// rows past the VAR's value are neither computed nor stored.
class LowerVarTest : public LowerTest {
 protected:
  static constexpr int64_t kMax = 8, kValue = 5;
  LowerVarTest() {
    var_ = g.declare_var("T", 1, kMax);
    feeds[g.vars_buffer()] = test::host({1}, {float(kValue)}, DType::I64);
  }
  // Axis 0 of every node of `out` laid out at the VAR's maximum is the run-time dim.
  Kernel kernel_over_var(const Tensor& out) {
    for (const UOp* u : toposort({out.uop()}))
      if (!u->shape.empty() && u->shape[0] == kMax) g.set_var_axis(u, 0, var_);
    Schedule s = schedule(g, {out.uop()});
    EXPECT_EQ(s.kernels.size(), 1u) << describe(g, s);
    return s.kernels.at(0);
  }
  const UOp* var_;
};

TEST_F(LowerVarTest, OutputDimEndsAtTheVar) {
  Tensor x = input({kMax, 4});
  Kernel k = kernel_over_var(x * 2.0);
  LoopProgram p = lower(g, k, kCpu);
  ASSERT_EQ(p.globals.size(), 2u);
  EXPECT_EQ(p.globals[0]->src[0], var_);
  EXPECT_EQ(p.args, (std::vector<int64_t>{k.output, x.uop()->ival(), g.vars_buffer()}));
  EXPECT_EQ(outline(p.body), "for global { store }");
  std::vector<double> want = test::tabulate(
      {kMax, 4}, [&](const auto& i) { return i[0] < kValue ? 2.0 * of(x)[size_t(i[0] * 4 + i[1])] : 0.0; });
  EXPECT_TRUE(all_close(run_program(p), want, test::kExact)) << print_program(g, p);
}

TEST_F(LowerVarTest, ReduceLoopEndsAtTheVar) {
  Tensor x = input({kMax, 4});
  Kernel k = kernel_over_var((x * 2.0).sum({0}));
  LoopProgram p = lower(g, k, kCpu);
  EXPECT_EQ(p.args, (std::vector<int64_t>{k.output, x.uop()->ival(), g.vars_buffer()}));
  EXPECT_EQ(outline(p.body), "for global { init for reduce<T { update } store }");
  std::vector<double> want = test::tabulate({4}, [&](const auto& i) {
    double sum = 0;
    for (int64_t r = 0; r < kValue; ++r) sum += 2.0 * of(x)[size_t(r * 4 + i[0])];
    return sum;
  });
  EXPECT_TRUE(all_close(run_program(p), want, {1e-6, 1e-6})) << print_program(g, p);
}

}  // namespace
}  // namespace tgc
