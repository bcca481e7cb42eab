// The tokenizer of a GGUF file (tokenizer.ggml.*) as the runtime's tokenizer takes it
// (runtime-stub/llm/tokenizer.h): token texts, scores and types, the special ids and flags, and for
// byte-level BPE the merges and the pre-tokenizer.
#pragma once
#include <string>

#include "frontend/gguf/gguf_file.h"
#include "model/vocab.h"

namespace tgc {

// Whether the file's tokenizer is one tgc implements: tokenizer.ggml.model "llama"
// (SentencePiece-style) or "gpt2" (byte-level BPE; gguf_vocab refuses pre-tokenizers it lacks).
bool gguf_has_vocab(const GgufFile& f);

// Throws tgc::Error naming the file: no tokens, tables of different lengths, ids out of range,
// merges that are not token pairs, or a tokenizer model or BPE pre-tokenizer tgc does not implement.
Vocab gguf_vocab(const GgufFile& f);

}  // namespace tgc
