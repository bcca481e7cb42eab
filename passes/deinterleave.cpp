#include "passes/deinterleave.h"

#include <map>

#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "passes/pack.h"

namespace tgc {

namespace {

// The load to split and its stride: an ungated load of an intermediate or input that the
// reduce reads `s` elements apart along the output's contiguous axis j, in a kernel where no
// load is contiguous along j.
const UOp* strided_load(Graph& g, const Kernel& k, const UOp* j, int64_t& s) {
  const UOp* found = nullptr;
  std::vector<const UOp*> nodes = toposort({k.ast});
  for (const UOp* l : nodes) {
    if (l->op != Op::Load) continue;
    std::optional<int64_t> along = stride_along(g, l->src[1], j);
    if (along == 1) return nullptr;
    const BufferInfo& b = g.buffer(l->src[0]->ival());
    if (found || l->src.size() != 2 || b.data || !along || *along < 2 || *along > 4 || numel(b.shape) % *along)
      continue;
    found = l, s = *along;
  }
  // The copy replaces the buffer in the kernel's inputs: no other load may read it.
  for (const UOp* l : nodes)
    if (found && l->op == Op::Load && l != found && l->src[0]->ival() == found->src[0]->ival()) return nullptr;
  return found;
}
}  // namespace

void deinterleave_strided(Graph& g, Schedule& s, const TargetProfile& t) {
  if (t.gpu) return;
  std::map<std::pair<int64_t, int64_t>, int64_t> phases;  // (B, stride) -> P
  std::vector<Kernel> out;
  for (Kernel& k : s.kernels) {
    const UOp* j = k.global_ranges.empty() ? nullptr : k.global_ranges.back();
    int64_t stride = 0;
    const UOp* load = j && k.num_reduces && j->src[0]->is_const() && stride_along(g, k.ast->src[1], j) == 1
                          ? strided_load(g, k, j, stride)
                          : nullptr;
    int64_t from = load ? load->src[0]->ival() : -1;
    // Panels one element wide: P[x % s][x / s].
    const UOp* idx =
        load ? simplify(g, panel_index(g, load->src[1], stride, numel(g.buffer(from).shape) / stride, 1)) : nullptr;
    // Only where the index simplifies to neighbours along j (x % s and x / s split off j's term).
    if (!idx || stride_along(g, idx, j) != 1) {
      out.push_back(std::move(k));
      continue;
    }
    BufferInfo b = g.buffer(from);
    auto key = std::make_pair(from, stride);
    bool made = phases.count(key);
    int64_t to =
        made ? phases.at(key)
             : g.add_buffer(
                   {b.name + "_phases", b.dtype, {stride, numel(b.shape) / stride}, BufferKind::Intermediate, nullptr});
    if (!made) {
      phases[key] = to;
      Kernel pk = pack_kernel(g, from, to, stride, 1);
      pk.node = k.node;  // (runs where its reader runs: the same If guard)
      out.push_back(std::move(pk));
    }
    Kernel split = k;
    split.ast = simplify(
        g, substitute(g, k.ast, {{load, g.make(Op::Load, b.dtype, {g.make(Op::Buffer, b.dtype, {}, to), idx})}}));
    replace_input(split, from, to);
    out.push_back(std::move(split));
  }
  s.kernels = std::move(out);
  renumber_kernels(s);
}

}  // namespace tgc
