// GGUF import: a llama-family GGUF file as a Model with input `tokens` (i32 [n_tokens]) and
// output `logits` (f32 [n_tokens, n_vocab]).
// - import_gguf (tgc eval, the reference interpreter): the prefill of n_tokens tokens at
//   positions 0..n_tokens-1, no state.
// - gguf_model_source (compile, inspect): the same with K and V caches as state buffers that
//   persist across runs. A run appends its tokens at the position where the previous run
//   stopped: the cache length after the run, n_kv = position + n_tokens, is a run-time dim
//   that the runtime tracks (and resets with the state). n_tokens is fixed (--input-shape
//   tokens=N) or a run-time dim (--dynamic n_tokens=MAX; the default, up to kDefaultTokens).
#pragma once
#include <string>

#include "frontend/frontend.h"
#include "model/dynamic_dims.h"
#include "model/model.h"

namespace tgc {

// The cache's default size when the file's context length is larger: 4096 rows of f32 K and V
// are 32 KiB per layer and kv head dim (a Llama-3.2-1B shape: 256 MiB), and the attention of a
// decode step reads only the rows filled so far. --ctx sets any other size.
inline constexpr int64_t kDefaultContext = 4096;
// The default bound of a run's token count (a prompt's prefill) when none is given.
inline constexpr int64_t kDefaultTokens = 512;

Model import_gguf(const std::string& path, const ImportOptions& options = {});
ModelSource gguf_model_source(const std::string& path, const ImportOptions& options);

}  // namespace tgc
