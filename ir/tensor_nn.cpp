// Neural-network building blocks as compositions: matmul and convolution are broadcast
// multiplies followed by a sum; pooling is a sliding-window view followed by a reduce.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ir/error.h"
#include "ir/tensor.h"

namespace tgc {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::vector<int64_t> iota_from(int64_t start, int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

}  // namespace

Tensor Tensor::matmul(const Tensor& w) const {
  Tensor a = *this, b = w;
  if (a.ndim() == 0 || b.ndim() == 0) throw Error("matmul of a scalar");
  bool vec_a = a.ndim() == 1, vec_b = b.ndim() == 1;
  if (vec_a) a = a.reshape({1, a.dim(0)});
  if (vec_b) b = b.reshape({b.dim(0), 1});
  int64_t k = a.dim(-1);
  if (b.dim(-2) != k) throw Error("matmul: inner dims differ: " + shape_str(shape()) + " @ " + shape_str(w.shape()));
  // a: [..., n, 1, k] * b^T: [..., 1, m, k] -> sum over k.
  Shape as = a.shape(), bs = b.transpose().shape();
  as.insert(as.end() - 1, 1);
  bs.insert(bs.end() - 2, 1);
  Tensor prod = a.reshape(as) * b.transpose().reshape(bs);
  Tensor r = prod.sum({-1});
  if (vec_a) r = r.squeeze({-2});
  if (vec_b) r = r.squeeze({-1});
  return r;
}

Tensor Tensor::pool(const std::vector<int64_t>& k, const std::vector<int64_t>& s, const std::vector<int64_t>& d) const {
  // The view is one op to whoever needs its meaning rather than its index arithmetic.
  auto mark_window = [&](Tensor v, const std::vector<int64_t>& k_, const std::vector<int64_t>& s_,
                         const std::vector<int64_t>& d_) {
    g_->set_window(v.uop(), Graph::Window{uop(), k_, s_, d_});
    return v;
  };
  // tinygrad's sliding-window view: repeat the input so that every window becomes a regular
  // strided slice, then reshape and shrink; the simplifier turns the indices back into x[o*s+k*d].
  size_t nk = k.size();
  if (s.size() != nk || d.size() != nk || nk > size_t(ndim()))
    throw Error("pool: " + std::to_string(nk) + " kernel sizes, " + std::to_string(s.size()) + " strides and " +
                std::to_string(d.size()) + " dilations for an input of rank " + std::to_string(ndim()));
  for (size_t i = 0; i < nk; ++i)
    if (k[i] < 1 || s[i] < 1 || d[i] < 1)
      throw Error("pool: spatial axis " + std::to_string(i) + " has kernel size " + std::to_string(k[i]) + ", stride " +
                  std::to_string(s[i]) + " and dilation " + std::to_string(d[i]) + "; each must be at least 1");
  size_t lead = size_t(ndim()) - nk;
  Shape pre(shape().begin(), shape().begin() + long(lead));
  std::vector<int64_t> in(shape().begin() + long(lead), shape().end()), out(nk);
  for (size_t i = 0; i < nk; ++i) {
    out[i] = ceil_div(in[i] - d[i] * (k[i] - 1), s[i]);
    if (out[i] <= 0)
      throw Error("pool: window " + std::to_string(k[i]) + " larger than input " + std::to_string(in[i]));
  }
  auto keep_pre = [&](std::vector<std::pair<int64_t, int64_t>> rest) {
    std::vector<std::pair<int64_t, int64_t>> b;
    for (int64_t p : pre) b.push_back({0, p});
    b.insert(b.end(), rest.begin(), rest.end());
    return b;
  };
  bool overlapping = std::any_of(d.begin(), d.end(), [](int64_t v) { return v != 1; });
  for (size_t i = 0; i < nk; ++i) overlapping = overlapping || k[i] > s[i];
  if (!overlapping) {
    // Disjoint windows (k <= s, no dilation): pad or cut to out*s, split into (out, s), keep k.
    std::vector<std::pair<int64_t, int64_t>> p(lead, {0, 0}), b;
    Shape sh = pre;
    for (size_t i = 0; i < nk; ++i) {
      p.push_back({0, std::max<int64_t>(0, out[i] * s[i] - in[i])});
      b.push_back({0, out[i] * s[i]});
    }
    Tensor x = pad(p).shrink(keep_pre(b));
    for (size_t i = 0; i < nk; ++i) sh.push_back(out[i]), sh.push_back(s[i]);
    x = x.reshape(sh);
    b.clear();
    for (size_t i = 0; i < nk; ++i) b.push_back({0, out[i]}), b.push_back({0, k[i]});
    x = x.shrink(keep_pre(b));
    std::vector<int64_t> order = iota_from(0, int64_t(lead));
    for (size_t i = 0; i < nk; ++i) order.push_back(int64_t(lead + 2 * i));
    for (size_t i = 0; i < nk; ++i) order.push_back(int64_t(lead + 2 * i + 1));
    return mark_window(x.permute(order), k, s, d);
  }
  std::vector<int64_t> reps(lead, 1);
  for (size_t i = 0; i < nk; ++i) reps.push_back(ceil_div(k[i] * (in[i] + d[i]), in[i]));
  Tensor x = repeat(reps);
  std::vector<std::pair<int64_t, int64_t>> b;
  Shape sh = pre;
  for (size_t i = 0; i < nk; ++i)
    b.push_back({0, k[i] * (in[i] + d[i])}), sh.push_back(k[i]), sh.push_back(in[i] + d[i]);
  x = x.shrink(keep_pre(b)).reshape(sh);
  b.clear(), sh = pre;
  for (size_t i = 0; i < nk; ++i)
    b.push_back({0, k[i]}), b.push_back({0, out[i] * s[i]}), sh.push_back(k[i]), sh.push_back(out[i]),
        sh.push_back(s[i]);
  x = x.shrink(keep_pre(b)).reshape(sh);
  b.clear(), sh = pre;
  for (size_t i = 0; i < nk; ++i)
    b.push_back({0, k[i]}), b.push_back({0, out[i]}), b.push_back({0, 1}), sh.push_back(k[i]), sh.push_back(out[i]);
  x = x.shrink(keep_pre(b)).reshape(sh);
  std::vector<int64_t> order = iota_from(0, int64_t(lead));
  for (size_t i = 0; i < nk; ++i) order.push_back(int64_t(lead + 2 * i + 1));
  for (size_t i = 0; i < nk; ++i) order.push_back(int64_t(lead + 2 * i));
  return mark_window(x.permute(order), k, s, d);
}

Tensor Tensor::conv_products(const Tensor& w, const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                             const std::vector<int64_t>& dilations, int64_t groups, Op combine) const {
  int64_t nsp = w.ndim() - 2;
  if (nsp < 1 || ndim() != w.ndim())
    throw Error("conv: input " + shape_str(shape()) + " and weight " + shape_str(w.shape()) + " ranks do not match");
  int64_t bs = dim(0), cin = dim(1), cout = w.dim(0), cin_g = w.dim(1);
  if (groups <= 0 || cin != cin_g * groups || cout % groups)
    throw Error("conv: channels " + std::to_string(cin) + " do not match weight " + shape_str(w.shape()) +
                " with group " + std::to_string(groups));
  std::vector<int64_t> ks(w.shape().begin() + 2, w.shape().end());
  std::vector<std::pair<int64_t, int64_t>> p = {{0, 0}, {0, 0}};
  for (int64_t i = 0; i < nsp; ++i) p.push_back({pads[size_t(i)], pads[size_t(i + nsp)]});
  Tensor x = pad(p).pool(ks, strides, dilations);  // [bs, cin, *out, *k]
  Shape oyx(x.shape().begin() + 2, x.shape().begin() + 2 + nsp);
  int64_t rcout = cout / groups;
  // [bs, g, cin_g, 1, *out, *k] -> expand rcout -> [bs, g, rcout, *out, cin_g, *k]
  Shape s1 = {bs, groups, cin_g, 1};
  s1.insert(s1.end(), oyx.begin(), oyx.end());
  s1.insert(s1.end(), ks.begin(), ks.end());
  Shape s2 = s1;
  s2[3] = rcout;
  std::vector<int64_t> order = {0, 1, 3};
  for (int64_t i = 0; i < nsp; ++i) order.push_back(4 + i);
  order.push_back(2);
  for (int64_t i = 0; i < nsp; ++i) order.push_back(4 + nsp + i);
  x = x.reshape(s1).expand(s2).permute(order);
  Shape ws = {1, groups, rcout};
  ws.insert(ws.end(), size_t(nsp), 1);
  ws.push_back(cin_g);
  ws.insert(ws.end(), ks.begin(), ks.end());
  return combine == Op::Dot4 ? dot4(x, w.reshape(ws), full(graph(), {}, 0, DType::I32)) : x * w.reshape(ws);
}

Tensor Tensor::conv(const Tensor& w, const std::optional<Tensor>& bias, const std::vector<int64_t>& strides,
                    const std::vector<int64_t>& pads, const std::vector<int64_t>& dilations, int64_t groups,
                    Op combine) const {
  Tensor products = conv_products(w, strides, pads, dilations, groups, combine);
  int64_t nsp = w.ndim() - 2;
  std::vector<int64_t> red;
  for (int64_t i = 0; i <= nsp; ++i) red.push_back(-1 - i);
  Shape out = {dim(0), w.dim(0)};
  for (int64_t i = 0; i < nsp; ++i) out.push_back(products.dim(3 + i));
  Tensor r = products.sum(red).reshape(out);
  if (!bias) return r;
  Shape bshape = {1, w.dim(0)};
  bshape.insert(bshape.end(), size_t(nsp), 1);
  return r + bias->reshape(bshape);
}

namespace {
// Strided transposed convolution without inserting zeros: output position s*i + a (phase a)
// only meets the taps a, a+s, a+2s, ... of the kernel, so each phase is a small stride-1
// convolution with m = ceil(k/s) taps. All phases of all axes run as one convolution with
// Cout*prod(s) output channels; the phases are then interleaved (depth-to-space) and the
// ONNX pads / output_padding crop or extend the result. prod(s) times fewer multiply-adds than
// a convolution over the zero-stuffed input, and no stuffed copy.
Tensor conv_transpose_polyphase(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                                const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                                const std::vector<int64_t>& output_padding, int64_t groups) {
  int64_t nsp = w.ndim() - 2, cin = x.dim(1), cout_g = w.dim(1), bs = x.dim(0);
  Shape st(strides.begin(), strides.end()), taps, ks(w.shape().begin() + 2, w.shape().end());
  for (int64_t i = 0; i < nsp; ++i) taps.push_back(ceil_div(ks[size_t(i)], st[size_t(i)]));
  // w [Cin, Cout/g, *k] -> zero-extended to m*s taps -> [Cin, Cout/g, (m, s)...] with tap t = m-1-u.
  std::vector<std::pair<int64_t, int64_t>> wp = {{0, 0}, {0, 0}};
  Shape split = {cin, cout_g};
  std::vector<int64_t> flips;
  for (int64_t i = 0; i < nsp; ++i) {
    wp.push_back({0, taps[size_t(i)] * st[size_t(i)] - ks[size_t(i)]});
    split.push_back(taps[size_t(i)]), split.push_back(st[size_t(i)]);
    flips.push_back(2 + 2 * i);
  }
  Tensor wt = w.pad(wp).reshape(split).flip(flips);
  // -> [g, Cout/g, *s, Cin/g, *m] -> [Cout*prod(s), Cin/g, *m]
  Shape grouped = {groups, cin / groups, cout_g};
  for (int64_t i = 0; i < nsp; ++i) grouped.push_back(taps[size_t(i)]), grouped.push_back(st[size_t(i)]);
  std::vector<int64_t> order = {0, 2};
  for (int64_t i = 0; i < nsp; ++i) order.push_back(4 + 2 * i);
  order.push_back(1);
  for (int64_t i = 0; i < nsp; ++i) order.push_back(3 + 2 * i);
  int64_t phases = 1;
  for (int64_t s : st) phases *= s;
  Shape wshape = {groups * cout_g * phases, cin / groups};
  wshape.insert(wshape.end(), taps.begin(), taps.end());
  wt = wt.reshape(grouped).permute(order).reshape(wshape);
  std::vector<int64_t> conv_pads;  // m-1 zeros on both sides: every tap that meets the input
  for (int side = 0; side < 2; ++side)
    for (int64_t m : taps) conv_pads.push_back(m - 1);
  Tensor y = x.conv(wt, std::nullopt, std::vector<int64_t>(size_t(nsp), 1), conv_pads,
                    std::vector<int64_t>(size_t(nsp), 1), groups);
  // [N, Cout, *s, *L] -> [N, Cout, (L, s)...] -> [N, Cout, *(L*s)]
  int64_t cout = groups * cout_g;
  Shape phased = {bs, cout}, full = {bs, cout};
  phased.insert(phased.end(), st.begin(), st.end());
  std::vector<int64_t> interleave = {0, 1};
  for (int64_t i = 0; i < nsp; ++i) {
    int64_t len = y.dim(2 + i);
    phased.push_back(len), full.push_back(len * st[size_t(i)]);
    interleave.push_back(2 + nsp + i), interleave.push_back(2 + i);
  }
  // Stored before interleaving: read through the phase split, the convolution's loads would no
  // longer be contiguous along its output rows (no vector lanes for the CPU heuristic).
  y = y.contiguous().reshape(phased).permute(interleave).reshape(full);
  // The ONNX output: s*(n-1) + k + output_padding - pads, starting at pads_begin.
  std::vector<std::pair<int64_t, int64_t>> crop = {{0, 0}, {0, 0}};
  for (int64_t i = 0; i < nsp; ++i) {
    int64_t n = x.dim(2 + i), b = pads[size_t(i)], e = pads[size_t(i + nsp)];
    int64_t len = st[size_t(i)] * (n - 1) + ks[size_t(i)] + output_padding[size_t(i)] - b - e;
    crop.push_back({-b, b + len - full[size_t(2 + i)]});
  }
  y = y.pad(crop);
  if (!bias) return y;
  Shape bshape = {1, cout};
  bshape.insert(bshape.end(), size_t(nsp), 1);
  return y + bias->reshape(bshape);
}
}  // namespace

Tensor Tensor::conv_transpose(const Tensor& w, const std::optional<Tensor>& bias, const std::vector<int64_t>& strides,
                              const std::vector<int64_t>& pads, const std::vector<int64_t>& dilations,
                              const std::vector<int64_t>& output_padding, int64_t groups) const {
  // A stride-1 convolution of the input with zeros inserted between elements (stride - 1 per
  // gap), padded by the kernel span minus the requested pads, with the kernel flipped and its
  // in/out channel roles swapped.
  int64_t nsp = w.ndim() - 2;
  if (nsp < 1 || ndim() != w.ndim())
    throw Error("conv_transpose: input " + shape_str(shape()) + " and weight " + shape_str(w.shape()) +
                " ranks do not match");
  int64_t cin = dim(1), cout_g = w.dim(1);
  if (groups <= 0 || w.dim(0) != cin || cin % groups)
    throw Error("conv_transpose: channels " + std::to_string(cin) + " do not match weight " + shape_str(w.shape()) +
                " with group " + std::to_string(groups));
  bool strided = std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s > 1; });
  bool dilated = std::any_of(dilations.begin(), dilations.end(), [](int64_t d) { return d != 1; });
  if (strided && !dilated) return conv_transpose_polyphase(*this, w, bias, strides, pads, output_padding, groups);
  Tensor x = *this;
  std::vector<std::pair<int64_t, int64_t>> p = {{0, 0}, {0, 0}};
  for (int64_t i = 0; i < nsp; ++i) {
    int64_t ax = 2 + i, s = strides[size_t(i)], n = x.dim(ax), k = w.dim(ax), d = dilations[size_t(i)];
    if (s > 1 && n > 1) {
      Shape s1 = x.shape(), s3 = x.shape();
      s1.insert(s1.begin() + ax + 1, 1);
      s3[size_t(ax)] = n * s;
      std::vector<std::pair<int64_t, int64_t>> gap(s1.size(), {0, 0});
      gap[size_t(ax) + 1] = {0, s - 1};
      x = x.reshape(s1).pad(gap).reshape(s3).slice({0}, {(n - 1) * s + 1}, {ax}, {1});
    }
    int64_t span = (k - 1) * d;
    p.push_back({span - pads[size_t(i)], span - pads[size_t(i + nsp)] + output_padding[size_t(i)]});
  }
  x = x.pad(p);
  // [Cin, Cout/g, *k] -> [g, Cin/g, Cout/g, *k] -> [g, Cout/g, Cin/g, *k] -> [Cout, Cin/g, *k], flipped.
  Shape ks(w.shape().begin() + 2, w.shape().end());
  Shape wg = {groups, cin / groups, cout_g};
  wg.insert(wg.end(), ks.begin(), ks.end());
  std::vector<int64_t> order = {0, 2, 1};
  std::vector<int64_t> flips;
  for (int64_t i = 0; i < nsp; ++i) order.push_back(3 + i), flips.push_back(2 + i);
  Shape wf = {groups * cout_g, cin / groups};
  wf.insert(wf.end(), ks.begin(), ks.end());
  Tensor wt = w.reshape(wg).permute(order).reshape(wf).flip(flips);
  return x.conv(wt, bias, std::vector<int64_t>(size_t(nsp), 1), std::vector<int64_t>(size_t(2 * nsp), 0), dilations,
                groups);
}

