// The scheduler: cuts a Tensor graph into kernels. Movement ops become index arithmetic on loop
// ranges (assigned consumer-first), elementwise work fuses into its consumers, and one cost
// function decides for every compute node whether to recompute it inline or realize it.
#pragma once
#include <string>
#include <vector>

#include "ir/uop.h"
#include "target/profile.h"

namespace tgc {

struct Kernel {
  std::string name;
  // STORE(buffer, index, value[, gate]): value is a scalar expression over LOADs of realized
  // buffers, CONSTs, index arithmetic on RANGEs and KREDUCEs (a reduce over its own RANGEs). Only
  // PADTO gates a store: positions past the end of a padded axis store nothing.
  const UOp* ast = nullptr;
  std::vector<const UOp*> global_ranges;  // one per output dim of size > 1, outermost first
  std::vector<const UOp*> local_ranges;   // GPU work-group dims split off by the LOCAL opt
  const UOp* node = nullptr;              // the tensor node it computes
  int64_t output = -1;                    // buffer written
  std::vector<int64_t> inputs;            // buffers read, in first-use order
  std::vector<std::string> fused;         // model nodes whose work this kernel does
  int num_reduces = 0;
  bool tensor_cores = false;  // the TC action: a matrix product as whole tiles (passes/tensor_cores.h)
  bool cuda_cores = false;    // TC(0,1): those tiles on CUDA cores (f32), not on tensor cores
  // Equal hashes, same code: the loops count too (a range whose index the AST no longer reads,
  // such as a whole-upcast run-time axis's outer loop, still ends where it ends).
  size_t hash() const {
    size_t h = ast->hash;
    for (const auto* ranges : {&global_ranges, &local_ranges})
      for (const UOp* r : *ranges) h = h * 1000003 ^ r->hash;
    return tensor_cores ? h * 31 + (cuda_cores ? 11 : 7) : h;
  }
};

struct Schedule {
  std::vector<Kernel> kernels;   // in execution order
  std::vector<int64_t> outputs;  // buffer holding each requested output, in order; one each,
                                 // also where one node is requested twice (the repeat is copied)
};

struct ScheduleOptions {
  // GPUs run every output position of a kernel as a thread of its own, so an expression runs
  // once per output, not once per value of the ranges it depends on (the CPU lowering hoists it
  // out of the others' loops). A reduce whose result many outputs share (a softmax's row max and
  // sum) is then realized in a kernel of its own where recomputing it would be much more work.
  bool parallel_outputs = false;
  // With parallel_outputs: the redundant work (elements read again by threads that share a
  // reduce's result) above which the reduce is realized instead (TargetProfile::redundant_work).
  double redundant_work = 1 << 20;
  // Targets with serial launches (TargetProfile::serial_group, passes/serial_launches.h): a small
  // reduce of small realized results (a squeeze-excite block's second FC) is realized, joining
  // its producers' launch, rather than recomputed by each thread of a large consumer; and a
  // node is realized only where that saves more work than a launch costs (redundant_work).
  int64_t serial_group = 0;
};
// A target's: GPUs run outputs in parallel, at the cost of work their launches are worth.
inline ScheduleOptions schedule_options(const TargetProfile& t) {
  return {.parallel_outputs = t.gpu, .redundant_work = t.redundant_work, .serial_group = t.gpu ? t.serial_group : 0};
}

Schedule schedule(Graph& g, const std::vector<const UOp*>& outputs, const ScheduleOptions& o = {});

// Lists the vars buffer among k's inputs exactly when k's AST reads a VAR (kernels read VAR
// values from it); opts that take a short run-time loop whole, or a VAR replaced by a
// constant, may leave a kernel without one.
void list_vars_buffer(const Graph& g, Kernel& k);

// A range id no range of k uses yet (for ranges that rewrites of k add).
int64_t next_range_id(const Kernel& k);
// After a rewrite made k's AST read buffer `to` where it read `from`: `to` takes `from`'s place
// among k's inputs, or comes last where the AST still reads `from` too.
void replace_input(Kernel& k, int64_t from, int64_t to);
// Names s's kernels k0, k1, ... in their order, after a pass added or removed some.
void renumber_kernels(Schedule& s);

// Multi-line listing: one block per kernel with shape, ranges, fused nodes and buffers.
std::string describe(const Graph& g, const Schedule& s);

}  // namespace tgc
