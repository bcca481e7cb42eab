// Ops whose output size depends on the data: NonZero, Compress, Unique, TopK with a run-time k.
// Where the inputs that decide the size are compile-time constants the size is folded. Otherwise
// the output is laid out at its upper bound along one axis whose size at run time is a VAR that
// the model computes (Graph::set_var_value): a kernel stores the count, the runtime reads it and
// binds the VAR before the kernels that follow. model/dynamic_dims.h traces the model at two
// sizes of that axis, as for a --dynamic dim, so that consumers see the VAR too.
#include <algorithm>

#include "frontend/onnx/onnx_ops.h"

namespace tgc {
namespace {

// An output axis whose size is the model's own `count` (an integer scalar, at most `max`): the
// positions 0..size-1 of this trace (size = max, or what model/dynamic_dims asks for), as a
// table of max + 1 entries cut to the size, which passes/dim_axes reads as the VAR.
struct DataAxis {
  Tensor positions;  // i64 [size]
  Tensor valid;      // bool [size]: position < count at run time
};

DataAxis data_axis(Ctx& c, int64_t max, const Tensor& count) {
  // The bound is one past the largest count: at the count's largest value the axis would have
  // the size of the axis it is taken from, and the two traces (model/dynamic_dims.h) could not
  // tell them apart. At least 3: the second trace, about halfway, must not be a size of 1.
  max = std::max<int64_t>(max + 1, 3);
  // The VAR is named after the node's first output, made unique where an unrolled loop imports
  // the node again (the same names in the same order at every trace).
  std::string name = c.node.output(0) + ":size";
  for (int k = 2; [&] {
         for (const UOp* v : c.g.vars())
           if (v->var().name == name) return true;
         return false;
       }();
       ++k)
    name = c.node.output(0) + ":size#" + std::to_string(k);
  const UOp* var = c.g.declare_var(name, 0, max);
  int64_t size = max;
  if (c.dim_sizes)
    if (auto it = c.dim_sizes->find(name); it != c.dim_sizes->end()) size = it->second;
  Tensor n = count.cast(DType::I64).reshape({}).clip(0.0, double(max));
  c.g.set_var_value(var, n.uop());
  Tensor positions = Tensor::arange(c.g, max + 1).shrink({{0, size}});
  return {positions, positions.lt(n.expand({size}))};
}

// `y` with the positions along `axis` past the count zeroed (nothing reads them as data; reading
// the count also orders the kernels that loop up to it after the one that computes it).
Tensor masked(const Tensor& y, const DataAxis& d, int64_t axis) {
  Shape s(size_t(y.ndim()), 1);
  s[size_t(axis)] = d.positions.dim(0);
  return Tensor::where(d.valid.reshape(s).expand(y.shape()), y, y.full_like(0));
}

// For each position j: the index of the (j+1)-th element of `keep` (bool [n]) that holds, i.e.
// how many elements come before it (n past the count).
Tensor kept_index(const Tensor& keep, const DataAxis& d) {
  int64_t n = keep.dim(0), size = d.positions.dim(0);
  Tensor rank = keep.cast(DType::I64).cumsum(0, false, false);  // kept elements up to i
  return rank.reshape({1, n}).expand({size, n}).le(d.positions.reshape({size, 1}).expand({size, n})).cast(DType::I64).sum({1});
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

Tensor compress(Ctx& c) {
  Tensor x = c.in(0);
  int64_t axis = 0;
  if (c.has_attr("axis")) axis = x.norm_axis(c.attr_int("axis", 0));
  else x = x.reshape({x.numel()});
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
    for (int64_t d = r - 1; d >= 0; --d) coords.set(d * n + i, double(lin % x.shape()[size_t(d)])), lin /= x.shape()[size_t(d)];
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

// ONNX Unique over the flattened input (no axis): the distinct values (sorted, or in order of
// first occurrence), the index of each one's first occurrence, each element's position among
// them, and how often each occurs.
Outs unique(Ctx& c) {
  if (c.has_attr("axis")) c.fail("Unique along an axis is not supported yet (only over the flattened input)");
  Tensor x = c.in(0).reshape({c.in(0).numel()});
  int64_t n = x.dim(0);
  Tensor at = Tensor::arange(c.g, n);
  Tensor same = x.reshape({n, 1}).expand({n, n}).eq(x.reshape({1, n}).expand({n, n}));  // [i, j]
  // Element i is its value's first occurrence when no j < i holds the same value.
  Tensor earlier = at.reshape({1, n}).expand({n, n}).lt(at.reshape({n, 1}).expand({n, n}));
  Tensor first = same.logical_and(earlier).cast(DType::I64).sum({1}).eq(Tensor::full(c.g, {n}, 0, DType::I64));
  Tensor order = at;  // sorted: the first occurrences in ascending order of value
  if (c.attr_int("sorted", 1) != 0) order = x.topk(n, 0, /*largest=*/false).second;
  Tensor keep = first.gather(order, 0);
  DataAxis d = data_axis(c, n, keep.cast(DType::I64).sum());
  Tensor index = order.gather(kept_index(keep, d), 0);  // [size]: the first occurrences
  Tensor y = x.gather(index, 0);
  int64_t size = d.positions.dim(0);
  Tensor hits = y.reshape({size, 1}).expand({size, n}).eq(x.reshape({1, n}).expand({size, n})).logical_and(
      d.valid.reshape({size, 1}).expand({size, n}));  // [j, i]: element i holds value j
  Tensor inverse = Tensor::where(hits, d.positions.reshape({size, 1}).expand({size, n}), Tensor::full(c.g, {size, n}, 0, DType::I64)).sum({0});
  Tensor counts = hits.cast(DType::I64).sum({1});
  return {masked(y, d, 0), masked(index, d, 0), inverse, masked(counts, d, 0)};
}

}  // namespace

void add_data_ops(OpTable& t) {
  t["TopK"] = topk;
  t["Compress"] = [](Ctx& c) -> Outs { return {compress(c)}; };
  t["NonZero"] = [](Ctx& c) -> Outs { return {non_zero(c)}; };
  t["Unique"] = unique;
}

}  // namespace tgc
