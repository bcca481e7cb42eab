// The tokenizer of a GGUF file (tokenizer.ggml.*) as the runtime's tokenizer takes it
// (runtime-stub/tokenizer.h): token texts, scores and types, the special ids and flags.
#pragma once
#include <string>
#include <vector>

#include "frontend/gguf/gguf_file.h"
#include "runtime-stub/tokenizer.h"

namespace tgc {

struct GgufVocab {
  std::string model;              // tokenizer.ggml.model ("llama": SentencePiece-style)
  std::string text;               // every token's text, concatenated
  std::vector<int64_t> offsets;   // n_tokens + 1
  std::vector<float> scores;
  std::vector<int32_t> types;
  int32_t bos = -1, eos = -1, unk = -1;
  bool add_bos = false, add_space_prefix = true;

  int32_t n_tokens() const { return int32_t(scores.size()); }
  tgc_vocab view() const;  // points into this
};

// Throws tgc::Error naming the file: no tokens, tables of different lengths, ids out of range,
// or a tokenizer model tgc does not implement (it implements "llama").
GgufVocab gguf_vocab(const GgufFile& f);

}  // namespace tgc