Tensor Tensor::pad_min_value(const std::vector<std::pair<int64_t, int64_t>>& p) const {
  return pad(p, lowest_value(dtype()));
}

namespace {
// Pads for ceil_mode: extra end padding so the last partial window is kept.
std::vector<std::pair<int64_t, int64_t>> pool_pads(const Tensor& x, const std::vector<int64_t>& k,
                                                   const std::vector<int64_t>& s, const std::vector<int64_t>& pads,
                                                   const std::vector<int64_t>& d, bool ceil_mode) {
  size_t nk = k.size(), lead = size_t(x.ndim()) - nk;
  std::vector<std::pair<int64_t, int64_t>> p(lead, {0, 0});
  for (size_t i = 0; i < nk; ++i) {
    int64_t b = pads.empty() ? 0 : pads[i], e = pads.empty() ? 0 : pads[i + nk];
    if (ceil_mode) {
      int64_t in = x.shape()[lead + i] + b + e, span = d[i] * (k[i] - 1) + 1;
      int64_t out = (in - span + s[i] - 1) / s[i] + 1;
      // A window must start inside the input or the begin padding (ONNX/PyTorch rule).
      if ((out - 1) * s[i] >= x.shape()[lead + i] + b) out -= 1;
      e += std::max<int64_t>(0, (out - 1) * s[i] + span - in);
    }
    p.push_back({b, e});
  }
  return p;
}
}  // namespace

