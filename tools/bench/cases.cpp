#include "tools/bench/cases.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/npy.h"
#include "frontend/onnx/onnx_ops.h"
#include "ir/error.h"
#include "ir/tensor.h"

namespace fs = std::filesystem;

namespace tgc::bench {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Shape parse_dims(const std::string& s, const std::string& where) {
  Shape dims;
  std::istringstream in(s);
  for (std::string d; std::getline(in, d, ',');) {
    char* end = nullptr;
    long long v = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end || v < 0) throw Error(where + ": bad dim '" + d + "' in '" + s + "'");
    dims.push_back(v);
  }
  return dims;
}

// Seeded so that the same case gets the same inputs in every run and on every machine.
struct Rng {
  uint64_t state;
  explicit Rng(const std::string& seed) : state(1469598103934665603ull) {
    for (unsigned char c : seed) state = (state ^ c) * 1099511628211ull;
  }
  uint64_t next() {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() { return std::sqrt(-2 * std::log1p(-uniform())) * std::cos(2 * M_PI * uniform()); }
};
}  // namespace

std::string Case::shape_summary() const {
  std::string r;
  for (const auto& in : inputs) {
    if (!r.empty()) r += " ";
    r += in.name + "=";
    if (in.shape.empty()) r += "scalar";
    for (size_t i = 0; i < in.shape.size(); ++i)
      r += (i ? "x" : "") + (in.shape[i] < 0 ? "?" : std::to_string(in.shape[i]));
  }
  return r;
}

std::vector<std::string> Case::input_shape_args() const {
  std::vector<std::string> args;
  for (const auto& in : inputs) {
    if (in.compiled) {
      std::ostringstream v;
      v << *in.fill;
      args.push_back("--input-value");
      args.push_back(in.name + "=" + v.str());
      continue;
    }
    if (!in.shape_fixed) continue;
    std::string dims;
    for (size_t i = 0; i < in.shape.size(); ++i)
      dims += (i ? "," : "") + (i == 0 && in.batched ? "?" : std::to_string(in.shape[i]));
    args.push_back("--input-shape");
    args.push_back(in.name + "=" + dims);
  }
  return args;
}

InputTable read_input_table(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error(path + ": cannot open");
  InputTable table;
  int lineno = 0;
  for (std::string line; std::getline(f, line);) {
    ++lineno;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream in(line);
    std::string model;
    if (!(in >> model)) continue;
    std::vector<std::string> tokens;
    for (std::string t; in >> t;) {
      if (t.find('=') == std::string::npos)
        throw Error(path + ":" + std::to_string(lineno) +
                    ": expected NAME=dims, NAME:fill=V, NAME:compiled=V or NAME:scale=S, got '" + t + "'");
      tokens.push_back(t);
    }
    table[model] = tokens;
  }
  return table;
}

std::vector<std::string> onnx_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".onnx") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

Case load_case(const std::string& model_path, const std::vector<std::string>& tokens, bool micro) {
  Case c;
  c.model = model_path;
  c.name = fs::path(model_path).stem().string();
  c.micro = micro;
  onnx::ModelProto proto;
  {
    std::ifstream f(model_path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), {});
    if (bytes.empty() || !proto.ParseFromString(bytes) || !proto.has_graph()) {
      c.error = "not a valid ONNX model";
      return c;
    }
  }
  for (const auto& kv : proto.metadata_props()) {
    if (kv.key() == "bench.metric") c.metric = kv.value();
    if (kv.key() == "bench.sgemm_n") c.sgemm_n = std::stoll(kv.value());
  }
  const auto& g = proto.graph();
  std::vector<std::string> initializers;
  for (const auto& init : g.initializer()) initializers.push_back(init.name());
  for (const auto& vi : g.input()) {
    if (std::find(initializers.begin(), initializers.end(), vi.name()) != initializers.end()) continue;
    InputSpec in;
    in.name = vi.name();
    try {
      in.dtype = dtype_from_onnx(vi.type().tensor_type().elem_type());
    } catch (const Error& e) {
      c.error = "input '" + in.name + "': " + e.what();
      return c;
    }
    for (const auto& d : vi.type().tensor_type().shape().dim())
      in.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    in.symbolic_dim0 = !in.shape.empty() && in.shape[0] < 0;
    c.inputs.push_back(in);
  }
  std::string where = fs::path(model_path).filename().string() + " in inputs.txt";
  for (const std::string& t : tokens) {
    size_t eq = t.find('=');
    std::string key = t.substr(0, eq), value = t.substr(eq + 1);
    std::string attr;
    for (const char* a : {":fill", ":compiled", ":scale"})
      if (ends_with(key, a)) attr = a + 1, key.resize(key.size() - attr.size() - 1);
    auto it = std::find_if(c.inputs.begin(), c.inputs.end(), [&](const InputSpec& s) { return s.name == key; });
    if (it == c.inputs.end()) throw Error(where + ": the model has no input '" + key + "'");
    if (attr == "fill" || attr == "compiled") {
      it->fill = std::stod(value);
      it->compiled = attr == "compiled";
    } else if (attr == "scale") {
      it->scale = std::stod(value);
    } else {
      Shape dims = parse_dims(value, where);
      if (dims.size() != it->shape.size())
        throw Error(where + ": input '" + key + "' has rank " + std::to_string(it->shape.size()) + ", got " + value);
      for (size_t i = 0; i < dims.size(); ++i)
        if (it->shape[i] >= 0 && it->shape[i] != dims[i])
          throw Error(where + ": input '" + key + "' dim " + std::to_string(i) + " is fixed at " +
                      std::to_string(it->shape[i]));
      it->shape_fixed = true;
      it->shape = dims;
    }
  }
  for (const auto& in : c.inputs) {
    if (std::count(in.shape.begin(), in.shape.end(), -1) > 0 && c.error.empty())
      c.error = "input '" + in.name + "' has dynamic dims: give its shape in tools/bench/inputs.txt";
    if (!is_float(in.dtype) && in.dtype != DType::Bool && !in.fill && c.error.empty())
      c.error = "input '" + in.name + "' is " + std::string(dtype_name(in.dtype)) +
                ": give its value (NAME:fill=V) in tools/bench/inputs.txt";
  }
  return c;
}

Case with_batch(Case c, int64_t n) {
  c.name += "_batch" + std::to_string(n);
  bool any = false;
  for (auto& in : c.inputs)
    if (in.symbolic_dim0 && !in.compiled) {
      in.shape[0] = n;
      in.batched = in.shape_fixed = any = true;
    }
  if (!any && c.error.empty()) c.error = "no input has a symbolic batch dim";
  return c;
}

InputArgs write_inputs(const Case& c, const std::string& dir) {
  fs::create_directories(dir);
  InputArgs args;
  for (const auto& in : c.inputs) {
    HostTensor t(in.dtype, in.shape);
    Rng rng(c.name + "/" + in.name);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, in.fill ? *in.fill : in.dtype == DType::Bool ? double(rng.next() & 1) : in.scale * rng.normal());
    std::string file = dir + "/" + file_safe(in.name) + ".npy";
    write_npy(file, t);
    for (auto* side : {&args.ort, &args.tgc}) {
      if (side == &args.tgc && in.compiled) continue;
      side->push_back("-i");
      side->push_back(in.name + "=" + file);
    }
  }
  return args;
}

}  // namespace tgc::bench
