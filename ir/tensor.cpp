// Tensor API core: creation, movement, elementwise arithmetic, comparisons and reductions.
#include "ir/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ir/error.h"
#include "ir/scalar.h"

namespace tgc {

// ---- HostTensor -------------------------------------------------------------------------
double HostTensor::get(int64_t i) const {
  return load_num(dtype, &bytes[size_t(i * dtype_size(dtype))]).as_double(dtype);
}
void HostTensor::set(int64_t i, double v) {
  store_num(dtype, &bytes[size_t(i * dtype_size(dtype))], Num::of(dtype, v));
}
std::vector<int64_t> HostTensor::to_ints() const {
  std::vector<int64_t> r(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) {
    Num n = load_num(dtype, &bytes[size_t(i * dtype_size(dtype))]);
    r[size_t(i)] = is_float(dtype) ? int64_t(n.f) : n.i;
  }
  return r;
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// ---- creation ---------------------------------------------------------------------------
Tensor Tensor::input(Graph& g, const std::string& name, DType t, const Shape& shape) {
  int64_t id = g.add_buffer({name, t, shape, BufferKind::Input, nullptr});
  return Tensor(g, g.make(Op::Buffer, t, {}, id));
}

Tensor Tensor::weight(Graph& g, const std::string& name, HostTensor data) {
  return weight(g, name, data.dtype, data.shape, Bytes::own(std::move(data.bytes)));
}

Tensor Tensor::weight(Graph& g, const std::string& name, DType t, const Shape& s, std::shared_ptr<const Bytes> bytes) {
  check(bytes && int64_t(bytes->size()) == tgc::numel(s) * dtype_size(t),
        "weight '" + name + "': " + std::to_string(bytes ? bytes->size() : 0) + " bytes for " +
            std::string(dtype_name(t)) + shape_str(s));
  int64_t id = g.add_buffer({name, t, s, BufferKind::Weight, std::move(bytes)});
  return Tensor(g, g.make(Op::Buffer, t, {}, id));
}

Tensor Tensor::full(Graph& g, const Shape& shape, double value, DType t) {
  Tensor c(g, g.constant(value, t));
  if (shape.empty()) return c;
  return c.reshape(Shape(shape.size(), 1)).expand(shape);
}

Tensor Tensor::arange(Graph& g, int64_t n, DType t) {
  // A compile-time constant buffer: cheaper than building it from cumulative sums. Its size comes
  // from a model's dims (an axis that Gather indexes), so an absurd dim must not become an
  // allocation of that size.
  constexpr int64_t kMaxArange = int64_t(1) << 26;
  if (n < 0 || n > kMaxArange)
    throw Error("an index table of " + std::to_string(n) +
                " elements (an axis to gather from or count along) is more than the " + std::to_string(kMaxArange) +
                " tgc builds at compile time");
  HostTensor h(t, {n});
  for (int64_t i = 0; i < n; ++i) h.set(i, double(i));
  return weight(g, "arange_" + std::to_string(n), std::move(h));
}

Tensor Tensor::state(Graph& g, const std::string& name, DType t, const Shape& shape) {
  int64_t id = g.add_buffer({name, t, shape, BufferKind::State, nullptr});
  return Tensor(g, g.make(Op::Buffer, t, {}, id));
}

Tensor Tensor::index_value(Graph& g, const UOp* expr, DType t) {
  check(expr->dtype == DType::Index && expr->shape.empty(), "index_value: not an index expression");
  for (const UOp* u : toposort({expr}))
    if (u->op == Op::Var) g.var_slot(u);  // declared, so kernels can read it
  return Tensor(g, g.make(Op::Cast, t, {expr}));
}

Tensor Tensor::assign(const Tensor& value, int64_t axis, const UOp* offset) const {
  axis = norm_axis(axis);
  check(u_->op == Op::Buffer && g_->buffer(u_->ival()).kind == BufferKind::State,
        "assign: the target is not a state buffer");
  check(offset->dtype == DType::Index && offset->shape.empty(), "assign: the offset is not an index expression");
  // Along the axis, offset + extent stays within the buffer at run time: whoever binds the VARs
  // sees to that (the runtime, for a KV cache), since neither is known here.
  bool fits = value.ndim() == ndim() && value.dtype() == dtype();
  for (int64_t i = 0; fits && i < ndim(); ++i) fits = i == axis || value.dim(i) == dim(i);
  if (!fits)
    throw Error("assign: " + std::string(dtype_name(value.dtype())) + shape_str(value.shape()) + " does not fit into " +
                std::string(dtype_name(dtype())) + shape_str(shape()) + " along axis " + std::to_string(axis));
  return make(Op::Assign, {u_, value.uop(), offset}, axis);
}

Tensor Tensor::make(Op op, std::vector<const UOp*> src, Arg arg, std::optional<DType> t) const {
  return Tensor(*g_, g_->make(op, t.value_or(dtype()), std::move(src), std::move(arg)));
}

int64_t Tensor::norm_axis(int64_t axis) const {
  int64_t n = ndim();
  if (axis < -n || axis >= n)
    throw Error("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(n));
  return axis < 0 ? axis + n : axis;
}

// ---- movement ---------------------------------------------------------------------------
Tensor Tensor::reshape(Shape s) const {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw Error("reshape: more than one -1 in " + shape_str(s));
      infer = int64_t(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known)
      throw Error("reshape: cannot infer -1 for " + shape_str(shape()) + " to " + shape_str(s));
    s[size_t(infer)] = numel() / known;
  }
  if (s == shape()) return *this;
  if (numel() != tgc::numel(s)) throw Error("reshape: cannot reshape " + shape_str(shape()) + " to " + shape_str(s));
  return make(Op::Reshape, {u_}, s);
}

Tensor Tensor::permute(std::vector<int64_t> order) const {
  for (auto& a : order) a = norm_axis(a);
  std::vector<int64_t> id(order.size());
  std::iota(id.begin(), id.end(), 0);
  if (order == id) return *this;
  return make(Op::Permute, {u_}, order);
}

Tensor Tensor::expand(const Shape& s) const {
  Tensor t = *this;
  if (s.size() > shape().size()) {
    Shape padded(s.size() - shape().size(), 1);
    padded.insert(padded.end(), shape().begin(), shape().end());
    t = reshape(padded);
  }
  if (t.shape() == s) return t;
  return t.make(Op::Expand, {t.u_}, s);
}

void Tensor::broadcast_pair(Tensor& a, Tensor& b) {
  Shape s = broadcast_shape(a.shape(), b.shape());
  a = a.expand(s);
  b = b.expand(s);
  if (a.dtype() != b.dtype()) {
    DType t = promote(a.dtype(), b.dtype());
    a = a.cast(t);
    b = b.cast(t);
  }
}

Tensor Tensor::shrink(const std::vector<std::pair<int64_t, int64_t>>& bounds) const {
  std::vector<int64_t> arg;
  bool noop = true;
  for (size_t i = 0; i < bounds.size(); ++i) {
    arg.push_back(bounds[i].first);
    arg.push_back(bounds[i].second);
    noop = noop && bounds[i].first == 0 && bounds[i].second == shape()[i];
  }
  if (noop) return *this;
  return make(Op::Shrink, {u_}, arg);
}

Tensor Tensor::pad(const std::vector<std::pair<int64_t, int64_t>>& p, double value) const {
  if (p.size() != shape().size()) throw Error("pad: need one (begin, end) pair per axis");
  // Negative pads crop: shrink first, then pad with the non-negative part.
  std::vector<std::pair<int64_t, int64_t>> crop, grow;
  bool any_crop = false, any_grow = false;
  for (size_t i = 0; i < p.size(); ++i) {
    int64_t b = std::max<int64_t>(0, -p[i].first), e = shape()[i] - std::max<int64_t>(0, -p[i].second);
    if (b > e) throw Error("pad: negative padding larger than the axis");
    crop.push_back({b, e});
    grow.push_back({std::max<int64_t>(0, p[i].first), std::max<int64_t>(0, p[i].second)});
    any_crop = any_crop || p[i].first < 0 || p[i].second < 0;
    any_grow = any_grow || p[i].first > 0 || p[i].second > 0;
  }
  Tensor t = any_crop ? shrink(crop) : *this;
  if (!any_grow) return t;
  std::vector<int64_t> arg;
  for (auto [b, e] : grow) arg.push_back(b), arg.push_back(e);
  Tensor padded = t.make(Op::Pad, {t.u_}, arg);
  if (value == 0) return padded;
  // Pad only fills zeros; other values select through a padded mask.
  Tensor ones = full(*g_, t.shape(), 1, DType::Bool);
  Tensor mask = ones.make(Op::Pad, {ones.u_}, arg);
  return where(mask, padded, padded.full_like(value));
}

Tensor Tensor::flip(const std::vector<int64_t>& axes) const {
  std::vector<int64_t> flags(size_t(ndim()), 0);
  for (int64_t a : axes) flags[size_t(norm_axis(a))] = 1;
  if (std::all_of(flags.begin(), flags.end(), [](int64_t f) { return !f; })) return *this;
  return make(Op::Flip, {u_}, flags);
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  std::vector<int64_t> order(static_cast<size_t>(ndim()));
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[size_t(norm_axis(a))], order[size_t(norm_axis(b))]);
  return permute(order);
}

Tensor Tensor::squeeze(std::vector<int64_t> axes) const {
  std::vector<bool> drop(size_t(ndim()), false);
  if (axes.empty()) {
    for (int i = 0; i < ndim(); ++i) drop[size_t(i)] = shape()[size_t(i)] == 1;
  }
  for (int64_t a : axes) {
    int64_t n = norm_axis(a);
    if (shape()[size_t(n)] != 1)
      throw Error("squeeze: axis " + std::to_string(a) + " has size " + std::to_string(shape()[size_t(n)]));
    drop[size_t(n)] = true;
  }
  Shape s;
  for (int i = 0; i < ndim(); ++i)
    if (!drop[size_t(i)]) s.push_back(shape()[size_t(i)]);
  return reshape(s);
}

Tensor Tensor::unsqueeze(std::vector<int64_t> axes) const {
  int64_t out_rank = ndim() + int64_t(axes.size());
  for (auto& a : axes) {
    if (a < -out_rank || a >= out_rank) throw Error("unsqueeze: axis out of range");
    if (a < 0) a += out_rank;
  }
  std::sort(axes.begin(), axes.end());
  Shape s;
  size_t j = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i))
      s.push_back(1);
    else
      s.push_back(shape()[j++]);
  }
  return reshape(s);
}

