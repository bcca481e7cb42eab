// Ops whose output size depends on the data: NonZero, Compress, Unique, TopK with a run-time k,
// NonMaxSuppression.
// Where the inputs that decide the size are compile-time constants the size is folded. Otherwise
// the output is laid out at its upper bound along one axis whose size at run time is a VAR that
// the model computes (Graph::set_var_value): a kernel stores the count, the runtime reads it and
// binds the VAR before the kernels that follow. model/dynamic_dims.h traces the model at two
// sizes of that axis, as for a --dynamic dim, so that consumers see the VAR too.
#include <algorithm>

#include "frontend/onnx/onnx_ops.h"

namespace tgc {

// The positions are a table of max + 1 entries cut to the traced size, which model/dim_axes
// reads as the VAR.
DataAxis data_axis(Ctx& c, int64_t max, const Tensor& count) {
  // The bound is two past the largest count, and the second trace one below it
  // (model/dynamic_dims.cpp): at the count's largest value the axis would have the size of the
  // axis it is taken from, and the two traces could not tell them apart.
  max += 2;
  // The VAR is named after the node's first output, made unique where an unrolled loop imports
  // the node again (the same names in the same order at every trace).
  std::string name = c.g.fresh_var_name(c.node.output(0) + ":size");
  const UOp* var = c.g.declare_var(name, 0, max);
  int64_t size = max;
  if (c.options)
    if (auto it = c.options->dim_sizes.find(name); it != c.options->dim_sizes.end()) size = it->second;
  Tensor n = count.cast(DType::I64).reshape({}).clip(0.0, double(max));
  c.g.set_var_value(var, n.uop());
  Tensor positions = Tensor::arange(c.g, max + 1).shrink({{0, size}});
  return {positions, positions.lt(n.expand({size}))};
}

Tensor masked(const Tensor& y, const DataAxis& d, int64_t axis) {
  Shape s(size_t(y.ndim()), 1);
  s[size_t(axis)] = d.positions.dim(0);
  return Tensor::where(d.valid.reshape(s).expand(y.shape()), y, y.full_like(0));
}

namespace {

// For each position j: the index of the (j+1)-th element of `keep` (bool [n]) that holds, i.e.
// how many elements come before it (n past the count).
Tensor kept_index(const Tensor& keep, const DataAxis& d) {
  int64_t n = keep.dim(0), size = d.positions.dim(0);
  Tensor rank = keep.cast(DType::I64).cumsum(0, false, false);  // kept elements up to i
  return rank.reshape({1, n})
      .expand({size, n})
      .le(d.positions.reshape({size, 1}).expand({size, n}))
      .cast(DType::I64)
      .sum({1});
}

// The elements of x along `axis` where `keep` (bool [n]) holds, in order, then zeros.
Tensor compacted(Ctx& c, const Tensor& x, const Tensor& keep, int64_t axis) {
  DataAxis d = data_axis(c, x.dim(axis), keep.cast(DType::I64).sum());
  return masked(x.gather(kept_index(keep, d), axis), d, axis);
}

Outs topk(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t axis = x.norm_axis(c.attr_int("axis", -1));
  bool largest = c.attr_int("largest", 1) != 0;
  if (c.opset < 10 || c.is_constant(1)) {
    int64_t k = c.opset >= 10 ? c.ints(1).at(0) : c.attr_int("k", 0);
    auto [values, indices] = x.topk(k, axis, largest);
    return {values, indices};
  }
  // k known at run time: the whole axis sorted, its first k positions kept.
  if (c.in(1).numel() != 1) c.fail("k must hold one value, got shape " + shape_str(c.in(1).shape()));
  auto [values, indices] = x.topk(x.dim(axis), axis, largest);
  DataAxis d = data_axis(c, x.dim(axis), c.in(1));
  return {masked(values.gather(d.positions, axis), d, axis), masked(indices.gather(d.positions, axis), d, axis)};
}

// The op's `axis`, or, without one, 0 of x flattened (Compress, Unique).
int64_t axis_or_flat(Ctx& c, Tensor& x) {
  if (c.has_attr("axis")) return x.norm_axis(c.attr_int("axis", 0));
  x = x.reshape({x.numel()});
  return 0;
}

Tensor compress(Ctx& c) {
  Tensor x = c.in(0);
  int64_t axis = axis_or_flat(c, x);
  int64_t n = x.dim(axis);
  if (c.is_constant(1)) {
    std::vector<int64_t> cond = c.ints(1), keep;
    for (size_t i = 0; i < cond.size() && int64_t(i) < n; ++i)
      if (cond[i]) keep.push_back(int64_t(i));
    return x.take(axis, keep);
  }
  // A condition shorter than the axis drops the rest; a longer one is cut to it.
  Tensor cond = c.in(1).reshape({c.in(1).numel()}).cast(DType::Bool);
  int64_t m = cond.dim(0);
  cond = m >= n ? cond.shrink({{0, n}}) : cond.pad({{0, n - m}});
  return compacted(c, x, cond, axis);
}

Tensor non_zero(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t r = x.ndim(), n = x.numel();
  // Each element's coordinates, a table [rank, n].
  HostTensor coords(DType::I64, {r, n});
  for (int64_t i = 0; i < n; ++i) {
    int64_t lin = i;
    for (int64_t d = r - 1; d >= 0; --d)
      coords.set(d * n + i, double(lin % x.shape()[size_t(d)])), lin /= x.shape()[size_t(d)];
  }
  if (c.is_constant(0)) {
    HostTensor v = c.constant(0);
    std::vector<int64_t> hits;
    for (int64_t i = 0; i < n; ++i)
      if (v.get(i) != 0) hits.push_back(i);
    return Tensor::weight(c.g, c.node.output(0) + ".coords", std::move(coords)).take(1, hits);
  }
  Tensor keep = x.reshape({n}).ne(x.reshape({n}).full_like(0));
  return compacted(c, Tensor::weight(c.g, c.node.output(0) + ".coords", std::move(coords)), keep, 1);
}

// ONNX Unique: the distinct slices along `axis` (elements of the flattened input without one),
// sorted (lexicographically, as numpy) or in order of first occurrence; the index of each one's
// first occurrence, each slice's position among them, and how often each occurs.
Outs unique(Ctx& c) {
  Tensor x = c.in(0);
  int64_t axis = axis_or_flat(c, x);
  int64_t n = x.dim(axis), k = x.numel() / std::max<int64_t>(n, 1);
  std::vector<int64_t> order = {axis};
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d != axis) order.push_back(d);
  Tensor rows = x.permute(order).reshape({n, k});
  Tensor a = rows.reshape({n, 1, k}).expand({n, n, k}),
         b = rows.reshape({1, n, k}).expand({n, n, k});  // [i, j, element]
  Tensor eq = a.eq(b);
  Tensor same =
      eq.cast(DType::I64).sum({2}).eq(Tensor::full(c.g, {n, n}, double(k), DType::I64));  // slice i == slice j
  Tensor at = Tensor::arange(c.g, n);
  Tensor j_before_i = at.reshape({1, n}).expand({n, n}).lt(at.reshape({n, 1}).expand({n, n}));
  Tensor zero = Tensor::full(c.g, {n}, 0, DType::I64);
  // A slice's first occurrence: no earlier slice is the same.
  Tensor first = same.logical_and(j_before_i).cast(DType::I64).sum({1}).eq(zero);
  Tensor before;  // [i, j]: j's slice comes before i's among the distinct ones
  if (c.attr_int("sorted", 1) != 0) {
    // j < i lexicographically: at the first element where they differ, j's is smaller.
    Tensor equal_so_far = eq.logical_not()
                              .cast(DType::I64)
                              .cumsum(2, /*exclusive=*/true, false)
                              .eq(Tensor::full(c.g, {n, n, k}, 0, DType::I64));
    before = equal_so_far.logical_and(b.lt(a)).cast(DType::I64).sum({2}).gt(Tensor::full(c.g, {n, n}, 0, DType::I64));
  } else {
    before = j_before_i;
  }
  Tensor place = before.logical_and(first.reshape({1, n}).expand({n, n})).cast(DType::I64).sum({1});  // [i]
  DataAxis d = data_axis(c, n, first.cast(DType::I64).sum());
  int64_t size = d.positions.dim(0);
  Tensor slot = place.reshape({1, n})
                    .expand({size, n})
                    .eq(d.positions.reshape({size, 1}).expand({size, n}))
                    .logical_and(first.reshape({1, n}).expand({size, n}));  // [s, i]: slice i is distinct one s
  Tensor index =
      Tensor::where(slot, at.reshape({1, n}).expand({size, n}), Tensor::full(c.g, {size, n}, 0, DType::I64)).sum({1});
  // Each slice's place: that of its first occurrence.
  Tensor inverse = Tensor::where(same.logical_and(first.reshape({1, n}).expand({n, n})),
                                 place.reshape({1, n}).expand({n, n}), Tensor::full(c.g, {n, n}, 0, DType::I64))
                       .sum({1});
  Tensor counts = inverse.reshape({1, n})
                      .expand({size, n})
                      .eq(d.positions.reshape({size, 1}).expand({size, n}))
                      .cast(DType::I64)
                      .sum({1});
  return {masked(x.gather(index, axis), d, axis), masked(index, d, 0), inverse, masked(counts, d, 0)};
}

// A scalar input's value as a rank-0 tensor of type t, or `def` where the input is absent.
Tensor scalar_input(Ctx& c, size_t i, double def, DType t) {
  if (!c.has(i)) return Tensor::full(c.g, {}, def, t);
  if (c.in(i).numel() != 1)
    c.fail("input " + std::to_string(i) + " must hold one value, got shape " + shape_str(c.in(i).shape()));
  return c.in(i).reshape({}).cast(t);
}

// ONNX NonMaxSuppression, as onnxruntime computes it: per batch and class the boxes whose score
// passes score_threshold (strictly), in descending score order (ties: lower index first), each
// kept unless its IoU with a kept one exceeds iou_threshold, at most max_output_boxes_per_class.
// Output [selected, 3]: (batch, class, box) by batch, class, then score. The greedy pass is one
// step per box (each step reads the boxes kept so far), so the box count is limited.
constexpr int64_t kMaxNmsBoxes = 1024;

Tensor non_max_suppression(Ctx& c) {
  const Tensor &boxes = c.in(0), &scores = c.in(1);
  if (boxes.ndim() != 3 || boxes.dim(2) != 4)
    c.fail("boxes must be [batches, boxes, 4], got " + shape_str(boxes.shape()));
  if (scores.ndim() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    c.fail("scores must be [batches, classes, boxes] for boxes " + shape_str(boxes.shape()) + ", got " +
           shape_str(scores.shape()));
  int64_t B = boxes.dim(0), C = scores.dim(1), N = boxes.dim(1);
  if (N > kMaxNmsBoxes)
    c.fail(std::to_string(N) + " boxes: at most " + std::to_string(kMaxNmsBoxes) +
           " (the greedy suppression is one step per box)");
  DType f = DType::F32;
  Tensor max_out = scalar_input(c, 2, 0, DType::I64), iou_thr = scalar_input(c, 3, 0, f);
  Tensor b = boxes.cast(f), s = scores.cast(f);
  // Corners: min/max of each coordinate pair (corner boxes may come flipped), or from centers.
  auto coord = [&](int64_t k) { return b.slice({k}, {k + 1}, {2}, {1}).reshape({B, N}); };
  Tensor x1, x2, y1, y2;
  if (c.attr_int("center_point_box", 0) != 0) {
    Tensor xc = coord(0), yc = coord(1), hw = coord(2) * 0.5, hh = coord(3) * 0.5;
    x1 = xc - hw, x2 = xc + hw, y1 = yc - hh, y2 = yc + hh;
  } else {
    y1 = coord(0).minimum(coord(2)), y2 = coord(0).maximum(coord(2)), x1 = coord(1).minimum(coord(3)),
    x2 = coord(1).maximum(coord(3));
  }
  // suppresses[b, n, m]: box n overlaps box m by more than the threshold.
  auto row = [&](const Tensor& t) { return t.reshape({B, N, 1}).expand({B, N, N}); };
  auto col = [&](const Tensor& t) { return t.reshape({B, 1, N}).expand({B, N, N}); };
  Tensor zero = Tensor::full(c.g, {B, N, N}, 0, f);
  Tensor iw = (row(x2).minimum(col(x2)) - row(x1).maximum(col(x1))).maximum(zero);
  Tensor ih = (row(y2).minimum(col(y2)) - row(y1).maximum(col(y1))).maximum(zero);
  Tensor inter = iw * ih, area = (x2 - x1) * (y2 - y1);
  Tensor uni = row(area) + col(area) - inter;
  Tensor ok = inter.gt(zero).logical_and(row(area).gt(zero)).logical_and(col(area).gt(zero)).logical_and(uni.gt(zero));
  Tensor ratio = Tensor::where(ok, inter, zero) / Tensor::where(ok, uni, zero + 1.0);
  Tensor suppresses = ok.logical_and(ratio.gt(iou_thr.expand({B, N, N})));
  // rank[b, c, n]: box n's place in class c's order (higher score first, then lower index).
  Tensor sn = s.reshape({B, C, N, 1}).expand({B, C, N, N}), sm = s.reshape({B, C, 1, N}).expand({B, C, N, N});
  Tensor at = Tensor::arange(c.g, N);
  Tensor lower = at.reshape({1, N})
                     .expand({N, N})
                     .lt(at.reshape({N, 1}).expand({N, N}))
                     .reshape({1, 1, N, N})
                     .expand({B, C, N, N});
  Tensor before = sm.gt(sn).logical_or(sm.eq(sn).logical_and(lower));  // [b, c, n, m]: m comes before n
  Tensor rank = before.cast(DType::I64).sum({3});
  Tensor candidate =
      c.has(4) ? s.gt(scalar_input(c, 4, 0, f).expand({B, C, N})) : Tensor::full(c.g, {B, C, N}, 1, DType::Bool);
  // Greedy, one rank at a time: the box of rank t is kept unless a kept box suppresses it.
  Tensor kept = Tensor::full(c.g, {B, C, N}, 0, DType::Bool);
  Tensor sup = suppresses.reshape({B, 1, N, N}).expand({B, C, N, N});
  for (int64_t t = 0; t < N; ++t) {
    Tensor hit = kept.reshape({B, C, 1, N}).expand({B, C, N, N}).logical_and(sup).cast(DType::I32).max({3});
    Tensor now = rank.eq(Tensor::full(c.g, {B, C, N}, double(t), DType::I64))
                     .logical_and(candidate)
                     .logical_and(hit.eq(hit.full_like(0)));
    kept = kept.logical_or(now);
  }
  // At most max_out per class, the first ones in rank order; then in rank order per class.
  Tensor rank_m = rank.reshape({B, C, 1, N}).expand({B, C, N, N}),
         rank_n = rank.reshape({B, C, N, 1}).expand({B, C, N, N});
  Tensor upto =
      kept.reshape({B, C, 1, N}).expand({B, C, N, N}).logical_and(rank_m.le(rank_n)).cast(DType::I64).sum({3});
  kept = kept.logical_and(upto.le(max_out.expand({B, C, N})));
  Tensor slot = rank.reshape({B, C, 1, N})
                    .expand({B, C, N, N})
                    .eq(at.reshape({1, 1, N, 1}).expand({B, C, N, N}));  // [b, c, t, n]
  Tensor kept_in_order =
      slot.logical_and(kept.reshape({B, C, 1, N}).expand({B, C, N, N})).cast(DType::I32).max({3}).cast(DType::Bool);
  Tensor box_in_order =
      Tensor::where(slot, at.reshape({1, 1, 1, N}).expand({B, C, N, N}), Tensor::full(c.g, {B, C, N, N}, 0, DType::I64))
          .sum({3});
  // (batch, class, box) of every slot, compacted to the kept ones.
  HostTensor bc(DType::I64, {2, B * C * N});
  for (int64_t i = 0; i < B * C * N; ++i) bc.set(i, double(i / (C * N))), bc.set(B * C * N + i, double(i / N % C));
  Tensor table = Tensor::cat(
      {Tensor::weight(c.g, c.node.output(0) + ".batch_class", std::move(bc)), box_in_order.reshape({1, B * C * N})}, 0);
  return compacted(c, table, kept_in_order.reshape({B * C * N}), 1).permute({1, 0});
}

}  // namespace

void add_data_ops(OpTable& t) {
  t["NonMaxSuppression"] = [](Ctx& c) -> Outs { return {non_max_suppression(c)}; };
  t["TopK"] = topk;
  t["Compress"] = [](Ctx& c) -> Outs { return {compress(c)}; };
  t["NonZero"] = [](Ctx& c) -> Outs { return {non_zero(c)}; };
  t["Unique"] = unique;
}

}  // namespace tgc
