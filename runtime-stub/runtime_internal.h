/* Internals shared by the runtime's translation units. Not installed, not part of the ABI. */
#ifndef TGC_RUNTIME_INTERNAL_H
#define TGC_RUNTIME_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#include "tgc_runtime.h"

#if defined(__GNUC__)
#define TGC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TGC_PRINTF(a, b)
#endif

/* ---- errors (runtime.c) ---- */
void tgc_set_error(const char* fmt, ...) TGC_PRINTF(1, 2);
void tgc_clear_error(void);

/* mkdir -p (mode 0755). Returns 0 or -1 with errno set. */
int tgc_mkdirs(const char* path);

/* ---- dtypes (runtime.c) ---- */
int tgc_dtype_size(int32_t dtype);        /* bytes per element, 0 if unknown */
const char* tgc_dtype_name(int32_t dtype); /* "f32", ...; "?" if unknown */
int64_t tgc_buffer_numel(const tgc_buffer* b);
double tgc_half_to_double(uint16_t h);
uint16_t tgc_float_to_half(float f);

/* ---- thread pool (threadpool.c) ---- */
typedef struct tgc_pool tgc_pool;
/* num_threads counts the calling thread: num_threads - 1 workers are started. NULL on failure. */
tgc_pool* tgc_pool_create(int num_threads);
void tgc_pool_destroy(tgc_pool* p);
int tgc_pool_size(const tgc_pool* p);
/* Runs fn(buffers, begin, end) over [0, total), split in contiguous chunks, one per thread, when
 * each gets at least min_items (else in the caller); returns when all are done. */
void tgc_pool_run(tgc_pool* p, tgc_cpu_fn fn, void* const* buffers, int64_t total, int64_t min_items);
int tgc_online_cores(void);

/* ---- OpenCL backend (opencl.c) ---- */
typedef struct tgc_cl tgc_cl;
/* host[i] is the host address of desc->buffers[i] (NULL for arena buffers): inputs/outputs are the
 * runtime's host copies, weights point into the weight blob. */
tgc_cl* tgc_cl_create(const tgc_model_desc* desc, void* const* host);
void tgc_cl_destroy(tgc_cl* cl);
int tgc_cl_run(tgc_cl* cl);
const char* tgc_cl_device_name(const tgc_cl* cl);

/* ---- the model (runtime.c) ---- */
/* A thread's own arena and argument arrays for sample-parallel runs. */
typedef struct {
  void* arena;
  void** cur;
  void*** args;
} tgc_worker;

struct tgc_model {
  const tgc_model_desc* desc;
  void* arena;            /* 64-byte aligned, CPU backend only */
  void** buf;             /* base address of each desc->buffers[i] (host side) */
  void** cur;             /* address of each buffer for the sample being run: buf, but batched
                           * buffers move by a sample per run of the launches */
  int64_t batch;          /* samples held by batched buffers (1 without desc->batch_dim) */
  tgc_worker* workers;    /* per thread, made by the first sample-parallel run, else NULL */
  int64_t* var_value;     /* run-time dims: the bound value of each VAR */
  void** dense;           /* per buffer with run-time dims: the callers' dense storage, else NULL */
  void** io_alloc;        /* per buffer: own allocation for INPUT/OUTPUT storage, else NULL */
  void*** launch_args;    /* per launch: resolved argument pointers, in launch order */
  void* weights_map;      /* mmap of desc->weights_file, or NULL */
  size_t weights_map_size;
  tgc_pool* pool;         /* CPU backend */
  tgc_cl* cl;             /* OpenCL backend */
  int num_threads;
  double* profile_ms;     /* TGC_PROFILE set: time spent per launch, printed by tgc_destroy */
  int64_t profile_runs;
};

/* Sets the batch size of a model with a batch_dim (n >= 1): batched input/output storage is
 * reallocated (zeroed) when it changes. 0, or -1 with the error set. */
int tgc_bind_batch(tgc_model* m, int64_t n);

/* ---- run-time dims (dims.c) ---- */
/* Size of dim k of buffer b as currently bound (batch, VAR or fixed). */
int64_t tgc_dim_size(const tgc_model* m, const tgc_buffer* b, int32_t k);
/* Bytes of buffer i as currently bound: all samples of a batched buffer, a dense tensor of the
 * bound sizes for one with run-time dims. */
int64_t tgc_bound_nbytes(const tgc_model* m, int32_t i);
int tgc_dims_init(tgc_model* m); /* VARs at their maxima, dense storage; 0 or -1 */
void tgc_dims_free(tgc_model* m);
/* New VAR values (each 1 to its maximum): the vars buffer is written and the dense storage of
 * inputs/outputs with run-time dims reallocated (zeroed) when one changes. 0 or -1. */
int tgc_bind_vars(tgc_model* m, const int64_t* values);
void tgc_dims_before_run(tgc_model* m); /* dense inputs into the kernels' layout */
void tgc_dims_after_run(tgc_model* m);  /* the kernels' outputs into dense storage */

/* Monotonic clock in milliseconds (run timing and TGC_PROFILE). */
double tgc_now_ms(void);

/* ---- .npy files (npy.c) ---- */
typedef struct {
  int32_t dtype;
  int32_t rank;
  int64_t shape[16];
  void* data;     /* malloc'd, numel * dtype size bytes */
  size_t nbytes;
} tgc_npy;
/* Reads a .npy file (v1/v2/v3 header, little-endian, C order). Returns 0, or -1 with the error set
 * (the message names the file). */
int tgc_npy_read(const char* path, tgc_npy* out);
/* Writes atomically (temp file + rename). Returns 0 or -1 with the error set. */
int tgc_npy_write(const char* path, int32_t dtype, int32_t rank, const int64_t* shape, const void* data,
                  size_t nbytes);
const char* tgc_npy_descr(int32_t dtype); /* "<f4", ...; NULL if not representable */

#endif