Tensor Tensor::flatten(int64_t axis) const {
  if (axis < 0) axis += ndim();
  if (axis < 0 || axis > ndim()) throw Error("flatten: axis out of range");
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= shape()[size_t(i)];
  return reshape({outer, numel() / std::max<int64_t>(outer, 1)});
}

Tensor Tensor::slice(const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                     const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) const {
  std::vector<std::pair<int64_t, int64_t>> bounds;
  for (int64_t d : shape()) bounds.push_back({0, d});
  std::vector<int64_t> step_of(size_t(ndim()), 1);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t ax = norm_axis(axes.empty() ? int64_t(i) : axes[i]);
    int64_t n = shape()[size_t(ax)], st = steps.empty() ? 1 : steps[i];
    if (st == 0) throw Error("slice: step 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += n;
    if (e < 0) e += n;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      bounds[size_t(ax)] = {s, std::max(s, e)};
    } else {
      // Walk backwards from s down to (not including) e: flip the kept range.
      s = std::clamp<int64_t>(s, -1, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      bounds[size_t(ax)] = {e + 1, std::max(e + 1, s + 1)};
    }
    step_of[size_t(ax)] = st;
  }
  Tensor t = shrink(bounds);
  std::vector<int64_t> flips;
  for (int64_t i = 0; i < ndim(); ++i)
    if (step_of[size_t(i)] < 0) flips.push_back(i);
  t = t.flip(flips);
  // Strides: pad each stepped axis to a multiple of the step, reshape to (n/step, step), keep index 0.
  for (int64_t ax = 0; ax < ndim(); ++ax) {
    int64_t st = std::abs(step_of[size_t(ax)]);
    if (st == 1) continue;
    int64_t n = t.shape()[size_t(ax)], m = (n + st - 1) / st;
    std::vector<std::pair<int64_t, int64_t>> p(size_t(t.ndim()), {0, 0});
    p[size_t(ax)] = {0, m * st - n};
    t = t.pad(p);
    Shape s = t.shape();
    s[size_t(ax)] = m;
    s.insert(s.begin() + ax + 1, st);
    t = t.reshape(s);
    std::vector<std::pair<int64_t, int64_t>> b;
    for (int64_t d : t.shape()) b.push_back({0, d});
    b[size_t(ax) + 1] = {0, 1};
    Shape out = t.shape();
    out.erase(out.begin() + ax + 1);
    t = t.shrink(b).reshape(out);
  }
  return t;
}

