/* The artifact's options as a table: each row names a flag and the function that takes its value
 * into tgc_cli_args. Messages name the flag and what it needs. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define fail tgc_cli_fail

char* tgc_cli_file_safe(const char* name) {
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

int tgc_cli_same_safe(const char* name, const char* query) { /* name == query, or its file-safe form is */
  if (strcmp(name, query) == 0) return 1;
  char* s = tgc_cli_file_safe(name);
  int r = s && strcmp(s, query) == 0;
  free(s);
  return r;
}

void tgc_cli_type_str(char* out, size_t cap, int32_t dtype, int32_t rank, const int64_t* shape,
                      const char* const* names) {
  int n = snprintf(out, cap, "%s[", tgc_dtype_name(dtype));
  for (int32_t i = 0; i < rank && n > 0 && (size_t)n < cap; ++i)
    n += names && names[i] ? snprintf(out + n, cap - (size_t)n, "%s%s", i ? "," : "", names[i])
                           : snprintf(out + n, cap - (size_t)n, "%s%lld", i ? "," : "", (long long)shape[i]);
  if (n > 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, "]");
}

const char* const* tgc_cli_dim_names(const tgc_model_desc* d, const tgc_buffer* b, const char* names[16]) {
  for (int32_t k = 0; k < b->rank && k < 16; ++k)
    names[k] = k == 0 && b->batched                  ? d->batch_dim
               : b->dim_vars && b->dim_vars[k] >= 0  ? d->var_names[b->dim_vars[k]]
               : b->dim_vars && b->dim_vars[k] <= -2 ? "?" /* follows a run-time dim through pads or windows */
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

/* ---- one function per option: the value (NULL when missing) into a; 0, or 1 after the error */

/* -i NAME=FILE.npy: the file read and checked against the input's dtype, shape and batch size. */
static int set_input(tgc_cli_args* a, const char* flag, const char* val) {
  const tgc_model_desc* desc = a->desc;
  if (!val) return fail("%s needs NAME=FILE.npy", flag);
  const char* eq = strchr(val, '=');
  if (!eq || eq == val || !eq[1]) return fail("%s expects NAME=FILE.npy, got '%s'", flag, val);
  size_t nl = (size_t)(eq - val);
  char name[1024];
  if (nl >= sizeof name) return fail("%s: the input's name is too long", flag);
  memcpy(name, val, nl);
  name[nl] = '\0';
  int32_t nin = desc->num_inputs, which = -1;
  for (int32_t k = 0; k < nin && which < 0; ++k)
    if (tgc_cli_same_safe(desc->buffers[desc->inputs[k]].name ? desc->buffers[desc->inputs[k]].name : "", name))
      which = k;
  if (which < 0) {
    char list[1024] = "";
    size_t used = 0;
    for (int32_t k = 0; k < nin && used < sizeof list - 1; ++k)
      used +=
          (size_t)snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", desc->buffers[desc->inputs[k]].name);
    return fail("-i %s: the model has no input of that name (inputs: %s)", name, nin ? list : "none");
  }
  const tgc_buffer* b = &desc->buffers[desc->inputs[which]];
  tgc_npy* f = &a->feeds[which];
  if (f->data) return fail("-i %s: input '%s' given twice", name, b->name);
  if (tgc_npy_read(eq + 1, f) != 0) return fail("-i %s: %s", name, tgc_last_error());
  int ok = f->rank == b->rank && (f->dtype == b->dtype || (b->dtype == TGC_BF16 && f->dtype == TGC_U16));
  const char* names[16];
  tgc_cli_dim_names(desc, b, names);
  for (int32_t k = 0; ok && k < b->rank; ++k) ok = names[k] ? f->shape[k] >= 1 : f->shape[k] == b->shape[k];
  if (!ok) {
    char want[512], got[512];
    tgc_cli_type_str(want, sizeof want, b->dtype, b->rank, b->shape, names);
    tgc_cli_type_str(got, sizeof got, f->dtype, f->rank, f->shape, NULL);
    return fail("-i %s: expected %s, got %s (%s)", name, want, got, eq + 1);
  }
  if (b->batched && a->batch_from >= 0 && f->shape[0] != a->feeds[a->batch_from].shape[0])
    return fail("-i %s: batch size %s=%lld, but input '%s' has %lld", name, desc->batch_dim, (long long)f->shape[0],
                desc->buffers[desc->inputs[a->batch_from]].name, (long long)a->feeds[a->batch_from].shape[0]);
  if (b->batched && a->batch_from < 0) a->batch_from = which;
  ++a->n_given;
  return 0;
}

static int set_output(tgc_cli_args* a, const char* flag, const char* val) {
  if (!val || !val[0]) return fail("%s needs a directory", flag);
  a->out_dir = val;
  return 0;
}

static int set_prompt(tgc_cli_args* a, const char* flag, const char* val) {
  if (!val) return fail("%s needs the prompt's text", flag);
  a->prompt = val;
  return 0;
}

static int set_n_predict(tgc_cli_args* a, const char* flag, const char* val) {
  if (!val || parse_int(val, 0, &a->gen_n) != 0) return fail("%s needs a token count, got '%s'", flag, val ? val : "");
  return 0;
}

static void sampling_given(tgc_cli_args* a, const char* flag) {
  a->sampling_flag = a->sampling_flag ? a->sampling_flag : flag;
}

/* --temp (any number), --top-p and --min-p (0 to 1) */
static int set_probability(tgc_cli_args* a, const char* flag, const char* val) {
  int temp = strcmp(flag, "--temp") == 0;
  double x;
  if (!val || parse_float(val, temp ? -1e30 : 0, temp ? 1e30 : 1, &x) != 0)
    return fail("%s needs a number%s, got '%s'", flag, temp ? "" : " from 0 to 1", val ? val : "");
  *(temp ? &a->sampling.temp : strcmp(flag, "--top-p") == 0 ? &a->sampling.top_p : &a->sampling.min_p) = (float)x;
  sampling_given(a, flag);
  return 0;
}

static int set_top_k(tgc_cli_args* a, const char* flag, const char* val) {
  long long k;
  if (!val || parse_int(val, 0, &k) != 0 || k > INT32_MAX)
    return fail("--top-k needs a token count (0: all), got '%s'", val ? val : "");
  a->sampling.top_k = (int32_t)k;
  sampling_given(a, flag);
  return 0;
}

static int set_seed(tgc_cli_args* a, const char* flag, const char* val) {
  if (!val || parse_int(val, 0, &a->seed) != 0)
    return fail("--seed needs a non-negative integer, got '%s'", val ? val : "");
  sampling_given(a, flag);
  return 0;
}

static int set_stop(tgc_cli_args* a, const char* flag, const char* val) {
  if (!val || !val[0]) return fail("--stop needs a non-empty string");
  a->stops[a->n_stops++] = val;
  sampling_given(a, flag);
  return 0;
}

/* --logits-out, --tokens-out, --decode: a file name */
static int set_file(tgc_cli_args* a, const char* flag, const char* val) {
  int decode = strcmp(flag, "--decode") == 0;
  if (!val || !val[0]) return fail("%s needs FILE.npy%s", flag, decode ? " (i32 tokens, one per step)" : "");
  *(decode ? &a->decode_path : strcmp(flag, "--logits-out") == 0 ? &a->logits_out : &a->tokens_out) = val;
  return 0;
}

/* --bench N, or P,N[,R] */
static int set_bench(tgc_cli_args* a, const char* flag, const char* val) {
  if (val && strchr(val, ',')) {
    char tail;
    int got = sscanf(val, "%lld,%lld%c%lld%c", &a->bench_prompt, &a->bench_gen, &tail, &a->bench_reps, &tail);
    if (!(got == 2 || (got == 4 && tail == ',')) || a->bench_prompt < 1 || a->bench_gen < 0 || a->bench_reps < 1)
      return fail("--bench needs N (runs) or P,N[,R] (prompt tokens, greedy steps, repetitions), got '%s'", val);
  } else if (!val || parse_int(val, 1, &a->bench) != 0) {
    return fail("--bench needs a positive iteration count N, or P,N[,R], got '%s'", val ? val : "");
  }
  return 0;
}

static int set_batch(tgc_cli_args* a, const char* flag, const char* val) {
  if (!val || parse_int(val, 1, &a->batch) != 0)
    return fail("--batch needs a positive batch size, got '%s'", val ? val : "");
  if (!a->desc->batch_dim)
    return fail("--batch: model '%s' has no run-time batch dim", a->desc->name ? a->desc->name : "?");
  return 0;
}

static int set_dim(tgc_cli_args* a, const char* flag, const char* val) {
  const tgc_model_desc* d = a->desc;
  const char* eq = val ? strchr(val, '=') : NULL;
  int32_t v = 0;
  while (eq && v < d->num_vars && (strncmp(d->var_names[v], val, (size_t)(eq - val)) != 0 || d->var_names[v][eq - val]))
    ++v;
  long long n = 0;
  if (!eq || v >= d->num_vars || parse_int(eq + 1, 1, &n) != 0)
    return fail("--dim needs NAME=N for a run-time dim of the model (%s), got '%s'",
                d->num_vars ? "see --info" : "it has none", val ? val : "");
  a->dim_value[v] = n;
  return 0;
}

static int set_threads(tgc_cli_args* a, const char* flag, const char* val) {
  if (!val || parse_int(val, 0, &a->threads) != 0 || a->threads > 4096)
    return fail("--threads needs a thread count (0 = one per core), got '%s'", val ? val : "");
  return 0;
}

static int set_info(tgc_cli_args* a, const char* flag, const char* val) { return a->info = 1, 0; }
static int set_chat(tgc_cli_args* a, const char* flag, const char* val) { return a->chat = 1, 0; }
static int set_chat_text(tgc_cli_args* a, const char* flag, const char* val) {
  int system = strcmp(flag, "--system") == 0;
  if (!val || (!system && !val[0]))
    return fail("%s needs %s", flag, system ? "the system message" : "a template's name");
  *(system ? &a->system : &a->chat_template) = val;
  return 0;
}
static int set_help(tgc_cli_args* a, const char* flag, const char* val) { return a->help = 1, 0; }

typedef struct {
  const char* shortf; /* NULL where there is none */
  const char* longf;
  int takes_value; /* "--long VALUE", "-s VALUE" or "--long=VALUE" */
  int (*set)(tgc_cli_args* a, const char* flag, const char* val);
} cli_option;

static const cli_option options[] = {
    {"-h", "--help", 0, set_help},         {NULL, "--info", 0, set_info},
    {"-i", "--input", 1, set_input},       {"-o", "--output", 1, set_output},
    {"-p", "--prompt", 1, set_prompt},     {"-n", "--n-predict", 1, set_n_predict},
    {NULL, "--temp", 1, set_probability},  {NULL, "--top-p", 1, set_probability},
    {NULL, "--min-p", 1, set_probability}, {NULL, "--top-k", 1, set_top_k},
    {NULL, "--seed", 1, set_seed},         {NULL, "--stop", 1, set_stop},
    {NULL, "--logits-out", 1, set_file},   {NULL, "--tokens-out", 1, set_file},
    {NULL, "--decode", 1, set_file},       {NULL, "--bench", 1, set_bench},
    {NULL, "--batch", 1, set_batch},       {NULL, "--dim", 1, set_dim},
    {NULL, "--threads", 1, set_threads},   {NULL, "--chat", 0, set_chat},
    {NULL, "--system", 1, set_chat_text},  {NULL, "--chat-template", 1, set_chat_text},
};

/* Does argv[*i] name option o (short form, long form, or --long=VALUE)? Sets *flag and *val
 * (NULL when the value is missing) and advances *i past a separate value. */
static int matches(const cli_option* o, int argc, char** argv, int* i, const char** flag, const char** val) {
  const char* a = argv[*i];
  size_t n = strlen(o->longf);
  *val = NULL;
  if ((o->shortf && strcmp(a, o->shortf) == 0) || strcmp(a, o->longf) == 0) {
    *flag = a;
    if (o->takes_value) *val = *i + 1 < argc ? argv[++*i] : NULL;
    return 1;
  }
  if (o->takes_value && strncmp(a, o->longf, n) == 0 && a[n] == '=') {
    *flag = o->longf;
    *val = a + n + 1;
    return 1;
  }
  return 0;
}

int tgc_cli_parse(tgc_cli_args* a, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char *flag = NULL, *val = NULL;
    const cli_option* o = options;
    while (o < options + sizeof options / sizeof options[0] && !matches(o, argc, argv, &i, &flag, &val)) ++o;
    if (o == options + sizeof options / sizeof options[0])
      return fail(argv[i][0] == '-' ? "unknown option '%s' (try --help)" : "unexpected argument '%s' (try --help)",
                  argv[i]);
    if (o->set(a, flag, val) != 0) return 1;
    if (a->help) return 2;
  }
  return 0;
}
