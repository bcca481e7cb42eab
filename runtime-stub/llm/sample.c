/* The sampler chain of sample.h. Every stage keeps a prefix of the tokens sorted by logit, so the
 * chain sorts once: the k best (a heap, O(n log k)) when top-k is on, else every token that
 * min-p would keep. Top-p's probabilities are over what top-k kept (over all tokens when top-k
 * is off), as in llama.cpp, whatever min-p drops later. */
#include "llm/sample.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  float logit;
  int32_t id;
} candidate;

/* a ranks below b: a smaller logit, or the same logit and a larger id (ties go to the first token) */
static int worse(candidate a, candidate b) { return a.logit < b.logit || (a.logit == b.logit && a.id > b.id); }

static int best_first(const void* x, const void* y) {
  candidate a = *(const candidate*)x, b = *(const candidate*)y;
  return worse(b, a) ? -1 : worse(a, b);
}

int32_t tgc_argmax(const float* logits, int64_t n) {
  int32_t best = 0;
  for (int64_t j = 1; j < n; ++j)
    if (logits[j] > logits[best]) best = (int32_t)j;
  return best;
}

/* splitmix64: a uniform double in [0, 1) from the top 53 bits */
static double uniform(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

/* The k best of logits[0, n) into c[0, k), as a min-heap (the worst kept at c[0]). */
static void keep_best(const float* logits, int64_t n, candidate* c, int64_t k) {
  for (int64_t j = 0; j < n; ++j) {
    candidate x = {logits[j], (int32_t)j};
    int64_t i;
    if (j < k) { /* sift up */
      for (i = j; i > 0 && worse(x, c[(i - 1) / 2]); i = (i - 1) / 2) c[i] = c[(i - 1) / 2];
    } else if (worse(c[0], x)) { /* replace the worst, sift down */
      for (i = 0;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = l;
        if (l >= k) break;
        if (r < k && worse(c[r], c[l])) m = r;
        if (!worse(c[m], x)) break;
        c[i] = c[m], i = m;
      }
    } else {
      continue;
    }
    c[i] = x;
  }
}

int32_t tgc_sample(const float* logits, int64_t n, const tgc_sampling* p, uint64_t* rng) {
  if (p->temp <= 0 || n <= 1) return tgc_argmax(logits, n);
  float top = logits[tgc_argmax(logits, n)];
  /* min-p keeps the logits within log(min_p) of the best one */
  float min_logit = p->min_p > 0 ? top + logf(p->min_p) : -INFINITY;
  int top_k = p->top_k > 0 && p->top_k < n;
  int64_t cap = top_k ? p->top_k : n, kept = 0;
  candidate* c = malloc((size_t)cap * sizeof *c);
  if (!c) return -1;
  double total = 0; /* top-p's softmax denominator, relative to exp(top) */
  if (top_k) {
    keep_best(logits, n, c, cap);
    for (kept = 0; kept < cap; ++kept) total += exp((double)c[kept].logit - top);
  } else {
    for (int64_t j = 0; j < n; ++j) {
      total += exp((double)logits[j] - top);
      if (logits[j] >= min_logit) c[kept++] = (candidate){logits[j], (int32_t)j};
    }
  }
  qsort(c, (size_t)kept, sizeof *c, best_first);
  if (p->top_p < 1) { /* the shortest prefix reaching top_p (at least one token) */
    double sum = 0;
    for (int64_t i = 0; i < kept; ++i)
      if ((sum += exp((double)c[i].logit - top) / total) >= p->top_p) {
        kept = i + 1;
        break;
      }
  }
  int64_t above = 1;
  while (above < kept && c[above].logit >= min_logit) ++above;
  kept = above;
  /* temperature, then a draw from the softmax of what is left */
  double *w = malloc((size_t)kept * sizeof *w), sum = 0;
  if (!w) return free(c), -1;
  for (int64_t i = 0; i < kept; ++i) sum += w[i] = exp(((double)c[i].logit - top) / p->temp);
  double r = uniform(rng) * sum;
  int64_t pick = 0;
  while (pick + 1 < kept && (r -= w[pick]) >= 0) ++pick;
  int32_t id = c[pick].id;
  free(w);
  free(c);
  return id;
}
