/* OpenCL backend: libOpenCL through cl_api.h (dlopen'ed, no CL headers). Device memory, the weights
 * and the zeroed STATE buffers are set up at create; programs are built from the launches' blobs
 * (OpenCL C) at the first run, and their binaries cached on disk, keyed by a hash of source +
 * options + device + driver. Each run writes the inputs, enqueues the launches and reads the
 * outputs back.
 *
 * Every buffer but the images lives in one device allocation, the pool, where it fits the device's
 * largest allocation: kernels then take the pool alone, built with -DTGC_POOL and each buffer's
 * offset in it defined (-Db0_at=...; codegen/opencl/render_opencl.h), since NVIDIA's driver
 * charges host time in every enqueue for every argument (0.6 us a pointer, 0.2 an integer).
 * Intermediates share the pool's memory as the memory plan shares the arena. TGC_CL_POOL=0 gives
 * each buffer its own allocation.
 *
 * Image weights (TGC_STORAGE_IMAGE) are images where the device has them (an H200 ran det and rec
 * 15-18% faster so, though each image argument costs NVIDIA's driver 1.3 us per enqueue); on a
 * device without images, or with TGC_CL_IMAGES=0, they go in the pool too (-DTGC_NO_IMAGES). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/gpu_common.h"
#include "backends/opencl/cl_api.h"
#include "core/runtime_internal.h"

/* ---------------------------------------------------------------- state */

typedef struct {
  const char* source; /* the program's text (a launch's blob; programs are deduplicated by content */
  size_t size;        /*  and build options) */
  char* options;
  cl_program program;
  int from_cache;
} cl_prog;

typedef struct {
  cl_api api;
  const tgc_model_desc* desc;
  cl_platform_id platform;
  cl_device_id device;
  char device_name[256], driver_version[128], device_version[256];
  char device_label[400]; /* "NAME, driver VERSION": --bench, tgc-agent's greeting */
  cl_bool image_support;  /* and the largest 2D image, width and height */
  size_t image_max[2];
  int images_in_pool; /* image weights are plain buffers in the pool (-DTGC_NO_IMAGES) */
  cl_context ctx;
  cl_command_queue queue;
  cl_mem arena;
  cl_mem pool;      /* every buffer but the images (unless images_in_pool), or NULL */
  cl_mem* mem;      /* per desc buffer: the pool, or its own memory (or an arena sub-buffer) */
  size_t* at;       /* per desc buffer: its byte offset in mem[i] */
  int* mem_owned;   /* per desc buffer: release on destroy */
  cl_mem* host_mem; /* per desc buffer: the mapped host-side buffer holding an input or output */
  void** host_ptr;  /* ... and its mapping, which is the runtime's memory for it */
  cl_prog* progs;   /* up to num_launches distinct programs */
  int num_progs;
  cl_kernel* kernels; /* per launch, created at the first run */
  int built;
  cl_event* events;   /* TGC_PROFILE or m->time_launches: per launch, this run's */
  double* profile_ms; /* TGC_PROFILE: per launch, summed over runs */
  int64_t profile_runs;
  double profile_span_ms; /* TGC_PROFILE: first launch's start to last launch's end, summed over runs */
  double launch_ms;       /* m->time_launches: the last run's span, as profile_span_ms; else -1 */
  int candidate;          /* m->time_launches: a tuning candidate, built once and not cached */
} tgc_cl;

static const char* cl_device_name(const void* be) { return be ? ((const tgc_cl*)be)->device_label : ""; }
static double cl_launch_ms(const void* be) { return ((const tgc_cl*)be)->launch_ms; }

static int load_api(cl_api* a) {
  char why[512];
  if (tgc_cl_api_load(a, why, sizeof why) == 0) return 0;
  tgc_set_error(a->lib ? "OpenCL backend: %s" : "OpenCL backend: %s; install an OpenCL ICD loader and driver", why);
  return -1;
}

static int pick_device(tgc_cl* cl) {
  cl_api* a = &cl->api;
  char why[256];
  if (tgc_cl_api_pick_device(a, &cl->platform, &cl->device, why, sizeof why) != 0) {
    tgc_set_error("OpenCL backend: %s", why);
    return -1;
  }
  a->clGetDeviceInfo(cl->device, CL_DEVICE_NAME, sizeof cl->device_name - 1, cl->device_name, NULL);
  a->clGetDeviceInfo(cl->device, CL_DRIVER_VERSION, sizeof cl->driver_version - 1, cl->driver_version, NULL);
  snprintf(cl->device_label, sizeof cl->device_label, "%s, driver %s", cl->device_name, cl->driver_version);
  for (char* c = cl->device_label; *c; ++c)
    if (*c == '\n' || *c == '\r') *c = ' ';
  a->clGetDeviceInfo(cl->device, CL_DEVICE_VERSION, sizeof cl->device_version - 1, cl->device_version, NULL);
  a->clGetDeviceInfo(cl->device, CL_DEVICE_IMAGE_SUPPORT, sizeof cl->image_support, &cl->image_support, NULL);
  a->clGetDeviceInfo(cl->device, CL_DEVICE_IMAGE2D_MAX_WIDTH, sizeof cl->image_max[0], &cl->image_max[0], NULL);
  a->clGetDeviceInfo(cl->device, CL_DEVICE_IMAGE2D_MAX_HEIGHT, sizeof cl->image_max[1], &cl->image_max[1], NULL);
  return 0;
}

