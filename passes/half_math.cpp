#include "passes/half_math.h"

#include <unordered_map>

#include "ir/rewrite.h"

namespace tgc {
namespace {

bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }

}  // namespace

const UOp* promote_half_math(Graph& g, const UOp* store) {
  std::unordered_map<const UOp*, const UOp*> done;
  for (const UOp* u : toposort({store})) {
    std::vector<const UOp*> src;
    for (const UOp* s : u->src) src.push_back(done.at(s));
    const UOp* out;
    if (u->op == Op::Load) {
      out = with_src(g, u, src);
      if (is_half(u->dtype)) out = g.make(Op::Cast, DType::F32, {out});
    } else if (u->op == Op::Store) {
      // STORE(buffer, index, value[, gate]): the value narrows to the buffer's type.
      if (is_half(u->src[2]->dtype)) src[2] = g.make(Op::Cast, u->src[2]->dtype, {src[2]});
      out = with_src(g, u, src);
    } else if (u->op == Op::Bitcast) {
      // Bits of a 16-bit float are the narrowed value's; a 16-bit float from bits widens after.
      if (is_half(u->src[0]->dtype)) src[0] = g.make(Op::Cast, u->src[0]->dtype, {src[0]});
      out = g.make(Op::Bitcast, u->dtype, src, u->arg);
      if (is_half(u->dtype)) out = g.make(Op::Cast, DType::F32, {out});
    } else if (u->op == Op::Cast && is_half(u->dtype)) {
      // The explicit rounding stays; a cast from the same type was a no-op and stays one.
      out = u->src[0]->dtype == u->dtype ? src[0] : g.make(Op::Cast, DType::F32, {g.make(Op::Cast, u->dtype, src)});
    } else if (u->op == Op::Const && is_half(u->dtype)) {
      out = g.cfloat(round_float(u->dtype, u->fval()), DType::F32);
    } else if (is_half(u->dtype)) {
      out = g.make(u->op, DType::F32, src, u->arg);  // arithmetic, WHERE, KREDUCE
    } else {
      out = with_src(g, u, src);
    }
    done[u] = out;
  }
  return done.at(store);
}

}  // namespace tgc
