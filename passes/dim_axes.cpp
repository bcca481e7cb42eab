#include "passes/dim_axes.h"

#include <unordered_map>

#include "ir/error.h"

namespace tgc {
namespace {

// The product of the dims before axis k: a reshape keeps an axis's elements together when it
// keeps this product.
int64_t dims_before(const Shape& sh, int k) {
  int64_t n = 1;
  for (int i = 0; i < k; ++i) n *= sh[size_t(i)];
  return n;
}

// Two traces of one model paired node by node, and how errors name a node.
struct Traces {
  const Graph& ga;
  const Graph& gb;
  int64_t size_a, size_b;
  std::unordered_map<const UOp*, const UOp*> twin, twin_of_b;  // a node <-> its b node
  std::unordered_map<const UOp*, const std::string*> where;     // a node -> its model node

  [[noreturn]] void fail(const UOp* u, const std::string& why) const {
    auto it = where.find(u);
    std::string who = it != where.end() && it->second ? "node '" + *it->second + "'" : "the graph";
    throw Error(who + " (" + std::string(op_name(u->op)) + ") " + why);
  }

  // The nodes of trace a in order; errors name the model node a tensor belongs to: its own, or
  // that of its first consumer.
  std::vector<const UOp*> label(const std::vector<const UOp*>& roots_a) {
    std::vector<const UOp*> order = toposort(roots_a);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const std::string*& w = where[*it];
      if (const std::string* o = ga.origin(*it)) w = o;
      for (const UOp* s : (*it)->src)
        if (!where[s]) where[s] = w;
    }
    return order;
  }

  // `whole_cuts`: a weight in trace a may pair with a slice of it in trace b (a table cut to the
  // dim's size, which at the table's own size is the table itself).
  void pair_up(const std::vector<const UOp*>& roots_a, const std::vector<const UOp*>& roots_b, bool whole_cuts = false) {
    std::vector<std::pair<const UOp*, const UOp*>> work;
    for (size_t i = 0; i < roots_a.size(); ++i) work.push_back({roots_a[i], roots_b[i]});
    while (!work.empty()) {
      auto [a, b] = work.back();
      work.pop_back();
      auto [it, fresh] = twin.try_emplace(a, b);
      auto [back, fresh_b] = twin_of_b.try_emplace(b, a);
      if (it->second != b || back->second != a) fail(a, "is built differently at sizes " + sizes());
      if (!fresh) continue;
      if (whole_cuts && a->op == Op::Buffer && b->op == Op::Shrink && b->src[0]->op == Op::Buffer) continue;
      if (a->op != b->op || a->dtype != b->dtype || a->src.size() != b->src.size())
        fail(a, "is built differently at sizes " + sizes() + " (" + std::string(op_name(b->op)) + " at " + std::to_string(size_b) + ")");
      for (size_t i = 0; i < a->src.size(); ++i) work.push_back({a->src[i], b->src[i]});
    }
  }

  std::string sizes() const { return std::to_string(size_a) + " and " + std::to_string(size_b); }
};

// The batch's rules (see batch_axes in the header).
struct BatchRules {
  Traces& t;
  // a node -> batch axis or -1. The batch may be merged into its axis as the outermost factor
  // (softmax's [N*T, C] rows): that dim is size * extent, the extent being one sample's part.
  std::unordered_map<const UOp*, int> axis;
  std::unordered_map<const UOp*, int64_t> extent;

  // The axis where the two shapes differ as the batch sizes do (size * extent); -1 when they are equal.
  int shape_axis(const UOp* a, const UOp* b, int64_t& ext) const {
    int ax = -1;
    bool ok = a->shape.size() == b->shape.size();
    for (size_t i = 0; ok && i < a->shape.size(); ++i) {
      int64_t da = a->shape[i], db = b->shape[i];
      if (da == db) continue;
      ok = ax < 0 && da % t.size_a == 0 && db % t.size_b == 0 && da / t.size_a == db / t.size_b;
      ax = int(i);
      ext = da / t.size_a;
    }
    if (!ok)
      t.fail(a, "has shape " + shape_str(a->shape) + " at batch size " + std::to_string(t.size_a) + " and " + shape_str(b->shape) +
                  " at " + std::to_string(t.size_b) + ": its dims follow the batch size in a way one sample's program cannot");
    return ax;
  }

