/* The sampler chain (runtime-stub/llm/sample.c) on hand-made logits: each stage keeps what llama.cpp's
 * would, in llama.cpp's order (top-p's probabilities over what top-k kept), the draws follow the
 * kept tokens' softmax at the temperature, and a seed repeats its draws.
 * usage: gguf_sample   (exit 0 when every check passes) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "llm/sample.h"

#define DRAWS 4000
static int g_fail;

static void check(int ok, const char* what) {
  if (!ok) g_fail = 1;
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
}

/* Frequencies of DRAWS draws from logits[0, n) into freq[0, n). */
static void draw_many(const float* logits, int n, tgc_sampling p, uint64_t seed, double* freq) {
  for (int i = 0; i < n; ++i) freq[i] = 0;
  for (int i = 0; i < DRAWS; ++i) freq[tgc_sample(logits, n, &p, &seed)] += 1.0 / DRAWS;
}

/* freq within 0.03 of want (4000 draws: a standard error under 0.008). */
static int near(const double* freq, const double* want, int n) {
  for (int i = 0; i < n; ++i)
    if (fabs(freq[i] - want[i]) > 0.03) return 0;
  return 1;
}

int main(void) {
  /* probabilities 0.5, 0.3, 0.15, 0.05 */
  const float probs[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
  const float ramp[4] = {0, 1, 2, 3};
  double f[1000];
  uint64_t seed = 7;
  tgc_sampling greedy = {0, 40, 0.95f, 0.05f};
  check(tgc_sample(ramp, 4, &greedy, &seed) == 3 && seed == 7, "temp 0: the argmax, the random state untouched");

  draw_many(probs, 4, (tgc_sampling){1, 0, 1, 0}, 1, f);
  check(near(f, (double[]){0.5, 0.3, 0.15, 0.05}, 4), "temp 1, every stage off: the softmax");
  draw_many(ramp, 4, (tgc_sampling){1, 1, 1, 0}, 2, f);
  check(f[3] > 0.9999, "top-k 1: greedy");
  draw_many(ramp, 4, (tgc_sampling){1, 2, 1, 0}, 3, f);
  check(near(f, (double[]){0, 0, 1 / (1 + exp(1)), exp(1) / (1 + exp(1))}, 4),
        "top-k 2: the two best, by their softmax");
  draw_many(probs, 4, (tgc_sampling){1, 0, 0.82f, 0}, 4, f);
  check(near(f, (double[]){0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}, 4), "top-p 0.82: the three reaching it");
  draw_many(probs, 4, (tgc_sampling){1, 3, 0.82f, 0}, 5, f);
  check(near(f, (double[]){0.625, 0.375, 0, 0}, 4),
        "top-k 3, top-p 0.82: top-p's probabilities are over top-k's three");
  draw_many(probs, 4, (tgc_sampling){1, 0, 1, 0.2f}, 6, f);
  check(near(f, (double[]){0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}, 4), "min-p 0.2: those at least 0.1 likely");
  draw_many(probs, 4, (tgc_sampling){1, 3, 1, 0.4f}, 6, f);
  check(near(f, (double[]){0.625, 0.375, 0, 0}, 4), "top-k 3, min-p 0.4: those at least 0.2 likely");
  draw_many(ramp, 4, (tgc_sampling){2, 2, 1, 0}, 8, f);
  check(near(f, (double[]){0, 0, 1 / (1 + exp(0.5)), exp(0.5) / (1 + exp(0.5))}, 4),
        "temp 2: the softmax of logits / 2");

  /* a vocabulary's worth: top-k's heap keeps exactly the k best */
  float many[1000];
  for (int i = 0; i < 1000; ++i) many[i] = (float)((i * 7919) % 1000) / 100; /* 0 to 9.99, shuffled */
  float tenth = 0;                                                           /* the 10th largest */
  for (int i = 0; i < 1000; ++i) {
    int above = 0;
    for (int j = 0; j < 1000; ++j) above += many[j] > many[i];
    if (above == 9) tenth = many[i];
  }
  draw_many(many, 1000, (tgc_sampling){1e6f, 10, 1, 0}, 9, f);
  int kept = 1;
  for (int i = 0; i < 1000; ++i) kept &= many[i] >= tenth ? f[i] > 0.05 : f[i] == 0;
  check(kept, "top-k 10 of 1000 logits: the ten best, each drawn at a high temperature");

  /* seeds */
  tgc_sampling p = {1, 0, 1, 0};
  uint64_t a = 42, b = 42, c = 43;
  int same = 1, differ = 0;
  for (int i = 0; i < 32; ++i) {
    int32_t x = tgc_sample(many, 1000, &p, &a), y = tgc_sample(many, 1000, &p, &b), z = tgc_sample(many, 1000, &p, &c);
    same &= x == y, differ |= x != z;
  }
  check(same && differ, "the same seed draws the same tokens, another seed others");
  return g_fail;
}
