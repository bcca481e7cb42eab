// What every GPU backend does the same way with a loop program, whatever language it prints:
// the launch (all dims flattened into dimension 0: work-groups over the global ranges, threads
// of a group over the local ranges), how each work item decodes its range values from its ids,
// which work-groups leave at once (past a run-time dim), the shared-memory layout of a group
// reduce, which thread stores, and the index width the kernel computes addresses in.
#pragma once
#include <string>
#include <vector>

#include "passes/lower.h"

namespace tgc {

struct GpuOptions {
  // 32 or 64. Adreno prefers 32-bit indices and Vulkan devices may lack 64-bit integers; a
  // 32-bit lowering refuses kernels whose buffers or launch it cannot address.
  int index_bits = 64;
  // Group reduces may use subgroup arithmetic (dialects that have it; with a shared-memory path
  // where the device's subgroup size does not divide the threads folded together).
  bool subgroups = false;
  // A kernel that computes in f16 (passes/precision.h compute_in_half) does so in f16 registers;
  // false: in float registers (the same results, less rounded), for devices without f16 math.
  bool half_math = true;
};

// Threads in all (dimension 0), and threads per work-group (1 without local ranges).
int64_t gpu_global_size(const LoopProgram& p);
int64_t gpu_local_size(const LoopProgram& p);

// `range = id % extent; id /= extent`, in this order.
struct IdDecode {
  const UOp* range;
  int64_t extent;  // a run-time dim's range decodes at its upper bound (the layout)
};

// One slot-index term of a group reduce: the thread's position along one local range.
struct SlotTerm {
  const UOp* range;
  int64_t extent, stride;
  bool folded;  // a GROUP range of this reduce: the fold loops over its slots
};

// The shared memory of one GroupReduce: a slot per thread of the work-group, addressed by
// sum(range * stride) over the local ranges. Each thread folds the slots that differ from its
// own only along this reduce's GROUP ranges: along another reduce's GROUP range (softmax: one for
// the max, one for the sum) the threads already hold the same value.
struct GroupReduceSlots {
  int64_t count;
  std::vector<SlotTerm> terms;  // innermost local range first
};

struct GpuProgram {
  const LoopProgram* program;
  int index_bits;
  int64_t global_size, local_size;
  bool work_groups;                     // local ranges exist: ids are (group id, local id)
  std::vector<IdDecode> local_decode;   // from the local id, innermost first
  std::vector<IdDecode> global_decode;  // from the group id (or the global id), innermost first
  // Global ranges over run-time dims: a work-group past the VAR's value returns at once (globals
  // are group ids, so the whole group leaves together and no barrier waits for it).
  std::vector<const UOp*> bounded;
  // GROUP ranges: every thread of a group ends with the reduced value, the one at 0 stores.
  std::vector<const UOp*> store_gate;
};

// Throws tgc::Error naming the kernel when index_bits is 32 and a buffer's element count or the
// launch does not fit in a signed 32-bit index, or index_bits is neither 32 nor 64.
GpuProgram lower_gpu(const Graph& g, const LoopProgram& p, const GpuOptions& o = {});

// `reduce`: the KREDUCE of a GroupReduce statement of the program.
GroupReduceSlots group_reduce_slots(const GpuProgram& k, const UOp* reduce);
// The threads whose partials one thread folds when they are consecutive local ids (the reduce's
// GROUP ranges are the innermost local ranges, so slot = local id): where subgroups can reduce
// first. 0 otherwise.
int64_t subgroup_run(const GroupReduceSlots& slots);

}  // namespace tgc
