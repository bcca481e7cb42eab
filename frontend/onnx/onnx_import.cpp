#include "frontend/onnx/onnx_import.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_map>

#include "frontend/npy.h"
#include "frontend/onnx/onnx_graph_check.h"
#include "frontend/onnx/onnx_ops.h"
#include "ir/error.h"

namespace tgc {

int64_t checked_numel(const Shape& dims);  // onnx_context.cpp: refused past 2^40 elements

namespace {
// Reads the whole file; protobuf-lite parses from memory.
std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open");
  return std::string(std::istreambuf_iterator<char>(f), {});
}

int64_t default_opset(const onnx::ModelProto& m, const std::string& path) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  if (m.opset_import_size() == 0) throw Error(path + ": model declares no opset");
  return 1;
}

const char* kDynamicDims =
    ": dynamic input dims need sizes (give them with --input-shape NAME=d0,d1,..., or keep one dynamic up to a bound "
    "with --dynamic NAME=MAX; tgc eval also takes them from the -i files): ";

// The shape of graph input v: --input-shape, else its ONNX dims with the symbolic ones taken from
// dim_sizes or from the data at hand (shape_hints). Dims still unknown are -1, listed in `unknown`,
// and described in `messages` with the flag that fixes them.
Shape input_shape(const onnx::ValueInfoProto& v, const ImportOptions& opt, const std::string& path,
                  std::vector<UnknownDim>& unknown, std::vector<std::string>& messages) {
  const auto& tt = v.type().tensor_type();
  const Shape* given = nullptr;
  for (const std::string& key : {v.name(), file_safe(v.name())})
    if (auto it = opt.input_shapes.find(key); it != opt.input_shapes.end()) {
      if (tt.has_shape() && int(it->second.size()) != tt.shape().dim_size())
        throw Error(path + ": --input-shape " + key + " gives " + std::to_string(it->second.size()) +
                    " dims, the model declares " + std::to_string(tt.shape().dim_size()));
      given = &it->second;
    }
  const Shape* hint = nullptr;
  for (const std::string& key : {v.name(), file_safe(v.name())})
    if (auto it = opt.shape_hints.find(key); it != opt.shape_hints.end()) hint = &it->second;
  if (!tt.has_shape()) {  // not even the rank is known
    if (given && std::count(given->begin(), given->end(), -1) == 0) return *given;
    if (hint) return *hint;
    unknown.push_back({v.name(), -1, "", v.name() + ":rank"});
    messages.push_back("input '" + v.name() + "' has no shape (unknown rank): --input-shape " + file_safe(v.name()) +
                       "=d0,d1,...");
    return {};
  }
  Shape s;
  std::string missing, flag;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    std::string param = d.has_dim_param() ? d.dim_param() : "";
    std::string key = param.empty() ? v.name() + ":" + std::to_string(i) : param;
    int64_t n = -1;
    if (given && (*given)[size_t(i)] >= 0)
      n = (*given)[size_t(i)];
    else if (d.has_dim_value() && d.dim_value() >= 0)
      n = d.dim_value();
    else if (auto it = opt.dim_sizes.find(key); it != opt.dim_sizes.end())
      n = it->second;
    else if (hint && int(hint->size()) == tt.shape().dim_size())
      n = (*hint)[size_t(i)];
    if (n < 0) {
      unknown.push_back({v.name(), i, param, key});
      missing += (missing.empty() ? "" : ", ") + std::string("dim ") + std::to_string(i) +
                 (param.empty() ? " (unnamed)" : " ('" + param + "')");
    }
    s.push_back(n);
    flag += (i ? "," : "") + (n >= 0 ? std::to_string(n) : "<" + (param.empty() ? "?" : param) + ">");
  }
  if (!missing.empty())
    messages.push_back("input '" + v.name() + "' " + missing + ": --input-shape " + file_safe(v.name()) + "=" + flag);
  return s;
}

