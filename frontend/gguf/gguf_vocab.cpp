#include "frontend/gguf/gguf_vocab.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "ir/error.h"

namespace tgc {

namespace {

// tokenizer.ggml.pre names and what llama.cpp (src/llama-vocab.cpp) makes of them: the regexes,
// whether a word that is a token skips the merges, and add_bos when the file does not say.
// Names whose tokenizers llama.cpp treats specially elsewhere (special-token attributes by name,
// a SEP token added) are left out, so they are refused rather than tokenized differently.
struct PreTokenizer {
  const char* name;
  int32_t pre;
  bool ignore_merges = false, add_bos = false;
};
const PreTokenizer kPreTokenizers[] = {
    {"default", kPreDefault},
    {"gpt-2", kPreGpt2},
    {"phi-2", kPreGpt2},
    {"gigachat", kPreGpt2},
    {"a.x-4.0", kPreGpt2},
    {"mellum", kPreGpt2},
    {"exaone4", kPreGpt2},
    {"mpt", kPreGpt2},
    {"olmo", kPreGpt2},
    {"jais", kPreGpt2},
    {"trillion", kPreGpt2},
    {"granite-docling", kPreGpt2},
    {"llama3", kPreLlama3, true, true},
    {"llama-v3", kPreLlama3, true, true},
    {"llama-bpe", kPreLlama3, true, true},
    {"falcon3", kPreLlama3, true, true},
    {"falcon-h1", kPreLlama3, true, true},
    {"pixtral", kPreLlama3, true, true},
    {"midm-2.0", kPreLlama3, true, true},
    {"lfm2", kPreLlama3, true, true},
    {"jina-v5-nano", kPreLlama3, true, true},
    {"dbrx", kPreLlama3},
    {"smaug-bpe", kPreLlama3},
    {"qwen2", kPreQwen2},
    {"deepseek-r1-qwen", kPreQwen2},
    {"kormo", kPreQwen2},
    {"f2llmv2", kPreQwen2},
    {"megrez", kPreQwen2},
    {"stablelm2", kPreQwen2},
    {"hunyuan", kPreQwen2},
    {"qwen35", kPreQwen35},
    {"starcoder", kPreStarcoder},
    {"refact", kPreStarcoder},
    {"command-r", kPreStarcoder},
    {"smollm", kPreStarcoder},
    {"codeshell", kPreStarcoder},
    {"exaone", kPreStarcoder},
    {"minerva-7b", kPreStarcoder},
    {"mellum2", kPreStarcoder},
    {"falcon", kPreFalcon},
    {"deepseek-llm", kPreDeepseekLlm},
    {"deepseek-coder", kPreDeepseekCoder},
};

// Texts llama.cpp takes for end-of-generation tokens and makes control tokens, whatever the file
// says: a user-defined one then no longer splits a prompt (special tokens are not parsed there), a
// normal one splits a chat prompt and has no text when generated.
const char* const kEndOfGenerationTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "[e~[",
};

std::string token(const Vocab& v, int64_t id) {
  return v.text.substr(size_t(v.offsets[size_t(id)]), size_t(v.offsets[size_t(id) + 1] - v.offsets[size_t(id)]));
}

// tokenizer.ggml.merges ("left right", rank = index) as token id pairs.
void read_merges(const GgufFile& f, Vocab& v) {
  const GgufValue* merges = f.find("tokenizer.ggml.merges");
  if (!merges || merges->type != GgufValueType::Array || merges->elem_type != GgufValueType::String)
    throw Error(f.path() + ": tokenizer.ggml.merges is missing or not an array of strings");
  std::unordered_map<std::string, int32_t> ids;
  for (int32_t id = 0; id < v.n_tokens(); ++id) ids[token(v, id)] = id;  // a repeated text is its last token
  for (uint64_t i = 0; i < merges->count; ++i) {
    const std::string m = merges->item(i).s;
    size_t space = m.find(' ', 1);
    if (space == std::string::npos) continue;  // llama.cpp's ("", "") never applies; the ranks keep their order
    auto left = ids.find(m.substr(0, space)), right = ids.find(m.substr(space + 1)),
         join = ids.find(m.substr(0, space) + m.substr(space + 1));
    if (left == ids.end() || right == ids.end() || join == ids.end())
      throw Error(f.path() + ": tokenizer.ggml.merges[" + std::to_string(i) + "] '" + m +
                  "' is not two tokens joining into a token (tgc keeps merges as token pairs)");
    v.merges.push_back(left->second);
    v.merges.push_back(right->second);
  }
}

// The byte-level BPE settings: the pre-tokenizer, llama.cpp's defaults, the merges.
void read_bpe(const GgufFile& f, Vocab& v) {
  v.model = kVocabBpe;
  const GgufValue* pre = f.find("tokenizer.ggml.pre");
  std::string name = pre && pre->type == GgufValueType::String ? pre->s : "default";
  const PreTokenizer* p = nullptr;
  for (const PreTokenizer& k : kPreTokenizers)
    if (name == k.name) p = &k;
  if (!p)
    throw Error(f.path() + ": pre-tokenizer '" + name +
                "' (tokenizer.ggml.pre) is not supported by tgc's byte-level BPE tokenizer");
  v.pre = p->pre;
  v.ignore_merges = p->ignore_merges;
  v.add_bos = f.get_int("tokenizer.ggml.add_bos_token", p->add_bos) != 0;
  v.add_space_prefix = f.get_int("tokenizer.ggml.add_space_prefix", 0) != 0;
  if (v.bos < 0 && !f.find("tokenizer.ggml.bos_token_id") && v.n_tokens() > 11) v.bos = 11;  // llama.cpp's BPE default
  if (v.eos < 0 && !f.find("tokenizer.ggml.eos_token_id") && v.n_tokens() > 11) v.eos = 11;
  read_merges(f, v);
}

}  // namespace

