/* The tokenizers of GGUF vocabularies, as llama.cpp tokenizes. User-defined tokens (and, for chat
 * prompts, control tokens) split the text first (longest first); then each piece is tokenized by the vocabulary's
 * model:
 * - SentencePiece-style (tokenizer.ggml.model "llama"): a space in front of the first piece and of
 *   every piece after a special token, spaces as U+2581, the piece's UTF-8 characters merged
 *   pairwise, highest score first, while the merge is a token; a character that is no token
 *   becomes its bytes' <0xXX> tokens.
 * - byte-level BPE ("gpt2"): the pre-tokenizer's regexes split the piece into words, each word's
 *   bytes become GPT-2's byte-level characters, merged pairwise by the lowest merge rank.
 * C11, no dependencies. */
#ifndef TGC_TOKENIZER_H
#define TGC_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GGUF token types (tokenizer.ggml.token_type). */
enum tgc_token_type {
  TGC_TOKEN_NORMAL = 1,
  TGC_TOKEN_UNKNOWN = 2,
  TGC_TOKEN_CONTROL = 3,
  TGC_TOKEN_USER_DEFINED = 4,
  TGC_TOKEN_UNUSED = 5,
  TGC_TOKEN_BYTE = 6
};

/* tokenizer.ggml.model */
enum tgc_vocab_model { TGC_VOCAB_SPM = 0, TGC_VOCAB_BPE = 1 };

/* The BPE pre-tokenizers: each is a list of regexes (llama.cpp's, for tokenizer.ggml.pre names
 * that share them; frontend/gguf/gguf_vocab.cpp maps the names). */
enum tgc_bpe_pre {
  TGC_PRE_DEFAULT = 0,    /* no tokenizer.ggml.pre, or "default" */
  TGC_PRE_GPT2,           /* gpt-2, mpt, olmo, ... */
  TGC_PRE_LLAMA3,         /* llama-bpe, dbrx, ... */
  TGC_PRE_QWEN2,          /* qwen2, stablelm2, ... */
  TGC_PRE_QWEN35,         /* qwen35 */
  TGC_PRE_STARCODER,      /* starcoder, refact, command-r, ... */
  TGC_PRE_FALCON,         /* falcon */
  TGC_PRE_DEEPSEEK_LLM,   /* deepseek-llm */
  TGC_PRE_DEEPSEEK_CODER, /* deepseek-coder */
  TGC_PRE_COUNT
};

/* A vocabulary as the GGUF file holds it (tables owned by the caller, e.g. constants in an artifact). */
typedef struct tgc_vocab {
  int32_t n_tokens;
  const char* text;          /* every token's text, concatenated */
  const int64_t* offsets;    /* n_tokens + 1: token i is text[offsets[i], offsets[i + 1]) */
  const float* scores;       /* n_tokens */
  const int32_t* types;      /* n_tokens, enum tgc_token_type */
  int32_t bos, eos, unk;     /* token ids, -1 where the file names none */
  int32_t add_bos;           /* tokenizer.ggml.add_bos_token */
  int32_t add_space_prefix;  /* tokenizer.ggml.add_space_prefix (SPM; default true) */
  int32_t model;             /* enum tgc_vocab_model */
  int32_t pre;               /* BPE: enum tgc_bpe_pre */
  int32_t ignore_merges;     /* BPE: a word that is a token is that token (llama3) */
  int32_t n_merges;          /* BPE: merges[2 * r], merges[2 * r + 1]: the token ids merge r joins */
  const int32_t* merges;     /*      (rank r: lower merges first) */
  int32_t rstrip_specials;   /* special tokens eat the white space after them (llama.cpp's rule for
                              * Phi-3 files: all but <unk>, <s> and <|endoftext|>) */
  const char* chat_template; /* tokenizer.chat_template (chat_template.h), NULL where the file has none */
} tgc_vocab;

/* What the tokenizer is, for --info and the .so header: "SentencePiece-style", "byte-level BPE,
 * llama3 pre-tokenizer". Inline: the compiler names it too, without the runtime. */
static inline const char* tgc_vocab_kind(const tgc_vocab* v) {
  static const char* const bpe[TGC_PRE_COUNT] = {
      "byte-level BPE, default pre-tokenizer",       "byte-level BPE, gpt-2 pre-tokenizer",
      "byte-level BPE, llama3 pre-tokenizer",        "byte-level BPE, qwen2 pre-tokenizer",
      "byte-level BPE, qwen35 pre-tokenizer",        "byte-level BPE, starcoder pre-tokenizer",
      "byte-level BPE, falcon pre-tokenizer",        "byte-level BPE, deepseek-llm pre-tokenizer",
      "byte-level BPE, deepseek-coder pre-tokenizer"};
  if (v->model == TGC_VOCAB_SPM) return "SentencePiece-style";
  return v->model == TGC_VOCAB_BPE && v->pre >= 0 && v->pre < TGC_PRE_COUNT ? bpe[v->pre] : "of an unknown kind";
}

typedef struct tgc_tokenizer tgc_tokenizer;

/* An index over the vocabulary (a hash table of the token texts). NULL when out of memory. */
tgc_tokenizer* tgc_tokenizer_create(const tgc_vocab* v);
void tgc_tokenizer_destroy(tgc_tokenizer* t);

/* tgc_tokenize's flags: BOS first (when the vocabulary has one); the texts of control and unknown
 * tokens in the text are those tokens (llama.cpp's parse_special: chat prompts), not plain text. */
enum { TGC_TOKENIZE_BOS = 1, TGC_TOKENIZE_SPECIAL = 2 };

/* The tokens of text[0, len) (flags: TGC_TOKENIZE_*). Writes up to cap ids to out and returns how
 * many the text has (more than cap: call again with more room), or -1 when out of memory or (SPM)
 * a byte has no <0xXX> token. */
int64_t tgc_tokenize(const tgc_tokenizer* t, const char* text, size_t len, int flags, int32_t* out, int64_t cap);

/* The text of token id as generated text shows it (llama.cpp's token_to_piece without special
 * tokens): SPM U+2581 as a space and <0xXX> as its byte, BPE byte-level characters as their bytes,
 * user-defined tokens verbatim, control, unknown and unused tokens nothing. Writes up to cap
 * bytes to out and returns the piece's length (more than cap: call again with more room); it is
 * never longer than the token's text. An id outside the vocabulary has no text. */
int64_t tgc_token_piece(const tgc_vocab* v, int32_t id, char* out, int64_t cap);

#ifdef __cplusplus
}
#endif
#endif
