/* What the tokenizer's files share (tokenizer.c: the index, the special-token split and the SPM
 * model; tokenizer_bpe.c: the BPE model). Not part of the ABI. */
#ifndef TGC_TOKENIZER_INTERNAL_H
#define TGC_TOKENIZER_INTERNAL_H
#include "llm/tokenizer.h"

struct tgc_bpe; /* tokenizer_bpe.c */

struct tgc_tokenizer {
  const tgc_vocab* v;
  int32_t* slots; /* open addressing over token texts: token id or -1 */
  uint64_t mask;
  int32_t byte_token[256]; /* SPM: <0xXX> tokens, -1 where missing */
  int32_t* specials;       /* user-defined, control and unknown tokens, longest text first: they
                            * split the text (the latter two only with TGC_TOKENIZE_SPECIAL) */
  int32_t n_specials;
  struct tgc_bpe* bpe; /* BPE: the merge table and byte-level characters; NULL for SPM */
};

static inline size_t tgc_token_len(const tgc_vocab* v, int32_t id) {
  return (size_t)(v->offsets[id + 1] - v->offsets[id]);
}
static inline const char* tgc_token_text(const tgc_vocab* v, int32_t id) { return v->text + v->offsets[id]; }

/* The token whose text is s[0, n), or -1. */
int32_t tgc_token_lookup(const tgc_tokenizer* t, const char* s, size_t n);

/* Appends id to out at *n (room permitting: the count goes on, so the caller learns the size). */
static inline void tgc_emit(int32_t id, int32_t* out, int64_t cap, int64_t* n) {
  if (*n < cap) out[*n] = id;
  ++*n;
}

/* Candidate merges of two neighbouring symbols, best first: higher key, then the leftmost. SPM's
 * key is the merged token's score, BPE's minus the merge rank. */
typedef struct {
  int64_t left, right; /* symbol indices */
  double key;
  size_t size; /* SPM: bytes of the merge (a side that changed since makes it stale) */
  int32_t id;  /* BPE: the merged token */
} tgc_bigram;

typedef struct {
  tgc_bigram* b;
  int64_t n, cap;
} tgc_bigram_heap;

int tgc_heap_push(tgc_bigram_heap* h, tgc_bigram g); /* 0, or -1 when out of memory */
tgc_bigram tgc_heap_pop(tgc_bigram_heap* h);         /* h->n > 0 */

/* BPE (tokenizer_bpe.c): tables made at create, and one piece of text (no special tokens in it)
 * appended to out at *n. 0, or -1 when out of memory. */
struct tgc_bpe* tgc_bpe_create(const tgc_tokenizer* t);
void tgc_bpe_destroy(struct tgc_bpe* b);
int tgc_bpe_piece(const tgc_tokenizer* t, const char* s, size_t len, int32_t* out, int64_t cap, int64_t* n);
/* Appends byte c to out at *n (room permitting: the count goes on, as tgc_emit's). */
static inline void tgc_put_byte(char c, char* out, int64_t cap, int64_t* n) {
  if (*n < cap) out[*n] = c;
  ++*n;
}

/* The bytes a BPE token's byte-level text s[0, len) stands for, appended to out at *n. */
void tgc_bpe_decode(const char* s, size_t len, char* out, int64_t cap, int64_t* n);

#endif
