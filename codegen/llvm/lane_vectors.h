// LANES copies of a reduce's update, and a register tile's copies, as vector code. The lowering
// expands LANES into one accumulator per lane, whose updates differ only in the consecutive
// elements they read (a tile's copies along its vector axis alike); left to LLVM's SLP
// vectorizer, whether they become vectors, and along which axis of a tile, depends on its cost
// model, which gives up on some (f16 weights at AVX-512 widths, several accumulator chains, tiles
// of several tokens) and bundles others along the wrong axis (a conv tile's 4 columns instead of
// its 16 channels).
// Here the updates are checked lane by lane for one tree over shared values, constants and loads
// of consecutive elements, and such lanes are emitted as vectors directly; type legalization
// then splits a wide vector into the target's registers (independent multiply-add chains).
#pragma once
#include <llvm/IR/IRBuilder.h>

#include <functional>
#include <map>
#include <vector>

#include "codegen/llvm/llvm_expr.h"
#include "ir/uop.h"

namespace tgc {

// Whether `lanes` (a value per lane) are one tree lane by lane, over values shared by all lanes,
// constants, and loads of consecutive elements of one buffer (lane i reading element base + i).
bool isomorphic_lanes(const std::vector<const UOp*>& lanes);

class LaneVectorEmitter {
 public:
  // A load of `type` (a scalar or a vector of the LOAD's element type) at element `index` of
  // the LOAD's buffer.
  using LoadAt = std::function<llvm::Value*(const UOp* load, llvm::Type* type, llvm::Value* index)>;
  LaneVectorEmitter(llvm::IRBuilder<>& b, LlvmExprEmitter& e, LoadAt load_at)
      : b_(b), e_(e), load_at_(std::move(load_at)) {}

  // The lanes (isomorphic_lanes) as one vector. Vectors already emitted in the current block
  // are reused (a weight vector shared by the copies of several tokens is loaded once).
  llvm::Value* vector(const std::vector<const UOp*>& lanes);
  // acc (op) values, as the scalar emitter's accumulate() does lane by lane.
  llvm::Value* accumulate(const UOp* reduce, llvm::Value* acc, const std::vector<const UOp*>& values);

 private:
  llvm::Value* scalar(const UOp* u);
  llvm::Value* emit(const std::vector<const UOp*>& lanes);

  llvm::IRBuilder<>& b_;
  LlvmExprEmitter& e_;
  LoadAt load_at_;
  std::map<std::vector<const UOp*>, std::pair<llvm::BasicBlock*, llvm::Value*>> done_;
};

}  // namespace tgc
