// A tokenizer's tables as a model carries them into its artifact (runtime-stub/tokenizer.h reads
// them there): token texts, scores and types, the special ids and flags; for byte-level BPE the
// merges (token id pairs, by rank) and the pre-tokenizer. Frontend-neutral; the
// GGUF frontend fills it from tokenizer.ggml.* (frontend/gguf/gguf_vocab.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime-stub/llm/tokenizer.h"

namespace tgc {

struct Vocab {
  std::string text;               // every token's text, concatenated
  std::vector<int64_t> offsets;   // n_tokens + 1
  std::vector<float> scores;
  std::vector<int32_t> types;     // enum tgc_token_type
  int32_t bos = -1, eos = -1, unk = -1;
  bool add_bos = false, add_space_prefix = true;
  int32_t model = TGC_VOCAB_SPM;  // enum tgc_vocab_model
  int32_t pre = TGC_PRE_DEFAULT;  // BPE: enum tgc_bpe_pre
  bool ignore_merges = false;     // BPE: a word that is a token is that token
  std::vector<int32_t> merges;    // BPE: 2 token ids per merge, lowest rank first

  int32_t n_tokens() const { return int32_t(scores.size()); }
  int32_t n_merges() const { return int32_t(merges.size() / 2); }
  tgc_vocab view() const {  // points into this
    return {n_tokens(), text.data(), offsets.data(), scores.data(), types.data(), bos, eos, unk, add_bos, add_space_prefix,
            model, pre, ignore_merges, n_merges(), merges.data()};
  }
};

}  // namespace tgc
