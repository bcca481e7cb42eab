/* CUDA backend: the driver API through cuda_api.h (libcuda.so.1 loaded at create). Device memory
 * is one allocation for the arena, one for the weights (uploaded once at create) and one per
 * input, output and STATE buffer. Each launch's PTX is JIT-compiled by the driver at create
 * (identical blobs once), the JIT's error log becoming the one-line error. At the first run the
 * launches are captured into a CUDA graph in the backend's stream; a run is then the inputs'
 * copies (through pinned staging), one graph launch and the outputs' copies. TGC_PROFILE=1 runs
 * the launches one by one between CUDA events instead and prints their times at destroy.
 * TGC_CUDA_DEVICE=index picks the GPU (default 0). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_api.h"
#include "core/runtime_internal.h"

#define CUDA_GRAPHS 4

typedef struct {
  cuda_api api;
  const tgc_model_desc* desc;
  CUdevice device;
  CUcontext ctx;
  char device_name[256];
  int64_t device_bytes; /* what make_buffers allocated */
  CUstream stream;
  CUdeviceptr arena, weights;
  CUdeviceptr* own;      /* per desc buffer: its own allocation (inputs, outputs, STATE), else 0 */
  CUdeviceptr* ptr;      /* per desc buffer: its device address */
  void** staging;        /* per desc buffer: pinned host memory for its copies (inputs, outputs, STATE) */
  CUmodule* modules;     /* per launch: its module (launches of identical PTX share one) */
  CUfunction* functions; /* per launch */
  CUdeviceptr* params;   /* every launch's argument values, launch after launch */
  void*** param_ptrs;    /* per launch: pointers into params, as cuLaunchKernel takes them */
  /* The launches as CUDA graphs, one per set of work-item counts seen (a prefill and a decode
   * step differ: size variants, and launches over a run-time token count), the least recently
   * used replaced. The run-time dims' values are read from device memory, so one graph serves
   * every decode step. */
  struct {
    int64_t* items; /* per launch, 0: not launched */
    CUgraph graph;
    CUgraphExec exec;
    uint64_t used;
  } graphs[CUDA_GRAPHS];
  uint64_t runs;
  int64_t* items;  /* this run's work items per launch */
  CUevent* events; /* TGC_PROFILE: one before each launch and one after the last */
  double* profile_ms;
  int64_t profile_runs;
  CUevent around[2]; /* m->time_launches: before and after the graph's launch */
  double launch_ms;  /* of the last run, -1 when not measured */
} tgc_cuda;

static const char* cuda_device_name(const void* be) { return be ? ((const tgc_cuda*)be)->device_name : ""; }
static int64_t cuda_device_bytes(const void* be) { return be ? ((const tgc_cuda*)be)->device_bytes : 0; }
static double cuda_launch_ms(const void* be) { return ((const tgc_cuda*)be)->launch_ms; }

/* Sets the error for a failed call and returns 1 when r is not CUDA_SUCCESS. */
static int failed(tgc_cuda* c, CUresult r, const char* what, const char* name) {
  if (r == 0) return 0;
  tgc_set_error("CUDA backend: %s%s%s%s failed: %s", what, name ? " '" : "", name ? name : "", name ? "'" : "",
                tgc_cuda_err(&c->api, r));
  return 1;
}