  void check_args(const UOp* a, const UOp* b, int ax, int64_t ext) const {
    switch (a->op) {
      case Op::Reshape: case Op::Expand: return;  // the arg is the shape, checked already
      case Op::Buffer: {
        const BufferInfo &ia = t.ga.buffer(a->ival()), &ib = t.gb.buffer(b->ival());
        if (ia.kind != ib.kind) t.fail(a, "is built differently at batch sizes " + t.sizes());
        if (ia.kind == BufferKind::Input && (ax > 0 || ext != 1)) t.fail(a, "input '" + ia.name + "' does not have the batch first");
        if (ia.kind == BufferKind::Weight && (ax >= 0 || !ia.data || !ib.data || *ia.data != *ib.data))
          t.fail(a, "uses a constant computed from the batch size ('" + ia.name + "'), which differs per batch size, not per sample");
        return;
      }
      case Op::Shrink: {
        std::vector<int64_t> pa = a->ints(), pb = b->ints();
        if (ax >= 0 && pa[2 * ax] == 0 && pa[2 * ax + 1] == t.size_a * ext && pb[2 * ax] == 0 && pb[2 * ax + 1] == t.size_b * ext)
          pa[2 * ax + 1] = pb[2 * ax + 1];
        if (pa != pb) t.fail(a, "takes a slice that depends on the batch size");
        return;
      }
      default:
        if (a->arg != b->arg) t.fail(a, "takes a value computed from the batch size (it differs at batch sizes " + t.sizes() + ")");
    }
  }

  // The rules that keep the samples of a batch apart.
  void check_rule(const UOp* a, int ax, int64_t ext) const {
    int s = a->src.empty() ? -1 : axis.at(a->src[0]);
    int64_t se = a->src.empty() ? 1 : extent.at(a->src[0]);
    auto want = [&](bool ok, const std::string& why) {
      if (!ok) t.fail(a, why);
    };
    if (a->op == Op::Assign) {  // a state buffer is one per model, never per sample
      want(ax < 0 && axis.at(a->src[1]) < 0, "writes a sample's values into a state buffer");
      return;
    }
    if (is_elementwise(a->op) || a->op == Op::Contiguous) {
      for (const UOp* x : a->src) want(axis.at(x) == ax, "combines tensors whose batch axes differ");
      return;
    }
    switch (a->op) {
      case Op::Buffer: case Op::Const: case Op::Var: return;
      case Op::Reduce: want(s == ax, "reduces over the batch dim"); return;
      case Op::Pad: case Op::Shrink: want(s == ax, "pads or slices the batch dim"); return;
      case Op::Flip: want(s == ax && (s < 0 || a->ints()[size_t(s)] == 0), "reverses the batch dim"); return;
      case Op::Expand: want(s < 0 || (s == ax && se == ext), "moves the batch dim"); return;
      case Op::Permute: want(s < 0 ? ax < 0 : ax >= 0 && a->ints()[size_t(ax)] == s, "moves the batch dim inconsistently"); return;
      case Op::Reshape: {
        const Shape& in = a->src[0]->shape;
        want(s < 0 ? ax < 0 : ax >= 0 && dims_before(in, s) == dims_before(a->shape, ax),
             "reshapes across the batch dim (" + shape_str(in) + " to " + shape_str(a->shape) + ")");
        return;
      }
      default: t.fail(a, "is not a tensor-level op");
    }
  }
};

}  // namespace

