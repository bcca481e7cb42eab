// The UOp graph: hash-consing, structural hashes, shape inference and its errors, toposort.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "ir/error.h"
#include "ir/tensor.h"
#include "ir/uop.h"

namespace tgc {
namespace {

const UOp* input(Graph& g, const Shape& s, DType t = DType::F32) {
  return Tensor::input(g, "x" + std::to_string(g.num_buffers()), t, s).uop();
}

TEST(UOp, SameRequestGivesSameNode) {
  Graph g;
  const UOp* x = input(g, {2, 3});
  size_t before = g.num_nodes();
  const UOp* a = g.make(Op::Neg, DType::F32, {x});
  const UOp* b = g.make(Op::Neg, DType::F32, {x});
  EXPECT_EQ(a, b);
  EXPECT_EQ(g.num_nodes(), before + 1);
  EXPECT_EQ(g.cint(7), g.cint(7));
  EXPECT_EQ(g.cfloat(0.5, DType::F32), g.cfloat(0.5, DType::F32));
  EXPECT_EQ(g.var("n", 1, 8), g.var("n", 1, 8));
  EXPECT_EQ(g.make(Op::Reshape, DType::F32, {x}, std::vector<int64_t>{3, 2}),
            g.make(Op::Reshape, DType::F32, {x}, std::vector<int64_t>{3, 2}));
  // Tensor-level: the same expression built twice is the same node.
  Tensor t(g, x);
  EXPECT_EQ((t + t.exp()).uop(), (t + t.exp()).uop());
}

TEST(UOp, DifferentArgDtypeOrSourcesGiveDifferentNodes) {
  Graph g;
  const UOp* x = input(g, {6});
  const UOp* y = input(g, {6});
  EXPECT_NE(g.cint(1), g.cint(2));
  EXPECT_NE(g.cint(1), g.cint(1, DType::I32));
  EXPECT_NE(g.cfloat(1, DType::F32), g.cint(1, DType::I64));
  EXPECT_NE(g.var("n", 1, 8), g.var("n", 1, 9));
  EXPECT_NE(g.make(Op::Reshape, DType::F32, {x}, std::vector<int64_t>{2, 3}),
            g.make(Op::Reshape, DType::F32, {x}, std::vector<int64_t>{3, 2}));
  EXPECT_NE(g.make(Op::Add, DType::F32, {x, y}), g.make(Op::Add, DType::F32, {y, x}));
  EXPECT_NE(g.make(Op::Range, DType::Index, {g.cint(4)}, RangeArg{0, RangeKind::Global}),
            g.make(Op::Range, DType::Index, {g.cint(4)}, RangeArg{0, RangeKind::Reduce}));
  EXPECT_NE(g.make(Op::Reduce, DType::F32, {x}, ReduceArg{Op::Add, {0}}),
            g.make(Op::Reduce, DType::F32, {x}, ReduceArg{Op::Max, {0}}));
}

// Builds the same small model in `g`; returns its root.
const UOp* build_model(Graph& g, double scale) {
  Tensor x = Tensor::input(g, "x", DType::F32, {3, 5});
  Tensor w = Tensor::input(g, "w", DType::F32, {5, 7});
  return ((x.matmul(w) * scale).relu().sum({1}) + 1.0).uop();
}

TEST(UOp, StructuralHashIsEqualAcrossGraphs) {
  Graph g1, g2;
  g2.cint(42);  // unrelated nodes made first must not matter, only the model's structure
  g2.var("n", 0, 3);
  const UOp* a = build_model(g1, 2.0);
  const UOp* b = build_model(g2, 2.0);
  EXPECT_NE(a, b);
  EXPECT_EQ(a->hash, b->hash);
  EXPECT_EQ(a->shape, b->shape);
  // A different constant anywhere changes the root hash.
  Graph g4;
  EXPECT_NE(a->hash, build_model(g4, 3.0)->hash);
  // Scalar index expressions too.
  auto expr = [](Graph& g) {
    const UOp* r = g.make(Op::Range, DType::Index, {g.cint(12)}, RangeArg{0, RangeKind::Global});
    return g.make(Op::Add, DType::Index, {g.make(Op::Mul, DType::Index, {r, g.cint(3)}), g.cint(1)});
  };
  EXPECT_EQ(expr(g1)->hash, expr(g2)->hash);
}

TEST(UOp, ShapeInference) {
  Graph g;
  const UOp* x = input(g, {2, 3, 4});
  auto ints = [](std::vector<int64_t> v) { return Arg(v); };
  EXPECT_EQ(g.make(Op::Exp2, DType::F32, {x})->shape, (Shape{2, 3, 4}));
  EXPECT_EQ(g.make(Op::Reduce, DType::F32, {x}, ReduceArg{Op::Add, {0, 2}})->shape, (Shape{1, 3, 1}));
  EXPECT_EQ(g.make(Op::Reshape, DType::F32, {x}, ints({4, 6}))->shape, (Shape{4, 6}));
  EXPECT_EQ(g.make(Op::Permute, DType::F32, {x}, ints({2, 0, 1}))->shape, (Shape{4, 2, 3}));
  EXPECT_EQ(g.make(Op::Pad, DType::F32, {x}, ints({1, 0, 0, 2, 3, 1}))->shape, (Shape{3, 5, 8}));
  EXPECT_EQ(g.make(Op::Shrink, DType::F32, {x}, ints({0, 1, 1, 3, 0, 4}))->shape, (Shape{1, 2, 4}));
  EXPECT_EQ(g.make(Op::Flip, DType::F32, {x}, ints({1, 0, 1}))->shape, (Shape{2, 3, 4}));
  const UOp* y = input(g, {2, 1, 4});
  EXPECT_EQ(g.make(Op::Expand, DType::F32, {y}, ints({2, 5, 4}))->shape, (Shape{2, 5, 4}));
  EXPECT_TRUE(g.cint(3)->shape.empty());
}

struct BadNode {
  const char* name;
  std::function<void(Graph&, const UOp*)> make;  // x is f32[2,3,4]
};

class UOpShapeError : public ::testing::TestWithParam<BadNode> {};

TEST_P(UOpShapeError, ThrowsTgcError) {
  Graph g;
  const UOp* x = input(g, {2, 3, 4});
  size_t before = g.num_nodes();
  EXPECT_THROW(GetParam().make(g, x), Error);
  EXPECT_LE(g.num_nodes(), before + 2) << "a rejected node must not be interned";
}

using V = std::vector<int64_t>;
INSTANTIATE_TEST_SUITE_P(
    All, UOpShapeError,
    ::testing::Values(
        BadNode{"AddShapesDiffer",
                [](Graph& g, const UOp* x) { g.make(Op::Add, DType::F32, {x, input(g, {2, 4, 3})}); }},
        BadNode{"WhereShapesDiffer",
                [](Graph& g, const UOp* x) {
                  g.make(Op::Where, DType::F32, {input(g, {2, 3, 4}, DType::Bool), x, input(g, {2, 3, 1})});
                }},
        BadNode{"ReshapeNumel", [](Graph& g, const UOp* x) { g.make(Op::Reshape, DType::F32, {x}, V{5, 5}); }},
        BadNode{"PermuteRank", [](Graph& g, const UOp* x) { g.make(Op::Permute, DType::F32, {x}, V{1, 0}); }},
        BadNode{"PermuteRepeat", [](Graph& g, const UOp* x) { g.make(Op::Permute, DType::F32, {x}, V{0, 0, 1}); }},
        BadNode{"PermuteRange", [](Graph& g, const UOp* x) { g.make(Op::Permute, DType::F32, {x}, V{0, 1, 3}); }},
        BadNode{"ExpandNonOne", [](Graph& g, const UOp* x) { g.make(Op::Expand, DType::F32, {x}, V{2, 6, 4}); }},
        BadNode{"ExpandRank", [](Graph& g, const UOp* x) { g.make(Op::Expand, DType::F32, {x}, V{1, 2, 3, 4}); }},
        BadNode{"PadNegative", [](Graph& g, const UOp* x) { g.make(Op::Pad, DType::F32, {x}, V{0, 0, -1, 0, 0, 0}); }},
        BadNode{"PadArity", [](Graph& g, const UOp* x) { g.make(Op::Pad, DType::F32, {x}, V{0, 0, 1}); }},
        BadNode{"ShrinkPastEnd",
                [](Graph& g, const UOp* x) { g.make(Op::Shrink, DType::F32, {x}, V{0, 2, 0, 4, 0, 4}); }},
        BadNode{"ShrinkReversed",
                [](Graph& g, const UOp* x) { g.make(Op::Shrink, DType::F32, {x}, V{1, 0, 0, 3, 0, 4}); }},
        BadNode{"FlipArity", [](Graph& g, const UOp* x) { g.make(Op::Flip, DType::F32, {x}, V{1}); }},
        BadNode{"ReduceAxis",
                [](Graph& g, const UOp* x) { g.make(Op::Reduce, DType::F32, {x}, ReduceArg{Op::Add, {3}}); }},
        BadNode{"TensorBroadcast", [](Graph& g, const UOp* x) { (void)(Tensor(g, x) + Tensor(g, input(g, {3, 3}))); }},
        BadNode{"TensorReshapeInfer", [](Graph& g, const UOp* x) { (void)Tensor(g, x).reshape({5, -1}); }},
        BadNode{"TensorMatmulInner",
                [](Graph& g, const UOp* x) { (void)Tensor(g, x).matmul(Tensor(g, input(g, {3, 4}))); }},
        BadNode{"TensorAxis", [](Graph& g, const UOp* x) { (void)Tensor(g, x).sum({3}); }},
        BadNode{"TensorSqueezeNonOne", [](Graph& g, const UOp* x) { (void)Tensor(g, x).squeeze({1}); }}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(UOp, ToposortPutsSourcesFirstOnce) {
  Graph g;
  Tensor x(g, input(g, {4}));
  Tensor y(g, input(g, {4}));
  Tensor a = x * y, b = a.exp2(), c = a + b, d = c * x;  // diamond a -> {b, c} plus a reuse of x
  Tensor e = y.sqrt();
  std::vector<const UOp*> order = toposort({d.uop(), e.uop()});
  std::unordered_map<const UOp*, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_TRUE(pos.emplace(order[i], i).second) << "node listed twice";
    for (const UOp* s : order[i]->src) {
      ASSERT_TRUE(pos.count(s)) << op_name(order[i]->op) << " listed before its source " << op_name(s->op);
    }
  }
  for (const Tensor& t : {x, y, a, b, c, d, e}) EXPECT_TRUE(pos.count(t.uop()));
  // Nodes of the first root come before those only the second root needs; roots end their part.
  EXPECT_LT(pos[d.uop()], pos[e.uop()]);
  EXPECT_EQ(order.back(), e.uop());
  EXPECT_EQ(toposort({d.uop(), d.uop()}).size(), toposort({d.uop()}).size());
}

TEST(UOp, ToposortHandlesDeepChains) {
  Graph g;
  Tensor t(g, input(g, {2}));
  for (int i = 0; i < 20000; ++i) t = -t;
  EXPECT_EQ(toposort({t.uop()}).size(), 20001u);
}

TEST(UOp, IndexBounds) {
  Graph g;
  const UOp* r = g.make(Op::Range, DType::Index, {g.cint(10)}, RangeArg{0, RangeKind::Global});
  EXPECT_EQ(r->vmin, 0);
  EXPECT_EQ(r->vmax, 9);
  const UOp* e = g.make(Op::Add, DType::Index, {g.make(Op::Mul, DType::Index, {r, g.cint(-3)}), g.cint(5)});
  EXPECT_EQ(e->vmin, -22);
  EXPECT_EQ(e->vmax, 5);
  const UOp* d = g.make(Op::IDiv, DType::Index, {r, g.cint(4)});
  EXPECT_EQ(d->vmin, 0);
  EXPECT_EQ(d->vmax, 2);
  const UOp* m = g.make(Op::Mod, DType::Index, {r, g.cint(4)});
  EXPECT_EQ(m->vmin, 0);
  EXPECT_EQ(m->vmax, 3);
  const UOp* v = g.var("n", 2, 6);
  EXPECT_EQ(v->vmin, 2);
  EXPECT_EQ(v->vmax, 6);
}

TEST(DType, NamesSizesPromotion) {
  EXPECT_EQ(dtype_size(DType::F32), 4);
  EXPECT_EQ(dtype_size(DType::BF16), 2);
  EXPECT_EQ(dtype_size(DType::Index), 8);
  EXPECT_EQ(dtype_from_name("f16"), DType::F16);
  EXPECT_EQ(dtype_name(DType::U8), "u8");
  EXPECT_THROW(dtype_from_name("f8"), Error);
  EXPECT_EQ(promote(DType::I64, DType::F16), DType::F16);
  EXPECT_EQ(promote(DType::I8, DType::I32), DType::I32);
  EXPECT_EQ(promote(DType::Bool, DType::U8), DType::U8);
  EXPECT_EQ(wrap_int(DType::U8, 257), 1);
  EXPECT_EQ(wrap_int(DType::I8, 200), -56);
  EXPECT_EQ(round_float(DType::F32, 0.1), double(0.1f));
}

}  // namespace
}  // namespace tgc
