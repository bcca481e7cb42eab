/* The CPU check: does this CPU have every feature the model's kernels were compiled for
 * (tgc_model_desc.cpu_features)? tgc_create runs it before any kernel. This file is built for the
 * architecture's baseline like the rest of the runtime, so the check itself runs on any CPU. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "core/runtime_internal.h"
#include "tgc_cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>

/* Whether the CPU has a feature of the table, and the OS saves the registers it uses. */
static int x86_has(unsigned leaf, unsigned sub, int reg, int bit, int state) {
  unsigned r[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(leaf, sub, &r[0], &r[1], &r[2], &r[3])) return 0; /* leaf past the CPU's */
  if (!((r[reg] >> bit) & 1)) return 0;
  if (state == 0) return 1;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return 0; /* no OSXSAVE: no xgetbv, no ymm state */
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  unsigned need = state == 1 ? 0x6u : 0xe6u; /* SSE + AVX; + opmask, ZMM_Hi256, Hi16_ZMM */
  return (lo & need) == need;
}

/* 1: the CPU has it; 0: it lacks it; -1: this runtime does not know the name. */
static int cpu_has(const char* name) {
  int known = 0;
#define TGC_X(fname, leaf, sub, reg, bit, state)        \
  if (strcmp(name, fname) == 0) {                       \
    if (!x86_has(leaf, sub, reg, bit, state)) return 0; \
    known = 1;                                          \
  }
  TGC_X86_CPU_FEATURES(TGC_X)
#undef TGC_X
  return known ? 1 : -1;
}

static const char* const kArch = "x86-64";

/* The highest x86-64 level (x86-64-v2, v3, v4) whose features this CPU has, for the hint. */
static const char* best_level(void) {
  static const char* const v2[] = {"cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3", NULL};
  static const char* const v3[] = {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", NULL};
  static const char* const v4[] = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", NULL};
  static const char* const* const levels[] = {v2, v3, v4};
  static const char* const names[] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
  int level = 0;
  for (; level < 3; ++level)
    for (const char* const* f = levels[level]; *f; ++f)
      if (cpu_has(*f) != 1) return names[level];
  return names[level];
}
#elif defined(__aarch64__)
#include <sys/auxv.h>

static int cpu_has(const char* name) {
  unsigned long hw[3] = {0, getauxval(AT_HWCAP), getauxval(AT_HWCAP2)};
  int known = 0;
#define TGC_X(fname, word, bit)               \
  if (strcmp(name, fname) == 0) {             \
    if (!((hw[word] >> (bit)) & 1)) return 0; \
    known = 1;                                \
  }
  TGC_AARCH64_CPU_FEATURES(TGC_X)
#undef TGC_X
  return known ? 1 : -1;
}

static const char* const kArch = "aarch64";
static const char* best_level(void) { return "generic"; }
#else
static int cpu_has(const char* name) { return -1; }
static const char* const kArch = "this architecture's";
static const char* best_level(void) { return "generic"; }
#endif

int tgc_check_cpu(const tgc_model_desc* d) {
  const char* list = d->cpu_features;
  if (!list || !*list) return 0;
  char lacks[512] = "", unknown[128] = "";
  size_t nl = 0;
  for (const char* p = list; *p;) {
    size_t n = strcspn(p, ",");
    char name[64];
    if (n > 0) {
      size_t k = n < sizeof name ? n : sizeof name - 1; /* a longer name is no feature of the table */
      memcpy(name, p, k);
      name[k] = '\0';
      int has = k == n ? cpu_has(name) : -1;
      if (has == 0 && nl + n + 3 < sizeof lacks)
        nl += (size_t)snprintf(lacks + nl, sizeof lacks - nl, "%s%s", nl ? ", " : "", name);
      else if (has < 0 && !unknown[0])
        snprintf(unknown, sizeof unknown, "%s", name);
    }
    p += n + (p[n] == ',');
  }
  const char* model = d->name ? d->name : "?";
  const char* cpu = d->cpu_name ? d->cpu_name : "?";
  if (lacks[0]) {
    tgc_set_error(
        "model '%s' was compiled for %s CPUs with the features of --cpu=%s; this CPU lacks %s "
        "(recompile with --cpu=%s, which this CPU runs, or --cpu=<this CPU's name>)",
        model, kArch, cpu, lacks, best_level());
    return -1;
  }
  if (unknown[0]) {
    tgc_set_error(
        "model '%s' was compiled for --cpu=%s, which needs the CPU feature '%s': this runtime cannot "
        "check it (recompile with --cpu=%s)",
        model, cpu, unknown, best_level());
    return -1;
  }
  return 0;
}
