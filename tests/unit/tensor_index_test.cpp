// Indexing compositions of the Tensor API (ir/tensor_index.cpp) and transposed convolution,
// evaluated by the reference interpreter, against plain C++ loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ir/error.h"
#include "test_util.h"

namespace tgc {
namespace {

using test::tabulate;
using test::Tol;
using Idx = std::vector<int64_t>;
constexpr Tol kExact = test::kExact;

class IndexTest : public ::testing::Test, protected test::Env {
 protected:
  void check(const Tensor& t, const Shape& shape, const std::vector<double>& want, Tol tol = kExact) {
    ASSERT_EQ(t.shape(), shape);
    EXPECT_TRUE(test::all_close(eval(t), want, tol));
  }
  double at(const Tensor& x, const Idx& idx) const { return test::bcast_at(of(x), x.shape(), idx); }
  bool has_reduce(const Tensor& t) const {
    for (const UOp* u : toposort({t.uop()}))
      if (u->op == Op::Reduce) return true;
    return false;
  }
};

// ---- take: compile-time gathers --------------------------------------------------------------
TEST_F(IndexTest, TakeUsesMovementOpsForRegularPatterns) {
  Tensor x = input({3, 9, 5});
  struct Case {
    const char* name;
    Idx idx;
    bool movement_only;
  };
  std::vector<Case> cases = {
      {"identity", {0, 1, 2, 3, 4, 5, 6, 7, 8}, true},
      {"strided", {1, 3, 5, 7}, true},
      {"reversed", {8, 7, 6, 5, 4, 3, 2, 1, 0}, true},
      {"reversed_strided", {8, 5, 2}, true},
      {"repeat", {4, 4, 4, 4}, true},
      {"upsample_x2", {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8}, true},
      {"upsample_x1.5", {0, 0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8, 8}, true},
      {"clamped_ends", {0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 8}, true},
      {"downsample_1.5", {0, 1, 3, 4, 6, 7}, true},
      {"negative", {-1, -2, -3}, true},
      {"irregular", {3, 1, 4, 1, 5, 0, 2, 6}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor t = x.take(1, c.idx);
    int64_t n = int64_t(c.idx.size());
    check(t, {3, n, 5}, tabulate({3, n, 5}, [&](const Idx& i) {
            int64_t k = c.idx[size_t(i[1])];
            return at(x, {i[0], k < 0 ? k + 9 : k, i[2]});
          }));
    EXPECT_EQ(has_reduce(t), !c.movement_only);
  }
  EXPECT_THROW(x.take(1, {9}), Error);
  EXPECT_THROW(x.take(1, {-10}), Error);
  check(x.take(-1, {}), {3, 9, 0}, {});
}

// ---- padding modes ---------------------------------------------------------------------------
TEST_F(IndexTest, PadReflectEdgeWrap) {
  Tensor x = input({3, 4});
  using M = Tensor::PadMode;
  auto reflect = [](int64_t i, int64_t n) {
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
    return i;
  };
  auto edge = [](int64_t i, int64_t n) { return std::clamp<int64_t>(i, 0, n - 1); };
  auto wrap = [](int64_t i, int64_t n) { return ((i % n) + n) % n; };
  struct Case {
    M mode;
    std::vector<std::pair<int64_t, int64_t>> p;
  };
  for (const Case& c : std::vector<Case>{{M::Reflect, {{2, 1}, {3, 2}}},
                                         {M::Edge, {{0, 3}, {5, 1}}},
                                         {M::Wrap, {{1, 2}, {6, 9}}},
                                         {M::Reflect, {{-1, 1}, {1, -2}}},
                                         {M::Edge, {{1, -1}, {-1, 2}}}}) {
    int64_t rows = 3 + c.p[0].first + c.p[0].second, cols = 4 + c.p[1].first + c.p[1].second;
    // Negative pads crop first; the positive parts then extend the cropped tensor.
    int64_t r0 = std::max<int64_t>(0, -c.p[0].first), c0 = std::max<int64_t>(0, -c.p[1].first);
    int64_t rn = 3 - r0 - std::max<int64_t>(0, -c.p[0].second), cn = 4 - c0 - std::max<int64_t>(0, -c.p[1].second);
    int64_t rb = std::max<int64_t>(0, c.p[0].first), cb = std::max<int64_t>(0, c.p[1].first);
    auto f = c.mode == M::Reflect ? +reflect : c.mode == M::Edge ? +edge : +wrap;
    check(x.pad(c.p, c.mode), {rows, cols},
          tabulate({rows, cols}, [&](const Idx& i) { return at(x, {r0 + f(i[0] - rb, rn), c0 + f(i[1] - cb, cn)}); }));
  }
  EXPECT_THROW(x.pad({{0, 0}, {4, 0}}, M::Reflect), Error);
}

// ---- data-dependent gathers ------------------------------------------------------------------
TEST_F(IndexTest, GatherElements) {
  Tensor x = input({3, 5, 4});
  std::vector<float> iv = {0, 4, -1, 2, 3, 1, -5, 0, 2, 2, 4, 1, 0, 0, 3, -2, 1, 4, 2, 3};  // [2, 5, 2]
  Tensor idx = int_weight({2, 5, 2}, iv);
  check(x.gather_elements(idx, 1), {2, 5, 2}, tabulate({2, 5, 2}, [&](const Idx& i) {
          int64_t k = int64_t(iv[size_t(test::ravel({2, 5, 2}, i))]);
          return at(x, {i[0], k < 0 ? k + 5 : k, i[2]});
        }));
  std::vector<float> jv = {3, 0, 1, 2, 0, 0};
  Tensor idx2 = int_weight({1, 2, 3}, jv, DType::I32);
  check(x.gather_elements(idx2, -1), {1, 2, 3}, tabulate({1, 2, 3}, [&](const Idx& i) {
          return at(x, {i[0], i[1], int64_t(jv[size_t(test::ravel({1, 2, 3}, i))])});
        }));
  EXPECT_THROW(x.gather_elements(int_weight({3, 5}, std::vector<float>(15, 0)), 1), Error);
}

TEST_F(IndexTest, GatherND) {
  Tensor x = input({2, 3, 4});
  std::vector<float> iv = {0, 1, 1, 2, -1, 0};  // [3, 2]: pairs into the first two dims
  check(x.gather_nd(int_weight({3, 2}, iv), 0), {3, 4}, tabulate({3, 4}, [&](const Idx& i) {
          int64_t a = int64_t(iv[size_t(2 * i[0])]), b = int64_t(iv[size_t(2 * i[0] + 1)]);
          return at(x, {a < 0 ? a + 2 : a, b, i[1]});
        }));
  std::vector<float> jv = {2, 0, 1, 1};  // [2, 2, 1] with batch_dims 1: per batch, index dim 1
  check(x.gather_nd(int_weight({2, 2, 1}, jv), 1), {2, 2, 4},
        tabulate({2, 2, 4}, [&](const Idx& i) { return at(x, {i[0], int64_t(jv[size_t(2 * i[0] + i[1])]), i[2]}); }));
  std::vector<float> kv = {1, 2, 3, 0, 0, 1};  // full tuples: scalars out
  check(x.gather_nd(int_weight({2, 3}, kv), 0), {2}, {at(x, {1, 2, 3}), at(x, {0, 0, 1})});
}

// ---- scatters --------------------------------------------------------------------------------
TEST_F(IndexTest, ScatterElementsWithReductions) {
  Tensor x = input({3, 4});
  // Two rows of updates into axis 1; (0, 1) is hit twice, row 2 never.
  std::vector<float> iv = {1, 3, 1, 0, 2, -1};
  Tensor idx = int_weight({2, 3}, iv);
  Tensor up = input({2, 3});
  using R = Tensor::Reduction;
  for (R r : {R::None, R::Add, R::Mul, R::Max, R::Min}) {
    SCOPED_TRACE(int(r));
    std::vector<double> want(of(x).begin(), of(x).end());
    std::vector<bool> hit(want.size(), false);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        int64_t k = int64_t(iv[size_t(i * 3 + j)]);
        size_t pos = size_t(i * 4 + (k < 0 ? k + 4 : k));
        double u = of(up)[size_t(i * 3 + j)];
        double& w = want[pos];
        if (r == R::None)
          w = u;  // duplicates: the last update wins
        else if (r == R::Add)
          w += u;
        else if (r == R::Mul)
          w *= u;
        else if (r == R::Max)
          w = std::max(w, u);
        else
          w = std::min(w, u);
        hit[pos] = true;
      }
    EXPECT_TRUE(test::all_close(eval(x.scatter_elements(idx, up, 1, r)), want, {1e-6, 0}));
  }
}

TEST_F(IndexTest, ScatterND) {
  Tensor x = input({4, 3});
  std::vector<float> iv = {2, 0, -1};  // rows 2, 0 and 3
  Tensor up = input({3, 3});
  std::vector<double> want(of(x).begin(), of(x).end());
  for (int64_t j = 0; j < 3; ++j)
    for (int64_t c = 0; c < 3; ++c) {
      int64_t r = int64_t(iv[size_t(j)]);
      want[size_t((r < 0 ? r + 4 : r) * 3 + c)] = of(up)[size_t(j * 3 + c)];
    }
  check(x.scatter_nd(int_weight({3, 1}, iv), up, Tensor::Reduction::None), {4, 3}, want);
  // Every update on one row: x must still take part in max/min.
  std::vector<float> same = {1, 1};
  Tensor up_same = input({2, 3});
  for (auto r : {Tensor::Reduction::Max, Tensor::Reduction::Min}) {
    std::vector<double> w(of(x).begin(), of(x).end());
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t j = 0; j < 2; ++j) {
        double u = of(up_same)[size_t(j * 3 + c)];
        w[size_t(3 + c)] = r == Tensor::Reduction::Max ? std::max(w[size_t(3 + c)], u) : std::min(w[size_t(3 + c)], u);
      }
    check(x.scatter_nd(int_weight({2, 1}, same), up_same, r), {4, 3}, w);
  }
  // Element tuples with duplicates, accumulated.
  std::vector<float> jv = {1, 1, 1, 1, 3, 2};
  Tensor up2 = input({3});
  std::vector<double> want2(of(x).begin(), of(x).end());
  want2[4] += of(up2)[0] + of(up2)[1];
  want2[11] += of(up2)[2];
  check(x.scatter_nd(int_weight({3, 2}, jv), up2, Tensor::Reduction::Add), {4, 3}, want2, {1e-6, 0});
}

// ---- sorting and scans -----------------------------------------------------------------------
TEST_F(IndexTest, TopKWithTies) {
  std::vector<float> v = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9};  // [3, 5], ties inside rows
  Tensor x = input_data({3, 5}, v);
  for (bool largest : {true, false}) {
    auto [vals, ids] = x.topk(3, 1, largest);
    std::vector<double> want_v, want_i;
    for (int64_t r = 0; r < 3; ++r) {
      std::vector<int64_t> order(5);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        float va = v[size_t(r * 5 + a)], vb = v[size_t(r * 5 + b)];
        return largest ? va > vb : va < vb;
      });
      for (int64_t k = 0; k < 3; ++k)
        want_v.push_back(v[size_t(r * 5 + order[size_t(k)])]), want_i.push_back(double(order[size_t(k)]));
    }
    check(vals, {3, 3}, want_v);
    check(ids, {3, 3}, want_i);
    EXPECT_EQ(ids.dtype(), DType::I64);
  }
  auto [v0, i0] = x.topk(2, 0, true);
  check(i0, {2, 5}, {1, 2, 2, 2, 2, 2, 1, 1, 1, 0});
  EXPECT_THROW(x.topk(6, 1, true), Error);
}

