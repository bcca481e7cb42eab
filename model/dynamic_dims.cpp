#include "model/dynamic_dims.h"

#include <algorithm>
#include <unordered_map>

#include "ir/error.h"
#include "passes/dim_axes.h"

namespace tgc {
namespace {

std::vector<const UOp*> roots(const std::vector<NamedTensor>& v) {
  std::vector<const UOp*> r;
  for (const NamedTensor& t : v) r.push_back(t.tensor.uop());
  return r;
}

Model traced(const ModelSource& src, std::map<std::string, int64_t> sizes, const std::string& key, int64_t size) {
  sizes[key] = size;
  return src.build(sizes);
}

// --dynamic: the dims named become VARs, the graph is traced at their maxima (see the header).
Model import_with_vars(const ModelSource& src) {
  const std::string& path = src.path;
  const std::vector<UnknownDim>& unknown = src.unknown;
  std::map<std::string, int64_t> at_max;
  for (const auto& [name, max] : src.dynamic) {
    bool found = std::find(src.internal.begin(), src.internal.end(), name) != src.internal.end();
    for (const UnknownDim& d : unknown) found = found || d.key == name;
    if (!found) throw Error(path + ": --dynamic " + name + ": no input has a symbolic dim of that name without a size");
    if (max < 2) throw Error(path + ": --dynamic " + name + "=" + std::to_string(max) + ": the upper bound must be at least 2");
    at_max[name] = max;
  }
  Model m = src.build(at_max);  // an error lists the dims still without a size
  Graph& g = *m.graph;
  std::vector<const UOp*> roots_m = roots(m.outputs);
  for (const NamedTensor& t : m.inputs) m.input_dim_vars.push_back(std::vector<int32_t>(t.tensor.shape().size(), -1));
  for (const NamedTensor& t : m.outputs) m.output_dim_vars.push_back(std::vector<int32_t>(t.tensor.shape().size(), -1));
  for (const UOp* var : g.vars()) {
    const std::string& name = var->var().name;
    int64_t max = var->var().max;
    std::unordered_map<const UOp*, uint64_t> mask;
    try {
      Model b = traced(src, at_max, name, max - 1);
      mask = var_axes(g, roots_m, max, *b.graph, roots(b.outputs), max - 1);
    } catch (const Error& e) {
      throw Error(path + ": dim '" + name + "' cannot be bound at run time: " + e.what() + "; give it a size with --input-shape");
    }
    // Loops over the dim (kernel outputs, reduces) stop at its run-time value.
    for (const auto& [u, bits] : mask)
      for (int64_t ax = 0; ax < 64; ++ax)
        if (bits >> ax & 1) g.set_var_axis(u, ax, var);
    auto mark = [&](const std::vector<NamedTensor>& ts, std::vector<std::vector<int32_t>>& slots) {
      for (size_t i = 0; i < ts.size(); ++i)
        for (size_t k = 0; k < slots[i].size(); ++k)
          if (mask.at(ts[i].tensor.uop()) >> k & 1) {
            if (slots[i][k] >= 0) throw Error(path + ": '" + ts[i].name + "' dim " + std::to_string(k) + " follows two run-time dims");
            slots[i][k] = int32_t(g.var_slot(var));
          }
    };
    mark(m.inputs, m.input_dim_vars);
    mark(m.outputs, m.output_dim_vars);
  }
  return m;
}

}  // namespace

Model build_dynamic_model(const ModelSource& src) {
  const std::string& path = src.path;
  const std::vector<UnknownDim>& unknown = src.unknown;
  if (!src.dynamic.empty()) return import_with_vars(src);
  if (unknown.empty() || unknown[0].axis != 0) return src.build({});  // sized, or an error listing the dims
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
      src.build({});
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (" + what + " can stay dynamic: write it as ?)");
    }
  }
  std::vector<int> axes;
  Model a = traced(src, {}, batch.key, kBatchTraceA);
  try {
    Model b = traced(src, {}, batch.key, kBatchTraceB);
    axes = batch_axes(*a.graph, roots(a.outputs), kBatchTraceA, *b.graph, roots(b.outputs), kBatchTraceB);
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] > 0) throw Error("output '" + a.outputs[i].name + "' has the batch at axis " + std::to_string(axes[i]) + ", not first");
  } catch (const Error& e) {
    throw Error(path + ": " + what + " cannot be bound at run time: " + e.what() + "; give it a size with --input-shape");
  }
  Model m = traced(src, {}, batch.key, 1);
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
