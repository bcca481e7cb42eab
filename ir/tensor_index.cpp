// Indexing compositions: gathers with compile-time indices as movement ops, padding modes, and
// data-dependent gathers/scatters, TopK and CumSum as one-hot compares followed by reduces.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>

#include "ir/error.h"
#include "ir/tensor.h"

namespace tgc {

namespace {
using Bounds = std::vector<std::pair<int64_t, int64_t>>;

// [0, d) on every axis except `axis`, which gets [b, e).
Bounds range_on(const Tensor& x, int64_t axis, int64_t b, int64_t e) {
  Bounds r;
  for (int64_t d : x.shape()) r.push_back({0, d});
  r[size_t(axis)] = {b, e};
  return r;
}

Tensor expand_axis(const Tensor& x, int64_t axis, int64_t n) {  // x has size 1 on axis
  Shape s = x.shape();
  s[size_t(axis)] = n;
  return x.expand(s);
}

Tensor bool_weight(Graph& g, const Shape& s, const std::function<bool(int64_t)>& on) {
  HostTensor h(DType::Bool, s);
  for (int64_t i = 0; i < h.numel(); ++i) h.set(i, on(i) ? 1 : 0);
  return Tensor::weight(g, "mask", std::move(h));
}

Tensor i64_weight(Graph& g, const std::vector<int64_t>& v) {
  HostTensor h(DType::I64, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) h.set(int64_t(i), double(v[i]));
  return Tensor::weight(g, "indices", std::move(h));
}

// Moves `axis` to the end; the inverse order puts it back.
std::vector<int64_t> axis_last(int64_t rank, int64_t axis) {
  std::vector<int64_t> o;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis) o.push_back(i);
  o.push_back(axis);
  return o;
}
std::vector<int64_t> inverse(const std::vector<int64_t>& order) {
  std::vector<int64_t> inv(order.size());
  for (size_t i = 0; i < order.size(); ++i) inv[size_t(order[i])] = int64_t(i);
  return inv;
}

// idx[o] = a + floor((q*o + r) / p), 0 <= r < p, with p/q in lowest terms.
struct Progression {
  int64_t a, p, q, r;
};

std::optional<Progression> find_progression(const int64_t* idx, int64_t n) {
  int64_t a = idx[0];
  if (n == 1) return Progression{a, 1, 0, 0};
  for (int64_t i = 1; i < n; ++i)
    if (idx[i] < idx[i - 1]) return std::nullopt;
  int64_t rise = idx[n - 1] - a;
  for (int64_t p = 1; p <= std::min<int64_t>(n, 64); ++p) {
    int64_t q0 = p * rise / (n - 1);
    for (int64_t q = std::max<int64_t>(0, q0 - 1); q <= q0 + 1; ++q) {
      if (q == 0 ? p != 1 : std::gcd(p, q) != 1) continue;
      for (int64_t r = 0; r < p; ++r) {
        bool ok = true;
        for (int64_t o = 0; o < n && ok; ++o) ok = idx[o] == a + (q * o + r) / p;
        if (ok) return Progression{a, p, q, r};
      }
    }
  }
  return std::nullopt;
}

// The n elements of a progression along axis: repeat each element p times, then a strided slice.
Tensor take_progression(const Tensor& x, int64_t axis, const Progression& g, int64_t n) {
  if (g.q == 0) return expand_axis(x.shrink(range_on(x, axis, g.a, g.a + 1)), axis, n);
  if (g.p == 1) return x.slice({g.a}, {g.a + g.q * (n - 1) + 1}, {axis}, {g.q});
  int64_t m = (g.r + g.q * (n - 1)) / g.p + 1;
  Tensor xs = x.shrink(range_on(x, axis, g.a, g.a + m));
  Shape s1 = xs.shape(), s3 = xs.shape();
  s1.insert(s1.begin() + axis + 1, 1);
  Shape s2 = s1;
  s2[size_t(axis) + 1] = g.p;
  s3[size_t(axis)] = m * g.p;
  Tensor rep = xs.reshape(s1).expand(s2).reshape(s3);
  return rep.slice({g.r}, {g.r + g.q * (n - 1) + 1}, {axis}, {g.q});
}

int64_t run_length(const std::vector<int64_t>& v, bool from_end) {
  int64_t n = int64_t(v.size()), k = 1;
  if (from_end)
    while (k < n && v[size_t(n - 1 - k)] == v.back()) ++k;
  else
    while (k < n && v[size_t(k)] == v[0]) ++k;
  return k;
}
}  // namespace

