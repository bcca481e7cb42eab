#include "model/dim_axes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "ir/error.h"
#include "ir/print.h"
#include "ir/symbolic.h"

namespace tgc {
namespace {

// The product of the dims before axis k: a reshape keeps an axis's elements together when it
// keeps this product.
int64_t dims_before(const Shape& sh, int k) {
  int64_t n = 1;
  for (int i = 0; i < k; ++i) n *= sh[size_t(i)];
  return n;
}

// The product of the dims after axis k: the axis's stride in a row-major layout.
int64_t dims_after(const Shape& sh, int k) {
  int64_t n = 1;
  for (size_t i = size_t(k) + 1; i < sh.size(); ++i) n *= sh[i];
  return n;
}

// Two traces of one model paired node by node, and how errors name a node.
struct Traces {
  const Graph& ga;
  const Graph& gb;
  int64_t size_a, size_b;
  std::unordered_map<const UOp*, const UOp*> twin, twin_of_b;  // a node <-> its b node
  std::unordered_map<const UOp*, const std::string*> where;    // a node -> its model node

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

  // `whole_cuts` (run-time dims): a weight in trace a may pair with a slice of it in trace b (a
  // table cut to the dim's size, which at the table's own size is the table itself), and window
  // views pair as one op.
  void pair_up(const std::vector<const UOp*>& roots_a, const std::vector<const UOp*>& roots_b,
               bool whole_cuts = false) {
    std::vector<std::pair<const UOp*, const UOp*>> work;
    for (size_t i = 0; i < roots_a.size(); ++i) work.push_back({roots_a[i], roots_b[i]});
    while (!work.empty()) {
      auto [a, b] = work.back();
      work.pop_back();
      // A movement that is no op in trace b: a broadcast or reshape where a size is 1 in trace b
      // only (a bias [C, 1] added to [C, T]), or a cut to a size that trace b's dim is within (an
      // If's branch built for shorter inputs), so trace b has the movement's source where a has
      // the movement. The movement's twin is that source (its shape, the movement's at size b).
      bool no_op = a->op == Op::Expand || a->op == Op::Reshape || a->op == Op::Shrink;
      if (whole_cuts && no_op && b->op != a->op && b->shape.size() == a->shape.size()) {
        auto [it, fresh] = twin.try_emplace(a, b);
        if (it->second != b) fail(a, "is built differently at sizes " + sizes());
        if (fresh) work.push_back({a->src[0], b});
        continue;
      }
      auto [it, fresh] = twin.try_emplace(a, b);
      auto [back, fresh_b] = twin_of_b.try_emplace(b, a);
      // What is computed from constants alone is one node wherever its shape is the same: where
      // two dims are equal in one trace (a run-time dim at its bound and another at the same
      // size, or two sizes derived from the dim that are equal at size b only), it may pair with
      // two nodes of the other. Its extents are its consumers' business, but not its values: both
      // twins must compute the same (a mean's 1/size must not pass as another constant that
      // equals it at the bound).
      if (whole_cuts && constant_only(a)) {
        if (it->second != b && same_but_shapes(it->second, b)) continue;
        if (back->second != a && same_but_shapes(back->second, a)) back->second = a;
      }
      if (it->second != b || back->second != a) fail(a, "is built differently at sizes " + sizes());
      if (!fresh) continue;
      if (whole_cuts && a->op == Op::Buffer && b->op == Op::Shrink && b->src[0]->op == Op::Buffer) continue;
      if (a->op != b->op || a->dtype != b->dtype || a->src.size() != b->src.size())
        fail(a, "is built differently at sizes " + sizes() + " (" + std::string(op_name(b->op)) + " at " +
                    std::to_string(size_b) + ")");
      // A window view pairs with the same view of the twin input: the movement ops inside may
      // differ with the size (a slice that is a no-op at one size).
      if (const Graph::Window* wa = whole_cuts ? ga.window(a) : nullptr) {
        const Graph::Window* wb = gb.window(b);
        if (!wb || wa->k != wb->k || wa->stride != wb->stride || wa->dilation != wb->dilation)
          fail(a, "is built differently at sizes " + sizes() + " (not the same window view)");
        work.push_back({wa->of, wb->of});
        continue;
      }
      for (size_t i = 0; i < a->src.size(); ++i) work.push_back({a->src[i], b->src[i]});
    }
  }

