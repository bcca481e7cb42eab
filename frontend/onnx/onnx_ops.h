// What an ONNX op implementation sees: its node's inputs, attributes and opset, plus helpers
// that fold compile-time constants (shapes, axes) and raise errors naming the node.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/error.h"
#include "frontend/frontend.h"
#include "frontend/onnx/onnx_mlas_order.h"
#include "ir/tensor.h"
#include "onnx/onnx.pb.h"

namespace tgc {

HostTensor host_tensor_from_proto(const onnx::TensorProto& p, const std::string& model_dir);
// An initializer as a weight; external data is mapped from its file rather than read.
Tensor weight_from_proto(Graph& g, const std::string& name, const onnx::TensorProto& p, const std::string& model_dir);
DType dtype_from_onnx(int onnx_type);  // throws tgc::Error for unsupported types

// Attribute `name` of node n, or null; its int or string, `def` where n has none.
const onnx::AttributeProto* node_attr(const onnx::NodeProto& n, const std::string& name);
int64_t node_attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def);
std::string node_attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& def);

class OpContext {
 public:
  OpContext(Graph& g, const onnx::NodeProto& node, int64_t opset, const std::string& where,
            std::vector<std::optional<Tensor>> inputs)
      : g(g), node(node), opset(opset), where_(where), inputs_(std::move(inputs)) {}

  Graph& g;
  const onnx::NodeProto& node;
  const int64_t opset;

  size_t num_inputs() const { return inputs_.size(); }
  // Whether input i is given (a tensor; a sequence there fails, see seq_in).
  bool has(size_t i) const {
    if (is_sequence(i)) not_a_tensor(i);
    return i < inputs_.size() && inputs_[i].has_value();
  }
  const Tensor& in(size_t i) const;
  std::vector<Tensor> all_inputs() const;
  // Whether input i is known at compile time (no model input feeds it).
  bool is_constant(size_t i) const;
  // Input i evaluated at compile time (it must not depend on model inputs).
  HostTensor constant(size_t i) const;
  std::vector<int64_t> ints(size_t i) const { return constant(i).to_ints(); }
  // The same for any tensor built while importing this node (e.g. a Loop body's condition).
  bool is_constant(const Tensor& t) const;
  HostTensor constant(const Tensor& t) const;
  std::vector<double> floats(size_t i) const;

  bool has_attr(const std::string& name) const { return find(name) != nullptr; }
  int64_t attr_int(const std::string& name, int64_t def) const;
  double attr_float(const std::string& name, double def) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<double> attr_floats(const std::string& name) const;
  std::vector<std::string> attr_strings(const std::string& name) const;
  const onnx::TensorProto* attr_tensor(const std::string& name) const;
  const onnx::GraphProto* attr_graph(const std::string& name) const;

  // Imports a subgraph attribute (If branches, Loop/Scan bodies) with this node's scope visible
  // and its graph inputs bound to `inputs`; returns the subgraph's outputs. `attr` names the
  // attribute in errors. Each call imports the nodes afresh (one unrolled iteration). `outer`
  // replaces values of the enclosing scopes by name (a branch built on inputs cut shorter).
  std::function<std::vector<Tensor>(const onnx::GraphProto& graph, const std::string& attr,
                                    const std::vector<Tensor>& inputs, const std::map<std::string, Tensor>& outer)>
      run_subgraph;

  // The model inputs with run-time dims (--dynamic), by name: the input and (axis, dim key) pairs.
  struct RuntimeInput {
    Tensor tensor;
    std::vector<std::pair<int64_t, std::string>> axes;
  };
  const std::map<std::string, RuntimeInput>* runtime_inputs = nullptr;

  // What the user fixed (--max-trips) and the sizes the model is traced at (dim_sizes), also
  // those of sizes the model computes from data (data_axis below).
  const ImportOptions* options = nullptr;

  // The nodes of this graph computed in onnxruntime's arithmetic (onnx_mlas_order.h); may be null.
  const MlasOrder* mlas = nullptr;
  bool in_mlas_order() const { return mlas && mlas->convs.count(&node); }
  bool mlas_upsample() const { return mlas && mlas->upsamples.count(&node); }

