#include "passes/output_phases.h"

#include "ir/error.h"
#include "ir/symbolic.h"

namespace tgc {

namespace {
// Whether every load's and the store's index is affine along r.
bool affine_along(Graph& g, const Kernel& k, const UOp* r) {
  for (const UOp* u : toposort({k.ast}))
    if ((u->op == Op::Load || u->op == Op::Store) && depends_on(u->src[1], r) && !stride_along(g, u->src[1], r))
      return false;
  return true;
}
}  // namespace

std::vector<Opt> output_phases(Graph& g, const Kernel& k, const TargetProfile& t) {
  std::vector<Opt> opts;
  Kernel cur = k;
  for (size_t a = 0; a < k.global_ranges.size(); ++a) {
    const UOp* r = cur.global_ranges[a];
    if (!r->src[0]->is_const() || affine_along(g, cur, r)) continue;
    bool split = false;
    for (int64_t s : {2, 3, 4}) {
      if (range_extent(r) % s) continue;
      try {
        Kernel next = apply_opts(g, cur, {{OptOp::Upcast, int(a), s}}, t);
        if (!affine_along(g, next, next.global_ranges[a])) continue;
        opts.push_back({OptOp::Upcast, int(a), s});
        cur = next;
        split = true;
        break;
      } catch (const Error&) {
      }
    }
    if (!split) return {};
  }
  return opts;
}

}  // namespace tgc