Tensor Tensor::repeat(const std::vector<int64_t>& reps) const {
  if (int(reps.size()) != ndim()) throw Error("repeat: need one count per axis");
  Shape interleaved, expanded, out;
  for (int i = 0; i < ndim(); ++i) {
    interleaved.push_back(1), interleaved.push_back(shape()[size_t(i)]);
    expanded.push_back(reps[size_t(i)]), expanded.push_back(shape()[size_t(i)]);
    out.push_back(reps[size_t(i)] * shape()[size_t(i)]);
  }
  return reshape(interleaved).expand(expanded).reshape(out);
}

Tensor Tensor::cat(const std::vector<Tensor>& ts, int64_t axis) {
  if (ts.empty()) throw Error("concat of nothing");
  axis = ts[0].norm_axis(axis);
  int64_t total = 0;
  for (const Tensor& t : ts) {
    if (t.ndim() != ts[0].ndim()) throw Error("concat: ranks differ");
    for (int i = 0; i < t.ndim(); ++i)
      if (i != axis && t.shape()[size_t(i)] != ts[0].shape()[size_t(i)])
        throw Error("concat: shapes " + shape_str(t.shape()) + " and " + shape_str(ts[0].shape()) +
                    " differ off the axis");
    total += t.shape()[size_t(axis)];
  }
  // Each piece is padded to the full length at its offset; the sum of the pieces is the concat.
  std::optional<Tensor> acc;
  int64_t off = 0;
  for (const Tensor& t : ts) {
    int64_t n = t.shape()[size_t(axis)];
    if (n == 0) continue;
    std::vector<std::pair<int64_t, int64_t>> p(size_t(t.ndim()), {0, 0});
    p[size_t(axis)] = {off, total - off - n};
    Tensor piece = t.pad(p);
    acc = acc ? *acc + piece : piece;
    off += n;
  }
  if (!acc) return ts[0];
  return *acc;
}

