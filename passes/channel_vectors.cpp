#include "passes/channel_vectors.h"

#include <cstring>
#include <unordered_map>

#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "passes/channel_tile.h"
#include "passes/deinterleave.h"
#include "passes/opt.h"

namespace tgc {

namespace {

// [channels, rest] (from element `base` on) -> [padded / block, rest, block], zeros past `channels`.
std::shared_ptr<const Bytes> transpose_bytes(const BufferInfo& b, int64_t base, int64_t channels, int64_t padded,
                                             int64_t rest, int64_t block) {
  size_t esize = size_t(dtype_size(b.dtype));
  std::vector<uint8_t> out(size_t(padded * rest) * esize);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t r = 0; r < rest; ++r)
      std::memcpy(out.data() + size_t((c / block * rest + r) * block + c % block) * esize,
                  b.data->data() + size_t(base + c * rest + r) * esize, esize);
  return Bytes::own(std::move(out));
}
// Whether the only range `u` depends on is r.
bool only_depends_on(const UOp* u, const UOp* r) {
  for (const UOp* x : toposort({u}))
    if (x->op == Op::Range && x != r) return false;
  return true;
}

// Gives k copies, transposed at compile time, of the weights it reads along output channel axis
// c one filter at a time (not along the rows' axis j): the channels become their contiguous axis,
// in blocks of `block` channels (the heuristic's lanes, passes/channel_tile.h), each block's
// filters one after another: the weights a work item reads are one contiguous stream.
// Every such weight: an int8 conv reads its packed words and its filter sums so. Where c was
// padded (`real` channels of range_extent(c)), the copies hold zeros past the real ones and their
// loads need no gate.
bool transpose_weights(Graph& g, Kernel& k, const UOp* c, const UOp* j, int64_t block, int64_t real) {
  int64_t channels = range_extent(c);
  bool any = false;
  std::vector<const UOp*> loads;
  for (const UOp* l : toposort({k.ast}))
    if (l->op == Op::Load) loads.push_back(l);
  // The index as c splits into blocks: c = outer * block + inner.
  int64_t id = next_range_id(k);
  const UOp *outer = g.range(channels / block, id, RangeKind::Global),
            *inner = g.range(block, id + 1, RangeKind::Global);
  Sym sym{g};
  std::unordered_map<const UOp*, const UOp*> split{{c, sym.add(sym.mul(outer, block), inner)}};
  for (const UOp* l : loads) {
    // (A gate is padding's: past the real channels.)
    bool gated = l->src.size() == 3;
    if (depends_on(l->src[1], j) || (gated && (real == channels || !only_depends_on(l->src[2], c)))) continue;
    int64_t from = l->src[0]->ival();
    const BufferInfo b = g.buffer(from);  // (a copy: add_buffer below may move the table)
    std::optional<int64_t> stride = stride_along(g, l->src[1], c);
    // One whole slab of the weights, from `base` (a bidirectional RNN's second direction).
    int64_t base = l->src[1]->vmin;
    if (!b.data || !stride || *stride <= 1 || base % (real * *stride) || numel(b.shape) < base + real * *stride)
      continue;
    const UOp *x = simplify(g, sym.add(l->src[1], -base)), *ch = sym.idiv(x, *stride);
    const UOp* idx =
        simplify(g, sym.add(sym.add(sym.mul(sym.idiv(ch, block), *stride * block), sym.mul(sym.mod(x, *stride), block)),
                            sym.mod(ch, block)));
    const UOp* by_block = simplify(g, substitute(g, idx, split));
    if (stride_along(g, by_block, inner) != 1 ||
        (channels > block && stride_along(g, by_block, outer) != *stride * block))
      continue;
    int64_t to = g.add_buffer({b.name + "_by_channel",
                               b.dtype,
                               {channels / block, *stride, block},
                               BufferKind::Weight,
                               transpose_bytes(b, base, real, channels, *stride, block)});
    const UOp* load = g.make(Op::Load, b.dtype, {g.make(Op::Buffer, b.dtype, {}, to), idx});
    k.ast = simplify(g, substitute(g, k.ast, {{l, load}}));
    replace_input(k, from, to);
    any = true;
  }
  return any;
}

// The heuristic's lanes along c where it tiles channels (passes/channel_tile.h), else all of them.
int64_t channel_block(const Kernel& k, const UOp* c, const TargetProfile& t) {
  std::optional<ChannelTile> tile = channel_tile(k, c, t, 4 * t.vector_lanes);
  return tile ? tile->lanes : range_extent(c);
}

// Where c's channels fill no whole vectors (1000 classes on AVX-512) but padding them to a
// multiple of the vector lanes wastes at most an eighth: k with c so padded (the weights' copies
// get zeros there), else k.
Kernel padded_channels(Graph& g, const Kernel& k, const UOp* c, const TargetProfile& t) {
  int64_t n = range_extent(c), lanes = t.vector_lanes;
  if (vector_width(n, t) >= lanes || n < 4 * lanes || (lanes - n % lanes) * 8 > n) return k;
  return pad_axis(g, k, c, lanes);
}

// Whether no load of k runs contiguously along its output axis j or along a reduce axis a
// vector would fill: no vector lanes fit (a conv whose output a Transpose puts channels last
// reads its input across channels and its weights a filter at a time). Or only along a reduce
// axis, with the weights read in rows (X W^T: a Linear as ONNX's Gemm with transB, a recurrent
// layer's input projection): lanes along the reduce would sum each output across lanes.
bool nothing_contiguous(Graph& g, const Kernel& k, const UOp* j, const TargetProfile& t) {
  std::vector<const UOp*> axes = kernel_axes(k);
  bool weight_rows = false, along_reduce = false;
  for (const UOp* l : reduce_loads(k)) {
    if (stride_along(g, l->src[1], j) == 1) return false;
    weight_rows = weight_rows || (g.buffer(l->src[0]->ival()).data && reused_row(g, k, l->src[1], j));
    for (size_t a = k.global_ranges.size(); a < axes.size(); ++a)
      along_reduce =
          along_reduce || (range_extent(axes[a]) >= t.vector_lanes && stride_along(g, l->src[1], axes[a]) == 1);
  }
  return weight_rows || !along_reduce;
}
// Whether an input (not a weight) of k's reduce moves with every channel of c (a depthwise
// conv's): lanes along c would gather it, so the heuristic keeps its lanes along the rows, and
// channels padded for lanes along c would only gate that input's loads (MobileNetV3's 5x5
// depthwise convs over 120 channels padded to 128: 0.67 ms each, 7 GFLOP/s).
bool moves_with_each_channel(Graph& g, const Kernel& k, const UOp* c) {
  for (const UOp* l : reduce_loads(k)) {
    std::optional<int64_t> s = stride_along(g, l->src[1], c);
    if (!g.buffer(l->src[0]->ival()).data && s && *s > 1) return true;
  }
  return false;
}
}  // namespace