std::vector<int> batch_axes(const Graph& ga, const std::vector<const UOp*>& roots_a, int64_t size_a,
                            const Graph& gb, const std::vector<const UOp*>& roots_b, int64_t size_b) {
  if (roots_a.size() != roots_b.size()) throw Error("the graph has a different number of outputs at each batch size");
  Traces t{ga, gb, size_a, size_b, {}, {}, {}};
  std::vector<const UOp*> order = t.label(roots_a);
  t.pair_up(roots_a, roots_b);
  BatchRules c{t, {}, {}};
  for (const UOp* a : order) {
    const UOp* b = t.twin.at(a);
    int64_t ext = 1;
    int ax = c.shape_axis(a, b, ext);
    c.check_args(a, b, ax, ext);
    c.check_rule(a, ax, ext);
    c.axis[a] = ax;
    c.extent[a] = ext;
  }
  std::vector<int> out;
  for (const UOp* r : roots_a)
    if (c.extent.at(r) != 1) t.fail(r, "is an output with the batch merged into another dim");
    else out.push_back(c.axis.at(r));
  return out;
}

namespace {

// The run-time dim's rules (see var_axes in the header), on the pairing that batch_axes uses.
struct VarRules {
  Traces& t;
  std::unordered_map<const UOp*, uint64_t> mask;

  // Axes where the shapes differ exactly as the sizes do.
  uint64_t shape_mask(const UOp* a, const UOp* b) const {
    uint64_t m = 0;
    bool ok = a->shape.size() == b->shape.size() && a->shape.size() <= 64;
    for (size_t i = 0; ok && i < a->shape.size(); ++i) {
      if (a->shape[i] == b->shape[i]) continue;
      ok = a->shape[i] == t.size_a && b->shape[i] == t.size_b;
      m |= uint64_t(1) << i;
    }
    if (!ok)
      t.fail(a, "has shape " + shape_str(a->shape) + " at size " + std::to_string(t.size_a) + " and " + shape_str(b->shape) +
                    " at " + std::to_string(t.size_b) + ": its dims follow the dynamic dim in a way its upper bound's layout cannot");
    return m;
  }

  static std::vector<int> axes_of(uint64_t m) {
    std::vector<int> v;
    for (int i = 0; i < 64; ++i)
      if (m >> i & 1) v.push_back(i);
    return v;
  }