Tensor Tensor::take(int64_t axis, std::vector<int64_t> idx) const {
  axis = norm_axis(axis);
  int64_t len = dim(axis), n = int64_t(idx.size());
  for (auto& i : idx) {
    if (i < -len || i >= len)
      throw Error("take: index " + std::to_string(i) + " out of range for axis of size " + std::to_string(len));
    if (i < 0) i += len;
  }
  if (n == 0) return shrink(range_on(*this, axis, 0, 0));
  // A non-increasing sequence is a non-decreasing one on the flipped axis.
  bool decreasing = n > 1 && std::is_sorted(idx.rbegin(), idx.rend()) && idx.front() != idx.back();
  if (decreasing) {
    std::vector<int64_t> rev;
    for (int64_t i : idx) rev.push_back(len - 1 - i);
    return flip({axis}).take(axis, rev);
  }
  // Head and tail runs of one repeated index (clamped coordinates) around a progression.
  int64_t head = run_length(idx, false), tail = run_length(idx, true);
  std::vector<int64_t> heads = {0, 1, head - 1, head}, tails = {0, 1, tail - 1, tail};
  for (int64_t h : heads)
    for (int64_t t : tails) {
      if (h < 0 || t < 0 || h > head || t > tail || h + t >= n) continue;
      auto g = find_progression(idx.data() + h, n - h - t);
      if (!g) continue;
      std::vector<Tensor> parts;
      if (h) parts.push_back(expand_axis(shrink(range_on(*this, axis, idx[0], idx[0] + 1)), axis, h));
      parts.push_back(take_progression(*this, axis, *g, n - h - t));
      if (t) parts.push_back(expand_axis(shrink(range_on(*this, axis, idx.back(), idx.back() + 1)), axis, t));
      return parts.size() == 1 ? parts[0] : cat(parts, axis);
    }
  return gather(i64_weight(*g_, idx), axis);
}

Tensor Tensor::pad(const std::vector<std::pair<int64_t, int64_t>>& p, PadMode mode) const {
  if (mode == PadMode::Constant) return pad(p, 0.0);
  if (p.size() != shape().size()) throw Error("pad: need one (begin, end) pair per axis");
  std::vector<std::pair<int64_t, int64_t>> crop;
  for (auto [b, e] : p) crop.push_back({std::min<int64_t>(b, 0), std::min<int64_t>(e, 0)});
  Tensor t = pad(crop, 0.0);
  for (int64_t ax = 0; ax < ndim(); ++ax) {
    int64_t b = std::max<int64_t>(p[size_t(ax)].first, 0), e = std::max<int64_t>(p[size_t(ax)].second, 0);
    if (b == 0 && e == 0) continue;
    int64_t n = t.dim(ax);
    if (n == 0) throw Error("pad: cannot extend an empty axis in reflect/edge/wrap mode");
    if (mode == PadMode::Wrap) {
      // Tile enough copies, then cut the window that starts b before the original.
      int64_t before = (b + n - 1) / n, after = (e + n - 1) / n;
      std::vector<int64_t> reps(size_t(t.ndim()), 1);
      reps[size_t(ax)] = before + 1 + after;
      int64_t start = before * n - b;
      Tensor tiled = t.repeat(reps);
      t = tiled.shrink(range_on(tiled, ax, start, start + b + n + e));
      continue;
    }
    std::vector<Tensor> parts;
    if (mode == PadMode::Reflect) {
      if (b >= n || e >= n)
        throw Error("pad: reflect padding (" + std::to_string(b) + ", " + std::to_string(e) +
                    ") must be smaller than the axis size " + std::to_string(n));
      if (b) parts.push_back(t.shrink(range_on(t, ax, 1, b + 1)).flip({ax}));
      parts.push_back(t);
      if (e) parts.push_back(t.shrink(range_on(t, ax, n - 1 - e, n - 1)).flip({ax}));
    } else {  // Edge
      if (b) parts.push_back(expand_axis(t.shrink(range_on(t, ax, 0, 1)), ax, b));
      parts.push_back(t);
      if (e) parts.push_back(expand_axis(t.shrink(range_on(t, ax, n - 1, n)), ax, e));
    }
    t = cat(parts, ax);
  }
  return t;
}

