/* tgc_main: the command line of generated executables. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "runtime_internal.h"

/* --bench warms up for WARMUP_RUNS runs (the CPU runtime calibrates its thread split in its first
 * twelve) and at least WARMUP_MS, as tools/ort/ort_run.js does for onnxruntime. */
#define WARMUP_RUNS 12
#define WARMUP_MS 250.0

static const char* g_prog = "tgc-model";

static int fail(const char* fmt, ...) TGC_PRINTF(1, 2);
static int fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: error: ", g_prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

static char* file_safe(const char* name) {
  size_t n = strlen(name);
  char* s = malloc(n + 1);
  if (!s) return NULL;
  for (size_t i = 0; i <= n; ++i) {
    char c = name[i];
    int ok = c == '\0' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
             c == '_' || c == '-';
    s[i] = ok ? c : '_';
  }
  return s;
}

static int same_safe(const char* name, const char* query) { /* name == query, or its file-safe form is */
  if (strcmp(name, query) == 0) return 1;
  char* s = file_safe(name);
  int r = s && strcmp(s, query) == 0;
  free(s);
  return r;
}

/* "f32[1,3,224]"; names, when given, replace the sizes of the dims that have one (run-time dims). */
static void type_str(char* out, size_t cap, int32_t dtype, int32_t rank, const int64_t* shape, const char* const* names) {
  int n = snprintf(out, cap, "%s[", tgc_dtype_name(dtype));
  for (int32_t i = 0; i < rank && n > 0 && (size_t)n < cap; ++i)
    n += names && names[i] ? snprintf(out + n, cap - (size_t)n, "%s%s", i ? "," : "", names[i])
                           : snprintf(out + n, cap - (size_t)n, "%s%lld", i ? "," : "", (long long)shape[i]);
  if (n > 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, "]");
}

/* The names of b's run-time dims (batch, VARs), NULL for fixed dims; returns names. */
static const char* const* dim_names(const tgc_model_desc* d, const tgc_buffer* b, const char* names[16]) {
  for (int32_t k = 0; k < b->rank && k < 16; ++k)
    names[k] = k == 0 && b->batched               ? d->batch_dim
               : b->dim_vars && b->dim_vars[k] >= 0 ? d->var_names[b->dim_vars[k]]
               : b->dim_vars && b->dim_vars[k] <= -2 ? "?"  /* follows a run-time dim through pads or windows */
                                                     : NULL;
  return names;
}

static int parse_int(const char* s, long long lo, long long* out) {
  char* end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno || v < lo) return -1;
  *out = v;
  return 0;
}

static int parse_float(const char* s, double lo, double hi, double* out) {
  char* end;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || errno || !(v >= lo && v <= hi)) return -1;
  *out = v;
  return 0;
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
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
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
      case TGC_I8: case TGC_U8: ((uint8_t*)data)[i] = (uint8_t)k; break;
      case TGC_I16: case TGC_U16: ((uint16_t*)data)[i] = (uint16_t)k; break;
      case TGC_I32: case TGC_U32: ((uint32_t*)data)[i] = (uint32_t)k; break;
      case TGC_I64: case TGC_U64: ((uint64_t*)data)[i] = k; break;
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

/* Does argv[*i] name this option (short form, long form, or --long=VALUE)? Sets *flag and *val (NULL
 * when the value is missing) and advances *i past a separate value. */
static int takes_value(int argc, char** argv, int* i, const char** flag, const char** val, const char* shortf,
                       const char* longf) {
  const char* a = argv[*i];
  size_t n = strlen(longf);
  if ((shortf && strcmp(a, shortf) == 0) || strcmp(a, longf) == 0) {
    *flag = a;
    *val = *i + 1 < argc ? argv[++*i] : NULL;
    return 1;
  }
  if (strncmp(a, longf, n) == 0 && a[n] == '=') {
    *flag = longf;
    *val = a + n + 1;
    return 1;
  }
  return 0;
}

/* {"model": ..., "backend": ..., "device": ..., "batch": ..., "threads": N: the start of each --bench JSON line. */
static void bench_json_head(const tgc_model_desc* d, const tgc_model* m) {
  printf("{\"model\": ");
  json_str(stdout, d->name);
  printf(", \"backend\": \"%s\"", d->backend->name);
  const char* device = m->backend->device_name ? m->backend->device_name(m->be) : NULL;
  if (device) {
    printf(", \"device\": ");
    json_str(stdout, device);
  }
  if (d->batch_dim) printf(", \"batch\": %lld", (long long)m->batch);
  printf(", \"threads\": %d, \"peak_rss_mb\": %.1f", m->num_threads, peak_rss_mb());
}

