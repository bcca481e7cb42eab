#include "passes/half_math.h"

#include "ir/rewrite.h"

namespace tgc {

const UOp* promote_half_math(Graph& g, const UOp* store) {
  return rebuild(g, store, [&](const UOp* u, std::vector<const UOp*>& src) -> const UOp* {
    if (u->op == Op::Load) return is_half(u->dtype) ? g.make(Op::Cast, DType::F32, {with_src(g, u, src)}) : nullptr;
    if (u->op == Op::Store) {
      // STORE(buffer, index, value[, gate]): the value narrows to the buffer's type.
      if (is_half(u->src[2]->dtype)) src[2] = g.make(Op::Cast, u->src[2]->dtype, {src[2]});
      return nullptr;
    }
    if (u->op == Op::Bitcast) {
      // Bits of a 16-bit float are the narrowed value's; a 16-bit float from bits widens after.
      if (is_half(u->src[0]->dtype)) src[0] = g.make(Op::Cast, u->src[0]->dtype, {src[0]});
      const UOp* out = g.make(Op::Bitcast, u->dtype, src, u->arg);
      return is_half(u->dtype) ? g.make(Op::Cast, DType::F32, {out}) : out;
    }
    if (u->op == Op::Cast &&
        is_half(u->dtype))  // the explicit rounding stays; a cast from the same type was a no-op and stays one
      return u->src[0]->dtype == u->dtype ? src[0] : g.make(Op::Cast, DType::F32, {g.make(Op::Cast, u->dtype, src)});
    if (u->op == Op::Const && is_half(u->dtype)) return g.cfloat(round_float(u->dtype, u->fval()), DType::F32);
    if (is_half(u->dtype)) return g.make(u->op, DType::F32, src, u->arg);  // arithmetic, WHERE, KREDUCE
    return nullptr;
  });
}

}  // namespace tgc