Tensor Tensor::gather_elements(const Tensor& indices, int64_t axis) const {
  axis = norm_axis(axis);
  if (indices.ndim() != ndim())
    throw Error("gather_elements: indices rank " + std::to_string(indices.ndim()) + " differs from data rank " +
                std::to_string(ndim()));
  int64_t n = dim(axis);
  Bounds keep;
  for (int64_t i = 0; i < ndim(); ++i) {
    int64_t want = i == axis ? n : indices.dim(i);
    if (want > dim(i))
      throw Error("gather_elements: indices " + shape_str(indices.shape()) + " exceed data " + shape_str(shape()));
    keep.push_back({0, want});
  }
  std::vector<int64_t> order = axis_last(ndim(), axis);
  Tensor x = shrink(keep).permute(order);  // [..., n]
  Tensor idx = indices.cast(DType::I64);
  idx = where(idx.lt(idx.full_like(0)), idx + double(n), idx).permute(order);  // [..., m]
  Shape is = idx.shape(), xs = x.shape(), as(size_t(ndim()) + 1, 1);
  is.push_back(1);
  xs.insert(xs.end() - 1, 1);
  as.back() = n;
  Tensor onehot = idx.reshape(is).eq(arange(*g_, n).reshape(as));  // [..., m, n]
  Tensor xr = x.reshape(xs).expand(onehot.shape());
  return where(onehot, xr, xr.full_like(0)).sum({-1}).permute(inverse(order));
}

namespace {
// Row-major linear index of the index tuples in the last dim of `indices` into dims `dims`
// (negative components count from the end): [..., k] -> [...].
Tensor linear_index(const Tensor& indices, const Shape& dims) {
  int64_t k = int64_t(dims.size());
  std::vector<int64_t> strides(size_t(k), 1);
  for (int64_t i = k - 2; i >= 0; --i) strides[size_t(i)] = strides[size_t(i) + 1] * dims[size_t(i) + 1];
  Graph& g = indices.graph();
  Tensor idx = indices.cast(DType::I64);
  Tensor size = i64_weight(g, dims);
  idx = Tensor::where(idx.lt(idx.full_like(0)), idx + size, idx);
  return (idx * i64_weight(g, strides)).sum({-1});
}

// Shared by the scatters. x: [B, n, R]; onehot: [B, m, n] (update j lands on position i);
// updates: [B, m, R]. Combines the updates landing on each position, then with x.
Tensor scatter_onehot(const Tensor& x, const Tensor& onehot, const Tensor& updates, Tensor::Reduction r) {
  using R = Tensor::Reduction;
  Shape s = onehot.shape();
  int64_t B = s[0], m = s[1], n = s[2], rest = x.dim(2);
  if (m == 0) return x;
  Tensor oh = onehot.reshape({B, m, n, 1});
  Tensor up = updates.cast(x.dtype()).reshape({B, m, 1, rest}).expand({B, m, n, rest});
  if (r == R::Max || r == R::Min) {  // x stands in where an update does not land, and joins in
    Tensor xr = x.reshape({B, 1, n, rest});
    Tensor picked = Tensor::where(oh, up, xr);
    return r == R::Max ? picked.max({1}).maximum(x) : picked.min({1}).minimum(x);
  }
  if (r == R::None) {
    // Where several updates land on one position, the last one wins (as in onnxruntime).
    Tensor j = Tensor::arange(x.graph(), m).reshape({1, m, 1}).expand(s);
    Tensor last = Tensor::where(onehot, j, j.full_like(-1)).max({1}, true);  // [B, 1, n]
    Tensor pick = onehot.logical_and(j.eq(last)).reshape({B, m, n, 1});
    Tensor val = Tensor::where(pick, up, up.full_like(0)).sum({1});
    return Tensor::where(last.ge(last.full_like(0)).reshape({B, n, 1}), val, x);
  }
  Tensor picked = Tensor::where(oh, up, up.full_like(r == R::Mul ? 1 : 0));
  return r == R::Mul ? x * picked.prod({1}) : x + picked.sum({1});
}
}  // namespace

