#include "codegen/llvm/llvm_expr.h"

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <cmath>

#include "ir/error.h"

namespace tgc {

using llvm::Value;

llvm::Type* llvm_type(llvm::LLVMContext& c, DType t, bool in_memory) {
  switch (t) {
    case DType::Bool: return in_memory ? llvm::Type::getInt8Ty(c) : llvm::Type::getInt1Ty(c);
    case DType::I8:
    case DType::U8: return llvm::Type::getInt8Ty(c);
    case DType::I16:
    case DType::U16: return llvm::Type::getInt16Ty(c);
    case DType::I32:
    case DType::U32: return llvm::Type::getInt32Ty(c);
    case DType::I64:
    case DType::U64:
    case DType::Index: return llvm::Type::getInt64Ty(c);
    case DType::F16: return llvm::Type::getHalfTy(c);
    case DType::BF16: return llvm::Type::getBFloatTy(c);
    case DType::F32: return llvm::Type::getFloatTy(c);
    case DType::F64: return llvm::Type::getDoubleTy(c);
  }
  return nullptr;
}

void allow_reassociation(Value* v) {
  if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v); inst && llvm::isa<llvm::FPMathOperator>(inst)) {
    inst->setHasAllowReassoc(true);
    inst->setHasAllowContract(true);
  }
}

Value* LlvmExprEmitter::value(const UOp* u) {
  if (auto it = values_.find(u); it != values_.end()) return it->second;
  if (u->op == Op::Const) return constant(u);
  if (u->op == Op::KReduce) return hooks_.accumulator(u);
  throw Error("llvm codegen: " + std::string(op_name(u->op)) + " used before it was computed in kernel " + kernel_);
}

Value* LlvmExprEmitter::constant(const UOp* u) {
  llvm::Type* t = llvm_type(b_.getContext(), u->dtype, false);
  if (is_float(u->dtype)) return llvm::ConstantFP::get(t, u->fval());
  return llvm::ConstantInt::get(t, uint64_t(u->ival()), true);
}

Value* LlvmExprEmitter::identity(Op op, DType t) {
  llvm::Type* ty = llvm_type(b_.getContext(), t, false);
  if (op == Op::Add) return is_float(t) ? llvm::ConstantFP::get(ty, 0.0) : llvm::ConstantInt::get(ty, 0);
  if (op == Op::Mul) return is_float(t) ? llvm::ConstantFP::get(ty, 1.0) : llvm::ConstantInt::get(ty, 1);
  if (is_float(t)) return llvm::ConstantFP::getInfinity(ty, true);
  unsigned bits = ty->getIntegerBitWidth();
  return llvm::ConstantInt::get(b_.getContext(),
                                is_unsigned(t) ? llvm::APInt::getMinValue(bits) : llvm::APInt::getSignedMinValue(bits));
}

Value* LlvmExprEmitter::exp2_f32(Value* x) {
  auto* f32 = b_.getFloatTy();
  auto c = [&](double v) { return llvm::ConstantFP::get(f32, v); };
  Value* xc = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum,
                                       b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, c(127.0)), c(-126.0));
  Value* i = intrinsic(llvm::Intrinsic::floor, b_.CreateFAdd(xc, c(0.5)));
  Value* f = b_.CreateFSub(xc, i);  // in [-0.5, 0.5]
  // Horner steps as fused multiply-adds where the target has them (one instruction each).
  auto fma = [&](Value* a, Value* b, Value* d) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f32}, {a, b, d});
  };
  Value* p = c(1.535336188319500e-4);
  for (double k :
       {1.339887440266574e-3, 9.618437357674640e-3, 5.550332471162809e-2, 2.402264791363012e-1, 6.931472028550421e-1})
    p = fma(p, f, c(k));
  Value* r = fma(p, f, c(1.0));
  // 2^i from the exponent bits (i is in [-126, 127] after the clamp).
  Value* bits = b_.CreateShl(b_.CreateAdd(b_.CreateFPToSI(i, b_.getInt32Ty()), b_.getInt32(127)), 23);
  r = b_.CreateFMul(r, b_.CreateBitCast(bits, f32));
  r = b_.CreateSelect(b_.CreateFCmpOGT(x, c(128.0)), c(INFINITY), r);
  r = b_.CreateSelect(b_.CreateFCmpOLT(x, c(-150.0)), c(0.0), r);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, r);  // NaN stays NaN
}