  void check(const UOp* a, const UOp* b, uint64_t m) const {
    uint64_t s = a->src.empty() ? 0 : mask.at(a->src[0]);
    auto want = [&](bool ok, const std::string& why) {
      if (!ok) t.fail(a, why);
    };
    // An ASSIGN is its state buffer (run-time dims as the buffer's); the value written may have
    // run-time dims of its own (the tokens of this run), and the offset is an index expression.
    if (a->op == Op::Assign) {
      want(m == mask.at(a->src[0]), "changes the dynamic axes of a state buffer");
      return;
    }
    if (is_elementwise(a->op) || a->op == Op::Contiguous) {
      for (const UOp* x : a->src) want(mask.at(x) == m, "combines tensors whose dynamic axes differ");
      return;
    }
    switch (a->op) {
      case Op::Const: case Op::Var: return;
      case Op::Buffer: {
        // A whole table in trace a, cut to the dim's size in trace b: the table cut to the dim.
        bool cut = b->op == Op::Shrink;
        const UOp* bb = cut ? b->src[0] : b;
        const BufferInfo &ia = t.ga.buffer(a->ival()), &ib = t.gb.buffer(bb->ival());
        want(ia.kind == ib.kind, "is built differently at the two sizes");
        for (size_t i = 0; cut && i < a->shape.size(); ++i)
          want(b->ints()[2 * i] == 0 && b->ints()[2 * i + 1] == (m >> i & 1 ? t.size_b : a->shape[i]), "slices the dynamic dim");
        if (ia.kind == BufferKind::Weight)
          want((m == 0 || cut) && ia.data && ib.data && *ia.data == *ib.data,
               "uses a constant computed from the dynamic dim's size ('" + ia.name + "')");
        return;
      }
      case Op::Reduce: {
        uint64_t reduced = 0;
        for (int64_t ax : a->reduce().axes) reduced |= uint64_t(1) << ax;
        want(m == (s & ~reduced), "changes the dynamic axes");  // a reduce over the dim is fine
        return;
      }
      case Op::Pad: want(m == s, "pads the dynamic dim"); return;
      case Op::Flip:
        want(m == s, "changes the dynamic axes");
        for (int ax : axes_of(m)) want(a->ints()[size_t(ax)] == 0, "reverses the dynamic dim");
        return;
      case Op::Expand: want((m & s) == s, "moves the dynamic dim"); return;
      case Op::Permute: {
        uint64_t moved = 0;
        for (size_t i = 0; i < a->ints().size(); ++i)
          if (s >> a->ints()[i] & 1) moved |= uint64_t(1) << i;
        want(m == moved, "moves the dynamic dim inconsistently");
        return;
      }
      case Op::Reshape: {
        std::vector<int> in = axes_of(s), out = axes_of(m);
        bool ok = in.size() == out.size();
        for (size_t i = 0; ok && i < in.size(); ++i) ok = dims_before(a->src[0]->shape, in[i]) == dims_before(a->shape, out[i]);
        want(ok, "reshapes across the dynamic dim (" + shape_str(a->src[0]->shape) + " to " + shape_str(a->shape) + ")");
        return;
      }
      case Op::Shrink: {
        // Per axis: the same bounds, or the dim's whole extent (0, size) of a dynamic axis, or a
        // slice of the dim's size from a fixed axis (a table of positions cut to the length).
        std::vector<int64_t> pa = a->ints(), pb = b->ints();
        for (size_t i = 0; i < a->shape.size(); ++i) {
          int64_t lo = pa[2 * i], hi_a = pa[2 * i + 1], hi_b = pb[2 * i + 1];
          bool same = lo == pb[2 * i] && hi_a == hi_b && !(m >> i & 1);
          bool whole = (m >> i & 1) && (s >> i & 1) && lo == 0 && pb[2 * i] == 0 && hi_a == t.size_a && hi_b == t.size_b;
          bool cut = (m >> i & 1) && !(s >> i & 1) && lo == pb[2 * i] && hi_a - lo == t.size_a && hi_b - lo == t.size_b;
          want(same || whole || cut, "slices the dynamic dim");
        }
        return;
      }
      default: t.fail(a, "is not a tensor-level op");
    }
  }
};

}  // namespace

std::unordered_map<const UOp*, uint64_t> var_axes(const Graph& ga, const std::vector<const UOp*>& roots_a, int64_t size_a,
                                                 const Graph& gb, const std::vector<const UOp*>& roots_b, int64_t size_b) {
  if (roots_a.size() != roots_b.size()) throw Error("the graph has a different number of outputs at each size");
  Traces t{ga, gb, size_a, size_b, {}, {}, {}};
  std::vector<const UOp*> order = t.label(roots_a);
  t.pair_up(roots_a, roots_b, /*whole_cuts=*/true);
  VarRules r{t, {}};
  for (const UOp* a : order) {
    const UOp* b = t.twin.at(a);
    uint64_t m = r.shape_mask(a, b);
    // Arguments must agree, but for shapes (checked above) and the slices and buffers check() takes.
    bool own_arg = a->op == Op::Buffer || a->op == Op::Shrink || a->op == Op::Reshape || a->op == Op::Expand;
    if (!own_arg && a->arg != b->arg) t.fail(a, "takes a value computed from the dynamic dim's size");
    r.check(a, b, m);
    r.mask[a] = m;
  }
  return r.mask;
}

}  // namespace tgc
