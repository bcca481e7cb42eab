// The compiler's Vocab (model/vocab.h) as the runtime's tokenizer reads it (tgc_vocab in
// runtime-stub/llm/tokenizer.h): the numbering of token types, models and pre-tokenizers checked
// to agree, and a view that points into the Vocab.
#pragma once
#include "model/vocab.h"
#include "runtime-stub/llm/tokenizer.h"

namespace tgc {

static_assert(kTokenNormal == TGC_TOKEN_NORMAL && kTokenUnknown == TGC_TOKEN_UNKNOWN &&
                  kTokenControl == TGC_TOKEN_CONTROL && kTokenUserDefined == TGC_TOKEN_USER_DEFINED &&
                  kTokenUnused == TGC_TOKEN_UNUSED && kTokenByte == TGC_TOKEN_BYTE,
              "model/vocab.h: TokenType out of step with tokenizer.h");
static_assert(kVocabSpm == TGC_VOCAB_SPM && kVocabBpe == TGC_VOCAB_BPE,
              "model/vocab.h: VocabModel out of step with tokenizer.h");
static_assert(kPreDefault == TGC_PRE_DEFAULT && kPreGpt2 == TGC_PRE_GPT2 && kPreLlama3 == TGC_PRE_LLAMA3 &&
                  kPreQwen2 == TGC_PRE_QWEN2 && kPreQwen35 == TGC_PRE_QWEN35 && kPreStarcoder == TGC_PRE_STARCODER &&
                  kPreFalcon == TGC_PRE_FALCON && kPreDeepseekLlm == TGC_PRE_DEEPSEEK_LLM &&
                  kPreDeepseekCoder == TGC_PRE_DEEPSEEK_CODER && kPreDeepseekCoder + 1 == TGC_PRE_COUNT,
              "model/vocab.h: BpePre out of step with tokenizer.h");

inline tgc_vocab vocab_view(const Vocab& v) {  // points into v
  return {v.n_tokens(),
          v.text.data(),
          v.offsets.data(),
          v.scores.data(),
          v.types.data(),
          v.bos,
          v.eos,
          v.unk,
          v.add_bos,
          v.add_space_prefix,
          v.model,
          v.pre,
          v.ignore_merges,
          v.n_merges(),
          v.merges.data(),
          v.rstrip_specials,
          v.chat_template.empty() ? nullptr : v.chat_template.c_str()};
}

}  // namespace tgc
