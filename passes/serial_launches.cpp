#include "passes/serial_launches.h"

#include <algorithm>
#include <set>

namespace tgc {

namespace {
// Outputs and elements read of k (each reduce range counted once, independent reduces as if
// nested: an overestimate only where a kernel has several, which keeps it out).
std::pair<int64_t, double> kernel_size(const Kernel& k) {
  int64_t outputs = 1;
  for (const UOp* r : k.global_ranges) outputs *= range_extent(r);
  double reads = double(outputs);
  std::set<const UOp*> seen;
  for (const UOp* u : toposort({k.ast}))
    if (u->op == Op::KReduce)
      for (size_t i = 1; i < u->src.size(); ++i)
        if (seen.insert(u->src[i]).second) reads *= double(range_extent(u->src[i]));
  return {outputs, reads};
}

bool serial_stage(const Kernel& k, int64_t group) {
  if (k.tensor_cores || !k.local_ranges.empty()) return false;
  for (const UOp* r : k.global_ranges)
    if (!r->src[0]->is_const()) return false;  // a run-time dim: its rounds would end at a VAR
  for (const UOp* u : toposort({k.ast}))
    if (u->op == Op::Var) return false;
  auto [outputs, reads] = kernel_size(k);
  return fits_serial_stage(outputs, reads, group);
}
}  // namespace

bool fits_serial_stage(int64_t outputs, double reads, int64_t group) {
  return group > 0 && outputs <= 4 * group && reads <= kSerialStageWork;
}

std::vector<SerialLaunch> plan_serial_launches(const Schedule& s, const TargetProfile& t) {
  std::vector<SerialLaunch> out;
  if (t.serial_group <= 0) return out;
  for (size_t i = 0; i < s.kernels.size();) {
    size_t j = i;
    while (j < s.kernels.size() && serial_stage(s.kernels[j], t.serial_group)) ++j;
    if (j - i >= 2) out.push_back({i, j - i});
    i = std::max(j, i + 1);
  }
  return out;
}

std::string serial_launch_name(const Schedule& s, const SerialLaunch& l) {
  return s.kernels[l.first].name + "_" + s.kernels[l.first + l.count - 1].name;
}

size_t launch_count(const Schedule& s, const std::vector<SerialLaunch>& serial) {
  size_t n = s.kernels.size();
  for (const SerialLaunch& l : serial) n -= l.count - 1;
  return n;
}

std::vector<Opt> serial_stage_opts(const Kernel& k, const TargetProfile& t) {
  std::vector<const UOp*> axes = kernel_axes(k);
  int first = int(k.global_ranges.size()), last = int(axes.size()) - 1;
  std::vector<int64_t> left(axes.size());  // each reduce axis's extent per thread
  for (int a = first; a <= last; ++a) left[size_t(a)] = range_extent(axes[size_t(a)]);
  std::vector<Opt> opts;
  // The group's threads to spare per output split the reduce, innermost axes first (at most 32:
  // every thread of a group reduce folds the group's partial sums itself). One reduce only:
  // several would each want the threads.
  int64_t spare = 1;
  while (spare * 2 * kernel_size(k).first <= t.serial_group && spare < 32) spare *= 2;
  for (int a = last; a >= first && spare > 1 && k.num_reduces == 1; --a) {
    int64_t c = spare;
    while (c > 1 && left[size_t(a)] % c) c /= 2;
    if (c > 1) opts.push_back({OptOp::Group, a, c}), left[size_t(a)] /= c, spare /= c;
  }
  // One work-group has few loads in flight: each thread issues up to kSerialUnroll of its loads
  // at once (innermost reduce axes first), a few round trips to memory rather than one per
  // element. (On an H200 this moved no launch's event time measurably; Adreno is unmeasured.)
  int64_t budget = kSerialUnroll;
  for (int a = last; a >= first && budget > 1; --a) {
    int64_t u = std::min(left[size_t(a)], budget);
    while (left[size_t(a)] % u) --u;
    if (u > 1) opts.push_back({OptOp::Unroll, a, u});
    if (u < left[size_t(a)]) break;
    budget /= u;
  }
  return opts;
}

}  // namespace tgc
