/* The C API of a GGUF model compiled --shared as libllm.so (tests/integration/gguf/gguf_decode.sh): a prefill, then
 * single-token decode steps on the KV cache, the cache cut back and the steps replayed, a reset
 * and one prefill of everything; every row of logits within 1e-4 of max|ref| of REF.
 * usage: llm_steps TOKENS.npy K REF.npy   (i32 tokens [n]; the last K go one at a time; f32 REF [n, vocab]) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm.h"
#include "npy_payload.h"

static const float* g_ref;
static size_t g_vocab;
static double g_top;

/* Rows [first, first + count) of the model's logits against the reference's. */
static int check_rows(const char* what, llm_model* m, int64_t first, int64_t count) {
  const float* got = llm_output(m, 0);
  double worst = 0;
  for (size_t i = 0; i < (size_t)count * g_vocab; ++i)
    worst = fmax(worst, fabs(got[i] - g_ref[(size_t)first * g_vocab + i]));
  if (worst > 1e-4 * g_top)
    return fprintf(stderr, "FAIL %s: rows %lld..%lld max|diff| %.3g of max|ref| %.3g\n", what, (long long)first,
                   (long long)(first + count - 1), worst, g_top),
           1;
  return 0;
}

/* Runs tokens [first, first + count) as one run. */
static int run(llm_model* m, const int32_t* tokens, int64_t first, int64_t count) {
  if (llm_set_input_shape(m, 0, 1, &count) != 0)
    return fprintf(stderr, "FAIL set_input_shape: %s\n", llm_last_error()), 1;
  memcpy(llm_input(m, 0), tokens + first, (size_t)count * sizeof(int32_t));
  if (llm_run(m) != 0) return fprintf(stderr, "FAIL run: %s\n", llm_last_error()), 1;
  return 0;
}

static int expect_length(llm_model* m, int64_t want) {
  if (llm_kv_length(m) == want) return 0;
  return fprintf(stderr, "FAIL kv_length %lld, expected %lld\n", (long long)llm_kv_length(m), (long long)want), 1;
}

int main(int argc, char** argv) {
  if (argc != 4) return fprintf(stderr, "usage: llm_steps TOKENS.npy K REF.npy\n"), 2;
  size_t tb = 0, rb = 0;
  int32_t* tokens = read_npy_payload(argv[1], &tb);
  float* ref = read_npy_payload(argv[3], &rb);
  int64_t n = (int64_t)(tb / sizeof(int32_t)), k = atoll(argv[2]), p = n - k;
  if (!tokens || !ref || k < 1 || p < 1) return fprintf(stderr, "FAIL bad arguments\n"), 1;
  g_ref = ref, g_vocab = rb / sizeof(float) / (size_t)n;
  for (size_t i = 0; i < (size_t)n * g_vocab; ++i) g_top = fmax(g_top, fabs(ref[i]));
  llm_model* m = llm_create(0);
  if (!m) return fprintf(stderr, "FAIL create: %s\n", llm_last_error()), 1;
  int fail = expect_length(m, 0);
  // A prefill of p tokens, then k decode steps.
  fail |= run(m, tokens, 0, p) || check_rows("prefill", m, 0, p) || expect_length(m, p);
  for (int64_t s = p; s < n && !fail; ++s) fail |= run(m, tokens, s, 1) || check_rows("decode", m, s, 1);
  fail |= expect_length(m, n);
  // Cut back to the prefill: the steps again give the same rows.
  if (llm_set_kv_length(m, n + 1) == 0 || !llm_last_error()[0])
    fail = 1, fprintf(stderr, "FAIL set_kv_length past the end accepted\n");
  fail |= llm_set_kv_length(m, p) != 0 || expect_length(m, p);
  for (int64_t s = p; s < n && !fail; ++s)
    fail |= run(m, tokens, s, 1) || check_rows("decode after set_kv_length", m, s, 1);
  // A new sequence: everything in one prefill.
  fail |= llm_reset(m) != 0 || expect_length(m, 0);
  fail |= run(m, tokens, 0, n) || check_rows("prefill after reset", m, 0, n) || expect_length(m, n);
  llm_destroy(m);
  free(tokens);
  free(ref);
  if (!fail) printf("ok   C API: prefill %lld + %lld decode steps, set_kv_length, reset\n", (long long)p, (long long)k);
  return fail;
}