std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes, int64_t axis) const {
  axis = norm_axis(axis);
  std::vector<Tensor> out;
  int64_t off = 0;
  for (int64_t s : sizes) {
    std::vector<std::pair<int64_t, int64_t>> b;
    for (int64_t d : shape()) b.push_back({0, d});
    b[size_t(axis)] = {off, off + s};
    out.push_back(shrink(b));
    off += s;
  }
  if (off != shape()[size_t(axis)]) throw Error("split: sizes do not add up to the axis length");
  return out;
}

Tensor Tensor::gather(const Tensor& indices, int64_t axis) const {
  // out[pre, idx..., post] = sum_a data[pre, a, post] * (indices[idx...] == a): a one-hot reduce.
  axis = norm_axis(axis);
  int64_t n = shape()[size_t(axis)];
  Tensor idx = indices.cast(DType::I64);
  idx = where(idx.lt(idx.full_like(0)), idx + double(n), idx);
  Shape pre(shape().begin(), shape().begin() + axis), post(shape().begin() + axis + 1, shape().end());
  int64_t ir = indices.ndim();
  // data -> [pre, 1.., a, post]; indices -> [1.., idx..., 1, 1..]
  Shape ds = pre;
  for (int64_t i = 0; i < ir; ++i) ds.push_back(1);
  ds.push_back(n);
  ds.insert(ds.end(), post.begin(), post.end());
  Shape is(pre.size(), 1);
  is.insert(is.end(), indices.shape().begin(), indices.shape().end());
  is.push_back(1);
  is.insert(is.end(), post.size(), 1);
  Shape ar(pre.size() + size_t(ir), 1);
  ar.push_back(n);
  ar.insert(ar.end(), post.size(), 1);
  Tensor onehot = idx.reshape(is).eq(arange(*g_, n).reshape(ar));
  Tensor d = reshape(ds);
  Tensor picked = where(onehot, d.expand(broadcast_shape(d.shape(), onehot.shape())),
                        d.full_like(0).expand(broadcast_shape(d.shape(), onehot.shape())));
  return picked.sum({int64_t(pre.size()) + ir});
}

// ---- elementwise ------------------------------------------------------------------------
Tensor Tensor::cast(DType t) const {
  if (t == dtype()) return *this;
  if (t == DType::Bool) return ne(full_like(0));
  return make(Op::Cast, {u_}, {}, t);
}

Tensor Tensor::bitcast(DType t) const {
  if (dtype_size(t) != dtype_size(dtype())) throw Error("bitcast between types of different size");
  return make(Op::Bitcast, {u_}, {}, t);
}

