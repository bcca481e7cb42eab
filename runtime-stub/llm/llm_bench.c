/* --bench P,N[,R]: a language model's speed as llama.cpp's bench measures it (llama_bench in
 * tools/gguf-ref): a prefill of P fixed tokens, then N greedy single-token decode steps; medians
 * over R repetitions after one warm-up (a prefill and a step, which touch the weights and the
 * arena). The prompt is llama_bench's, token i = 1 + (i * 7919) % (n_vocab - 1), so that both
 * run the same tokens and their greedy tokens can be compared. */
#include <stdlib.h>

#include "llm/llm_internal.h"

static int32_t greedy_next(const tgc_model* m, int64_t vocab) {
  const float* last = tgc_llm_last_logits(m);
  return last ? tgc_argmax(last, vocab) : -1;
}

/* One prefill and n_gen steps from an empty cache: step times into step_ms, the tokens run into
 * tokens (NULL: not kept). */
static int one_rep(tgc_model* m, int64_t vocab, const int32_t* prompt, int64_t n_prompt, int64_t n_gen, int32_t* tokens,
                   double* prefill_ms, double* first_ms, double* step_ms) {
  if (tgc_set_kv_length(m, 0) != 0) return -1;
  double t0 = tgc_now_ms();
  if (tgc_llm_eval(m, prompt, n_prompt) != 0) return -1;
  *prefill_ms = tgc_now_ms() - t0;
  int32_t next = greedy_next(m, vocab);
  *first_ms = tgc_now_ms() - t0;
  for (int64_t k = 0; k < n_gen && next >= 0; ++k) {
    if (tokens) tokens[k] = next;
    double t1 = tgc_now_ms();
    if (tgc_llm_eval(m, &next, 1) != 0) return -1;
    step_ms[k] = tgc_now_ms() - t1;
    next = greedy_next(m, vocab);
  }
  return next < 0 ? -1 : 0;
}

int tgc_llm_bench(tgc_model* m, int64_t n_prompt, int64_t n_gen, int64_t reps, tgc_llm_bench_result* r) {
  *r = (tgc_llm_bench_result){0};
  int64_t vocab = 0;
  /* as llama.cpp's bench asks for them: the logits of each eval's last token */
  if (tgc_token_input(m, "--bench P,N") < 0 || tgc_llm_all_logits(m, 0) != 0 || !tgc_llm_logits(m, NULL, &vocab))
    return -1;
  int32_t* prompt = malloc((size_t)n_prompt * sizeof *prompt);
  double* times = malloc((size_t)(3 * reps + n_gen) * sizeof *times); /* prefill, first token, decode per rep; steps */
  r->tokens = malloc((size_t)n_gen * sizeof *r->tokens + 1);
  if (!prompt || !times || !r->tokens) {
    free(prompt), free(times);
    return tgc_set_error("out of memory"), -1;
  }
  for (int64_t i = 0; i < n_prompt; ++i) prompt[i] = (int32_t)(1 + (i * 7919) % (vocab - 1));
  double *prefill = times, *first = times + reps, *decode = times + 2 * reps, *steps = times + 3 * reps;
  int rc = one_rep(m, vocab, prompt, n_prompt, n_gen < 1 ? n_gen : 1, NULL, prefill, first, steps); /* warm-up */
  for (int64_t i = 0; i < reps && rc == 0; ++i) {
    rc = one_rep(m, vocab, prompt, n_prompt, n_gen, i == 0 ? r->tokens : NULL, &prefill[i], &first[i], steps);
    decode[i] = n_gen > 0 ? tgc_median(steps, n_gen) : 0;
  }
  if (rc == 0) {
    r->prefill_ms = tgc_median(prefill, reps);
    r->first_token_ms = tgc_median(first, reps);
    r->decode_ms_per_tok = tgc_median(decode, reps);
  }
  free(prompt);
  free(times);
  return rc;
}
