/* tgc-agent: times tuning candidates on the machine it runs on, for `tgc compile --beam`.
 *
 * It speaks a line protocol on stdin/stdout, so tgc can drive it through any command: locally,
 * under qemu, or on a board (`ssh board tgc-agent`, `adb shell /data/local/tmp/tgc-agent`).
 *   agent -> tgc   tgc-agent 4 <device description>                 (once, at start)
 *   agent -> tgc   opencl <CL device>, driver <version>  |  no-opencl <why>
 *   agent -> tgc   vulkan <Vulkan device>  |  no-vulkan <why>
 *   agent -> tgc   cuda <CUDA device>  |  no-cuda <why>
 *   tgc -> agent   time <so_bytes> <max_iters> <budget_ms>\n<so_bytes bytes of a shared object>
 *   tgc -> agent   time-cl <bytes> <max_iters> <budget_ms>\n<bytes of an OpenCL candidate>
 *   tgc -> agent   time-vk <bytes> <max_iters> <budget_ms>\n<bytes of a Vulkan (SPIR-V) candidate>
 *   tgc -> agent   time-cuda <bytes> <max_iters> <budget_ms>\n<bytes of a CUDA (PTX) candidate>
 *   agent -> tgc   ok <min_us> <median_us> <iters> <out_sum> <out_abs_sum>  |  err <message>
 *   tgc -> agent   quit
 * The shared object follows tools/tgc-agent/tgc_candidate.h, the GPU candidates
 * tools/tgc-agent/cl_candidate.h (agent_gpu.c runs them through the runtime's backends). The agent fills the buffers
 * with the same pseudo-random data every time (so candidates of one kernel can be compared by the checksum of their
 * output), runs it once to warm up, then takes up to max_iters samples until budget_ms have passed (at least 3), on one
 * thread; a sample repeats a kernel faster than 20 us until it lasts that long, and the reply gives per-run times. A
 * candidate that crashes takes the agent with it; tgc notices, drops the candidate and starts a new agent. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "tgc_candidate.h"
#include "tgc_model.h"

#define MAX_ITERS 100000

FILE* agent_out;

double agent_now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static void trim(char* s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = 0;
}

/* The CPU's name from /proc/cpuinfo: "model name" (x86) or implementer/part (arm). */
static void cpu_model(char* out, size_t cap) {
  char line[512], implementer[64] = "", part[64] = "";
  snprintf(out, cap, "unknown-cpu");
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    char* colon = strchr(line, ':');
    if (!colon) continue;
    char* value = colon + 1;
    while (*value == ' ' || *value == '\t') ++value;
    trim(value);
    if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Hardware", 8) == 0) {
      snprintf(out, cap, "%s", value);
      fclose(f);
      return;
    }
    if (strncmp(line, "CPU implementer", 15) == 0 && !implementer[0])
      snprintf(implementer, sizeof implementer, "%s", value);
    if (strncmp(line, "CPU part", 8) == 0 && !part[0]) snprintf(part, sizeof part, "%s", value);
  }
  fclose(f);
  if (implementer[0]) snprintf(out, cap, "implementer %s part %s", implementer, part);
}

