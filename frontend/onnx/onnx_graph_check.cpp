#include "frontend/onnx/onnx_graph_check.h"

#include <set>
#include <unordered_map>

namespace tgc {

namespace {
std::string describe(const onnx::GraphProto& gp, int n) {
  const onnx::NodeProto& node = gp.node(n);
  return "node '" + (node.name().empty() ? "#" + std::to_string(n) : node.name()) + "' (" + node.op_type() + ")";
}

// Whether node `from` reads, directly or through other nodes, an output of node `target`.
bool depends_on(const std::unordered_map<std::string, int>& producer, const onnx::GraphProto& gp, int from, int target,
                std::set<int>& seen) {
  if (!seen.insert(from).second) return false;
  for (const std::string& in : gp.node(from).input()) {
    auto it = producer.find(in);
    if (it == producer.end()) continue;
    if (it->second == target || depends_on(producer, gp, it->second, target, seen)) return true;
  }
  return false;
}
}  // namespace

std::string missing_input_reason(const onnx::GraphProto& gp, int node_index, const std::string& name) {
  std::unordered_map<std::string, int> producer;
  for (int n = 0; n < gp.node_size(); ++n)
    for (const std::string& out : gp.node(n).output())
      if (!out.empty()) producer.try_emplace(out, n);
  auto it = producer.find(name);
  if (it == producer.end()) return "input '" + name + "' is not produced by any node, initializer or graph input";
  if (it->second == node_index) return "input '" + name + "' is this node's own output: the graph has a cycle";
  std::set<int> seen;
  if (depends_on(producer, gp, it->second, node_index, seen))
    return "input '" + name + "' comes from " + describe(gp, it->second) + ", which depends on this node's output: the graph has a cycle";
  return "input '" + name + "' comes from " + describe(gp, it->second) +
         ", which comes later: the nodes are not in the topological order ONNX requires";
}

}  // namespace tgc