// The shape of graph input v, every dim known (else an error naming them).
Shape known_input_shape(const onnx::ValueInfoProto& v, const ImportOptions& opt, const std::string& path) {
  std::vector<UnknownDim> unknown;
  std::vector<std::string> messages;
  Shape s = input_shape(v, opt, path, unknown, messages);
  if (!messages.empty()) throw Error(path + kDynamicDims + messages[0]);
  try {
    checked_numel(s);
  } catch (const Error& e) {
    throw Error(path + ": input '" + v.name() + "': " + e.what());
  }
  return s;
}

// A model input fixed at compile time (ImportOptions::input_values).
Tensor fixed_input(Graph& g, const std::string& name, DType t, const Shape& shape, const std::vector<double>& v,
                   const std::string& path) {
  HostTensor h(t, shape);
  if (int64_t(v.size()) != 1 && int64_t(v.size()) != h.numel())
    throw Error(path + ": --input-value " + name + " gives " + std::to_string(v.size()) +
                " values for an input of shape " + shape_str(shape));
  for (int64_t i = 0; i < h.numel(); ++i) h.set(i, v[v.size() == 1 ? 0 : size_t(i)]);
  return Tensor::weight(g, name, std::move(h));
}

// Values visible to a graph's nodes: its own, then those of the enclosing graphs (ONNX subgraphs
// such as If branches read outer values by name).
// Sequence values (lists of tensors known at compile time, onnx_ops_sequence.cpp) live beside
// the tensors.
struct Scope {
  std::unordered_map<std::string, Tensor> values;
  const Scope* parent = nullptr;
  std::unordered_map<std::string, OpContext::Sequence> sequences{};
  const Tensor* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      if (auto it = s->values.find(name); it != s->values.end()) return &it->second;
      if (s->sequences.count(name)) return nullptr;  // an inner sequence hides an outer tensor
    }
    return nullptr;
  }
  const OpContext::Sequence* find_sequence(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      if (auto it = s->sequences.find(name); it != s->sequences.end()) return &it->second;
      if (s->values.count(name)) return nullptr;
    }
    return nullptr;
  }
};

struct Importer {
  Graph& g;
  std::string path, dir;
  int64_t opset;
  const ImportOptions& options;
  std::map<std::string, OpContext::RuntimeInput> runtime_inputs{};

