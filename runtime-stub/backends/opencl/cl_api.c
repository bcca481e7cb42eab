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
  static const struct {
    cl_int code;
    const char* name;
  } errors[] = {
      {-1, "CL_DEVICE_NOT_FOUND"},
      {-2, "CL_DEVICE_NOT_AVAILABLE"},
      {-3, "CL_COMPILER_NOT_AVAILABLE"},
      {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {-5, "CL_OUT_OF_RESOURCES"},
      {-6, "CL_OUT_OF_HOST_MEMORY"},
      {-11, "CL_BUILD_PROGRAM_FAILURE"},
      {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
      {-30, "CL_INVALID_VALUE"},
      {-31, "CL_INVALID_DEVICE_TYPE"},
      {-32, "CL_INVALID_PLATFORM"},
      {-33, "CL_INVALID_DEVICE"},
      {-34, "CL_INVALID_CONTEXT"},
      {-36, "CL_INVALID_COMMAND_QUEUE"},
      {-37, "CL_INVALID_HOST_PTR"},
      {-38, "CL_INVALID_MEM_OBJECT"},
      {-42, "CL_INVALID_BINARY"},
      {-43, "CL_INVALID_BUILD_OPTIONS"},
      {-44, "CL_INVALID_PROGRAM"},
      {-46, "CL_INVALID_KERNEL_NAME"},
      {-47, "CL_INVALID_KERNEL_DEFINITION"},
      {-48, "CL_INVALID_KERNEL"},
      {-49, "CL_INVALID_ARG_INDEX"},
      {-50, "CL_INVALID_ARG_VALUE"},
      {-51, "CL_INVALID_ARG_SIZE"},
      {-52, "CL_INVALID_KERNEL_ARGS"},
      {-53, "CL_INVALID_WORK_DIMENSION"},
      {-54, "CL_INVALID_WORK_GROUP_SIZE"},
      {-55, "CL_INVALID_WORK_ITEM_SIZE"},
      {-56, "CL_INVALID_GLOBAL_OFFSET"},
      {-59, "CL_INVALID_OPERATION"},
      {-61, "CL_INVALID_BUFFER_SIZE"},
      {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
  };
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; ++i)
    if (errors[i].code == e) return errors[i].name;
  return "unknown OpenCL error";
}
