// What an ONNX op implementation sees: its node's inputs, attributes and opset, plus helpers
// that fold compile-time constants (shapes, axes) and raise errors naming the node.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/tensor.h"
#include "onnx/onnx.pb.h"

namespace tgc {

HostTensor host_tensor_from_proto(const onnx::TensorProto& p, const std::string& model_dir);
DType dtype_from_onnx(int onnx_type);  // throws tgc::Error for unsupported types

class OpContext {
 public:
  OpContext(Graph& g, const onnx::NodeProto& node, int64_t opset, const std::string& where,
            std::vector<std::optional<Tensor>> inputs)
      : g(g), node(node), opset(opset), where_(where), inputs_(std::move(inputs)) {}

  Graph& g;
  const onnx::NodeProto& node;
  const int64_t opset;

  size_t num_inputs() const { return inputs_.size(); }
  bool has(size_t i) const { return i < inputs_.size() && inputs_[i].has_value(); }
  const Tensor& in(size_t i) const;
  std::vector<Tensor> all_inputs() const;
  // Whether input i is known at compile time (no model input feeds it).
  bool is_constant(size_t i) const;
  // Input i evaluated at compile time (it must not depend on model inputs).
  HostTensor constant(size_t i) const;
  std::vector<int64_t> ints(size_t i) const { return constant(i).to_ints(); }
  std::vector<double> floats(size_t i) const;

  bool has_attr(const std::string& name) const { return find(name) != nullptr; }
  int64_t attr_int(const std::string& name, int64_t def) const;
  double attr_float(const std::string& name, double def) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<double> attr_floats(const std::string& name) const;
  const onnx::TensorProto* attr_tensor(const std::string& name) const;

  [[noreturn]] void fail(const std::string& msg) const { throw Error(where_ + ": " + msg); }
  const std::string& where() const { return where_; }

 private:
  const onnx::AttributeProto* find(const std::string& name) const;
  std::string where_;
  std::vector<std::optional<Tensor>> inputs_;
};

using OpImpl = std::function<std::vector<Tensor>(OpContext&)>;
const std::map<std::string, OpImpl>& onnx_ops();

}  // namespace tgc
