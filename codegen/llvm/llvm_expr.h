// The expression half of a kernel in LLVM IR, for every LLVM target (CPU now, NVPTX next):
// types, constants, reduce identities, arithmetic, casts and comparisons of one UOp over the
// values computed so far. The kernel shell around it (codegen/llvm/cpu_kernel.cpp) owns the
// function, its loops, accumulators and buffer access, and answers the emitter's hooks: how a
// LOAD reads memory, where a KREDUCE's value is, and how the math that not every target can lower
// (NVPTX has no exp2/log2/sin lowering) is emitted.
#pragma once
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <string>
#include <unordered_map>

#include "ir/uop.h"
#include "target/profile.h"

namespace tgc {

// Bools are i1 in registers and i8 in memory; Index is i64.
llvm::Type* llvm_type(llvm::LLVMContext& c, DType t, bool in_memory);

// Reassociation and contraction on a float sum's instruction (no-op on other values): LLVM may
// then regroup or vectorize it; the result stays within f32 rounding.
void allow_reassociation(llvm::Value* v);

class LlvmExprHooks {
 public:
  virtual ~LlvmExprHooks() = default;
  virtual llvm::Value* load(const UOp* load) = 0;           // a LOAD, in register form
  virtual llvm::Value* accumulator(const UOp* reduce) = 0;  // a KREDUCE's current value
  // EXP2, LOG2, SIN or SQRT of `x` (of dtype t); nullptr where the target cannot emit it.
  virtual llvm::Value* math(Op op, DType t, llvm::Value* x) = 0;
  // A 16-bit float (F16 or BF16) widened to f32; nullptr for a plain fpext.
  virtual llvm::Value* widen_half(llvm::Value*, DType) { return nullptr; }
};

class LlvmExprEmitter {
 public:
  // `kernel` names the kernel in errors.
  LlvmExprEmitter(llvm::IRBuilder<>& b, LlvmExprHooks& hooks, std::string kernel)
      : b_(b), hooks_(hooks), kernel_(std::move(kernel)) {}

  void set(const UOp* u, llvm::Value* v) { values_[u] = v; }
  // Float adds and multiplies may fuse into multiply-adds (GPUs: their compilers' default).
  void allow_contraction() { contract_ = true; }
  // What has been computed, to save and restore around a scope emitted more than once.
  std::unordered_map<const UOp*, llvm::Value*>& values() { return values_; }
  bool has(const UOp* u) const { return values_.count(u) > 0; }
  // u's value: set or computed before, a constant, or an accumulator's; throws otherwise.
  llvm::Value* value(const UOp* u);
  // Emits u from its sources' values (which must exist) and returns it; the caller set()s it.
  llvm::Value* compute(const UOp* u);

  // acc (op) value for the KREDUCE `reduce`: acc + x*y as one fused multiply-add where the
  // target has one. `value` must have been computed.
  llvm::Value* accumulate(const UOp* reduce, llvm::Value* acc, const UOp* value);
  // One step of an ordered sum (ReduceArg::ordered), of scalars or vectors: acc + x*y (y null:
  // acc + x) rounded as the target's fused multiply-add does where it has one (set_fma), else as
  // a rounded product and a rounded sum; never marked for reassociation or contraction.
  llvm::Value* ordered_step(llvm::Value* acc, llvm::Value* x, llvm::Value* y);
  void set_fma(bool fma) { fma_ = fma; }

  llvm::Value* constant(const UOp* u);
  llvm::Value* identity(Op op, DType t);  // of a reduce: 0, 1, or the lowest value
  llvm::Value* binary(Op op, DType t, llvm::Value* x, llvm::Value* y);
  llvm::Value* cast(llvm::Value* x, DType from, DType to);                // of a scalar or a vector
  llvm::Value* compare(Op op, DType in, llvm::Value* x, llvm::Value* y);  // CMPLT or CMPNE of two `in`s
  // DOT4 of scalars or vectors of 32-bit words: acc + sum over k < 4 of u8(byte k of a) * i8(byte
  // k of b), per lane. Vectors use the target's int8 dot-product instruction where it has one.
  llvm::Value* dot4(llvm::Value* a, llvm::Value* b, llvm::Value* acc);
  void set_int8_dot(Int8Dot d) { int8_dot_ = d; }
  // EXP2/LOG2/SIN/SQRT as LLVM intrinsics, f32 2^x as a polynomial: the math hook of targets
  // whose backend lowers those intrinsics (CPUs, where they become libm calls).
  llvm::Value* intrinsic_math(Op op, DType t, llvm::Value* x);
  // 2^x in straight-line arithmetic (Cephes exp2f: |rel err| < 2e-7), so that it vectorizes;
  // LLVM's exp2 intrinsic becomes a scalar libm call per element on x86.
  llvm::Value* exp2_f32(llvm::Value* x);

 private:
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) { return b_.CreateIntrinsic(id, {x->getType()}, {x}); }

  llvm::IRBuilder<>& b_;
  LlvmExprHooks& hooks_;
  std::string kernel_;
  Int8Dot int8_dot_ = Int8Dot::None;
  std::unordered_map<const UOp*, llvm::Value*> values_;
  bool contract_ = false;
  bool fma_ = true;
};

}  // namespace tgc