static void cl_free(tgc_cl* cl) {
  if (!cl) return;
  cl_api* a = &cl->api;
  if (cl->queue) a->clFinish(cl->queue);
  if (cl->kernels)
    for (int32_t l = 0; l < cl->desc->num_launches; ++l) {
      if (cl->kernels[l]) a->clReleaseKernel(cl->kernels[l]);
      if (cl->events && cl->events[l]) a->clReleaseEvent(cl->events[l]); /* a run that failed half-way */
    }
  if (cl->progs)
    for (int i = 0; i < cl->num_progs; ++i) {
      if (cl->progs[i].program) a->clReleaseProgram(cl->progs[i].program);
      free(cl->progs[i].options);
    }
  if (cl->host_mem) {
    for (int32_t i = 0; i < cl->desc->num_buffers; ++i)
      if (cl->host_mem[i]) a->clEnqueueUnmapMemObject(cl->queue, cl->host_mem[i], cl->host_ptr[i], 0, NULL, NULL);
    a->clFinish(cl->queue);
    for (int32_t i = 0; i < cl->desc->num_buffers; ++i)
      if (cl->host_mem[i]) a->clReleaseMemObject(cl->host_mem[i]);
  }
  /* Buffers in the reverse of their creation order: NVIDIA's driver (580.159) segfaults
   * releasing an arena sub-buffer while sub-buffers created after it are alive. */
  if (cl->mem)
    for (int32_t i = cl->desc->num_buffers - 1; i >= 0; --i)
      if (cl->mem[i] && cl->mem_owned[i]) a->clReleaseMemObject(cl->mem[i]);
  if (cl->arena) a->clReleaseMemObject(cl->arena);
  if (cl->pool) a->clReleaseMemObject(cl->pool);
  if (cl->queue) a->clReleaseCommandQueue(cl->queue);
  if (cl->ctx) a->clReleaseContext(cl->ctx);
  /* The ICD loader is not dlclose'd: drivers (pocl among them) do not like being unloaded. */
  free(cl->kernels);
  free(cl->progs);
  free(cl->mem);
  free(cl->at);
  free(cl->mem_owned);
  free(cl->host_mem);
  free(cl->host_ptr);
  free(cl->events);
  free(cl->profile_ms);
  free(cl);
}

/* Unbatched inputs and outputs live in host-side buffers of the driver's (CL_MEM_ALLOC_HOST_PTR),
 * mapped for the model's lifetime: pinned memory, from which a run's copies go straight to the
 * device (NVIDIA's driver copies pageable memory through a bounce buffer of its own; on a
 * unified-memory GPU it is memory both sides share). A buffer the driver cannot give keeps the
 * runtime's memory. */
static int map_io(tgc_cl* cl, tgc_model* model) {
  cl_api* a = &cl->api;
  const tgc_model_desc* d = cl->desc;
  cl->host_mem = calloc((size_t)d->num_buffers + 1, sizeof(cl_mem));
  cl->host_ptr = calloc((size_t)d->num_buffers + 1, sizeof(void*));
  if (!cl->host_mem || !cl->host_ptr) return tgc_set_error("out of memory"), -1;
  for (int32_t i = 0; i < d->num_buffers; ++i) {
    const tgc_buffer* b = &d->buffers[i];
    if ((b->storage != TGC_STORAGE_INPUT && b->storage != TGC_STORAGE_OUTPUT) || b->batched || b->nbytes <= 0) continue;
    cl_int e;
    cl_mem h = a->clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, (size_t)b->nbytes, NULL, &e);
    void* p = h ? a->clEnqueueMapBuffer(cl->queue, h, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, (size_t)b->nbytes, 0,
                                        NULL, NULL, &e)
                : NULL;
    if (!p) {
      if (h) a->clReleaseMemObject(h);
      continue;
    }
    cl->host_mem[i] = h, cl->host_ptr[i] = p;
    tgc_adopt_host_memory(model, i, p);
  }
  return 0;
}

static void cl_destroy(void* be, tgc_model* m) {
  tgc_cl* cl = be;
  if (cl->profile_ms && cl->profile_runs > 0) {
    char title[600];
    /* A span much longer than the launches' sum: the device waited for the host's enqueues. */
    snprintf(title, sizeof title,
             "%lld runs on '%s' (OpenCL event timestamps of each launch; %.4f ms per run from the first's start to "
             "the last's end)",
             (long long)cl->profile_runs, cl->device_name, cl->profile_span_ms / (double)cl->profile_runs);
    tgc_print_profile(cl->desc, cl->profile_ms, cl->profile_runs, title, "");
  }
  cl_free(cl);
}

/* A weight the kernels read as an image (TGC_STORAGE_IMAGE): RGBA f32 or f16 texels in rows of
 * TGC_IMAGE_ROW_TEXELS, the last row padded with zeros. NULL with the error set. */
