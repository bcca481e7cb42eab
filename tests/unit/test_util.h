// Shared helpers of the unit tests: host data in and out, row-major index arithmetic for the
// reference loops, and element-wise comparison with a relative + absolute tolerance.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/interpret.h"
#include "ir/tensor.h"

namespace tgc::test {

inline HostTensor host(const Shape& s, const std::vector<float>& v, DType t = DType::F32) {
  HostTensor h(t, s);
  EXPECT_EQ(int64_t(v.size()), h.numel()) << "host data does not fit " << shape_str(s);
  for (int64_t i = 0; i < h.numel() && i < int64_t(v.size()); ++i) h.set(i, v[size_t(i)]);
  return h;
}

inline std::vector<double> values(const HostTensor& h) {
  std::vector<double> r(size_t(h.numel()));
  for (int64_t i = 0; i < h.numel(); ++i) r[size_t(i)] = h.get(i);
  return r;
}

inline std::vector<float> random_floats(std::mt19937& rng, int64_t n, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

// ---- row-major index helpers for reference loops -------------------------------------------
inline std::vector<int64_t> unravel(const Shape& s, int64_t lin) {
  std::vector<int64_t> idx(s.size());
  for (size_t i = s.size(); i-- > 0;) idx[i] = lin % s[i], lin /= s[i];
  return idx;
}
inline int64_t ravel(const Shape& s, const std::vector<int64_t>& idx) {
  int64_t lin = 0;
  for (size_t i = 0; i < s.size(); ++i) lin = lin * s[i] + idx[i];
  return lin;
}
// Element of `d` (shape `s`) that numpy broadcasting reads at output index `out_idx`.
inline double bcast_at(const std::vector<float>& d, const Shape& s, const std::vector<int64_t>& out_idx) {
  size_t off = out_idx.size() - s.size();
  int64_t lin = 0;
  for (size_t i = 0; i < s.size(); ++i) lin = lin * s[i] + (s[i] == 1 ? 0 : out_idx[off + i]);
  return d[size_t(lin)];
}
// Reference result of shape `s`: f(index) for every index in row-major order.
inline std::vector<double> tabulate(const Shape& s, const std::function<double(const std::vector<int64_t>&)>& f) {
  std::vector<double> r(size_t(numel(s)));
  for (int64_t i = 0; i < numel(s); ++i) r[size_t(i)] = f(unravel(s, i));
  return r;
}

// ---- comparison ----------------------------------------------------------------------------
struct Tol {
  double rel = 1e-5, abs = 0;
};
inline constexpr Tol kExact{0, 0};
inline constexpr Tol kTranscendental{1e-5, 2e-6};

inline ::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& want, Tol tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != expected " << want.size();
  int bad = 0;
  std::ostringstream msg;
  msg.precision(10);
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i];
    bool ok = (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= tol.abs + tol.rel * std::fabs(w);
    if (!ok && bad++ < 5) msg << "\n  [" << i << "] got " << g << ", expected " << w;
  }
  if (!bad) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ:" << msg.str();
}

// One graph plus the data fed to its inputs, kept for the reference loops.
struct Env {
  Graph g;
  std::map<int64_t, HostTensor> feeds;
  std::map<int64_t, std::vector<float>> data;  // every input and f32 weight, by buffer id
  std::mt19937 rng{1234};

  Tensor input_data(const Shape& s, const std::vector<float>& v) {
    Tensor t = Tensor::input(g, "in" + std::to_string(g.num_buffers()), DType::F32, s);
    feeds[t.uop()->ival()] = host(s, v);
    data[t.uop()->ival()] = v;
    return t;
  }
  // Random uniform data in [lo, hi).
  Tensor input(const Shape& s, float lo = -1, float hi = 1) {
    return input_data(s, random_floats(rng, numel(s), lo, hi));
  }
  Tensor weight_data(const Shape& s, const std::vector<float>& v) {
    Tensor t = Tensor::weight(g, "w" + std::to_string(g.num_buffers()), host(s, v));
    data[t.uop()->ival()] = v;
    return t;
  }
  Tensor weight(const Shape& s, float lo = -1, float hi = 1) {
    return weight_data(s, random_floats(rng, numel(s), lo, hi));
  }
  Tensor int_weight(const Shape& s, const std::vector<float>& v, DType t = DType::I64) {
    return Tensor::weight(g, "i" + std::to_string(g.num_buffers()), host(s, v, t));
  }
  // Data of an input or weight made above.
  const std::vector<float>& of(const Tensor& t) const { return data.at(t.uop()->ival()); }

  std::vector<HostTensor> run(const std::vector<Tensor>& outs) const {
    std::vector<const UOp*> roots;
    for (const Tensor& t : outs) roots.push_back(t.uop());
    return interpret(g, roots, feeds);
  }
  std::vector<double> eval(const Tensor& t) const { return values(run({t})[0]); }
};

}  // namespace tgc::test