static void cuda_free(tgc_cuda* c) {
  if (!c) return;
  cuda_api* a = &c->api;
  const tgc_model_desc* d = c->desc;
  if (c->ctx) {
    a->cuCtxSetCurrent(c->ctx);
    if (c->stream) a->cuStreamSynchronize(c->stream);
    for (int i = 0; i < CUDA_GRAPHS; ++i) {
      if (c->graphs[i].exec) a->cuGraphExecDestroy(c->graphs[i].exec);
      if (c->graphs[i].graph) a->cuGraphDestroy(c->graphs[i].graph);
    }
    if (c->events)
      for (int32_t l = 0; l <= d->num_launches; ++l)
        if (c->events[l]) a->cuEventDestroy(c->events[l]);
    for (int i = 0; i < 2; ++i)
      if (c->around[i]) a->cuEventDestroy(c->around[i]);
    if (c->modules)
      for (int32_t l = 0; l < d->num_launches; ++l)
        if (c->modules[l]) { /* unloaded by its first launch */
          int shared = 0;
          for (int32_t k = 0; k < l && !shared; ++k) shared = c->modules[k] == c->modules[l];
          if (!shared) a->cuModuleUnload(c->modules[l]);
        }
    for (int32_t i = 0; i < d->num_buffers; ++i) {
      if (c->own && c->own[i]) a->cuMemFree(c->own[i]);
      if (c->staging && c->staging[i]) a->cuMemFreeHost(c->staging[i]);
    }
    if (c->arena) a->cuMemFree(c->arena);
    if (c->weights) a->cuMemFree(c->weights);
    if (c->stream) a->cuStreamDestroy(c->stream);
    a->cuDevicePrimaryCtxRelease(c->device);
  }
  /* libcuda is not dlclose'd: the driver keeps threads of its own. */
  free(c->own);
  free(c->ptr);
  free(c->staging);
  free(c->modules);
  free(c->functions);
  free(c->params);
  free(c->param_ptrs);
  free(c->items);
  for (int i = 0; i < CUDA_GRAPHS; ++i) free(c->graphs[i].items);
  free(c->events);
  free(c->profile_ms);
  free(c);
}