Tensor Tensor::max_pool(const std::vector<int64_t>& k, const std::vector<int64_t>& s, const std::vector<int64_t>& pads,
                        const std::vector<int64_t>& d, bool ceil_mode) const {
  auto p = pool_pads(*this, k, s, pads, d, ceil_mode);
  std::vector<int64_t> red;
  for (size_t i = 0; i < k.size(); ++i) red.push_back(-1 - int64_t(i));
  return pad_min_value(p).pool(k, s, d).max(red);
}

std::pair<Tensor, Tensor> Tensor::max_pool_with_indices(const std::vector<int64_t>& k, const std::vector<int64_t>& s,
                                                        const std::vector<int64_t>& pads, const std::vector<int64_t>& d,
                                                        bool ceil_mode, bool column_major) const {
  auto p = pool_pads(*this, k, s, pads, d, ceil_mode);
  std::vector<int64_t> red;
  for (size_t i = 0; i < k.size(); ++i) red.push_back(-1 - int64_t(i));
  Tensor windows = pad_min_value(p).pool(k, s, d);
  Tensor best = windows.max(red, true);
  // The flat input index of every element (padding gets one that never wins); of the maxima in
  // a window the one with the smallest index is the first in window order.
  HostTensor pos(DType::I64, shape());
  size_t lead = size_t(ndim()) - k.size();
  for (int64_t i = 0; i < numel(); ++i) {
    int64_t v = i;
    if (column_major) {  // spatial dims reversed inside each (n, c) block
      std::vector<int64_t> idx(shape().size());
      for (size_t a = shape().size(), r = size_t(i); a-- > 0;)
        idx[a] = int64_t(r) % shape()[a], r /= size_t(shape()[a]);
      int64_t block = 1, inner = 0, mul = 1;
      for (size_t a = lead; a < shape().size(); ++a) inner += idx[a] * mul, mul *= shape()[a], block *= shape()[a];
      v = (i / block) * block + inner;
    }
    pos.set(i, double(v));
  }
  double never = double(int64_t(1) << 62);
  Tensor positions = weight(*g_, "pool_positions", std::move(pos)).pad(p, never).pool(k, s, d);
  Tensor first = where(windows.eq(best), positions, positions.full_like(never)).min(red);
  std::vector<int64_t> squeeze_axes;
  for (size_t i = 0; i < k.size(); ++i) squeeze_axes.push_back(-1 - int64_t(i));
  return {best.squeeze(squeeze_axes), first};
}

