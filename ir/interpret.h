// The reference interpreter: evaluates a Tensor graph directly, element by element, with the op
// semantics of ir/scalar. Slow and obviously right; it is the oracle for every backend.
#pragma once
#include <map>
#include <vector>

#include "ir/tensor.h"

namespace tgc {

// Evaluates `outputs`. `inputs` maps input buffer ids to their data; weights come from the graph.
std::vector<HostTensor> interpret(const Graph& g, const std::vector<const UOp*>& outputs,
                                  const std::map<int64_t, HostTensor>& inputs);

}  // namespace tgc
