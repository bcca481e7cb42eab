/* A stand-in libOpenCL.so.1 for fault injection in the OpenCL runtime (runtime-stub/backends/opencl/opencl.c) on
 * machines without a GPU: the entry points the runtime loads (runtime-stub/backends/opencl/cl_api.h), with buffers
 * as host memory and kernels that do nothing. TGC_FAKE_CL_FAIL picks the fault:
 *   alloc:N   the Nth clCreateBuffer answers CL_MEM_OBJECT_ALLOCATION_FAILURE (memory runs out)
 *   build     clBuildProgram answers CL_BUILD_PROGRAM_FAILURE, with a build log
 *   launch    clEnqueueNDRangeKernel answers CL_OUT_OF_RESOURCES
 *   lost      the device is lost after create: every enqueue and clFinish of a run answers
 *             CL_INVALID_COMMAND_QUEUE (what drivers report once the queue is dead)
 *   nodevice  clGetDeviceIDs finds none
 *   noimages  the device has no image support (CL_DEVICE_IMAGE_SUPPORT false)
 * Unset: every call succeeds. Programs have no binaries, so the runtime's binary cache stays empty. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_api.h"

enum {
  DEVICE_NOT_FOUND = -1,
  ALLOCATION_FAILURE = -4,
  OUT_OF_RESOURCES = -5,
  BUILD_FAILURE = -11,
  INVALID_QUEUE = -36
};

struct _cl_mem {
  unsigned char* data;
  int owns;
};

static int create_calls, created; /* created: the runtime has made its buffers (a run may start) */
static char dummy;                /* what every other handle points to */

static int fault(const char* kind) {
  const char* f = getenv("TGC_FAKE_CL_FAIL");
  return f && strncmp(f, kind, strlen(kind)) == 0;
}
static int lost(void) { return created && fault("lost"); }
static void set(cl_int* e, cl_int v) {
  if (e) *e = v;
}

