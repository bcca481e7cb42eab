/* The language-model C API of two GGUF models compiled --shared into one process (liblla.so,
 * libllb.so: tests/integration/gguf/gguf_generate.sh): for each, eval of the prompt then one-token steps on the
 * argmax gives the executable's greedy tokens (and detokenize their text); sampling with top-k 1
 * is that argmax; a seed repeats its draws; the cache cut back to the prompt and the steps
 * evaluated again as one eval give the rows of a fresh model's single eval of everything, and
 * with all_logits(0) that eval's last row alone; bad calls fail with a message.
 * usage: llm_generate PROMPT.npy GREEDY_A.npy TEXT_A GREEDY_B.npy TEXT_B
 *   (i32 prompt [p]; each model's -n tokens after it, i32 [p + k]; the text -n printed) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lla.h"
#include "llb.h"
#include "npy_payload.h"

/* One model's API through pointers, so that one test body serves both libraries (their
 * functions differ only in the model's struct name; the sampling structs share a layout). */
typedef struct {
  const char* name;
  void* (*create)(int);
  void (*destroy)(void*);
  int (*eval)(void*, const int32_t*, int64_t);
  const float* (*logits)(const void*, int64_t*);
  const float* (*last_logits)(const void*);
  int32_t (*sample)(const void*, const lla_sampling*, uint64_t*);
  int64_t (*kv_length)(const void*);
  int (*set_kv_length)(void*, int64_t);
  int (*reset)(void*);
  int (*all_logits)(void*, int);
  int64_t (*detokenize)(const void*, int32_t, char*, int64_t);
  const char* (*last_error)(void);
  int64_t n_vocab;
  int32_t eos;
} llm_api;