Tensor Tensor::gather_nd(const Tensor& indices, int64_t batch_dims) const {
  int64_t q = indices.ndim(), k = indices.dim(-1), b = batch_dims;
  if (q < 1 || b < 0 || b >= q || b + k > ndim())
    throw Error("gather_nd: indices " + shape_str(indices.shape()) + " do not fit data " + shape_str(shape()) +
                " with batch_dims " + std::to_string(b));
  for (int64_t i = 0; i < b; ++i)
    if (indices.dim(i) != dim(i)) throw Error("gather_nd: batch dims of indices and data differ");
  Shape dims(shape().begin() + b, shape().begin() + b + k), rest(shape().begin() + b + k, shape().end());
  int64_t B = 1, P = tgc::numel(dims), R = tgc::numel(rest), M = 1;
  for (int64_t i = 0; i < b; ++i) B *= dim(i);
  for (int64_t i = b; i < q - 1; ++i) M *= indices.dim(i);
  Tensor lin = linear_index(indices, dims).reshape({B, M, 1});
  Tensor onehot = lin.eq(arange(*g_, P).reshape({1, 1, P}));  // [B, M, P]
  Tensor d = reshape({B, 1, P, R}).expand({B, M, P, R});
  Tensor picked = where(onehot.reshape({B, M, P, 1}), d, d.full_like(0)).sum({2});
  Shape out(indices.shape().begin(), indices.shape().end() - 1);
  out.insert(out.end(), rest.begin(), rest.end());
  return picked.reshape(out);
}

Tensor Tensor::scatter_elements(const Tensor& indices, const Tensor& updates, int64_t axis, Reduction r) const {
  axis = norm_axis(axis);
  if (indices.shape() != updates.shape() || indices.ndim() != ndim())
    throw Error("scatter_elements: indices " + shape_str(indices.shape()) + " and updates " +
                shape_str(updates.shape()) + " must match and have the data's rank");
  int64_t n = dim(axis), m = indices.dim(axis);
  std::vector<int64_t> order = axis_last(ndim(), axis);
  // Positions outside the indices' extent on the other axes are never hit: pad the one-hot.
  std::vector<std::pair<int64_t, int64_t>> grow;
  for (int64_t i : order) {
    if (i == axis) continue;
    if (indices.dim(i) > dim(i))
      throw Error("scatter_elements: indices " + shape_str(indices.shape()) + " exceed data " + shape_str(shape()));
    grow.push_back({0, dim(i) - indices.dim(i)});
  }
  grow.push_back({0, 0});
  grow.push_back({0, 0});
  Tensor idx = indices.cast(DType::I64);
  idx = where(idx.lt(idx.full_like(0)), idx + double(n), idx).permute(order);  // [pre..., m]
  Shape is = idx.shape(), as(size_t(ndim()) + 1, 1);
  is.push_back(1);
  as.back() = n;
  Tensor onehot = idx.reshape(is).eq(arange(*g_, n).reshape(as)).pad(grow);  // [pre..., m, n]
  Tensor up = updates.permute(order).reshape(is).pad(grow);                  // [pre..., m, 1]
  Tensor x = permute(order);
  Shape pre_shape(x.shape().begin(), x.shape().end() - 1);
  int64_t B = tgc::numel(pre_shape);
  Tensor out = scatter_onehot(x.reshape({B, n, 1}), onehot.reshape({B, m, n}), up.reshape({B, m, 1}), r);
  return out.reshape(x.shape()).permute(inverse(order));
}

Tensor Tensor::scatter_nd(const Tensor& indices, const Tensor& updates, Reduction r) const {
  int64_t k = indices.dim(-1);
  if (k > ndim())
    throw Error("scatter_nd: index tuples of length " + std::to_string(k) + " for data of rank " +
                std::to_string(ndim()));
  Shape dims(shape().begin(), shape().begin() + k), rest(shape().begin() + k, shape().end());
  Shape want(indices.shape().begin(), indices.shape().end() - 1);
  want.insert(want.end(), rest.begin(), rest.end());
  if (updates.shape() != want)
    throw Error("scatter_nd: updates have shape " + shape_str(updates.shape()) + ", expected " + shape_str(want));
  int64_t P = tgc::numel(dims), R = tgc::numel(rest), M = indices.numel() / std::max<int64_t>(k, 1);
  Tensor lin = linear_index(indices, dims).reshape({1, M, 1});
  Tensor onehot = lin.eq(arange(*g_, P).reshape({1, 1, P}));
  return scatter_onehot(reshape({1, P, R}), onehot, updates.reshape({1, M, R}), r).reshape(shape());
}

