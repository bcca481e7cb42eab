/* The language-model role of the artifact's command line: -p, -n and sampling, --tokens-out,
 * --logits-out, --decode, --bench P,N, --chat. tgc_llm_main is the main() tgc emits for a model with a
 * KV cache; other models call tgc_main, and their artifacts carry none of this. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "llm/llm_internal.h"

#define fail tgc_cli_fail

/* -p TEXT: the prompt's tokens (BOS first where the vocabulary adds one, as llama.cpp does) as
 * the token input. */
static int prompt_tokens(const tgc_model_desc* d, const char* text, tgc_npy* feeds) {
  int32_t k = d->kv_position[1];
  if (feeds[k].data) return fail("-p and -i %s both give the tokens", d->buffers[d->inputs[k]].name);
  tgc_tokenizer* t = tgc_tokenizer_create(d->vocab);
  size_t len = strlen(text);
  int64_t cap = (int64_t)(2 * len + 8), n = -1;
  int32_t* ids = malloc((size_t)cap * sizeof *ids);
  int flags = d->vocab->add_bos ? TGC_TOKENIZE_BOS : 0;
  if (t && ids && (n = tgc_tokenize(t, text, len, flags, ids, cap)) > cap) { /* more than room: again */
    int32_t* more = realloc(ids, (size_t)n * sizeof *ids);
    n = more ? tgc_tokenize(t, text, len, flags, ids = more, n) : -1;
  }
  tgc_tokenizer_destroy(t);
  if (n < 0) {
    free(ids);
    return fail("-p: the prompt cannot be tokenized (a byte the vocabulary cannot spell, or out of memory)");
  }
  feeds[k] = (tgc_npy){TGC_I32, 1, {n}, ids, (size_t)n * sizeof *ids};
  return 0;
}

static int last_logits_only(tgc_model* m) { return tgc_llm_all_logits(m, 0) != 0 ? fail("%s", tgc_last_error()) : 0; }

static int bench(tgc_model* m, const tgc_cli_args* a) {
  tgc_llm_bench_result r;
  if (tgc_llm_bench(m, a->bench_prompt, a->bench_gen, a->bench_reps, &r) != 0) {
    free(r.tokens);
    return fail("--bench %lld,%lld: %s", a->bench_prompt, a->bench_gen, tgc_last_error());
  }
  tgc_cli_bench_json_head(m);
  printf(
      ", \"prompt_tokens\": %lld, \"gen\": %lld, \"reps\": %lld, \"prefill_ms\": %.3f, \"prefill_tok_s\": %.2f, "
      "\"time_to_first_token_ms\": %.3f, \"decode_ms_per_tok\": %.3f, \"decode_tok_s\": %.2f, \"greedy_tokens\": [",
      a->bench_prompt, a->bench_gen, a->bench_reps, r.prefill_ms, 1000.0 * (double)a->bench_prompt / r.prefill_ms,
      r.first_token_ms, r.decode_ms_per_tok, r.decode_ms_per_tok > 0 ? 1000.0 / r.decode_ms_per_tok : 0.0);
  for (long long i = 0; i < a->bench_gen; ++i) printf("%s%d", i ? ", " : "", (int)r.tokens[i]);
  printf("]}\n");
  free(r.tokens);
  return 0;
}

/* The new tokens after the prompt's run; the ids and logits rows to their files; speeds on stderr. */
static int generate(tgc_model* m, const tgc_cli_args* a, double t0, double prefill_ms) {
  const tgc_model_desc* d = tgc_desc(m);
  int32_t k = d->kv_position[1], nout = d->num_outputs;
  int64_t np = 0, shape[16];
  if (tgc_input_shape(m, k, shape) == 1) np = shape[0];
  if (a->logits_out && !tgc_llm_logits(m, NULL, NULL)) return fail("--logits-out: %s", tgc_last_error());
  tgc_npy tokens = {TGC_I32, 1, {np}, malloc((size_t)np * sizeof(int32_t)), (size_t)np * sizeof(int32_t)};
  tgc_npy* logits_rows = a->logits_out ? calloc((size_t)nout, sizeof *logits_rows) : NULL;
  tgc_generation gen = {.n_new = a->gen_n > 0 ? a->gen_n : 0,
                        .sampling = a->sampling,
                        .seed = a->seed >= 0 ? (uint64_t)a->seed : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32,
                        .stops = a->stops,
                        .n_stops = a->n_stops,
                        .logits = logits_rows,
                        .start_ms = t0};
  tgc_generation_stats st;
  int rc = 1;
  if (!tokens.data || (a->logits_out && !logits_rows)) {
    fail("out of memory");
  } else {
    memcpy(tokens.data, tgc_input_data(m, k), tokens.nbytes);
    if (tgc_generate(m, &gen, &tokens, &st) < 0 ||
        (a->tokens_out && tgc_npy_write(a->tokens_out, TGC_I32, 1, tokens.shape, tokens.data, tokens.nbytes) != 0) ||
        (a->logits_out && tgc_npy_write(a->logits_out, TGC_F32, logits_rows[0].rank, logits_rows[0].shape,
                                        logits_rows[0].data, logits_rows[0].nbytes) != 0)) {
      fail("%s", tgc_last_error());
    } else {
      fprintf(stderr, "prefill: %lld tokens in %.2f ms (%.2f tok/s); decode: %lld steps in %.2f ms (%.2f tok/s)",
              (long long)np, prefill_ms, 1000.0 * (double)np / prefill_ms, (long long)st.steps, st.decode_ms,
              st.steps ? 1000.0 * (double)st.steps / st.decode_ms : 0.0);
      if (gen.n_new > 0) fprintf(stderr, "; time to first token: %.2f ms", st.first_token_ms);
      if (gen.n_new > 0 && gen.sampling.temp > 0) fprintf(stderr, "; seed %llu", (unsigned long long)gen.seed);
      fputc('\n', stderr);
      rc = 0;
    }
  }
  free(tokens.data);
  for (int32_t i = 0; logits_rows && i < nout; ++i) free(logits_rows[i].data);
  free(logits_rows);
  return rc;
}

static int decode(tgc_model* m, const tgc_cli_args* a, tgc_npy* rows) {
  tgc_npy steps = {0};
  int rc = tgc_npy_read(a->decode_path, &steps) != 0 || tgc_decode_steps(m, &steps, rows) != 0
               ? fail("%s", tgc_last_error())
               : 0;
  free(steps.data);
  return rc;
}

static int chat(tgc_model* m, const tgc_cli_args* a) {
  tgc_chat_options o = {a->system,
                        a->chat_template,
                        a->gen_n,
                        a->sampling,
                        a->seed >= 0 ? (uint64_t)a->seed : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32,
                        a->stops,
                        a->n_stops,
                        a->tokens_out};
  return tgc_chat(m, &o, stdin) != 0 ? fail("%s", tgc_last_error()) : 0;
}

static const tgc_cli_llm llm_role = {prompt_tokens, last_logits_only, bench, generate, decode, chat};

int tgc_llm_main(const tgc_model_desc* desc, int argc, char** argv) {
  return tgc_cli_main(desc, argc, argv, &llm_role);
}