bool gguf_has_vocab(const GgufFile& f) {
  const GgufValue* m = f.find("tokenizer.ggml.model");
  return m && m->type == GgufValueType::String && (m->s == "llama" || m->s == "gpt2");
}

Vocab gguf_vocab(const GgufFile& f) {
  Vocab v;
  std::string model = f.get_string("tokenizer.ggml.model");
  if (model != "llama" && model != "gpt2")
    throw Error(
        f.path() + ": tokenizer '" + model +
        "' is not supported (tgc tokenizes SentencePiece-style 'llama' and byte-level BPE 'gpt2' vocabularies)");
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GgufValueType::Array || tokens->elem_type != GgufValueType::String ||
      tokens->count == 0 || tokens->count > (1u << 30))
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
  for (double t : table("tokenizer.ggml.token_type", kTokenNormal)) v.types.push_back(int32_t(t));
  for (int64_t id = 0; id < n; ++id)
    if (v.types[size_t(id)] == kTokenUserDefined || v.types[size_t(id)] == kTokenNormal)
      for (const char* eog : kEndOfGenerationTexts)
        if (token(v, id) == eog) v.types[size_t(id)] = kTokenControl;
  auto id = [&](const std::string& key) -> int32_t {
    int64_t x = f.get_int(key, -1);
    if (x < -1 || x >= n) throw Error(f.path() + ": " + key + " = " + std::to_string(x) + " is not a token id");
    return int32_t(x);
  };
  v.bos = id("tokenizer.ggml.bos_token_id");
  v.eos = id("tokenizer.ggml.eos_token_id");
  v.unk = id("tokenizer.ggml.unknown_token_id");
  // llama.cpp gives Phi-3's special tokens RSTRIP by the model's name (src/llama-vocab.cpp)
  const GgufValue* general_name = f.find("general.name");
  std::string name = general_name && general_name->type == GgufValueType::String ? general_name->s : "";
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  v.rstrip_specials = name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;
  if (const GgufValue* t = f.find("tokenizer.chat_template"); t && t->type == GgufValueType::String)
    v.chat_template = t->s;
  if (model == "gpt2") {
    read_bpe(f, v);
  } else {
    v.add_bos = f.get_int("tokenizer.ggml.add_bos_token", 1) != 0;
    v.add_space_prefix = f.get_int("tokenizer.ggml.add_space_prefix", 1) != 0;
  }
  return v;
}

}  // namespace tgc