  // Runs the nodes of `gp` (the main graph or a subgraph) in `scope`; returns its outputs.
  // `prefix` names the enclosing nodes in errors ("If_0/then_branch/").
  std::vector<Tensor> run(const onnx::GraphProto& gp, Scope& scope, const std::string& prefix) {
    for (const auto& init : gp.initializer()) {
      try {
        scope.values[init.name()] = weight_from_proto(g, init.name(), init, dir);
      } catch (const Error& e) {
        throw Error(path + ": initializer '" + prefix + init.name() + "': " + e.what());
      }
    }
    const auto& ops = onnx_ops();
    const MlasOrder mlas = plan_mlas_order(gp, options.mlas_block);
    for (int n : topological_order(gp)) {
      const onnx::NodeProto& node = gp.node(n);
      std::string label = prefix + (node.name().empty() ? "#" + std::to_string(n) : node.name());
      std::string where = path + ": node '" + label + "' (" + node.op_type() + ", opset " + std::to_string(opset) + ")";
      if (!node.domain().empty() && node.domain() != "ai.onnx")
        throw Error(where + ": unsupported domain '" + node.domain() + "'");
      auto impl = ops.find(node.op_type());
      if (impl == ops.end()) throw Error(where + ": unsupported op type '" + node.op_type() + "'");
      // Every ONNX op has at least one output (the op implementations name their values by it).
      if (node.output_size() == 0) throw Error(where + ": the node has no outputs");
      std::vector<std::optional<Tensor>> inputs;
      std::vector<std::optional<OpContext::Sequence>> sequences;
      for (const std::string& name : node.input()) {
        inputs.push_back(std::nullopt);
        sequences.push_back(std::nullopt);
        if (name.empty()) continue;
        if (const OpContext::Sequence* s = scope.find_sequence(name))
          sequences.back() = *s;
        else if (const Tensor* t = scope.find(name))
          inputs.back() = *t;
        else
          throw Error(where + ": " + missing_input_reason(gp, n, name));
      }
      OpContext ctx(g, node, opset, where, std::move(inputs));
      ctx.set_sequence_inputs(std::move(sequences));
      ctx.options = &options;
      ctx.mlas = &mlas;
      ctx.runtime_inputs = &runtime_inputs;
      ctx.run_subgraph = [&, label](const onnx::GraphProto& sub, const std::string& attr,
                                    const std::vector<Tensor>& ins, const std::map<std::string, Tensor>& outer) {
        Scope shadow{{outer.begin(), outer.end()}, &scope};
        Scope inner;
        inner.parent = outer.empty() ? &scope : &shadow;
        std::string sub_prefix = label + "/" + attr + "/";
        if (int(ins.size()) != sub.input_size())
          throw Error(where + ": " + attr + " takes " + std::to_string(sub.input_size()) + " inputs, given " +
                      std::to_string(ins.size()));
        for (int i = 0; i < sub.input_size(); ++i) inner.values[sub.input(i).name()] = ins[size_t(i)];
        return run(sub, inner, sub_prefix);
      };
      std::vector<Tensor> outs;
      try {
        outs = impl->second(ctx);
      } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.rfind(printable(path), 0) == 0) throw;  // already names the node
        throw Error(where + ": " + msg);
      }
      for (int i = 0; i < node.output_size() && i < int(outs.size()); ++i) {
        if (node.output(i).empty()) continue;
        g.set_origin(outs[size_t(i)].uop(), node.op_type() + " " + label);
        scope.values[node.output(i)] = outs[size_t(i)];
      }
      for (auto& [i, seq] : ctx.sequence_outputs)
        if (int(i) < node.output_size() && !node.output(int(i)).empty())
          scope.values.erase(node.output(int(i))), scope.sequences[node.output(int(i))] = std::move(seq);
      for (int i = int(outs.size()); i < node.output_size(); ++i)
        if (!node.output(i).empty() && !ctx.sequence_outputs.count(size_t(i)))
          throw Error(where + ": output " + std::to_string(i) + " ('" + node.output(i) + "') is not supported");
    }
    std::vector<Tensor> outs;
    for (const auto& out : gp.output()) {
      if (scope.find_sequence(out.name()))
        throw Error(path + ": graph output '" + prefix + out.name() +
                    "' is a sequence (tgc's model and subgraph outputs are tensors)");
      const Tensor* t = scope.find(out.name());
      if (!t) throw Error(path + ": graph output '" + prefix + out.name() + "' is never produced");
      outs.push_back(*t);
    }
    return outs;
  }
};

// Every graph input must be a tensor of a supported type. Returns the dims left without a size,
// and their descriptions.
std::vector<UnknownDim> check_inputs(const onnx::GraphProto& gp, const ImportOptions& opt, const std::string& path,
                                     std::vector<std::string>& messages) {
  std::set<std::string> initializers;
  for (const auto& init : gp.initializer()) initializers.insert(init.name());
  std::vector<UnknownDim> unknown;
  for (const auto& in : gp.input()) {
    if (initializers.count(in.name())) continue;
    if (!in.type().has_tensor_type()) throw Error(path + ": input '" + in.name() + "' is not a tensor");
    try {
      dtype_from_onnx(in.type().tensor_type().elem_type());
    } catch (const Error& e) {
      throw Error(path + ": input '" + in.name() + "': " + e.what());
    }
    input_shape(in, opt, path, unknown, messages);
  }
  return unknown;
}

onnx::ModelProto parse_model(const std::string& path) {
  onnx::ModelProto proto;
  std::string bytes = read_file(path);
  if (bytes.empty() || !proto.ParseFromString(bytes) || !proto.has_graph())
    throw Error(path + ": not a valid ONNX model (truncated or corrupt protobuf)");
  return proto;
}
}  // namespace

std::vector<UnknownDim> unknown_input_dims(const std::string& path, const ImportOptions& options) {
  std::vector<std::string> messages;
  return check_inputs(parse_model(path).graph(), options, path, messages);
}

