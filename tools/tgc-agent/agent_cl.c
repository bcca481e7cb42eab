/* tgc-agent's OpenCL side: times `time-cl` candidates (cl_candidate.h) on the device the tgc
 * runtime would pick, through the runtime's cl_api (dlopen'ed libOpenCL, no CL headers), so the
 * agent runs without OpenCL when it only times CPU candidates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "backends/opencl/cl_api.h"
#include "cl_candidate.h"

static struct {
  cl_api api;
  cl_platform_id platform;
  cl_device_id device;
  cl_context ctx; /* created at the first candidate: an agent timing CPU code never needs one */
  cl_command_queue queue;
} cl;

/* Finds the device; 0, or -1 with the reason in why. */
static int find_device(char* why, size_t cap) {
  if (tgc_cl_api_load(&cl.api, why, cap) != 0) return -1;
  return tgc_cl_api_pick_device(&cl.api, &cl.platform, &cl.device, why, cap);
}

void agent_cl_describe(char* line, size_t cap) {
  char why[256], name[256] = "", driver[128] = "";
  if (find_device(why, sizeof why) != 0) {
    cl.device = NULL;
    snprintf(line, cap, "no-opencl %s", why);
    return;
  }
  cl.api.clGetDeviceInfo(cl.device, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
  cl.api.clGetDeviceInfo(cl.device, CL_DRIVER_VERSION, sizeof driver - 1, driver, NULL);
  for (char* c = name; *c; ++c)
    if (*c == '\n' || *c == '\r') *c = ' ';
  for (char* c = driver; *c; ++c)
    if (*c == '\n' || *c == '\r') *c = ' ';
  snprintf(line, cap, "opencl %s, driver %s", name, driver);
}

/* "CL_OUT_OF_RESOURCES (-5)" */
static const char* cl_err(cl_int e) {
  static char buf[64];
  snprintf(buf, sizeof buf, "%s (%d)", tgc_cl_err(e), e);
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
    r->error = cl.api.clEnqueueNDRangeKernel(cl.queue, r->kernel, 1, NULL, &r->global, r->local ? &r->local : NULL, 0, NULL, NULL);
  cl_int f = cl.api.clFinish(cl.queue);
  if (r->error == CL_SUCCESS) r->error = f;
  return r->error == CL_SUCCESS ? 0 : -1;
}

/* The build log as one line. */
static void build_log(cl_program p, char* log, size_t cap) {
  size_t n = 0;
  log[0] = 0;
  cl.api.clGetProgramBuildInfo(p, cl.device, CL_PROGRAM_BUILD_LOG, cap - 1, log, &n);
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
    cl.ctx = cl.api.clCreateContext(props, 1, &cl.device, NULL, NULL, &e);
    if (cl.ctx) cl.queue = cl.api.clCreateCommandQueue(cl.ctx, cl.device, 0, &e);
    if (!cl.queue) return agent_reply_err("cannot create an OpenCL context and queue", cl_err(e));
  }
  cl_program prog = cl.api.clCreateProgramWithSource(cl.ctx, 1, &c.source, &c.source_len, &e);
  if (!prog) return agent_reply_err("clCreateProgramWithSource", cl_err(e));
  cl_kernel kernel = NULL;
  cl_mem* mem = calloc((size_t)c.num_buffers, sizeof *mem);
  void* out = NULL;
  size_t out_bytes = c.buffer_bytes[0] > 0 ? (size_t)c.buffer_bytes[0] : 1;
  if (!mem) {
    agent_reply_err("out of memory", NULL);
    goto done;
  }
  if ((e = cl.api.clBuildProgram(prog, 1, &cl.device, "", NULL, NULL)) != CL_SUCCESS) {
    char log[700];
    build_log(prog, log, sizeof log);
    snprintf(msg, sizeof msg, "%s: %s", cl_err(e), log);
    agent_reply_err("build failed", msg);
    goto done;
  }
  if (!(kernel = cl.api.clCreateKernel(prog, c.kernel, &e))) {
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
    mem[i] = cl.api.clCreateBuffer(cl.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n, host, &e);
    free(host);
    if (!mem[i]) {
      snprintf(msg, sizeof msg, "buffer %d (%lld bytes): %s", (int)i, (long long)c.buffer_bytes[i], cl_err(e));
      agent_reply_err("clCreateBuffer", msg);
      goto done;
    }
    if ((e = cl.api.clSetKernelArg(kernel, (cl_uint)i, sizeof(cl_mem), &mem[i])) != CL_SUCCESS) {
      snprintf(msg, sizeof msg, "argument %d: %s", (int)i, cl_err(e));
      agent_reply_err("clSetKernelArg", msg);
      goto done;
    }
  }
  cl_run run = {kernel, (size_t)c.global_size, (size_t)c.local_size, CL_SUCCESS};
  double min_us, median_us;
  long long samples;
  if (agent_sample(run_cl, NULL, &run, max_iters, budget_ms, &min_us, &median_us, &samples) != 0) {
    snprintf(msg, sizeof msg, "global %lld, local %lld: %s", (long long)c.global_size, (long long)c.local_size,
             run.error != CL_SUCCESS ? cl_err(run.error) : "out of memory");
    agent_reply_err("launch failed", msg);
    goto done;
  }
  if (!(out = malloc(out_bytes)) ||
      (e = cl.api.clEnqueueReadBuffer(cl.queue, mem[0], CL_TRUE, 0, out_bytes, out, 0, NULL, NULL)) != CL_SUCCESS) {
    agent_reply_err("reading the output back", out ? cl_err(e) : "out of memory");
    goto done;
  }
  agent_reply_ok(min_us, median_us, samples, out, c.buffer_bytes[0], c.buffer_dtypes[0]);
done:
  free(out);
  for (int32_t i = 0; mem && i < c.num_buffers; ++i)
    if (mem[i]) cl.api.clReleaseMemObject(mem[i]);
  free(mem);
  if (kernel) cl.api.clReleaseKernel(kernel);
  cl.api.clReleaseProgram(prog);
}
