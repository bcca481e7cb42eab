/* Generation on the command line (-n N): after the prompt's run, each step draws a token from the
 * last logits row (the argmax unless sampling is asked for) and runs it as one token on the KV
 * cache. With a tokenizer the new tokens' text streams to stdout (text_stream.c), and EOS or a
 * stop string ends it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm_internal.h"

/* Streams token id's text; 1 when it completes a stop string, 0, or -1 with the error set. */
static int stream_token(tgc_text_stream* text, const struct tgc_vocab* v, int32_t id) {
  if (id >= v->n_tokens) return 0; /* logits past the vocabulary's tokens: no text */
  char local[256];
  int64_t n = tgc_token_piece(v, id, local, sizeof local);
  char* bytes = n > (int64_t)sizeof local ? malloc((size_t)n) : local;
  if (n < 0 || !bytes) return tgc_set_error("out of memory for a token's text"), -1;
  if (bytes != local) tgc_token_piece(v, id, bytes, n);
  int r = tgc_stream_push(text, bytes, (size_t)n);
  if (bytes != local) free(bytes);
  return r;
}

int64_t tgc_generate(tgc_model* m, const tgc_generation* g, tgc_npy* tokens, tgc_generation_stats* stats) {
  const tgc_model_desc* d = tgc_desc(m);
  const struct tgc_vocab* v = d->vocab;
  *stats = (tgc_generation_stats){0};
  if (g->n_new > 0 && tgc_token_input(m, "-n") < 0) return -1;
  int64_t rows = g->n_new > 0 ? d->var_max[d->kv_position[0]] : 0;
  if (g->n_new > 0 && tgc_kv_length(m) + g->n_new - 1 > rows) { /* say so before any text, not at the cache's end */
    tgc_set_error(
        "-n %lld: %lld positions held and %lld new tokens need %lld cache rows, the model has %lld (compile with a "
        "larger --ctx)",
        (long long)g->n_new, (long long)tgc_kv_length(m), (long long)g->n_new,
        (long long)(tgc_kv_length(m) + g->n_new - 1), (long long)rows);
    return -1;
  }
  int32_t* ids = realloc(tokens->data, tokens->nbytes + (size_t)g->n_new * sizeof(int32_t));
  if (!ids) return tgc_set_error("out of memory"), -1;
  tokens->data = ids;
  if (g->logits && tgc_append_outputs(m, g->logits) != 0) return -1; /* the prompt's rows */
  tgc_text_stream text = {stdout, g->stops, g->n_stops, NULL, 0, 0};
  uint64_t rng = g->seed;
  int failed = 0;
  for (int64_t s = 0; s < g->n_new; ++s) {
    int32_t next = tgc_llm_sample(m, &g->sampling, &rng);
    if (next < 0) {
      failed = 1;
      break;
    }
    if (s == 0) stats->first_token_ms = tgc_now_ms() - g->start_ms;
    ids[tokens->shape[0]++] = next;
    tokens->nbytes += sizeof(int32_t);
    int stop = v && next == v->eos;
    if (v && !stop && (stop = stream_token(&text, v, next)) < 0) {
      failed = 1;
      break;
    }
    int last = stop || s + 1 == g->n_new;
    /* the last token needs no run, unless its logits row is wanted and the cache has room */
    if (last && (!g->logits || tgc_kv_length(m) >= rows)) break;
    double t0 = tgc_now_ms();
    if (tgc_llm_eval(m, &next, 1) != 0) {
      failed = 1;
      break;
    }
    stats->decode_ms += tgc_now_ms() - t0;
    ++stats->steps;
    if (g->logits && tgc_append_outputs(m, g->logits) != 0) {
      failed = 1;
      break;
    }
    if (last) break;
  }
  if (v && g->n_new > 0) { /* what waited for a stop string is text after all */
    tgc_stream_end(&text);
    fputc('\n', stdout);
  }
  return failed ? -1 : stats->steps;
}
