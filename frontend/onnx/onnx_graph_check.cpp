#include "frontend/onnx/onnx_graph_check.h"

#include <queue>
#include <set>
#include <unordered_map>

namespace tgc {

std::unordered_map<std::string, int> producers(const onnx::GraphProto& gp) {
  std::unordered_map<std::string, int> producer;
  for (int n = 0; n < gp.node_size(); ++n)
    for (const std::string& out : gp.node(n).output())
      if (!out.empty()) producer.try_emplace(out, n);
  return producer;
}

namespace {
std::string describe(const onnx::GraphProto& gp, int n) {
  const onnx::NodeProto& node = gp.node(n);
  return "node '" + (node.name().empty() ? "#" + std::to_string(n) : node.name()) + "' (" + node.op_type() + ")";
}

// Every name a subgraph's nodes read, its own values included (those are never produced by the
// outer graph's nodes, so they add no edge there).
void subgraph_reads(const onnx::GraphProto& g, std::set<std::string>& names) {
  for (const onnx::NodeProto& node : g.node()) {
    for (const std::string& in : node.input()) names.insert(in);
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) subgraph_reads(a.g(), names);
      for (const onnx::GraphProto& sub : a.graphs()) subgraph_reads(sub, names);
    }
  }
  for (const onnx::ValueInfoProto& out : g.output()) names.insert(out.name());
}

// The names node `n` reads: its inputs and its subgraphs' reads.
std::set<std::string> reads(const onnx::NodeProto& node) {
  std::set<std::string> names(node.input().begin(), node.input().end());
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.has_g()) subgraph_reads(a.g(), names);
    for (const onnx::GraphProto& sub : a.graphs()) subgraph_reads(sub, names);
  }
  names.erase("");
  return names;
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

std::vector<int> topological_order(const onnx::GraphProto& gp) {
  const int n = gp.node_size();
  std::unordered_map<std::string, int> producer = producers(gp);
  std::vector<std::vector<int>> readers(size_t(n), std::vector<int>{});
  std::vector<int> waiting(size_t(n), 0);  // producing nodes not yet placed
  for (int i = 0; i < n; ++i)
    for (const std::string& name : reads(gp.node(i))) {
      auto it = producer.find(name);
      if (it == producer.end()) continue;  // an input, initializer or outer value (or missing)
      readers[size_t(it->second)].push_back(i);
      ++waiting[size_t(i)];
    }
  // Kahn's algorithm taking the lowest index first, so a sorted graph keeps its order.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (waiting[size_t(i)] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int r : readers[size_t(i)])
      if (--waiting[size_t(r)] == 0) ready.push(r);
  }
  if (int(order.size()) == n) return order;
  std::vector<int> left;  // on a cycle or after one
  for (int i = 0; i < n; ++i)
    if (waiting[size_t(i)] > 0) left.push_back(i);
  for (size_t k = 0; k < left.size(); ++k) {
    std::set<int> seen;
    if (depends_on(producer, gp, left[k], left[k], seen)) {
      std::swap(left[0], left[k]);
      break;
    }
  }
  order.insert(order.end(), left.begin(), left.end());
  return order;
}

std::string missing_input_reason(const onnx::GraphProto& gp, int node_index, const std::string& name) {
  std::unordered_map<std::string, int> producer = producers(gp);
  auto it = producer.find(name);
  if (it == producer.end()) return "input '" + name + "' is not produced by any node, initializer or graph input";
  if (it->second == node_index) return "input '" + name + "' is this node's own output: the graph has a cycle";
  std::set<int> seen;
  if (depends_on(producer, gp, it->second, node_index, seen))
    return "input '" + name + "' comes from " + describe(gp, it->second) +
           ", which depends on this node's output: the graph has a cycle";
  return "input '" + name + "' comes from " + describe(gp, it->second) + ", which depends on a cycle";
}

}  // namespace tgc
