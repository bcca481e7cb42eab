#include "frontend/gguf/gguf_import.h"

#include <algorithm>

#include "frontend/gguf/gguf_file.h"
#include "frontend/gguf/gguf_vocab.h"
#include "frontend/gguf/llama_graph.h"
#include "ir/error.h"
#include "ir/symbolic.h"

namespace tgc {

namespace {
constexpr const char* kTokens = "tokens";
constexpr const char* kTokenDim = "n_tokens";
constexpr const char* kKvDim = "n_kv";         // the cache's length after a run (see the header)
constexpr const char* kLogitDim = "n_logits";  // rows of logits: n_tokens or 1 (Model::logit_rows_var)
constexpr const char* kNeedsCount =
    ": the token count needs a size (--input-shape tokens=N, or --dynamic n_tokens=MAX for a run-time count; tgc eval "
    "takes it from -i tokens=FILE)";

// The token count the options give (-1 when none does).
int64_t token_count(const ImportOptions& o) {
  if (auto it = o.input_shapes.find(kTokens); it != o.input_shapes.end()) {
    if (it->second.size() != 1)
      throw Error(std::string("--input-shape tokens takes one dim (the token count), got ") + shape_str(it->second));
    if (it->second[0] >= 0) return it->second[0];
  }
  if (auto it = o.dim_sizes.find(kTokenDim); it != o.dim_sizes.end()) return it->second;
  if (auto it = o.shape_hints.find(kTokens); it != o.shape_hints.end() && it->second.size() == 1) return it->second[0];
  return -1;
}

void check_options(const std::string& path, const ImportOptions& o) {
  for (const auto& [name, _] : o.input_shapes)
    if (name != kTokens)
      throw Error(path + ": --input-shape names '" + name + "'; a GGUF model's one input is 'tokens'");
  if (!o.input_values.empty()) throw Error(path + ": --input-value does not apply to GGUF models");
  for (const auto& [name, _] : o.dynamic)
    if (name != kTokenDim)
      throw Error(path + ": --dynamic names '" + name + "'; a GGUF model's run-time dim is 'n_tokens'");
}

// The model at the sizes `options` gives. context > 0: with the K/V caches of that many rows
// (see the header), else the stateless prefill.
Model build_gguf(const std::string& path, const ImportOptions& options, int64_t context) {
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
    if (name == kTokenDim)
      positions = std::max(positions, max);  // tables keep the bound's length, cut to the traced count
  }
  Tensor tokens = Tensor::input(g, kTokens, DType::I32, {n});
  m.inputs.push_back({kTokens, tokens});
  if (context <= 0) {
    m.outputs.push_back({"logits", llama_forward(g, f, p, tokens, positions, nullptr, options.int8_rows)});
    return m;
  }
  // This run's tokens go at position n_kv - n_tokens (the runtime binds n_kv to the cache's
  // length after the run); the traced graph reads the cache up to the size traced for n_kv.
  Sym sym{g};
  const UOp* count =
      options.dynamic.count(kTokenDim) ? g.declare_var(kTokenDim, 1, options.dynamic.at(kTokenDim)) : sym.c(n);
  const UOp* kv = g.declare_var(kKvDim, 1, context);
  KvCache cache;
  cache.context = context;
  cache.dtype = options.kv_type;
  auto traced = options.dim_sizes.find(kKvDim);
  cache.kv_len = traced != options.dim_sizes.end() ? traced->second : context;
  cache.pos = sym.add(kv, sym.mul(count, -1));
  m.kv_length_var = kKvDim;
  m.kv_count_input = 0;
  if (gguf_has_vocab(f)) m.vocab = gguf_vocab(f);
  // The last n_logits tokens: positions n_kv - n_logits + [0, n_logits).
  Tensor rows;
  if (auto it = options.dynamic.find(kLogitDim); it != options.dynamic.end()) {
    const UOp* logits = g.declare_var(kLogitDim, 1, it->second);
    auto traced_rows = options.dim_sizes.find(kLogitDim);
    int64_t r = traced_rows != options.dim_sizes.end() ? traced_rows->second : it->second;
    rows = Tensor::arange(g, it->second, DType::I32).shrink({{0, r}}) +
           Tensor::index_value(g, sym.add(kv, sym.mul(logits, -1)), DType::I32);
    m.logit_rows_var = kLogitDim;
  }
  m.outputs.push_back(
      {"logits", llama_forward(g, f, p, tokens, positions, &cache, options.int8_rows, rows.uop() ? &rows : nullptr)});
  return m;
}
}  // namespace

Model import_gguf(const std::string& path, const ImportOptions& options) {
  check_options(path, options);
  return build_gguf(path, options, 0);
}

ModelSource gguf_model_source(const std::string& path, const ImportOptions& options) {
  check_options(path, options);
  int64_t context = options.context;
  if (context <= 0) {
    GgufFile f = GgufFile::open(path);
    context = std::min(llama_params(f).n_ctx_train, kDefaultContext);
  }
  if (context < 2) throw Error(path + ": --ctx " + std::to_string(context) + ": the KV cache needs at least 2 rows");
  ImportOptions o = options;
  std::vector<UnknownDim> unknown;
  int64_t count = token_count(options);
  if (count < 0) {
    // Not a batch: the count is either fixed or a run-time dim (--dynamic; by default up to
    // kDefaultTokens or the context).
    if (!o.dynamic.count(kTokenDim)) o.dynamic[kTokenDim] = std::min(kDefaultTokens, context);
    unknown.push_back({kTokens, 0, kTokenDim, kTokenDim});
    count = o.dynamic.at(kTokenDim);
  }
  if (count > context)
    throw Error(path + ": " + std::to_string(count) + " tokens per run do not fit a KV cache of " +
                std::to_string(context) + " rows (--ctx)");
  o.dynamic[kKvDim] = context;
  std::vector<std::string> internal{kKvDim};
  if (count >= 2) {  // a bound of 1 is no run-time dim
    o.dynamic[kLogitDim] = count;
    internal.push_back(kLogitDim);
  }
  ModelSource src{path, unknown, o.dynamic,
                  [path, o, context](const std::map<std::string, int64_t>& sizes) {
                    ImportOptions t = o;
                    for (const auto& [key, n] : sizes) t.dim_sizes[key] = n;
                    return build_gguf(path, t, context);
                  },
                  internal};
  return src;
}

}  // namespace tgc
