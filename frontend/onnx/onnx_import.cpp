#include "frontend/onnx/onnx_import.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_map>

#include "frontend/npy.h"
#include "frontend/onnx/onnx_ops.h"
#include "ir/error.h"

namespace tgc {

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

Shape input_shape(const onnx::ValueInfoProto& v, const ImportOptions& opt, const std::string& path) {
  for (const std::string& key : {v.name(), file_safe(v.name())})
    if (auto it = opt.input_shapes.find(key); it != opt.input_shapes.end()) return it->second;
  const auto& tt = v.type().tensor_type();
  const Shape* hint = nullptr;
  for (const std::string& key : {v.name(), file_safe(v.name())})
    if (auto it = opt.shape_hints.find(key); it != opt.shape_hints.end()) hint = &it->second;
  Shape s;
  std::string symbolic;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value() && d.dim_value() >= 0) {
      s.push_back(d.dim_value());
    } else if (hint && int(hint->size()) == tt.shape().dim_size()) {
      s.push_back((*hint)[size_t(i)]);
    } else {
      symbolic += (symbolic.empty() ? "" : ", ") + std::string("dim ") + std::to_string(i) +
                  (d.has_dim_param() ? " ('" + d.dim_param() + "')" : "");
      s.push_back(-1);
    }
  }
  if (!symbolic.empty())
    throw Error(path + ": input '" + v.name() + "' has dynamic " + symbolic + "; fix it with --input-shape " +
                v.name() + "=d0,d1,... (or pass that input with -i)");
  return s;
}
}  // namespace

Model import_onnx(const std::string& path, const ImportOptions& options) {
  onnx::ModelProto proto;
  std::string bytes = read_file(path);
  if (bytes.empty() || !proto.ParseFromString(bytes) || !proto.has_graph())
    throw Error(path + ": not a valid ONNX model (truncated or corrupt protobuf)");
  for (const auto& o : proto.opset_import())
    if (!o.domain().empty() && o.domain() != "ai.onnx" && o.domain() != "ai.onnx.ml")
      throw Error(path + ": unsupported operator domain '" + o.domain() + "'");
  int64_t opset = default_opset(proto, path);
  if (opset < 1 || opset > 21) throw Error(path + ": unsupported opset " + std::to_string(opset) + " (tgc handles 1 to 21)");
  std::string dir = std::filesystem::path(path).parent_path().string();

  Model model;
  model.path = path;
  model.graph = std::make_unique<Graph>();
  Graph& g = *model.graph;
  const onnx::GraphProto& gp = proto.graph();
  std::unordered_map<std::string, Tensor> values;

  for (const auto& init : gp.initializer()) {
    try {
      values[init.name()] = Tensor::weight(g, init.name(), host_tensor_from_proto(init, dir));
    } catch (const Error& e) {
      throw Error(path + ": initializer '" + init.name() + "': " + e.what());
    }
  }
  for (const auto& in : gp.input()) {
    if (values.count(in.name())) continue;  // an initializer listed as input (old exporters)
    if (!in.type().has_tensor_type()) throw Error(path + ": input '" + in.name() + "' is not a tensor");
    DType t = dtype_from_onnx(in.type().tensor_type().elem_type());
    Tensor x = Tensor::input(g, in.name(), t, input_shape(in, options, path));
    values[in.name()] = x;
    model.inputs.push_back({in.name(), x});
  }
  for (const auto& [name, _] : options.input_shapes) {
    bool known = false;
    for (const auto& in : model.inputs) known = known || in.name == name || file_safe(in.name) == name;
    if (!known) throw Error(path + ": --input-shape names '" + name + "', which is not a model input");
  }

  const auto& ops = onnx_ops();
  for (int n = 0; n < gp.node_size(); ++n) {
    const onnx::NodeProto& node = gp.node(n);
    std::string label = node.name().empty() ? "#" + std::to_string(n) : node.name();
    std::string where = path + ": node '" + label + "' (" + node.op_type() + ", opset " + std::to_string(opset) + ")";
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      throw Error(where + ": unsupported domain '" + node.domain() + "'");
    auto impl = ops.find(node.op_type());
    if (impl == ops.end()) throw Error(where + ": unsupported op type '" + node.op_type() + "'");
    std::vector<std::optional<Tensor>> inputs;
    for (const std::string& name : node.input()) {
      if (name.empty()) {
        inputs.push_back(std::nullopt);
        continue;
      }
      auto it = values.find(name);
      if (it == values.end())
        throw Error(where + ": input '" + name + "' is not produced by any earlier node, initializer or graph input (missing, or a cycle)");
      inputs.push_back(it->second);
    }
    OpContext ctx(g, node, opset, where, std::move(inputs));
    std::vector<Tensor> outs;
    try {
      outs = impl->second(ctx);
    } catch (const Error& e) {
      std::string msg = e.what();
      if (msg.rfind(path, 0) == 0) throw;  // already names the node
      throw Error(where + ": " + msg);
    }
    for (int i = 0; i < node.output_size() && i < int(outs.size()); ++i) {
      if (node.output(i).empty()) continue;
      g.set_origin(outs[size_t(i)].uop(), node.op_type() + " " + label);
      values[node.output(i)] = outs[size_t(i)];
    }
    for (int i = int(outs.size()); i < node.output_size(); ++i)
      if (!node.output(i).empty()) throw Error(where + ": output " + std::to_string(i) + " ('" + node.output(i) + "') is not supported");
  }
  for (const auto& out : gp.output()) {
    auto it = values.find(out.name());
    if (it == values.end()) throw Error(path + ": graph output '" + out.name() + "' is never produced");
    model.outputs.push_back({out.name(), it->second});
  }
  if (model.outputs.empty()) throw Error(path + ": graph has no outputs");
  return model;
}

HostTensor read_onnx_tensor(const std::string& path) {
  onnx::TensorProto p;
  std::string bytes = read_file(path);
  if (!p.ParseFromString(bytes)) throw Error(path + ": not a valid TensorProto");
  return host_tensor_from_proto(p, std::filesystem::path(path).parent_path().string());
}

}  // namespace tgc