static void print_llm_bench(const tgc_model_desc* d, const tgc_model* m, long long n_prompt, long long n_gen, long long reps,
                            const tgc_llm_bench_result* r) {
  bench_json_head(d, m);
  printf(", \"prompt_tokens\": %lld, \"gen\": %lld, \"reps\": %lld, \"prefill_ms\": %.3f, \"prefill_tok_s\": %.2f, "
         "\"time_to_first_token_ms\": %.3f, \"decode_ms_per_tok\": %.3f, \"decode_tok_s\": %.2f, \"greedy_tokens\": [",
         n_prompt, n_gen, reps, r->prefill_ms, 1000.0 * (double)n_prompt / r->prefill_ms, r->first_token_ms, r->decode_ms_per_tok,
         r->decode_ms_per_tok > 0 ? 1000.0 / r->decode_ms_per_tok : 0.0);
  for (long long i = 0; i < n_gen; ++i) printf("%s%d", i ? ", " : "", (int)r->tokens[i]);
  printf("]}\n");
}

/* Before tgc_create has validated it: a description of another ABI has no backend pointer there. */
static const char* backend_name(const tgc_model_desc* d) {
  return d->abi_version == TGC_ABI_VERSION && d->backend && d->backend->name ? d->backend->name : "?";
}

static void usage(const tgc_model_desc* d) {
  printf("%s - model '%s' compiled by tgc (%s backend)\n\n"
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
         "  --temp T                   sample the new tokens (llama.cpp's chain: top-k, top-p, min-p, temperature, draw);\n"
         "                             T <= 0: greedy, the argmax (default 0)\n"
         "  --top-k K                  keep the K most likely tokens (default %d; 0: all)\n"
         "  --top-p P                  then the fewest whose probabilities add up to P (default %.2f; 1: all)\n"
         "  --min-p M                  then those at least M times as likely as the most likely (default %.2f; 0: all)\n"
         "  --seed S                   the draw's random seed: a seed repeats its tokens (default: from the clock, on stderr)\n"
         "  --stop STR                 end the text at the first STR it holds, which is not printed (repeatable)\n"
         "  --tokens-out FILE.npy      the run's tokens and the generated ones, i32[n]\n"
         "  --logits-out FILE.npy      the logits that followed each of those tokens, f32[n, n_vocab] (the prompt's rows;\n"
         "                             then each new token's: the last one is run too, for its row)\n"
         "  --decode FILE.npy          models with a KV cache: after the run, one run per token of FILE (i32[n]),\n"
         "                             each after the previous; outputs hold the run's rows then one per step\n"
         "  --info                     print the model's inputs, outputs and memory sizes\n"
         "  -h, --help                 this text\n\n"
         "Without -o, prints each output's name, dtype, shape and checksum (sum of its elements).\n"
         "bf16 tensors are read and written as raw '<u2' arrays. Errors: one line on stderr, exit status 1.\n",
         g_prog, d->name ? d->name : "?", backend_name(d), g_prog, WARMUP_RUNS, WARMUP_MS, TGC_SAMPLING_TOP_K, (double)TGC_SAMPLING_TOP_P,
         (double)TGC_SAMPLING_MIN_P);
}

