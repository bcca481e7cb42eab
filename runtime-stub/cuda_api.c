#define _GNU_SOURCE
#include "cuda_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int tgc_cuda_api_load(cuda_api* a, char* why, size_t why_size) {
  memset(a, 0, sizeof *a);
  a->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!a->lib) {
    snprintf(why, why_size, "cannot load libcuda.so.1 (%s); install the NVIDIA driver", dlerror());
    return -1;
  }
  struct {
    void** slot;
    const char* name;
  } fns[] = {
#define FN(field, symbol) {(void**)&a->field, symbol}
      FN(cuInit, "cuInit"),
      FN(cuGetErrorName, "cuGetErrorName"),
      FN(cuGetErrorString, "cuGetErrorString"),
      FN(cuDeviceGetCount, "cuDeviceGetCount"),
      FN(cuDeviceGet, "cuDeviceGet"),
      FN(cuDeviceGetName, "cuDeviceGetName"),
      FN(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
      FN(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
      FN(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
      FN(cuCtxSetCurrent, "cuCtxSetCurrent"),
      FN(cuMemAlloc, "cuMemAlloc_v2"),
      FN(cuMemFree, "cuMemFree_v2"),
      FN(cuMemAllocHost, "cuMemAllocHost_v2"),
      FN(cuMemFreeHost, "cuMemFreeHost"),
      FN(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
      FN(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
      FN(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
      FN(cuModuleLoadDataEx, "cuModuleLoadDataEx"),
      FN(cuModuleUnload, "cuModuleUnload"),
      FN(cuModuleGetFunction, "cuModuleGetFunction"),
      FN(cuFuncGetAttribute, "cuFuncGetAttribute"),
      FN(cuLaunchKernel, "cuLaunchKernel"),
      FN(cuStreamCreate, "cuStreamCreate"),
      FN(cuStreamDestroy, "cuStreamDestroy_v2"),
      FN(cuStreamSynchronize, "cuStreamSynchronize"),
      FN(cuStreamBeginCapture, "cuStreamBeginCapture_v2"),
      FN(cuStreamEndCapture, "cuStreamEndCapture"),
      FN(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
      FN(cuGraphLaunch, "cuGraphLaunch"),
      FN(cuGraphExecDestroy, "cuGraphExecDestroy"),
      FN(cuGraphDestroy, "cuGraphDestroy"),
      FN(cuEventCreate, "cuEventCreate"),
      FN(cuEventRecord, "cuEventRecord"),
      FN(cuEventElapsedTime, "cuEventElapsedTime"),
      FN(cuEventDestroy, "cuEventDestroy_v2"),
#undef FN
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; ++i) {
    *fns[i].slot = dlsym(a->lib, fns[i].name);
    if (!*fns[i].slot) {
      snprintf(why, why_size, "libcuda.so.1 has no %s (driver too old?)", fns[i].name);
      return -1;
    }
  }
  return 0;
}

const char* tgc_cuda_err(const cuda_api* a, CUresult r) {
  static _Thread_local char text[256];
  const char *name = NULL, *desc = NULL;
  if (a->cuGetErrorName) a->cuGetErrorName(r, &name);
  if (a->cuGetErrorString) a->cuGetErrorString(r, &desc);
  snprintf(text, sizeof text, "%s (%s)", name ? name : "CUDA error", desc ? desc : "no description");
  return text;
}
