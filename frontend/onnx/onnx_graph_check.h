// Explanations for malformed ONNX graphs, so that import errors say what is wrong.
#pragma once
#include <string>

#include "onnx/onnx.pb.h"

namespace tgc {

// Why input `name` of node `node_index` has no value yet: no node, initializer or graph input
// produces it, or its producer does not come before the node (a cycle, or nodes out of the
// topological order ONNX requires).
std::string missing_input_reason(const onnx::GraphProto& gp, int node_index, const std::string& name);

}  // namespace tgc