static cl_mem create_image(tgc_cl* cl, const tgc_buffer* b, const void* data) {
  cl_api* a = &cl->api;
  const char* bn = b->name ? b->name : "?";
  cl_bool images = cl->image_support;
  size_t max_w = cl->image_max[0], max_h = cl->image_max[1];
  size_t texel_bytes = b->dtype == TGC_F16 ? 8 : 16, texels = (size_t)b->nbytes / texel_bytes;
  size_t w = texels < TGC_IMAGE_ROW_TEXELS ? texels : TGC_IMAGE_ROW_TEXELS, h = (texels + w - 1) / w;
  if (!images || w > max_w || h > max_h) {
    tgc_set_error(
        "OpenCL backend: weight '%s' is an image of %zu x %zu texels, but '%s' has %s (2D images up to %zu x %zu)", bn,
        w, h, cl->device_name, images ? "smaller ones" : "no image support", max_w, max_h);
    return NULL;
  }
  void* texels_data = calloc(w * h, texel_bytes);
  if (!texels_data) return tgc_set_error("out of memory"), NULL;
  memcpy(texels_data, data, (size_t)b->nbytes);
  cl_image_format format = {CL_RGBA, b->dtype == TGC_F16 ? CL_HALF_FLOAT : CL_FLOAT};
  cl_image_desc image = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = w, .image_height = h};
  cl_int e = 0;
  cl_mem m = a->clCreateImage(cl->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &format, &image, texels_data, &e);
  free(texels_data);
  if (!m)
    tgc_set_error("OpenCL backend: cannot create the %zu x %zu image of weight '%s': %s (%d)", w, h, bn, tgc_cl_err(e),
                  e);
  return m;
}

static size_t aligned_bytes(const tgc_buffer* b, size_t align) {
  return ((size_t)(b->nbytes > 0 ? b->nbytes : 0) + align - 1) / align * align;
}

/* Whether image weights are images: where the device has images, unless TGC_CL_IMAGES=0. */
static int wants_images(const tgc_cl* cl) {
  const char* env = getenv("TGC_CL_IMAGES");
  return cl->image_support && !(env && strcmp(env, "0") == 0);
}

static int in_pool(const tgc_cl* cl, const tgc_buffer* b) {
  return b->storage != TGC_STORAGE_IMAGE || cl->images_in_pool;
}

/* The pool (see the top of this file): each buffer but the arena's and images that stay images at
 * an offset aligned to `align`, the arena's intermediates at the memory plan's offsets in one
 * region. 1 with the pool made and the weights (images among them) and states written into it;
 * 0 where it does not fit one allocation or TGC_CL_POOL=0; -1 with the error set. */
static int create_pool(tgc_cl* cl, tgc_model* model, size_t align) {
  cl_api* a = &cl->api;
  const tgc_model_desc* d = cl->desc;
  const char* env = getenv("TGC_CL_POOL");
  if (env && strcmp(env, "0") == 0) return 0;
  for (int32_t l = 0; l < d->num_launches; ++l) /* each kernel must have the pool's signature */
    if (!memmem(d->launches[l].blob, (size_t)d->launches[l].blob_size, "#ifdef TGC_POOL", 15)) return 0;
  cl->images_in_pool = !wants_images(cl);
  size_t size = 0;
  for (int32_t i = 0; i < d->num_buffers; ++i) {
    const tgc_buffer* b = &d->buffers[i];
    if (!in_pool(cl, b) || b->storage == TGC_STORAGE_ARENA) continue;
    cl->at[i] = size;
    size += aligned_bytes(b, align);
  }
  size_t arena_at = size;
  size += (size_t)d->arena_size;
  for (int32_t i = 0; i < d->num_buffers; ++i)
    if (d->buffers[i].storage == TGC_STORAGE_ARENA) cl->at[i] = arena_at + (size_t)d->buffers[i].offset;
  cl_ulong max_alloc = 0;
  a->clGetDeviceInfo(cl->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
  cl_int e = 0;
  if (size > 0 && (cl_ulong)size <= max_alloc) cl->pool = a->clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE, size, NULL, &e);
  if (!cl->pool) { /* a buffer each, then, each from its own start */
    memset(cl->at, 0, sizeof(size_t) * (size_t)d->num_buffers);
    cl->images_in_pool = 0;
    return 0;
  }
  for (int32_t i = 0; i < d->num_buffers; ++i) {
    const tgc_buffer* b = &d->buffers[i];
    if (!in_pool(cl, b)) continue;
    cl->mem[i] = cl->pool;
    int written =
        b->storage == TGC_STORAGE_WEIGHT || b->storage == TGC_STORAGE_STATE || b->storage == TGC_STORAGE_IMAGE;
    if (!written || b->nbytes <= 0) continue;
    e = a->clEnqueueWriteBuffer(cl->queue, cl->pool, CL_FALSE, cl->at[i], (size_t)b->nbytes, model->buf[i], 0, NULL,
                                NULL);
    if (e != CL_SUCCESS) {
      tgc_set_error("OpenCL backend: copying %s '%s' to the device failed: %s (%d)",
                    b->storage == TGC_STORAGE_STATE ? "state" : "weight", b->name ? b->name : "?", tgc_cl_err(e), e);
      a->clFinish(cl->queue);
      return -1;
    }
  }
  if ((e = a->clFinish(cl->queue)) != CL_SUCCESS) {
    tgc_set_error("OpenCL backend: copying the weights to the device failed: %s (%d)", tgc_cl_err(e), e);
    return -1;
  }
  if (tgc_gpu_verbose())
    fprintf(stderr, "tgc: opencl: every buffer%s in one pool of %zu bytes\n",
            cl->images_in_pool ? "" : " but the images", size);
  return 1;
}

