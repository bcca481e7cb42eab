#include "frontend/gguf/llama_params.h"

#include <cmath>
#include <cstring>

#include "ir/error.h"

namespace tgc {
namespace {
bool is_gemma(const std::string& arch) { return arch == "gemma2" || arch == "gemma3"; }

// gemma2 and gemma3 as llama.cpp's llama_model_gemma2/3::load_arch_hparams set them: embeddings
// scaled by sqrt(n_embd), GELU-gated FFN, queries scaled before the scores (by 1/sqrt(n_embd /
// n_head) for the 27B shapes, which llama.cpp tells by their layer counts), soft-capping (gemma2
// always, with defaults; gemma3's final cap only where the file has one) and sliding-window
// layers: every `pattern`-th layer global, the others local with a RoPE base of their own.
void gemma_params(const GgufFile& f, LlamaParams& p) {
  const std::string a = p.arch + ".";
  bool gemma2 = p.arch == "gemma2";
  p.embd_scale = std::sqrt(float(p.n_embd));
  p.ffn_gelu = true;
  bool big = p.n_layer == (gemma2 ? 46 : 62);
  p.attn_scale = big ? 1.0f / std::sqrt(float(p.n_embd / p.n_head)) : 1.0f / std::sqrt(float(p.head_dim));
  if (gemma2) p.attn_softcap = float(f.get_float(a + "attn_logit_softcapping", 50.0));
  p.final_softcap = float(f.get_float(a + "final_logit_softcapping", gemma2 ? 30.0 : 0.0));
  p.n_swa = f.get_int(a + "attention.sliding_window", gemma2 ? 4096 : 0);
  if (p.n_swa < 0 || p.n_swa > (int64_t(1) << 32))
    throw Error(f.path() + ": metadata '" + a + "attention.sliding_window' = " + std::to_string(p.n_swa) +
                " is out of range");
  if (p.n_swa == 0) return;
  // A local layer's RoPE: gemma2 keeps the global base and scaling unless the file names a base;
  // gemma3 uses its own base (llama.cpp's default 10000) and no scaling.
  p.rope_base_swa = f.get_float(a + "rope.freq_base_swa", gemma2 ? p.rope_base : 10000.0);
  p.rope_freq_scale_swa = gemma2 ? p.rope_freq_scale : 1.0;
  p.swa.assign(size_t(p.n_layer), false);
  const std::string key = a + "attention.sliding_window_pattern";
  const GgufValue* pattern = f.find(key);
  if (pattern && pattern->type == GgufValueType::Array) {  // one flag per layer
    if (int64_t(pattern->count) < p.n_layer)
      throw Error(f.path() + ": metadata '" + key + "' has fewer values than layers");
    for (int64_t l = 0; l < p.n_layer; ++l) p.swa[size_t(l)] = pattern->item(uint64_t(l)).as_int() != 0;
    return;
  }
  int64_t every = pattern ? pattern->as_int() : gemma2 ? 2 : 6;  // every `every`-th layer global
  if (every < 0) throw Error(f.path() + ": metadata '" + key + "' is negative");
  for (int64_t l = 0; l < p.n_layer; ++l) p.swa[size_t(l)] = every == 0 || l % every < every - 1;
}
}  // namespace

LlamaParams llama_params(const GgufFile& f) {
  LlamaParams p;
  p.arch = f.get_string("general.architecture");
  if (p.arch != "llama" && p.arch != "qwen2" && p.arch != "qwen3" && p.arch != "phi3" && !is_gemma(p.arch))
    throw Error(f.path() + ": architecture '" + p.arch +
                "' is not supported (tgc builds llama, qwen2, qwen3, phi3, gemma2 and gemma3)");
  const std::string a = p.arch + ".";
  auto positive = [&](const std::string& key, int64_t v) {
    if (v <= 0 || v > (int64_t(1) << 32))
      throw Error(f.path() + ": metadata '" + key + "' = " + std::to_string(v) + " is out of range");
    return v;
  };
  p.n_embd = positive(a + "embedding_length", f.get_int(a + "embedding_length"));
  p.n_ff = positive(a + "feed_forward_length", f.get_int(a + "feed_forward_length"));
  p.n_layer = positive(a + "block_count", f.get_int(a + "block_count"));
  p.n_head = positive(a + "attention.head_count", f.get_int(a + "attention.head_count"));
  p.n_head_kv = positive(a + "attention.head_count_kv", f.get_int(a + "attention.head_count_kv", p.n_head));
  p.n_ctx_train = positive(a + "context_length", f.get_int(a + "context_length", 4096));
  if (p.n_embd % p.n_head != 0 || p.n_head % p.n_head_kv != 0)
    throw Error(f.path() + ": " + std::to_string(p.n_head) + " heads of " + std::to_string(p.n_head_kv) +
                " kv heads do not divide embedding length " + std::to_string(p.n_embd));
  p.head_dim = positive(a + "attention.key_length", f.get_int(a + "attention.key_length", p.n_embd / p.n_head));
  if (f.get_int(a + "attention.value_length", p.head_dim) != p.head_dim)
    throw Error(f.path() + ": attention.value_length differs from key_length; tgc builds equal head sizes only");
  for (const char* k : {"attention.key_length_swa", "attention.value_length_swa", "rope.dimension_count_swa"})
    if (f.find(a + k)) throw Error(f.path() + ": metadata '" + a + k + "': tgc builds one head size for all layers");
  p.rms_eps = f.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5);
  p.n_rot = positive(a + "rope.dimension_count", f.get_int(a + "rope.dimension_count", p.head_dim));
  if (p.n_rot > p.head_dim || p.n_rot % 2)
    throw Error(f.path() + ": rope.dimension_count " + std::to_string(p.n_rot) + " does not fit the head size");
  p.rope_base = f.get_float(a + "rope.freq_base", 10000.0);
  p.rope_neox = p.arch != "llama";
  if (f.find_tensor("blk.0.rope_factors_long.weight") || f.find_tensor("blk.0.rope_factors_short.weight"))
    throw Error(f.path() + ": rope scaling 'longrope' (rope_factors_long/short tensors) is not supported");
  if (const GgufValue* st = f.find(a + "rope.scaling.type")) {
    std::string type = st->type == GgufValueType::String ? st->s : "?";
    if (type == "linear")
      p.rope_freq_scale = 1.0 / f.get_float(a + "rope.scaling.factor", 1.0);
    else if (type != "none")
      throw Error(f.path() + ": rope scaling '" + type +
                  "' is not supported (none, linear and llama3's rope_freqs are)");
  }
  if (const GgufValue* sc = f.find(a + "rope.scale_linear")) p.rope_freq_scale = 1.0 / sc->as_double();
  if (const GgufTensorInfo* t = f.find_tensor("rope_freqs.weight")) {  // llama3-style per-frequency factors
    if (t->type != GgmlType::F32 || t->numel() != p.n_rot / 2)
      throw Error(f.path() + ": rope_freqs.weight must be f32 with " + std::to_string(p.n_rot / 2) + " values");
    auto b = f.tensor_bytes(*t);
    p.rope_freq_factors.resize(size_t(p.n_rot / 2));
    std::memcpy(p.rope_freq_factors.data(), b->data(), b->size());
  }
  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  if (!emb || emb->dims.size() != 2 || emb->dims[0] != p.n_embd)
    throw Error(f.path() + ": token_embd.weight is missing or not [" + std::to_string(p.n_embd) + ", n_vocab]");
  p.n_vocab = emb->dims[1];
  if (is_gemma(p.arch)) gemma_params(f, p);
  return p;
}

}  // namespace tgc
