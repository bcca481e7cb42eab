// The index simplifier: each rule on its own, reshape round trips, and a randomized check that
// simplify() never changes the value of an expression.
#include <gtest/gtest.h>

#include <ostream>
#include <random>

#include "ir/print.h"
#include "ir/symbolic.h"
#include "passes/kernel_eval.h"
#include "test_util.h"

namespace tgc {
namespace {

class Symbolic : public ::testing::Test {
 protected:
  Graph g;
  Sym s{g};
  int64_t next_id = 0;

  const UOp* range(int64_t n) {
    return g.make(Op::Range, DType::Index, {g.cint(n)}, RangeArg{next_id++, RangeKind::Global});
  }
  // Unfolded builders (Sym folds constants eagerly, which would hide the rules under test).
  const UOp* add(const UOp* a, const UOp* b) { return g.make(Op::Add, DType::Index, {a, b}); }
  const UOp* mul(const UOp* a, const UOp* b) { return g.make(Op::Mul, DType::Index, {a, b}); }
  const UOp* simp(const UOp* u) { return simplify(g, u); }
  std::string str(const UOp* u) { return print_expr(g, u); }
  const UOp* True() { return g.cint(1, DType::Bool); }
  const UOp* False() { return g.cint(0, DType::Bool); }
};

#define EXPECT_SIMPLIFIES_TO(expr, want)                                                       \
  do {                                                                                         \
    const UOp* got_ = simp(expr);                                                              \
    const UOp* want_ = (want);                                                                 \
    EXPECT_EQ(got_, want_) << str(expr) << " -> " << str(got_) << ", expected " << str(want_); \
  } while (0)

TEST_F(Symbolic, ConstantFolding) {
  EXPECT_SIMPLIFIES_TO(add(g.cint(2), g.cint(3)), g.cint(5));
  EXPECT_SIMPLIFIES_TO(mul(add(g.cint(2), g.cint(3)), g.cint(-4)), g.cint(-20));
  EXPECT_SIMPLIFIES_TO(g.make(Op::IDiv, DType::Index, {g.cint(17), g.cint(5)}), g.cint(3));
  EXPECT_SIMPLIFIES_TO(g.make(Op::Mod, DType::Index, {g.cint(17), g.cint(5)}), g.cint(2));
  EXPECT_SIMPLIFIES_TO(g.make(Op::CmpLt, DType::Bool, {g.cint(2), g.cint(3)}), True());
  EXPECT_SIMPLIFIES_TO(g.make(Op::CmpLt, DType::Bool, {g.cint(3), g.cint(3)}), False());
  EXPECT_SIMPLIFIES_TO(g.make(Op::Mul, DType::F32, {g.cfloat(1.5, DType::F32), g.cfloat(-2, DType::F32)}),
                       g.cfloat(-3, DType::F32));
  EXPECT_SIMPLIFIES_TO(g.make(Op::Sqrt, DType::F32, {g.cfloat(2.25, DType::F32)}), g.cfloat(1.5, DType::F32));
  // Folding rounds to the dtype exactly like the interpreter does.
  EXPECT_SIMPLIFIES_TO(g.make(Op::Add, DType::I8, {g.cint(100, DType::I8), g.cint(100, DType::I8)}),
                       g.cint(-56, DType::I8));
}

TEST_F(Symbolic, Identities) {
  const UOp* x = range(10);
  EXPECT_SIMPLIFIES_TO(add(x, g.cint(0)), x);
  EXPECT_SIMPLIFIES_TO(add(g.cint(0), x), x);
  EXPECT_SIMPLIFIES_TO(mul(x, g.cint(1)), x);
  EXPECT_SIMPLIFIES_TO(mul(g.cint(1), x), x);
  EXPECT_SIMPLIFIES_TO(mul(x, g.cint(0)), g.cint(0));
  EXPECT_SIMPLIFIES_TO(g.make(Op::IDiv, DType::Index, {x, g.cint(1)}), x);
  EXPECT_SIMPLIFIES_TO(g.make(Op::Mod, DType::Index, {x, g.cint(1)}), g.cint(0));
  EXPECT_SIMPLIFIES_TO(add(x, mul(x, g.cint(-1))), g.cint(0));
  EXPECT_SIMPLIFIES_TO(add(x, x), simp(mul(x, g.cint(2))));
}

TEST_F(Symbolic, ConstantsOfASumCombine) {
  const UOp* x = range(10);
  const UOp* want = add(x, g.cint(5));
  EXPECT_SIMPLIFIES_TO(add(add(x, g.cint(2)), g.cint(3)), want);
  EXPECT_SIMPLIFIES_TO(add(g.cint(2), add(g.cint(3), x)), want);
  EXPECT_SIMPLIFIES_TO(add(add(x, g.cint(2)), g.cint(-2)), x);
  // (x + 2) * 3 distributes into the linear form x*3 + 6.
  EXPECT_SIMPLIFIES_TO(mul(add(x, g.cint(2)), g.cint(3)), add(mul(x, g.cint(3)), g.cint(6)));
}

TEST_F(Symbolic, DivModRecombine) {
  const UOp* x = range(24);
  for (int64_t c : {2, 4, 5, 7}) {
    SCOPED_TRACE("c=" + std::to_string(c));
    const UOp* q = s.idiv(x, c);
    const UOp* r = s.mod(x, c);
    EXPECT_SIMPLIFIES_TO(add(mul(q, g.cint(c)), r), x);
    EXPECT_SIMPLIFIES_TO(add(r, mul(q, g.cint(c))), x);
    EXPECT_SIMPLIFIES_TO(add(add(mul(q, g.cint(c)), g.cint(1)), r), add(x, g.cint(1)));
    EXPECT_SIMPLIFIES_TO(mul(add(mul(q, g.cint(c)), r), g.cint(3)), mul(x, g.cint(3)));
  }
}

TEST_F(Symbolic, DivModOfSmallRange) {
  const UOp* x = range(10);  // [0, 9]
  for (int64_t c : {10, 11, 64}) {
    EXPECT_SIMPLIFIES_TO(s.mod(x, c), x);
    EXPECT_SIMPLIFIES_TO(s.idiv(x, c), g.cint(0));
  }
  // Not applicable when the range reaches c.
  EXPECT_NE(simp(s.mod(x, 9)), x);
  EXPECT_NE(simp(s.idiv(x, 9)), g.cint(0));
  // Shifted ranges: (x + 3) % 13 = x + 3 for x in [0, 9].
  EXPECT_SIMPLIFIES_TO(s.mod(add(x, g.cint(3)), 13), add(x, g.cint(3)));
  EXPECT_SIMPLIFIES_TO(s.idiv(add(x, g.cint(3)), 13), g.cint(0));
}

TEST_F(Symbolic, DivModPullsOutMultiples) {
  const UOp* a = range(5);
  const UOp* b = range(4);  // [0, 3]
  const UOp* e = add(mul(a, g.cint(4)), b);
  EXPECT_SIMPLIFIES_TO(s.idiv(e, 4), a);
  EXPECT_SIMPLIFIES_TO(s.mod(e, 4), b);
  // With a constant offset: (a*4 + b + 8) // 4 = a + 2, and % 4 = b.
  EXPECT_SIMPLIFIES_TO(s.idiv(add(e, g.cint(8)), 4), add(a, g.cint(2)));
  EXPECT_SIMPLIFIES_TO(s.mod(add(e, g.cint(8)), 4), b);
  // b with range [0, 5] does not fit below 4: (a*4 + b) // 4 = a + b // 4.
  const UOp* b6 = range(6);
  EXPECT_SIMPLIFIES_TO(s.idiv(add(mul(a, g.cint(4)), b6), 4), simp(add(a, s.idiv(b6, 4))));
  EXPECT_SIMPLIFIES_TO(s.mod(add(mul(a, g.cint(4)), b6), 4), s.mod(b6, 4));
}

TEST_F(Symbolic, DivModSplitsNegativeCoefficients) {
  // A clamped pad index min(max(r-1, 0), 7) is built as -max(-max(r-1, 0), -7): a term that is
  // never positive, times a negative coefficient. Multiples of the divisor still come out.
  const UOp *r = range(10), *q = range(3);
  const UOp* clamped = g.make(
      Op::Max, DType::Index,
      {g.make(Op::Neg, DType::Index, {g.make(Op::Max, DType::Index, {add(r, g.cint(-1)), g.cint(0)})}), g.cint(-7)});
  const UOp* x = add(mul(clamped, g.cint(-1)), mul(q, g.cint(8)));  // clamped*-1 + q*8, in [0, 23]
  EXPECT_SIMPLIFIES_TO(s.mod(x, 8), simp(mul(clamped, g.cint(-1))));
  EXPECT_SIMPLIFIES_TO(s.idiv(x, 8), q);
}

TEST_F(Symbolic, SimplifyGivenUsesTheConditionsBounds) {
  const UOp* r = range(10);
  const UOp* shifted = g.make(Op::Max, DType::Index, {add(r, g.cint(-1)), g.cint(0)});
  const UOp* inside = g.make(Op::And, DType::Bool, {s.ge(r, 1), s.lt(r, 9)});  // 1 <= r < 9
  EXPECT_EQ(simplify_given(g, shifted, inside), simp(add(r, g.cint(-1)))) << str(simplify_given(g, shifted, inside));
  EXPECT_EQ(simplify_given(g, s.lt(r, 9), inside), True());
  // Without a usable bound the expression is only simplified.
  EXPECT_EQ(simplify_given(g, shifted, s.lt(r, 100)), simp(shifted));
}

TEST_F(Symbolic, NestedDivMod) {
  const UOp* x = range(100);
  EXPECT_SIMPLIFIES_TO(s.idiv(s.idiv(x, 2), 3), s.idiv(x, 6));
  EXPECT_SIMPLIFIES_TO(s.mod(s.mod(x, 12), 4), s.mod(x, 4));
  EXPECT_SIMPLIFIES_TO(s.idiv(s.mod(x, 12), 4), s.mod(s.idiv(x, 4), 3));
}

TEST_F(Symbolic, MasksDecidedByBounds) {
  const UOp* r = range(10);  // [0, 9]
  EXPECT_SIMPLIFIES_TO(s.lt(r, 10), True());
  EXPECT_SIMPLIFIES_TO(s.lt(r, 100), True());
  EXPECT_SIMPLIFIES_TO(s.lt(r, int64_t{0}), False());  // a plain 0 would be ambiguous with lt(a, nullptr)
  EXPECT_SIMPLIFIES_TO(s.lt(r, 5), s.lt(r, 5));        // undecided: unchanged
  EXPECT_SIMPLIFIES_TO(s.ge(r, 0), True());
  EXPECT_SIMPLIFIES_TO(s.ge(r, 10), False());
  EXPECT_SIMPLIFIES_TO(s.lt(add(r, g.cint(-10)), int64_t{0}), True());
  EXPECT_SIMPLIFIES_TO(s.and_(s.lt(r, 10), s.ge(r, 0)), True());
  EXPECT_SIMPLIFIES_TO(s.and_(s.lt(r, 5), s.lt(r, 10)), s.lt(r, 5));
  // Comparisons are normalised so that bounds can decide them: r*4 < 10 -> r < 3; r + 2 < 5 -> r < 3.
  EXPECT_SIMPLIFIES_TO(s.lt(mul(r, g.cint(4)), 10), s.lt(r, 3));
  EXPECT_SIMPLIFIES_TO(s.lt(add(r, g.cint(2)), 5), s.lt(r, 3));
  EXPECT_SIMPLIFIES_TO(s.lt(mul(r, g.cint(4)), 40), True());
}

// An index split into `shape` the way the scheduler lowers a reshape ((i // stride) % dim) and
// linearized again is the index itself.
struct RoundTripCase {
  Shape shape;
};
void PrintTo(const RoundTripCase& c, std::ostream* os) { *os << shape_str(c.shape); }

// With three or more non-trivial dims the middle part is ((i//4)%3)*4 while the outer part has
// become i//12 (nested division folds), so the (x//c)*c + x%c rule never sees a matching pair.

class ReshapeRoundTrip : public Symbolic, public ::testing::WithParamInterface<RoundTripCase> {};

TEST_P(ReshapeRoundTrip, SimplifiesBackToTheIndex) {
  const Shape& shape = GetParam().shape;
  const UOp* i = range(numel(shape));
  std::vector<const UOp*> parts(shape.size());
  int64_t stride = 1;
  for (size_t j = shape.size(); j-- > 0;) {
    parts[j] = simp(s.mod(s.idiv(i, stride), shape[j]));
    stride *= shape[j];
  }
  const UOp* lin = g.cint(0);
  for (size_t j = 0; j < shape.size(); ++j) lin = s.add(s.mul(lin, shape[j]), parts[j]);
  const UOp* got = simp(lin);
  EXPECT_EQ(got, i) << shape_str(shape) << ": " << str(lin) << " -> " << str(got);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReshapeRoundTrip,
                         ::testing::Values(RoundTripCase{{2, 3}}, RoundTripCase{{6, 4}}, RoundTripCase{{3, 1, 5}},
                                           RoundTripCase{{2, 3, 4}}, RoundTripCase{{4, 4, 4}},
                                           RoundTripCase{{2, 2, 2, 2}}),
                         [](const auto& info) {
                           std::string n;
                           for (int64_t d : info.param.shape) n += (n.empty() ? "" : "x") + std::to_string(d);
                           return n;
                         });

// simplify() must preserve the value of random index expressions at every point of their ranges.
class RandomExpr {
 public:
  RandomExpr(Graph& g, std::vector<const UOp*> leaves, uint32_t seed) : g_(g), leaves_(std::move(leaves)), rng_(seed) {}

