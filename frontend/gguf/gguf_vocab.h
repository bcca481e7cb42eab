// The tokenizer of a GGUF file (tokenizer.ggml.*) as the runtime's tokenizer takes it
// (runtime-stub/tokenizer.h): token texts, scores and types, the special ids and flags.
#pragma once
#include <string>

#include "frontend/gguf/gguf_file.h"
#include "model/vocab.h"

namespace tgc {

// Whether tgc tokenizes this file's vocabulary: tokenizer.ggml.model "llama" (SentencePiece-style).
bool gguf_has_spm_vocab(const GgufFile& f);

// Throws tgc::Error naming the file: no tokens, tables of different lengths, ids out of range,
// or a tokenizer model tgc does not implement.
Vocab gguf_vocab(const GgufFile& f);

}  // namespace tgc
