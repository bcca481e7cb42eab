/* The tokenizer's index and the text's split at user-defined tokens (tokenizer.h), and the
 * SentencePiece-style model: llama.cpp's algorithms, so that an artifact turns text into the very
 * ids llama.cpp does. The BPE model is tokenizer_bpe.c. */
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"

static uint64_t hash_text(const char* s, size_t n) { /* FNV-1a */
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

int32_t tgc_token_lookup(const tgc_tokenizer* t, const char* s, size_t n) {
  for (uint64_t i = hash_text(s, n) & t->mask;; i = (i + 1) & t->mask) {
    int32_t id = t->slots[i];
    if (id < 0) return -1;
    if (tgc_token_len(t->v, id) == n && memcmp(tgc_token_text(t->v, id), s, n) == 0) return id;
  }
}

/* The special tokens, longest text first (ties by id), into t->specials. qsort has no
 * context argument, so it sorts (length, id) pairs: no global, tokenizers are made concurrently. */
typedef struct {
  size_t len;
  int32_t id;
} sized_token;

static int longer_first(const void* a, const void* b) {
  const sized_token *x = a, *y = b;
  return x->len != y->len ? (x->len < y->len ? 1 : -1) : (x->id > y->id) - (x->id < y->id);
}

static int sort_specials(tgc_tokenizer* t) {
  sized_token* s = malloc(((size_t)t->n_specials + 1) * sizeof *s);
  if (!s) return -1;
  for (int32_t k = 0; k < t->n_specials; ++k) s[k] = (sized_token){tgc_token_len(t->v, t->specials[k]), t->specials[k]};
  qsort(s, (size_t)t->n_specials, sizeof *s, longer_first);
  for (int32_t k = 0; k < t->n_specials; ++k) t->specials[k] = s[k].id;
  free(s);
  return 0;
}

tgc_tokenizer* tgc_tokenizer_create(const tgc_vocab* v) {
  tgc_tokenizer* t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->v = v;
  uint64_t cap = 16;
  while (cap < 2 * (uint64_t)v->n_tokens) cap *= 2;
  t->mask = cap - 1;
  t->slots = malloc(cap * sizeof *t->slots);
  t->specials = malloc(((size_t)v->n_tokens + 1) * sizeof *t->specials);
  if (!t->slots || !t->specials) {
    tgc_tokenizer_destroy(t);
    return NULL;
  }
  memset(t->slots, 0xff, cap * sizeof *t->slots);
  for (int32_t id = 0; id < v->n_tokens; ++id) { /* a repeated text maps to its last token, as in llama.cpp */
    const char* s = tgc_token_text(v, id);
    size_t n = tgc_token_len(v, id);
    uint64_t i = hash_text(s, n) & t->mask;
    while (t->slots[i] >= 0 &&
           !(tgc_token_len(v, t->slots[i]) == n && memcmp(tgc_token_text(v, t->slots[i]), s, n) == 0))
      i = (i + 1) & t->mask;
    t->slots[i] = id;
    int32_t type = v->types[id];
    if ((type == TGC_TOKEN_USER_DEFINED || type == TGC_TOKEN_CONTROL || type == TGC_TOKEN_UNKNOWN) && n > 0)
      t->specials[t->n_specials++] = id;
  }
  if (sort_specials(t) != 0) {
    tgc_tokenizer_destroy(t);
    return NULL;
  }
  for (int b = 0; b < 256; ++b) {
    static const char hex[] = "0123456789ABCDEF";
    char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    t->byte_token[b] = tgc_token_lookup(t, name, 6);
  }
  if (v->model == TGC_VOCAB_BPE && !(t->bpe = tgc_bpe_create(t))) {
    tgc_tokenizer_destroy(t);
    return NULL;
  }
  return t;
}

void tgc_tokenizer_destroy(tgc_tokenizer* t) {
  if (!t) return;
  free(t->slots);
  free(t->specials);
  tgc_bpe_destroy(t->bpe);
  free(t);
}

/* ---- the bigram heap (SPM and BPE) ---- */
static int before(const tgc_bigram* x, const tgc_bigram* y) {
  return x->key > y->key || (x->key == y->key && x->left < y->left);
}

static void swap(tgc_bigram* x, tgc_bigram* y) {
  tgc_bigram tmp = *x;
  *x = *y, *y = tmp;
}

int tgc_heap_push(tgc_bigram_heap* h, tgc_bigram g) {
  if (h->n == h->cap) {
    int64_t cap = h->cap ? 2 * h->cap : 64;
    tgc_bigram* b = realloc(h->b, (size_t)cap * sizeof *b);
    if (!b) return -1;
    h->b = b, h->cap = cap;
  }
  int64_t i = h->n++;
  h->b[i] = g;
  for (; i > 0 && before(&h->b[i], &h->b[(i - 1) / 2]); i = (i - 1) / 2) swap(&h->b[i], &h->b[(i - 1) / 2]);
  return 0;
}

tgc_bigram tgc_heap_pop(tgc_bigram_heap* h) {
  tgc_bigram top = h->b[0];
  h->b[0] = h->b[--h->n];
  for (int64_t i = 0;;) {
    int64_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && before(&h->b[l], &h->b[m])) m = l;
    if (r < h->n && before(&h->b[r], &h->b[m])) m = r;
    if (m == i) break;
    swap(&h->b[i], &h->b[m]);
    i = m;
  }
  return top;
}

