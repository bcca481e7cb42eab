// A tokenizer's tables as a model carries them into its artifact (runtime-stub/llm/tokenizer.h
// reads them there; codegen/vocab_view.h hands them over): token texts, scores and types, the special ids and flags;
// for byte-level BPE the merges (token id pairs, by rank) and the pre-tokenizer. Frontend-neutral; the GGUF frontend
// fills it from tokenizer.ggml.* (frontend/gguf/gguf_vocab.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

// GGUF's token types (tokenizer.ggml.token_type), the vocabulary's model and the BPE pre-tokenizers,
// numbered as the runtime's tokenizer numbers them (codegen/vocab_view.h checks that they agree).
enum TokenType : int32_t {
  kTokenNormal = 1,
  kTokenUnknown,
  kTokenControl,
  kTokenUserDefined,
  kTokenUnused,
  kTokenByte
};
enum VocabModel : int32_t { kVocabSpm = 0, kVocabBpe = 1 };
enum BpePre : int32_t {
  kPreDefault = 0,   // no tokenizer.ggml.pre, or "default"
  kPreGpt2,          // gpt-2, mpt, olmo, ...
  kPreLlama3,        // llama-bpe, dbrx, ...
  kPreQwen2,         // qwen2, stablelm2, ...
  kPreQwen35,        // qwen35
  kPreStarcoder,     // starcoder, refact, command-r, ...
  kPreFalcon,        // falcon
  kPreDeepseekLlm,   // deepseek-llm
  kPreDeepseekCoder  // deepseek-coder
};

struct Vocab {
  std::string text;              // every token's text, concatenated
  std::vector<int64_t> offsets;  // n_tokens + 1
  std::vector<float> scores;
  std::vector<int32_t> types;  // TokenType
  int32_t bos = -1, eos = -1, unk = -1;
  bool add_bos = false, add_space_prefix = true;
  int32_t model = kVocabSpm;     // VocabModel
  int32_t pre = kPreDefault;     // BPE: BpePre
  bool ignore_merges = false;    // BPE: a word that is a token is that token
  std::vector<int32_t> merges;   // BPE: 2 token ids per merge, lowest rank first
  bool rstrip_specials = false;  // special tokens eat the white space after them (llama.cpp, Phi-3 files)
  std::string chat_template;     // tokenizer.chat_template; empty where the file has none

  int32_t n_tokens() const { return int32_t(scores.size()); }
  int32_t n_merges() const { return int32_t(merges.size() / 2); }
};

}  // namespace tgc
