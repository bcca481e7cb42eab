/* SentencePiece-style tokenizer (tokenizer.h): the algorithm of llama.cpp's SPM tokenizer, so that
 * an artifact turns text into the very ids llama.cpp does. */
#include "tokenizer.h"

#include <stdlib.h>
#include <string.h>

struct tgc_tokenizer {
  const tgc_vocab* v;
  int32_t* slots;           /* open addressing over token texts: token id or -1 */
  uint64_t mask;
  int32_t byte_token[256];  /* <0xXX> tokens, -1 where missing */
  int32_t* specials;        /* user-defined tokens, longest text first: they split the text */
  int32_t n_specials;
};

static uint64_t hash_text(const char* s, size_t n) { /* FNV-1a */
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

static size_t token_len(const tgc_vocab* v, int32_t id) { return (size_t)(v->offsets[id + 1] - v->offsets[id]); }
static const char* token_text(const tgc_vocab* v, int32_t id) { return v->text + v->offsets[id]; }

/* The token whose text is s[0, n), or -1. */
static int32_t lookup(const tgc_tokenizer* t, const char* s, size_t n) {
  for (uint64_t i = hash_text(s, n) & t->mask;; i = (i + 1) & t->mask) {
    int32_t id = t->slots[i];
    if (id < 0) return -1;
    if (token_len(t->v, id) == n && memcmp(token_text(t->v, id), s, n) == 0) return id;
  }
}

static const tgc_vocab* g_sort_vocab; /* qsort has no context argument in C11 */
static int longer_first(const void* a, const void* b) {
  int32_t x = *(const int32_t*)a, y = *(const int32_t*)b;
  size_t lx = token_len(g_sort_vocab, x), ly = token_len(g_sort_vocab, y);
  return lx != ly ? (lx < ly ? 1 : -1) : (x > y) - (x < y);
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
    const char* s = token_text(v, id);
    size_t n = token_len(v, id);
    uint64_t i = hash_text(s, n) & t->mask;
    while (t->slots[i] >= 0 && !(token_len(v, t->slots[i]) == n && memcmp(token_text(v, t->slots[i]), s, n) == 0)) i = (i + 1) & t->mask;
    t->slots[i] = id;
    if (v->types[id] == TGC_TOKEN_USER_DEFINED && n > 0) t->specials[t->n_specials++] = id;
  }
  g_sort_vocab = v;
  qsort(t->specials, (size_t)t->n_specials, sizeof *t->specials, longer_first);
  for (int b = 0; b < 256; ++b) {
    static const char hex[] = "0123456789ABCDEF";
    char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    t->byte_token[b] = lookup(t, name, 6);
  }
  return t;
}

void tgc_tokenizer_destroy(tgc_tokenizer* t) {
  if (!t) return;
  free(t->slots);
  free(t->specials);
  free(t);
}

/* ---- one piece of text: characters merged pairwise by score ---- */
typedef struct {
  const char* text;
  size_t n;       /* bytes; 0 once merged into its left neighbour */
  int64_t prev, next;
} symbol;

typedef struct {
  int64_t left, right;
  float score;
  size_t size;
} bigram;

/* A max-heap of bigrams: higher score first, then the leftmost. */
typedef struct {
  bigram* b;
  int64_t n, cap;
} heap;

static int before(const bigram* x, const bigram* y) { return x->score > y->score || (x->score == y->score && x->left < y->left); }

static int heap_push(heap* h, bigram g) {
  if (h->n == h->cap) {
    int64_t cap = h->cap ? 2 * h->cap : 64;
    bigram* b = realloc(h->b, (size_t)cap * sizeof *b);
    if (!b) return -1;
    h->b = b, h->cap = cap;
  }
  int64_t i = h->n++;
  h->b[i] = g;
  while (i > 0 && before(&h->b[i], &h->b[(i - 1) / 2])) {
    bigram tmp = h->b[i];
    h->b[i] = h->b[(i - 1) / 2], h->b[(i - 1) / 2] = tmp;
    i = (i - 1) / 2;
  }
  return 0;
}

static bigram heap_pop(heap* h) {
  bigram top = h->b[0];
  h->b[0] = h->b[--h->n];
  for (int64_t i = 0;;) {
    int64_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && before(&h->b[l], &h->b[m])) m = l;
    if (r < h->n && before(&h->b[r], &h->b[m])) m = r;
    if (m == i) break;
    bigram tmp = h->b[i];
    h->b[i] = h->b[m], h->b[m] = tmp;
    i = m;
  }
  return top;
}

