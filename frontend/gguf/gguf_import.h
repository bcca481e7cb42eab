// GGUF import: a llama-family GGUF file as a Model with input `tokens` (i32 [n_tokens]) and
// output `logits` (f32 [n_tokens, n_vocab]), the prefill of n_tokens tokens at positions
// 0..n_tokens-1. n_tokens comes from --input-shape tokens=N, the -i file (tgc eval), or stays a
// run-time dim with --dynamic n_tokens=MAX.
#pragma once
#include <string>

#include "frontend/frontend.h"
#include "model/dynamic_dims.h"
#include "model/model.h"

namespace tgc {

Model import_gguf(const std::string& path, const ImportOptions& options = {});
ModelSource gguf_model_source(const std::string& path, const ImportOptions& options);

}  // namespace tgc
