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

}  // namespace

void merge_axes(Graph& g, Schedule& s, const TargetProfile& t) {
  if (t.gpu) return;
  for (Kernel& k : s.kernels) {
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
