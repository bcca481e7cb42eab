/* Helpers every GPU backend shares: the verbose switch, the cache key hash, the cache directory. */
#define _GNU_SOURCE
#include "backends/gpu_common.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tgc_gpu_verbose(void) {
  const char* v = getenv("TGC_VERBOSE");
  return v && v[0] && strcmp(v, "0") != 0;
}

uint64_t tgc_fnv1a(uint64_t h, const void* data, size_t n) {
  const unsigned char* p = data;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

int tgc_gpu_cache_dir(const char* env_var, char* out, size_t cap) {
  const char* env = getenv(env_var);
  const char* xdg = getenv("XDG_CACHE_HOME");
  const char* home = getenv("HOME");
  int n;
  if (env && env[0])
    n = snprintf(out, cap, "%s", env);
  else if (xdg && xdg[0])
    n = snprintf(out, cap, "%s/tgc", xdg);
  else if (home && home[0])
    n = snprintf(out, cap, "%s/.cache/tgc", home);
  else
    return -1;
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

int tgc_dl_load(void** lib, const char* const* libs, const tgc_dl_symbol* syms, size_t n, const char* load_hint,
                const char* symbol_hint, char* why, size_t cap) {
  for (const char* const* l = libs; *l && !*lib; ++l) *lib = dlopen(*l, RTLD_NOW | RTLD_LOCAL);
  if (!*lib)
    return snprintf(why, cap, "cannot load %s (%s)%s%s", libs[0], dlerror(), load_hint ? "; " : "",
                    load_hint ? load_hint : ""),
           -1;
  for (size_t i = 0; i < n; ++i)
    if (!(*syms[i].slot = dlsym(*lib, syms[i].name)))
      return snprintf(why, cap, "%s has no %s%s%s%s", libs[0], syms[i].name, symbol_hint ? " (" : "",
                      symbol_hint ? symbol_hint : "", symbol_hint ? ")" : ""),
             -1;
  return 0;
}
