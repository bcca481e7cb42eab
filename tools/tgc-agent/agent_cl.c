/* tgc-agent's OpenCL side: times `time-cl` candidates (cl_candidate.h) on the device the tgc
 * runtime would pick (the first GPU, else the first device of any type). libOpenCL is
 * dlopen'ed and the few CL declarations are written out here, as runtime-stub/opencl.c does,
 * so the agent builds without CL headers (the aarch64 sysroot has none) and runs without
 * OpenCL when it only times CPU candidates. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "cl_candidate.h"

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_bitfield;
typedef intptr_t cl_context_properties;
typedef struct _cl_platform_id* cl_platform_id;
typedef struct _cl_device_id* cl_device_id;
typedef struct _cl_context* cl_context;
typedef struct _cl_command_queue* cl_command_queue;
typedef struct _cl_mem* cl_mem;
typedef struct _cl_program* cl_program;
typedef struct _cl_kernel* cl_kernel;
typedef struct _cl_event* cl_event;

#define CL_SUCCESS 0
#define CL_DEVICE_TYPE_GPU (1 << 2)
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFF
#define CL_DEVICE_NAME 0x102B
#define CL_DRIVER_VERSION 0x102D
#define CL_CONTEXT_PLATFORM 0x1084
#define CL_MEM_READ_WRITE (1 << 0)
#define CL_MEM_COPY_HOST_PTR (1 << 5)
#define CL_PROGRAM_BUILD_LOG 0x1183
#define CL_TRUE 1

#define CL_FUNCS(X)                                                                                                  \
  X(cl_int, clGetPlatformIDs, (cl_uint, cl_platform_id*, cl_uint*))                                                  \
  X(cl_int, clGetDeviceIDs, (cl_platform_id, cl_bitfield, cl_uint, cl_device_id*, cl_uint*))                         \
  X(cl_int, clGetDeviceInfo, (cl_device_id, cl_uint, size_t, void*, size_t*))                                        \
  X(cl_context, clCreateContext,                                                                                     \
    (const cl_context_properties*, cl_uint, const cl_device_id*, void (*)(const char*, const void*, size_t, void*), \
     void*, cl_int*))                                                                                                \
  X(cl_command_queue, clCreateCommandQueue, (cl_context, cl_device_id, cl_bitfield, cl_int*))                        \
  X(cl_mem, clCreateBuffer, (cl_context, cl_bitfield, size_t, void*, cl_int*))                                       \
  X(cl_program, clCreateProgramWithSource, (cl_context, cl_uint, const char**, const size_t*, cl_int*))              \
  X(cl_int, clBuildProgram, (cl_program, cl_uint, const cl_device_id*, const char*, void (*)(cl_program, void*), void*)) \
  X(cl_int, clGetProgramBuildInfo, (cl_program, cl_device_id, cl_uint, size_t, void*, size_t*))                      \
  X(cl_kernel, clCreateKernel, (cl_program, const char*, cl_int*))                                                   \
  X(cl_int, clSetKernelArg, (cl_kernel, cl_uint, size_t, const void*))                                               \
  X(cl_int, clEnqueueNDRangeKernel,                                                                                  \
    (cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*, const size_t*, cl_uint, const cl_event*,    \
     cl_event*))                                                                                                     \
  X(cl_int, clEnqueueReadBuffer,                                                                                     \
    (cl_command_queue, cl_mem, cl_uint, size_t, size_t, void*, cl_uint, const cl_event*, cl_event*))                 \
  X(cl_int, clFinish, (cl_command_queue))                                                                            \
  X(cl_int, clReleaseMemObject, (cl_mem))                                                                            \
  X(cl_int, clReleaseKernel, (cl_kernel))                                                                            \
  X(cl_int, clReleaseProgram, (cl_program))

static struct {
#define X(ret, name, args) ret(*name) args;
  CL_FUNCS(X)
#undef X
  cl_platform_id platform;
  cl_device_id device;
  cl_context ctx; /* created at the first candidate: an agent timing CPU code never needs one */
  cl_command_queue queue;
} cl;