Tensor Tensor::operator-() const {
  if (dtype() == DType::Bool) throw Error("negation of a bool tensor");
  return make(Op::Neg, {u_});
}

Tensor operator+(const Tensor& x, const Tensor& y) {
  Tensor a = x, b = y;
  Tensor::broadcast_pair(a, b);
  return a.make(a.dtype() == DType::Bool ? Op::Or : Op::Add, {a.u_, b.u_});
}
Tensor operator-(const Tensor& x, const Tensor& y) {
  Tensor a = x, b = y;
  Tensor::broadcast_pair(a, b);
  return a + (-b);
}
Tensor operator*(const Tensor& x, const Tensor& y) {
  Tensor a = x, b = y;
  Tensor::broadcast_pair(a, b);
  return a.make(a.dtype() == DType::Bool ? Op::And : Op::Mul, {a.u_, b.u_});
}
Tensor operator/(const Tensor& x, const Tensor& y) {
  Tensor a = x, b = y;
  Tensor::broadcast_pair(a, b);
  if (is_int(a.dtype())) return a.make(Op::IDiv, {a.u_, b.u_});
  return a * b.reciprocal();
}

Tensor Tensor::div_exact(const Tensor& y) const {
  Tensor a = *this, b = y;
  broadcast_pair(a, b);
  if (!is_float(a.dtype()) || a.dtype() != b.dtype()) throw Error("div_exact: two floats of one type expected");
  return a.make(Op::IDiv, {a.u_, b.u_});
}

Tensor Tensor::maximum(const Tensor& y) const {
  Tensor a = *this, b = y;
  broadcast_pair(a, b);
  return a.make(Op::Max, {a.u_, b.u_});
}
Tensor Tensor::minimum(const Tensor& y) const {
  Tensor a = *this, b = y;
  broadcast_pair(a, b);
  return where(a.lt(b), a, b);
}
Tensor Tensor::fmod(const Tensor& y) const {
  Tensor a = *this, b = y;
  broadcast_pair(a, b);
  return a.make(Op::Mod, {a.u_, b.u_});
}
Tensor Tensor::mod(const Tensor& y) const {
  Tensor a = *this, b = y;
  broadcast_pair(a, b);
  Tensor r = a.fmod(b);
  // Move a non-zero remainder whose sign differs from the divisor's into the divisor's sign.
  Tensor zero = r.full_like(0);
  Tensor fix = r.ne(zero).logical_and(r.lt(zero).logical_xor(b.lt(zero)));
  return where(fix, r + b, r);
}
Tensor Tensor::lt(const Tensor& y) const {
  Tensor a = *this, b = y;
  broadcast_pair(a, b);
  return a.make(Op::CmpLt, {a.u_, b.u_}, {}, DType::Bool);
}
Tensor Tensor::ne(const Tensor& y) const {
  Tensor a = *this, b = y;
  broadcast_pair(a, b);
  return a.make(Op::CmpNe, {a.u_, b.u_}, {}, DType::Bool);
}
Tensor Tensor::logical_not() const {
  Tensor b = cast(DType::Bool);
  return b.make(Op::Xor, {b.u_, b.full_like(1).u_});
}
Tensor Tensor::logical_and(const Tensor& y) const { return cast(DType::Bool) * y.cast(DType::Bool); }
Tensor Tensor::logical_or(const Tensor& y) const { return cast(DType::Bool) + y.cast(DType::Bool); }
Tensor Tensor::logical_xor(const Tensor& y) const { return cast(DType::Bool).bitwise(Op::Xor, y.cast(DType::Bool)); }
Tensor Tensor::bitwise(Op op, const Tensor& y) const {
  Tensor a = *this, b = y;
  broadcast_pair(a, b);
  if (is_float(a.dtype())) throw Error(std::string(op_name(op)) + " needs integer operands");
  return a.make(op, {a.u_, b.u_});
}
Tensor Tensor::where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  Shape s = broadcast_shape(broadcast_shape(cond.shape(), x.shape()), y.shape());
  Tensor a = x.expand(s), b = y.expand(s);
  if (a.dtype() != b.dtype()) {
    DType t = promote(a.dtype(), b.dtype());
    a = a.cast(t), b = b.cast(t);
  }
  Tensor c = cond.cast(DType::Bool).expand(s);
  return a.make(Op::Where, {c.u_, a.u_, b.u_});
}

