#include "frontend/gguf/gguf_vocab.h"

#include "ir/error.h"

namespace tgc {

bool gguf_has_spm_vocab(const GgufFile& f) {
  const GgufValue* m = f.find("tokenizer.ggml.model");
  return m && m->type == GgufValueType::String && m->s == "llama";
}

Vocab gguf_vocab(const GgufFile& f) {
  Vocab v;
  std::string model = f.get_string("tokenizer.ggml.model");
  if (model != "llama")
    throw Error(f.path() + ": tokenizer '" + model + "' is not supported (tgc tokenizes SentencePiece-style 'llama' vocabularies)");
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GgufValueType::Array || tokens->elem_type != GgufValueType::String || tokens->count == 0 ||
      tokens->count > (1u << 30))
    throw Error(f.path() + ": tokenizer.ggml.tokens is missing or not an array of strings");
  int64_t n = int64_t(tokens->count);
  v.offsets.push_back(0);
  for (int64_t i = 0; i < n; ++i) {
    v.text += tokens->item(uint64_t(i)).s;
    v.offsets.push_back(int64_t(v.text.size()));
  }
  // A table of n numbers, or `fallback` for each when the file has none.
  auto table = [&](const std::string& key, double fallback) {
    std::vector<double> out(size_t(n), fallback);
    const GgufValue* a = f.find(key);
    if (!a) return out;
    if (a->type != GgufValueType::Array || a->count != tokens->count)
      throw Error(f.path() + ": " + key + " does not have one number per token (" + std::to_string(n) + ")");
    for (int64_t i = 0; i < n; ++i) out[size_t(i)] = a->item(uint64_t(i)).as_double();
    return out;
  };
  for (double s : table("tokenizer.ggml.scores", 0)) v.scores.push_back(float(s));
  for (double t : table("tokenizer.ggml.token_type", TGC_TOKEN_NORMAL)) v.types.push_back(int32_t(t));
  auto id = [&](const std::string& key) -> int32_t {
    int64_t x = f.get_int(key, -1);
    if (x < -1 || x >= n) throw Error(f.path() + ": " + key + " = " + std::to_string(x) + " is not a token id");
    return int32_t(x);
  };
  v.bos = id("tokenizer.ggml.bos_token_id");
  v.eos = id("tokenizer.ggml.eos_token_id");
  v.unk = id("tokenizer.ggml.unknown_token_id");
  v.add_bos = f.get_int("tokenizer.ggml.add_bos_token", 1) != 0;
  v.add_space_prefix = f.get_int("tokenizer.ggml.add_space_prefix", 1) != 0;
  return v;
}

}  // namespace tgc
