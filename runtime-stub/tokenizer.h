/* SentencePiece-style tokenizer of GGUF vocabularies (tokenizer.ggml.model "llama"), as llama.cpp
 * tokenizes: user-defined tokens split the text first, then each piece (a space in front of the
 * first piece and of every piece after a special token, spaces as U+2581) is split into UTF-8
 * characters and merged pairwise, highest score first, while the merge is a token; a character
 * that is no token becomes its bytes' <0xXX> tokens. C11, no dependencies. */
#ifndef TGC_TOKENIZER_H
#define TGC_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GGUF token types (tokenizer.ggml.token_type). */
enum tgc_token_type { TGC_TOKEN_NORMAL = 1, TGC_TOKEN_UNKNOWN = 2, TGC_TOKEN_CONTROL = 3, TGC_TOKEN_USER_DEFINED = 4,
                      TGC_TOKEN_UNUSED = 5, TGC_TOKEN_BYTE = 6 };

/* A vocabulary as the GGUF file holds it (tables owned by the caller, e.g. constants in an artifact). */
typedef struct tgc_vocab {
  int32_t n_tokens;
  const char* text;         /* every token's text, concatenated */
  const int64_t* offsets;   /* n_tokens + 1: token i is text[offsets[i], offsets[i + 1]) */
  const float* scores;      /* n_tokens */
  const int32_t* types;     /* n_tokens, enum tgc_token_type */
  int32_t bos, eos, unk;    /* token ids, -1 where the file names none */
  int32_t add_bos;          /* tokenizer.ggml.add_bos_token */
  int32_t add_space_prefix; /* tokenizer.ggml.add_space_prefix (default true) */
} tgc_vocab;

typedef struct tgc_tokenizer tgc_tokenizer;

/* An index over the vocabulary (a hash table of the token texts). NULL when out of memory. */
tgc_tokenizer* tgc_tokenizer_create(const tgc_vocab* v);
void tgc_tokenizer_destroy(tgc_tokenizer* t);

/* The tokens of text[0, len), BOS first when add_bos (and the vocabulary has one). Writes up to
 * cap ids to out and returns how many the text has (more than cap: call again with more room),
 * or -1 when a byte has no <0xXX> token. */
int64_t tgc_tokenize(const tgc_tokenizer* t, const char* text, size_t len, int add_bos, int32_t* out, int64_t cap);

#ifdef __cplusplus
}
#endif
#endif