std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int64_t axis, bool largest) const {
  axis = norm_axis(axis);
  int64_t n = dim(axis);
  if (k < 0 || k > n) throw Error("topk: k = " + std::to_string(k) + " for an axis of size " + std::to_string(n));
  std::vector<int64_t> order = axis_last(ndim(), axis);
  Tensor x = permute(order);
  Shape pre(x.shape().begin(), x.shape().end() - 1);
  int64_t P = tgc::numel(pre);
  x = x.reshape({P, n});
  // rank[i] = how many elements come before element i: strictly better ones, and equal ones
  // at a lower index. The element of rank p is output p.
  Tensor xi = x.reshape({P, n, 1}), xj = x.reshape({P, 1, n});
  Tensor better = largest ? xj.gt(xi) : xj.lt(xi);
  Tensor earlier = bool_weight(*g_, {1, n, n}, [n](int64_t lin) { return lin % n < lin / n; });
  Tensor before = better.logical_or(xj.eq(xi).logical_and(earlier));
  Tensor rank = before.sum({2});                                               // [P, n] int64
  Tensor sel = rank.reshape({P, 1, n}).eq(arange(*g_, k).reshape({1, k, 1}));  // [P, k, n]
  Tensor xs = xj.expand({P, k, n});
  Tensor values = where(sel, xs, xs.full_like(0)).sum({2});
  Tensor pos = arange(*g_, n).reshape({1, 1, n}).expand({P, k, n});
  Tensor ids = where(sel, pos, pos.full_like(0)).sum({2});
  Shape out = pre;
  out.push_back(k);
  std::vector<int64_t> back = inverse(order);
  return {values.reshape(out).permute(back), ids.reshape(out).permute(back)};
}

Tensor Tensor::cumsum(int64_t axis, bool exclusive, bool reverse) const {
  axis = norm_axis(axis);
  int64_t n = dim(axis);
  std::vector<int64_t> order = axis_last(ndim(), axis);
  Tensor x = permute(order);
  Shape s = x.shape();
  // out[i] = sum of x[j] over the j that the mask admits for i.
  Tensor mask = bool_weight(*g_, {n, n}, [=](int64_t lin) {
    int64_t i = lin / n, j = lin % n;
    return reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
  });
  Shape xs = s, ms(size_t(ndim()) + 1, 1);
  xs.insert(xs.end() - 1, 1);
  ms[ms.size() - 2] = n, ms.back() = n;
  Shape full = s;
  full.push_back(n);
  Tensor xr = x.reshape(xs).expand(full);
  Tensor r = where(mask.reshape(ms), xr, xr.full_like(0)).sum({-1});
  return r.permute(inverse(order));
}

Tensor Tensor::one_hot(const Tensor& indices, int64_t depth, int64_t axis, const Tensor& off, const Tensor& on) {
  int64_t rank = indices.ndim() + 1;
  if (axis < -rank || axis >= rank)
    throw Error("one_hot: axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  if (depth <= 0) throw Error("one_hot: depth must be positive");
  Graph& g = indices.graph();
  // Float indices are truncated toward zero, as onnxruntime does.
  Tensor idx = indices.trunc().cast(DType::I64);
  idx = where(idx.lt(idx.full_like(0)), idx + double(depth), idx).unsqueeze({axis});
  Shape as(size_t(rank), 1);
  as[size_t(axis)] = depth;
  Tensor hit = idx.eq(arange(g, depth).reshape(as));
  return where(hit, on.reshape({}), off.reshape({}));
}

Tensor Tensor::trilu(int64_t k, bool upper) const {
  if (ndim() < 2) throw Error("trilu: needs at least 2 dims, got " + shape_str(shape()));
  int64_t rows = dim(-2), cols = dim(-1);
  Tensor keep = bool_weight(*g_, {rows, cols}, [=](int64_t lin) {
    int64_t i = lin / cols, j = lin % cols;
    return upper ? j - i >= k : j - i <= k;
  });
  return where(keep, *this, full_like(0));
}

}  // namespace tgc