/* Finds the device; 0, or -1 with the reason in why. */
static int find_device(char* why, size_t cap) {
  void* lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return snprintf(why, cap, "cannot load libOpenCL.so.1"), -1;
#define X(ret, name, args)                                                         \
  if (!(*(void**)(&cl.name) = dlsym(lib, #name))) {                                \
    return snprintf(why, cap, "libOpenCL has no %s (needs OpenCL 1.2)", #name), -1; \
  }
  CL_FUNCS(X)
#undef X
  cl_uint np = 0;
  if (cl.clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) return snprintf(why, cap, "no OpenCL platform"), -1;
  cl_platform_id ps[16];
  if (np > 16) np = 16;
  cl.clGetPlatformIDs(np, ps, NULL);
  /* As runtime-stub/opencl.c picks: a GPU first, then any device. */
  for (int pass = 0; pass < 2 && !cl.device; ++pass)
    for (cl_uint i = 0; i < np && !cl.device; ++i) {
      cl_uint nd = 0;
      if (cl.clGetDeviceIDs(ps[i], pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL, 1, &cl.device, &nd) != CL_SUCCESS || nd == 0)
        cl.device = NULL;
      else
        cl.platform = ps[i];
    }
  if (!cl.device) return snprintf(why, cap, "no OpenCL device on %u platform(s)", np), -1;
  return 0;
}

void agent_cl_describe(char* line, size_t cap) {
  char why[256], name[256] = "", driver[128] = "";
  if (find_device(why, sizeof why) != 0) {
    cl.device = NULL;
    snprintf(line, cap, "no-opencl %s", why);
    return;
  }
  cl.clGetDeviceInfo(cl.device, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
  cl.clGetDeviceInfo(cl.device, CL_DRIVER_VERSION, sizeof driver - 1, driver, NULL);
  for (char* c = name; *c; ++c)
    if (*c == '\n' || *c == '\r') *c = ' ';
  for (char* c = driver; *c; ++c)
    if (*c == '\n' || *c == '\r') *c = ' ';
  snprintf(line, cap, "opencl %s, driver %s", name, driver);
}

static const char* cl_err(cl_int e) {
  static char buf[64];
  const char* name = e == -4 ? "CL_MEM_OBJECT_ALLOCATION_FAILURE" : e == -5 ? "CL_OUT_OF_RESOURCES"
                   : e == -6 ? "CL_OUT_OF_HOST_MEMORY" : e == -11 ? "CL_BUILD_PROGRAM_FAILURE"
                   : e == -46 ? "CL_INVALID_KERNEL_NAME" : e == -54 ? "CL_INVALID_WORK_GROUP_SIZE"
                   : e == -55 ? "CL_INVALID_WORK_ITEM_SIZE" : "OpenCL error";
  snprintf(buf, sizeof buf, "%s (%d)", name, e);
  return buf;
}

typedef struct {
  cl_kernel kernel;
  size_t global, local;
  cl_int error;
} cl_run;

/* `reps` launches, then waits for all of them: the wall clock around it is the sample. */
static int run_cl(void* ctx, long long reps) {
  cl_run* r = ctx;
  for (long long i = 0; i < reps && r->error == CL_SUCCESS; ++i)
    r->error = cl.clEnqueueNDRangeKernel(cl.queue, r->kernel, 1, NULL, &r->global, r->local ? &r->local : NULL, 0, NULL, NULL);
  cl_int f = cl.clFinish(cl.queue);
  if (r->error == CL_SUCCESS) r->error = f;
  return r->error == CL_SUCCESS ? 0 : -1;
}

/* The build log as one line. */
static void build_log(cl_program p, char* log, size_t cap) {
  size_t n = 0;
  log[0] = 0;
  cl.clGetProgramBuildInfo(p, cl.device, CL_PROGRAM_BUILD_LOG, cap - 1, log, &n);
  log[cap - 1] = 0;
  for (char* c = log; *c; ++c)
    if (*c == '\n' || *c == '\r') *c = ' ';
}

void agent_time_cl(const char* payload, size_t bytes, long long max_iters, double budget_ms) {
  static tgc_cl_candidate c; /* large (its buffer tables), and one at a time */
  char msg[1024];
  if (!cl.device) return agent_reply_err("no OpenCL device", NULL);
  if (tgc_cl_candidate_parse(payload, bytes, &c, msg, sizeof msg) != 0) return agent_reply_err("bad OpenCL candidate", msg);
  cl_int e = CL_SUCCESS;
  if (!cl.ctx) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)cl.platform, 0};
    cl.ctx = cl.clCreateContext(props, 1, &cl.device, NULL, NULL, &e);
    if (cl.ctx) cl.queue = cl.clCreateCommandQueue(cl.ctx, cl.device, 0, &e);
    if (!cl.queue) return agent_reply_err("cannot create an OpenCL context and queue", cl_err(e));
  }
  cl_program prog = cl.clCreateProgramWithSource(cl.ctx, 1, &c.source, &c.source_len, &e);
  if (!prog) return agent_reply_err("clCreateProgramWithSource", cl_err(e));
  cl_kernel kernel = NULL;
  cl_mem* mem = calloc((size_t)c.num_buffers, sizeof *mem);
  void* out = NULL;
  size_t out_bytes = c.buffer_bytes[0] > 0 ? (size_t)c.buffer_bytes[0] : 1;
  if (!mem) {
    agent_reply_err("out of memory", NULL);
    goto done;
  }
  if ((e = cl.clBuildProgram(prog, 1, &cl.device, "", NULL, NULL)) != CL_SUCCESS) {
    char log[700];
    build_log(prog, log, sizeof log);
    snprintf(msg, sizeof msg, "%s: %s", cl_err(e), log);
    agent_reply_err("build failed", msg);
    goto done;
  }
  if (!(kernel = cl.clCreateKernel(prog, c.kernel, &e))) {
    snprintf(msg, sizeof msg, "%s: %s", c.kernel, cl_err(e));
    agent_reply_err("clCreateKernel", msg);
    goto done;
  }
  /* Inputs as the CPU path fills them, copied to the device; buffer 0 (the output) is read back. */
  for (int32_t i = 0; i < c.num_buffers; ++i) {
    size_t n = c.buffer_bytes[i] > 0 ? (size_t)c.buffer_bytes[i] : 1;
    void* host = malloc(n);
    if (!host) {
      agent_reply_err("out of memory", NULL);
      goto done;
    }
    agent_fill(host, c.buffer_bytes[i], c.buffer_dtypes[i], agent_seed(i));
    mem[i] = cl.clCreateBuffer(cl.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n, host, &e);
    free(host);
    if (!mem[i]) {
      snprintf(msg, sizeof msg, "buffer %d (%lld bytes): %s", (int)i, (long long)c.buffer_bytes[i], cl_err(e));
      agent_reply_err("clCreateBuffer", msg);
      goto done;
    }
    if ((e = cl.clSetKernelArg(kernel, (cl_uint)i, sizeof(cl_mem), &mem[i])) != CL_SUCCESS) {
      snprintf(msg, sizeof msg, "argument %d: %s", (int)i, cl_err(e));
      agent_reply_err("clSetKernelArg", msg);
      goto done;
    }
  }
  cl_run run = {kernel, (size_t)c.global_size, (size_t)c.local_size, CL_SUCCESS};
  double min_us, median_us;
  long long samples;
  if (agent_sample(run_cl, &run, max_iters, budget_ms, &min_us, &median_us, &samples) != 0) {
    snprintf(msg, sizeof msg, "global %lld, local %lld: %s", (long long)c.global_size, (long long)c.local_size,
             run.error != CL_SUCCESS ? cl_err(run.error) : "out of memory");
    agent_reply_err("launch failed", msg);
    goto done;
  }
  if (!(out = malloc(out_bytes)) ||
      (e = cl.clEnqueueReadBuffer(cl.queue, mem[0], CL_TRUE, 0, out_bytes, out, 0, NULL, NULL)) != CL_SUCCESS) {
    agent_reply_err("reading the output back", out ? cl_err(e) : "out of memory");
    goto done;
  }
  agent_reply_ok(min_us, median_us, samples, out, c.buffer_bytes[0], c.buffer_dtypes[0]);
done:
  free(out);
  for (int32_t i = 0; mem && i < c.num_buffers; ++i)
    if (mem[i]) cl.clReleaseMemObject(mem[i]);
  free(mem);
  if (kernel) cl.clReleaseKernel(kernel);
  cl.clReleaseProgram(prog);
}