void channel_vectors(Graph& g, Schedule& s, const TargetProfile& t) {
  if (t.gpu) return;
  for (Kernel& k : s.kernels) {
    if (!k.num_reduces || k.global_ranges.size() < 2) continue;
    const UOp* j = k.global_ranges.back();
    if (!j->src[0]->is_const()) continue;
    // Where j is the weights' output-channel axis and nothing is contiguous, the weights are
    // made contiguous along j (one block of all its channels): lanes then run along it. (The
    // loads that move with the first output axis, the input's, are not weights and stay.)
    if (!narrow_rows(range_extent(j), t)) {
      if (nothing_contiguous(g, k, j, t))
        transpose_weights(g, k, j, k.global_ranges.front(), range_extent(j), range_extent(j));
      continue;
    }
    for (size_t a = 0; a + 1 < k.global_ranges.size(); ++a) {
      const UOp* c = k.global_ranges[a];
      if (!c->src[0]->is_const() || moves_with_each_channel(g, k, c)) continue;
      Kernel p = padded_channels(g, k, c, t);
      const UOp* pc = p.global_ranges[a];
      if (vector_width(range_extent(pc), t) >= t.vector_lanes && lanes_along_channels(p, pc, t) &&
          transpose_weights(g, p, pc, j, channel_block(p, pc, t), range_extent(c))) {
        k = std::move(p);
        break;
      }
    }
  }
}

}  // namespace tgc