Value* LlvmExprEmitter::intrinsic_math(Op op, DType t, Value* x) {
  switch (op) {
    case Op::Exp2: return t == DType::F32 ? exp2_f32(x) : intrinsic(llvm::Intrinsic::exp2, x);
    case Op::Log2: return intrinsic(llvm::Intrinsic::log2, x);
    case Op::Sin: return intrinsic(llvm::Intrinsic::sin, x);
    case Op::Sqrt: return intrinsic(llvm::Intrinsic::sqrt, x);
    default: throw Error("llvm codegen: " + std::string(op_name(op)) + " is not a math op");
  }
}

Value* LlvmExprEmitter::ordered_step(Value* acc, Value* x, Value* y) {
  if (!y) return b_.CreateFAdd(acc, x);
  if (fma_) return b_.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, y, acc});
  return b_.CreateFAdd(acc, b_.CreateFMul(x, y));
}

Value* LlvmExprEmitter::accumulate(const UOp* reduce, Value* acc, const UOp* v) {
  if (reduce->reduce().ordered && is_float(reduce->dtype)) {
    if (v->op == Op::Mul) return ordered_step(acc, value(v->src[0]), value(v->src[1]));
    return ordered_step(acc, value(v), nullptr);
  }
  if (reduce->reduce().op == Op::Add && is_float(reduce->dtype) && v->op == Op::Mul) {
    Value* x = value(v->src[0]);
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {x, value(v->src[1]), acc});
  }
  return binary(reduce->reduce().op, reduce->dtype, acc, value(v));
}

Value* LlvmExprEmitter::binary(Op op, DType t, Value* x, Value* y) {
  bool f = is_float(t), u = is_unsigned(t);
  switch (op) {
    case Op::Add:
    case Op::Mul: {
      if (!f) return op == Op::Add ? b_.CreateAdd(x, y) : b_.CreateMul(x, y);
      Value* r = op == Op::Add ? b_.CreateFAdd(x, y) : b_.CreateFMul(x, y);
      if (auto* inst = llvm::dyn_cast<llvm::Instruction>(r); inst && contract_) inst->setHasAllowContract(true);
      return r;
    }
    case Op::Max:
      if (f) return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, y);
      return b_.CreateBinaryIntrinsic(u ? llvm::Intrinsic::umax : llvm::Intrinsic::smax, x, y);
    case Op::Mod:
    case Op::IDiv: {
      if (f) return op == Op::Mod ? b_.CreateFRem(x, y) : b_.CreateFDiv(x, y);
      // Integer division by zero gives 0 (as in the interpreter), never a trap.
      Value* zero = llvm::ConstantInt::get(y->getType(), 0);
      Value* is0 = b_.CreateICmpEQ(y, zero);
      Value* safe = b_.CreateSelect(is0, llvm::ConstantInt::get(y->getType(), 1), y);
      Value* r = op == Op::Mod ? (u ? b_.CreateURem(x, safe) : b_.CreateSRem(x, safe))
                               : (u ? b_.CreateUDiv(x, safe) : b_.CreateSDiv(x, safe));
      return b_.CreateSelect(is0, zero, r);
    }
    case Op::And: return b_.CreateAnd(x, y);
    case Op::Or: return b_.CreateOr(x, y);
    case Op::Xor: return b_.CreateXor(x, y);
    case Op::Shl: return b_.CreateShl(x, y);
    case Op::Shr: return u ? b_.CreateLShr(x, y) : b_.CreateAShr(x, y);
    default: throw Error("llvm codegen: no binary op " + std::string(op_name(op)));
  }
}

Value* LlvmExprEmitter::cast(Value* x, DType from, DType to) {
  llvm::Type* t = llvm_type(b_.getContext(), to, false);
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
  if (vt) t = llvm::FixedVectorType::get(t, vt->getNumElements());  // lanes (codegen/llvm/lane_vectors.h)
  bool fu = is_unsigned(from);
  if ((from == DType::F16 || from == DType::BF16) && to == DType::F32 && !vt)
    if (Value* w = hooks_.widen_half(x, from)) return w;
  if (is_float(from) && is_float(to)) return b_.CreateFPCast(x, t);
  if (!is_float(from) && is_float(to)) return fu ? b_.CreateUIToFP(x, t) : b_.CreateSIToFP(x, t);
  if (is_float(from)) return is_unsigned(to) ? b_.CreateFPToUI(x, t) : b_.CreateFPToSI(x, t);
  if (to == DType::Bool) return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  return b_.CreateIntCast(x, t, !fu);
}