  std::string sizes() const { return std::to_string(size_a) + " and " + std::to_string(size_b); }

  // Whether x and y are the same computation up to the shapes their movement ops give.
  static bool same_but_shapes(const UOp* x, const UOp* y) {
    std::vector<std::pair<const UOp*, const UOp*>> stack{{x, y}};
    while (!stack.empty()) {
      auto [p, q] = stack.back();
      stack.pop_back();
      if (p == q) continue;
      if (p->op != q->op || p->dtype != q->dtype || p->src.size() != q->src.size()) return false;
      if (p->op != Op::Reshape && p->op != Op::Expand && p->arg != q->arg) return false;
      for (size_t i = 0; i < p->src.size(); ++i) stack.push_back({p->src[i], q->src[i]});
    }
    return true;
  }

  // Whether no buffer, VAR or state feeds u (a walk, not recursion: graphs can be deep).
  static bool constant_only(const UOp* u) {
    std::vector<const UOp*> stack{u};
    std::unordered_map<const UOp*, bool> seen;
    while (!stack.empty()) {
      const UOp* x = stack.back();
      stack.pop_back();
      if (x->op == Op::Buffer || x->op == Op::Var || x->op == Op::Assign) return false;
      for (const UOp* s : x->src)
        if (!seen[s]) seen[s] = true, stack.push_back(s);
    }
    return true;
  }
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
      t.fail(a, "has shape " + shape_str(a->shape) + " at batch size " + std::to_string(t.size_a) + " and " +
                    shape_str(b->shape) + " at " + std::to_string(t.size_b) +
                    ": its dims follow the batch size in a way one sample's program cannot");
    return ax;
  }

