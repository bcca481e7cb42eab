// Human-readable dumps of the IR: one line per node for graphs, infix for scalar expressions.
#pragma once
#include <string>
#include <vector>

#include "ir/uop.h"

namespace tgc {

// "%3 = MUL f32[2,3] %1 %2" lines, sources before users.
std::string print_graph(const Graph& g, const std::vector<const UOp*>& roots);
// Infix rendering of a scalar kernel expression, e.g. "((r0*3)+r1)".
std::string print_expr(const Graph& g, const UOp* u);
std::string arg_str(const UOp* u);

}  // namespace tgc
