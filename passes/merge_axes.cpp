#include "passes/merge_axes.h"

#include <algorithm>

#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "passes/opt.h"

namespace tgc {

namespace {

// The loads' and the store's indices.
std::vector<const UOp*> indices(const Kernel& k) {
  std::vector<const UOp*> out = {k.ast->src[1]};
  for (const UOp* u : toposort({k.ast}))
    if (u->op == Op::Load) out.push_back(u->src[1]);
  return out;
}

bool walks_as_one(Graph& g, const Kernel& k, const UOp* a, const UOp* b) {
  for (const UOp* idx : indices(k)) {
    std::optional<int64_t> sa = stride_along(g, idx, a), sb = stride_along(g, idx, b);
    if (!sa || !sb || *sa != *sb * range_extent(b)) return false;
  }
  return true;
}

// The loads of a reduce's value: what its ranges index.
std::vector<const UOp*> value_loads(const UOp* reduce) {
  std::vector<const UOp*> out;
  for (const UOp* u : toposort({reduce->src[0]}))
    if (u->op == Op::Load) out.push_back(u->src[1]);
  return out;
}

// A reduce over two axes that every load of its value walks as one (a global average pool's rows
// and columns: 14 x 14 as 196) as a reduce over one: lanes along 14 columns fit no vector of 16,
// 196 positions give 12 and a tail, and 56 x 56 as 3136 whole vectors (EfficientNet's
// squeeze-excite pools took none and ran at 15 GB/s).
Kernel merged_reduce(Graph& g, const Kernel& k) {
  for (const UOp* u : toposort({k.ast})) {
    if (u->op != Op::KReduce || u->src.size() != 3) continue;
    const UOp *a = u->src[1], *b = u->src[2];
    if (!a->src[0]->is_const() || !b->src[0]->is_const() || a->range().kind != RangeKind::Reduce ||
        b->range().kind != RangeKind::Reduce)
      continue;
    std::vector<const UOp*> idx = value_loads(u);
    bool one = !idx.empty() && std::all_of(idx.begin(), idx.end(), [&](const UOp* i) {
      std::optional<int64_t> sa = stride_along(g, i, a), sb = stride_along(g, i, b);
      return sa && sb && *sa == *sb * range_extent(b);
    });
    if (!one) continue;
    int64_t nb = range_extent(b);
    const UOp* m = g.range(range_extent(a) * nb, next_range_id(k), RangeKind::Reduce);
    Sym sym{g};
    const UOp* value = simplify(g, substitute(g, u->src[0], {{a, sym.idiv(m, nb)}, {b, sym.mod(m, nb)}}));
    std::vector<const UOp*> merged_idx = value_loads(g.make(Op::KReduce, u->dtype, {value, m}, u->arg));
    if (!std::all_of(merged_idx.begin(), merged_idx.end(),
                     [&](const UOp* i) { return stride_along(g, i, m).has_value(); }))
      continue;
    Kernel out = k;
    out.ast = substitute(g, k.ast, {{u, g.make(Op::KReduce, u->dtype, {value, m}, u->arg)}});
    return out;
  }
  return k;
}

}  // namespace

void merge_axes(Graph& g, Schedule& s, const TargetProfile& t) {
  if (t.gpu) return;
  for (Kernel& k : s.kernels) {
    k = merged_reduce(g, k);
    size_t n = k.global_ranges.size();
    if (n < 2 || std::count(k.inputs.begin(), k.inputs.end(), g.vars_buffer())) continue;
    const UOp *a = k.global_ranges[n - 2], *b = k.global_ranges[n - 1];
    if (!a->src[0]->is_const() || !b->src[0]->is_const()) continue;
    int64_t na = range_extent(a), nb = range_extent(b);
    if (vector_width(na * nb, t) <= vector_width(nb, t) || !walks_as_one(g, k, a, b)) continue;
    const UOp* m = g.range(na * nb, next_range_id(k), RangeKind::Global);
    Sym sym{g};
    Kernel merged = k;
    merged.ast = simplify(g, substitute(g, k.ast, {{a, sym.idiv(m, nb)}, {b, sym.mod(m, nb)}}));
    merged.global_ranges.resize(n - 2);
    merged.global_ranges.push_back(m);
    // Only where every index became affine in the merged axis.
    std::vector<const UOp*> idx = indices(merged);
    if (std::all_of(idx.begin(), idx.end(), [&](const UOp* i) { return stride_along(g, i, m).has_value(); }))
      k = merged;
  }
}

}  // namespace tgc
