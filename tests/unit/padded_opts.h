// What the PADTO tests apply to a kernel: every axis rounded up by the first of 4, 8, 16 that is
// legal, then split by that amount (UPCAST/UNROLL on CPUs, LOCAL/GROUPTOP on GPUs), as the
// heuristics and BEAM do for odd sizes.
#pragma once
#include <vector>

#include "ir/error.h"
#include "passes/opt.h"

namespace tgc::test {

inline std::vector<Opt> padded_split_opts(Graph& g, const Kernel& k, const TargetProfile& t) {
  std::vector<Opt> opts;
  for (int a = 0; a < int(kernel_axes(k).size()); ++a) {
    bool global = size_t(a) < k.global_ranges.size();
    OptOp split = t.gpu ? (global ? OptOp::Local : OptOp::GroupTop) : (global ? OptOp::Upcast : OptOp::Unroll);
    for (int64_t c : {4, 8, 16}) {
      std::vector<Opt> next = opts;
      next.push_back({OptOp::Padto, a, c});
      next.push_back({split, a, c});
      try {
        apply_opts(g, k, next, t);
        opts = next;
        break;
      } catch (const Error&) {
      }
    }
  }
  return opts;
}

}  // namespace tgc::test