static int try_bigram(const tgc_tokenizer* t, symbol* sym, heap* h, int64_t left, int64_t right) {
  if (left < 0 || right < 0) return 0;
  size_t size = sym[left].n + sym[right].n;
  int32_t id = lookup(t, sym[left].text, size);
  if (id < 0) return 0;
  return heap_push(h, (bigram){left, right, t->v->scores[id], size});
}

/* Appends the ids of one piece (spaces already U+2581) to out at *n (room permitting). */
static int spm_piece(const tgc_tokenizer* t, const char* s, size_t len, int32_t* out, int64_t cap, int64_t* n) {
  static const uint8_t utf8_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  symbol* sym = malloc((len + 1) * sizeof *sym);
  heap h = {0};
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
    bigram g = heap_pop(&h);
    symbol *l = &sym[g.left], *r = &sym[g.right];
    if (l->n == 0 || r->n == 0 || l->n + r->n != g.size) continue;  /* stale: a side merged since */
    l->n += r->n, r->n = 0;
    l->next = r->next;
    if (r->next >= 0) sym[r->next].prev = g.left;
    rc = try_bigram(t, sym, &h, l->prev, g.left);
    if (rc == 0) rc = try_bigram(t, sym, &h, g.left, l->next);
  }
  for (int64_t i = count ? 0 : -1; rc == 0 && i >= 0; i = sym[i].next) {
    int32_t id = lookup(t, sym[i].text, sym[i].n);
    if (id >= 0) {
      if (*n < cap) out[*n] = id;
      ++*n;
      continue;
    }
    for (size_t j = 0; j < sym[i].n; ++j) { /* no token: its bytes */
      int32_t b = t->byte_token[(uint8_t)sym[i].text[j]];
      if (b < 0) rc = -1;
      if (*n < cap) out[*n] = b;
      ++*n;
    }
  }
  free(sym);
  free(h.b);
  return rc;
}

/* ---- the text: split at user-defined tokens, each raw piece tokenized ---- */
typedef struct {
  int32_t token; /* -1: raw text */
  size_t off, len;
} fragment;

static const char* find(const char* hay, size_t hn, const char* needle, size_t nn) {
  for (size_t i = 0; nn <= hn && i + nn <= hn; ++i)
    if (memcmp(hay + i, needle, nn) == 0) return hay + i;
  return NULL;
}

int64_t tgc_tokenize(const tgc_tokenizer* t, const char* text, size_t len, int add_bos, int32_t* out, int64_t cap) {
  const tgc_vocab* v = t->v;
  /* Each special split adds at most two fragments per occurrence; grow as needed. */
  int64_t nf = len ? 1 : 0, fcap = 16;
  fragment* f = malloc((size_t)fcap * sizeof *f);
  if (!f) return -1;
  if (nf) f[0] = (fragment){-1, 0, len};
  for (int32_t k = 0; k < t->n_specials; ++k) {
    int32_t id = t->specials[k];
    const char* st = token_text(v, id);
    size_t sl = token_len(v, id);
    for (int64_t i = 0; i < nf; ++i) {
      if (f[i].token >= 0) continue;
      const char* at = find(text + f[i].off, f[i].len, st, sl);
      if (!at) continue;
      if (nf + 2 > fcap) {
        fragment* g = realloc(f, (size_t)(fcap *= 2) * sizeof *f);
        if (!g) return free(f), -1;
        f = g;
      }
      size_t left = (size_t)(at - (text + f[i].off)), end = f[i].off + f[i].len, right_off = f[i].off + left + sl;
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
  int64_t n = 0;
  int rc = 0, prev_special = 1;
  if (add_bos && v->bos >= 0) {
    if (n < cap) out[n] = v->bos;
    ++n;
  }
  for (int64_t i = 0; rc == 0 && i < nf; ++i) {
    if (f[i].token >= 0) {
      if (n < cap) out[n] = f[i].token;
      ++n, prev_special = 1;
      continue;
    }
    /* ' ' in front after a special token (or at the start), every space as U+2581 (3 bytes) */
    char* s = malloc(3 * (f[i].len + 1));
    if (!s) { rc = -1; break; }
    size_t sn = 0;
    if (v->add_space_prefix && prev_special) memcpy(s, "\xe2\x96\x81", 3), sn = 3;
    for (size_t j = 0; j < f[i].len; ++j) {
      char c = text[f[i].off + j];
      if (c == ' ') memcpy(s + sn, "\xe2\x96\x81", 3), sn += 3;
      else s[sn++] = c;
    }
    rc = spm_piece(t, s, sn, out, cap, &n);
    free(s);
    prev_special = 0;
  }
  free(f);
  return rc == 0 ? n : -1;
}
