#include "codegen/gpu/gpu_lowering.h"

#include <algorithm>
#include <limits>

#include "ir/error.h"

namespace tgc {

namespace {
std::vector<IdDecode> innermost_first(const std::vector<const UOp*>& ranges) {
  std::vector<IdDecode> d;
  for (size_t i = ranges.size(); i-- > 0;) d.push_back({ranges[i], range_extent(ranges[i])});
  return d;
}

void check_index_width(const Graph& g, const GpuProgram& k) {
  if (k.index_bits == 64) return;
  const LoopProgram& p = *k.program;
  if (k.index_bits != 32)
    throw Error("gpu codegen: kernel " + p.name + ": index width " + std::to_string(k.index_bits) + " (32 or 64)");
  constexpr int64_t limit = std::numeric_limits<int32_t>::max();
  for (int64_t b : p.args) {
    const BufferInfo& info = g.buffer(b);
    if (numel(info.shape) > limit)
      throw Error("gpu codegen: kernel " + p.name + ": buffer " + info.name + " has " +
                  std::to_string(numel(info.shape)) + " elements, more than 32-bit indices address");
  }
  if (k.global_size > limit)
    throw Error("gpu codegen: kernel " + p.name + ": its launch has " + std::to_string(k.global_size) +
                " threads, more than 32-bit indices address");
}
}  // namespace

int64_t gpu_local_size(const LoopProgram& p) {
  int64_t n = 1;
  for (const UOp* r : p.locals) n *= r->src[0]->ival();
  return n;
}

int64_t gpu_global_size(const LoopProgram& p) {
  int64_t n = gpu_local_size(p);
  for (const UOp* r : p.globals) n *= range_extent(r);
  return n;
}

GpuProgram lower_gpu(const Graph& g, const LoopProgram& p, const GpuOptions& o) {
  GpuProgram k{&p,
               o.index_bits,
               gpu_global_size(p),
               gpu_local_size(p),
               !p.locals.empty(),
               innermost_first(p.locals),
               innermost_first(p.globals),
               {},
               {}};
  for (const UOp* r : p.globals)
    if (!r->src[0]->is_const()) k.bounded.push_back(r);
  for (const UOp* r : p.locals)
    if (r->range().kind == RangeKind::Group) k.store_gate.push_back(r);
  check_index_width(g, k);
  return k;
}

GroupReduceSlots group_reduce_slots(const GpuProgram& k, const UOp* reduce) {
  GroupReduceSlots s{1, {}};
  for (const IdDecode& d : k.local_decode) {
    bool folded = std::count(reduce->src.begin() + 1, reduce->src.end(), d.range) > 0;
    s.terms.push_back({d.range, d.extent, s.count, folded});
    s.count *= d.extent;
  }
  return s;
}

// The threads whose partials one thread folds, when they are consecutive local ids: the
// reduce's GROUP ranges are the innermost local ranges (slot = local id). 0 otherwise.
int64_t subgroup_run(const GroupReduceSlots& slots) {
  int64_t run = 1;
  bool outside = false;
  for (const SlotTerm& t : slots.terms) {
    if (t.folded && outside) return 0;
    if (t.folded)
      run *= t.extent;
    else
      outside = true;
  }
  return run;
}

}  // namespace tgc
