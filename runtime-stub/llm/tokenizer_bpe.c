/* Byte-level BPE (tokenizer.ggml.model "gpt2"), as llama.cpp's llm_tokenizer_bpe_session: the
 * piece's code points (invalid UTF-8 as U+FFFD, as llama.cpp decodes) split into words by the
 * pre-tokenizer; each word's bytes become GPT-2's byte-level characters, one symbol each, and
 * neighbours merge, lowest merge rank first (then the leftmost), while a merge of the two exists.
 * The merges are token id pairs (the frontend checked each side and the join are tokens), so a
 * symbol is its token id. */
#include <stdlib.h>
#include <string.h>

#include "llm/bpe_pretokenize.h"
#include "llm/tokenizer_internal.h"
#include "llm/unicode_classes.h"

struct tgc_bpe {
  int32_t* slots; /* open addressing over merges (left, right): rank or -1 */
  uint64_t mask;
  int32_t* result;              /* per rank: the merged token, -1 where the join is no token */
  int32_t byte_char_token[256]; /* the token of each byte's byte-level character, or -1 */
};

/* ---- GPT-2's bytes_to_unicode: printable Latin-1 bytes are themselves, the other 68 follow U+0100 ---- */
static uint32_t byte_char(uint8_t b) {
  if (b <= 0x20) return 0x100 + b;
  if (b >= 0x7F && b <= 0xA0) return 0x100 + 33 + (b - 0x7F);
  return b == 0xAD ? 0x100 + 67 : b;
}

/* The byte a byte-level character stands for, or -1. */
static int char_byte(uint32_t c) {
  if ((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF)) return (int)c;
  if (c < 0x100 || c >= 0x100 + 68) return -1;
  uint32_t n = c - 0x100;
  return n <= 32 ? (int)n : n <= 66 ? (int)(0x7F + n - 33) : 0xAD;
}

static size_t utf8_encode(uint32_t c, char* out) {
  if (c < 0x80) return out[0] = (char)c, 1;
  if (c < 0x800) return out[0] = (char)(0xC0 | c >> 6), out[1] = (char)(0x80 | (c & 0x3F)), 2;
  if (c < 0x10000)
    return out[0] = (char)(0xE0 | c >> 12), out[1] = (char)(0x80 | ((c >> 6) & 0x3F)),
           out[2] = (char)(0x80 | (c & 0x3F)), 3;
  out[0] = (char)(0xF0 | ((c >> 18) & 0x07)), out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((c >> 6) & 0x3F)), out[3] = (char)(0x80 | (c & 0x3F));
  return 4;
}

/* One code point from s[*off, len), as llama.cpp's unicode_cpt_from_utf8 reads it: a malformed or
 * cut sequence is U+FFFD and one byte. */
static uint32_t utf8_decode(const char* s, size_t len, size_t* off) {
  const uint8_t* u = (const uint8_t*)s + *off;
  size_t left = len - *off, k = u[0] < 0x80   ? 1
                                : u[0] < 0xC0 ? 0
                                : u[0] < 0xE0 ? 2
                                : u[0] < 0xF0 ? 3
                                : u[0] < 0xF8 ? 4
                                              : 0;
  int ok = k > 0 && k <= left;
  for (size_t i = 1; ok && i < k; ++i) ok = (u[i] & 0xC0) == 0x80;
  if (!ok) return ++*off, 0xFFFD;
  static const uint8_t lead_mask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t c = u[0] & lead_mask[k];
  for (size_t i = 1; i < k; ++i) c = c << 6 | (u[i] & 0x3F);
  *off += k;
  return c;
}

void tgc_bpe_decode(const char* s, size_t len, char* out, int64_t cap, int64_t* n) {
  for (size_t off = 0; off < len;) {
    size_t at = off;
    int b = char_byte(utf8_decode(s, len, &off));
    if (b >= 0)
      tgc_put_byte((char)b, out, cap, n);
    else
      for (; at < off; ++at) tgc_put_byte(s[at], out, cap, n); /* no byte-level character: as it is */
  }
}

