#include "passes/pack.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "passes/opt.h"

namespace tgc {

namespace {

// A load worth packing: its buffer is read along the output's contiguous axis and, `stride`
// elements apart, along the reduce range `k`.
struct Strip {
  const UOp* load = nullptr;
  const UOp* k = nullptr;
  int64_t stride = 0;
};

std::optional<Strip> find_strip(Graph& g, const Kernel& k, const UOp* j, int64_t width, const TargetProfile& t) {
  for (const UOp* red : toposort({k.ast})) {
    if (red->op != Op::KReduce) continue;
    for (const UOp* l : toposort({red->src[0]})) {
      if (l->op != Op::Load || l->src.size() != 2 || l->src[0]->ival() == k.output) continue;
      const BufferInfo& b = g.buffer(l->src[0]->ival());
      int64_t n = numel(b.shape);
      // Smaller operands stay in L2 on their own (matmul 512, 1 MiB: the same time packed).
      if (n * dtype_size(b.dtype) <= t.l2_bytes || stride_along(g, l->src[1], j) != 1) continue;
      // Packing pays where B is read more than once: more output rows than one register tile's.
      int64_t rows = 1;
      for (const UOp* r : k.global_ranges)
        if (r != j && !depends_on(l->src[1], r)) rows *= range_extent(r);
      if (rows < 8) continue;
      for (size_t i = 1; i < red->src.size(); ++i) {
        const UOp* r = red->src[i];
        if (!r->src[0]->is_const()) continue;
        std::optional<int64_t> s = stride_along(g, l->src[1], r);
        if (s && *s >= width && *s % width == 0 && n % *s == 0) return Strip{l, r, *s};
      }
    }
  }
  return std::nullopt;
}

std::shared_ptr<const Bytes> pack_bytes(const BufferInfo& b, int64_t stride, int64_t width) {
  size_t esize = size_t(dtype_size(b.dtype));
  int64_t n = numel(b.shape), rows = n / stride;
  std::vector<uint8_t> out(b.data->size());
  for (int64_t q = 0; q < rows; ++q)
    for (int64_t p = 0; p < stride / width; ++p)
      std::memcpy(out.data() + size_t(p * rows * width + q * width) * esize,
                  b.data->data() + size_t(q * stride + p * width) * esize, size_t(width) * esize);
  return Bytes::own(std::move(out));
}

}  // namespace

const UOp* panel_index(Graph& g, const UOp* x, int64_t stride, int64_t rows, int64_t width) {
  Sym s{g};
  return s.add(s.add(s.mul(s.idiv(s.mod(x, stride), width), rows * width), s.mul(s.idiv(x, stride), width)),
               s.mod(x, width));
}

Kernel pack_kernel(Graph& g, int64_t from, int64_t to, int64_t stride, int64_t width, int64_t padded_rows) {
  const BufferInfo& b = g.buffer(from);
  int64_t rows = std::max(numel(b.shape) / stride, padded_rows);
  Sym s{g};
  const UOp *p = g.range(stride / width, 0, RangeKind::Global), *q = g.range(rows, 1, RangeKind::Global);
  // Panels one element wide (phases) have no u: the copy's inner loop is then q.
  const UOp* u = width > 1 ? g.range(width, 2, RangeKind::Global) : g.cint(0);
  std::vector<const UOp*> load = {g.make(Op::Buffer, b.dtype, {}, from),
                                  s.add(s.add(s.mul(q, stride), s.mul(p, width)), u)};
  if (rows * stride > numel(b.shape)) load.push_back(s.lt(q, numel(b.shape) / stride));  // (gated: zeros past B)
  const UOp* value = g.make(Op::Load, b.dtype, load);
  Kernel k;
  k.ast =
      g.make(Op::Store, b.dtype,
             {g.make(Op::Buffer, b.dtype, {}, to), s.add(s.add(s.mul(p, rows * width), s.mul(q, width)), u), value});
  k.global_ranges = {p, q};
  if (width > 1) k.global_ranges.push_back(u);
  k.output = to;
  k.inputs = {from};
  return k;
}

void pack_panels(Graph& g, Schedule& s, const TargetProfile& t) {
  if (t.gpu) return;
  std::map<std::tuple<int64_t, int64_t, const UOp*>, int64_t> panels;  // (B, stride, node) -> P
  std::vector<Kernel> out;
  for (Kernel& k : s.kernels) {
    bool reads_vars = std::count(k.inputs.begin(), k.inputs.end(), g.vars_buffer()) > 0;
    const UOp* j = k.global_ranges.empty() ? nullptr : k.global_ranges.back();
    // Panels as wide as the heuristic's vector tile along j: at least one whole vector.
    int64_t width = j && j->src[0]->is_const() ? vector_width(range_extent(j), t) : 0;
    std::optional<Strip> strip;
    if (k.num_reduces && width >= t.vector_lanes && !reads_vars && stride_along(g, k.ast->src[1], j) == 1)
      strip = find_strip(g, k, j, width, t);
    if (!strip) {
      out.push_back(std::move(k));
      continue;
    }
    int64_t from = strip->load->src[0]->ival();
    BufferInfo b = g.buffer(from);
    int64_t rows = numel(b.shape) / strip->stride;
    // j -> jo * width + ju, with jo outermost: a work item's panel stays in L2 across its rows.
    int64_t id = next_range_id(k);
    const UOp* jo = g.range(range_extent(j) / width, id, RangeKind::Global);
    const UOp* ju = g.range(width, id + 1, RangeKind::Global);
    Sym sym{g};
    std::unordered_map<const UOp*, const UOp*> split_j{{j, sym.add(sym.mul(jo, width), ju)}};
    // Only where the index simplifies to the panel's strides (else the packed kernel would be
    // slower than the plain one).
    const UOp* idx =
        simplify(g, substitute(g, panel_index(g, strip->load->src[1], strip->stride, rows, width), split_j));
    if (stride_along(g, idx, ju) != 1 || stride_along(g, idx, strip->k) != width ||
        stride_along(g, idx, jo) != rows * width) {
      out.push_back(std::move(k));
      continue;
    }
    auto key = std::make_tuple(from, strip->stride, k.node);
    bool made = panels.count(key);
    int64_t to = made ? panels.at(key)
                      : g.add_buffer({b.name + "_panels",
                                      b.dtype,
                                      {strip->stride / width, rows, width},
                                      b.data ? BufferKind::Weight : BufferKind::Intermediate,
                                      b.data ? pack_bytes(b, strip->stride, width) : nullptr});
    const UOp* packed = g.make(Op::Load, b.dtype, {g.make(Op::Buffer, b.dtype, {}, to), idx});
    Kernel split = k;
    split.ast = simplify(g, substitute(g, substitute(g, k.ast, {{strip->load, packed}}), split_j));
    split.global_ranges = {jo};
    for (const UOp* r : k.global_ranges)
      if (r != j) split.global_ranges.push_back(r);
    split.global_ranges.push_back(ju);
    replace_input(split, from, to);
    if (!made) {
      panels[key] = to;
      if (!b.data) {
        Kernel pk = pack_kernel(g, from, to, strip->stride, width);
        pk.node = k.node;  // (runs where its reader runs: the same If guard)
        out.push_back(std::move(pk));
      }
    }
    out.push_back(std::move(split));
  }
  s.kernels = std::move(out);
  renumber_kernels(s);
}

}  // namespace tgc