#define API(P)                                                           \
  {#P,                                                                   \
   (void* (*)(int))P##_create,                                           \
   (void (*)(void*))P##_destroy,                                         \
   (int (*)(void*, const int32_t*, int64_t))P##_eval,                    \
   (const float* (*)(const void*, int64_t*))P##_logits,                  \
   (const float* (*)(const void*))P##_last_logits,                       \
   (int32_t (*)(const void*, const lla_sampling*, uint64_t*))P##_sample, \
   (int64_t (*)(const void*))P##_kv_length,                              \
   (int (*)(void*, int64_t))P##_set_kv_length,                           \
   (int (*)(void*))P##_reset,                                            \
   (int (*)(void*, int))P##_all_logits,                                  \
   (int64_t (*)(const void*, int32_t, char*, int64_t))P##_detokenize,    \
   P##_last_error,                                                       \
   P##_N_VOCAB,                                                          \
   P##_TOKEN_EOS}

static int fail(const llm_api* a, const char* what) {
  fprintf(stderr, "FAIL %s: %s (%s)\n", a->name, what, a->last_error());
  return 1;
}

static int32_t argmax(const float* row, int64_t n) {
  int32_t best = 0;
  for (int64_t j = 1; j < n; ++j)
    if (row[j] > row[best]) best = (int32_t)j;
  return best;
}

/* n tokens drawn by p from seed, each evaluated after the prompt; into out. */
static int sample_run(const llm_api* a, void* m, const int32_t* prompt, int64_t np, const lla_sampling* p,
                      uint64_t seed, int32_t* out, int n) {
  if (a->reset(m) != 0 || a->eval(m, prompt, np) != 0) return fail(a, "eval of the prompt");
  for (int i = 0; i < n; ++i)
    if ((out[i] = a->sample(m, p, &seed)) < 0 || a->eval(m, &out[i], 1) != 0) return fail(a, "sample and eval");
  return 0;
}

static int test(const llm_api* a, const int32_t* prompt, int64_t np, const int32_t* greedy, int64_t nk,
                const char* text) {
  void* m = a->create(1);
  if (!m) return fail(a, "create");
  int bad = 0;
  /* the prompt, then a step per greedy token: argmax and top-k 1 give the executable's tokens */
  lla_sampling top1 = {0.8f, 1, 0.95f, 0.05f};
  uint64_t rng = 1;
  char got_text[4096] = "";
  size_t len = 0;
  bad |= a->eval(m, prompt, np) != 0 && fail(a, "eval of the prompt");
  for (int64_t k = 0; k < nk && !bad; ++k) {
    int32_t want = greedy[k], top = argmax(a->last_logits(m), a->n_vocab), drawn = a->sample(m, &top1, &rng);
    if (top != want || drawn != want) {
      fprintf(stderr, "FAIL %s step %lld: argmax %d, top-k 1 %d, the executable's %d\n", a->name, (long long)k, top,
              drawn, want);
      bad = 1;
    }
    if (want != a->eos) {
      int64_t n = a->detokenize(m, want, got_text + len, (int64_t)(sizeof got_text - 1 - len));
      bad |= (n < 0 || len + (size_t)n >= sizeof got_text) && fail(a, "detokenize");
      len += n > 0 ? (size_t)n : 0;
    }
    bad |= a->eval(m, &want, 1) != 0 && fail(a, "eval of a step");
  }
  got_text[len] = '\0';
  if (!bad && strcmp(got_text, text) != 0)
    bad = 1, fprintf(stderr, "FAIL %s: detokenize gives '%s', -n printed '%s'\n", a->name, got_text, text);

  /* cut back to the prompt, the first 4 steps as one eval: a fresh model's rows of everything at once */
  int64_t k4 = nk < 4 ? nk : 4, rows = 0, fresh_rows = 0;
  int32_t all[512];
  memcpy(all, prompt, (size_t)np * sizeof *all);
  memcpy(all + np, greedy, (size_t)k4 * sizeof *all);
  void* fresh = a->create(1);
  bad |= (!fresh || a->eval(fresh, all, np + k4) != 0) && fail(a, "a fresh model's eval");
  bad |= (a->set_kv_length(m, np) != 0 || a->kv_length(m) != np || a->eval(m, greedy, k4) != 0) &&
         fail(a, "set_kv_length and eval");
  const float* cut = bad ? NULL : a->logits(m, &rows);
  const float* one = bad ? NULL : a->logits(fresh, &fresh_rows);
  if (cut && one && rows == k4 && fresh_rows == np + k4) {
    double worst = 0, top = 0;
    for (int64_t i = 0; i < k4 * a->n_vocab; ++i) {
      worst = fmax(worst, fabs(cut[i] - one[np * a->n_vocab + i]));
      top = fmax(top, fabs(one[np * a->n_vocab + i]));
    }
    if (worst > 1e-4 * top)
      bad = 1, fprintf(stderr, "FAIL %s: rows after set_kv_length differ by %.3g of %.3g\n", a->name, worst, top);
    /* the last row alone: the same row as the eval of every row */
    int64_t last_rows = 0;
    const float* last = NULL;
    bad |= (a->all_logits(fresh, 0) != 0 || a->set_kv_length(fresh, 0) != 0 || a->eval(fresh, all, np + k4) != 0 ||
            !(last = a->logits(fresh, &last_rows))) &&
           fail(a, "all_logits(0) and eval");
    if (last && last_rows != 1)
      bad = 1, fprintf(stderr, "FAIL %s: %lld rows of logits after all_logits(0)\n", a->name, (long long)last_rows);
    for (int64_t i = 0; last && last_rows == 1 && i < a->n_vocab; ++i)
      worst = fmax(worst, fabs(last[i] - cut[(k4 - 1) * a->n_vocab + i]));
    if (last && worst > 1e-4 * top)
      bad = 1, fprintf(stderr, "FAIL %s: the last row alone differs by %.3g of %.3g\n", a->name, worst, top);
  } else if (!bad) {
    bad = 1, fprintf(stderr, "FAIL %s: %lld and %lld rows of logits, expected %lld and %lld\n", a->name,
                     (long long)rows, (long long)fresh_rows, (long long)k4, (long long)(np + k4));
  }
  if (fresh) a->destroy(fresh);

  /* a seed repeats its draws; another seed draws others */
  lla_sampling p = lla_SAMPLING_DEFAULTS;
  int32_t s1[16], s2[16], s3[16];
  bad |= sample_run(a, m, prompt, np, &p, 7, s1, 16) || sample_run(a, m, prompt, np, &p, 7, s2, 16) ||
         sample_run(a, m, prompt, np, &p, 8, s3, 16);
  if (!bad && (memcmp(s1, s2, sizeof s1) != 0 || memcmp(s1, s3, sizeof s1) == 0))
    bad = 1,
    fprintf(stderr, "FAIL %s: seed 7 twice %s, seed 8 %s\n", a->name, memcmp(s1, s2, sizeof s1) ? "differs" : "agrees",
            memcmp(s1, s3, sizeof s1) ? "differs" : "agrees with seed 7");

  /* bad calls: status and message */
  char c;
  bad |= (a->eval(m, prompt, 0) == 0 || !a->last_error()[0]) && fail(a, "eval of no tokens accepted");
  bad |= (a->detokenize(m, (int32_t)a->n_vocab + 5, &c, 1) != -1 || !a->last_error()[0]) &&
         fail(a, "detokenize past the vocabulary accepted");
  bad |= (a->set_kv_length(m, a->kv_length(m) + 1) == 0) && fail(a, "set_kv_length past the positions held accepted");
  a->destroy(m);
  if (!bad)
    printf(
        "ok   %s C API: prompt %lld + %lld greedy steps (argmax, top-k 1, detokenize), set_kv_length, all_logits, "
        "seeds\n",
        a->name, (long long)np, (long long)nk);
  return bad;
}

static char* read_text(const char* path) {
  FILE* f = fopen(path, "rb");
  char* s = calloc(4096, 1);
  if (f && s) fread(s, 1, 4095, f);
  if (f) fclose(f);
  return s;
}

int main(int argc, char** argv) {
  if (argc != 6) return fprintf(stderr, "usage: llm_generate PROMPT.npy GREEDY_A.npy TEXT_A GREEDY_B.npy TEXT_B\n"), 2;
  llm_api apis[2] = {API(lla), API(llb)};
  size_t pb = 0;
  int32_t* prompt = read_npy_payload(argv[1], &pb);
  int64_t np = (int64_t)(pb / sizeof *prompt);
  int bad = !prompt || np < 1 || np > 256;
  for (int i = 0; i < 2 && !bad; ++i) {
    size_t gb = 0;
    int32_t* greedy = read_npy_payload(argv[2 + 2 * i], &gb);
    char* text = read_text(argv[3 + 2 * i]);
    int64_t ng = (int64_t)(gb / sizeof *greedy);
    if (!greedy || !text || ng <= np || memcmp(greedy, prompt, pb) != 0)
      bad = 1, fprintf(stderr, "FAIL bad arguments\n");
    else
      bad |= test(&apis[i], prompt, np, greedy + np, ng - np, text);
    free(greedy);
    free(text);
  }
  free(prompt);
  return bad;
}