Value* LlvmExprEmitter::compare(Op op, DType in, Value* x, Value* y) {
  if (op == Op::CmpNe) return is_float(in) ? b_.CreateFCmpUNE(x, y) : b_.CreateICmpNE(x, y);
  if (is_float(in)) return b_.CreateFCmpOLT(x, y);
  return is_unsigned(in) ? b_.CreateICmpULT(x, y) : b_.CreateICmpSLT(x, y);
}

Value* LlvmExprEmitter::dot4(Value* a, Value* b, Value* acc) {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(acc->getType());
  unsigned w = vt ? vt->getNumElements() : 1;
  unsigned bits = 32 * w, widest = int8_dot_ == Int8Dot::Avx512Vnni ? 512 : int8_dot_ == Int8Dot::AvxVnni ? 256 : 0;
  if (vt && widest && bits > widest && bits % widest == 0) {  // register-sized pieces, joined again
    unsigned n = widest / 32;
    auto piece = [&](Value* v, unsigned at) { return b_.CreateShuffleVector(v, llvm::createSequentialMask(at, n, 0)); };
    std::vector<Value*> parts;
    for (unsigned at = 0; at < w; at += n) parts.push_back(dot4(piece(a, at), piece(b, at), piece(acc, at)));
    return llvm::concatenateVectors(b_, parts);
  }
  if (vt && widest && bits >= 128 && bits <= widest) {
    // One intrinsic family for both encodings: AVX-VNNI selects the VEX form.
    using namespace llvm::Intrinsic;
    ID id = bits == 512 ? x86_avx512_vpdpbusd_512 : bits == 256 ? x86_avx512_vpdpbusd_256 : x86_avx512_vpdpbusd_128;
    return b_.CreateIntrinsic(id, {}, {acc, a, b});
  }
  // Plain integer code: the 4w byte products, then each lane's four summed.
  auto* bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), 4 * w);
  auto* wide = llvm::FixedVectorType::get(b_.getInt32Ty(), 4 * w);
  Value* p =
      b_.CreateMul(b_.CreateZExt(b_.CreateBitCast(a, bytes), wide), b_.CreateSExt(b_.CreateBitCast(b, bytes), wide));
  Value* r = acc;
  for (unsigned k = 0; k < 4; ++k) {
    Value* part = b_.CreateShuffleVector(p, llvm::createStrideMask(k, 4, w));
    r = b_.CreateAdd(r, vt ? part : b_.CreateExtractElement(part, uint64_t(0)));
  }
  return r;
}

Value* LlvmExprEmitter::compute(const UOp* u) {
  auto s = [&](int i) { return value(u->src[size_t(i)]); };
  DType t = u->dtype;
  switch (u->op) {
    case Op::Load: return hooks_.load(u);
    case Op::Neg: return is_float(t) ? b_.CreateFNeg(s(0)) : b_.CreateNeg(s(0));
    case Op::Exp2:
    case Op::Log2:
    case Op::Sin:
    case Op::Sqrt: {
      if (Value* r = hooks_.math(u->op, t, s(0))) return r;
      throw Error("llvm codegen: kernel " + kernel_ + ": this target cannot emit " + std::string(op_name(u->op)) +
                  " of " + std::string(dtype_name(t)));
    }
    case Op::Trunc: return is_float(t) ? intrinsic(llvm::Intrinsic::trunc, s(0)) : s(0);
    case Op::Recip: return b_.CreateFDiv(llvm::ConstantFP::get(s(0)->getType(), 1.0), s(0));
    case Op::Cast: return cast(s(0), u->src[0]->dtype, t);
    case Op::Bitcast: return b_.CreateBitCast(s(0), llvm_type(b_.getContext(), t, false));
    case Op::CmpLt:
    case Op::CmpNe: return compare(u->op, u->src[0]->dtype, s(0), s(1));
    case Op::Where: return b_.CreateSelect(s(0), s(1), s(2));
    case Op::MulAcc: return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {s(0)->getType()}, {s(0), s(1), s(2)});
    case Op::Dot4: return dot4(s(0), s(1), s(2));
    default:
      if (is_binary(u->op)) return binary(u->op, t, s(0), s(1));
      throw Error("llvm codegen: kernel " + kernel_ + ": cannot render " + std::string(op_name(u->op)));
  }
}

}  // namespace tgc