cl_int clGetPlatformIDs(cl_uint n, cl_platform_id* p, cl_uint* count) {
  if (p && n > 0) p[0] = (cl_platform_id)&dummy;
  if (count) *count = 1;
  return CL_SUCCESS;
}
cl_int clGetDeviceIDs(cl_platform_id p, cl_device_type t, cl_uint n, cl_device_id* d, cl_uint* count) {
  (void)p, (void)t;
  if (fault("nodevice")) return DEVICE_NOT_FOUND;
  if (d && n > 0) d[0] = (cl_device_id)&dummy;
  if (count) *count = 1;
  return CL_SUCCESS;
}
cl_int clGetDeviceInfo(cl_device_id d, cl_device_info what, size_t size, void* out, size_t* got) {
  (void)d;
  const char* text = what == CL_DEVICE_NAME      ? "Fake OpenCL device"
                     : what == CL_DRIVER_VERSION ? "0.1"
                                                 : "OpenCL 1.2 fake";
  if (!out) return CL_SUCCESS;
  memset(out, 0, size);
  if (what == CL_DEVICE_NAME || what == CL_DRIVER_VERSION || what == CL_DEVICE_VERSION) {
    strncpy(out, text, size - 1);
  } else if (what == CL_DEVICE_MEM_BASE_ADDR_ALIGN && size >= sizeof(cl_uint)) {
    *(cl_uint*)out = 1024;
  } else if (what == CL_DEVICE_GLOBAL_MEM_SIZE && size >= sizeof(cl_ulong)) {
    *(cl_ulong*)out = 1ull << 34;
  } else if (what == CL_DEVICE_IMAGE_SUPPORT && size >= sizeof(cl_bool)) {
    *(cl_bool*)out = !fault("noimages");
  } else if ((what == CL_DEVICE_IMAGE2D_MAX_WIDTH || what == CL_DEVICE_IMAGE2D_MAX_HEIGHT) && size >= sizeof(size_t)) {
    *(size_t*)out = 16384;
  }
  if (got) *got = size;
  return CL_SUCCESS;
}
cl_context clCreateContext(const cl_context_properties* p, cl_uint n, const cl_device_id* d,
                           void (*notify)(const char*, const void*, size_t, void*), void* user, cl_int* e) {
  (void)p, (void)n, (void)d, (void)notify, (void)user;
  return set(e, CL_SUCCESS), (cl_context)&dummy;
}
cl_command_queue clCreateCommandQueue(cl_context c, cl_device_id d, cl_command_queue_properties p, cl_int* e) {
  (void)c, (void)d, (void)p;
  created = 0;
  return set(e, CL_SUCCESS), (cl_command_queue)&dummy;
}
cl_mem clCreateBuffer(cl_context c, cl_mem_flags flags, size_t size, void* host, cl_int* e) {
  (void)c;
  const char* f = getenv("TGC_FAKE_CL_FAIL");
  if (fault("alloc:") && ++create_calls == atoi(f + 6)) return set(e, ALLOCATION_FAILURE), NULL;
  struct _cl_mem* m = calloc(1, sizeof *m);
  if (m) m->data = calloc(1, size), m->owns = 1;
  if (!m || !m->data) return free(m), set(e, ALLOCATION_FAILURE), NULL;
  if (host && (flags & CL_MEM_COPY_HOST_PTR)) memcpy(m->data, host, size);
  return set(e, CL_SUCCESS), m;
}
/* Images are host memory too, counted with the buffers by alloc:N. */
cl_mem clCreateImage(cl_context c, cl_mem_flags flags, const cl_image_format* format, const cl_image_desc* desc,
                     void* host, cl_int* e) {
  size_t texel = format->image_channel_data_type == CL_HALF_FLOAT ? 8 : 16;
  return clCreateBuffer(c, flags, desc->image_width * desc->image_height * texel, host, e);
}
cl_mem clCreateSubBuffer(cl_mem parent, cl_mem_flags flags, cl_buffer_create_type t, const void* region, cl_int* e) {
  (void)flags, (void)t;
  struct _cl_mem* m = calloc(1, sizeof *m);
  if (!m) return set(e, ALLOCATION_FAILURE), NULL;
  m->data = parent->data + ((const cl_buffer_region*)region)->origin;
  return set(e, CL_SUCCESS), m;
}
cl_program clCreateProgramWithSource(cl_context c, cl_uint n, const char** s, const size_t* len, cl_int* e) {
  (void)c, (void)n, (void)s, (void)len;
  return set(e, CL_SUCCESS), (cl_program)&dummy;
}
cl_program clCreateProgramWithBinary(cl_context c, cl_uint n, const cl_device_id* d, const size_t* len,
                                     const unsigned char** bin, cl_int* status, cl_int* e) {
  (void)c, (void)n, (void)d, (void)len, (void)bin, (void)status;
  return set(e, -42 /* CL_INVALID_BINARY: there are none */), NULL;
}
cl_int clBuildProgram(cl_program p, cl_uint n, const cl_device_id* d, const char* opts,
                      void (*notify)(cl_program, void*), void* user) {
  (void)p, (void)n, (void)d, (void)opts, (void)notify, (void)user;
  return fault("build") ? BUILD_FAILURE : CL_SUCCESS;
}
cl_int clGetProgramBuildInfo(cl_program p, cl_device_id d, cl_program_build_info what, size_t size, void* out,
                             size_t* got) {
  (void)p, (void)d, (void)what;
  const char* log = "<kernel>:3:12: error: use of undeclared identifier 'fake'\n";
  if (out && size > 0) strncpy(out, log, size - 1), ((char*)out)[size - 1] = 0;
  if (got) *got = strlen(log) + 1;
  return CL_SUCCESS;
}
cl_int clGetProgramInfo(cl_program p, cl_program_info what, size_t size, void* out, size_t* got) {
  (void)p, (void)what;
  if (out) memset(out, 0, size); /* binary sizes 0: nothing to cache */
  if (got) *got = size;
  return CL_SUCCESS;
}
cl_kernel clCreateKernel(cl_program p, const char* name, cl_int* e) {
  (void)p, (void)name;
  created = 1; /* kernels are made at the first run, after every buffer */
  return set(e, CL_SUCCESS), (cl_kernel)&dummy;
}
cl_int clSetKernelArg(cl_kernel k, cl_uint i, size_t size, const void* v) {
  return (void)k, (void)i, (void)size, (void)v, CL_SUCCESS;
}
cl_int clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t* offset, const size_t* global,
                              const size_t* local, cl_uint n, const cl_event* wait, cl_event* ev) {
  (void)q, (void)k, (void)dims, (void)offset, (void)global, (void)local, (void)n, (void)wait;
  if (ev) *ev = NULL;
  return fault("launch") ? OUT_OF_RESOURCES : lost() ? INVALID_QUEUE : CL_SUCCESS;
}
cl_int clEnqueueWriteBuffer(cl_command_queue q, cl_mem m, cl_bool block, size_t at, size_t size, const void* src,
                            cl_uint n, const cl_event* wait, cl_event* ev) {
  (void)q, (void)block, (void)n, (void)wait, (void)ev;
  if (lost()) return INVALID_QUEUE;
  return memcpy(m->data + at, src, size), CL_SUCCESS;
}
cl_int clEnqueueReadBuffer(cl_command_queue q, cl_mem m, cl_bool block, size_t at, size_t size, void* dst, cl_uint n,
                           const cl_event* wait, cl_event* ev) {
  (void)q, (void)block, (void)n, (void)wait, (void)ev;
  if (lost()) return INVALID_QUEUE;
  return memcpy(dst, m->data + at, size), CL_SUCCESS;
}
void* clEnqueueMapBuffer(cl_command_queue q, cl_mem m, cl_bool block, cl_map_flags flags, size_t at, size_t size,
                         cl_uint n, const cl_event* wait, cl_event* ev, cl_int* e) {
  (void)q, (void)block, (void)flags, (void)size, (void)n, (void)wait, (void)ev;
  return set(e, CL_SUCCESS), m->data + at;
}
cl_int clEnqueueUnmapMemObject(cl_command_queue q, cl_mem m, void* p, cl_uint n, const cl_event* wait, cl_event* ev) {
  return (void)q, (void)m, (void)p, (void)n, (void)wait, (void)ev, CL_SUCCESS;
}
cl_int clFinish(cl_command_queue q) { return (void)q, lost() ? INVALID_QUEUE : CL_SUCCESS; }
cl_int clReleaseMemObject(cl_mem m) {
  if (m && m->owns) free(m->data);
  free(m);
  return CL_SUCCESS;
}
cl_int clReleaseKernel(cl_kernel k) { return (void)k, CL_SUCCESS; }
cl_int clReleaseProgram(cl_program p) { return (void)p, CL_SUCCESS; }
cl_int clReleaseCommandQueue(cl_command_queue q) { return (void)q, CL_SUCCESS; }
cl_int clReleaseContext(cl_context c) { return (void)c, CL_SUCCESS; }
cl_int clGetKernelWorkGroupInfo(cl_kernel k, cl_device_id d, cl_uint what, size_t size, void* out, size_t* got) {
  (void)k, (void)d, (void)what;
  if (out && size >= sizeof(size_t)) *(size_t*)out = 1024;
  if (got) *got = sizeof(size_t);
  return CL_SUCCESS;
}
cl_int clGetEventProfilingInfo(cl_event ev, cl_uint what, size_t size, void* out, size_t* got) {
  (void)ev, (void)what;
  if (out) memset(out, 0, size);
  if (got) *got = size;
  return CL_SUCCESS;
}
cl_int clReleaseEvent(cl_event ev) { return (void)ev, CL_SUCCESS; }