Model import_onnx(const std::string& path, const ImportOptions& options) {
  onnx::ModelProto proto = parse_model(path);
  // Exporters list domains they never use (ORT-internal ones, training); only a node of an
  // unknown domain is an error, raised where the node is imported.
  int64_t opset = default_opset(proto, path);
  if (opset < 1 || opset > 21)
    throw Error(path + ": unsupported ai.onnx opset " + std::to_string(opset) + " (tgc handles 1 to 21)");

  Model model;
  model.path = path;
  model.graph = std::make_unique<Graph>();
  Graph& g = *model.graph;
  const onnx::GraphProto& gp = proto.graph();
  Importer importer{g, path, std::filesystem::path(path).parent_path().string(), opset, options};
  Scope scope;
  std::set<std::string> initializers;
  for (const auto& init : gp.initializer()) initializers.insert(init.name());
  // One error lists every dim left without a size.
  std::vector<std::string> messages;
  for (const auto& [name, max] : options.dynamic) {
    int64_t step = options.dynamic_step.count(name) ? options.dynamic_step.at(name) : 1;
    g.set_var_step(g.declare_var(name, 1, max / step), step);
  }
  check_inputs(gp, options, path, messages);
  if (!messages.empty()) {
    std::string list;
    for (const std::string& d : messages) list += (list.empty() ? "" : "; ") + d;
    throw Error(path + kDynamicDims + list);
  }
  for (const auto& in : gp.input()) {
    if (initializers.count(in.name())) continue;  // an initializer listed as input (old exporters)
    if (!in.type().has_tensor_type()) throw Error(path + ": input '" + in.name() + "' is not a tensor");
    DType t = dtype_from_onnx(in.type().tensor_type().elem_type());
    const std::vector<double>* fixed = nullptr;
    for (const std::string& key : {in.name(), file_safe(in.name())})
      if (auto it = options.input_values.find(key); it != options.input_values.end()) fixed = &it->second;
    if (fixed) {
      scope.values[in.name()] = fixed_input(g, in.name(), t, known_input_shape(in, options, path), *fixed, path);
      continue;
    }
    Tensor x = Tensor::input(g, in.name(), t, known_input_shape(in, options, path));
    scope.values[in.name()] = x;
    const auto& dims = in.type().tensor_type().shape().dim();
    for (int i = 0; i < dims.size(); ++i) {
      std::string key = dims[i].has_dim_param() && !dims[i].dim_param().empty() ? dims[i].dim_param()
                                                                                : in.name() + ":" + std::to_string(i);
      if (!options.dynamic.count(key)) continue;
      importer.runtime_inputs[in.name()].tensor = x;
      importer.runtime_inputs[in.name()].axes.push_back({i, key});
    }
    model.inputs.push_back({in.name(), x});
  }
  auto check_names = [&](const auto& named, const char* flag) {
    for (const auto& [name, _] : named) {
      bool known = false;
      for (const auto& in : gp.input()) known = known || in.name() == name || file_safe(in.name()) == name;
      if (!known) throw Error(path + ": " + flag + " names '" + name + "', which is not a model input");
    }
  };
  check_names(options.input_shapes, "--input-shape");
  check_names(options.input_values, "--input-value");
  std::vector<Tensor> outs = importer.run(gp, scope, "");
  for (int i = 0; i < gp.output_size(); ++i) model.outputs.push_back({gp.output(i).name(), outs[size_t(i)]});
  if (model.outputs.empty()) throw Error(path + ": graph has no outputs");
  return model;
}

ModelSource onnx_model_source(const std::string& path, const ImportOptions& options) {
  return {path,
          unknown_input_dims(path, options),
          options.dynamic,
          [path, options](const std::map<std::string, int64_t>& sizes) {
            ImportOptions o = options;
            for (const auto& [key, n] : sizes) o.dim_sizes[key] = n;
            return import_onnx(path, o);
          },
          {},
          options.dynamic_step};
}

HostTensor read_onnx_tensor(const std::string& path) {
  onnx::TensorProto p;
  std::string bytes = read_file(path);
  if (!p.ParseFromString(bytes)) throw Error(path + ": not a valid TensorProto");
  return host_tensor_from_proto(p, std::filesystem::path(path).parent_path().string());
}

}  // namespace tgc