TEST_F(IndexTest, CumSum) {
  Tensor x = input({3, 4, 2});
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(std::to_string(exclusive) + std::to_string(reverse));
      check(x.cumsum(1, exclusive, reverse), {3, 4, 2},
            tabulate({3, 4, 2},
                     [&](const Idx& i) {
                       double s = 0;
                       for (int64_t j = 0; j < 4; ++j) {
                         bool take = reverse ? (exclusive ? j > i[1] : j >= i[1]) : (exclusive ? j < i[1] : j <= i[1]);
                         if (take) s += at(x, {i[0], j, i[2]});
                       }
                       return s;
                     }),
            {1e-6, 1e-7});
    }
  Tensor n = int_weight({4}, {1, 2, 3, 4}, DType::I32);
  check(n.cumsum(0, false, false), {4}, {1, 3, 6, 10});
}

TEST_F(IndexTest, OneHotAndTrilu) {
  std::vector<float> iv = {0, 3, -1, 2};
  Tensor idx = int_weight({2, 2}, iv);
  Tensor off = Tensor::full(g, {}, -1, DType::F32), on = Tensor::full(g, {}, 5, DType::F32);
  for (int64_t axis : {-1, 0, 1}) {
    SCOPED_TRACE(axis);
    Tensor h = Tensor::one_hot(idx, 4, axis, off, on);
    int64_t a = axis < 0 ? 2 : axis;
    Shape s = {2, 2};
    s.insert(s.begin() + a, 4);
    check(h, s, tabulate(s, [&](const Idx& i) {
            Idx rest = i;
            int64_t d = rest[size_t(a)];
            rest.erase(rest.begin() + a);
            int64_t k = int64_t(iv[size_t(rest[0] * 2 + rest[1])]);
            return (k < 0 ? k + 4 : k) == d ? 5.0 : -1.0;
          }));
  }
  Tensor x = input({2, 3, 5});
  for (bool upper : {true, false})
    for (int64_t k : {-2, 0, 1, 4}) {
      SCOPED_TRACE(std::to_string(upper) + " " + std::to_string(k));
      check(x.trilu(k, upper), {2, 3, 5}, tabulate({2, 3, 5}, [&](const Idx& i) {
              bool keep = upper ? i[2] - i[1] >= k : i[2] - i[1] <= k;
              return keep ? at(x, i) : 0.0;
            }));
    }
}