static int open_device(tgc_cuda* c) {
  cuda_api* a = &c->api;
  char why[300];
  if (tgc_cuda_api_load(a, why, sizeof why) != 0) {
    tgc_set_error("CUDA backend: %s", why);
    return -1;
  }
  int count = 0;
  if (failed(c, a->cuInit(0), "cuInit", NULL) || failed(c, a->cuDeviceGetCount(&count), "cuDeviceGetCount", NULL))
    return -1;
  const char* env = getenv("TGC_CUDA_DEVICE");
  int index = env && env[0] ? atoi(env) : 0;
  if (count == 0 || index < 0 || index >= count) {
    tgc_set_error("CUDA backend: %s (TGC_CUDA_DEVICE=%s, %d device%s found)",
                  count ? "no such device" : "no CUDA device found", env && env[0] ? env : "0", count,
                  count == 1 ? "" : "s");
    return -1;
  }
  if (failed(c, a->cuDeviceGet(&c->device, index), "cuDeviceGet", NULL)) return -1;
  a->cuDeviceGetName(c->device_name, (int)sizeof c->device_name - 1, c->device);
  if (failed(c, a->cuDevicePrimaryCtxRetain(&c->ctx, c->device), "retaining the primary context of", c->device_name))
    return -1;
  if (failed(c, a->cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent", NULL)) return -1;
  return failed(c, a->cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate", NULL) ? -1 : 0;
}

static int alloc_device(tgc_cuda* c, CUdeviceptr* p, int64_t nbytes, const char* what) {
  CUresult r = c->api.cuMemAlloc(p, (size_t)(nbytes > 0 ? nbytes : 1));
  if (r == 0) return 0;
  tgc_set_error("CUDA backend: cannot allocate %lld bytes of device memory for %s on '%s': %s", (long long)nbytes, what,
                c->device_name, tgc_cuda_err(&c->api, r));
  return -1;
}

/* Device memory for every buffer; the weights and the zeroed STATE copied once. */
static int make_buffers(tgc_cuda* c, tgc_model* m) {
  cuda_api* a = &c->api;
  const tgc_model_desc* d = c->desc;
  int64_t weight_bytes = 0;
  for (int32_t i = 0; i < d->num_buffers; ++i)
    if (d->buffers[i].storage == TGC_STORAGE_WEIGHT && d->buffers[i].offset + d->buffers[i].nbytes > weight_bytes)
      weight_bytes = d->buffers[i].offset + d->buffers[i].nbytes;
  /* All of it or nothing, in one line: a model larger than the device's free memory. */
  int64_t need = d->arena_size + weight_bytes;
  for (int32_t i = 0; i < d->num_buffers; ++i)
    if (d->buffers[i].storage != TGC_STORAGE_ARENA && d->buffers[i].storage != TGC_STORAGE_WEIGHT)
      need += d->buffers[i].nbytes;
  size_t free_bytes = 0, total_bytes = 0;
  if (a->cuMemGetInfo(&free_bytes, &total_bytes) == 0 && (uint64_t)need > (uint64_t)free_bytes) {
    tgc_set_error("CUDA backend: the model needs %lld bytes of device memory; '%s' has %llu free of %llu",
                  (long long)need, c->device_name, (unsigned long long)free_bytes, (unsigned long long)total_bytes);
    return -1;
  }
  c->device_bytes = need;
  if (d->arena_size > 0 && alloc_device(c, &c->arena, d->arena_size, "the arena") != 0) return -1;
  if (weight_bytes > 0 && alloc_device(c, &c->weights, weight_bytes, "the weights") != 0) return -1;
  for (int32_t i = 0; i < d->num_buffers; ++i) {
    const tgc_buffer* b = &d->buffers[i];
    const char* name = b->name ? b->name : "?";
    switch (b->storage) {
      case TGC_STORAGE_ARENA: c->ptr[i] = c->arena + (CUdeviceptr)b->offset; break;
      case TGC_STORAGE_WEIGHT:
        c->ptr[i] = c->weights + (CUdeviceptr)b->offset;
        if (b->nbytes > 0 &&
            failed(c, a->cuMemcpyHtoD(c->ptr[i], m->buf[i], (size_t)b->nbytes), "uploading weight", name))
          return -1;
        break;
      default: /* inputs, outputs, STATE: own memory, copied through pinned staging */
        if (alloc_device(c, &c->own[i], b->nbytes, name) != 0) return -1;
        c->ptr[i] = c->own[i];
        if (failed(c, a->cuMemAllocHost(&c->staging[i], (size_t)(b->nbytes > 0 ? b->nbytes : 1)),
                   "pinning staging memory for", name))
          return -1;
        if (b->storage == TGC_STORAGE_STATE && b->nbytes > 0 &&
            failed(c, a->cuMemcpyHtoD(c->ptr[i], m->buf[i], (size_t)b->nbytes), "initializing state", name))
          return -1;
        /* Callers read and write the pinned staging itself, so a run copies it to and from the
         * device without a memcpy on the host (det, 1.2 MB in and 0.4 MB out: ~90 us of a 0.53 ms
         * run). A batched buffer moves by a sample per run and keeps the runtime's memory. */
        if (!b->batched) tgc_adopt_host_memory(m, i, c->staging[i]);
    }
  }
  return 0;
}

/* One line of the JIT's error log: "ptxas application ptx input, line 12; error : ..." */
static void one_line(char* s) {
  for (char* p = s; *p; ++p)
    if (*p == '\n' || *p == '\r') *p = ' ';
  size_t n = strlen(s);
  while (n > 0 && s[n - 1] == ' ') s[--n] = '\0';
}

/* Every launch's function, each distinct PTX blob JIT-compiled once, and its argument list. */
static int load_kernels(tgc_cuda* c) {
  cuda_api* a = &c->api;
  const tgc_model_desc* d = c->desc;
  size_t nparams = 0;
  for (int32_t l = 0; l < d->num_launches; ++l) nparams += (size_t)d->launches[l].num_buffers;
  c->params = calloc(nparams + 1, sizeof(CUdeviceptr));
  if (!c->params) return tgc_set_error("out of memory"), -1;
  CUdeviceptr* next = c->params;
  for (int32_t l = 0; l < d->num_launches; ++l) {
    const tgc_launch* L = &d->launches[l];
    for (int32_t k = 0; k < l && !c->modules[l]; ++k)
      if (d->launches[k].blob_size == L->blob_size && memcmp(d->launches[k].blob, L->blob, (size_t)L->blob_size) == 0)
        c->modules[l] = c->modules[k];
    if (!c->modules[l]) {
      char* ptx = malloc((size_t)L->blob_size + 1); /* the driver wants a NUL-terminated image */
      if (!ptx) return tgc_set_error("out of memory"), -1;
      memcpy(ptx, L->blob, (size_t)L->blob_size);
      ptx[L->blob_size] = '\0';
      char log[1024] = "";
      int opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
      void* vals[] = {log, (void*)(size_t)(sizeof log - 1)};
      CUresult r = a->cuModuleLoadDataEx(&c->modules[l], ptx, 2, opts, vals);
      free(ptx);
      if (r != 0) {
        one_line(log);
        tgc_set_error("CUDA backend: compiling kernel '%s' for '%s' failed: %s; JIT log: %s", L->name, c->device_name,
                      tgc_cuda_err(a, r), log[0] ? log : "(empty)");
        return -1;
      }
    }
    if (failed(c, a->cuModuleGetFunction(&c->functions[l], c->modules[l], L->name), "finding kernel", L->name))
      return -1;
    int max_threads = 0;
    a->cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, c->functions[l]);
    int64_t g = L->global_size[0], b = L->local_size[0];
    if (L->global_size[1] > 1 || L->global_size[2] > 1 || b <= 0 || b > max_threads || g % b != 0 ||
        g / b > 0x7fffffff) {
      tgc_set_error(
          "CUDA backend: launch %d '%s': %lld threads in blocks of %lld cannot run on '%s' (at most %d threads "
          "per block for this kernel, whole blocks, one dimension)",
          (int)l, L->name, (long long)g, (long long)b, c->device_name, max_threads);
      return -1;
    }
    c->param_ptrs[l] = (void**)calloc((size_t)L->num_buffers + 1, sizeof(void*));
    if (!c->param_ptrs[l]) return tgc_set_error("out of memory"), -1;
    for (int32_t i = 0; i < L->num_buffers; ++i) {
      *next = c->ptr[L->buffers[i]];
      c->param_ptrs[l][i] = next++;
    }
  }
  return 0;
}

static void* cuda_create(tgc_model* m, int num_threads) {
  const tgc_model_desc* d = m->desc;
  for (int32_t l = 0; l < d->num_launches; ++l) {
    const tgc_launch* L = &d->launches[l];
    if (!L->blob || L->blob_size <= 0 || !L->name) {
      tgc_set_error("launch %d '%s': no PTX or kernel name", (int)l, L->name ? L->name : "?");
      return NULL;
    }
  }
  m->num_threads = 0;
  tgc_cuda* c = calloc(1, sizeof *c);
  if (!c) return tgc_set_error("out of memory"), NULL;
  c->desc = d;
  c->launch_ms = -1;
  size_t nb = (size_t)d->num_buffers + 1, nl = (size_t)d->num_launches + 1;
  c->own = calloc(nb, sizeof(CUdeviceptr));
  c->ptr = calloc(nb, sizeof(CUdeviceptr));
  c->staging = calloc(nb, sizeof(void*));
  c->modules = calloc(nl, sizeof(CUmodule));
  c->functions = calloc(nl, sizeof(CUfunction));
  c->param_ptrs = calloc(nl, sizeof(void**));
  c->items = calloc(nl, sizeof(int64_t));
  if (!c->own || !c->ptr || !c->staging || !c->modules || !c->functions || !c->param_ptrs || !c->items) {
    tgc_set_error("out of memory");
    goto fail;
  }
  if (open_device(c) != 0 || make_buffers(c, m) != 0 || load_kernels(c) != 0) goto fail;
  if (getenv("TGC_PROFILE")) {
    c->events = calloc(nl, sizeof(CUevent));
    c->profile_ms = calloc(nl, sizeof(double));
    if (!c->events || !c->profile_ms) {
      tgc_set_error("out of memory");
      goto fail;
    }
    for (int32_t l = 0; l <= d->num_launches; ++l)
      if (failed(c, c->api.cuEventCreate(&c->events[l], CU_EVENT_DEFAULT), "cuEventCreate", NULL)) goto fail;
  }
  return c;
fail:
  if (c->param_ptrs)
    for (int32_t l = 0; l < d->num_launches; ++l) free(c->param_ptrs[l]);
  cuda_free(c);
  return NULL;
}

static void cuda_destroy(void* be, tgc_model* m) {
  tgc_cuda* c = be;
  if (c->profile_ms && c->profile_runs > 0) {
    char title[400];
    snprintf(title, sizeof title, "%lld runs on '%s' (CUDA events around each launch, no graph)",
             (long long)c->profile_runs, c->device_name);
    tgc_print_profile(c->desc, c->profile_ms, c->profile_runs, title, "");
  }
  for (int32_t l = 0; l < c->desc->num_launches; ++l) free(c->param_ptrs[l]);
  cuda_free(c);
}

static int cuda_upload(void* be, tgc_model* m, const int32_t* bufs, int32_t n) {
  tgc_cuda* c = be;
  cuda_api* a = &c->api;
  if (failed(c, a->cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent", NULL)) return -1;
  for (int32_t k = 0; k < n; ++k) {
    int32_t i = bufs[k];
    const tgc_buffer* b = &c->desc->buffers[i];
    size_t bytes = (size_t)tgc_run_nbytes(m, i);
    if (bytes == 0) continue;
    /* The staging copy is read by the device after we return: the run's synchronize waits for it. */
    if (m->cur[i] != c->staging[i]) memcpy(c->staging[i], m->cur[i], bytes);
    if (failed(c, a->cuMemcpyHtoDAsync(c->ptr[i], c->staging[i], bytes, c->stream),
               b->storage == TGC_STORAGE_STATE ? "copying state" : "copying input", b->name)) {
      a->cuStreamSynchronize(c->stream);
      return -1;
    }
  }
  return 0;
}

/* Launch l over `items` work items: whole blocks, those past a run-time size return at once. */
static CUresult launch(tgc_cuda* c, int32_t l, int64_t items) {
  const tgc_launch* L = &c->desc->launches[l];
  unsigned blocks = (unsigned)((items + L->local_size[0] - 1) / L->local_size[0]);
  return c->api.cuLaunchKernel(c->functions[l], blocks, 1, 1, (unsigned)L->local_size[0], 1, 1, 0, c->stream,
                               c->param_ptrs[l], NULL);
}

/* This run's work items per launch into c->items (0 for a size variant of other sizes). */
static void count_items(tgc_cuda* c, const tgc_model* m) {
  for (int32_t l = 0; l < c->desc->num_launches; ++l)
    c->items[l] = c->desc->launches[l].global_size[0] > 0 ? tgc_launch_items(m, l) : 0;
}

/* The graph of this run's launches (c->items): a cached one, or the launches captured into a new
 * one in the least recently used slot. NULL with the error set. */
static CUgraphExec graph_for_items(tgc_cuda* c) {
  cuda_api* a = &c->api;
  const tgc_model_desc* d = c->desc;
  size_t bytes = (size_t)d->num_launches * sizeof(int64_t);
  int slot = 0;
  for (int i = 0; i < CUDA_GRAPHS; ++i) {
    if (c->graphs[i].exec && !memcmp(c->graphs[i].items, c->items, bytes)) {
      c->graphs[i].used = ++c->runs;
      return c->graphs[i].exec;
    }
    if (c->graphs[i].used < c->graphs[slot].used) slot = i;
  }
  if (c->graphs[slot].exec) a->cuGraphExecDestroy(c->graphs[slot].exec), c->graphs[slot].exec = NULL;
  if (c->graphs[slot].graph) a->cuGraphDestroy(c->graphs[slot].graph), c->graphs[slot].graph = NULL;
  if (!c->graphs[slot].items && !(c->graphs[slot].items = malloc(bytes + 1)))
    return tgc_set_error("out of memory"), NULL;
  if (failed(c, a->cuStreamBeginCapture(c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture", NULL))
    return NULL;
  CUresult first = 0;
  int32_t bad = -1;
  for (int32_t l = 0; l < d->num_launches && !first; ++l)
    if (c->items[l] > 0 && (first = launch(c, l, c->items[l])) != 0) bad = l;
  CUresult end = a->cuStreamEndCapture(c->stream, &c->graphs[slot].graph);
  if (first) return failed(c, first, "capturing launch", d->launches[bad].name), NULL;
  if (failed(c, end, "cuStreamEndCapture", NULL) ||
      failed(c, a->cuGraphInstantiateWithFlags(&c->graphs[slot].exec, c->graphs[slot].graph, 0),
             "instantiating the CUDA graph of", d->name))
    return NULL;
  memcpy(c->graphs[slot].items, c->items, bytes);
  c->graphs[slot].used = ++c->runs;
  return c->graphs[slot].exec;
}

static int run_profiled(tgc_cuda* c) {
  cuda_api* a = &c->api;
  const tgc_model_desc* d = c->desc;
  for (int32_t l = 0; l < d->num_launches; ++l) {
    if (failed(c, a->cuEventRecord(c->events[l], c->stream), "cuEventRecord", NULL)) return -1;
    if (c->items[l] > 0 && failed(c, launch(c, l, c->items[l]), "launch", d->launches[l].name)) return -1;
  }
  if (failed(c, a->cuEventRecord(c->events[d->num_launches], c->stream), "cuEventRecord", NULL) ||
      failed(c, a->cuStreamSynchronize(c->stream), "running", d->name))
    return -1;
  for (int32_t l = 0; l < d->num_launches; ++l) {
    float ms = 0;
    a->cuEventElapsedTime(&ms, c->events[l], c->events[l + 1]);
    c->profile_ms[l] += ms;
  }
  c->profile_runs++;
  return 0;
}

static int64_t cuda_run(void* be, tgc_model* m, int64_t sample) {
  tgc_cuda* c = be;
  cuda_api* a = &c->api;
  const tgc_model_desc* d = c->desc;
  if (failed(c, a->cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent", NULL)) return -1;
  count_items(c, m);
  if (c->events) {
    if (run_profiled(c) != 0) goto fail;
  } else {
    CUgraphExec exec = graph_for_items(c);
    if (!exec) goto fail;
    if (m->time_launches && !c->around[1] &&
        (failed(c, a->cuEventCreate(&c->around[0], CU_EVENT_DEFAULT), "cuEventCreate", NULL) ||
         failed(c, a->cuEventCreate(&c->around[1], CU_EVENT_DEFAULT), "cuEventCreate", NULL)))
      goto fail;
    if (m->time_launches && failed(c, a->cuEventRecord(c->around[0], c->stream), "cuEventRecord", NULL)) goto fail;
    if (failed(c, a->cuGraphLaunch(exec, c->stream), "launching the CUDA graph of", d->name)) goto fail;
    if (m->time_launches && failed(c, a->cuEventRecord(c->around[1], c->stream), "cuEventRecord", NULL)) goto fail;
  }
  /* Only what this run's sizes cover comes back (a decode step's row of logits, not the bound's). */
  for (int32_t k = 0; k < d->num_outputs; ++k) {
    int32_t i = d->outputs[k];
    size_t n = (size_t)tgc_run_nbytes(m, i);
    if (n > 0 &&
        failed(c, a->cuMemcpyDtoHAsync(c->staging[i], c->ptr[i], n, c->stream), "copying output", d->buffers[i].name))
      goto fail;
  }
  if (failed(c, a->cuStreamSynchronize(c->stream), "running", d->name)) return -1;
  float ms = -1;
  if (c->around[1] && a->cuEventElapsedTime(&ms, c->around[0], c->around[1]) != 0) ms = -1;
  c->launch_ms = ms;
  for (int32_t k = 0; k < d->num_outputs; ++k) {
    int32_t i = d->outputs[k];
    if (m->cur[i] != c->staging[i]) memcpy(m->cur[i], c->staging[i], (size_t)tgc_run_nbytes(m, i));
  }
  return 1;
fail:
  a->cuStreamSynchronize(c->stream); /* nothing may still read the staging memory */
  return -1;
}

const struct tgc_backend tgc_backend_cuda = {
    .name = "cuda",
    .create = cuda_create,
    .upload = cuda_upload,
    .run = cuda_run,
    .destroy = cuda_destroy,
    .device_name = cuda_device_name,
    .device_bytes = cuda_device_bytes,
    .launch_ms = cuda_launch_ms,
};
