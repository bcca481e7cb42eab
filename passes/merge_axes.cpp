#include "passes/merge_axes.h"

#include <algorithm>

#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "passes/opt.h"

namespace tgc {

namespace {

// The indices of the loads under `root`.
std::vector<const UOp*> load_indices(const UOp* root) {
  std::vector<const UOp*> out;
  for (const UOp* u : toposort({root}))
    if (u->op == Op::Load) out.push_back(u->src[1]);
  return out;
}

// The loads' and the store's indices.
std::vector<const UOp*> indices(const Kernel& k) {
  std::vector<const UOp*> out = load_indices(k.ast);
  out.insert(out.begin(), k.ast->src[1]);
  return out;
}

// Whether every index walks axes a and b as one run (a's step is b's times b's extent).
bool walks_as_one(Graph& g, const std::vector<const UOp*>& idx, const UOp* a, const UOp* b) {
  return !idx.empty() && std::all_of(idx.begin(), idx.end(), [&](const UOp* i) {
    std::optional<int64_t> sa = stride_along(g, i, a), sb = stride_along(g, i, b);
    return sa && sb && *sa == *sb * range_extent(b);
  });
}

// `root` with a and b replaced by the merged range m (a = m / b's extent, b = m % it), where
// every index under it became affine in m; nullptr elsewhere.
const UOp* merged_into(Graph& g, const UOp* root, const UOp* a, const UOp* b, const UOp* m) {
  Sym sym{g};
  int64_t nb = range_extent(b);
  const UOp* out = simplify(g, substitute(g, root, {{a, sym.idiv(m, nb)}, {b, sym.mod(m, nb)}}));
  std::vector<const UOp*> idx = load_indices(out);
  if (root->op == Op::Store) idx.push_back(out->src[1]);
  bool affine = std::all_of(idx.begin(), idx.end(), [&](const UOp* i) { return stride_along(g, i, m).has_value(); });
  return affine ? out : nullptr;
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
        b->range().kind != RangeKind::Reduce || !walks_as_one(g, load_indices(u->src[0]), a, b))
      continue;
    const UOp* m = g.range(range_extent(a) * range_extent(b), next_range_id(k), RangeKind::Reduce);
    const UOp* value = merged_into(g, u->src[0], a, b, m);
    if (!value) continue;
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
    if (vector_width(na * nb, t) <= vector_width(nb, t) || !walks_as_one(g, indices(k), a, b)) continue;
    const UOp* m = g.range(na * nb, next_range_id(k), RangeKind::Global);
    if (const UOp* ast = merged_into(g, k.ast, a, b, m)) {
      k.ast = ast;
      k.global_ranges.resize(n - 2);
      k.global_ranges.push_back(m);
    }
  }
}

}  // namespace tgc