// ---- max pooling with indices ----------------------------------------------------------------
TEST_F(IndexTest, MaxPoolWithIndices) {
  // Values on a coarse grid so that windows hold ties; the first maximum in window order wins.
  std::vector<float> v(2 * 3 * 5 * 6);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float((i * 7) % 5);
  Tensor x = input_data({2, 3, 5, 6}, v);
  Idx k = {3, 2}, s = {2, 2}, pads = {1, 0, 1, 1};
  auto [vals, ids] = x.max_pool_with_indices(k, s, pads, {1, 1}, false, false);
  Shape out = {2, 3, 3, 3};  // (5 + 2 - 3) / 2 + 1 rows, (6 + 1 - 2) / 2 + 1 columns
  std::vector<double> want_v, want_i;
  for (int64_t i = 0; i < numel(out); ++i) {
    Idx o = test::unravel(out, i);
    double best = -INFINITY;
    int64_t arg = -1;
    for (int64_t ky = 0; ky < k[0]; ++ky)
      for (int64_t kx = 0; kx < k[1]; ++kx) {
        int64_t iy = o[2] * s[0] - pads[0] + ky, ix = o[3] * s[1] - pads[1] + kx;
        if (iy < 0 || iy >= 5 || ix < 0 || ix >= 6) continue;
        int64_t lin = test::ravel({2, 3, 5, 6}, {o[0], o[1], iy, ix});
        if (v[size_t(lin)] > best) best = v[size_t(lin)], arg = lin;
      }
    want_v.push_back(best), want_i.push_back(double(arg));
  }
  check(vals, out, want_v);
  check(ids, out, want_i);
}

