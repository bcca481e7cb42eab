/* tgc_main: the command line of generated executables, as named steps over the parsed options
 * (cli.h). tgc_llm_main (llm/llm_cli.c) is the same with the language-model role. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/cli.h"
#include "llm/tokenizer.h" /* tgc_vocab_kind, for --info */
#include "tgc_timing.h"    /* tgc_device_name */

#define fail tgc_cli_fail

static const char* g_prog = "tgc-model";

void tgc_cli_set_prog(const tgc_model_desc* d, int argc, char** argv) {
  if (argc > 0 && argv[0] && argv[0][0]) {
    const char* slash = strrchr(argv[0], '/');
    g_prog = slash ? slash + 1 : argv[0];
  } else if (d && d->name) {
    g_prog = d->name;
  }
}

int tgc_cli_fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: error: ", g_prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

/* getrusage's peak resident set, in MiB (Linux reports KiB). */
static double peak_rss_mb(void) {
  struct rusage u;
  return getrusage(RUSAGE_SELF, &u) == 0 ? (double)u.ru_maxrss / 1024.0 : 0.0;
}

static void json_str(FILE* f, const char* s) {
  fputc('"', f);
  for (; s && *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

/* Deterministic inputs: splitmix64, one stream per input (seed = input index). Floats are uniform in
 * [-1, 1) on a 2^-23 grid; integers are in [0, 4); bools are 0/1. */
static uint64_t splitmix64(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int64_t numel(int rank, const int64_t* dims) {
  int64_t n = 1;
  for (int k = 0; k < rank; ++k) n *= dims[k];
  return n;
}

static void fill_random(void* data, const tgc_buffer* b, int64_t n, uint64_t seed) {
  uint64_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = splitmix64(&s);
    float f = (float)((double)(r >> 40) * (1.0 / 8388608.0) - 1.0); /* 24 bits -> [-1, 1) */
    uint64_t k = r >> 62;
    switch (b->dtype) {
      case TGC_F32: ((float*)data)[i] = f; break;
      case TGC_F64: ((double*)data)[i] = f; break;
      case TGC_F16: ((uint16_t*)data)[i] = tgc_float_to_half(f); break;
      case TGC_BF16: {
        uint32_t x;
        memcpy(&x, &f, 4);
        ((uint16_t*)data)[i] = (uint16_t)(x >> 16); /* truncated */
        break;
      }
      case TGC_BOOL: ((uint8_t*)data)[i] = (uint8_t)(r >> 63); break;
      case TGC_I8:
      case TGC_U8: ((uint8_t*)data)[i] = (uint8_t)k; break;
      case TGC_I16:
      case TGC_U16: ((uint16_t*)data)[i] = (uint16_t)k; break;
      case TGC_I32:
      case TGC_U32: ((uint32_t*)data)[i] = (uint32_t)k; break;
      case TGC_I64:
      case TGC_U64: ((uint64_t*)data)[i] = k; break;
      default: break;
    }
  }
}

static double checksum(const void* data, const tgc_buffer* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    switch (b->dtype) {
      case TGC_F32: s += ((const float*)data)[i]; break;
      case TGC_F64: s += ((const double*)data)[i]; break;
      case TGC_F16: s += tgc_half_to_double(((const uint16_t*)data)[i]); break;
      case TGC_BF16: {
        uint32_t x = (uint32_t)((const uint16_t*)data)[i] << 16;
        float f;
        memcpy(&f, &x, 4);
        s += f;
        break;
      }
      case TGC_BOOL: s += ((const uint8_t*)data)[i] != 0; break;
      case TGC_I8: s += ((const int8_t*)data)[i]; break;
      case TGC_I16: s += ((const int16_t*)data)[i]; break;
      case TGC_I32: s += ((const int32_t*)data)[i]; break;
      case TGC_I64: s += (double)((const int64_t*)data)[i]; break;
      case TGC_U8: s += ((const uint8_t*)data)[i]; break;
      case TGC_U16: s += ((const uint16_t*)data)[i]; break;
      case TGC_U32: s += ((const uint32_t*)data)[i]; break;
      case TGC_U64: s += (double)((const uint64_t*)data)[i]; break;
      default: break;
    }
  }
  return s;
}

/* {"model": ..., "backend": ..., "device": ..., "batch": ..., "threads": N: the start of each --bench JSON line. */
void tgc_cli_bench_json_head(const tgc_model* m) {
  const tgc_model_desc* d = m->desc;
  printf("{\"model\": ");
  json_str(stdout, d->name);
  printf(", \"backend\": \"%s\"", d->backend->name);
  const char* device = tgc_device_name(m);
  if (device[0]) {
    printf(", \"device\": ");
    json_str(stdout, device);
  }
  if (d->batch_dim) printf(", \"batch\": %lld", (long long)m->batch);
  printf(", \"threads\": %d, \"peak_rss_mb\": %.1f", m->num_threads, peak_rss_mb());
  if (m->backend->device_bytes) printf(", \"device_mb\": %.1f", (double)m->backend->device_bytes(m->be) / 1e6);
}

/* Before tgc_create has validated it: a description of another ABI has no backend pointer there. */
static const char* backend_name(const tgc_model_desc* d) {
  return d->abi_version == TGC_ABI_VERSION && d->backend && d->backend->name ? d->backend->name : "?";
}

static void usage(const tgc_model_desc* d) {
  printf(
      "%s - model '%s' compiled by tgc (%s backend)\n\n"
      "usage: %s [options]\n"
      "  -i, --input NAME=FILE.npy  input NAME (its ONNX name, or that name with every character outside\n"
      "                             [A-Za-z0-9._-] replaced by '_') from a .npy file; dtype and shape must\n"
      "                             match the model. Give all inputs, or none for deterministic random ones.\n"
      "  -o, --output DIR           write DIR/<file-safe output name>.npy for each output\n"
      "  --bench N                  time N runs after %d warm-up runs and at least %.0f ms of them (a KV cache: each\n"
      "                             from empty); the last line is JSON\n"
      "                             {\"median_ms\", \"min_ms\", \"mean_ms\", \"max_ms\", \"iters\", \"threads\", ...}\n"
      "  --bench P,N[,R]            models with a KV cache: a prefill of P tokens (llama_bench's ids), then N greedy\n"
      "                             one-token steps; medians of R runs (default 3) after a warm-up; one JSON line\n"
      "                             {\"prefill_tok_s\", \"decode_tok_s\", \"prefill_ms\", \"decode_ms_per_tok\",\n"
      "                             \"time_to_first_token_ms\", \"threads\", \"peak_rss_mb\", \"greedy_tokens\", ...}\n"
      "  --threads N                CPU threads (default: one per physical core)\n"
      "  --batch N                  batch size of a model with a run-time batch dim, for random inputs\n"
      "                             (default 1; with -i the files give it)\n"
      "  --dim NAME=N               size of a run-time dim, for random inputs (default: its upper bound;\n"
      "                             with -i the files give it)\n"
      "  -p, --prompt TEXT          models with a tokenizer: the tokens of TEXT (BOS first where the model adds one)\n"
      "  -n, --n-predict N          models with a KV cache: after the run, N new tokens, each run as one step; with a\n"
      "                             tokenizer their text streams to stdout (EOS stops); speeds go to stderr\n"
      "  --temp T                   sample the new tokens (llama.cpp's chain: top-k, top-p, min-p, temperature, "
      "draw);\n"
      "                             T <= 0: greedy, the argmax (default 0)\n"
      "  --top-k K                  keep the K most likely tokens (default %d; 0: all)\n"
      "  --top-p P                  then the fewest whose probabilities add up to P (default %.2f; 1: all)\n"
      "  --min-p M                  then those at least M times as likely as the most likely (default %.2f; 0: all)\n"
      "  --seed S                   the draw's random seed: a seed repeats its tokens (default: from the clock, on "
      "stderr)\n"
      "  --stop STR                 end the text at the first STR it holds, which is not printed (repeatable)\n"
      "  --tokens-out FILE.npy      the run's tokens and the generated ones, i32[n]\n"
      "  --logits-out FILE.npy      the logits that followed each of those tokens, f32[n, n_vocab] (the prompt's "
      "rows;\n"
      "                             then each new token's: the last one is run too, for its row)\n"
      "  --decode FILE.npy          models with a KV cache: after the run, one run per token of FILE (i32[n]),\n"
      "                             each after the previous; outputs hold the run's rows then one per step\n"
      "  --chat                     models with a tokenizer: a conversation, one user turn per line of stdin,\n"
      "                             rendered by the model's chat template; each reply streams to stdout until\n"
      "                             the template's end-of-turn token or EOS (-n N: at most N tokens; sampling\n"
      "                             options and --stop apply). The history stays in the KV cache: only each\n"
      "                             turn's new tokens run. A full cache drops the oldest turns and runs the\n"
      "                             system message and the recent turns again. '/reset' clears the conversation,\n"
      "                             end of input ends it; --tokens-out FILE.npy: the tokens the cache holds then\n"
      "  --system TEXT              with --chat: the system message\n"
      "  --chat-template NAME       with --chat: a template by llama.cpp's name instead of the file's (chatml,\n"
      "                             llama2, llama2-sys, mistral-v1, mistral-v3, mistral-v7, phi3, phi4, gemma, "
      "llama3)\n"
      "  --info                     print the model's inputs, outputs and memory sizes\n"
      "  -h, --help                 this text\n\n"
      "Without -o, prints each output's name, dtype, shape and checksum (sum of its elements).\n"
      "bf16 tensors are read and written as raw '<u2' arrays. Errors: one line on stderr, exit status 1.\n",
      g_prog, d->name ? d->name : "?", backend_name(d), g_prog, TGC_CLI_WARMUP_RUNS, TGC_CLI_WARMUP_MS,
      TGC_SAMPLING_TOP_K, (double)TGC_SAMPLING_TOP_P, (double)TGC_SAMPLING_MIN_P);
}

static void print_info(const tgc_model_desc* d) {
  char t[512];
  const char* names[16];
  printf("model: %s\nbackend: %s\n", d->name ? d->name : "?", backend_name(d));
  if (d->abi_version == TGC_ABI_VERSION && d->cpu_name)
    printf("cpu: %s (features past the baseline: %s)\n", d->cpu_name,
           d->cpu_features && d->cpu_features[0] ? d->cpu_features : "none");
  for (int io = 0; io < 2; ++io) {
    int32_t n = io ? d->num_outputs : d->num_inputs;
    const int32_t* idx = io ? d->outputs : d->inputs;
    printf("%s: %d\n", io ? "outputs" : "inputs", (int)n);
    for (int32_t i = 0; i < n; ++i) {
      const tgc_buffer* b = &d->buffers[idx[i]];
      tgc_cli_type_str(t, sizeof t, b->dtype, b->rank, b->shape, tgc_cli_dim_names(d, b, names));
      char* safe = tgc_cli_file_safe(b->name ? b->name : "");
      int differs = safe && b->name && strcmp(safe, b->name) != 0;
      printf("  %s: %s%s%s%s\n", b->name ? b->name : "?", t, differs ? " (file-safe name: " : "", differs ? safe : "",
             differs ? ")" : "");
      free(safe);
    }
  }
  if (d->batch_dim)
    printf("batch dim: %s (bound at run time from the -i shapes or --batch; one sample's program runs per sample)\n",
           d->batch_dim);
  for (int32_t v = 0; v < d->num_vars; ++v)
    if (d->kv_position && v == d->kv_position[0])
      printf("kv cache: %lld positions; run-time dim %s = positions held after a run (each run appends its tokens)\n",
             (long long)d->var_max[v], d->var_names[v]);
    else if (d->kv_position && v == d->kv_position[2])
      printf("run-time dim: %s = rows of logits (the token count; 1 when generating without --logits-out)\n",
             d->var_names[v]);
    else if (d->var_source && d->var_source[v] >= 0)
      printf(
          "run-time value: %s (0 to %lld; computed by the model from its inputs' values: a size, or the side an If "
          "takes)\n",
          d->var_names[v], (long long)d->var_max[v]);
    else if (tgc_var_step(d, v) > 1)
      printf("run-time dim: %s (%lld to %lld in multiples of %lld; bound from the -i shapes or --dim)\n",
             d->var_names[v], (long long)(tgc_var_min(d, v) * tgc_var_step(d, v)),
             (long long)(d->var_max[v] * tgc_var_step(d, v)), (long long)tgc_var_step(d, v));
    else
      printf("run-time dim: %s (%lld to %lld; bound from the -i shapes or --dim)\n", d->var_names[v],
             (long long)tgc_var_min(d, v), (long long)d->var_max[v]);
  if (d->vocab) printf("tokenizer: %d tokens, %s (-p TEXT)\n", (int)d->vocab->n_tokens, tgc_vocab_kind(d->vocab));
  printf("arena: %lld bytes\n", (long long)d->arena_size);
  if (d->weights_file && d->weights_file[0])
    printf("weights: %lld bytes, file '%s'\n", (long long)d->weights_size, d->weights_file);
  else
    printf("weights: %lld bytes, embedded\n", (long long)d->weights_size);
  printf("launches: %d\n", (int)d->num_launches);
}

/* Run-time dims: --dim, else the -i files (which must agree), else their upper bounds. Returns 0,
 * or 1 after printing the error. */
static int bind_vars(tgc_model* m, const tgc_npy* feeds, const int64_t* dim_value) {
  const tgc_model_desc* d = tgc_desc(m);
  int64_t values[TGC_MAX_VARS];
  int32_t from[TGC_MAX_VARS]; /* the input that gave each value, -1 for --dim or the default */
  /* in dims (a VAR with a step stands for multiples of it), divided by the step at the end */
  for (int32_t v = 0; v < d->num_vars; ++v)
    values[v] = dim_value[v] ? dim_value[v] : d->var_max[v] * tgc_var_step(d, v), from[v] = -1;
  for (int32_t k = 0; k < d->num_inputs; ++k) {
    const tgc_buffer* b = &d->buffers[d->inputs[k]];
    for (int32_t a = 0; feeds[k].data && b->dim_vars && a < b->rank; ++a) {
      int32_t v = b->dim_vars[a];
      if (v < 0) continue;
      int64_t got = feeds[k].shape[a];
      if ((from[v] >= 0 || dim_value[v]) && got != values[v])
        return tgc_cli_fail("input '%s' has %s=%lld, but %s%s%s gives %lld", b->name, d->var_names[v], (long long)got,
                            from[v] >= 0 ? "input '" : "--dim", from[v] >= 0 ? d->buffers[d->inputs[from[v]]].name : "",
                            from[v] >= 0 ? "'" : "", (long long)values[v]);
      values[v] = got, from[v] = k;
    }
  }
  for (int32_t v = 0; v < d->num_vars; ++v) {
    int64_t step = tgc_var_step(d, v);
    if (values[v] % step)
      return tgc_cli_fail("run-time dim %s is %lld, not a multiple of %lld", d->var_names[v], (long long)values[v],
                          (long long)step);
    values[v] /= step;
  }
  return tgc_bind_vars(m, values) != 0 ? fail("%s", tgc_last_error()) : 0;
}

/* What the options ask for that needs the language-model role, checked before anything runs;
 * the parse's other rules across options too. 0, or 1 after printing the error. */
static int check_options(tgc_cli_args* a, const tgc_cli_llm* llm) {
  const tgc_model_desc* d = a->desc;
  const char* name = d->name ? d->name : "?";
  if ((a->system || a->chat_template) && !a->chat)
    return fail("%s goes with --chat", a->system ? "--system" : "--chat-template");
  if (a->chat) {
    if (!d->vocab || !d->kv_position || !llm) return fail("--chat: model '%s' carries no tokenizer", name);
    if (a->n_given || a->prompt || a->bench || a->bench_prompt || a->decode_path || a->out_dir || a->logits_out)
      return fail(
          "--chat reads the conversation from stdin: it goes without -i, -p, -o, --bench, --decode and --logits-out");
    return 0;
  }
  if (a->sampling_flag && a->gen_n < 1) return fail("%s acts on new tokens: give -n N too", a->sampling_flag);
  if (a->n_stops && !d->vocab) return fail("--stop: model '%s' carries no tokenizer, so its tokens have no text", name);
  if (a->bench_prompt &&
      (a->n_given || a->prompt || a->gen_n >= 0 || a->out_dir || a->decode_path || a->tokens_out || a->logits_out))
    return fail(
        "--bench P,N makes its own prompt: it goes without -i, -p, -n, -o, --decode, --tokens-out and --logits-out");
  if (a->prompt) {
    if (!d->vocab || !d->kv_position || !llm) return fail("-p: model '%s' carries no tokenizer", name);
    if (llm->prompt_tokens(d, a->prompt, a->feeds) != 0) return 1;
    ++a->n_given;
  }
  return 0;
}

/* The inputs complete, the output files distinct, the batch size agreed. 0, or 1 after the error. */
static int check_io(tgc_cli_args* a) {
  const tgc_model_desc* d = a->desc;
  if (a->n_given > 0)
    for (int32_t k = 0; k < d->num_inputs; ++k)
      if (!a->feeds[k].data) {
        const char* nm = d->buffers[d->inputs[k]].name;
        char* safe = tgc_cli_file_safe(nm ? nm : "");
        fail("missing input '%s' (pass -i %s=FILE.npy)", nm ? nm : "?", safe ? safe : "NAME");
        free(safe);
        return 1;
      }
  if (a->out_dir)
    for (int32_t i = 0; i < d->num_outputs; ++i)
      for (int32_t j = 0; j < i; ++j) {
        const char *x = d->buffers[d->outputs[i]].name, *y = d->buffers[d->outputs[j]].name;
        if (tgc_cli_same_safe(x, y) || tgc_cli_same_safe(y, x))
          return fail("outputs '%s' and '%s' would both be written to the same file", y, x);
      }
  if (a->batch_from >= 0 && a->batch > 0 && a->batch != a->feeds[a->batch_from].shape[0])
    return fail("--batch %lld, but input '%s' has batch size %lld", a->batch, d->buffers[d->inputs[a->batch_from]].name,
                (long long)a->feeds[a->batch_from].shape[0]);
  if (a->batch_from >= 0) a->batch = a->feeds[a->batch_from].shape[0];
  return 0;
}

/* The model made, its batch and run-time dims bound, its inputs set (deterministic random ones
 * where none were given). NULL after printing the error. */
static tgc_model* create_model(const tgc_cli_args* a, const tgc_cli_llm* llm) {
  const tgc_model_desc* d = a->desc;
  tgc_model* m = tgc_create(d, (int)a->threads);
  if (!m) return fail("%s", tgc_last_error()), NULL;
  int failed = a->batch > 0 && tgc_bind_batch(m, a->batch) != 0 ? fail("%s", tgc_last_error()) : 0;
  /* generation reads the last row of each eval's logits, unless all of them are asked for */
  if (!failed && d->kv_position && llm && (a->gen_n >= 0 || a->tokens_out || a->chat) && !a->logits_out)
    failed = llm->last_logits_only(m);
  if (!failed && d->num_vars > 0) failed = bind_vars(m, a->feeds, a->dim_value);
  for (int32_t k = 0; k < d->num_inputs && !failed; ++k) {
    if (a->feeds[k].data) {
      if (tgc_set_input(m, k, a->feeds[k].data, a->feeds[k].nbytes) != 0) failed = fail("%s", tgc_last_error());
    } else {
      int64_t dims[16];
      fill_random(tgc_input_data(m, k), &d->buffers[d->inputs[k]], numel(tgc_input_shape(m, k, dims), dims),
                  (uint64_t)k);
    }
  }
  if (failed) tgc_destroy(m);
  return failed ? NULL : m;
}

/* --bench N: warm-up runs, then N timed ones into times; a model with a KV cache runs each at the
 * same position (the first run's), so that each does the same work and the cache never fills. */
static int bench_runs(tgc_model* m, long long n, double* times, int* warmups) {
  int kv = tgc_desc(m)->kv_position != NULL;
  double warm_start = tgc_now_ms();
  for (*warmups = 0;
       *warmups < TGC_CLI_WARMUP_RUNS || (*warmups < 1000 && tgc_now_ms() - warm_start < TGC_CLI_WARMUP_MS); ++*warmups)
    if ((kv && tgc_set_kv_length(m, 0) != 0) || tgc_run(m) != 0) return fail("%s", tgc_last_error());
  for (long long it = 0; it < n; ++it) {
    if (kv && tgc_set_kv_length(m, 0) != 0) return fail("%s", tgc_last_error());
    double t0 = tgc_now_ms();
    if (tgc_run(m) != 0) return fail("%s", tgc_last_error());
    times[it] = tgc_now_ms() - t0;
  }
  return 0;
}

static void print_bench(const tgc_model* m, const double* times, long long n, int warmups, double median) {
  double sum = 0, mn = times[0], mx = times[0];
  for (long long it = 0; it < n; ++it) {
    sum += times[it];
    if (times[it] < mn) mn = times[it];
    if (times[it] > mx) mx = times[it];
  }
  tgc_cli_bench_json_head(m);
  printf(
      ", \"warmup\": %d, \"iters\": %lld, \"median_ms\": %.6f, \"min_ms\": %.6f, \"mean_ms\": %.6f, \"max_ms\": "
      "%.6f}\n",
      warmups, n, median, mn, sum / (double)n, mx);
}

/* One run, then what follows it on a model with a KV cache: generation (-n, --tokens-out,
 * --logits-out). 0, or 1 after printing the error. */
static int run_once(tgc_model* m, const tgc_cli_args* a, const tgc_cli_llm* llm) {
  const tgc_model_desc* d = a->desc;
  double t0 = tgc_now_ms();
  if (tgc_run(m) != 0) return fail("%s", tgc_last_error());
  double prefill_ms = tgc_now_ms() - t0;
  if (a->gen_n < 0 && !a->tokens_out && !a->logits_out) return 0;
  if (a->decode_path) return fail("-n, --tokens-out and --logits-out do not go with --decode");
  int64_t shape[16];
  int32_t k = d->kv_position ? d->kv_position[1] : 0;
  int64_t np = tgc_input_shape(m, k, shape) == 1 ? shape[0] : 0;
  if (!d->kv_position || np < 1 || !llm)
    return fail("-n/--tokens-out/--logits-out: model '%s' keeps no KV cache", d->name ? d->name : "?");
  return llm->generate(m, a, t0, prefill_ms);
}

/* -o DIR: one .npy per output (rows: --decode's gathered rows). 0, or 1 after the error. */
static int write_outputs(const tgc_model* m, const tgc_cli_args* a, const tgc_npy* rows) {
  const tgc_model_desc* d = a->desc;
  if (tgc_mkdirs(a->out_dir) != 0) return fail("-o %s: cannot create directory (%s)", a->out_dir, strerror(errno));
  for (int32_t k = 0; k < d->num_outputs; ++k) {
    const tgc_buffer* b = &d->buffers[d->outputs[k]];
    int64_t dims[16];
    int rank = rows ? rows[k].rank : tgc_output_shape(m, k, dims);
    if (rows) memcpy(dims, rows[k].shape, sizeof dims);
    char* safe = tgc_cli_file_safe(b->name ? b->name : "");
    size_t len = strlen(a->out_dir) + (safe ? strlen(safe) : 0) + 8;
    char* path = safe ? malloc(len) : NULL;
    if (!path) {
      free(safe);
      return fail("out of memory");
    }
    snprintf(path, len, "%s/%s.npy", a->out_dir, safe);
    int r = tgc_npy_write(path, b->dtype, rank, dims, rows ? rows[k].data : tgc_output_data((tgc_model*)m, k),
                          (size_t)(numel(rank, dims) * tgc_dtype_size(b->dtype)));
    free(path);
    free(safe);
    if (r != 0) return fail("%s", tgc_last_error());
  }
  return 0;
}

/* Without -o: each output's name, type and checksum on stdout. */
static void print_checksums(const tgc_model* m, const tgc_npy* rows) {
  const tgc_model_desc* d = tgc_desc(m);
  for (int32_t k = 0; k < d->num_outputs; ++k) {
    const tgc_buffer* b = &d->buffers[d->outputs[k]];
    char t[512];
    int64_t dims[16];
    int rank = rows ? rows[k].rank : tgc_output_shape((tgc_model*)m, k, dims);
    if (rows) memcpy(dims, rows[k].shape, sizeof dims);
    tgc_cli_type_str(t, sizeof t, b->dtype, rank, dims, NULL);
    printf("%s: %s checksum %.9g\n", b->name ? b->name : "?", t,
           checksum(rows ? rows[k].data : tgc_output_data((tgc_model*)m, k), b, numel(rank, dims)));
  }
}

/* Without the language-model role: the error an option that needs it gets (the model keeps no KV
 * cache, or this executable was linked without the role). */
static void no_llm_role(const tgc_model* m, const char* what) {
  if (tgc_token_input(m, what) >= 0) tgc_set_error("this executable has no language-model runtime");
}

/* After the options are checked: create, run as asked, write or print what came out. */
static int run_model(const tgc_cli_args* a, const tgc_cli_llm* llm) {
  const tgc_model_desc* d = a->desc;
  tgc_model* m = create_model(a, llm);
  if (!m) return 1;
  double* times = NULL;
  tgc_npy* rows = NULL; /* --decode: each output's rows over the run and the steps */
  int warmups = 0, rc = 1;
  if (a->chat) {
    rc = llm->chat(m, a);
    goto done;
  }
  if (a->bench_prompt > 0) {
    if (!llm) {
      no_llm_role(m, "--bench P,N");
      fail("--bench %lld,%lld: %s", a->bench_prompt, a->bench_gen, tgc_last_error());
      goto done;
    }
    if (llm->bench(m, a) != 0) goto done;
  } else if (a->bench > 0) {
    if (!(times = malloc((size_t)a->bench * sizeof *times))) {
      fail("out of memory");
      goto done;
    }
    if (bench_runs(m, a->bench, times, &warmups) != 0) goto done;
  } else if (run_once(m, a, llm) != 0) {
    goto done;
  }
  if (a->decode_path) {
    if (a->bench > 0) {
      fail("--decode and --bench do not go together");
      goto done;
    }
    if (!(rows = calloc((size_t)d->num_outputs + 1, sizeof *rows))) {
      fail("out of memory");
      goto done;
    }
    if (!llm) {
      no_llm_role(m, "--decode");
      fail("%s", tgc_last_error());
      goto done;
    }
    if (llm->decode(m, a, rows) != 0) goto done;
  }
  if (a->out_dir) {
    if (write_outputs(m, a, rows) != 0) goto done;
  } else if (a->gen_n < 1 && !a->bench_prompt) { /* generated text, or --bench P,N's JSON, owns stdout */
    print_checksums(m, rows);
  }
  if (a->bench > 0) print_bench(m, times, a->bench, warmups, tgc_median(times, a->bench));
  rc = fflush(stdout) != 0 ? fail("writing to stdout failed") : 0;
done:
  tgc_destroy(m);
  free(times);
  for (int32_t k = 0; rows && k < d->num_outputs; ++k) free(rows[k].data);
  free(rows);
  return rc;
}

int tgc_cli_main(const tgc_model_desc* desc, int argc, char** argv, const tgc_cli_llm* llm) {
  tgc_cli_set_prog(desc, argc, argv);
  if (!desc) return fail("no model description");
  if (desc->num_vars > TGC_MAX_VARS) return fail("more than %d run-time dims", TGC_MAX_VARS);
  tgc_cli_args a = {.desc = desc,
                    .gen_n = -1,
                    .seed = -1,
                    .bench_reps = 3,
                    .batch_from = -1,
                    .sampling = {0, TGC_SAMPLING_TOP_K, TGC_SAMPLING_TOP_P, TGC_SAMPLING_MIN_P}};
  a.feeds = calloc((size_t)desc->num_inputs + 1, sizeof *a.feeds);
  a.stops = calloc((size_t)argc + 1, sizeof *a.stops);
  int rc = 1;
  if (!a.feeds || !a.stops) {
    rc = fail("out of memory");
  } else {
    int parsed = tgc_cli_parse(&a, argc, argv);
    if (parsed == 2)
      usage(desc), rc = 0;
    else if (parsed == 0 && check_options(&a, llm) == 0) {
      if (a.info)
        print_info(desc), rc = 0;
      else if (check_io(&a) == 0)
        rc = run_model(&a, llm);
    }
  }
  for (int32_t k = 0; a.feeds && k < desc->num_inputs; ++k) free(a.feeds[k].data);
  free(a.feeds);
  free(a.stops);
  return rc;
}

int tgc_main(const tgc_model_desc* desc, int argc, char** argv) { return tgc_cli_main(desc, argc, argv, NULL); }
