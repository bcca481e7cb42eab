/* Helpers every GPU backend shares (gpu_common.c). Runtime-internal, not part of the ABI. */
#ifndef TGC_GPU_COMMON_H
#define TGC_GPU_COMMON_H
#include <stddef.h>
#include <stdint.h>

/* TGC_VERBOSE set and not "0": backends say on stderr what they chose (device, caches, pools). */
int tgc_gpu_verbose(void);

/* FNV-1a over n bytes, continuing from h (start from TGC_FNV1A_BASIS). */
#define TGC_FNV1A_BASIS 0xcbf29ce484222325ull
uint64_t tgc_fnv1a(uint64_t h, const void* data, size_t n);

/* The directory of a backend's on-disk cache: $<env_var> where set, else $XDG_CACHE_HOME/tgc,
 * else ~/.cache/tgc. 0, or -1 where there is none (no HOME) or it does not fit in cap. */
int tgc_gpu_cache_dir(const char* env_var, char* out, size_t cap);

/* A GPU API's library loaded at run time: the first of `libs` (NULL-terminated) that dlopen finds,
 * then every symbol into its slot. 0, or -1 with `why` filled: "cannot load LIB (dlerror); HINT"
 * or "LIB has no SYMBOL (HINT)" (either hint may be NULL). */
typedef struct {
  void** slot;
  const char* name;
} tgc_dl_symbol;
int tgc_dl_load(void** lib, const char* const* libs, const tgc_dl_symbol* syms, size_t n, const char* load_hint,
                const char* symbol_hint, char* why, size_t cap);

#endif
