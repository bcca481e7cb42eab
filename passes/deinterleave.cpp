#include "passes/deinterleave.h"

#include <map>
#include <tuple>

#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "passes/opt.h"
#include "passes/pack.h"

namespace tgc {

bool reused_row(Graph& g, const Kernel& k, const UOp* x, const UOp* j) {
  int64_t reuse = 1;
  for (const UOp* r : k.global_ranges)
    if (r != j && r->src[0]->is_const() && !depends_on(x, r)) reuse *= range_extent(r);
  if (reuse < 8) return false;
  for (const UOp* red : toposort({k.ast}))
    if (red->op == Op::KReduce)
      for (size_t i = 1; i < red->src.size(); ++i)
        if (stride_along(g, x, red->src[i]) == 1) return true;
  return false;
}

namespace {

// The load to split and its stride: an ungated load of an intermediate or input that the
// reduce reads `s` elements apart along the output's contiguous axis j, in a kernel where no
// load is contiguous along j: s of 2 to 4 (a strided conv's input), or any s where the load
// reads rows of a transposed operand (the keys of attention's scores, Q K^T), whose copy split by
// phase is that operand transposed back: a product with lanes along j.
const UOp* strided_load(Graph& g, const Kernel& k, const UOp* j, int64_t& s) {
  const UOp* found = nullptr;
  std::vector<const UOp*> nodes = toposort({k.ast});
  for (const UOp* l : nodes) {
    if (l->op != Op::Load) continue;
    std::optional<int64_t> along = stride_along(g, l->src[1], j);
    if (along == 1) return nullptr;
    const BufferInfo& b = g.buffer(l->src[0]->ival());
    if (found || l->src.size() != 2 || b.data || !along || *along < 2 || numel(b.shape) % *along ||
        (*along > 4 && !reused_row(g, k, l->src[1], j)))
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
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> phases;  // (B, stride, rows) -> P
  std::vector<Kernel> out;
  for (Kernel& k : s.kernels) {
    const UOp* j = k.global_ranges.empty() ? nullptr : k.global_ranges.back();
    int64_t stride = 0;
    const UOp* load = j && k.num_reduces && j->src[0]->is_const() && stride_along(g, k.ast->src[1], j) == 1
                          ? strided_load(g, k, j, stride)
                          : nullptr;
    int64_t from = load ? load->src[0]->ival() : -1;
    int64_t rows = load ? numel(g.buffer(from).shape) / stride : 0, padded = rows;
    // A transposed operand whose rows fill no whole vectors (1500 positions: 4 lanes) is copied
    // with its rows padded to whole vectors where that wastes at most an eighth, and j with them:
    // the positions past the end are computed from zeros and not stored.
    if (load && stride > 4 && range_extent(j) == rows && narrow_rows(rows, t)) {
      int64_t lanes = t.vector_lanes, up = (rows + lanes - 1) / lanes * lanes;
      if ((up - rows) * 8 <= rows) padded = up;
    }
    // Panels one element wide: P[x % s][x / s].
    const UOp* idx = load ? simplify(g, panel_index(g, load->src[1], stride, padded, 1)) : nullptr;
    // Only where the index simplifies to neighbours along j (x % s and x / s split off j's term).
    if (!idx || stride_along(g, idx, j) != 1) {
      out.push_back(std::move(k));
      continue;
    }
    BufferInfo b = g.buffer(from);
    auto key = std::make_tuple(from, stride, padded);
    bool made = phases.count(key);
    int64_t to = made
                     ? phases.at(key)
                     : g.add_buffer({b.name + "_phases", b.dtype, {stride, padded}, BufferKind::Intermediate, nullptr});
    if (!made) {
      phases[key] = to;
      Kernel pk = pack_kernel(g, from, to, stride, 1, padded);
      pk.node = k.node;  // (runs where its reader runs: the same If guard)
      out.push_back(std::move(pk));
    }
    Kernel split = k;
    split.ast = simplify(
        g, substitute(g, k.ast, {{load, g.make(Op::Load, b.dtype, {g.make(Op::Buffer, b.dtype, {}, to), idx})}}));
    replace_input(split, from, to);
    out.push_back(padded == rows ? std::move(split) : pad_axis(g, split, j, t.vector_lanes));
  }
  s.kernels = std::move(out);
  renumber_kernels(s);
}

}  // namespace tgc
