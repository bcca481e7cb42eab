// An If on a run-time condition runs only the branch it takes (CPU backend). Both branches are
// in the graph, their outputs picked by WHEREs (Graph::branch_selects); each condition becomes a
// VAR the model computes first (1 false, 2 true), and a kernel whose result only one side of
// the selects needs runs only when its VAR has that side's value (tgc_launch's runs_if_var).
// The selects stay: what a skipped kernel leaves in its buffer is never picked.
#pragma once
#include <unordered_map>
#include <vector>

#include "ir/uop.h"

namespace tgc {

struct BranchGuards {
  struct Guard {
    const UOp* var;  // the condition's VAR
    int64_t value;   // runs when the VAR is this (1: the condition is false, 2: true)
  };
  std::unordered_map<const UOp*, Guard> of;  // tensor node -> the side that alone needs it
  std::vector<const UOp*> vars;              // the conditions' VARs (their values: Graph::var_value)
};

// Declares the conditions' VARs in g and finds, for every node that `roots` need, whether one
// side of a select alone needs it. Nested selects guard by the innermost condition.
BranchGuards guard_branches(Graph& g, const std::vector<const UOp*>& roots);

}  // namespace tgc