  const UOp* index(int depth) {
    int pick = depth <= 0 ? 0 : pick_in(0, 7);
    switch (pick) {
      case 0:
      case 1: return pick_in(0, 3) ? leaves_[size_t(pick_in(0, int(leaves_.size()) - 1))] : g_.cint(pick_in(-3, 12));
      case 2: return bin(Op::Add, index(depth - 1), index(depth - 1));
      case 3: return bin(Op::Mul, index(depth - 1), g_.cint(pick_in(-3, 6)));
      case 4: return bin(Op::IDiv, index(depth - 1), g_.cint(pick_in(1, 7)));
      case 5: return bin(Op::Mod, index(depth - 1), g_.cint(pick_in(1, 7)));
      case 6: return g_.make(Op::Neg, DType::Index, {index(depth - 1)});
      default: return bin(Op::Mul, index(depth - 1), index(depth - 1));
    }
  }
  const UOp* mask(int depth) {
    const UOp* lt = g_.make(Op::CmpLt, DType::Bool, {index(depth), g_.cint(pick_in(-2, 20))});
    if (!pick_in(0, 3)) lt = g_.make(Op::Xor, DType::Bool, {lt, g_.cint(1, DType::Bool)});  // >=
    if (pick_in(0, 2)) return lt;
    return g_.make(Op::And, DType::Bool, {lt, mask(depth - 1)});
  }