// ---- transposed convolution ------------------------------------------------------------------
struct ConvTCase {
  const char* name;
  int64_t n, cin, cout, groups;
  Idx in, k, strides, pads, dilations, out_pad;  // pads: all begins then all ends
};
void PrintTo(const ConvTCase& c, std::ostream* os) { *os << c.name; }

class ConvTranspose : public IndexTest, public ::testing::WithParamInterface<ConvTCase> {};

TEST_P(ConvTranspose, MatchesScatterLoops) {
  const ConvTCase& c = GetParam();
  size_t nsp = c.in.size();
  Shape xs = {c.n, c.cin}, ws = {c.cin, c.cout / c.groups}, out = {c.n, c.cout};
  xs.insert(xs.end(), c.in.begin(), c.in.end());
  ws.insert(ws.end(), c.k.begin(), c.k.end());
  for (size_t i = 0; i < nsp; ++i)
    out.push_back((c.in[i] - 1) * c.strides[i] + (c.k[i] - 1) * c.dilations[i] + 1 - c.pads[i] - c.pads[i + nsp] +
                  c.out_pad[i]);
  Tensor x = input(xs), w = weight(ws), b = weight({c.cout});
  // Each input element scatters x * w into the outputs it reaches.
  std::vector<double> want(size_t(numel(out)), 0);
  int64_t cin_g = c.cin / c.groups, cout_g = c.cout / c.groups;
  for (int64_t xi = 0; xi < numel(xs); ++xi) {
    Idx xix = test::unravel(xs, xi);
    int64_t g = xix[1] / cin_g;
    for (int64_t co = 0; co < cout_g; ++co)
      for (int64_t ki = 0; ki < numel(Shape(c.k)); ++ki) {
        Idx kk = test::unravel(Shape(c.k), ki), o = {xix[0], g * cout_g + co};
        bool inside = true;
        for (size_t d = 0; d < nsp; ++d) {
          int64_t p = xix[2 + d] * c.strides[d] + kk[d] * c.dilations[d] - c.pads[d];
          inside = inside && p >= 0 && p < out[2 + d];
          o.push_back(p);
        }
        if (!inside) continue;
        Idx wi = {xix[1], co};
        wi.insert(wi.end(), kk.begin(), kk.end());
        want[size_t(test::ravel(out, o))] += of(x)[size_t(xi)] * of(w)[size_t(test::ravel(ws, wi))];
      }
  }
  for (int64_t i = 0; i < numel(out); ++i) want[size_t(i)] += of(b)[size_t(test::unravel(out, i)[1])];
  check(x.conv_transpose(w, b, c.strides, c.pads, c.dilations, c.out_pad, c.groups), out, want, {1e-5, 2e-6});
}

INSTANTIATE_TEST_SUITE_P(
    Tensor, ConvTranspose,
    ::testing::Values(ConvTCase{"basic", 1, 2, 3, 1, {3, 4}, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, {0, 0}},
                      ConvTCase{"stride2_k2", 2, 3, 2, 1, {4, 3}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, {0, 0}},
                      ConvTCase{"stride_pads_outpad", 1, 2, 2, 1, {3, 3}, {3, 3}, {2, 3}, {1, 0, 1, 2}, {1, 1}, {1, 2}},
                      ConvTCase{"dilated", 1, 2, 2, 1, {3, 4}, {2, 3}, {1, 2}, {0, 1, 0, 0}, {2, 2}, {0, 1}},
                      ConvTCase{"groups", 1, 4, 6, 2, {3, 3}, {3, 2}, {2, 1}, {1, 1, 0, 0}, {1, 1}, {0, 0}},
                      ConvTCase{"conv1d", 2, 3, 4, 1, {5}, {4}, {3}, {1, 2}, {1}, {2}}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tgc
