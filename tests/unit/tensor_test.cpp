// Every Tensor API operation, evaluated by the reference interpreter, against plain C++ loops.
// Sizes are odd (3, 5, 7) so that transposed or mis-strided indexing cannot pass by accident.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <ostream>

#include "ir/error.h"
#include "test_util.h"

namespace tgc {
namespace {

using test::all_close;
using test::bcast_at;
using test::tabulate;
using test::Tol;
using Idx = std::vector<int64_t>;
constexpr Tol kExact = test::kExact;
constexpr Tol kTrans = test::kTranscendental;

class TensorTest : public ::testing::Test, protected test::Env {
 protected:
  void check(const Tensor& t, const Shape& shape, const std::vector<double>& want, Tol tol = {}) {
    ASSERT_EQ(t.shape(), shape);
    EXPECT_TRUE(all_close(eval(t), want, tol));
  }
  // Element of an input/weight at an output index, with numpy broadcasting.
  double at(const Tensor& x, const Idx& idx) const { return bcast_at(of(x), x.shape(), idx); }
  // Random values on a grid of step 0.5 in [lo, hi], so that ties and exact zeros occur.
  std::vector<float> grid(int64_t n, int lo, int hi) {
    std::uniform_int_distribution<int> d(2 * lo, 2 * hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = float(d(rng)) / 2;
    return v;
  }
};

// ---- elementwise: unary ---------------------------------------------------------------------
struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  float lo, hi;
  Tol tol;
};

void PrintTo(const UnaryCase& c, std::ostream* os) { *os << c.name; }

class Unary : public TensorTest, public ::testing::WithParamInterface<UnaryCase> {};

TEST_P(Unary, MatchesReference) {
  const UnaryCase& c = GetParam();
  Tensor x = input({3, 5, 7}, c.lo, c.hi);
  std::vector<double> want;
  for (float v : of(x)) want.push_back(c.ref(v));
  check(c.op(x), {3, 5, 7}, want, c.tol);
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double gelu_tanh(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

INSTANTIATE_TEST_SUITE_P(
    Tensor, Unary,
    ::testing::Values(
        UnaryCase{"neg", [](auto& x) { return -x; }, [](double v) { return -v; }, -3, 3, kExact},
        UnaryCase{"exp", [](auto& x) { return x.exp(); }, [](double v) { return std::exp(v); }, -4, 4, kTrans},
        UnaryCase{"exp2", [](auto& x) { return x.exp2(); }, [](double v) { return std::exp2(v); }, -4, 4, kTrans},
        UnaryCase{"log", [](auto& x) { return x.log(); }, [](double v) { return std::log(v); }, 0.01f, 10, kTrans},
        UnaryCase{"log2", [](auto& x) { return x.log2(); }, [](double v) { return std::log2(v); }, 0.01f, 10, kTrans},
        UnaryCase{"sqrt", [](auto& x) { return x.sqrt(); }, [](double v) { return std::sqrt(v); }, 0, 9, kTrans},
        UnaryCase{"rsqrt", [](auto& x) { return x.rsqrt(); }, [](double v) { return 1 / std::sqrt(v); }, 0.1f, 9,
                  kTrans},
        UnaryCase{"reciprocal", [](auto& x) { return x.reciprocal(); }, [](double v) { return 1 / v; }, 0.25f, 4, {}},
        UnaryCase{"sin", [](auto& x) { return x.sin(); }, [](double v) { return std::sin(v); }, -7, 7, kTrans},
        UnaryCase{"cos", [](auto& x) { return x.cos(); }, [](double v) { return std::cos(v); }, -7, 7, kTrans},
        UnaryCase{"tan", [](auto& x) { return x.tan(); }, [](double v) { return std::tan(v); }, -1.2f, 1.2f, kTrans},
        UnaryCase{"atan", [](auto& x) { return x.atan(); }, [](double v) { return std::atan(v); }, -6, 6, kTrans},
        UnaryCase{"atan_small", [](auto& x) { return x.atan(); }, [](double v) { return std::atan(v); }, -0.5f, 0.5f,
                  kTrans},
        UnaryCase{"asin", [](auto& x) { return x.asin(); }, [](double v) { return std::asin(v); }, -1, 1, kTrans},
        UnaryCase{"acos", [](auto& x) { return x.acos(); }, [](double v) { return std::acos(v); }, -1, 1, kTrans},
        UnaryCase{"sinh", [](auto& x) { return x.sinh(); }, [](double v) { return std::sinh(v); }, -4, 4, kTrans},
        UnaryCase{"sinh_small", [](auto& x) { return x.sinh(); }, [](double v) { return std::sinh(v); }, -0.2f, 0.2f,
                  kTrans},
        UnaryCase{"cosh", [](auto& x) { return x.cosh(); }, [](double v) { return std::cosh(v); }, -4, 4, kTrans},
        UnaryCase{"asinh", [](auto& x) { return x.asinh(); }, [](double v) { return std::asinh(v); }, -5, 5, kTrans},
        UnaryCase{"asinh_small", [](auto& x) { return x.asinh(); }, [](double v) { return std::asinh(v); }, -0.2f, 0.2f,
                  kTrans},
        UnaryCase{"acosh", [](auto& x) { return x.acosh(); }, [](double v) { return std::acosh(v); }, 1, 6, kTrans},
        UnaryCase{"atanh", [](auto& x) { return x.atanh(); }, [](double v) { return std::atanh(v); }, -0.95f, 0.95f,
                  kTrans},
        UnaryCase{"atanh_small", [](auto& x) { return x.atanh(); }, [](double v) { return std::atanh(v); }, -0.2f, 0.2f,
                  kTrans},
        UnaryCase{"tanh", [](auto& x) { return x.tanh(); }, [](double v) { return std::tanh(v); }, -4, 4, kTrans},
        UnaryCase{"sigmoid", [](auto& x) { return x.sigmoid(); }, sigmoid, -8, 8, kTrans},
        UnaryCase{"erf", [](auto& x) { return x.erf(); }, [](double v) { return std::erf(v); }, -3, 3, kTrans},
        UnaryCase{"erf_small", [](auto& x) { return x.erf(); }, [](double v) { return std::erf(v); }, -0.6f, 0.6f,
                  kTrans},
        UnaryCase{"gelu", [](auto& x) { return x.gelu(); },
                  [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, -4, 4, kTrans},
        UnaryCase{"gelu_tanh", [](auto& x) { return x.gelu(true); }, gelu_tanh, -4, 4, kTrans},
        UnaryCase{"abs", [](auto& x) { return x.abs(); }, [](double v) { return std::fabs(v); }, -3, 3, kExact},
        UnaryCase{"sign", [](auto& x) { return x.sign(); }, [](double v) { return double((v > 0) - (v < 0)); }, -3, 3,
                  kExact},
        UnaryCase{"trunc", [](auto& x) { return x.trunc(); }, [](double v) { return std::trunc(v); }, -5, 5, kExact},
        UnaryCase{"floor", [](auto& x) { return x.floor(); }, [](double v) { return std::floor(v); }, -5, 5, kExact},
        UnaryCase{"ceil", [](auto& x) { return x.ceil(); }, [](double v) { return std::ceil(v); }, -5, 5, kExact},
        UnaryCase{"round", [](auto& x) { return x.round(); }, [](double v) { return std::nearbyint(v); }, -5, 5,
                  kExact},
        UnaryCase{"relu", [](auto& x) { return x.relu(); }, [](double v) { return std::max(v, 0.0); }, -3, 3, kExact},
        UnaryCase{"leaky_relu",
                  [](auto& x) { return x.leaky_relu(0.1); },
                  [](double v) { return v < 0 ? double(float(v * 0.1)) : v; },
                  -3,
                  3,
                  {}},
        UnaryCase{"clip", [](auto& x) { return x.clip(-0.5, 0.7); },
                  [](double v) { return std::clamp(v, -0.5, double(0.7f)); }, -1, 1, kExact},
        UnaryCase{"clip_lo", [](auto& x) { return x.clip(-0.5, std::nullopt); },
                  [](double v) { return std::max(v, -0.5); }, -1, 1, kExact},
        UnaryCase{"clip_hi", [](auto& x) { return x.clip(std::nullopt, 0.25); },
                  [](double v) { return std::min(v, 0.25); }, -1, 1, kExact},
        UnaryCase{"scalar_ops",
                  [](auto& x) { return ((x + 2.5) * -1.5 - 1.0) / 4.0; },
                  [](double v) { return ((v + 2.5) * -1.5 - 1.0) / 4.0; },
                  -3,
                  3,
                  {}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(TensorTest, RoundingAtHalves) {
  std::vector<float> v = {-3.5f, -2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, 4.5f, -0.0f, 0.0f, 1.2f, -1.7f, 2.51f,
                          0.49999997f, -0.49999997f, -2.0f, 8388608.0f, 16777216.0f, 1e9f,
                          // Just above a half: x + 0.5 rounds in f32 (to 1.0 for 0.5 + 2^-24).
                          0.50000006f, -0.50000006f, 0.7500001f, 2.5000002f, 4194304.5f, 4194305.5f};
  Tensor x = input_data({int64_t(v.size())}, v);
  auto ref = [&](double (*f)(double)) {
    std::vector<double> r;
    for (float a : v) r.push_back(f(a));
    return r;
  };
  check(x.round(), x.shape(), ref([](double a) { return std::nearbyint(a); }), kExact);
  check(x.floor(), x.shape(), ref([](double a) { return std::floor(a); }), kExact);
  check(x.ceil(), x.shape(), ref([](double a) { return std::ceil(a); }), kExact);
}

TEST_F(TensorTest, RoundLargeOddIntegers) {
  std::vector<float> v = {8388609.0f, -8388609.0f, 10000001.0f, 16777215.0f};
  Tensor x = input_data({4}, v);
  check(x.round(), {4}, {8388609.0, -8388609.0, 10000001.0, 16777215.0}, kExact);
}

// ---- elementwise: binary with broadcasting ----------------------------------------------------
struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  Tol tol;
};

void PrintTo(const BinaryCase& c, std::ostream* os) { *os << c.name; }

class Binary : public TensorTest, public ::testing::WithParamInterface<BinaryCase> {};

TEST_P(Binary, BroadcastsLikeNumpy) {
  const BinaryCase& c = GetParam();
  for (auto [as, bs, out] : {std::tuple<Shape, Shape, Shape>{{3, 1, 5}, {7, 1}, {3, 7, 5}},
                             {{3, 5, 7}, {3, 5, 7}, {3, 5, 7}},
                             {{7}, {3, 5, 1}, {3, 5, 7}}}) {
    SCOPED_TRACE(shape_str(as) + " op " + shape_str(bs));
    std::vector<float> b = grid(numel(bs), -2, 2);
    for (auto& v : b) v = v == 0 ? -0.5f : v;  // no division by zero
    Tensor x = input_data(as, grid(numel(as), -2, 2)), y = weight_data(bs, b);
    check(c.op(x, y), out, tabulate(out, [&](const Idx& i) { return c.ref(at(x, i), at(y, i)); }), c.tol);
  }
}

double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

INSTANTIATE_TEST_SUITE_P(
    Tensor, Binary,
    ::testing::Values(
        BinaryCase{"add", [](auto& a, auto& b) { return a + b; }, [](double a, double b) { return a + b; }, kExact},
        BinaryCase{"sub", [](auto& a, auto& b) { return a - b; }, [](double a, double b) { return a - b; }, kExact},
        BinaryCase{"mul", [](auto& a, auto& b) { return a * b; }, [](double a, double b) { return a * b; }, kExact},
        BinaryCase{"div", [](auto& a, auto& b) { return a / b; }, [](double a, double b) { return a / b; }, {}},
        BinaryCase{"maximum", [](auto& a, auto& b) { return a.maximum(b); },
                   [](double a, double b) { return std::max(a, b); }, kExact},
        BinaryCase{"minimum", [](auto& a, auto& b) { return a.minimum(b); },
                   [](double a, double b) { return std::min(a, b); }, kExact},
        BinaryCase{"fmod", [](auto& a, auto& b) { return a.fmod(b); },
                   [](double a, double b) { return std::fmod(a, b); }, kExact},
        BinaryCase{"mod", [](auto& a, auto& b) { return a.mod(b); }, py_mod, kExact},
        BinaryCase{"pow", [](auto& a, auto& b) { return a.pow(b.round()); },
                   [](double a, double b) { return std::pow(a, std::nearbyint(b)); }, kTrans},
        BinaryCase{"lt", [](auto& a, auto& b) { return a.lt(b); }, [](double a, double b) { return double(a < b); },
                   kExact},
        BinaryCase{"gt", [](auto& a, auto& b) { return a.gt(b); }, [](double a, double b) { return double(a > b); },
                   kExact},
        BinaryCase{"le", [](auto& a, auto& b) { return a.le(b); }, [](double a, double b) { return double(a <= b); },
                   kExact},
        BinaryCase{"ge", [](auto& a, auto& b) { return a.ge(b); }, [](double a, double b) { return double(a >= b); },
                   kExact},
        BinaryCase{"eq", [](auto& a, auto& b) { return a.eq(b); }, [](double a, double b) { return double(a == b); },
                   kExact},
        BinaryCase{"ne", [](auto& a, auto& b) { return a.ne(b); }, [](double a, double b) { return double(a != b); },
                   kExact},
        BinaryCase{"logical_and", [](auto& a, auto& b) { return a.logical_and(b); },
                   [](double a, double b) { return double(a != 0 && b != 0); }, kExact},
        BinaryCase{"logical_or", [](auto& a, auto& b) { return a.logical_or(b); },
                   [](double a, double b) { return double(a != 0 || b != 0); }, kExact},
        BinaryCase{"logical_xor", [](auto& a, auto& b) { return a.logical_xor(b); },
                   [](double a, double b) { return double((a != 0) != (b != 0)); }, kExact}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(TensorTest, PowEdgeCases) {
  // Negative bases with integer exponents keep the sign of (-1)^e; other negative bases are NaN.
  std::vector<float> base = {-3, -3, -2, -2, -2, -1.5f, 0, 0, 0, 2, 2.5f, 4, -2, 9};
  std::vector<float> expo = {3, 2, -1, -2, 0, 3, 0, 2, -1, 0.5f, -1.5f, 0.5f, 0.5f, 1.5f};
  Shape s = {int64_t(base.size())};
  Tensor b = input_data(s, base), e = input_data(s, expo);
  std::vector<double> want;
  for (size_t i = 0; i < base.size(); ++i) want.push_back(std::pow(double(base[i]), double(expo[i])));
  check(b.pow(e), s, want, kTrans);
  // Random positive bases with fractional exponents.
  Tensor pb = input({5, 7}, 0.1f, 3), pe = input({7}, -2, 2);
  check(pb.pow(pe), {5, 7}, tabulate({5, 7}, [&](const Idx& i) { return std::pow(at(pb, i), at(pe, i)); }), kTrans);
}

TEST_F(TensorTest, IntegerArithmetic) {
  std::vector<float> av = {7, -7, 7, -7, 0, 9, -9, 100}, bv = {2, 2, -2, -2, 3, 4, 4, 7};
  Shape s = {8};
  Tensor a = int_weight(s, av, DType::I32), b = int_weight(s, bv, DType::I32);
  auto ref = [&](auto f) {
    std::vector<double> r;
    for (size_t i = 0; i < av.size(); ++i) r.push_back(f(int64_t(av[i]), int64_t(bv[i])));
    return r;
  };
  check(a / b, s, ref([](int64_t x, int64_t y) { return double(x / y); }), kExact);
  check(a.fmod(b), s, ref([](int64_t x, int64_t y) { return double(x % y); }), kExact);
  check(a.mod(b), s, ref([](int64_t x, int64_t y) { return py_mod(double(x), double(y)); }), kExact);
  check(a * b - a, s, ref([](int64_t x, int64_t y) { return double(x * y - x); }), kExact);
  check(a.abs(), s, ref([](int64_t x, int64_t) { return double(std::abs(x)); }), kExact);
  check(a.minimum(b), s, ref([](int64_t x, int64_t y) { return double(std::min(x, y)); }), kExact);
  check(a.pow(b.clip(0, 3)), s,
        ref([](int64_t x, int64_t y) { return std::pow(double(x), double(std::clamp<int64_t>(y, 0, 3))); }), kExact);
  EXPECT_EQ((a / b).dtype(), DType::I32);
  check(a.bitwise(Op::And, b), s, ref([](int64_t x, int64_t y) { return double(x & y); }), kExact);
  check(a.bitwise(Op::Or, b), s, ref([](int64_t x, int64_t y) { return double(x | y); }), kExact);
  check(a.bitwise(Op::Xor, b), s, ref([](int64_t x, int64_t y) { return double(x ^ y); }), kExact);
  check(a.bitwise(Op::Shl, b.clip(0, 3)), s,
        ref([](int64_t x, int64_t y) { return double(x * (1 << std::clamp<int64_t>(y, 0, 3))); }), kExact);
  EXPECT_THROW(input({2}).bitwise(Op::And, input({2})), Error);
}

TEST_F(TensorTest, BoolSum) {
  Tensor x = input({3, 5, 7});
  Tensor count = x.gt(x.full_like(0)).sum({1, 2});
  EXPECT_EQ(count.dtype(), DType::I64);
  check(count, {3},
        tabulate({3},
                 [&](const Idx& i) {
                   double n = 0;
                   for (int64_t j = 0; j < 35; ++j) n += of(x)[size_t(i[0] * 35 + j)] > 0;
                   return n;
                 }),
        kExact);
}

TEST_F(TensorTest, Bitcast) {
  EXPECT_THROW(input({2}).bitcast(DType::I64), Error);  // sizes differ
  check(input_data({3}, {1.0f, -2.0f, 0.0f}).bitcast(DType::I32), {3}, {0x3f800000, int32_t(0xc0000000), 0}, kExact);
  check(int_weight({2}, {0x3f800000, int32_t(0xbf000000)}, DType::I32).bitcast(DType::F32), {2}, {1.0, -0.5}, kExact);
}

TEST_F(TensorTest, Where) {
  Tensor c = input({3, 1, 5}), a = input({7, 5}), b = weight({3, 7, 1});
  Tensor r = Tensor::where(c.gt(c.full_like(0)), a, b);
  check(r, {3, 7, 5}, tabulate({3, 7, 5}, [&](const Idx& i) { return at(c, i) > 0 ? at(a, i) : at(b, i); }), kExact);
  // Clip with tensor bounds broadcasts like where.
  Tensor lo = weight({5}, -1, 0), hi = weight({7, 1}, 0, 1);
  check(a.clip(lo, hi), {7, 5},
        tabulate({7, 5}, [&](const Idx& i) { return std::min(std::max(at(a, i), at(lo, i)), at(hi, i)); }), kExact);
  // A float condition is true where non-zero.
  Tensor f = input_data({5}, grid(5, -1, 1));
  check(Tensor::where(f, a, f.scalar(9)), {7, 5},
        tabulate({7, 5}, [&](const Idx& i) { return at(f, i) != 0 ? at(a, i) : 9.0; }), kExact);
}

TEST_F(TensorTest, Cast) {
  std::vector<float> v = {-2.75f, -1.5f, -0.5f, 0, 0.25f, 1, 1.99f, 3.5f, 100.7f};
  Shape s = {9};
  Tensor x = input_data(s, v);
  auto ref = [&](auto f) {
    std::vector<double> r;
    for (float a : v) r.push_back(f(a));
    return r;
  };
  Tensor i = x.cast(DType::I32);
  EXPECT_EQ(i.dtype(), DType::I32);
  check(i, s, ref([](float a) { return std::trunc(a); }), kExact);
  check(x.cast(DType::Bool), s, ref([](float a) { return double(a != 0); }), kExact);
  check(x.cast(DType::Bool).cast(DType::F32) + x, s, ref([](float a) { return (a != 0) + double(a); }), kExact);
  check(i.cast(DType::F32) * 0.5, s, ref([](float a) { return std::trunc(a) * 0.5; }), kExact);
  // f16 rounds to nearest even, saturates to inf past 65520 and flushes below half the subnormals.
  check(input_data({6}, {1.99f, 100.7f, -2.75f, 65519.f, 70000.f, 1e-8f}).cast(DType::F16), {6},
        {1.990234375, 100.6875, -2.75, 65504, INFINITY, 0}, kExact);
  // Mixed dtypes promote: i32 + f32 -> f32.
  Tensor m = i + x;
  EXPECT_EQ(m.dtype(), DType::F32);
  check(m, s, ref([](float a) { return std::trunc(a) + a; }), kExact);
}

// ---- reductions -----------------------------------------------------------------------------
struct ReduceCase {
  const char* name;
  std::function<Tensor(const Tensor&, Idx, bool)> op;
  double init;
  std::function<double(double, double)> combine;
  bool mean;
  float lo, hi;
};

void PrintTo(const ReduceCase& c, std::ostream* os) { *os << c.name; }

class Reduce : public TensorTest, public ::testing::WithParamInterface<ReduceCase> {};

// Reference reduce of `d` (shape s) over `axes` (empty: all), result in keepdim layout order.
std::vector<double> ref_reduce(const std::vector<float>& d, const Shape& s, Idx axes, const ReduceCase& c) {
  if (axes.empty())
    for (size_t i = 0; i < s.size(); ++i) axes.push_back(int64_t(i));
  for (auto& a : axes) a = a < 0 ? a + int64_t(s.size()) : a;
  Shape ks = s;
  int64_t count = 1;
  for (int64_t a : axes) count *= s[size_t(a)], ks[size_t(a)] = 1;
  std::vector<double> acc(size_t(numel(ks)), c.init);
  for (int64_t i = 0; i < numel(s); ++i) {
    Idx idx = test::unravel(s, i);
    for (int64_t a : axes) idx[size_t(a)] = 0;
    double& r = acc[size_t(test::ravel(ks, idx))];
    r = c.combine(r, d[size_t(i)]);
  }
  if (c.mean)
    for (auto& r : acc) r /= double(count);
  return acc;
}

Shape reduced_shape(const Shape& s, Idx axes, bool keepdim) {
  if (axes.empty())
    for (size_t i = 0; i < s.size(); ++i) axes.push_back(int64_t(i));
  for (auto& a : axes) a = a < 0 ? a + int64_t(s.size()) : a;
  Shape out;
  for (size_t i = 0; i < s.size(); ++i) {
    bool red = std::find(axes.begin(), axes.end(), int64_t(i)) != axes.end();
    if (!red)
      out.push_back(s[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

TEST_P(Reduce, OverAxesSets) {
  const ReduceCase& c = GetParam();
  Shape s = {3, 5, 7};
  Tensor x = input(s, c.lo, c.hi);
  for (const Idx& axes : std::vector<Idx>{{0}, {1}, {2}, {-1}, {0, 2}, {2, 0}, {1, 2}, {0, 1, 2}, {}}) {
    for (bool keep : {false, true}) {
      SCOPED_TRACE("axes=" + shape_str(axes) + (keep ? " keepdim" : ""));
      check(c.op(x, axes, keep), reduced_shape(s, axes, keep), ref_reduce(of(x), s, axes, c));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tensor, Reduce,
    ::testing::Values(ReduceCase{"sum", [](auto& x, Idx a, bool k) { return x.sum(a, k); }, 0, std::plus<double>(),
                                 false, 0.5f, 1.5f},
                      ReduceCase{"mean", [](auto& x, Idx a, bool k) { return x.mean(a, k); }, 0, std::plus<double>(),
                                 true, 0.5f, 1.5f},
                      ReduceCase{"prod", [](auto& x, Idx a, bool k) { return x.prod(a, k); }, 1,
                                 std::multiplies<double>(), false, 0.8f, 1.25f},
                      ReduceCase{"max", [](auto& x, Idx a, bool k) { return x.max(a, k); }, -INFINITY,
                                 [](double a, double b) { return std::max(a, b); }, false, -1, 1},
                      ReduceCase{"min", [](auto& x, Idx a, bool k) { return x.min(a, k); }, INFINITY,
                                 [](double a, double b) { return std::min(a, b); }, false, -1, 1}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(TensorTest, IntegerReductions) {
  std::vector<float> v = {3, -7, 12, 0, -1, 5, 8, -100, 2, 2, 6, -3, 1, 9, -4};
  Tensor x = int_weight({3, 5}, v, DType::I32);
  ReduceCase mx{"", {}, -INFINITY, [](double a, double b) { return std::max(a, b); }, false, 0, 0};
  ReduceCase mn{"", {}, INFINITY, [](double a, double b) { return std::min(a, b); }, false, 0, 0};
  ReduceCase sm{"", {}, 0, std::plus<double>(), false, 0, 0};
  check(x.max({1}), {3}, ref_reduce(v, {3, 5}, {1}, mx), kExact);
  check(x.min({0}), {5}, ref_reduce(v, {3, 5}, {0}, mn), kExact);
  check(x.sum({1}), {3}, ref_reduce(v, {3, 5}, {1}, sm), kExact);
  EXPECT_EQ(x.sum({1}).dtype(), DType::I32);
}

TEST_F(TensorTest, ArgMaxArgMinFirstOccurrence) {
  Shape s = {3, 5, 7};
  Tensor x = input_data(s, grid(numel(s), 0, 1));  // values in {0, 0.5, 1}: many ties
  for (bool is_max : {true, false}) {
    for (int64_t axis : {0, 1, 2, -1}) {
      for (bool keep : {false, true}) {
        SCOPED_TRACE(std::string(is_max ? "argmax" : "argmin") + " axis=" + std::to_string(axis) +
                     (keep ? " keepdim" : ""));
        int64_t ax = axis < 0 ? axis + 3 : axis;
        Shape ks = s;
        ks[size_t(ax)] = 1;
        std::vector<double> want = tabulate(ks, [&](const Idx& i) {
          Idx j = i;
          int64_t best = 0;
          for (j[size_t(ax)] = 0; j[size_t(ax)] < s[size_t(ax)]; ++j[size_t(ax)]) {
            Idx b = i;
            b[size_t(ax)] = best;
            double v = at(x, j), bv = at(x, b);
            if (is_max ? v > bv : v < bv) best = j[size_t(ax)];
          }
          return double(best);
        });
        Tensor r = is_max ? x.argmax(axis, keep) : x.argmin(axis, keep);
        EXPECT_EQ(r.dtype(), DType::I64);
        check(r, reduced_shape(s, {axis}, keep), want, kExact);
      }
    }
  }
}

// ---- movement -------------------------------------------------------------------------------
TEST_F(TensorTest, ReshapePermuteTranspose) {
  Tensor x = input({3, 5, 7});
  std::vector<double> flat(of(x).begin(), of(x).end());
  check(x.reshape({5, -1}), {5, 21}, flat, kExact);
  check(x.reshape({105}).reshape({7, 15}), {7, 15}, flat, kExact);
  check(x.permute({2, 0, 1}), {7, 3, 5}, tabulate({7, 3, 5}, [&](const Idx& i) { return at(x, {i[1], i[2], i[0]}); }),
        kExact);
  check(x.permute({-1, 1, 0}), {7, 5, 3}, tabulate({7, 5, 3}, [&](const Idx& i) { return at(x, {i[2], i[1], i[0]}); }),
        kExact);
  check(x.transpose(), {3, 7, 5}, tabulate({3, 7, 5}, [&](const Idx& i) { return at(x, {i[0], i[2], i[1]}); }), kExact);
  // Permute then reshape: the reshape must see the permuted order.
  Tensor pr = x.permute({1, 0, 2}).reshape({15, 7});
  check(pr, {15, 7}, tabulate({15, 7}, [&](const Idx& i) { return at(x, {i[0] % 3, i[0] / 3, i[1]}); }), kExact);
}

TEST_F(TensorTest, Expand) {
  Tensor x = input({3, 1, 5});
  check(x.expand({3, 7, 5}), {3, 7, 5}, tabulate({3, 7, 5}, [&](const Idx& i) { return at(x, i); }), kExact);
  check(x.expand({2, 3, 7, 5}), {2, 3, 7, 5}, tabulate({2, 3, 7, 5}, [&](const Idx& i) { return at(x, i); }), kExact);
  Tensor s = input_data({}, {2.5f});
  check(s.expand({3, 2}), {3, 2}, std::vector<double>(6, 2.5), kExact);
}

std::vector<double> ref_pad(const std::vector<float>& d, const Shape& s,
                            const std::vector<std::pair<int64_t, int64_t>>& p, double value, Shape& out) {
  out = s;
  for (size_t i = 0; i < s.size(); ++i) out[i] += p[i].first + p[i].second;
  return tabulate(out, [&](const Idx& o) {
    Idx in = o;
    for (size_t i = 0; i < s.size(); ++i) {
      in[i] -= p[i].first;
      if (in[i] < 0 || in[i] >= s[i]) return value;
    }
    return double(d[size_t(test::ravel(s, in))]);
  });
}

TEST_F(TensorTest, PadWithValuesAndCrops) {
  Tensor x = input({3, 5, 7});
  using P = std::vector<std::pair<int64_t, int64_t>>;
  for (auto [p, value] : {std::pair<P, double>{{{1, 2}, {0, 0}, {3, 1}}, 0.0},
                          {{{0, 1}, {2, 0}, {0, 0}}, 2.5},
                          {{{1, -1}, {-2, 1}, {0, -3}}, -1.5},
                          {{{-1, -1}, {0, 0}, {-6, 0}}, 7.0}}) {
    Shape out;
    std::vector<double> want = ref_pad(of(x), x.shape(), p, value, out);
    SCOPED_TRACE("pad to " + shape_str(out) + " value " + std::to_string(value));
    check(x.pad(p, value), out, want, kExact);
  }
}

TEST_F(TensorTest, ShrinkFlip) {
  Tensor x = input({3, 5, 7});
  check(x.shrink({{1, 3}, {0, 5}, {2, 6}}), {2, 5, 4},
        tabulate({2, 5, 4}, [&](const Idx& i) { return at(x, {i[0] + 1, i[1], i[2] + 2}); }), kExact);
  check(x.flip({0, 2}), {3, 5, 7}, tabulate({3, 5, 7}, [&](const Idx& i) { return at(x, {2 - i[0], i[1], 6 - i[2]}); }),
        kExact);
  check(x.flip({-2}), {3, 5, 7}, tabulate({3, 5, 7}, [&](const Idx& i) { return at(x, {i[0], 4 - i[1], i[2]}); }),
        kExact);
}

// ONNX Slice on one axis: the source positions it keeps.
Idx slice_positions(int64_t n, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += n;
  if (end < 0) end += n;
  Idx r;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, n), end = std::clamp<int64_t>(end, 0, n);
    for (int64_t i = start; i < end; i += step) r.push_back(i);
  } else {
    start = std::clamp<int64_t>(start, 0, n - 1), end = std::clamp<int64_t>(end, -1, n - 1);
    for (int64_t i = start; i > end; i += step) r.push_back(i);
  }
  return r;
}

struct SliceCase {
  Idx starts, ends, axes, steps;
};

TEST_F(TensorTest, SliceWithSteps) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  Shape s = {5, 7, 6};
  Tensor x = input(s);
  std::vector<SliceCase> cases = {
      {{1}, {6}, {1}, {2}},       // 1, 3, 5
      {{-1}, {kMin}, {1}, {-1}},  // full reverse
      {{5}, {1}, {1}, {-2}},      // 5, 3
      {{6}, {-8}, {1}, {-3}},     // 6, 3, 0
      {{0, 1, -1}, {5, 7, 0}, {0, 1, 2}, {3, 4, -2}},
      {{2}, {1000}, {2}, {1}},
      {{-3}, {-1}, {-1}, {1}},
      {{1, 2}, {4, 6}, {}, {}},     // axes and steps default
      {{0}, {7}, {1}, {10}},        // step larger than the axis
      {{kMax}, {kMin}, {0}, {-2}},  // 4, 2, 0
      {{4}, {0}, {2}, {-1}},        // 4, 3, 2, 1
      {{3}, {2}, {1}, {1}},         // empty
  };
  for (const SliceCase& c : cases) {
    SCOPED_TRACE("starts=" + shape_str(c.starts) + " ends=" + shape_str(c.ends) + " axes=" + shape_str(c.axes) +
                 " steps=" + shape_str(c.steps));
    std::vector<Idx> keep(3);
    for (int64_t a = 0; a < 3; ++a) keep[size_t(a)] = slice_positions(s[size_t(a)], 0, s[size_t(a)], 1);
    for (size_t i = 0; i < c.starts.size(); ++i) {
      int64_t a = c.axes.empty() ? int64_t(i) : (c.axes[i] + 3) % 3;
      keep[size_t(a)] = slice_positions(s[size_t(a)], c.starts[i], c.ends[i], c.steps.empty() ? 1 : c.steps[i]);
    }
    Shape out = {int64_t(keep[0].size()), int64_t(keep[1].size()), int64_t(keep[2].size())};
    check(x.slice(c.starts, c.ends, c.axes, c.steps), out,
          tabulate(out,
                   [&](const Idx& i) {
                     return at(x, {keep[0][size_t(i[0])], keep[1][size_t(i[1])], keep[2][size_t(i[2])]});
                   }),
          kExact);
  }
}

TEST_F(TensorTest, ConcatAndSplit) {
  Tensor a = input({3, 2, 4}), b = weight({3, 5, 4}), c = input({3, 1, 4});
  check(Tensor::cat({a, b, c}, 1), {3, 8, 4},
        tabulate({3, 8, 4},
                 [&](const Idx& i) {
                   if (i[1] < 2) return at(a, i);
                   if (i[1] < 7) return at(b, {i[0], i[1] - 2, i[2]});
                   return at(c, {i[0], 0, i[2]});
                 }),
        kExact);
  Tensor d = input({3, 2, 3});
  check(Tensor::cat({a, d}, -1), {3, 2, 7},
        tabulate({3, 2, 7}, [&](const Idx& i) { return i[2] < 4 ? at(a, i) : at(d, {i[0], i[1], i[2] - 4}); }), kExact);
  Tensor x = input({3, 5, 7});
  std::vector<Tensor> parts = x.split({2, 4, 1}, 2);
  ASSERT_EQ(parts.size(), 3u);
  int64_t off = 0;
  for (const Tensor& p : parts) {
    int64_t n = p.dim(2);
    check(p, {3, 5, n}, tabulate({3, 5, n}, [&](const Idx& i) { return at(x, {i[0], i[1], i[2] + off}); }), kExact);
    off += n;
  }
  EXPECT_EQ(off, 7);
  std::vector<Tensor> rows = x.split({1, 2}, 0);
  check(rows[1], {2, 5, 7}, tabulate({2, 5, 7}, [&](const Idx& i) { return at(x, {i[0] + 1, i[1], i[2]}); }), kExact);
  EXPECT_THROW(x.split({2, 2}, 2), Error);
}

TEST_F(TensorTest, GatherWithNegativeIndices) {
  Tensor x = input({5, 7});
  Tensor idx = int_weight({2, 3}, {0, -1, 3, 4, -5, 2});
  auto norm = [](double i, int64_t n) { return int64_t(i < 0 ? i + double(n) : i); };
  std::vector<float> iv = {0, -1, 3, 4, -5, 2};
  check(x.gather(idx, 0), {2, 3, 7},
        tabulate({2, 3, 7}, [&](const Idx& i) { return at(x, {norm(iv[size_t(i[0] * 3 + i[1])], 5), i[2]}); }), kExact);
  Tensor idx2 = int_weight({2}, {-7, 6}, DType::I32);
  check(x.gather(idx2, 1), {5, 2}, tabulate({5, 2}, [&](const Idx& i) { return at(x, {i[0], i[1] == 0 ? 0 : 6}); }),
        kExact);
  Tensor y = input({3, 5, 7});
  std::vector<float> jv = {4, -2, 0, 0};
  Tensor idx3 = int_weight({4}, jv);
  check(y.gather(idx3, 1), {3, 4, 7},
        tabulate({3, 4, 7}, [&](const Idx& i) { return at(y, {i[0], norm(jv[size_t(i[1])], 5), i[2]}); }), kExact);
  Tensor scalar_idx = int_weight({}, {-1});
  check(y.gather(scalar_idx, -1), {3, 5}, tabulate({3, 5}, [&](const Idx& i) { return at(y, {i[0], i[1], 6}); }),
        kExact);
}

TEST_F(TensorTest, Repeat) {
  Tensor x = input({2, 3, 1});
  check(x.repeat({3, 1, 4}), {6, 3, 4}, tabulate({6, 3, 4}, [&](const Idx& i) { return at(x, {i[0] % 2, i[1], 0}); }),
        kExact);
  check(x.repeat({1, 2, 1}), {2, 6, 1}, tabulate({2, 6, 1}, [&](const Idx& i) { return at(x, {i[0], i[1] % 3, 0}); }),
        kExact);
}

TEST_F(TensorTest, SqueezeUnsqueezeFlatten) {
  Tensor x = input({3, 1, 5, 1});
  std::vector<double> flat(of(x).begin(), of(x).end());
  struct ShapeCase {
    Tensor t;
    Shape want;
  };
  for (const auto& [t, want] : std::vector<ShapeCase>{
           {x.squeeze({}), {3, 5}},
           {x.squeeze({1}), {3, 5, 1}},
           {x.squeeze({-1, 1}), {3, 5}},
           {x.squeeze({}).unsqueeze({0, 3}), {1, 3, 5, 1}},
           {x.squeeze({}).unsqueeze({-1}), {3, 5, 1}},
           {x.squeeze({}).unsqueeze({1, -1}), {3, 1, 5, 1}},
           {x.flatten(), {3, 5}},
           {x.flatten(0), {1, 15}},
           {x.flatten(3), {15, 1}},
           {x.flatten(4), {15, 1}},
           {x.flatten(-2), {3, 5}},
           {x.contiguous(), {3, 1, 5, 1}},
       }) {
    SCOPED_TRACE(shape_str(want));
    check(t, want, flat, kExact);
  }
}

TEST_F(TensorTest, FullArange) {
  check(Tensor::full(g, {2, 3}, 1.25, DType::F32), {2, 3}, std::vector<double>(6, 1.25), kExact);
  check(Tensor::arange(g, 7), {7}, {0, 1, 2, 3, 4, 5, 6}, kExact);
  check(Tensor::arange(g, 5, DType::F32) * 0.5, {5}, {0, 0.5, 1, 1.5, 2}, kExact);
}

// ---- matmul ---------------------------------------------------------------------------------
struct MatmulCase {
  Shape a, b, out;
  bool b_weight;
};

void PrintTo(const MatmulCase& c, std::ostream* os) { *os << shape_str(c.a) << " @ " << shape_str(c.b); }

class Matmul : public TensorTest, public ::testing::WithParamInterface<MatmulCase> {};

TEST_P(Matmul, MatchesNumpy) {
  const MatmulCase& c = GetParam();
  Tensor a = input(c.a), b = c.b_weight ? weight(c.b) : input(c.b);
  // Promote 1-D operands, compute on [batch..., n, m], then drop the promoted dims.
  Shape as = c.a.size() == 1 ? Shape{1, c.a[0]} : c.a, bs = c.b.size() == 1 ? Shape{c.b[0], 1} : c.b;
  int64_t k = as.back();
  Shape batch = broadcast_shape(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2));
  Shape full = batch;
  full.push_back(as[as.size() - 2]);
  full.push_back(bs.back());
  std::vector<double> want = tabulate(full, [&](const Idx& i) {
    double acc = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      Idx ia(i.begin(), i.end() - 2), ib = ia;
      ia.push_back(i[i.size() - 2]), ia.push_back(kk);
      ib.push_back(kk), ib.push_back(i.back());
      acc += bcast_at(of(a), as, ia) * bcast_at(of(b), bs, ib);
    }
    return acc;
  });
  check(a.matmul(b), c.out, want, {1e-5, 1e-6});
}

INSTANTIATE_TEST_SUITE_P(
    Tensor, Matmul,
    ::testing::Values(MatmulCase{{3, 5}, {5, 7}, {3, 7}, false}, MatmulCase{{3, 5}, {5, 7}, {3, 7}, true},
                      MatmulCase{{2, 1, 3, 5}, {4, 5, 7}, {2, 4, 3, 7}, true},
                      MatmulCase{{4, 3, 5}, {5, 7}, {4, 3, 7}, false}, MatmulCase{{3, 5}, {2, 5, 7}, {2, 3, 7}, false},
                      MatmulCase{{5}, {5, 7}, {7}, true}, MatmulCase{{3, 5}, {5}, {3}, false},
                      MatmulCase{{5}, {5}, {}, false}, MatmulCase{{2, 3, 5}, {5}, {2, 3}, true},
                      MatmulCase{{5}, {2, 5, 7}, {2, 7}, false}, MatmulCase{{1, 1}, {1, 3}, {1, 3}, false}),
    [](const auto& info) {
      std::string n = shape_str(info.param.a) + "x" + shape_str(info.param.b) + (info.param.b_weight ? "w" : "");
      std::string r;
      for (char ch : n) r += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return r;
    });

// ---- convolution ----------------------------------------------------------------------------
// Tensor::pool (used by conv and the pools) shrinks each repeated window row to out*stride
// elements, but the row only has in+dilation of them when the stride exceeds the window span.

struct ConvCase {
  const char* name;
  int64_t n, cin, h, w, cout, kh, kw;
  Idx strides, pads, dilations;  // pads: top, left, bottom, right
  int64_t groups;
  bool bias;
};

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

class Conv : public TensorTest, public ::testing::WithParamInterface<ConvCase> {
 protected:
  // The naive 7-loop convolution (batch, out channel, out y, out x, in channel, kernel y, kernel x).
  static std::vector<double> reference(const ConvCase& c, const std::vector<float>& x, const std::vector<float>& w,
                                       const std::vector<float>* b, Shape& out) {
    int64_t oh = (c.h + c.pads[0] + c.pads[2] - c.dilations[0] * (c.kh - 1) - 1) / c.strides[0] + 1;
    int64_t ow = (c.w + c.pads[1] + c.pads[3] - c.dilations[1] * (c.kw - 1) - 1) / c.strides[1] + 1;
    out = {c.n, c.cout, oh, ow};
    int64_t cin_g = c.cin / c.groups, cout_g = c.cout / c.groups;
    std::vector<double> r(size_t(numel(out)));
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t co = 0; co < c.cout; ++co)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t xo = 0; xo < ow; ++xo) {
            double acc = b ? (*b)[size_t(co)] : 0;
            for (int64_t ci = 0; ci < cin_g; ++ci)
              for (int64_t ky = 0; ky < c.kh; ++ky)
                for (int64_t kx = 0; kx < c.kw; ++kx) {
                  int64_t iy = y * c.strides[0] - c.pads[0] + ky * c.dilations[0];
                  int64_t ix = xo * c.strides[1] - c.pads[1] + kx * c.dilations[1];
                  if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                  int64_t cch = co / cout_g * cin_g + ci;
                  acc += x[size_t(((n * c.cin + cch) * c.h + iy) * c.w + ix)] *
                         w[size_t(((co * cin_g + ci) * c.kh + ky) * c.kw + kx)];
                }
            r[size_t(((n * c.cout + co) * oh + y) * ow + xo)] = acc;
          }
    return r;
  }
};

TEST_P(Conv, MatchesNaiveLoops) {
  const ConvCase& c = GetParam();
  bool one_d = c.h == 1 && c.kh == 1;  // run as a conv1d over [N, C, W]
  Shape xs = {c.n, c.cin, c.h, c.w}, ws = {c.cout, c.cin / c.groups, c.kh, c.kw};
  if (one_d) xs.erase(xs.begin() + 2), ws.erase(ws.begin() + 2);
  Tensor x = input(xs), w = weight(ws);
  std::optional<Tensor> b;
  if (c.bias) b = weight({c.cout});
  Shape out;
  std::vector<double> want = reference(c, of(x), of(w), c.bias ? &of(*b) : nullptr, out);
  Tensor y = one_d ? x.conv(w, b, {c.strides[1]}, {c.pads[1], c.pads[3]}, {c.dilations[1]}, c.groups)
                   : x.conv(w, b, c.strides, c.pads, c.dilations, c.groups);
  if (one_d) out.erase(out.begin() + 2);
  check(y, out, want, {1e-5, 2e-6});
}

INSTANTIATE_TEST_SUITE_P(
    Tensor, Conv,
    ::testing::Values(ConvCase{"basic3x3", 1, 3, 7, 5, 4, 3, 3, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true},
                      ConvCase{"stride2_pad1", 2, 3, 7, 7, 5, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, false},
                      ConvCase{"asymmetric", 1, 2, 5, 7, 3, 3, 2, {1, 2}, {2, 0, 1, 1}, {1, 1}, 1, true},
                      ConvCase{"dilated", 1, 3, 9, 7, 2, 3, 3, {1, 1}, {0, 1, 0, 1}, {2, 3}, 1, false},
                      ConvCase{"groups2", 1, 4, 5, 5, 6, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, true},
                      ConvCase{"depthwise", 1, 3, 7, 7, 3, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 3, true},
                      ConvCase{"depthwise_x2", 2, 3, 5, 5, 6, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 3, false},
                      ConvCase{"everything", 2, 4, 7, 6, 4, 3, 3, {2, 1}, {1, 0, 0, 2}, {1, 2}, 2, true},
                      ConvCase{"pointwise_stride2", 1, 3, 5, 5, 4, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, true},
                      ConvCase{"pointwise_stride3", 1, 2, 4, 4, 3, 1, 1, {3, 3}, {0, 0, 0, 0}, {1, 1}, 1, false},
                      ConvCase{"stride_above_kernel", 1, 2, 8, 8, 3, 2, 2, {5, 5}, {0, 0, 0, 0}, {1, 1}, 1, false},
                      // h = kh = 1: run as conv1d.
                      ConvCase{"conv1d", 1, 3, 1, 11, 4, 1, 3, {1, 2}, {0, 1, 0, 2}, {1, 2}, 1, true},
                      ConvCase{"conv1d_depthwise", 2, 4, 1, 9, 4, 1, 3, {1, 1}, {0, 1, 0, 1}, {1, 1}, 4, false}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- pooling --------------------------------------------------------------------------------
struct PoolCase {
  const char* name;
  Shape in;           // N, C, H, W
  Idx k, s, pads, d;  // pads: top, left, bottom, right
  bool ceil_mode;
};

void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.name; }

// PyTorch/ONNX output size, with the rule that the last window must start inside input or begin pad.
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, bool ceil_mode) {
  int64_t span = d * (k - 1) + 1, num = in + pb + pe - span;
  int64_t out = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;
  return out;
}

class Pool : public TensorTest, public ::testing::WithParamInterface<PoolCase> {
 protected:
  Shape out_shape(const PoolCase& c) {
    return {c.in[0], c.in[1], pool_out(c.in[2], c.k[0], c.s[0], c.pads[0], c.pads[2], c.d[0], c.ceil_mode),
            pool_out(c.in[3], c.k[1], c.s[1], c.pads[1], c.pads[3], c.d[1], c.ceil_mode)};
  }
};

class MaxPool : public Pool {};
class AvgPool : public Pool {};

TEST_P(MaxPool, MatchesReference) {
  const PoolCase& c = GetParam();
  Tensor x = input(c.in);
  Shape out = out_shape(c);
  std::vector<double> want = tabulate(out, [&](const Idx& o) {
    double m = -INFINITY;
    for (int64_t ky = 0; ky < c.k[0]; ++ky)
      for (int64_t kx = 0; kx < c.k[1]; ++kx) {
        int64_t iy = o[2] * c.s[0] - c.pads[0] + ky * c.d[0], ix = o[3] * c.s[1] - c.pads[1] + kx * c.d[1];
        if (iy >= 0 && iy < c.in[2] && ix >= 0 && ix < c.in[3]) m = std::max(m, at(x, {o[0], o[1], iy, ix}));
      }
    return m;
  });
  check(x.max_pool(c.k, c.s, c.pads, c.d, c.ceil_mode), out, want, kExact);
}

TEST_P(AvgPool, MatchesReferenceWithAndWithoutPads) {
  const PoolCase& c = GetParam();
  Tensor x = input(c.in);
  Shape out = out_shape(c);
  for (bool include_pad : {false, true}) {
    SCOPED_TRACE(include_pad ? "count_include_pad" : "exclude pad");
    std::vector<double> want = tabulate(out, [&](const Idx& o) {
      // PyTorch: the window is cut at the end of the (user-)padded input; pads count if asked.
      int64_t y0 = o[2] * c.s[0] - c.pads[0], x0 = o[3] * c.s[1] - c.pads[1];
      int64_t y1 = std::min(y0 + c.k[0], c.in[2] + c.pads[2]), x1 = std::min(x0 + c.k[1], c.in[3] + c.pads[3]);
      double padded_count = double((y1 - y0) * (x1 - x0));
      y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
      y1 = std::min(y1, c.in[2]), x1 = std::min(x1, c.in[3]);
      double sum = 0;
      for (int64_t iy = y0; iy < y1; ++iy)
        for (int64_t ix = x0; ix < x1; ++ix) sum += at(x, {o[0], o[1], iy, ix});
      return sum / (include_pad ? padded_count : double((y1 - y0) * (x1 - x0)));
    });
    check(x.avg_pool(c.k, c.s, c.pads, include_pad, c.ceil_mode), out, want, {1e-5, 1e-6});
  }
}

const PoolCase kPoolCases[] = {
    {"k3s2p1", {1, 2, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
    {"k2s2_ceil", {1, 2, 7, 5}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},
    {"k2s2_floor", {1, 2, 7, 5}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},
    {"k3s2p1_ceil", {2, 1, 6, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true},
    {"rect_asym_ceil", {2, 3, 6, 5}, {3, 2}, {2, 1}, {1, 0, 0, 1}, {1, 1}, true},
    {"k3s1", {1, 3, 5, 7}, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
    {"stride_above_kernel", {1, 1, 8, 8}, {2, 2}, {5, 5}, {0, 0, 0, 0}, {1, 1}, false},
    {"stride_above_kernel_fits", {1, 2, 8, 7}, {2, 2}, {3, 2}, {0, 0, 0, 0}, {1, 1}, false},
};
const PoolCase kDilatedPoolCases[] = {
    // max_pool only: avg_pool has no dilation
    {"dilated", {1, 1, 7, 7}, {3, 3}, {1, 1}, {0, 0, 0, 0}, {2, 2}, false},
    {"dilated_ceil", {1, 2, 8, 7}, {2, 3}, {2, 2}, {1, 1, 1, 1}, {2, 1}, true},
};
auto pool_name = [](const auto& info) { return std::string(info.param.name); };
INSTANTIATE_TEST_SUITE_P(Tensor, MaxPool, ::testing::ValuesIn(kPoolCases), pool_name);
INSTANTIATE_TEST_SUITE_P(Dilated, MaxPool, ::testing::ValuesIn(kDilatedPoolCases), pool_name);
INSTANTIATE_TEST_SUITE_P(Tensor, AvgPool, ::testing::ValuesIn(kPoolCases), pool_name);

// ---- normalisation --------------------------------------------------------------------------
TEST_F(TensorTest, SoftmaxAndLogSoftmax) {
  Shape s = {3, 5, 7};
  Tensor x = input(s, -4, 4);
  for (int64_t axis : {0, 1, 2, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    int64_t ax = axis < 0 ? axis + 3 : axis;
    auto lse = [&](const Idx& i) {  // log-sum-exp along the axis through i
      Idx j = i;
      double m = -INFINITY, sum = 0;
      for (j[size_t(ax)] = 0; j[size_t(ax)] < s[size_t(ax)]; ++j[size_t(ax)]) m = std::max(m, at(x, j));
      for (j[size_t(ax)] = 0; j[size_t(ax)] < s[size_t(ax)]; ++j[size_t(ax)]) sum += std::exp(at(x, j) - m);
      return m + std::log(sum);
    };
    check(x.softmax(axis), s, tabulate(s, [&](const Idx& i) { return std::exp(at(x, i) - lse(i)); }), kTrans);
    check(x.log_softmax(axis), s, tabulate(s, [&](const Idx& i) { return at(x, i) - lse(i); }), kTrans);
  }
}

TEST_F(TensorTest, LayerNorm) {
  Shape s = {3, 5, 7};
  Tensor x = input(s, -2, 3);
  for (const Idx& axes : std::vector<Idx>{{-1}, {1, 2}}) {
    SCOPED_TRACE("axes " + shape_str(axes));
    Shape ps(s.end() - long(axes.size()), s.end());
    Tensor scale = weight(ps), bias = weight(ps);
    int64_t inner = numel(ps);
    std::vector<double> want(size_t(numel(s)));
    for (int64_t row = 0; row < numel(s) / inner; ++row) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < inner; ++j) mean += of(x)[size_t(row * inner + j)];
      mean /= double(inner);
      for (int64_t j = 0; j < inner; ++j) var += std::pow(of(x)[size_t(row * inner + j)] - mean, 2);
      var /= double(inner);
      for (int64_t j = 0; j < inner; ++j)
        want[size_t(row * inner + j)] =
            (of(x)[size_t(row * inner + j)] - mean) / std::sqrt(var + 1e-5) * of(scale)[size_t(j)] +
            of(bias)[size_t(j)];
    }
    check(x.layer_norm(axes, scale, bias, 1e-5), s, want, kTrans);
  }
  // Without scale and bias.
  std::vector<double> want = tabulate(s, [&](const Idx& i) {
    double mean = 0, var = 0;
    Idx j = i;
    for (j[2] = 0; j[2] < 7; ++j[2]) mean += at(x, j) / 7;
    for (j[2] = 0; j[2] < 7; ++j[2]) var += std::pow(at(x, j) - mean, 2) / 7;
    return (at(x, i) - mean) / std::sqrt(var + 1e-3);
  });
  check(x.layer_norm({-1}, std::nullopt, std::nullopt, 1e-3), s, want, kTrans);
}

TEST_F(TensorTest, BatchNorm) {
  Shape s = {2, 3, 5, 5};
  Tensor x = input(s, -2, 2);
  Tensor scale = weight({3}), bias = weight({3}), mean = weight({3}), var = weight({3}, 0.5f, 2);
  check(x.batch_norm(scale, bias, mean, var, 1e-5), s,
        tabulate(s,
                 [&](const Idx& i) {
                   size_t c = size_t(i[1]);
                   return (at(x, i) - of(mean)[c]) / std::sqrt(of(var)[c] + 1e-5) * of(scale)[c] + of(bias)[c];
                 }),
        kTrans);
}

}  // namespace
}  // namespace tgc
