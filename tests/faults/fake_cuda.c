/* A stand-in libcuda.so.1 for fault injection in the CUDA runtime (runtime-stub/backends/cuda/cuda.c) on
 * machines without a GPU: the driver API entry points the runtime loads, with device memory as
 * host memory and kernels that do nothing. TGC_FAKE_CUDA_FAIL picks the fault:
 *   alloc:N  the Nth cuMemAlloc answers CUDA_ERROR_OUT_OF_MEMORY (device memory runs out)
 *   jit      cuModuleLoadDataEx answers CUDA_ERROR_INVALID_PTX with a JIT log
 *   launch   cuLaunchKernel answers CUDA_ERROR_LAUNCH_FAILED
 *   lost     the device is lost after create: every call of a run answers CUDA_ERROR_ILLEGAL_ADDRESS
 *            (a sticky error, as after an Xid: the context is unusable)
 *   nodevice cuDeviceGetCount finds none
 *   small    cuMemGetInfo reports 1 KiB free (a model larger than the device's memory)
 * Unset: every call succeeds. */
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum { OK = 0, OUT_OF_MEMORY = 2, INVALID_PTX = 218, ILLEGAL_ADDRESS = 700, LAUNCH_FAILED = 719 };

static int alloc_calls;
static int fault(const char* kind) {
  const char* f = getenv("TGC_FAKE_CUDA_FAIL");
  return f && strncmp(f, kind, strlen(kind)) == 0;
}
static int lost(void) { return fault("lost"); }
static char dummy; /* what every handle points to */

CUresult cuInit(unsigned flags) { return (void)flags, OK; }
CUresult cuGetErrorName(CUresult r, const char** s) {
  *s = r == OUT_OF_MEMORY     ? "CUDA_ERROR_OUT_OF_MEMORY"
       : r == INVALID_PTX     ? "CUDA_ERROR_INVALID_PTX"
       : r == ILLEGAL_ADDRESS ? "CUDA_ERROR_ILLEGAL_ADDRESS"
       : r == LAUNCH_FAILED   ? "CUDA_ERROR_LAUNCH_FAILED"
                              : "CUDA_ERROR_UNKNOWN";
  return OK;
}
CUresult cuGetErrorString(CUresult r, const char** s) {
  *s = r == OUT_OF_MEMORY     ? "out of memory"
       : r == INVALID_PTX     ? "a PTX JIT compilation failed"
       : r == ILLEGAL_ADDRESS ? "an illegal memory access was encountered"
       : r == LAUNCH_FAILED   ? "unspecified launch failure"
                              : "unknown";
  return OK;
}
CUresult cuDeviceGetCount(int* n) { return *n = fault("nodevice") ? 0 : 1, OK; }
CUresult cuDeviceGet(int* d, int i) { return *d = i, OK; }
CUresult cuDeviceGetName(char* name, int len, int d) {
  (void)d;
  strncpy(name, "Fake CUDA device", (size_t)len);
  return OK;
}
CUresult cuDeviceGetAttribute(int* v, int attr, int d) { return (void)attr, (void)d, *v = 1024, OK; }
CUresult cuDevicePrimaryCtxRetain(void** ctx, int d) { return (void)d, *ctx = &dummy, OK; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return (void)d, OK; }
CUresult cuCtxSetCurrent(void* ctx) { return (void)ctx, OK; }
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
  const char* f = getenv("TGC_FAKE_CUDA_FAIL");
  if (fault("alloc:") && ++alloc_calls == atoi(f + 6)) return OUT_OF_MEMORY;
  void* m = calloc(1, n);
  if (!m) return OUT_OF_MEMORY;
  *p = (CUdeviceptr)(unsigned long)m;
  return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) { return free((void*)(unsigned long)p), OK; }
/* 1 GiB free of 2, or (small) 1 KiB free: less than any model needs. */
CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  *total = (size_t)2 << 30;
  *free_bytes = fault("small") ? 1024 : (size_t)1 << 30;
  return OK;
}
CUresult cuMemAllocHost_v2(void** p, size_t n) { return (*p = calloc(1, n)) ? OK : OUT_OF_MEMORY; }
CUresult cuMemFreeHost(void* p) { return free(p), OK; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) { return memcpy((void*)(unsigned long)d, s, n), OK; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, void* st) {
  (void)st;
  if (lost()) return ILLEGAL_ADDRESS;
  return memcpy((void*)(unsigned long)d, s, n), OK;
}
CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, void* st) {
  (void)st;
  if (lost()) return ILLEGAL_ADDRESS;
  return memcpy(d, (void*)(unsigned long)s, n), OK;
}
CUresult cuModuleLoadDataEx(void** m, const void* image, unsigned n, int* opts, void** vals) {
  (void)image;
  if (fault("jit")) {
    for (unsigned i = 0; i < n; ++i)
      if (opts[i] == 5 /* CU_JIT_ERROR_LOG_BUFFER */)
        strcpy((char*)vals[i], "ptxas fatal   : Unresolved extern function 'fake'\n");
    return INVALID_PTX;
  }
  return *m = &dummy, OK;
}
CUresult cuModuleUnload(void* m) { return (void)m, OK; }
CUresult cuModuleGetFunction(void** f, void* m, const char* name) { return (void)m, (void)name, *f = &dummy, OK; }
CUresult cuFuncGetAttribute(int* v, int attr, void* f) { return (void)attr, (void)f, *v = 1024, OK; }
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void* st, void** params, void** extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)st, (void)params,
      (void)extra;
  return fault("launch") ? LAUNCH_FAILED : lost() ? ILLEGAL_ADDRESS : OK;
}
CUresult cuStreamCreate(void** st, unsigned flags) { return (void)flags, *st = &dummy, OK; }
CUresult cuStreamDestroy_v2(void* st) { return (void)st, OK; }
CUresult cuStreamSynchronize(void* st) { return (void)st, lost() ? ILLEGAL_ADDRESS : OK; }
CUresult cuStreamBeginCapture_v2(void* st, int mode) { return (void)st, (void)mode, OK; }
CUresult cuStreamEndCapture(void* st, void** g) { return (void)st, *g = &dummy, OK; }
CUresult cuGraphInstantiateWithFlags(void** e, void* g, unsigned long long flags) {
  return (void)g, (void)flags, *e = &dummy, OK;
}
CUresult cuGraphLaunch(void* e, void* st) { return (void)e, (void)st, lost() ? ILLEGAL_ADDRESS : OK; }
CUresult cuGraphExecDestroy(void* e) { return (void)e, OK; }
CUresult cuGraphDestroy(void* g) { return (void)g, OK; }
CUresult cuEventCreate(void** e, unsigned flags) { return (void)flags, *e = &dummy, OK; }
CUresult cuEventRecord(void* e, void* st) { return (void)e, (void)st, OK; }
CUresult cuEventElapsedTime(float* ms, void* a, void* b) { return (void)a, (void)b, *ms = 0, OK; }
CUresult cuEventDestroy_v2(void* e) { return (void)e, OK; }