Tensor Tensor::avg_pool(const std::vector<int64_t>& k, const std::vector<int64_t>& s, const std::vector<int64_t>& pads,
                        bool count_include_pad, bool ceil_mode) const {
  std::vector<int64_t> d(k.size(), 1);
  std::vector<int64_t> red;
  for (size_t i = 0; i < k.size(); ++i) red.push_back(-1 - int64_t(i));
  auto p_user = pool_pads(*this, k, s, pads, d, false);
  auto p = pool_pads(*this, k, s, pads, d, ceil_mode);
  Tensor sums = pad(p).pool(k, s, d).sum(red);
  // Divisor: window cells inside the input (or inside the user padding if counted), never the
  // extra ceil-mode padding.
  Tensor inside = full(graph(), shape(), 1, dtype());
  std::vector<std::pair<int64_t, int64_t>> rest = p;
  if (count_include_pad) {
    inside = full(graph(), pad(p_user).shape(), 1, dtype());
    for (size_t i = 0; i < p.size(); ++i) rest[i] = {0, p[i].second - p_user[i].second};
  }
  Tensor counts = inside.pad(rest).pool(k, s, d).sum(red);
  return sums / counts;
}

// Both go through log-sum-exp so that the output kernel reads one per-row statistic: the max is
// hoisted inside the lse kernel, and softmax is two kernels instead of three.
Tensor Tensor::log_softmax(int64_t axis) const {
  Tensor m = max({axis}, true);
  Tensor lse = m + (*this - m).exp().sum({axis}, true).log();
  return *this - lse;
}

Tensor Tensor::softmax(int64_t axis) const { return log_softmax(axis).exp(); }

Tensor Tensor::layer_norm(std::vector<int64_t> axes, const std::optional<Tensor>& scale,
                          const std::optional<Tensor>& bias, double eps) const {
  Tensor c = *this - mean(axes, true);
  Tensor var = (c * c).mean(axes, true);
  Tensor r = c * (var + eps).rsqrt();
  if (scale) r = r * *scale;
  if (bias) r = r + *bias;
  return r;
}

Tensor Tensor::batch_norm(const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                          double eps) const {
  Shape s(size_t(ndim()), 1);
  s[1] = dim(1);
  Tensor inv = (var.reshape(s) + eps).rsqrt() * scale.reshape(s);
  return (*this - mean.reshape(s)) * inv + bias.reshape(s);
}

}  // namespace tgc
