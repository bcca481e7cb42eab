// Node order and explanations for malformed ONNX graphs, so that import errors say what is wrong.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "onnx/onnx.pb.h"

namespace tgc {

// The first node (its index) that produces each name of `gp`.
std::unordered_map<std::string, int> producers(const onnx::GraphProto& gp);

// The order to import `gp`'s nodes in: topological, as onnxruntime sorts them (converters such as
// fp16 tools append nodes at the end of the graph), otherwise the file's order. A node reads the
// values other nodes of `gp` produce through its inputs and through the outer names its subgraphs
// (If/Loop/Scan bodies) use. Nodes left over by a cycle come last, a node on the cycle first, so
// that importing stops at it and missing_input_reason names the cycle.
std::vector<int> topological_order(const onnx::GraphProto& gp);

// Why input `name` of node `node_index` has no value yet: no node, initializer or graph input
// produces it, or its producer does not come before the node (a cycle).
std::string missing_input_reason(const onnx::GraphProto& gp, int node_index, const std::string& name);

}  // namespace tgc