 private:
  int pick_in(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  const UOp* bin(Op op, const UOp* a, const UOp* b) { return g_.make(op, DType::Index, {a, b}); }
  Graph& g_;
  std::vector<const UOp*> leaves_;
  std::mt19937 rng_;
};

TEST_F(Symbolic, SimplifyPreservesValues) {
  std::vector<const UOp*> rs = {range(3), range(4), range(7)};
  RandomExpr gen(g, rs, 7);
  int failures = 0;
  for (int n = 0; n < 600 && failures < 5; ++n) {
    const UOp* e = n % 3 == 2 ? gen.mask(3) : gen.index(4);
    const UOp* simplified = simp(e);
    ScalarEval ev;
    for (int64_t p = 0; p < 3 * 4 * 7; ++p) {
      ev.env = {{0, p % 3}, {1, (p / 3) % 4}, {2, p / 12}};
      int64_t want = ev.index(e), got = ev.index(simplified);
      if (want != got) {
        ADD_FAILURE() << str(e) << " -> " << str(simplified) << " at r0=" << ev.env[0] << " r1=" << ev.env[1]
                      << " r2=" << ev.env[2] << ": " << got << " != " << want;
        ++failures;
        break;
      }
      // The bounds of the simplified expression must hold too.
      if (got < simplified->vmin || got > simplified->vmax) {
        ADD_FAILURE() << str(simplified) << " = " << got << " outside its bounds [" << simplified->vmin << ", "
                      << simplified->vmax << "]";
        ++failures;
        break;
      }
    }
  }
}

TEST_F(Symbolic, SimplifyIsIdempotent) {
  std::vector<const UOp*> rs = {range(5), range(6)};
  RandomExpr gen(g, rs, 99);
  for (int n = 0; n < 200; ++n) {
    const UOp* once = simp(gen.index(4));
    EXPECT_EQ(simp(once), once) << str(once);
  }
}

TEST_F(Symbolic, SimplifyGivenPreservesValuesWhereTheConditionHolds) {
  std::vector<const UOp*> rs = {range(3), range(4), range(7)};
  RandomExpr gen(g, rs, 11);
  int failures = 0, checked = 0;
  for (int n = 0; n < 400 && failures < 5; ++n) {
    const UOp* e = gen.index(4);
    const UOp* cond = gen.mask(2);
    const UOp* given = simplify_given(g, e, cond);
    ScalarEval ev;
    for (int64_t p = 0; p < 3 * 4 * 7; ++p) {
      ev.env = {{0, p % 3}, {1, (p / 3) % 4}, {2, p / 12}};
      if (!ev.index(cond)) continue;
      ++checked;
      if (ev.index(e) != ev.index(given)) {
        ADD_FAILURE() << str(e) << " given " << str(cond) << " -> " << str(given) << ": " << ev.index(given)
                      << " != " << ev.index(e);
        ++failures;
        break;
      }
    }
  }
  EXPECT_GT(checked, 1000);  // the random conditions hold often enough to test something
}

}  // namespace
}  // namespace tgc