  // Sequence values (onnx_ops_sequence.cpp): a list of tensors whose length is known at compile
  // time. Input i as a sequence (the node fails where it is a tensor), and the node's output i
  // set to a sequence (the op returns the node's tensor outputs before it, if any).
  using Sequence = std::vector<Tensor>;
  bool is_sequence(size_t i) const { return i < seq_inputs_.size() && seq_inputs_[i].has_value(); }
  const Sequence& seq_in(size_t i) const;
  void set_sequence_inputs(std::vector<std::optional<Sequence>> s) { seq_inputs_ = std::move(s); }
  std::map<size_t, Sequence> sequence_outputs;

  [[noreturn]] void fail(const std::string& msg) const { throw Error(where_ + ": " + msg); }
  const std::string& where() const { return where_; }

 private:
  const onnx::AttributeProto* find(const std::string& name) const;
  [[noreturn]] void not_a_tensor(size_t i) const;
  std::string where_;
  std::vector<std::optional<Tensor>> inputs_;
  std::vector<std::optional<Sequence>> seq_inputs_;
};

// ---- helpers shared by the op files ---------------------------------------------------------
using Ctx = OpContext;
using Outs = std::vector<Tensor>;
template <typename F>
auto map1(F f) {
  return [f](Ctx& c) -> Outs { return {f(c.in(0))}; };
}
template <typename F>
auto map2(F f) {
  return [f](Ctx& c) -> Outs { return {f(c.in(0), c.in(1))}; };
}
std::vector<int64_t> spatial_axes(const Tensor& x);  // every axis after batch and channel
// Axes given as an attribute (older opsets) or as an optional input (newer ones).
std::vector<int64_t> axes_of(Ctx& c, size_t input, const char* attr = "axes");
// Folds the inputs left to right with `combine` (variadic Sum, Max, ...).
Tensor variadic(Ctx& c, Tensor (*combine)(const Tensor&, const Tensor&));
// Resolves auto_pad into explicit begin/end pads (ONNX order: all begins, then all ends).
std::vector<int64_t> spatial_pads(Ctx& c, const Shape& in_spatial, const std::vector<int64_t>& kernel,
                                  const std::vector<int64_t>& strides, const std::vector<int64_t>& dil);
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
};
// kernel, strides, dilations and resolved pads of a Conv/Pool node on input x.
Window window(Ctx& c, const Tensor& x, std::vector<int64_t> kernel);

// An output axis whose size the model computes from data (onnx_ops_data.cpp): `count` (an
// integer scalar, at most max) becomes a VAR, the axis is laid out at an upper bound, and
// `positions` are 0..size-1 at the size this trace lays it out at.
struct DataAxis {
  Tensor positions;  // i64 [size]
  Tensor valid;      // bool [size]: position < count at run time
};
DataAxis data_axis(Ctx& c, int64_t max, const Tensor& count);
// `y` with the positions along `axis` past the count zeroed (nothing reads them as data; reading
// the count also orders the kernels that loop up to it after the one that computes it).
Tensor masked(const Tensor& y, const DataAxis& d, int64_t axis);

using OpImpl = std::function<std::vector<Tensor>(OpContext&)>;
using OpTable = std::map<std::string, OpImpl>;
const OpTable& onnx_ops();

// The op table is assembled from one part per concern (each in its own onnx_ops_*.cpp).
void add_nn_ops(OpTable& t);        // normalizations, activations, ConvTranspose, reductions, ...
void add_resize_ops(OpTable& t);    // Resize, Upsample
void add_signal_ops(OpTable& t);    // DFT, STFT, window functions
void add_sample_ops(OpTable& t);    // GridSample, RoiAlign
void add_math_ops(OpTable& t);      // inverse trig/hyperbolic, IsNaN/IsInf, BitShift, loss functions
void add_index_ops(OpTable& t);     // gather/scatter, CumSum, OneHot, Trilu, Einsum, Pad modes
void add_data_ops(OpTable& t);      // NonZero, Compress, Unique, TopK with a run-time k: sizes from data
void add_quant_ops(OpTable& t);     // QuantizeLinear, DequantizeLinear, integer matmul/conv
void add_control_ops(OpTable& t);   // If, Loop, Scan
void add_rnn_ops(OpTable& t);       // LSTM, GRU, RNN (unrolled over the static sequence)
void add_text_ops(OpTable& t);      // TfIdfVectorizer
void add_sequence_ops(OpTable& t);  // SequenceConstruct, SplitToSequence, ConcatFromSequence, ...

}  // namespace tgc