/* Each launch carries OpenCL C source and a kernel name. 0, or -1 with the error set. */
static int check_sources(const tgc_model_desc* desc) {
  for (int32_t l = 0; l < desc->num_launches; ++l) {
    const tgc_launch* L = &desc->launches[l];
    if (!L->blob || L->blob_size <= 0 || !L->name) {
      tgc_set_error("launch %d '%s': no OpenCL source or kernel name (blob %s, blob_size %lld)", (int)l,
                    L->name ? L->name : "?", L->blob ? "set" : "NULL", (long long)L->blob_size);
      return -1;
    }
  }
  return 0;
}

/* The device, its context and queue (profiling with TGC_PROFILE), and the per-buffer and
 * per-launch tables. 0, or -1 with the error set. */
static int open_device(tgc_cl* cl) {
  const tgc_model_desc* desc = cl->desc;
  cl_api* a = &cl->api;
  cl_int e = 0;
  if (load_api(a) != 0 || pick_device(cl) != 0) return -1;
  if (tgc_gpu_verbose())
    fprintf(stderr, "tgc: opencl: device '%s', %s, driver %s\n", cl->device_name, cl->device_version,
            cl->driver_version);
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)cl->platform, 0};
  cl->ctx = a->clCreateContext(props, 1, &cl->device, NULL, NULL, &e);
  if (!cl->ctx)
    return tgc_set_error("OpenCL backend: clCreateContext on '%s' failed: %s (%d)", cl->device_name, tgc_cl_err(e), e),
           -1;
  if (getenv("TGC_PROFILE")) {
    cl->events = calloc((size_t)desc->num_launches + 1, sizeof(cl_event));
    cl->profile_ms = calloc((size_t)desc->num_launches + 1, sizeof(double));
    if (!cl->events || !cl->profile_ms) return tgc_set_error("out of memory"), -1;
  }
  cl->queue = a->clCreateCommandQueue(cl->ctx, cl->device, cl->events ? CL_QUEUE_PROFILING_ENABLE : 0, &e);
  if (!cl->queue) return tgc_set_error("OpenCL backend: clCreateCommandQueue failed: %s (%d)", tgc_cl_err(e), e), -1;
  int32_t nb = desc->num_buffers;
  cl->mem = calloc((size_t)nb + 1, sizeof(cl_mem));
  cl->at = calloc((size_t)nb + 1, sizeof(size_t));
  cl->mem_owned = calloc((size_t)nb + 1, sizeof(int));
  cl->progs = calloc((size_t)desc->num_launches + 1, sizeof(cl_prog));
  cl->kernels = calloc((size_t)desc->num_launches + 1, sizeof(cl_kernel));
  if (!cl->mem || !cl->at || !cl->mem_owned || !cl->progs || !cl->kernels) return tgc_set_error("out of memory"), -1;
  return 0;
}

/* Without the pool: are the intermediates sub-buffers of one arena (made here), as the memory plan
 * shares them? NVIDIA's OpenCL (580.159, H200) ran launches on sub-buffers of one arena 5-8x
 * slower than on buffers of their own (cls 6.04 -> 0.78 ms, det 5.42 -> 1.09). Every intermediate
 * is written whole by its kernel before it is read, so its own buffer computes the same: the
 * sharing is kept only where the intermediates add up to more than 1/16 of the device's memory.
 * TGC_CL_SUBBUFFERS=1 keeps it always. 1 or 0, or -1 with the error set. */
static int shared_arena(tgc_cl* cl, int pooled) {
  const tgc_model_desc* desc = cl->desc;
  cl_api* a = &cl->api;
  int64_t unshared = 0;
  for (int32_t i = 0; i < desc->num_buffers; ++i)
    if (desc->buffers[i].storage == TGC_STORAGE_ARENA) unshared += desc->buffers[i].nbytes;
  cl_ulong device_bytes = 0;
  a->clGetDeviceInfo(cl->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof device_bytes, &device_bytes, NULL);
  const char* force = getenv("TGC_CL_SUBBUFFERS");
  int shared = !pooled && ((force && force[0] && strcmp(force, "0") != 0) || (int64_t)(device_bytes / 16) < unshared);
  if (tgc_gpu_verbose() && !pooled)
    fprintf(stderr, "tgc: opencl: intermediates in %s (%lld bytes planned, %lld unshared)\n",
            shared ? "sub-buffers of one arena" : "buffers of their own", (long long)desc->arena_size,
            (long long)unshared);
  if (desc->arena_size > 0 && shared) {
    cl_int e = 0;
    cl->arena = a->clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE, (size_t)desc->arena_size, NULL, &e);
    if (!cl->arena)
      return tgc_set_error("OpenCL backend: cannot allocate the %lld-byte arena: %s (%d)", (long long)desc->arena_size,
                           tgc_cl_err(e), e),
             -1;
  }
  return shared;
}