/* ---- SPM: one piece of text, characters merged pairwise by score ---- */
typedef struct {
  const char* text;
  size_t n; /* bytes; 0 once merged into its left neighbour */
  int64_t prev, next;
} symbol;

static int try_bigram(const tgc_tokenizer* t, symbol* sym, tgc_bigram_heap* h, int64_t left, int64_t right) {
  if (left < 0 || right < 0) return 0;
  size_t size = sym[left].n + sym[right].n;
  int32_t id = tgc_token_lookup(t, sym[left].text, size);
  if (id < 0) return 0;
  return tgc_heap_push(h, (tgc_bigram){left, right, t->v->scores[id], size, id});
}

/* Appends the ids of one piece (spaces already U+2581) to out at *n (room permitting). */
static int spm_piece(const tgc_tokenizer* t, const char* s, size_t len, int32_t* out, int64_t cap, int64_t* n) {
  static const uint8_t utf8_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  symbol* sym = malloc((len + 1) * sizeof *sym);
  tgc_bigram_heap h = {0};
  int rc = sym ? 0 : -1;
  int64_t count = 0;
  for (size_t off = 0; rc == 0 && off < len; ++count) {
    size_t k = utf8_len[(uint8_t)s[off] >> 4];
    if (k > len - off) k = len - off;
    sym[count] = (symbol){s + off, k, count - 1, off + k == len ? -1 : count + 1};
    off += k;
  }
  for (int64_t i = 1; rc == 0 && i < count; ++i) rc = try_bigram(t, sym, &h, i - 1, i);
  while (rc == 0 && h.n > 0) {
    tgc_bigram g = tgc_heap_pop(&h);
    symbol *l = &sym[g.left], *r = &sym[g.right];
    if (l->n == 0 || r->n == 0 || l->n + r->n != g.size) continue; /* stale: a side merged since */
    l->n += r->n, r->n = 0;
    l->next = r->next;
    if (r->next >= 0) sym[r->next].prev = g.left;
    rc = try_bigram(t, sym, &h, l->prev, g.left);
    if (rc == 0) rc = try_bigram(t, sym, &h, g.left, l->next);
  }
  for (int64_t i = count ? 0 : -1; rc == 0 && i >= 0; i = sym[i].next) {
    int32_t id = tgc_token_lookup(t, sym[i].text, sym[i].n);
    if (id >= 0) {
      tgc_emit(id, out, cap, n);
      continue;
    }
    for (size_t j = 0; j < sym[i].n; ++j) { /* no token: its bytes */
      int32_t b = t->byte_token[(uint8_t)sym[i].text[j]];
      if (b < 0) rc = -1;
      tgc_emit(b, out, cap, n);
    }
  }
  free(sym);
  free(h.b);
  return rc;
}

/* ---- the text: split at special tokens, each raw piece tokenized ---- */
typedef struct {
  int32_t token; /* -1: raw text */
  size_t off, len;
} fragment;

static const char* find(const char* hay, size_t hn, const char* needle, size_t nn) {
  for (size_t i = 0; nn <= hn && i + nn <= hn; ++i)
    if (memcmp(hay + i, needle, nn) == 0) return hay + i;
  return NULL;
}

/* Whether special token id eats the white space after it (llama.cpp's RSTRIP attribute). */
static int rstrips(const tgc_vocab* v, int32_t id) {
  static const char* const kept[] = {"<unk>", "<s>", "<|endoftext|>"};
  if (!v->rstrip_specials) return 0;
  for (size_t k = 0; k < sizeof kept / sizeof kept[0]; ++k)
    if (tgc_token_len(v, id) == strlen(kept[k]) && memcmp(tgc_token_text(v, id), kept[k], strlen(kept[k])) == 0)
      return 0;
  return 1;
}

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* The text as raw fragments and special tokens (longest token first, as llama.cpp splits): the
 * user-defined ones, and with `special` the control and unknown ones too. Returns the fragments
 * (*nf of them; NULL when out of memory). */
