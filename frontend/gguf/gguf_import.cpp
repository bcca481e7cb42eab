#include "frontend/gguf/gguf_import.h"

#include <algorithm>

#include "frontend/gguf/gguf_file.h"
#include "frontend/gguf/llama_graph.h"
#include "ir/error.h"

namespace tgc {

namespace {
constexpr const char* kTokens = "tokens";
constexpr const char* kTokenDim = "n_tokens";
constexpr const char* kNeedsCount =
    ": the token count needs a size (--input-shape tokens=N, or --dynamic n_tokens=MAX for a run-time count; tgc eval takes it from -i tokens=FILE)";

// The token count the options give (-1 when none does).
int64_t token_count(const ImportOptions& o) {
  if (auto it = o.input_shapes.find(kTokens); it != o.input_shapes.end()) {
    if (it->second.size() != 1) throw Error(std::string("--input-shape tokens takes one dim (the token count), got ") + shape_str(it->second));
    if (it->second[0] >= 0) return it->second[0];
  }
  if (auto it = o.dim_sizes.find(kTokenDim); it != o.dim_sizes.end()) return it->second;
  if (auto it = o.shape_hints.find(kTokens); it != o.shape_hints.end() && it->second.size() == 1) return it->second[0];
  return -1;
}

void check_options(const std::string& path, const ImportOptions& o) {
  for (const auto& [name, _] : o.input_shapes)
    if (name != kTokens) throw Error(path + ": --input-shape names '" + name + "'; a GGUF model's one input is 'tokens'");
  if (!o.input_values.empty()) throw Error(path + ": --input-value does not apply to GGUF models");
  for (const auto& [name, _] : o.dynamic)
    if (name != kTokenDim) throw Error(path + ": --dynamic names '" + name + "'; a GGUF model's run-time dim is 'n_tokens'");
}
}  // namespace

Model import_gguf(const std::string& path, const ImportOptions& options) {
  check_options(path, options);
  GgufFile f = GgufFile::open(path);
  LlamaParams p = llama_params(f);
  int64_t n = token_count(options);
  if (n < 0) throw Error(path + kNeedsCount);
  if (n < 1) throw Error(path + ": the token count must be at least 1");
  Model m;
  m.path = path;
  m.graph = std::make_unique<Graph>();
  Graph& g = *m.graph;
  int64_t positions = n;
  for (const auto& [name, max] : options.dynamic) {
    g.declare_var(name, 1, max);
    positions = std::max(positions, max);  // tables keep the bound's length, cut to the traced count
  }
  Tensor tokens = Tensor::input(g, kTokens, DType::I32, {n});
  m.inputs.push_back({kTokens, tokens});
  m.outputs.push_back({"logits", llama_forward(g, f, p, tokens, positions)});
  return m;
}

ModelSource gguf_model_source(const std::string& path, const ImportOptions& options) {
  check_options(path, options);
  std::vector<UnknownDim> unknown;
  if (token_count(options) < 0) {
    // Not a batch: the count is either fixed or a run-time dim (--dynamic).
    if (!options.dynamic.count(kTokenDim)) throw Error(path + kNeedsCount);
    unknown.push_back({kTokens, 0, kTokenDim, kTokenDim});
  }
  return {path, unknown, options.dynamic, [path, options](const std::map<std::string, int64_t>& sizes) {
            ImportOptions o = options;
            for (const auto& [key, n] : sizes) o.dim_sizes[key] = n;
            return import_gguf(path, o);
          }};
}

}  // namespace tgc