static uint64_t splitmix64(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, m = x & 0x7fffff;
  if (e < 113) return (uint16_t)sign; /* |f| < 2^-14: flush to zero (inputs are in [-1, 1)) */
  return (uint16_t)(sign | ((e - 112) << 10) | (m >> 13));
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
  if (e == 0) {
    float v = ldexpf((float)m, -24);
    return sign ? -v : v;
  }
  x = e == 31 ? sign | 0x7f800000u | (m << 13) : sign | ((e + 112) << 23) | (m << 13);
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* Floats uniform in [-1, 1) as in runtime-stub/cli/main.c; integers and bools zero, which is a valid
 * index for gathers and never divides by zero in a float kernel. */
void agent_fill(void* p, int64_t bytes, int32_t dtype, uint64_t seed) {
  int64_t n;
  switch (dtype) {
    case TGC_F32: n = bytes / 4; break;
    case TGC_F64: n = bytes / 8; break;
    case TGC_F16:
    case TGC_BF16: n = bytes / 2; break;
    default: memset(p, 0, (size_t)bytes); return;
  }
  for (int64_t i = 0; i < n; ++i) {
    float v = (float)(splitmix64(&seed) >> 40) * (1.0f / 8388608.0f) - 1.0f;
    if (dtype == TGC_F32)
      ((float*)p)[i] = v;
    else if (dtype == TGC_F64)
      ((double*)p)[i] = v;
    else if (dtype == TGC_F16)
      ((uint16_t*)p)[i] = f32_to_f16(v);
    else {
      uint32_t x;
      memcpy(&x, &v, 4);
      ((uint16_t*)p)[i] = (uint16_t)(x >> 16);
    }
  }
}

double agent_element(const void* p, int64_t i, int32_t dtype) {
  switch (dtype) {
    case TGC_F32: return ((const float*)p)[i];
    case TGC_F64: return ((const double*)p)[i];
    case TGC_F16: return f16_to_f32(((const uint16_t*)p)[i]);
    case TGC_BF16: {
      uint32_t x = (uint32_t)((const uint16_t*)p)[i] << 16;
      float f;
      memcpy(&f, &x, 4);
      return f;
    }
    case TGC_I8: return ((const int8_t*)p)[i];
    case TGC_I16: return ((const int16_t*)p)[i];
    case TGC_I32: return ((const int32_t*)p)[i];
    case TGC_I64: return (double)((const int64_t*)p)[i];
    case TGC_U16: return ((const uint16_t*)p)[i];
    case TGC_U32: return ((const uint32_t*)p)[i];
    case TGC_U64: return (double)((const uint64_t*)p)[i];
    default: return ((const uint8_t*)p)[i];
  }
}

int64_t agent_dtype_bytes(int32_t dtype) {
  switch (dtype) {
    case TGC_F64:
    case TGC_I64:
    case TGC_U64: return 8;
    case TGC_F32:
    case TGC_I32:
    case TGC_U32: return 4;
    case TGC_F16:
    case TGC_BF16:
    case TGC_I16:
    case TGC_U16: return 2;
    default: return 1;
  }
}

uint64_t agent_seed(int32_t buffer) { return 0x1234567ull + (uint64_t)buffer; }

void agent_reply_err(const char* what, const char* detail) {
  fprintf(agent_out, "err %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  fflush(agent_out);
}

void agent_reply_ok(double min_us, double median_us, long long samples, const void* out, int64_t bytes, int32_t dtype) {
  double sum = 0, abs_sum = 0;
  int64_t n = bytes / agent_dtype_bytes(dtype);
  for (int64_t i = 0; i < n; ++i) {
    double v = agent_element(out, i, dtype);
    sum += v, abs_sum += fabs(v);
  }
  fprintf(agent_out, "ok %.3f %.3f %lld %.17g %.17g\n", min_us, median_us, samples, sum, abs_sum);
  fflush(agent_out);
}

int agent_sample(agent_run_fn run, agent_device_us_fn device_us, void* ctx, long long max_iters, double budget_ms,
                 double* min_us, double* median_us, long long* samples) {
  double* times = malloc((size_t)max_iters * sizeof *times);
  if (!times) return -1;
  /* Warm-up (page faults, caches, a GPU's first launch), which also says how many runs one
   * sample needs to stay well above the clock's resolution. */
  double t0 = agent_now_us();
  if (run(ctx, 1) != 0) return free(times), -1;
  double once = agent_now_us() - t0;
  int on_device = device_us && device_us(ctx) >= 0;
  long long reps =
      once >= AGENT_MIN_SAMPLE_US || on_device ? 1 : (long long)(AGENT_MIN_SAMPLE_US / (once > 0.01 ? once : 0.01)) + 1;
  if (reps > 10000) reps = 10000;
  double start = agent_now_us();
  long long it = 0;
  while (it < max_iters && (it < 3 || agent_now_us() - start < budget_ms * 1e3)) {
    t0 = agent_now_us();
    if (run(ctx, reps) != 0) return free(times), -1;
    times[it++] = on_device ? device_us(ctx) : (agent_now_us() - t0) / (double)reps;
  }
  qsort(times, (size_t)it, sizeof *times, cmp_double);
  *min_us = times[0], *median_us = times[it / 2], *samples = it;
  free(times);
  return 0;
}

typedef struct {
  tgc_cpu_fn kernel;
  void** bufs;
  int64_t items;
} cpu_run;

static int run_cpu(void* ctx, long long reps) {
  cpu_run* c = ctx;
  for (long long r = 0; r < reps; ++r) c->kernel(c->bufs, 0, c->items);
  return 0;
}

/* Loads the candidate from `path` and times it; replies on agent_out. */
static void time_candidate(const char* path, long long max_iters, double budget_ms) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  unlink(path); /* the mapping stays; nothing is left behind if the kernel crashes */
  if (!lib) return agent_reply_err("dlopen", dlerror());
  const tgc_candidate_desc* d = (const tgc_candidate_desc*)dlsym(lib, TGC_CANDIDATE_DESC_SYMBOL);
  tgc_cpu_fn kernel = (tgc_cpu_fn)dlsym(lib, TGC_CANDIDATE_KERNEL_SYMBOL);
  if (!d || !kernel) {
    dlclose(lib);
    return agent_reply_err("not a tgc candidate",
                           "missing " TGC_CANDIDATE_DESC_SYMBOL " or " TGC_CANDIDATE_KERNEL_SYMBOL);
  }
  if (d->abi != TGC_CANDIDATE_ABI || d->num_buffers < 1 || d->num_buffers > 4096) {
    dlclose(lib);
    return agent_reply_err("unsupported candidate ABI", NULL);
  }
  void** bufs = calloc((size_t)d->num_buffers, sizeof *bufs);
  int ok = bufs != NULL;
  for (int32_t i = 0; ok && i < d->num_buffers; ++i) {
    size_t bytes = (size_t)(d->buffer_bytes[i] + 63) / 64 * 64;
    ok = (bufs[i] = aligned_alloc(64, bytes ? bytes : 64)) != NULL;
    if (ok) agent_fill(bufs[i], d->buffer_bytes[i], d->buffer_dtypes[i], agent_seed(i));
  }
  cpu_run run = {kernel, bufs, d->work_items};
  double min_us, median_us;
  long long samples;
  if (ok && agent_sample(run_cpu, NULL, &run, max_iters, budget_ms, &min_us, &median_us, &samples) == 0)
    agent_reply_ok(min_us, median_us, samples, bufs[0], d->buffer_bytes[0], d->buffer_dtypes[0]);
  else
    agent_reply_err("out of memory", NULL);
  for (int32_t i = 0; bufs && i < d->num_buffers; ++i) free(bufs[i]);
  free(bufs);
  dlclose(lib);
}

/* Reads a request's payload of `nbytes`; NULL when the driver went away mid-request. */
static char* read_payload(long long nbytes) {
  char* p = malloc((size_t)nbytes + 1);
  if (p && fread(p, 1, (size_t)nbytes, stdin) == (size_t)nbytes) return p[nbytes] = 0, p;
  free(p);
  return NULL;
}

/* The GPU APIs, in the greeting's line order (tune/agent_client.h's kAgentApis): the greeting's
 * word, the request that times a candidate ("time-<request>"), and the runtime backend that runs it. */
static const struct {
  const char *api, *request;
  const struct tgc_backend* backend;
} gpu_apis[] = {
    {"opencl", "cl", &tgc_backend_opencl}, {"vulkan", "vk", &tgc_backend_vulkan}, {"cuda", "cuda", &tgc_backend_cuda}};
enum { kGpuApis = sizeof gpu_apis / sizeof gpu_apis[0] };

int main(int argc, char** argv) {
  if (argc > 1) {
    fprintf(stderr, "usage: %s  (speaks tgc's tuning protocol on stdin/stdout; see docs/tuning.md)\n", argv[0]);
    return argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? 0 : 2;
  }
  int proto = dup(1);
  agent_out = proto >= 0 ? fdopen(proto, "w") : NULL;
  if (!agent_out) return perror("tgc-agent: stdout"), 1;
  dup2(2, 1);
  /* Candidates are linked without libraries: the libm functions they call (expf, ...) come
   * from here. */
  if (!dlopen("libm.so.6", RTLD_NOW | RTLD_GLOBAL)) dlopen("libm.so", RTLD_NOW | RTLD_GLOBAL);
  struct utsname u;
  char model[256], api_line[512];
  cpu_model(model, sizeof model);
  fprintf(agent_out, "tgc-agent %d %s %s\n", 1 + kGpuApis, uname(&u) == 0 ? u.machine : "unknown-arch", model);
  for (int i = 0; i < kGpuApis; ++i) {
    agent_gpu_describe(gpu_apis[i].backend, gpu_apis[i].api, api_line, sizeof api_line);
    fprintf(agent_out, "%s\n", api_line);
  }
  fflush(agent_out);

  const char* tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    trim(line);
    long long nbytes = 0, iters = 0;
    double budget_ms = 0;
    if (!strcmp(line, "quit")) break;
    /* "time-cl ", "time-vk ", "time-cuda ": GPU candidates; "time ": a CPU one. */
    const char* api = !strncmp(line, "time-", 5) ? line + 5 : NULL;
    const char* args = api ? strchr(api, ' ') : line;
    if (!args || sscanf(args, api ? " %lld %lld %lf" : "time %lld %lld %lf", &nbytes, &iters, &budget_ms) != 3 ||
        nbytes <= 0 || nbytes > (1ll << 30) || iters < 1 || iters > MAX_ITERS) {
      agent_reply_err("bad request", line);
      continue;
    }
    char* payload = read_payload(nbytes);
    if (!payload) return 1; /* the driver went away mid-request */
    if (api) {
      size_t len = (size_t)(args - api);
      int i = 0;
      while (i < kGpuApis && (strlen(gpu_apis[i].request) != len || strncmp(api, gpu_apis[i].request, len) != 0)) ++i;
      if (i < kGpuApis)
        agent_time_gpu(gpu_apis[i].backend, payload, (size_t)nbytes, iters, budget_ms);
      else
        agent_reply_err("unknown request", line);
      free(payload);
      continue;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/tgc-candidate-XXXXXX", tmp);
    int fd = mkstemp(path);
    int written = fd >= 0 && write(fd, payload, (size_t)nbytes) == (ssize_t)nbytes;
    free(payload);
    if (fd >= 0) close(fd);
    if (!written) {
      if (fd >= 0) unlink(path);
      agent_reply_err("cannot write a temporary file in", tmp);
      continue;
    }
    time_candidate(path, iters, budget_ms);
  }
  return 0;
}
