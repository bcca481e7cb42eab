#define _GNU_SOURCE
#include "backends/opencl/cl_api.h"

#include "backends/gpu_common.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int tgc_cl_api_load(cl_api* a, char* why, size_t cap) {
  static const char* const libs[] = {"libOpenCL.so.1", "libOpenCL.so", NULL};
  const tgc_dl_symbol syms[] = {
#define X(ret, name, args) {(void**)&a->name, #name},
      CL_FUNCS(X)
#undef X
  };
  return tgc_dl_load(&a->lib, libs, syms, sizeof syms / sizeof syms[0], NULL, "needs OpenCL 1.2", why, cap);
}

int tgc_cl_api_pick_device(const cl_api* a, cl_platform_id* platform, cl_device_id* device, char* why, size_t cap) {
  cl_uint np = 0;
  cl_int e = a->clGetPlatformIDs(0, NULL, &np);
  if (e != CL_SUCCESS || np == 0)
    return snprintf(why, cap, "no OpenCL platform found (%s)", e == CL_SUCCESS ? "0 platforms" : tgc_cl_err(e)), -1;
  cl_platform_id* ps = calloc(np, sizeof *ps);
  if (!ps) return snprintf(why, cap, "out of memory"), -1;
  a->clGetPlatformIDs(np, ps, NULL);
  *device = NULL;
  for (int pass = 0; pass < 2 && !*device; ++pass) {
    cl_device_type want = pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL;
    for (cl_uint i = 0; i < np && !*device; ++i) {
      cl_device_id d;
      cl_uint nd = 0;
      if (a->clGetDeviceIDs(ps[i], want, 1, &d, &nd) == CL_SUCCESS && nd > 0) {
        *device = d;
        *platform = ps[i];
      }
    }
  }
  free(ps);
  if (!*device) return snprintf(why, cap, "no OpenCL device found on %u platform(s)", np), -1;
  return 0;
}

const char* tgc_cl_err(cl_int e) {
  switch (e) {
#define E(n, v) \
  case v: return #n;
    E(CL_DEVICE_NOT_FOUND, -1)
    E(CL_DEVICE_NOT_AVAILABLE, -2) E(CL_COMPILER_NOT_AVAILABLE, -3) E(CL_MEM_OBJECT_ALLOCATION_FAILURE, -4)
        E(CL_OUT_OF_RESOURCES, -5) E(CL_OUT_OF_HOST_MEMORY, -6) E(CL_BUILD_PROGRAM_FAILURE, -11)
            E(CL_MISALIGNED_SUB_BUFFER_OFFSET, -13) E(CL_INVALID_VALUE, -30) E(CL_INVALID_DEVICE_TYPE, -31)
                E(CL_INVALID_PLATFORM, -32) E(CL_INVALID_DEVICE, -33) E(CL_INVALID_CONTEXT, -34)
                    E(CL_INVALID_COMMAND_QUEUE, -36) E(CL_INVALID_HOST_PTR, -37) E(CL_INVALID_MEM_OBJECT, -38)
                        E(CL_INVALID_BINARY, -42) E(CL_INVALID_BUILD_OPTIONS, -43) E(CL_INVALID_PROGRAM, -44) E(
                            CL_INVALID_PROGRAM_EXECUTABLE, -45) E(CL_INVALID_KERNEL_NAME, -46)
                            E(CL_INVALID_KERNEL_DEFINITION, -47) E(CL_INVALID_KERNEL, -48) E(CL_INVALID_ARG_INDEX, -49)
                                E(CL_INVALID_ARG_VALUE, -50) E(CL_INVALID_ARG_SIZE, -51) E(CL_INVALID_KERNEL_ARGS, -52)
                                    E(CL_INVALID_WORK_DIMENSION, -53) E(CL_INVALID_WORK_GROUP_SIZE, -54)
                                        E(CL_INVALID_WORK_ITEM_SIZE, -55) E(CL_INVALID_GLOBAL_OFFSET, -56)
                                            E(CL_INVALID_OPERATION, -59) E(CL_INVALID_BUFFER_SIZE, -61)
                                                E(CL_INVALID_GLOBAL_WORK_SIZE, -63) E(CL_PLATFORM_NOT_FOUND_KHR, -1001)
#undef E
                                                    default : return "unknown OpenCL error";
  }
}
