// The decoder of the llama family (llama, Mistral-style llama files, qwen2, qwen3, phi3, gemma2,
// gemma3) built from a GGUF file with the Tensor API: token embedding, RMSNorm, RoPE, grouped-query
// attention with a causal mask, a gated FFN, output norm and projection. The architectures differ
// as data: the tensors a file has (biases; per-head q/k norms; phi3's fused attn_qkv and gate/up in
// ffn_up; gemma's norms after attention and FFN) and the parameters llama_params.h reads (the
// pairing RoPE rotates, gemma's scales, GELU, soft-caps and sliding-window layers). No attention
// or matmul primitive: matmuls are broadcast multiplies with a sum, softmax a composition, as for
// every ONNX model.
#pragma once
#include <string>

#include "frontend/gguf/gguf_file.h"
#include "frontend/gguf/llama_params.h"
#include "ir/tensor.h"

namespace tgc {

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