/* ---- the merge table ---- */
static uint64_t pair_hash(int32_t left, int32_t right) {
  uint64_t h = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

/* The rank of the merge of tokens left and right, or -1. */
static int32_t merge_rank(const tgc_tokenizer* t, int32_t left, int32_t right) {
  const int32_t* m = t->v->merges;
  for (uint64_t i = pair_hash(left, right) & t->bpe->mask;; i = (i + 1) & t->bpe->mask) {
    int32_t r = t->bpe->slots[i];
    if (r < 0 || (m[2 * r] == left && m[2 * r + 1] == right)) return r;
  }
}

struct tgc_bpe* tgc_bpe_create(const tgc_tokenizer* t) {
  const tgc_vocab* v = t->v;
  struct tgc_bpe* b = calloc(1, sizeof *b);
  if (!b) return NULL;
  uint64_t cap = 16;
  while (cap < 2 * (uint64_t)v->n_merges) cap *= 2;
  b->mask = cap - 1;
  b->slots = malloc(cap * sizeof *b->slots);
  b->result = malloc(((size_t)v->n_merges + 1) * sizeof *b->result);
  size_t longest = 0;
  for (int32_t id = 0; id < v->n_tokens; ++id)
    if (tgc_token_len(v, id) > longest) longest = tgc_token_len(v, id);
  char* join = malloc(2 * longest + 1);
  if (!b->slots || !b->result || !join) {
    free(join);
    tgc_bpe_destroy(b);
    return NULL;
  }
  memset(b->slots, 0xff, cap * sizeof *b->slots);
  for (int32_t r = 0; r < v->n_merges; ++r) {
    int32_t left = v->merges[2 * r], right = v->merges[2 * r + 1];
    uint64_t i = pair_hash(left, right) & b->mask;
    while (b->slots[i] >= 0 && !(v->merges[2 * b->slots[i]] == left && v->merges[2 * b->slots[i] + 1] == right))
      i = (i + 1) & b->mask;
    if (b->slots[i] < 0) b->slots[i] = r; /* a repeated merge keeps its first rank, as in llama.cpp */
    size_t ln = tgc_token_len(v, left), rn = tgc_token_len(v, right);
    memcpy(join, tgc_token_text(v, left), ln);
    memcpy(join + ln, tgc_token_text(v, right), rn);
    b->result[r] = tgc_token_lookup(t, join, ln + rn);
  }
  free(join);
  for (int c = 0; c < 256; ++c) {
    char u[4];
    b->byte_char_token[c] = tgc_token_lookup(t, u, utf8_encode(byte_char((uint8_t)c), u));
  }
  return b;
}

void tgc_bpe_destroy(struct tgc_bpe* b) {
  if (!b) return;
  free(b->slots);
  free(b->result);
  free(b);
}

/* ---- one word: its bytes' symbols merged by rank ---- */
typedef struct {
  int32_t id;   /* the symbol's token, -1 for a byte whose character is no token */
  uint8_t byte; /* the first byte (the only one while id is -1) */
  int alive;
  int64_t prev, next;
} symbol;

static int try_merge(const tgc_tokenizer* t, const symbol* sym, tgc_bigram_heap* h, int64_t left, int64_t right) {
  if (left < 0 || right < 0 || sym[left].id < 0 || sym[right].id < 0) return 0;
  int32_t r = merge_rank(t, sym[left].id, sym[right].id);
  if (r < 0 || t->bpe->result[r] < 0) return 0;
  return tgc_heap_push(h, (tgc_bigram){left, right, -(double)r, 0, t->bpe->result[r]});
}

/* Appends the tokens of word w[0, n) (UTF-8 bytes) to out at *n. */
static int bpe_word(const tgc_tokenizer* t, const char* w, size_t len, symbol* sym, tgc_bigram_heap* h, int32_t* out,
                    int64_t cap, int64_t* n) {
  if (t->v->ignore_merges) { /* the word, if a token, is that token */
    char* enc = malloc(2 * len);
    if (!enc) return -1;
    size_t k = 0;
    for (size_t i = 0; i < len; ++i) k += utf8_encode(byte_char((uint8_t)w[i]), enc + k);
    int32_t id = tgc_token_lookup(t, enc, k);
    free(enc);
    if (id >= 0) return tgc_emit(id, out, cap, n), 0;
  }
  for (size_t i = 0; i < len; ++i)
    sym[i] = (symbol){t->bpe->byte_char_token[(uint8_t)w[i]], (uint8_t)w[i], 1, (int64_t)i - 1,
                      i + 1 == len ? -1 : (int64_t)i + 1};
  h->n = 0;
  int rc = 0;
  for (size_t i = 1; rc == 0 && i < len; ++i) rc = try_merge(t, sym, h, (int64_t)i - 1, (int64_t)i);
  while (rc == 0 && h->n > 0) {
    tgc_bigram g = tgc_heap_pop(h);
    symbol *l = &sym[g.left], *r = &sym[g.right];
    int32_t rank = (int32_t)-g.key;
    /* stale when a side merged since */
    if (!l->alive || !r->alive || l->id != t->v->merges[2 * rank] || r->id != t->v->merges[2 * rank + 1]) continue;
    l->id = g.id;
    r->alive = 0;
    l->next = r->next;
    if (r->next >= 0) sym[r->next].prev = g.left;
    rc = try_merge(t, sym, h, l->prev, g.left);
    if (rc == 0) rc = try_merge(t, sym, h, g.left, l->next);
  }
  for (int64_t i = len ? 0 : -1; rc == 0 && i >= 0; i = sym[i].next) {
    if (sym[i].id >= 0) {
      tgc_emit(sym[i].id, out, cap, n);
      continue;
    }
    /* no token for the byte's character: llama.cpp tries each byte of its UTF-8 as a token */
    char u[4];
    size_t k = utf8_encode(byte_char(sym[i].byte), u);
    for (size_t j = 0; j < k; ++j) {
      int32_t id = tgc_token_lookup(t, u + j, 1);
      if (id >= 0) tgc_emit(id, out, cap, n);
    }
  }
  return rc;
}

int tgc_bpe_piece(const tgc_tokenizer* t, const char* s, size_t len, int32_t* out, int64_t cap, int64_t* n) {
  uint32_t* cp = malloc((len + 1) * sizeof *cp);
  uint8_t* cls = malloc(len + 1);
  int64_t* words = malloc((len + 1) * sizeof *words);
  char* bytes = malloc(4 * len + 1); /* a word's UTF-8, at most 4 bytes per code point */
  symbol* sym = malloc((4 * len + 1) * sizeof *sym);
  tgc_bigram_heap h = {0};
  int rc = cp && cls && words && bytes && sym ? 0 : -1;
  int64_t count = 0, nw = 0;
  for (size_t off = 0; rc == 0 && off < len; ++count) {
    cp[count] = utf8_decode(s, len, &off);
    cls[count] = tgc_unicode_class(cp[count]);
  }
  if (rc == 0 && (nw = tgc_bpe_pretokenize(t->v->pre, cp, cls, count, words)) < 0) rc = -1;
  for (int64_t w = 0, at = 0; rc == 0 && w < nw; at += words[w++]) {
    size_t k = 0; /* the word again as UTF-8: malformed bytes are U+FFFD now, as in llama.cpp */
    for (int64_t i = at; i < at + words[w]; ++i) k += utf8_encode(cp[i], bytes + k);
    rc = bpe_word(t, bytes, k, sym, &h, out, cap, n);
  }
  free(cp);
  free(cls);
  free(words);
  free(bytes);
  free(sym);
  free(h.b);
  return rc;
}
