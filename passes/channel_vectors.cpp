#include "passes/channel_vectors.h"

#include <cstring>

#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "passes/opt.h"

namespace tgc {

namespace {

// [channels, rest] -> [rest, channels].
std::shared_ptr<const Bytes> transpose_bytes(const BufferInfo& b, int64_t channels, int64_t rest) {
  size_t esize = size_t(dtype_size(b.dtype));
  std::vector<uint8_t> out(b.data->size());
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t r = 0; r < rest; ++r)
      std::memcpy(out.data() + size_t(r * channels + c) * esize, b.data->data() + size_t(c * rest + r) * esize, esize);
  return Bytes::own(std::move(out));
}
// Gives k copies, transposed at compile time, of the weights it reads along output channel axis
// c one filter at a time (not along the rows' axis j): the channels become their contiguous axis.
// Every such weight: an int8 conv reads its packed words and its filter sums so.
bool transpose_weights(Graph& g, Kernel& k, const UOp* c, const UOp* j) {
  int64_t channels = range_extent(c);
  bool any = false;
  std::vector<const UOp*> loads;
  for (const UOp* l : toposort({k.ast}))
    if (l->op == Op::Load) loads.push_back(l);
  for (const UOp* l : loads) {
    if (l->src.size() != 2 || depends_on(l->src[1], j)) continue;
    int64_t from = l->src[0]->ival();
    const BufferInfo b = g.buffer(from);  // (a copy: add_buffer below may move the table)
    std::optional<int64_t> stride = stride_along(g, l->src[1], c);
    if (!b.data || !stride || *stride <= 1 || numel(b.shape) != channels * *stride) continue;
    Sym sym{g};
    const UOp* idx = simplify(g, sym.add(sym.mul(sym.mod(l->src[1], *stride), channels), sym.idiv(l->src[1], *stride)));
    if (stride_along(g, idx, c) != 1) continue;
    int64_t to = g.add_buffer({b.name + "_by_channel",
                               b.dtype,
                               {*stride, channels},
                               BufferKind::Weight,
                               transpose_bytes(b, channels, *stride)});
    const UOp* load = g.make(Op::Load, b.dtype, {g.make(Op::Buffer, b.dtype, {}, to), idx});
    k.ast = simplify(g, substitute(g, k.ast, {{l, load}}));
    replace_input(k, from, to);
    any = true;
  }
  return any;
}
}  // namespace

void channel_vectors(Graph& g, Schedule& s, const TargetProfile& t) {
  if (t.gpu) return;
  for (Kernel& k : s.kernels) {
    if (!k.num_reduces || k.global_ranges.size() < 2) continue;
    const UOp* j = k.global_ranges.back();
    if (!j->src[0]->is_const() || !narrow_rows(range_extent(j), t)) continue;
    for (const UOp* c : k.global_ranges)
      if (c != j && c->src[0]->is_const() && vector_width(range_extent(c), t) >= t.vector_lanes &&
          lanes_along_channels(k, c, t) && transpose_weights(g, k, c, j))
        break;
  }
}

}  // namespace tgc
