/* The command line of generated executables (cli/), runtime-internal. tgc_main parses the options
 * through a table (options.c) into tgc_cli_args, then runs named steps (main.c). What needs the
 * language-model runtime (tokenizer, generation, --bench P,N, --decode) goes through tgc_cli_llm,
 * which llm/llm_cli.c supplies: an artifact without a KV cache is linked without it. */
#ifndef TGC_CLI_H
#define TGC_CLI_H
#include "core/runtime_internal.h"
#include "llm/sample.h" /* the sampling options' type and defaults */

/* --bench warms up for WARMUP_RUNS runs (the CPU runtime calibrates its thread split in its first
 * twelve) and at least WARMUP_MS, as tools/ort/ort_run.js does for onnxruntime. */
#define TGC_CLI_WARMUP_RUNS 12
#define TGC_CLI_WARMUP_MS 250.0

typedef struct {
  const tgc_model_desc* desc;
  int info, help;
  int chat;                                      /* --chat */
  const char *system, *chat_template;            /* --system, --chat-template */
  long long bench, threads, batch;               /* --bench N, --threads, --batch */
  long long bench_prompt, bench_gen, bench_reps; /* --bench P,N[,R] */
  const char *out_dir, *decode_path, *prompt, *tokens_out, *logits_out;
  long long gen_n;       /* -n N; -1: not given */
  tgc_sampling sampling; /* --temp, --top-k, --top-p, --min-p */
  long long seed;        /* -1: from the clock */
  const char** stops;    /* --stop, n_stops of them */
  int32_t n_stops;
  const char* sampling_flag;       /* the first sampling option or --stop given */
  tgc_npy* feeds;                  /* -i, per input (data NULL where not given) */
  int n_given;                     /* inputs given (-p counts as one) */
  int32_t batch_from;              /* the first -i input holding the batch dim */
  int64_t dim_value[TGC_MAX_VARS]; /* --dim NAME=N per run-time dim, 0 where not given */
} tgc_cli_args;

/* What the language-model role adds. Each returns 0, or 1 after printing the error. */
typedef struct {
  /* -p TEXT: the prompt's tokens as the token input */
  int (*prompt_tokens)(const tgc_model_desc* d, const char* text, tgc_npy* feeds);
  /* after create, before the inputs: generation reads each eval's last logits row only */
  int (*last_logits_only)(tgc_model* m);
  int (*bench)(tgc_model* m, const tgc_cli_args* a); /* --bench P,N[,R]: its JSON line */
  /* after the prompt's run, which began at t0 and took prefill_ms: -n, --tokens-out, --logits-out */
  int (*generate)(tgc_model* m, const tgc_cli_args* a, double t0, double prefill_ms);
  /* --decode: one run per token of a.decode_path; rows[k] gathers output k's rows */
  int (*decode)(tgc_model* m, const tgc_cli_args* a, tgc_npy* rows);
  /* --chat: the conversation on stdin */
  int (*chat)(tgc_model* m, const tgc_cli_args* a);
} tgc_cli_llm;

/* tgc_main with the language-model role (NULL: without it). */
int tgc_cli_main(const tgc_model_desc* desc, int argc, char** argv, const tgc_cli_llm* llm);

/* ---- shared by the steps (main.c) ---- */
int tgc_cli_fail(const char* fmt, ...) TGC_PRINTF(1, 2); /* "PROG: error: ..." on stderr; returns 1 */
void tgc_cli_set_prog(const tgc_model_desc* d, int argc, char** argv);
/* {"model": ..., "backend": ..., "device": ..., "batch": ..., "threads": N: each --bench JSON line's start */
void tgc_cli_bench_json_head(const tgc_model* m);

/* ---- options (options.c) ---- */
/* Parses argv into a (zeroed by the caller but for desc, feeds and stops). 0; 1 after printing an
 * error; 2 when -h/--help was given (the parse stops there). */
int tgc_cli_parse(tgc_cli_args* a, int argc, char** argv);
/* Names and file-safe names of inputs and outputs ([A-Za-z0-9._-], others replaced by '_'). */
char* tgc_cli_file_safe(const char* name); /* malloc'd, NULL when out of memory */
int tgc_cli_same_safe(const char* name, const char* query);
/* "f32[1,3,224]"; names, when given, replace the sizes of the dims that have one (run-time dims). */
void tgc_cli_type_str(char* out, size_t cap, int32_t dtype, int32_t rank, const int64_t* shape,
                      const char* const* names);
/* The names of b's run-time dims (batch, VARs), NULL for fixed dims; returns names. */
const char* const* tgc_cli_dim_names(const tgc_model_desc* d, const tgc_buffer* b, const char* names[16]);

#endif
