// The decoder of the llama family (llama, Mistral-style llama files, qwen2, qwen3, phi3) built
// from a GGUF file with the Tensor API: token embedding, RMSNorm, RoPE, grouped-query attention
// with a causal mask, SwiGLU, output norm and projection. The architectures differ as data: the
// tensors a file has (biases; qwen3's per-head q/k norms; phi3's fused attn_qkv and gate/up in
// ffn_up) and the pairing RoPE rotates (NeoX for all but llama). No attention or matmul primitive: matmuls
// are broadcast multiplies with a sum, softmax a composition, as for every ONNX model.
#pragma once
#include <string>

#include "frontend/gguf/gguf_file.h"
#include "ir/tensor.h"

namespace tgc {

// Hyperparameters from the `{arch}.*` metadata.
struct LlamaParams {
  std::string arch;  // "llama", "qwen2", "qwen3" or "phi3"
  int64_t n_vocab = 0, n_embd = 0, n_ff = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
  int64_t n_ctx_train = 0;
  double rms_eps = 1e-5;
  int64_t n_rot = 0;  // rotated dims per head (rope.dimension_count)
  double rope_base = 10000;
  double rope_freq_scale = 1;            // linear rope scaling: positions times this
  bool rope_neox = false;                // NeoX pairs (i, i + n_rot/2) instead of (2i, 2i+1)
  std::vector<float> rope_freq_factors;  // llama3 scaling (rope_freqs.weight): theta_i / factor_i
};

// Reads the hyperparameters; an error names an architecture tgc does not build or a missing key.
LlamaParams llama_params(const GgufFile& f);

// The K and V caches of a compiled model: per layer a state buffer [n_head_kv, rows, head_dim]
// for each, persisting across runs. A run writes its tokens' rows at `pos` and its attention
// reads rows 0..kv_len-1, kv_len = pos + n being a run-time dim (n_kv) up to `context`.
struct KvCache {
  int64_t context = 0;       // rows of the state buffers: the positions a sequence can reach
  int64_t kv_len = 0;        // rows the traced graph reads: the context, or a smaller trace size
  const UOp* pos = nullptr;  // this run's first position: an index expression over the VARs
  DType dtype = DType::F32;  // the caches' element type (F16: rounded when written)
};

// logits [n, n_vocab] of the tokens [n] (i32). Without a cache: a prefill at positions 0..n-1,
// `positions` being the length of the rope and mask tables (>= n; a run-time token count keeps
// them at its maximum). With one: positions pos..pos+n-1, attending to the cache's earlier rows
// too (`positions`: the maximum token count). int8_rows > 0: quantized matmuls as int8 dot
// products over q8_0 activations, in register tiles of that many rows (int8_matmul.h).
// logit_positions (optional, i32 [r]): the positions of the tokens whose logits are computed;
// every token's without.
Tensor llama_forward(Graph& g, const GgufFile& f, const LlamaParams& p, const Tensor& tokens, int64_t positions,
                     const KvCache* cache = nullptr, int64_t int8_rows = 0, const Tensor* logit_positions = nullptr);

}  // namespace tgc
