// Lowering: a scheduled kernel becomes a loop program. UPCAST ranges are expanded first: a
// reduce over one becomes the combination of its copies, and the STORE is copied once per value
// of the others. Every expression is then placed in the outermost loop whose range it depends on
// (loop-invariant code is hoisted for free); each KREDUCE becomes an accumulator, a loop nest
// over its ranges, and an update. Reduces over the same ranges share one loop nest, so the
// copies of a register tile run side by side.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "passes/schedule.h"
#include "passes/tensor_cores.h"

namespace tgc {

struct LStmt {
  // GroupReduce (GPUs): each thread of a work-group holds a partial accumulator of a KREDUCE
  // split by GROUP; they meet in shared memory between barriers and every thread ends with the
  // total. Stores are then made by the group's first thread only.
  enum Kind { Let, Loop, AccInit, AccUpdate, GroupReduce, Store } kind;
  const UOp* u;                  // Let: value; Loop: RANGE; Acc*/GroupReduce: KREDUCE; Store: STORE
  const UOp* value = nullptr;    // AccUpdate: the value folded into the accumulator
  std::vector<LStmt> body = {};  // Loop
  // Loop (CPU): where each iteration reads a buffer contiguously, STRIDE bytes further on each
  // time (a laned reduce over a weight row): the renderer prefetches ahead of these walks.
  struct Stream {
    int64_t buffer;
    const UOp* index;  // the lowest element index the iteration reads
    int64_t stride;    // bytes
  };
  std::vector<Stream> streams = {};
};

struct LoopProgram {
  std::string name;
  std::vector<const UOp*> globals;  // parallel dims (outermost first); on GPUs, work-group ids
  std::vector<const UOp*> locals;   // GPUs: thread ids within a work-group (outermost first);
                                    // GROUP ranges among them split reduces across the group
  const UOp* inner = nullptr;       // CPU: the innermost global dim, run as a loop in `body`
  std::vector<int64_t> args;        // buffer ids in kernel-argument order: output first
  // UPCAST copies store to consecutive addresses, or LANES copies keep partial sums of
  // consecutive elements: they are the vector lanes (the CPU codegen emits runs of their
  // accumulator updates as vectors, codegen/llvm/lane_vectors.h; SLP the rest), so the loops
  // must not be vectorized as well.
  bool lanes_expanded = false;
  // LANES: runs of accumulator updates of consecutive lanes (partial sums of a reduce).
  bool lane_sums = false;
  // The TC action: the program is the kernel's plain one (its STORE the last statement), which
  // the CUDA renderer replaces by WMMA tiles as this plan says (passes/tensor_cores.h).
  std::optional<TensorCorePlan> tensor_cores;
  std::vector<LStmt> body;
};

struct LowerOptions {
  // CPU: run the innermost global dim as a loop inside each work item, so invariant work is
  // hoisted out of it and it vectorizes. GPUs keep every global dim as a thread index.
  bool inner_loop = false;
  // CPU: record the loops' streams (LStmt::streams).
  bool streams = false;
  // GPUs: an unrolled float sum takes the factors all its terms share out once
  // (x0*(d*w0) + x1*(d*w1) -> d*(x0*w0 + x1*w1): a quantized block's scale), which moves its
  // rounding (CPUs keep llama.cpp's order of products).
  bool factor_sums = false;
};

LoopProgram lower(Graph& g, const Kernel& k, const LowerOptions& opt);

// The kernel's STOREs after expanding its UPCAST ranges into copies (`factor_sums`: LowerOptions).
std::vector<const UOp*> expand_upcasts(Graph& g, const UOp* store, bool factor_sums = false);
std::string print_program(const Graph& g, const LoopProgram& p);

}  // namespace tgc