/* The memory of buffer i outside the pool: a sub-buffer of the shared arena, its own buffer (with
 * the weights or zeroed state copied in), or an image. 0, or -1 with the error set. */
static int create_buffer(tgc_cl* cl, tgc_model* model, int32_t i, int shared, int64_t align) {
  const tgc_model_desc* desc = cl->desc;
  cl_api* a = &cl->api;
  const tgc_buffer* b = &desc->buffers[i];
  const char* bn = b->name ? b->name : "?";
  size_t size = b->nbytes > 0 ? (size_t)b->nbytes : 1; /* CL has no empty buffers */
  cl_mem m = NULL;
  cl_int e = 0;
  if (b->storage == TGC_STORAGE_ARENA && shared && b->nbytes > 0 && b->offset % align == 0) {
    cl_buffer_region r = {(size_t)b->offset, size};
    m = a->clCreateSubBuffer(cl->arena, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &e);
  } else if (b->storage == TGC_STORAGE_ARENA) {
    if (shared && b->nbytes > 0 && tgc_arena_overlaps(desc, i))
      return tgc_set_error(
                 "OpenCL backend: arena buffer '%s' at offset %lld shares memory with another buffer but is "
                 "not aligned to the device's %lld-byte base address alignment ('%s')",
                 bn, (long long)b->offset, (long long)align, cl->device_name),
             -1;
    /* Its own allocation: chosen above, or nothing aliases it. */
    m = a->clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE, size, NULL, &e);
  } else if (b->storage == TGC_STORAGE_WEIGHT) {
    m = a->clCreateBuffer(cl->ctx, CL_MEM_READ_ONLY | (b->nbytes > 0 ? CL_MEM_COPY_HOST_PTR : 0), size,
                          b->nbytes > 0 ? model->buf[i] : NULL, &e);
  } else if (b->storage == TGC_STORAGE_IMAGE) {
    if (!(m = create_image(cl, b, model->buf[i]))) return -1;
  } else if (b->storage == TGC_STORAGE_STATE) {
    /* its own memory, starting from the zeroed host copy; runs leave it on the device */
    m = a->clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE | (b->nbytes > 0 ? CL_MEM_COPY_HOST_PTR : 0), size,
                          b->nbytes > 0 ? model->buf[i] : NULL, &e);
  } else {
    m = a->clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE, size, NULL, &e);
  }
  if (!m)
    return tgc_set_error("OpenCL backend: cannot create buffer '%s' (%lld bytes): %s (%d)", bn, (long long)b->nbytes,
                         tgc_cl_err(e), e),
           -1;
  cl->mem[i] = m;
  cl->mem_owned[i] = 1;
  return 0;
}

