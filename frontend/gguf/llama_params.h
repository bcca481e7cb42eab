// The hyperparameters of a llama-family GGUF file (llama, Mistral-style llama files, qwen2, qwen3,
// phi3, gemma2, gemma3), read from its `{arch}.*` metadata the way llama.cpp's loader reads them.
// The architectures differ as data here: the graph (llama_graph.h) reads these fields and the
// tensors the file has, never the architecture's name.
#pragma once
#include <string>
#include <vector>

#include "frontend/gguf/gguf_file.h"

namespace tgc {

struct LlamaParams {
  std::string arch;  // "llama", "qwen2", "qwen3", "phi3", "gemma2" or "gemma3"
  int64_t n_vocab = 0, n_embd = 0, n_ff = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
  int64_t n_ctx_train = 0;
  double rms_eps = 1e-5;
  int64_t n_rot = 0;  // rotated dims per head (rope.dimension_count)
  double rope_base = 10000;
  double rope_freq_scale = 1;            // linear rope scaling: positions times this
  bool rope_neox = false;                // NeoX pairs (i, i + n_rot/2) instead of (2i, 2i+1)
  std::vector<float> rope_freq_factors;  // llama3 scaling (rope_freqs.weight): theta_i / factor_i
  // gemma2 and gemma3:
  float embd_scale = 1;      // token embeddings times this (gemma: sqrt(n_embd))
  bool ffn_gelu = false;     // the FFN gate's activation: GELU (tanh form) instead of SiLU
  float attn_scale = 0;      // queries times this before the scores; 0: scores times 1/sqrt(head_dim)
  float attn_softcap = 0;    // > 0: scores capped as tanh(s / c) * c before the mask (gemma2)
  float final_softcap = 0;   // > 0: logits capped likewise
  int64_t n_swa = 0;         // > 0: the sliding window of the layers `swa` marks
  std::vector<bool> swa;     // per layer: query i sees key j when 0 <= i - j < n_swa
  double rope_base_swa = 0;  // the sliding-window layers' RoPE base and linear scaling
  double rope_freq_scale_swa = 1;

  bool is_swa(int64_t layer) const { return n_swa > 0 && swa[size_t(layer)]; }
};

// Reads the hyperparameters; an error names an architecture tgc does not build or a missing key.
LlamaParams llama_params(const GgufFile& f);

}  // namespace tgc
