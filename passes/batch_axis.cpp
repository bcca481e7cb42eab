#include "passes/batch_axis.h"

#include <unordered_map>

#include "ir/error.h"

namespace tgc {
namespace {

struct BatchAxes {
  const Graph& ga;
  const Graph& gb;
  int64_t size_a, size_b;
  std::unordered_map<const UOp*, const UOp*> twin, twin_of_b;  // a node <-> its b node
  // a node -> batch axis or -1. The batch may be merged into its axis as the outermost factor
  // (softmax's [N*T, C] rows): that dim is size * extent, the extent being one sample's part.
  std::unordered_map<const UOp*, int> axis;
  std::unordered_map<const UOp*, int64_t> extent;
  std::unordered_map<const UOp*, const std::string*> where;     // a node -> its model node

  [[noreturn]] void fail(const UOp* u, const std::string& why) const {
    auto it = where.find(u);
    std::string who = it != where.end() && it->second ? "node '" + *it->second + "'" : "the graph";
    throw Error(who + " (" + std::string(op_name(u->op)) + ") " + why);
  }

  void pair_up(const std::vector<const UOp*>& roots_a, const std::vector<const UOp*>& roots_b) {
    std::vector<std::pair<const UOp*, const UOp*>> work;
    for (size_t i = 0; i < roots_a.size(); ++i) work.push_back({roots_a[i], roots_b[i]});
    while (!work.empty()) {
      auto [a, b] = work.back();
      work.pop_back();
      auto [it, fresh] = twin.try_emplace(a, b);
      auto [back, fresh_b] = twin_of_b.try_emplace(b, a);
      if (it->second != b || back->second != a) fail(a, "is built differently at batch sizes " + sizes());
      if (!fresh) continue;
      if (a->op != b->op || a->dtype != b->dtype || a->src.size() != b->src.size())
        fail(a, "is built differently at batch sizes " + sizes() + " (" + std::string(op_name(b->op)) + " at " + std::to_string(size_b) + ")");
      for (size_t i = 0; i < a->src.size(); ++i) work.push_back({a->src[i], b->src[i]});
    }
  }

  std::string sizes() const { return std::to_string(size_a) + " and " + std::to_string(size_b); }

  // The axis where the two shapes differ as the batch sizes do (size * extent); -1 when they are equal.
  int shape_axis(const UOp* a, const UOp* b, int64_t& ext) const {
    int ax = -1;
    bool ok = a->shape.size() == b->shape.size();
    for (size_t i = 0; ok && i < a->shape.size(); ++i) {
      int64_t da = a->shape[i], db = b->shape[i];
      if (da == db) continue;
      ok = ax < 0 && da % size_a == 0 && db % size_b == 0 && da / size_a == db / size_b;
      ax = int(i);
      ext = da / size_a;
    }
    if (!ok)
      fail(a, "has shape " + shape_str(a->shape) + " at batch size " + std::to_string(size_a) + " and " + shape_str(b->shape) +
                  " at " + std::to_string(size_b) + ": its dims follow the batch size in a way one sample's program cannot");
    return ax;
  }

  void check_args(const UOp* a, const UOp* b, int ax, int64_t ext) const {
    switch (a->op) {
      case Op::Reshape: case Op::Expand: return;  // the arg is the shape, checked already
      case Op::Buffer: {
        const BufferInfo &ia = ga.buffer(a->ival()), &ib = gb.buffer(b->ival());
        if (ia.kind != ib.kind) fail(a, "is built differently at batch sizes " + sizes());
        if (ia.kind == BufferKind::Input && (ax > 0 || ext != 1)) fail(a, "input '" + ia.name + "' does not have the batch first");
        if (ia.kind == BufferKind::Weight && (ax >= 0 || !ia.data || !ib.data || *ia.data != *ib.data))
          fail(a, "uses a constant computed from the batch size ('" + ia.name + "'), which differs per batch size, not per sample");
        return;
      }
      case Op::Shrink: {
        std::vector<int64_t> pa = a->ints(), pb = b->ints();
        if (ax >= 0 && pa[2 * ax] == 0 && pa[2 * ax + 1] == size_a * ext && pb[2 * ax] == 0 && pb[2 * ax + 1] == size_b * ext)
          pa[2 * ax + 1] = pb[2 * ax + 1];
        if (pa != pb) fail(a, "takes a slice that depends on the batch size");
        return;
      }
      default:
        if (a->arg != b->arg) fail(a, "takes a value computed from the batch size (it differs at batch sizes " + sizes() + ")");
    }
  }

