#define _GNU_SOURCE
#include "backends/cuda/cuda_api.h"

#include "backends/gpu_common.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int tgc_cuda_api_load(cuda_api* a, char* why, size_t why_size) {
  memset(a, 0, sizeof *a);
  static const char* const libs[] = {"libcuda.so.1", NULL};
  const tgc_dl_symbol syms[] = {
#define X(field, symbol, args) {(void**)&a->field, #symbol},
      CUDA_FUNCS(X)
#undef X
  };
  return tgc_dl_load(&a->lib, libs, syms, sizeof syms / sizeof syms[0], "install the NVIDIA driver", "driver too old?",
                     why, why_size);
}

const char* tgc_cuda_err(const cuda_api* a, CUresult r) {
  static _Thread_local char text[256];
  const char *name = NULL, *desc = NULL;
  if (a->cuGetErrorName) a->cuGetErrorName(r, &name);
  if (a->cuGetErrorString) a->cuGetErrorString(r, &desc);
  snprintf(text, sizeof text, "%s (%s)", name ? name : "CUDA error", desc ? desc : "no description");
  return text;
}