  void check_args(const UOp* a, const UOp* b, int ax, int64_t ext) const {
    switch (a->op) {
      case Op::Reshape:
      case Op::Expand: return;  // the arg is the shape, checked already
      case Op::Buffer: {
        const BufferInfo &ia = t.ga.buffer(a->ival()), &ib = t.gb.buffer(b->ival());
        if (ia.kind != ib.kind) t.fail(a, "is built differently at batch sizes " + t.sizes());
        if (ia.kind == BufferKind::Input && (ax > 0 || ext != 1))
          t.fail(a, "input '" + ia.name + "' does not have the batch first");
        if (ia.kind == BufferKind::Weight && (ax >= 0 || !ia.data || !ib.data || *ia.data != *ib.data))
          t.fail(a, "uses a constant computed from the batch size ('" + ia.name +
                        "'), which differs per batch size, not per sample");
        return;
      }
      case Op::Shrink: {
        std::vector<int64_t> pa = a->ints(), pb = b->ints();
        if (ax >= 0 && pa[2 * ax] == 0 && pa[2 * ax + 1] == t.size_a * ext && pb[2 * ax] == 0 &&
            pb[2 * ax + 1] == t.size_b * ext)
          pa[2 * ax + 1] = pb[2 * ax + 1];
        if (pa != pb) t.fail(a, "takes a slice that depends on the batch size");
        return;
      }
      default:
        if (a->arg != b->arg)
          t.fail(a, "takes a value computed from the batch size (it differs at batch sizes " + t.sizes() + ")");
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
      case Op::Buffer:
      case Op::Const:
      case Op::Var: return;
      case Op::Reduce: want(s == ax, "reduces over the batch dim"); return;
      case Op::Pad:
      case Op::Shrink: want(s == ax, "pads or slices the batch dim"); return;
      case Op::Flip: want(s == ax && (s < 0 || a->ints()[size_t(s)] == 0), "reverses the batch dim"); return;
      case Op::Expand: want(s < 0 || (s == ax && se == ext), "moves the batch dim"); return;
      case Op::Permute:
        want(s < 0 ? ax < 0 : ax >= 0 && a->ints()[size_t(ax)] == s, "moves the batch dim inconsistently");
        return;
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

std::vector<int> batch_axes(const Graph& ga, const std::vector<const UOp*>& roots_a, int64_t size_a, const Graph& gb,
                            const std::vector<const UOp*>& roots_b, int64_t size_b) {
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
    if (c.extent.at(r) != 1)
      t.fail(r, "is an output with the batch merged into another dim");
    else
      out.push_back(c.axis.at(r));
  return out;
}

namespace {

// The run-time dim's rules (see var_extents in the header), on the pairing that batch_axes uses.
struct VarRules {
  Traces& t;
  Graph& g;
  const UOp* var;
  const UOp* broadcast;
  std::unordered_map<const UOp*, std::vector<const UOp*>> ext;
  Sym sym{g};
  // The dim itself: the VAR times its step (Graph::var_step); the traces' dim sizes are
  // t.size_a and t.size_b, the VAR's values those over the step.
  const int64_t step = g.var_step(var);
  const UOp* dim = simplify(g, sym.mul(var, step));
  int64_t value(int64_t size) const { return size / step; }

  // An axis that a reshape merged the dim into, with others (softmax's [heads * T, T] rows):
  // along it the positions whose part from the dim is below the run-time size E hold values,
  // the others garbage that nothing may reduce, pad or output. It has the layout's full extent.
  // `stride` is the dim's stride inside the merged axis, `size` its size at the bound.
  struct Mixed {
    const UOp* extent;
    int64_t size, stride;
  };
  std::unordered_map<const UOp*, Mixed> mixed_info{};  // marker (a negative constant) -> what it merges
  const UOp* mixed_marker(const Mixed& m) {
    for (const auto& [k, v] : mixed_info)
      if (v.extent == m.extent && v.size == m.size && v.stride == m.stride) return k;
    const UOp* k = g.cint(-2 - int64_t(mixed_info.size()));
    mixed_info[k] = m;
    return k;
  }
  bool mixed(const UOp* e) const { return e && mixed_info.count(e); }

  // What the traced structure needs: run-time size -> its least value (VarExtents::min_value).
  std::unordered_map<const UOp*, int64_t> needs{};
  void need(const UOp* size, int64_t least) {
    if (!dyn(size)) return;
    int64_t& n = needs[size];
    n = std::max(n, least);
  }

  // Run-time starts of slices and amounts before pads (Graph::var_offset).
  std::map<std::pair<const UOp*, int64_t>, const UOp*> offset{};
  // The run-time sizes derived so far, latest last: what a size that is `va` in trace a and
  // `vb` in trace b may be, up to a constant (a concat's offset is the size of what precedes).
  std::vector<const UOp*> sizes_seen{};
  const UOp* sized_like(int64_t va, int64_t vb) {
    auto fits = [&](const UOp* x) {
      int64_t xa = eval_index(x, {{var, value(t.size_a)}}), xb = eval_index(x, {{var, value(t.size_b)}});
      return xa - xb == va - vb ? simp(sym.add(x, va - xa)) : nullptr;
    };
    if (const UOp* x = fits(dim)) return x;
    for (auto it = sizes_seen.rbegin(); it != sizes_seen.rend(); ++it)
      if (const UOp* x = fits(*it)) return x;
    return nullptr;
  }
  bool dyn(const UOp* e) const { return e && e != broadcast && !mixed(e); }
  std::string extent_str(const UOp* e) const {
    return !e ? "fixed" : e == broadcast ? "a broadcast" : print_expr(g, e);
  }
  const UOp* simp(const UOp* e) { return simplify(g, e); }

  // Trace a's nodes, sources first; a window view is one op over the tensor it views (the
  // movement ops that build it do index arithmetic valid at every size, see Tensor::pool).
  std::vector<const UOp*> order(const std::vector<const UOp*>& roots) const {
    std::vector<const UOp*> out;
    std::unordered_map<const UOp*, bool> done;
    std::vector<std::pair<const UOp*, bool>> stack;
    for (auto it = roots.rbegin(); it != roots.rend(); ++it) stack.push_back({*it, false});
    while (!stack.empty()) {
      auto [u, expanded] = stack.back();
      stack.pop_back();
      if (expanded) {
        if (!done[u]) out.push_back(u), done[u] = true;
        continue;
      }
      if (done.count(u)) continue;
      stack.push_back({u, true});
      if (const Graph::Window* w = t.ga.window(u)) {
        stack.push_back({w->of, false});
        continue;
      }
      for (auto it = u->src.rbegin(); it != u->src.rend(); ++it) stack.push_back({*it, false});
    }
    return out;
  }

  // `x`'s extents, a broadcast whose size is the same in both traces as a fixed axis.
  std::vector<const UOp*> fixed_bcast_of(const UOp* x) const {
    std::vector<const UOp*> r = ext.at(x);
    const UOp* xb = t.twin.at(x);
    for (size_t i = 0; i < r.size(); ++i)
      if (r[i] == broadcast && x->shape[i] == xb->shape[i]) r[i] = nullptr;
    return r;
  }

  // `a`'s extents from its sources', per op family (`b` is its twin in trace b).
  std::vector<const UOp*> rule(const UOp* a, const UOp* b) {
    if (const Graph::Window* w = t.ga.window(a)) return window_rule(a, *w);
    // An ASSIGN is its state buffer (run-time sizes as the buffer's); the value written may have
    // run-time sizes of its own (the tokens of this run), and the offset is an index expression.
    if (a->op == Op::Assign) return ext.at(a->src[0]);
    if (is_elementwise(a->op) || a->op == Op::Contiguous) return elementwise_rule(a);
    switch (a->op) {
      case Op::Const:
      case Op::Var: return std::vector<const UOp*>(a->shape.size(), nullptr);
      case Op::Buffer: return buffer_rule(a, b);
      case Op::Reduce: return reduce_rule(a, sized_input(a));
      case Op::Pad: return pad_rule(a, b, sized_input(a));
      case Op::Flip: return flip_rule(a, sized_input(a));
      case Op::Expand: return expand_rule(a, ext.at(a->src[0]));
      case Op::Permute: return permute_rule(a, ext.at(a->src[0]));
      // (To reshapes, a broadcast of a fixed size merges with other axes like any fixed axis.)
      case Op::Reshape: return reshape_rule(a, fixed_bcast_of(a->src[0]));
      case Op::Shrink: return shrink_rule(a, b, sized_input(a));
      default: t.fail(a, "is not a tensor-level op");
    }
  }

  void want(const UOp* a, bool ok, const std::string& why) const {
    if (!ok) t.fail(a, why);
  }

  // [lead..., positions..., taps...] over [lead..., spatial...]: a position's window starts at
  // o * stride, so there are ceil((E - dilation * (k - 1)) / stride) of them.
  std::vector<const UOp*> window_rule(const UOp* a, const Graph::Window& w) {
    std::vector<const UOp*> out(a->shape.size(), nullptr);
    const std::vector<const UOp*> in = fixed_bcast_of(w.of);
    size_t nk = w.k.size(), lead = in.size() - nk;
    for (size_t i = 0; i < lead; ++i) out[i] = in[i];
    for (size_t i = 0; i < nk; ++i) {
      // Windows over a broadcast (an average pool's count of ones) are all the same.
      const UOp* e = in[lead + i];
      want(a, !mixed(e), "takes windows over an axis that merges the dynamic dim with others");
      int64_t span = w.dilation[i] * (w.k[i] - 1);
      out[lead + i] = dyn(e) ? simp(sym.idiv(sym.add(e, w.stride[i] - 1 - span), w.stride[i])) : e;
    }
    return out;
  }

  // To reduces, pads, slices and flips, a broadcast of the same size in both traces is fixed; an
  // axis that merges the dim with others they must leave alone.
  std::vector<const UOp*> sized_input(const UOp* a) {
    std::vector<const UOp*> in = fixed_bcast_of(a->src[0]);
    for (size_t i = 0; i < in.size(); ++i) {
      bool touched = a->op == Op::Reduce ? std::count(a->reduce().axes.begin(), a->reduce().axes.end(), int64_t(i)) > 0
                     : a->op == Op::Pad  ? a->ints()[2 * i] != 0 || a->ints()[2 * i + 1] != 0
                     : a->op == Op::Flip ? a->ints()[i] != 0
                                         : a->ints()[2 * i] != 0 || a->ints()[2 * i + 1] != a->src[0]->shape[i];
      want(a, !mixed(in[i]) || !touched,
           "reduces, pads, slices or reverses an axis that merges the dynamic dim with others");
    }
    return in;
  }

  // Whether run-time sizes x and y (index expressions over the VAR, or markers) are equal at every
  // size of the dim that is a multiple of `every` (a multiple of the step), up to the bound: what
  // the simplifier cannot show for sizes rounded apart (ceil(W / 16) and 2 * ceil(W / 32)) is
  // counted out, the VAR having a value of at most its bound.
  bool same_values(const UOp* x, const UOp* y, int64_t every) const {
    if (!dyn(x) || !dyn(y)) return false;
    for (int64_t size = every; size <= t.size_a; size += every)
      if (eval_index(x, {{var, value(size)}}) != eval_index(y, {{var, value(size)}})) return false;
    return true;
  }

  // Where two run-time sizes differ only at some sizes of the dim: the least step, a multiple of
  // the one given, at whose every multiple up to the bound they are equal (two strided paths
  // that meet again after an upsampling: a detector's sizes at multiples of 32), as the flag that
  // asks for it. Empty when there is none with room for two steps under the bound.
  std::string step_hint(const UOp* x, const UOp* y) const {
    if (!dyn(x) || !dyn(y)) return "";
    for (int64_t s = 2 * step; s <= t.size_a / 2 && s <= 4096; s += step)
      if (same_values(x, y, s)) {
        const std::string& name = var->var().name;
        return "; they agree when '" + name + "' is a multiple of " + std::to_string(s) + ": --dynamic " + name + "=" +
               std::to_string(t.size_a / s * s) + "/" + std::to_string(s);
      }
    return "";
  }

  // Operands agree on every axis (a broadcast agrees with anything).
  std::vector<const UOp*> elementwise_rule(const UOp* a) {
    std::vector<const UOp*> out(a->shape.size(), nullptr);
    for (size_t i = 0; i < out.size(); ++i) {
      bool first = true;
      for (const UOp* x : a->src) {
        const UOp* e = ext.at(x)[i];
        if (e == broadcast) {
          if (first) out[i] = e;
          continue;
        }
        if (!(first || out[i] == broadcast || out[i] == e || same_values(out[i], e, step)))
          t.fail(a, "combines tensors whose run-time sizes differ along axis " + std::to_string(i) + " (" +
                        extent_str(out[i]) + " and " + extent_str(e) + ")" + step_hint(out[i], e));
        out[i] = e, first = false;
      }
    }
    return out;
  }

  // An input's dynamic axes are the VAR; a whole table in trace a, cut to the dim's size in trace
  // b, is the table cut to the dim.
  std::vector<const UOp*> buffer_rule(const UOp* a, const UOp* b) {
    std::vector<const UOp*> out(a->shape.size(), nullptr);
    bool cut = b->op == Op::Shrink;
    const UOp* bb = cut ? b->src[0] : b;
    const BufferInfo &ia = t.ga.buffer(a->ival()), &ib = t.gb.buffer(bb->ival());
    want(a, ia.kind == ib.kind, "is built differently at the two sizes");
    bool differs = false;
    for (size_t i = 0; i < out.size(); ++i)
      if (a->shape[i] != b->shape[i]) {
        want(a, a->shape[i] == t.size_a && b->shape[i] == t.size_b,
             "has a dim that follows the dynamic dim other than as itself");
        if (cut) want(a, b->ints()[2 * i] == 0, "slices the dynamic dim");
        out[i] = dim, differs = true;
      }
    if (ia.kind == BufferKind::Weight)
      want(a, (!differs || cut) && ia.data && ib.data && *ia.data == *ib.data,
           "uses a constant computed from the dynamic dim's size ('" + ia.name + "')");
    return out;
  }

  std::vector<const UOp*> reduce_rule(const UOp* a, const std::vector<const UOp*>& in) {
    std::vector<const UOp*> out = in;
    for (int64_t ax : a->reduce().axes) {
      want(a, in[size_t(ax)] != broadcast, "reduces over a broadcast of the dynamic dim");
      out[size_t(ax)] = nullptr;  // a reduce over the dim stops at its run-time size
    }
    return out;
  }

  // The pad's mask compares with the run-time size, so the padding follows the data. An amount
  // that differs between the traces follows another run-time size (a concat's piece after or
  // before one of run-time size): the amount before is an offset.
  std::vector<const UOp*> pad_rule(const UOp* a, const UOp* b, const std::vector<const UOp*>& in) {
    std::vector<const UOp*> out(a->shape.size(), nullptr);
    const auto &p = a->ints(), &pb = b->ints();
    for (size_t i = 0; i < out.size(); ++i) {
      const UOp* e = in[i];
      want(a, e != broadcast || (p[2 * i] == 0 && p[2 * i + 1] == 0), "pads a broadcast of the dynamic dim");
      const UOp* size = dyn(e) ? e : e ? nullptr : g.cint(a->src[0]->shape[i]);
      for (int side = 0; side < 2; ++side) {
        int64_t amount = p[2 * i + size_t(side)];
        if (amount == pb[2 * i + size_t(side)]) {
          if (size) size = sym.add(size, amount);
          continue;
        }
        want(a, size != nullptr, "pads a merged or broadcast axis by an amount that follows the dynamic dim");
        const UOp* x = sized_like(amount, pb[2 * i + size_t(side)]);
        if (!x)
          t.fail(a, "pads by an amount that follows the dynamic dim (" + std::to_string(amount) + " at size " +
                        std::to_string(t.size_a) + ", " + std::to_string(pb[2 * i + size_t(side)]) + " at " +
                        std::to_string(t.size_b) + ") in a way tgc does not derive");
        if (side == 0) offset[{a, int64_t(i)}] = x;
        size = sym.add(size, x);
      }
      out[i] = size && !size->is_const() ? simp(size) : e;
    }
    return out;
  }

  std::vector<const UOp*> flip_rule(const UOp* a, const std::vector<const UOp*>& in) {
    for (size_t i = 0; i < in.size(); ++i) want(a, !dyn(in[i]) || a->ints()[i] == 0, "reverses the dynamic dim");
    return in;
  }

  // Every expanded axis: its extent at run time is whatever its operands' is (a strided size can
  // be equal in both traces, so the traces cannot tell).
  std::vector<const UOp*> expand_rule(const UOp* a, const std::vector<const UOp*>& in) {
    std::vector<const UOp*> out(a->shape.size(), nullptr);
    for (size_t i = 0; i < out.size(); ++i) out[i] = a->src[0]->shape[i] == 1 && a->shape[i] != 1 ? broadcast : in[i];
    return out;
  }

  std::vector<const UOp*> permute_rule(const UOp* a, const std::vector<const UOp*>& in) {
    std::vector<const UOp*> out(a->shape.size(), nullptr);
    for (size_t i = 0; i < out.size(); ++i) out[i] = in[size_t(a->ints()[i])];
    return out;
  }

  // The dim's part of each input axis (the axis itself, or its part of a merged axis) at its
  // stride in the row-major order, which a reshape keeps: an output axis of that size and stride
  // is the dim again; one that holds it with other dims is a merged axis.
  std::vector<const UOp*> reshape_rule(const UOp* a, const std::vector<const UOp*>& in) {
    const size_t n = a->shape.size();
    std::vector<const UOp*> out(n, nullptr);
    const Shape& sh = a->src[0]->shape;
    for (size_t i = 0; i < sh.size(); ++i) {
      const UOp* e = in[i];
      if (!e) continue;
      Mixed part{e, sh[i], dims_after(sh, int(i))};
      if (mixed(e))
        part = Mixed{mixed_info.at(e).extent, mixed_info.at(e).size, mixed_info.at(e).stride * dims_after(sh, int(i))};
      bool found = false;
      for (size_t j = 0; j < n && !found; ++j) {
        int64_t st = dims_after(a->shape, int(j));
        if (a->shape[j] == part.size && st == part.stride) {
          want(a, !out[j], "reshapes two dynamic axes into one");
          out[j] = part.extent, found = true;
        } else if (dyn(e) && part.stride % st == 0 && st * a->shape[j] == part.stride * part.size) {
          // The dim is the outermost part of the merged axis (a nearest upsample's [H, 8] ->
          // [8H]): its positions below E * inner are a prefix, the run-time size.
          want(a, !out[j], "reshapes two dynamic axes into one");
          out[j] = simp(sym.mul(part.extent, part.stride / st)), found = true;
        } else if (e != broadcast && part.stride % st == 0 && (st * a->shape[j]) % (part.stride * part.size) == 0) {
          want(a, !out[j], "reshapes two dynamic axes into one");
          out[j] = mixed_marker(Mixed{part.extent, part.size, part.stride / st}), found = true;
        }
      }
      want(a, found, "reshapes across the dynamic dim (" + shape_str(sh) + " to " + shape_str(a->shape) + ")");
    }
    return out;
  }

  // Per axis: fixed bounds on a fixed axis; on a dim that follows the run-time size, a fixed start
  // and an end at a fixed distance from its end; a fixed axis cut to the dim's size (a table of
  // positions).
  // (Trace b may have the whole source: a cut that is no op there, see pair_up.)
  std::vector<const UOp*> shrink_rule(const UOp* a, const UOp* b, const std::vector<const UOp*>& in) {
    std::vector<const UOp*> out(a->shape.size(), nullptr);
    const std::vector<int64_t>& pa = a->ints();
    const Shape& sa = a->src[0]->shape;
    const Shape& sb = b->op == Op::Shrink ? b->src[0]->shape : b->shape;
    std::vector<int64_t> pb;
    if (b->op == Op::Shrink)
      pb = b->ints();
    else
      for (int64_t d : sb) pb.push_back(0), pb.push_back(d);
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t lo = pa[2 * i], hi = pa[2 * i + 1];
      bool same_lo = lo == pb[2 * i];
      const UOp* e = in[i];
      if (!e) {
        if (same_lo && hi == pb[2 * i + 1]) continue;
        want(a, same_lo && hi - lo == t.size_a && pb[2 * i + 1] - lo == t.size_b, "slices by the dynamic dim's size");
        out[i] = dim;
      } else if (e == broadcast) {
        want(a, lo == 0 && hi == sa[i] && pb[2 * i + 1] == sb[i], "slices a broadcast of the dynamic dim");
        out[i] = e;
      } else if (b->op != Op::Shrink && lo == 0 && !mixed(e)) {
        // A cut to the first `hi` of a dim that trace b holds whole: the run-time size up
        // to hi, which the side of an If built for it checks (onnx_ops_control.cpp).
        out[i] = simp(sym.mul(g.make(Op::Max, DType::Index, {sym.mul(e, -1), g.cint(-hi)}), -1));
      } else if (same_lo && hi == pb[2 * i + 1]) {
        // A fixed part (a reflect pad's first elements): exact where the data reaches hi.
        want(a, !mixed(e), "slices an axis that merges the dynamic dim with others");
        need(e, hi);
      } else if (same_lo) {
        want(a, sa[i] - hi == sb[i] - pb[2 * i + 1],
             "slices the dynamic dim other than at fixed distances from its ends");
        out[i] = simp(sym.add(e, -(sa[i] - hi) - lo));
      } else {
        // Both ends at fixed distances from the dim's end (a reflect pad's last elements):
        // a fixed size, starting at a run-time offset.
        want(a, !mixed(e) && sa[i] - lo == sb[i] - pb[2 * i] && sa[i] - hi == sb[i] - pb[2 * i + 1],
             "slices the dynamic dim other than at fixed distances from its ends ([" + std::to_string(lo) + ", " +
                 std::to_string(hi) + ") of " + std::to_string(sa[i]) + " at size " + std::to_string(t.size_a) + ", [" +
                 std::to_string(pb[2 * i]) + ", " + std::to_string(pb[2 * i + 1]) + ") of " + std::to_string(sb[i]) +
                 " at " + std::to_string(t.size_b) + ")");
        offset[{a, int64_t(i)}] = simp(sym.add(e, lo - sa[i]));
        need(e, sa[i] - lo);
      }
    }
    return out;
  }

  // Each extent must give trace a's size at the bound (also as its upper bound: the layout the
  // kernels index) and trace b's at the other size.
  void check(const UOp* a, const UOp* b, const std::vector<const UOp*>& e) const {
    for (size_t i = 0; i < e.size(); ++i) {
      bool ok;
      if (!e[i])
        ok = a->shape[i] == b->shape[i];
      else if (e[i] == broadcast || mixed(e[i]))
        ok = true;
      else
        ok = e[i]->vmax == a->shape[i] && eval_index(e[i], {{var, value(t.size_a)}}) == a->shape[i] &&
             eval_index(e[i], {{var, value(t.size_b)}}) == b->shape[i];
      if (!ok)
        t.fail(a, "has shape " + shape_str(a->shape) + " at size " + std::to_string(t.size_a) + " and " +
                      shape_str(b->shape) + " at " + std::to_string(t.size_b) + ": its dim " + std::to_string(i) +
                      " follows the dynamic dim in a way tgc does not derive (derived: " + extent_str(e[i]) + ")");
    }
  }
};

}  // namespace

VarExtents var_extents(Graph& ga, const std::vector<const UOp*>& roots_a, const UOp* var, const Graph& gb,
                       const std::vector<const UOp*>& roots_b, int64_t size_b) {
  if (roots_a.size() != roots_b.size()) throw Error("the graph has a different number of outputs at each size");
  int64_t size_a = var->var().max * ga.var_step(var);
  if (size_b % ga.var_step(var) != 0)
    throw Error("internal error: a trace at " + std::to_string(size_b) + ", not a multiple of the step");
  Traces t{ga, gb, size_a, size_b, {}, {}, {}};
  t.label(roots_a);
  t.pair_up(roots_a, roots_b, /*whole_cuts=*/true);
  VarExtents r;
  r.broadcast = ga.cint(-1);  // never an extent
  VarRules rules{t, ga, var, r.broadcast, {}};
  std::vector<const UOp*> sized_consts;  // float constants that differ between the traces
  std::vector<const UOp*> counts;        // per reduce over the dim: how many elements it takes
  for (const UOp* a : rules.order(roots_a)) {
    const UOp* b = t.twin.at(a);
    // Arguments must agree, but for shapes (checked below) and the slices and buffers the rules
    // take; a float constant may be 1 / a reduce's count (a mean), resolved below.
    bool own_arg =
        a->op == Op::Buffer || a->op == Op::Shrink || a->op == Op::Pad || a->op == Op::Reshape || a->op == Op::Expand;
    if (!own_arg && a->arg != b->arg) {
      if (a->op == Op::Const && is_float(a->dtype) && a->shape.empty())
        sized_consts.push_back(a);
      else
        t.fail(a, "takes a value computed from the dynamic dim's size");
    }
    std::vector<const UOp*> e = rules.rule(a, b);
    // A size that is 1 at the bound is 1 at every size the model accepts (what a strided
    // encoder makes of a short input): fixed, like the size-1 axes beside it that a reshape
    // could not tell it from.
    for (const UOp*& x : e) {
      rules.need(x, 1);
      if (rules.dyn(x) && x->vmax <= 1) x = nullptr;
    }
    rules.check(a, b, e);
    if (a->op == Op::Reduce) {
      const UOp* n = nullptr;
      int64_t fixed = 1;
      for (int64_t ax : a->reduce().axes) {
        const UOp* x = rules.ext.at(a->src[0])[size_t(ax)];
        if (rules.dyn(x))
          n = n ? rules.sym.mul(n, x) : x;
        else
          fixed *= a->src[0]->shape[size_t(ax)];
      }
      if (n) counts.push_back(rules.simp(rules.sym.mul(n, fixed)));
    }
    for (const UOp* x : e)
      if (rules.dyn(x) && std::find(rules.sizes_seen.begin(), rules.sizes_seen.end(), x) == rules.sizes_seen.end())
        rules.sizes_seen.push_back(x);
    rules.ext[a] = std::move(e);
  }
  // A mean over the dim multiplies by 1 / count: at run time that is 1 / the count's value.
  for (const UOp* c : sized_consts) {
    double va = c->fval(), vb = t.twin.at(c)->fval();
    auto near = [](double v, double want) { return std::abs(v - want) <= 1e-6 * std::abs(want); };
    const UOp* found = nullptr;
    for (const UOp* n : counts)
      if (!found && near(va, 1.0 / double(eval_index(n, {{var, rules.value(size_a)}}))) &&
          near(vb, 1.0 / double(eval_index(n, {{var, rules.value(size_b)}}))))
        found = n;
    if (!found) t.fail(c, "takes a value computed from the dynamic dim's size");
    r.reciprocal_of[c] = found;
  }
  for (const UOp* root : roots_a) {  // outputs: fixed or the dim
    rules.ext[root] = rules.fixed_bcast_of(root);
    for (const UOp* e : rules.ext[root])
      if (rules.mixed(e)) t.fail(root, "is an output with the dynamic dim merged into another axis");
  }
  r.extent = std::move(rules.ext);
  r.offset = std::move(rules.offset);
  // Run-time sizes never shrink as the VAR grows (sums, divisions by positive constants, the
  // least of two): the least VAR value that meets every need, by bisection.
  auto meets = [&](int64_t v) {
    for (const auto& [size, least] : rules.needs)
      if (eval_index(size, {{var, v}}) < least) return false;
    return true;
  };
  int64_t lo = 0, hi = var->var().max;  // meets(hi): the bound's sizes are the layout's
  while (hi - lo > 1) (meets((lo + hi) / 2) ? hi : lo) = (lo + hi) / 2;
  r.min_value = hi;
  return r;
}

}  // namespace tgc