  // The rules that keep the samples of a batch apart.
  void check_rule(const UOp* a, int ax, int64_t ext) const {
    int s = a->src.empty() ? -1 : axis.at(a->src[0]);
    int64_t se = a->src.empty() ? 1 : extent.at(a->src[0]);
    auto want = [&](bool ok, const std::string& why) {
      if (!ok) fail(a, why);
    };
    if (is_elementwise(a->op) || a->op == Op::Contiguous || a->op == Op::Assign) {
      for (const UOp* x : a->src) want(axis.at(x) == ax, "combines tensors whose batch axes differ");
      return;
    }
    switch (a->op) {
      case Op::Buffer: case Op::Const: return;
      case Op::Reduce: want(s == ax, "reduces over the batch dim"); return;
      case Op::Pad: case Op::Shrink: want(s == ax, "pads or slices the batch dim"); return;
      case Op::Flip: want(s == ax && (s < 0 || a->ints()[size_t(s)] == 0), "reverses the batch dim"); return;
      case Op::Expand: want(s < 0 || (s == ax && se == ext), "moves the batch dim"); return;
      case Op::Permute: want(s < 0 ? ax < 0 : ax >= 0 && a->ints()[size_t(ax)] == s, "moves the batch dim inconsistently"); return;
      case Op::Reshape: {
        const Shape& in = a->src[0]->shape;
        auto before = [](const Shape& sh, int k) {
          int64_t n = 1;
          for (int i = 0; i < k; ++i) n *= sh[size_t(i)];
          return n;
        };
        want(s < 0 ? ax < 0 : ax >= 0 && before(in, s) == before(a->shape, ax),
             "reshapes across the batch dim (" + shape_str(in) + " to " + shape_str(a->shape) + ")");
        return;
      }
      default: fail(a, "is not a tensor-level op");
    }
  }
};

}  // namespace

std::vector<int> batch_axes(const Graph& ga, const std::vector<const UOp*>& roots_a, int64_t size_a,
                            const Graph& gb, const std::vector<const UOp*>& roots_b, int64_t size_b) {
  if (roots_a.size() != roots_b.size()) throw Error("the graph has a different number of outputs at each batch size");
  BatchAxes c{ga, gb, size_a, size_b, {}, {}, {}, {}, {}};
  std::vector<const UOp*> order = toposort(roots_a);
  // Errors name the model node a tensor belongs to: its own, or that of its first consumer.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::string*& w = c.where[*it];
    if (const std::string* o = ga.origin(*it)) w = o;
    for (const UOp* s : (*it)->src)
      if (!c.where[s]) c.where[s] = w;
  }
  c.pair_up(roots_a, roots_b);
  for (const UOp* a : order) {
    const UOp* b = c.twin.at(a);
    int64_t ext = 1;
    int ax = c.shape_axis(a, b, ext);
    c.check_args(a, b, ax, ext);
    c.check_rule(a, ax, ext);
    c.axis[a] = ax;
    c.extent[a] = ext;
  }
  std::vector<int> out;
  for (const UOp* r : roots_a)
    if (c.extent.at(r) != 1) c.fail(r, "is an output with the batch merged into another dim");
    else out.push_back(c.axis.at(r));
  return out;
}

}  // namespace tgc