static fragment* split_at_specials(const tgc_tokenizer* t, const char* text, size_t len, int special, int64_t* nf_out) {
  const tgc_vocab* v = t->v;
  /* Each special split adds at most two fragments per occurrence; grow as needed. */
  int64_t nf = len ? 1 : 0, fcap = 16;
  fragment* f = malloc((size_t)fcap * sizeof *f);
  if (!f) return NULL;
  if (nf) f[0] = (fragment){-1, 0, len};
  for (int32_t k = 0; k < t->n_specials; ++k) {
    int32_t id = t->specials[k];
    if (!special && v->types[id] != TGC_TOKEN_USER_DEFINED) continue;
    const char* st = tgc_token_text(v, id);
    size_t sl = tgc_token_len(v, id);
    int strip = rstrips(v, id);
    for (int64_t i = 0; i < nf; ++i) {
      if (f[i].token >= 0) continue;
      const char* at = find(text + f[i].off, f[i].len, st, sl);
      if (!at) continue;
      if (nf + 2 > fcap) {
        fragment* g = realloc(f, (size_t)(fcap *= 2) * sizeof *f);
        if (!g) return free(f), NULL;
        f = g;
      }
      size_t left = (size_t)(at - (text + f[i].off)), end = f[i].off + f[i].len, right_off = f[i].off + left + sl;
      while (strip && right_off < end && is_space(text[right_off])) ++right_off;
      fragment pieces[3];
      int np = 0;
      if (left > 0) pieces[np++] = (fragment){-1, f[i].off, left};
      pieces[np++] = (fragment){id, 0, 0};
      if (right_off < end) pieces[np++] = (fragment){-1, right_off, end - right_off};
      memmove(f + i + np, f + i + 1, (size_t)(nf - i - 1) * sizeof *f);
      memcpy(f + i, pieces, (size_t)np * sizeof *f);
      nf += np - 1;
      /* the fragment after the token (if any) is raw and is searched again by this loop */
      if (left > 0) ++i;
    }
  }
  *nf_out = nf;
  return f;
}

/* SPM: ' ' in front after a special token (or at the start), every space as U+2581 (3 bytes). */
static int spm_fragment(const tgc_tokenizer* t, const char* text, size_t len, int prev_special, int32_t* out,
                        int64_t cap, int64_t* n) {
  char* s = malloc(3 * (len + 1));
  if (!s) return -1;
  size_t sn = 0;
  if (t->v->add_space_prefix && prev_special) memcpy(s, "\xe2\x96\x81", 3), sn = 3;
  for (size_t j = 0; j < len; ++j)
    if (text[j] == ' ')
      memcpy(s + sn, "\xe2\x96\x81", 3), sn += 3;
    else
      s[sn++] = text[j];
  int rc = spm_piece(t, s, sn, out, cap, n);
  free(s);
  return rc;
}

int64_t tgc_tokenize(const tgc_tokenizer* t, const char* text, size_t len, int flags, int32_t* out, int64_t cap) {
  int64_t nf = 0, n = 0;
  fragment* f = split_at_specials(t, text, len, (flags & TGC_TOKENIZE_SPECIAL) != 0, &nf);
  if (!f) return -1;
  if ((flags & TGC_TOKENIZE_BOS) && t->v->bos >= 0) tgc_emit(t->v->bos, out, cap, &n);
  int rc = 0, prev_special = 1;
  for (int64_t i = 0; rc == 0 && i < nf; ++i) {
    if (f[i].token >= 0) {
      tgc_emit(f[i].token, out, cap, &n);
      prev_special = 1;
      continue;
    }
    if (t->bpe)
      rc = tgc_bpe_piece(t, text + f[i].off, f[i].len, out, cap, &n);
    else
      rc = spm_fragment(t, text + f[i].off, f[i].len, prev_special, out, cap, &n);
    prev_special = 0;
  }
  free(f);
  return rc == 0 ? n : -1;
}

int64_t tgc_token_piece(const tgc_vocab* v, int32_t id, char* out, int64_t cap) {
  if (id < 0 || id >= v->n_tokens) return 0;
  const char* s = tgc_token_text(v, id);
  size_t len = tgc_token_len(v, id);
  int64_t n = 0;
  switch (v->types[id]) {
    case TGC_TOKEN_USER_DEFINED:
      for (size_t i = 0; i < len; ++i) tgc_put_byte(s[i], out, cap, &n);
      break;
    case TGC_TOKEN_BYTE: /* <0xXX> */
      if (len == 6) tgc_put_byte((char)strtol((char[3]){s[3], s[4], 0}, NULL, 16), out, cap, &n);
      break;
    case TGC_TOKEN_NORMAL:
      if (v->model == TGC_VOCAB_BPE) {
        tgc_bpe_decode(s, len, out, cap, &n);
        break;
      }
      for (size_t i = 0; i < len; ++i) /* U+2581 is a space */
        if (i + 2 < len && memcmp(s + i, "\xe2\x96\x81", 3) == 0)
          tgc_put_byte(' ', out, cap, &n), i += 2;
        else
          tgc_put_byte(s[i], out, cap, &n);
      break;
    default: /* control, unknown, unused: nothing */ break;
  }
  return n;
}
