#include "codegen/llvm/lane_vectors.h"

#include <algorithm>

namespace tgc {

using llvm::Value;

namespace {
// An index as base + constant: the form the copies' indices take after simplification.
std::pair<const UOp*, int64_t> base_offset(const UOp* idx) {
  if (idx->op == Op::Add && idx->src[1]->is_const()) return {idx->src[0], idx->src[1]->ival()};
  return {idx, 0};
}

// Element-wise ops that IRBuilder emits on vectors as on scalars.
bool lane_op(Op op) {
  switch (op) {
    case Op::Add:
    case Op::Mul:
    case Op::Max:
    case Op::Mod:
    case Op::IDiv:
    case Op::And:
    case Op::Or:
    case Op::Xor:
    case Op::Shl:
    case Op::Shr:
    case Op::Neg:
    case Op::Recip:
    case Op::Cast:
    case Op::Bitcast:
    case Op::Where:
    case Op::CmpLt:
    case Op::CmpNe:
    case Op::MulAcc:
    case Op::Dot4: return true;
    default: return false;
  }
}

bool all_same(const std::vector<const UOp*>& lanes) {
  return std::all_of(lanes.begin(), lanes.end(), [&](const UOp* u) { return u == lanes[0]; });
}

// Ungated loads of elements base + off, base + off + 1, ... of one buffer.
bool consecutive_loads(const std::vector<const UOp*>& lanes) {
  const UOp* first = lanes[0];
  if (first->src.size() > 2 || first->dtype == DType::Bool) return false;
  auto [base, off] = base_offset(first->src[1]);
  for (size_t i = 1; i < lanes.size(); ++i) {
    const UOp* l = lanes[i];
    if (l->op != Op::Load || l->src[0] != first->src[0] || l->src.size() > 2 ||
        base_offset(l->src[1]) != std::make_pair(base, off + int64_t(i)))
      return false;
  }
  return true;
}

std::vector<const UOp*> sources(const std::vector<const UOp*>& lanes, size_t k) {
  std::vector<const UOp*> s;
  for (const UOp* u : lanes) s.push_back(u->src[k]);
  return s;
}
}  // namespace

bool isomorphic_lanes(const std::vector<const UOp*>& lanes) {
  const UOp* u = lanes[0];
  if (all_same(lanes)) return true;
  for (const UOp* l : lanes)
    if (l->op != u->op || l->dtype != u->dtype || l->src.size() != u->src.size()) return false;
  if (u->op == Op::Const) return u->dtype != DType::Index;
  if (u->op == Op::Load) return consecutive_loads(lanes);
  if (!lane_op(u->op) || u->dtype == DType::Index) return false;
  for (const UOp* l : lanes)
    if (l->arg != u->arg) return false;
  for (size_t k = 0; k < u->src.size(); ++k)
    if (!isomorphic_lanes(sources(lanes, k))) return false;
  return true;
}

Value* LaneVectorEmitter::scalar(const UOp* u) {
  if (e_.has(u) || u->op == Op::Const || u->op == Op::KReduce) return e_.value(u);
  for (const UOp* s : u->src) scalar(s);
  Value* v = e_.compute(u);
  e_.set(u, v);
  return v;
}

Value* LaneVectorEmitter::vector(const std::vector<const UOp*>& lanes) {
  auto it = done_.find(lanes);
  if (it != done_.end() && it->second.first == b_.GetInsertBlock()) return it->second.second;
  Value* v = emit(lanes);
  done_[lanes] = {b_.GetInsertBlock(), v};
  return v;
}

Value* LaneVectorEmitter::emit(const std::vector<const UOp*>& lanes) {
  const UOp* u = lanes[0];
  auto n = unsigned(lanes.size());
  if (all_same(lanes)) return b_.CreateVectorSplat(n, scalar(u));
  if (u->op == Op::Const) {
    std::vector<llvm::Constant*> c;
    for (const UOp* l : lanes) c.push_back(llvm::cast<llvm::Constant>(e_.constant(l)));
    return llvm::ConstantVector::get(c);
  }
  auto vec_of = [&](DType t) { return llvm::FixedVectorType::get(llvm_type(b_.getContext(), t, false), n); };
  if (u->op == Op::Load) return load_at_(u, vec_of(u->dtype), scalar(u->src[1]));
  auto s = [&](size_t k) { return vector(sources(lanes, k)); };
  DType t = u->dtype;
  switch (u->op) {
    case Op::Neg: return is_float(t) ? b_.CreateFNeg(s(0)) : b_.CreateNeg(s(0));
    case Op::Recip: return b_.CreateFDiv(llvm::ConstantFP::get(vec_of(t), 1.0), s(0));
    case Op::Cast: return e_.cast(s(0), u->src[0]->dtype, t);
    case Op::Bitcast: return b_.CreateBitCast(s(0), vec_of(t));
    case Op::Where: return b_.CreateSelect(s(0), s(1), s(2));
    case Op::CmpLt:
    case Op::CmpNe: return e_.compare(u->op, u->src[0]->dtype, s(0), s(1));
    case Op::MulAcc: return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec_of(t)}, {s(0), s(1), s(2)});
    case Op::Dot4: return e_.dot4(s(0), s(1), s(2));
    default: return e_.binary(u->op, t, s(0), s(1));
  }
}

Value* LaneVectorEmitter::accumulate(const UOp* reduce, Value* acc, const std::vector<const UOp*>& values) {
  if (reduce->reduce().ordered && is_float(reduce->dtype)) {  // lanes of independent ordered sums
    if (values[0]->op == Op::Mul) return e_.ordered_step(acc, vector(sources(values, 0)), vector(sources(values, 1)));
    return e_.ordered_step(acc, vector(values), nullptr);
  }
  Value* r;
  if (reduce->reduce().op == Op::Add && is_float(reduce->dtype) && values[0]->op == Op::Mul && !all_same(values))
    r = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {acc->getType()},
                           {vector(sources(values, 0)), vector(sources(values, 1)), acc});
  else
    r = e_.binary(reduce->reduce().op, reduce->dtype, acc, vector(values));
  allow_reassociation(r);  // as for scalar sums
  return r;
}

}  // namespace tgc