Tensor Tensor::dot4(const Tensor& a, const Tensor& b, const Tensor& acc) {
  auto word = [](DType t) { return t == DType::I32 || t == DType::U32; };
  if (!word(a.dtype()) || !word(b.dtype()) || acc.dtype() != DType::I32)
    throw Error("dot4: 32-bit words and an i32 accumulator expected, got " + std::string(dtype_name(a.dtype())) + ", " +
                std::string(dtype_name(b.dtype())) + ", " + std::string(dtype_name(acc.dtype())));
  Shape s = broadcast_shape(broadcast_shape(a.shape(), b.shape()), acc.shape());
  return acc.expand(s).make(Op::Dot4, {a.expand(s).u_, b.expand(s).u_, acc.expand(s).u_});
}

// ---- reductions -------------------------------------------------------------------------
Tensor Tensor::reduce(Op op, std::vector<int64_t> axes, bool keepdim, bool ordered) const {
  if (axes.empty())
    for (int i = 0; i < ndim(); ++i) axes.push_back(i);
  for (auto& a : axes) a = norm_axis(a);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  // Reduce over non-trivial axes only; a reduce of size-1 axes is the identity.
  std::vector<int64_t> real;
  for (int64_t a : axes)
    if (shape()[size_t(a)] != 1) real.push_back(a);
  Tensor r = *this;
  if (!real.empty()) {
    for (int64_t a : real)
      if (shape()[size_t(a)] == 0) throw Error("reduction over an empty axis");
    r = make(Op::Reduce, {u_}, ReduceArg{op, real, ordered});
  }
  if (keepdim) return r;
  Shape s;
  for (int i = 0; i < ndim(); ++i)
    if (!std::binary_search(axes.begin(), axes.end(), int64_t(i))) s.push_back(shape()[size_t(i)]);
  return r.reshape(s);
}

Tensor Tensor::sum(std::vector<int64_t> axes, bool keepdim) const {
  Tensor x = dtype() == DType::Bool ? cast(DType::I64) : *this;
  return x.reduce(Op::Add, std::move(axes), keepdim);
}

Tensor Tensor::sum_in_order(std::vector<int64_t> axes, bool keepdim) const {
  if (!is_float(dtype())) throw Error("sum_in_order: " + std::string(dtype_name(dtype())) + " is not a float type");
  return reduce(Op::Add, std::move(axes), keepdim, true);
}
Tensor Tensor::prod(std::vector<int64_t> axes, bool keepdim) const { return reduce(Op::Mul, std::move(axes), keepdim); }
Tensor Tensor::max(std::vector<int64_t> axes, bool keepdim) const { return reduce(Op::Max, std::move(axes), keepdim); }
Tensor Tensor::min(std::vector<int64_t> axes, bool keepdim) const {
  // min x = -max(-x) for floats; ~max(~x) for integers (~ reverses order without overflow).
  if (is_float(dtype())) return -((-*this).max(std::move(axes), keepdim));
  Tensor ones = full_like(-1);
  Tensor inv = bitwise(Op::Xor, ones);
  Tensor m = inv.max(std::move(axes), keepdim);
  return m.bitwise(Op::Xor, m.full_like(-1));
}
Tensor Tensor::mean(std::vector<int64_t> axes, bool keepdim) const {
  Tensor s = sum(std::move(axes), keepdim);
  double count = double(numel()) / double(std::max<int64_t>(s.numel(), 1));
  return is_float(dtype()) ? s * (1.0 / count) : s / s.scalar(count);
}

Tensor Tensor::argmax(int64_t axis, bool keepdim) const {
  axis = norm_axis(axis);
  int64_t n = shape()[size_t(axis)];
  Tensor m = max({axis}, true);
  Shape s(size_t(ndim()), 1);
  s[size_t(axis)] = n;
  // Largest (n - i) among the maxima is the first index i holding the maximum.
  Tensor rev = full(*g_, {n}, double(n), DType::I64) - arange(*g_, n);
  Tensor cand = where(eq(m), rev.reshape(s), rev.reshape(s).full_like(0));
  Tensor best = cand.max({axis}, keepdim);
  return best.full_like(double(n)) - best;
}
Tensor Tensor::argmin(int64_t axis, bool keepdim) const {
  Tensor x = is_float(dtype()) ? -*this : bitwise(Op::Xor, full_like(-1));
  return x.argmax(axis, keepdim);
}

Tensor Tensor::contiguous() const { return make(Op::Contiguous, {u_}); }

}  // namespace tgc