static void print_info(const tgc_model_desc* d) {
  char t[512];
  const char* names[16];
  printf("model: %s\nbackend: %s\n", d->name ? d->name : "?", backend_name(d));
  for (int io = 0; io < 2; ++io) {
    int32_t n = io ? d->num_outputs : d->num_inputs;
    const int32_t* idx = io ? d->outputs : d->inputs;
    printf("%s: %d\n", io ? "outputs" : "inputs", (int)n);
    for (int32_t i = 0; i < n; ++i) {
      const tgc_buffer* b = &d->buffers[idx[i]];
      type_str(t, sizeof t, b->dtype, b->rank, b->shape, dim_names(d, b, names));
      char* safe = file_safe(b->name ? b->name : "");
      int differs = safe && b->name && strcmp(safe, b->name) != 0;
      printf("  %s: %s%s%s%s\n", b->name ? b->name : "?", t, differs ? " (file-safe name: " : "",
             differs ? safe : "", differs ? ")" : "");
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
      printf("run-time dim: %s = rows of logits (the token count; 1 when generating without --logits-out)\n", d->var_names[v]);
    else if (d->var_source && d->var_source[v] >= 0)
      printf("run-time value: %s (0 to %lld; computed by the model from its inputs' values: a size, or the side an If takes)\n",
             d->var_names[v], (long long)d->var_max[v]);
    else if (tgc_var_step(d, v) > 1)
      printf("run-time dim: %s (%lld to %lld in multiples of %lld; bound from the -i shapes or --dim)\n", d->var_names[v],
             (long long)(tgc_var_min(d, v) * tgc_var_step(d, v)), (long long)(d->var_max[v] * tgc_var_step(d, v)), (long long)tgc_var_step(d, v));
    else
      printf("run-time dim: %s (%lld to %lld; bound from the -i shapes or --dim)\n", d->var_names[v], (long long)tgc_var_min(d, v),
             (long long)d->var_max[v]);
  if (d->vocab) printf("tokenizer: %d tokens, %s (-p TEXT)\n", (int)d->vocab->n_tokens, tgc_vocab_kind(d->vocab));
  printf("arena: %lld bytes\n", (long long)d->arena_size);
  if (d->weights_file && d->weights_file[0])
    printf("weights: %lld bytes, file '%s'\n", (long long)d->weights_size, d->weights_file);
  else
    printf("weights: %lld bytes, embedded\n", (long long)d->weights_size);
  printf("launches: %d\n", (int)d->num_launches);
}

/* -p TEXT: the prompt's tokens (BOS first where the vocabulary adds one, as llama.cpp does) as
 * the token input. Returns 0, or 1 after printing the error. */
static int prompt_tokens(const tgc_model_desc* d, const char* text, tgc_npy* feeds) {
  if (!d->vocab || !d->kv_position) return fail("-p: model '%s' carries no tokenizer", d->name ? d->name : "?");
  int32_t k = d->kv_position[1];
  if (feeds[k].data) return fail("-p and -i %s both give the tokens", d->buffers[d->inputs[k]].name);
  tgc_tokenizer* t = tgc_tokenizer_create(d->vocab);
  size_t len = strlen(text);
  int64_t cap = (int64_t)(2 * len + 8), n = -1;
  int32_t* ids = malloc((size_t)cap * sizeof *ids);
  if (t && ids && (n = tgc_tokenize(t, text, len, d->vocab->add_bos, ids, cap)) > cap) { /* more than room: again */
    int32_t* more = realloc(ids, (size_t)n * sizeof *ids);
    n = more ? tgc_tokenize(t, text, len, d->vocab->add_bos, ids = more, n) : -1;
  }
  tgc_tokenizer_destroy(t);
  if (n < 0) {
    free(ids);
    return fail("-p: the prompt cannot be tokenized (a byte the vocabulary cannot spell, or out of memory)");
  }
  feeds[k] = (tgc_npy){TGC_I32, 1, {n}, ids, (size_t)n * sizeof *ids};
  return 0;
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
        return fail("input '%s' has %s=%lld, but %s%s%s gives %lld", b->name, d->var_names[v], (long long)got,
                    from[v] >= 0 ? "input '" : "--dim", from[v] >= 0 ? d->buffers[d->inputs[from[v]]].name : "",
                    from[v] >= 0 ? "'" : "", (long long)values[v]);
      values[v] = got, from[v] = k;
    }
  }
  for (int32_t v = 0; v < d->num_vars; ++v) {
    int64_t step = tgc_var_step(d, v);
    if (values[v] % step) return fail("run-time dim %s is %lld, not a multiple of %lld", d->var_names[v], (long long)values[v], (long long)step);
    values[v] /= step;
  }
  return tgc_bind_vars(m, values) != 0 ? fail("%s", tgc_last_error()) : 0;
}

