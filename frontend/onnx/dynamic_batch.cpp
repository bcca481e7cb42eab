#include "frontend/onnx/dynamic_batch.h"

#include "ir/error.h"
#include "passes/batch_axis.h"

namespace tgc {
namespace {

std::vector<const UOp*> roots(const std::vector<NamedTensor>& v) {
  std::vector<const UOp*> r;
  for (const NamedTensor& t : v) r.push_back(t.tensor.uop());
  return r;
}

Model traced(const std::string& path, ImportOptions options, const std::string& key, int64_t size) {
  options.dim_sizes[key] = size;
  return import_onnx(path, options);
}

}  // namespace

Model import_onnx_dynamic(const std::string& path, const ImportOptions& options) {
  std::vector<UnknownDim> unknown = unknown_input_dims(path, options);
  if (unknown.empty() || unknown[0].axis != 0) return import_onnx(path, options);  // sized, or an error listing the dims
  const UnknownDim& batch = unknown[0];
  std::string name = batch.param.empty() ? "batch" : batch.param;
  std::string inputs;
  bool others = false;
  for (const UnknownDim& d : unknown) {
    if (d.axis == 0 && d.key == batch.key) inputs += (inputs.empty() ? "'" : ", '") + d.input + "'";
    else others = true;
  }
  std::string what = "dim '" + name + "' (axis 0 of " + inputs + ")";
  if (others) {
    try {
      import_onnx(path, options);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (" + what + " can stay dynamic: write it as ?)");
    }
  }
  std::vector<int> axes;
  Model a = traced(path, options, batch.key, kBatchTraceA);
  try {
    Model b = traced(path, options, batch.key, kBatchTraceB);
    axes = batch_axes(*a.graph, roots(a.outputs), kBatchTraceA, *b.graph, roots(b.outputs), kBatchTraceB);
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] > 0) throw Error("output '" + a.outputs[i].name + "' has the batch at axis " + std::to_string(axes[i]) + ", not first");
  } catch (const Error& e) {
    throw Error(path + ": " + what + " cannot be bound at run time: " + e.what() + "; give it a size with --input-shape");
  }
  Model m = traced(path, options, batch.key, 1);
  m.batch_dim = name;
  for (const NamedTensor& in : m.inputs) {
    bool batched = false;
    for (const UnknownDim& d : unknown) batched = batched || d.input == in.name;
    m.batched_inputs.push_back(batched);
  }
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    // The runtime reports outputs as the traces have them, with the batch size first.
    Shape want = a.outputs[i].tensor.shape();
    if (axes[i] == 0) want[0] = 1;
    if (m.outputs[i].tensor.shape() != want)
      throw Error(path + ": " + what + " cannot be bound at run time: output '" + m.outputs[i].name + "' has shape " +
                  shape_str(m.outputs[i].tensor.shape()) + " at batch size 1, not " + shape_str(want) + "; give it a size with --input-shape");
    m.batched_outputs.push_back(axes[i] == 0);
  }
  return m;
}

}  // namespace tgc