static void* cl_create(tgc_model* model, int num_threads) {
  const tgc_model_desc* desc = model->desc;
  if (check_sources(desc) != 0) return NULL;
  model->num_threads = 0;
  tgc_cl* cl = calloc(1, sizeof *cl);
  if (!cl) return tgc_set_error("out of memory"), NULL;
  cl->desc = desc;
  cl->launch_ms = -1;
  if (open_device(cl) != 0) goto fail;
  cl_uint align_bits = 0;
  cl->api.clGetDeviceInfo(cl->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
  int64_t align = align_bits >= 8 ? align_bits / 8 : 1;
  int pooled = create_pool(cl, model, (size_t)(align > 16 ? align : 16));
  int shared = pooled < 0 ? -1 : shared_arena(cl, pooled);
  if (shared < 0) goto fail;
  for (int32_t i = 0; i < desc->num_buffers; ++i)
    if (!cl->mem[i] && create_buffer(cl, model, i, shared, align) != 0) goto fail; /* cl->mem[i]: in the pool */
  if (map_io(cl, model) != 0) goto fail;
  return cl;
fail:
  cl_free(cl);
  return NULL;
}

/* ---------------------------------------------------------------- binary cache */

/* A launch's build options: with the pool, -DTGC_POOL and each pooled buffer's offset, bN_at for
 * the launch's N-th buffer (render_opencl.h). NULL (the error set) where out of memory. */
static char* build_options(const tgc_cl* cl, int32_t l) {
  const tgc_launch* L = &cl->desc->launches[l];
  size_t cap = 64 + 48 * (size_t)L->num_buffers, n = 0; /* " -Db<i>_at=<20 digits>UL" each */
  char* s = malloc(cap);
  if (!s) return tgc_set_error("out of memory"), NULL;
  s[0] = '\0';
  if (!cl->pool) return s;
  n += (size_t)snprintf(s + n, cap - n, "-DTGC_POOL%s", cl->images_in_pool ? " -DTGC_NO_IMAGES" : "");
  for (int32_t i = 0; i < L->num_buffers; ++i)
    if (in_pool(cl, &cl->desc->buffers[L->buffers[i]]))
      n += (size_t)snprintf(s + n, cap - n, " -Db%d_at=%zuUL", (int)i, cl->at[L->buffers[i]]);
  return s;
}

/* The parts are hashed with a NUL after each (the same key as for a NUL-terminated source), and
 * h2 mixes in each part's length, so a blob holding NULs cannot collide by shifting bytes. */
static void cache_key(const tgc_cl* cl, const char* src, size_t src_len, const char* options, uint64_t key[2]) {
  const char* parts[] = {src, options, cl->device_name, cl->driver_version, cl->device_version};
  uint64_t h1 = TGC_FNV1A_BASIS, h2 = 0x84222325cbf29ce4ull ^ 0x7467632d636c31ull; /* "tgc-cl1" */
  for (int i = 0; i < 5; ++i) {
    size_t len = i == 0 ? src_len : strlen(parts[i]), n = len + 1;
    h1 = tgc_fnv1a(tgc_fnv1a(h1, parts[i], len), "", 1);
    h2 = tgc_fnv1a(tgc_fnv1a(h2 * 31 + n, parts[i], len), "", 1);
  }
  key[0] = h1;
  key[1] = h2;
}

#define CACHE_MAGIC "TGCCLB01"
typedef struct {
  char magic[8];
  uint64_t key[2];
  uint64_t source_len;
  uint64_t binary_len;
} cache_header;

static unsigned char* cache_load(const char* path, const uint64_t key[2], size_t src_len, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  cache_header h;
  unsigned char* bin = NULL;
  if (fread(&h, sizeof h, 1, f) == 1 && memcmp(h.magic, CACHE_MAGIC, 8) == 0 && h.key[0] == key[0] &&
      h.key[1] == key[1] && h.source_len == src_len && h.binary_len > 0 && h.binary_len < (1ull << 32) &&
      (bin = malloc(h.binary_len)) && fread(bin, 1, h.binary_len, f) == h.binary_len) {
    *len = h.binary_len;
  } else {
    free(bin);
    bin = NULL;
  }
  fclose(f);
  return bin;
}

static void cache_store(tgc_cl* cl, const char* path, const uint64_t key[2], size_t src_len, cl_program prog) {
  cl_api* a = &cl->api;
  size_t len = 0;
  if (a->clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS || len == 0) return;
  unsigned char* bin = malloc(len);
  if (!bin) return;
  if (a->clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS) {
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE* f = fopen(tmp, "wb");
    if (f) {
      cache_header h;
      memcpy(h.magic, CACHE_MAGIC, 8);
      h.key[0] = key[0];
      h.key[1] = key[1];
      h.source_len = src_len;
      h.binary_len = len;
      int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(bin, 1, len, f) == len;
      ok = fclose(f) == 0 && ok;
      if (!ok || rename(tmp, path) != 0) unlink(tmp);
    }
  }
  free(bin);
}

/* ---------------------------------------------------------------- build + run */

static cl_program build_program(tgc_cl* cl, const char* src, size_t src_len, const char* options,
                                const char* kernel_name, int* from_cache) {
  cl_api* a = &cl->api;
  cl_int e = 0;
  uint64_t key[2];
  cache_key(cl, src, src_len, options, key);
  char dir[4096], path[4200];
  /* a tuning candidate (timed by events) is built once: no cache entry for it */
  int have_cache = !cl->candidate && tgc_gpu_cache_dir("TGC_CL_CACHE", dir, sizeof dir) == 0;
  if (have_cache)
    snprintf(path, sizeof path, "%s/%016llx%016llx.clbin", dir, (unsigned long long)key[0], (unsigned long long)key[1]);
  *from_cache = 0;
  if (have_cache) {
    size_t len = 0;
    unsigned char* bin = cache_load(path, key, src_len, &len);
    if (bin) {
      const unsigned char* bins[1] = {bin};
      cl_int status = 0;
      cl_program p = a->clCreateProgramWithBinary(cl->ctx, 1, &cl->device, &len, bins, &status, &e);
      free(bin);
      if (p && status == CL_SUCCESS && a->clBuildProgram(p, 1, &cl->device, options, NULL, NULL) == CL_SUCCESS) {
        *from_cache = 1;
        return p;
      }
      if (p) a->clReleaseProgram(p); /* stale or foreign binary: rebuild from source below */
    }
  }
  cl_program p = a->clCreateProgramWithSource(cl->ctx, 1, &src, &src_len, &e);
  if (!p) {
    tgc_set_error("OpenCL backend: clCreateProgramWithSource for kernel '%s' failed: %s (%d)", kernel_name,
                  tgc_cl_err(e), e);
    return NULL;
  }
  e = a->clBuildProgram(p, 1, &cl->device, options, NULL, NULL);
  if (e != CL_SUCCESS) {
    char log[700] = "";
    size_t n = 0;
    a->clGetProgramBuildInfo(p, cl->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &n);
    log[sizeof log - 1] = '\0';
    for (char* c = log; *c; ++c)
      if (*c == '\n' || *c == '\r') *c = ' '; /* one-line errors */
    size_t l = strlen(log);
    while (l > 0 && log[l - 1] == ' ') log[--l] = '\0';
    tgc_set_error("OpenCL backend: building kernel '%s' for '%s' failed: %s (%d); build log: %s", kernel_name,
                  cl->device_name, tgc_cl_err(e), e, log[0] ? log : "(empty)");
    a->clReleaseProgram(p);
    return NULL;
  }
  if (have_cache) {
    if (tgc_mkdirs(dir) == 0) cache_store(cl, path, key, src_len, p);
  }
  return p;
}

/* A pointer (or image) per buffer, or with the pool (render_opencl.h): the pool, then the images
 * not in it, in the launch's buffer order. */
static int set_args(tgc_cl* cl, int32_t l) {
  cl_api* a = &cl->api;
  const tgc_launch* L = &cl->desc->launches[l];
  cl_kernel k = cl->kernels[l];
  cl_uint arg = 0;
  cl_int e = CL_SUCCESS;
  if (!cl->pool) {
    for (int32_t i = 0; i < L->num_buffers && e == CL_SUCCESS; ++i)
      e = a->clSetKernelArg(k, arg++, sizeof(cl_mem), &cl->mem[L->buffers[i]]);
  } else {
    e = a->clSetKernelArg(k, arg++, sizeof(cl_mem), &cl->pool);
    for (int32_t i = 0; i < L->num_buffers && e == CL_SUCCESS; ++i)
      if (!in_pool(cl, &cl->desc->buffers[L->buffers[i]]))
        e = a->clSetKernelArg(k, arg++, sizeof(cl_mem), &cl->mem[L->buffers[i]]);
  }
  if (e != CL_SUCCESS)
    tgc_set_error("OpenCL backend: kernel '%s': setting argument %u failed: %s (%d)", L->name, arg - 1, tgc_cl_err(e),
                  e);
  return e == CL_SUCCESS ? 0 : -1;
}

static int build_all(tgc_cl* cl) {
  cl_api* a = &cl->api;
  const tgc_model_desc* d = cl->desc;
  for (int32_t l = 0; l < d->num_launches; ++l) {
    const tgc_launch* L = &d->launches[l];
    const char* src = L->blob; /* OpenCL C text, not NUL-terminated */
    size_t size = (size_t)L->blob_size;
    char* options = build_options(cl, l);
    if (!options) return -1;
    cl_program prog = NULL;
    for (int i = 0; i < cl->num_progs && !prog; ++i)
      if (cl->progs[i].size == size && strcmp(cl->progs[i].options, options) == 0 &&
          (cl->progs[i].source == src || memcmp(cl->progs[i].source, src, size) == 0))
        prog = cl->progs[i].program;
    if (prog) {
      free(options);
    } else {
      int from_cache = 0;
      if (!(prog = build_program(cl, src, size, options, L->name, &from_cache))) return free(options), -1;
      if (tgc_gpu_verbose())
        fprintf(stderr, "tgc: opencl: program %d (kernel '%s') %s\n", cl->num_progs, L->name,
                from_cache ? "loaded from the binary cache" : "built from source");
      cl->progs[cl->num_progs].source = src;
      cl->progs[cl->num_progs].size = size;
      cl->progs[cl->num_progs].options = options;
      cl->progs[cl->num_progs].program = prog;
      cl->progs[cl->num_progs].from_cache = from_cache;
      cl->num_progs++;
    }
    cl_int e = 0;
    cl->kernels[l] = a->clCreateKernel(prog, L->name, &e);
    if (!cl->kernels[l]) {
      tgc_set_error("OpenCL backend: launch %d: clCreateKernel('%s') failed: %s (%d)", (int)l, L->name, tgc_cl_err(e),
                    e);
      return -1;
    }
    size_t max_group = 0;
    if (L->local_size[0] > 0 &&
        a->clGetKernelWorkGroupInfo(cl->kernels[l], cl->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_group, &max_group,
                                    NULL) == CL_SUCCESS &&
        (size_t)(L->local_size[0] * (L->local_size[1] > 0 ? L->local_size[1] : 1) *
                 (L->local_size[2] > 0 ? L->local_size[2] : 1)) > max_group) {
      tgc_set_error(
          "OpenCL backend: launch %d '%s': work-groups of %lld threads, but '%s' runs this kernel in groups of "
          "at most %zu",
          (int)l, L->name, (long long)L->local_size[0], cl->device_name, max_group);
      return -1;
    }
    if (set_args(cl, l) != 0) return -1;
  }
  cl->built = 1;
  return 0;
}

static int cl_upload(void* be, tgc_model* m, const int32_t* bufs, int32_t n) {
  tgc_cl* cl = be;
  cl_api* a = &cl->api;
  const tgc_model_desc* d = cl->desc;
  for (int32_t i = 0; i < n; ++i) {
    const tgc_buffer* b = &d->buffers[bufs[i]];
    size_t bytes = (size_t)tgc_run_nbytes(m, bufs[i]);
    if (bytes == 0) continue;
    /* not blocking: the copies are ordered before the next run's kernels, whose clFinish waits */
    cl_int e = a->clEnqueueWriteBuffer(cl->queue, cl->mem[bufs[i]], CL_FALSE, cl->at[bufs[i]], bytes, m->cur[bufs[i]],
                                       0, NULL, NULL);
    if (e != CL_SUCCESS) {
      tgc_set_error("OpenCL backend: copying %s '%s' to the device failed: %s (%d)",
                    b->storage == TGC_STORAGE_STATE ? "state" : "input", b->name, tgc_cl_err(e), e);
      a->clFinish(cl->queue); /* host buffers must not be in use when we return */
      return -1;
    }
  }
  return 0;
}

/* A model timed by tgc-agent (m->time_launches, set after create): its queue is made again with
 * profiling, once, so that each run's launches are timed by their events. */
static int start_timing(tgc_cl* cl) {
  cl_api* a = &cl->api;
  cl->candidate = 1;
  if (cl->events) return 0; /* TGC_PROFILE: the queue profiles already */
  cl_int e = a->clFinish(cl->queue);
  cl_command_queue q =
      e == CL_SUCCESS ? a->clCreateCommandQueue(cl->ctx, cl->device, CL_QUEUE_PROFILING_ENABLE, &e) : NULL;
  cl->events = q ? calloc((size_t)cl->desc->num_launches + 1, sizeof(cl_event)) : NULL;
  if (!cl->events) {
    if (q) a->clReleaseCommandQueue(q);
    return tgc_set_error("OpenCL backend: a profiling queue: %s", q ? "out of memory" : tgc_cl_err(e)), -1;
  }
  a->clReleaseCommandQueue(cl->queue);
  cl->queue = q;
  return 0;
}

/* Each launch's time from its event's start and end timestamps (device clock, ns): the run's span
 * (launch_ms) and, with TGC_PROFILE, each launch's sum. */
static void collect_profile(tgc_cl* cl) {
  cl_api* a = &cl->api;
  cl_ulong first = 0, last = 0;
  for (int32_t l = 0; l < cl->desc->num_launches; ++l) {
    if (!cl->events[l]) continue;
    cl_ulong start = 0, end = 0;
    if (a->clGetEventProfilingInfo(cl->events[l], CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) ==
            CL_SUCCESS &&
        a->clGetEventProfilingInfo(cl->events[l], CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) == CL_SUCCESS &&
        end >= start) {
      if (cl->profile_ms) cl->profile_ms[l] += (double)(end - start) / 1e6;
      if (!first || start < first) first = start;
      if (end > last) last = end;
    }
    a->clReleaseEvent(cl->events[l]);
    cl->events[l] = NULL;
  }
  cl->launch_ms = last > first ? (double)(last - first) / 1e6 : -1;
  if (cl->launch_ms > 0) cl->profile_span_ms += cl->launch_ms;
  cl->profile_runs++;
}

static int64_t cl_run(void* be, tgc_model* m, int64_t sample) {
  tgc_cl* cl = be;
  cl_api* a = &cl->api;
  const tgc_model_desc* d = cl->desc;
  cl_int e;
  if (m->time_launches && !cl->candidate && start_timing(cl) != 0) goto fail;
  if (!cl->built && build_all(cl) != 0) goto fail;
  for (int32_t l = 0; l < d->num_launches; ++l) {
    const tgc_launch* L = &d->launches[l];
    if (L->global_size[0] <= 0 || tgc_launch_items(m, l) == 0) continue; /* 0: a size variant of other sizes */
    size_t global[3], local[3];
    cl_uint dims = 1;
    for (int k = 0; k < 3; ++k) {
      global[k] = L->global_size[k] > 0 ? (size_t)L->global_size[k] : 1;
      local[k] = L->local_size[k] > 0 ? (size_t)L->local_size[k] : 1;
      if (L->global_size[k] > 1 || L->local_size[k] > 1) dims = (cl_uint)k + 1;
    }
    e = a->clEnqueueNDRangeKernel(cl->queue, cl->kernels[l], dims, NULL, global, L->local_size[0] > 0 ? local : NULL, 0,
                                  NULL, cl->events ? &cl->events[l] : NULL);
    if (e != CL_SUCCESS) {
      tgc_set_error("OpenCL backend: launch %d '%s' (global %zux%zux%zu, local %lldx%lldx%lld) failed: %s (%d)", (int)l,
                    L->name, global[0], global[1], global[2], (long long)L->local_size[0], (long long)L->local_size[1],
                    (long long)L->local_size[2], tgc_cl_err(e), e);
      goto fail;
    }
  }
  for (int32_t i = 0; i < d->num_outputs; ++i) {
    int32_t b = d->outputs[i];
    size_t n = (size_t)tgc_run_nbytes(m, b); /* what this run's sizes cover */
    if (n == 0) continue;
    e = a->clEnqueueReadBuffer(cl->queue, cl->mem[b], CL_FALSE, cl->at[b], n, m->cur[b], 0, NULL, NULL);
    if (e != CL_SUCCESS) {
      tgc_set_error("OpenCL backend: copying output '%s' from the device failed: %s (%d)", d->buffers[b].name,
                    tgc_cl_err(e), e);
      goto fail;
    }
  }
  e = a->clFinish(cl->queue);
  if (e != CL_SUCCESS) {
    tgc_set_error("OpenCL backend: running '%s' failed: %s (%d)", d->name ? d->name : "?", tgc_cl_err(e), e);
    return -1;
  }
  if (cl->events) collect_profile(cl);
  return 1;
fail:
  a->clFinish(cl->queue); /* the inputs' copies may still read host buffers */
  return -1;
}

const struct tgc_backend tgc_backend_opencl = {
    .name = "opencl",
    .caps = TGC_BACKEND_IMAGES,
    .create = cl_create,
    .upload = cl_upload,
    .run = cl_run,
    .destroy = cl_destroy,
    .device_name = cl_device_name,
    .launch_ms = cl_launch_ms,
};
