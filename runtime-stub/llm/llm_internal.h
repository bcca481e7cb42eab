/* The language-model runtime's internals (llm/): KV-cache runs, generation, text streaming.
 * Runtime-internal, not part of the ABI. */
#ifndef TGC_LLM_INTERNAL_H
#define TGC_LLM_INTERNAL_H
#include "core/runtime_internal.h"
#include "llm/sample.h"
#include "llm/tokenizer.h"

/* ---- decode steps (decode_steps.c) ---- */
/* After a run: one run per token of `steps` (each extends the KV cache), every output's rows of
 * the earlier run and of each step appended to acc[k] (zeroed tgc_npy per output; the caller
 * frees data). 0, or -1 with the error set. */
int tgc_decode_steps(tgc_model* m, const tgc_npy* steps, tgc_npy* acc);
/* Appends the model's current outputs to acc[k] along dim 0 (acc[k].data NULL: starts it). 0 or -1. */
int tgc_append_outputs(tgc_model* m, tgc_npy* acc);

/* --bench P,N[,R] (llm_bench.c): medians over R repetitions of a prefill of P tokens and N greedy
 * steps. 0, or -1 with the error set. */
typedef struct {
  double prefill_ms, first_token_ms, decode_ms_per_tok;
  int32_t* tokens; /* the N tokens run, greedy (malloc'd: the caller frees) */
} tgc_llm_bench_result;
int tgc_llm_bench(tgc_model* m, int64_t n_prompt, int64_t n_gen, int64_t reps, tgc_llm_bench_result* r);

/* ---- generation (generate.c, text_stream.c) ---- */
/* tgc_token_piece (a token's text): tokenizer.h */

/* Text streamed to `out` (text_stream.c's comment says what waits). Start it as
 * {out, stops, n_stops} (non-empty stop strings), the rest zero. */
typedef struct {
  FILE* out;
  const char* const* stops;
  int32_t n_stops;
  char* held; /* text not printed yet */
  size_t n, cap;
} tgc_text_stream;
/* Appends bytes and prints what can be printed. Returns 1 when the text now holds a stop string
 * (printed up to it: the text is done), 0, or -1 with the error set. */
int tgc_stream_push(tgc_text_stream* s, const char* bytes, size_t n);
/* Prints what waits and frees the stream. */
void tgc_stream_end(tgc_text_stream* s);

typedef struct {
  int64_t n_new;            /* tokens to generate (0: none) */
  tgc_sampling sampling;    /* temp <= 0: greedy */
  uint64_t seed;            /* the sampler's random state at the first token */
  const char* const* stops; /* --stop strings (non-empty), n_stops of them */
  int32_t n_stops;
  tgc_npy* logits; /* NULL, or --logits-out: acc for tgc_append_outputs, one row per token */
  double start_ms; /* tgc_now_ms() when the prompt's run began: the time to first token */
} tgc_generation;
typedef struct {
  int64_t steps;         /* one-token runs */
  double decode_ms;      /* their time */
  double first_token_ms; /* from start_ms to the first new token */
} tgc_generation_stats;
/* After the prompt's run: up to g->n_new tokens, each drawn from the last logits row, appended
 * to tokens (i32 [n], the prompt's ids on entry); all but the last run as one-token steps (the
 * last too with g->logits, so that every token has its row: row i is what followed tokens[0..i]).
 * With a tokenizer their text streams to stdout, and EOS or a stop string ends it. Returns the
 * steps run, or -1 with the error set. */
int64_t tgc_generate(tgc_model* m, const tgc_generation* g, tgc_npy* tokens, tgc_generation_stats* stats);

/* ---- chat (chat.c) ---- */
typedef struct {
  const char* system;        /* --system TEXT, or NULL */
  const char* template_name; /* --chat-template NAME (chat_template.h), or NULL: the model's */
  int64_t n_max;             /* -n: tokens per reply (-1: until the end of the turn or a full cache) */
  tgc_sampling sampling;
  uint64_t seed;
  const char* const* stops; /* --stop strings, n_stops of them */
  int32_t n_stops;
  const char* tokens_out; /* NULL, or where the tokens the cache holds at the end go (i32[n]) */
} tgc_chat_options;
/* Reads user turns from `in` (a line each; "/reset" clears the conversation) until its end, each
 * reply streamed to stdout; a line per turn on stderr. 0, or -1 with the error set. */
int tgc_chat(tgc_model* m, const tgc_chat_options* o, FILE* in);

#endif
