/* The part of the CUDA driver API the runtime uses, declared here (no CUDA headers are needed
 * to build) and loaded from libcuda.so.1 with dlopen, so an artifact starts without the driver
 * and says so in one line. Types and values follow the driver API's cuda.h; functions that
 * cuda.h maps to a versioned symbol (cuMemAlloc -> cuMemAlloc_v2) are looked up by that name. */
#ifndef TGC_CUDA_API_H
#define TGC_CUDA_API_H
#include <stddef.h>

typedef int CUresult; /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;

enum {
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_STREAM_NON_BLOCKING = 1,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_EVENT_DEFAULT = 0,
};

/* The driver API functions the runtime loads: X(field, symbol, parameters); each returns CUresult. */
#define CUDA_FUNCS(X)                                                                                             \
  X(cuInit, cuInit, (unsigned))                                                                                   \
  X(cuGetErrorName, cuGetErrorName, (CUresult, const char**))                                                     \
  X(cuGetErrorString, cuGetErrorString, (CUresult, const char**))                                                 \
  X(cuDeviceGetCount, cuDeviceGetCount, (int*))                                                                   \
  X(cuDeviceGet, cuDeviceGet, (CUdevice*, int))                                                                   \
  X(cuDeviceGetName, cuDeviceGetName, (char*, int, CUdevice))                                                     \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, (int*, int, CUdevice))                                            \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, (CUcontext*, CUdevice))                                   \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, (CUdevice))                                          \
  X(cuCtxSetCurrent, cuCtxSetCurrent, (CUcontext))                                                                \
  X(cuMemAlloc, cuMemAlloc_v2, (CUdeviceptr*, size_t))                                                            \
  X(cuMemFree, cuMemFree_v2, (CUdeviceptr))                                                                       \
  X(cuMemGetInfo, cuMemGetInfo_v2, (size_t*, size_t*))                                                            \
  X(cuMemAllocHost, cuMemAllocHost_v2, (void**, size_t))                                                          \
  X(cuMemFreeHost, cuMemFreeHost, (void*))                                                                        \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2, (CUdeviceptr, const void*, size_t))                                            \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, (CUdeviceptr, const void*, size_t, CUstream))                        \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, (void*, CUdeviceptr, size_t, CUstream))                              \
  X(cuModuleLoadDataEx, cuModuleLoadDataEx, (CUmodule*, const void*, unsigned, int*, void**))                     \
  X(cuModuleUnload, cuModuleUnload, (CUmodule))                                                                   \
  X(cuModuleGetFunction, cuModuleGetFunction, (CUfunction*, CUmodule, const char*))                               \
  X(cuFuncGetAttribute, cuFuncGetAttribute, (int*, int, CUfunction))                                              \
  X(cuLaunchKernel, cuLaunchKernel,                                                                               \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**)) \
  X(cuStreamCreate, cuStreamCreate, (CUstream*, unsigned))                                                        \
  X(cuStreamDestroy, cuStreamDestroy_v2, (CUstream))                                                              \
  X(cuStreamSynchronize, cuStreamSynchronize, (CUstream))                                                         \
  X(cuStreamBeginCapture, cuStreamBeginCapture_v2, (CUstream, int))                                               \
  X(cuStreamEndCapture, cuStreamEndCapture, (CUstream, CUgraph*))                                                 \
  X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, (CUgraphExec*, CUgraph, unsigned long long))        \
  X(cuGraphLaunch, cuGraphLaunch, (CUgraphExec, CUstream))                                                        \
  X(cuGraphExecDestroy, cuGraphExecDestroy, (CUgraphExec))                                                        \
  X(cuGraphDestroy, cuGraphDestroy, (CUgraph))                                                                    \
  X(cuEventCreate, cuEventCreate, (CUevent*, unsigned))                                                           \
  X(cuEventRecord, cuEventRecord, (CUevent, CUstream))                                                            \
  X(cuEventElapsedTime, cuEventElapsedTime, (float*, CUevent, CUevent))                                           \
  X(cuEventDestroy, cuEventDestroy_v2, (CUevent))

typedef struct {
  void* lib;
#define X(field, symbol, args) CUresult(*field) args;
  CUDA_FUNCS(X)
#undef X
} cuda_api;

/* Loads libcuda.so.1 and every function above. 0, or -1 with `why` filled (one line). */
int tgc_cuda_api_load(cuda_api* a, char* why, size_t why_size);
/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for r; a static or driver-owned string. */
const char* tgc_cuda_err(const cuda_api* a, CUresult r);

#endif