int tgc_main(const tgc_model_desc* desc, int argc, char** argv) {
  if (argc > 0 && argv[0] && argv[0][0]) {
    const char* slash = strrchr(argv[0], '/');
    g_prog = slash ? slash + 1 : argv[0];
  } else if (desc && desc->name) {
    g_prog = desc->name;
  }
  if (!desc) return fail("no model description");
  int info = 0, rc = 1;
  long long bench = 0, threads = 0, batch = 0;
  const char* out_dir = NULL;
  const char* decode_path = NULL;
  const char* prompt = NULL;
  long long gen_n = -1; /* -n N; -1: not given */
  const char* tokens_out = NULL;
  const char* logits_out = NULL;
  tgc_generation gen = {.sampling = {0, TGC_SAMPLING_TOP_K, TGC_SAMPLING_TOP_P, TGC_SAMPLING_MIN_P}};
  const char* sampling_flag = NULL; /* the first sampling option or --stop given */
  long long seed = -1;
  const char** stops = calloc((size_t)argc + 1, sizeof *stops);
  long long bench_prompt = 0, bench_gen = 0, bench_reps = 3; /* --bench P,N[,R] */
  int warmups = 0;                                            /* --bench N: warm-up runs made */
  tgc_npy gen_tokens = {0};
  tgc_npy* logits_rows = NULL; /* --logits-out: each output's rows, for tgc_append_outputs */
  tgc_npy steps = {0};
  tgc_npy* rows = NULL; /* --decode: each output's rows over the run and the steps */
  int32_t nin = desc->num_inputs, nout = desc->num_outputs;
  int n_given = 0;
  int32_t batch_from = -1; /* the first -i input holding the batch dim */
  int64_t dim_value[TGC_MAX_VARS];   /* --dim NAME=N per run-time dim, 0 where not given */
  memset(dim_value, 0, sizeof dim_value);
  if (desc->num_vars > TGC_MAX_VARS) return fail("more than %d run-time dims", TGC_MAX_VARS);
  tgc_npy* feeds = calloc((size_t)nin + 1, sizeof *feeds);
  tgc_model* m = NULL;
  double* times = NULL;
  if (!feeds || !stops) {
    free(feeds), free(stops);
    return fail("out of memory");
  }

  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* val = NULL;
    const char* flag = NULL;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(desc);
      rc = 0;
      goto done;
    } else if (strcmp(a, "--info") == 0) {
      info = 1;
    } else if (takes_value(argc, argv, &i, &flag, &val, "-i", "--input")) {
      if (!val) { fail("%s needs NAME=FILE.npy", flag); goto done; }
      const char* eq = strchr(val, '=');
      if (!eq || eq == val || !eq[1]) { fail("%s expects NAME=FILE.npy, got '%s'", flag, val); goto done; }
      size_t nl = (size_t)(eq - val);
      char* name = malloc(nl + 1);
      if (!name) { fail("out of memory"); goto done; }
      memcpy(name, val, nl);
      name[nl] = '\0';
      int32_t which = -1;
      for (int32_t k = 0; k < nin && which < 0; ++k)
        if (same_safe(desc->buffers[desc->inputs[k]].name ? desc->buffers[desc->inputs[k]].name : "", name))
          which = k;
      if (which < 0) {
        char list[1024] = "";
        size_t used = 0;
        for (int32_t k = 0; k < nin && used < sizeof list - 1; ++k)
          used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "",
                                   desc->buffers[desc->inputs[k]].name);
        fail("-i %s: the model has no input of that name (inputs: %s)", name, nin ? list : "none");
        free(name);
        goto done;
      }
      const tgc_buffer* b = &desc->buffers[desc->inputs[which]];
      if (feeds[which].data) {
        fail("-i %s: input '%s' given twice", name, b->name);
        free(name);
        goto done;
      }
      if (tgc_npy_read(eq + 1, &feeds[which]) != 0) {
        fail("-i %s: %s", name, tgc_last_error());
        free(name);
        goto done;
      }
      int ok = feeds[which].rank == b->rank &&
               (feeds[which].dtype == b->dtype || (b->dtype == TGC_BF16 && feeds[which].dtype == TGC_U16));
      const char* names[16];
      dim_names(desc, b, names);
      for (int32_t k = 0; ok && k < b->rank; ++k) ok = names[k] ? feeds[which].shape[k] >= 1 : feeds[which].shape[k] == b->shape[k];
      if (!ok) {
        char want[512], got[512];
        type_str(want, sizeof want, b->dtype, b->rank, b->shape, names);
        type_str(got, sizeof got, feeds[which].dtype, feeds[which].rank, feeds[which].shape, NULL);
        fail("-i %s: expected %s, got %s (%s)", name, want, got, eq + 1);
        free(name);
        goto done;
      }
      if (b->batched && batch_from >= 0 && feeds[which].shape[0] != feeds[batch_from].shape[0]) {
        fail("-i %s: batch size %s=%lld, but input '%s' has %lld", name, desc->batch_dim, (long long)feeds[which].shape[0],
             desc->buffers[desc->inputs[batch_from]].name, (long long)feeds[batch_from].shape[0]);
        free(name);
        goto done;
      }
      if (b->batched && batch_from < 0) batch_from = which;
      free(name);
      ++n_given;
    } else if (takes_value(argc, argv, &i, &flag, &val, "-o", "--output")) {
      if (!val || !val[0]) { fail("%s needs a directory", flag); goto done; }
      out_dir = val;
    } else if (takes_value(argc, argv, &i, &flag, &val, "-p", "--prompt")) {
      if (!val) { fail("%s needs the prompt's text", flag); goto done; }
      prompt = val;
    } else if (takes_value(argc, argv, &i, &flag, &val, "-n", "--n-predict")) {
      if (!val || parse_int(val, 0, &gen_n) != 0) { fail("%s needs a token count, got '%s'", flag, val ? val : ""); goto done; }
    } else if (takes_value(argc, argv, &i, &flag, &val, NULL, "--temp") || takes_value(argc, argv, &i, &flag, &val, NULL, "--top-p") ||
               takes_value(argc, argv, &i, &flag, &val, NULL, "--min-p")) {
      int temp = strcmp(flag, "--temp") == 0;
      double x;
      if (!val || parse_float(val, temp ? -1e30 : 0, temp ? 1e30 : 1, &x) != 0) {
        fail("%s needs a number%s, got '%s'", flag, temp ? "" : " from 0 to 1", val ? val : "");
        goto done;
      }
      *(temp ? &gen.sampling.temp : strcmp(flag, "--top-p") == 0 ? &gen.sampling.top_p : &gen.sampling.min_p) = (float)x;
      sampling_flag = sampling_flag ? sampling_flag : flag;
    } else if (takes_value(argc, argv, &i, &flag, &val, NULL, "--top-k")) {
      long long k;
      if (!val || parse_int(val, 0, &k) != 0 || k > INT32_MAX) { fail("--top-k needs a token count (0: all), got '%s'", val ? val : ""); goto done; }
      gen.sampling.top_k = (int32_t)k;
      sampling_flag = sampling_flag ? sampling_flag : flag;
    } else if (takes_value(argc, argv, &i, &flag, &val, NULL, "--seed")) {
      if (!val || parse_int(val, 0, &seed) != 0) { fail("--seed needs a non-negative integer, got '%s'", val ? val : ""); goto done; }
      sampling_flag = sampling_flag ? sampling_flag : flag;
    } else if (takes_value(argc, argv, &i, &flag, &val, NULL, "--stop")) {
      if (!val || !val[0]) { fail("--stop needs a non-empty string"); goto done; }
      stops[gen.n_stops++] = val;
      sampling_flag = sampling_flag ? sampling_flag : flag;
    } else if (takes_value(argc, argv, &i, &flag, &val, NULL, "--logits-out")) {
      if (!val || !val[0]) { fail("--logits-out needs FILE.npy"); goto done; }
      logits_out = val;
    } else if (takes_value(argc, argv, &i, &flag, &val, NULL, "--tokens-out")) {
      if (!val || !val[0]) { fail("--tokens-out needs FILE.npy"); goto done; }
      tokens_out = val;
    } else if (takes_value(argc, argv, &i, &flag, &val, NULL, "--decode")) {
      if (!val || !val[0]) { fail("--decode needs FILE.npy (i32 tokens, one per step)"); goto done; }
      decode_path = val;
    } else if (takes_value(argc, argv, &i, &flag, &val, NULL, "--bench")) {
      if (val && strchr(val, ',')) { /* P,N[,R] */
        char tail;
        int got = sscanf(val, "%lld,%lld%c%lld%c", &bench_prompt, &bench_gen, &tail, &bench_reps, &tail);
        if (!(got == 2 || (got == 4 && tail == ',')) || bench_prompt < 1 || bench_gen < 0 || bench_reps < 1) {
          fail("--bench needs N (runs) or P,N[,R] (prompt tokens, greedy steps, repetitions), got '%s'", val);
          goto done;
        }
      } else if (!val || parse_int(val, 1, &bench) != 0) {
        fail("--bench needs a positive iteration count N, or P,N[,R], got '%s'", val ? val : "");
        goto done;
      }
    } else if (takes_value(argc, argv, &i, &flag, &val, NULL, "--batch")) {
      if (!val || parse_int(val, 1, &batch) != 0) { fail("--batch needs a positive batch size, got '%s'", val ? val : ""); goto done; }
      if (!desc->batch_dim) { fail("--batch: model '%s' has no run-time batch dim", desc->name ? desc->name : "?"); goto done; }
    } else if (takes_value(argc, argv, &i, &flag, &val, NULL, "--dim")) {
      const char* eq = val ? strchr(val, '=') : NULL;
      int32_t v = 0;
      while (eq && v < desc->num_vars && (strncmp(desc->var_names[v], val, (size_t)(eq - val)) != 0 || desc->var_names[v][eq - val]))
        ++v;
      long long n = 0;
      if (!eq || v >= desc->num_vars || parse_int(eq + 1, 1, &n) != 0) {
        fail("--dim needs NAME=N for a run-time dim of the model (%s), got '%s'", desc->num_vars ? "see --info" : "it has none",
             val ? val : "");
        goto done;
      }
      dim_value[v] = n;
    } else if (takes_value(argc, argv, &i, &flag, &val, NULL, "--threads")) {
      if (!val || parse_int(val, 0, &threads) != 0 || threads > 4096) {
        fail("--threads needs a thread count (0 = one per core), got '%s'", val ? val : "");
        goto done;
      }
    } else if (a[0] == '-') {
      fail("unknown option '%s' (try --help)", a);
      goto done;
    } else {
      fail("unexpected argument '%s' (try --help)", a);
      goto done;
    }
  }
  if (sampling_flag && gen_n < 1) { fail("%s acts on new tokens: give -n N too", sampling_flag); goto done; }
  if (gen.n_stops && !desc->vocab) { fail("--stop: model '%s' carries no tokenizer, so its tokens have no text", desc->name ? desc->name : "?"); goto done; }
  if (bench_prompt && (n_given || prompt || gen_n >= 0 || out_dir || decode_path || tokens_out || logits_out)) {
    fail("--bench P,N makes its own prompt: it goes without -i, -p, -n, -o, --decode, --tokens-out and --logits-out");
    goto done;
  }
  if (prompt && prompt_tokens(desc, prompt, feeds) != 0) goto done;
  if (prompt) ++n_given;
  if (info) {
    print_info(desc);
    rc = 0;
    goto done;
  }
  if (n_given > 0)
    for (int32_t k = 0; k < nin; ++k)
      if (!feeds[k].data) {
        const char* nm = desc->buffers[desc->inputs[k]].name;
        char* safe = file_safe(nm ? nm : "");
        fail("missing input '%s' (pass -i %s=FILE.npy)", nm ? nm : "?", safe ? safe : "NAME");
        free(safe);
        goto done;
      }
  if (out_dir)
    for (int32_t a = 0; a < nout; ++a)
      for (int32_t b = 0; b < a; ++b)
        if (same_safe(desc->buffers[desc->outputs[a]].name, desc->buffers[desc->outputs[b]].name) ||
            same_safe(desc->buffers[desc->outputs[b]].name, desc->buffers[desc->outputs[a]].name)) {
          fail("outputs '%s' and '%s' would both be written to the same file", desc->buffers[desc->outputs[b]].name,
               desc->buffers[desc->outputs[a]].name);
          goto done;
        }

  if (batch_from >= 0 && batch > 0 && batch != feeds[batch_from].shape[0]) {
    fail("--batch %lld, but input '%s' has batch size %lld", batch, desc->buffers[desc->inputs[batch_from]].name,
         (long long)feeds[batch_from].shape[0]);
    goto done;
  }
  if (batch_from >= 0) batch = feeds[batch_from].shape[0];

  m = tgc_create(desc, (int)threads);
  if (!m) { fail("%s", tgc_last_error()); goto done; }
  if (batch > 0 && tgc_bind_batch(m, batch) != 0) { fail("%s", tgc_last_error()); goto done; }
  /* generation reads the last row of each eval's logits, unless all of them are asked for */
  if (desc->kv_position && (gen_n >= 0 || tokens_out) && !logits_out && tgc_llm_all_logits(m, 0) != 0) {
    fail("%s", tgc_last_error());
    goto done;
  }
  if (desc->num_vars > 0 && bind_vars(m, feeds, dim_value) != 0) goto done;
  for (int32_t k = 0; k < nin; ++k) {
    const tgc_buffer* b = &desc->buffers[desc->inputs[k]];
    if (feeds[k].data) {
      if (tgc_set_input(m, k, feeds[k].data, feeds[k].nbytes) != 0) { fail("%s", tgc_last_error()); goto done; }
    } else {
      int64_t dims[16];
      fill_random(tgc_input_data(m, k), b, numel(tgc_input_shape(m, k, dims), dims), (uint64_t)k);
    }
  }
  if (bench_prompt > 0) {
    tgc_llm_bench_result r;
    int failed = tgc_llm_bench(m, bench_prompt, bench_gen, bench_reps, &r) != 0;
    if (failed) fail("--bench %lld,%lld: %s", bench_prompt, bench_gen, tgc_last_error());
    else print_llm_bench(desc, m, bench_prompt, bench_gen, bench_reps, &r);
    free(r.tokens);
    if (failed) goto done;
  } else if (bench > 0) {
    if (!(times = malloc((size_t)bench * sizeof *times))) { fail("out of memory"); goto done; }
    /* A model with a KV cache runs every iteration at the same position (the first run's), so
     * that each does the same work and the cache never fills. */
    double warm_start = tgc_now_ms();
    for (warmups = 0; warmups < WARMUP_RUNS || (warmups < 1000 && tgc_now_ms() - warm_start < WARMUP_MS); ++warmups)
      if ((desc->kv_position && tgc_set_kv_length(m, 0) != 0) || tgc_run(m) != 0) { fail("%s", tgc_last_error()); goto done; }
    for (long long it = 0; it < bench; ++it) {
      if (desc->kv_position && tgc_set_kv_length(m, 0) != 0) { fail("%s", tgc_last_error()); goto done; }
      double t0 = tgc_now_ms();
      if (tgc_run(m) != 0) { fail("%s", tgc_last_error()); goto done; }
      times[it] = tgc_now_ms() - t0;
    }
  } else {
    double t0 = tgc_now_ms();
    if (tgc_run(m) != 0) { fail("%s", tgc_last_error()); goto done; }
    double prefill_ms = tgc_now_ms() - t0;
    if (gen_n >= 0 || tokens_out || logits_out) {
      if (decode_path) { fail("-n, --tokens-out and --logits-out do not go with --decode"); goto done; }
      int32_t k = desc->kv_position ? desc->kv_position[1] : 0;
      int64_t np = tgc_input_shape(m, k, gen_tokens.shape) == 1 ? gen_tokens.shape[0] : 0;
      if (!desc->kv_position || np < 1) { fail("-n/--tokens-out/--logits-out: model '%s' keeps no KV cache", desc->name ? desc->name : "?"); goto done; }
      if (logits_out && !tgc_llm_logits(m, NULL, NULL)) { fail("--logits-out: %s", tgc_last_error()); goto done; }
      gen_tokens = (tgc_npy){TGC_I32, 1, {np}, malloc((size_t)np * sizeof(int32_t)), (size_t)np * sizeof(int32_t)};
      logits_rows = logits_out ? calloc((size_t)nout, sizeof *logits_rows) : NULL;
      if (!gen_tokens.data || (logits_out && !logits_rows)) { fail("out of memory"); goto done; }
      memcpy(gen_tokens.data, tgc_input_data(m, k), gen_tokens.nbytes);
      gen.n_new = gen_n > 0 ? gen_n : 0;
      gen.seed = seed >= 0 ? (uint64_t)seed : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
      gen.stops = stops;
      gen.logits = logits_rows;
      gen.start_ms = t0;
      tgc_generation_stats st;
      if (tgc_generate(m, &gen, &gen_tokens, &st) < 0) { fail("%s", tgc_last_error()); goto done; }
      if ((tokens_out && tgc_npy_write(tokens_out, TGC_I32, 1, gen_tokens.shape, gen_tokens.data, gen_tokens.nbytes) != 0) ||
          (logits_out && tgc_npy_write(logits_out, TGC_F32, logits_rows[0].rank, logits_rows[0].shape, logits_rows[0].data,
                                       logits_rows[0].nbytes) != 0)) {
        fail("%s", tgc_last_error());
        goto done;
      }
      fprintf(stderr, "prefill: %lld tokens in %.2f ms (%.2f tok/s); decode: %lld steps in %.2f ms (%.2f tok/s)", (long long)np,
              prefill_ms, 1000.0 * (double)np / prefill_ms, (long long)st.steps, st.decode_ms,
              st.steps ? 1000.0 * (double)st.steps / st.decode_ms : 0.0);
      if (gen.n_new > 0) fprintf(stderr, "; time to first token: %.2f ms", st.first_token_ms);
      if (gen.n_new > 0 && gen.sampling.temp > 0) fprintf(stderr, "; seed %llu", (unsigned long long)gen.seed);
      fputc('\n', stderr);
    }
  }
  if (decode_path) {
    if (bench > 0) { fail("--decode and --bench do not go together"); goto done; }
    if (!(rows = calloc((size_t)nout + 1, sizeof *rows))) { fail("out of memory"); goto done; }
    if (tgc_npy_read(decode_path, &steps) != 0 || tgc_decode_steps(m, &steps, rows) != 0) {
      fail("%s", tgc_last_error());
      goto done;
    }
  }

  if (out_dir) {
    if (tgc_mkdirs(out_dir) != 0) { fail("-o %s: cannot create directory (%s)", out_dir, strerror(errno)); goto done; }
    for (int32_t k = 0; k < nout; ++k) {
      const tgc_buffer* b = &desc->buffers[desc->outputs[k]];
      int64_t dims[16];
      int rank = rows ? rows[k].rank : tgc_output_shape(m, k, dims);
      if (rows) memcpy(dims, rows[k].shape, sizeof dims);
      char* safe = file_safe(b->name ? b->name : "");
      size_t len = strlen(out_dir) + (safe ? strlen(safe) : 0) + 8;
      char* path = safe ? malloc(len) : NULL;
      if (!path) { free(safe); fail("out of memory"); goto done; }
      snprintf(path, len, "%s/%s.npy", out_dir, safe);
      int r = tgc_npy_write(path, b->dtype, rank, dims, rows ? rows[k].data : tgc_output_data(m, k),
                            (size_t)(numel(rank, dims) * tgc_dtype_size(b->dtype)));
      free(path);
      free(safe);
      if (r != 0) { fail("%s", tgc_last_error()); goto done; }
    }
  } else if (gen_n < 1 && !bench_prompt) { /* generated text, or --bench P,N's JSON, owns stdout */
    for (int32_t k = 0; k < nout; ++k) {
      const tgc_buffer* b = &desc->buffers[desc->outputs[k]];
      char t[512];
      int64_t dims[16];
      int rank = rows ? rows[k].rank : tgc_output_shape(m, k, dims);
      if (rows) memcpy(dims, rows[k].shape, sizeof dims);
      type_str(t, sizeof t, b->dtype, rank, dims, NULL);
      printf("%s: %s checksum %.9g\n", b->name ? b->name : "?", t,
             checksum(rows ? rows[k].data : tgc_output_data(m, k), b, numel(rank, dims)));
    }
  }
  if (bench > 0) {
    double sum = 0, mn = times[0], mx = times[0];
    for (long long it = 0; it < bench; ++it) {
      sum += times[it];
      if (times[it] < mn) mn = times[it];
      if (times[it] > mx) mx = times[it];
    }
    double median = tgc_median(times, bench);
    bench_json_head(desc, m);
    printf(", \"warmup\": %d, \"iters\": %lld, \"median_ms\": %.6f, \"min_ms\": %.6f, \"mean_ms\": %.6f, \"max_ms\": %.6f}\n",
           warmups, bench, median, mn, sum / (double)bench, mx);
  }
  if (fflush(stdout) != 0) { fail("writing to stdout failed"); goto done; }
  rc = 0;
done:
  tgc_destroy(m);
  for (int32_t k = 0; k < nin; ++k) free(feeds[k].data);
  free(feeds);
  free(times);
  free(steps.data);
  free(gen_tokens.data);
  for (int32_t k = 0; logits_rows && k < nout; ++k) free(logits_rows[k].data);
  free(logits_rows);
  free(stops);
  for (int32_t k = 0; rows && k < nout; ++k) free(rows[k].data);
  free(rows);
  return rc;
}
