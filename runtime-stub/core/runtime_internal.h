/* Internals shared by the runtime's translation units. Not installed, not part of the ABI. */
#ifndef TGC_RUNTIME_INTERNAL_H
#define TGC_RUNTIME_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tgc_runtime.h"

#define TGC_MAX_VARS 64 /* run-time dims of a model */

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
int tgc_dtype_size(int32_t dtype);         /* bytes per element, 0 if unknown */
const char* tgc_dtype_name(int32_t dtype); /* "f32", ...; "?" if unknown */
int64_t tgc_buffer_numel(const tgc_buffer* b);
double tgc_half_to_double(uint16_t h);
uint16_t tgc_float_to_half(float f);

/* GPU backends: does arena buffer i share any byte with another arena buffer (runtime.c)? */
int tgc_arena_overlaps(const tgc_model_desc* d, int32_t i);
int tgc_physical_cores(void);
/* 0 when this CPU has every feature in d->cpu_features; else -1 with the error set, naming those
 * it lacks (core/cpu_check.c). */
int tgc_check_cpu(const tgc_model_desc* d);
int64_t tgc_now_ns(void); /* CLOCK_MONOTONIC */

/* ---- backends (cpu.c, opencl.c, vulkan.c, cuda.c; one file each) ---- */
/* One run of a model, as runtime.c drives it:
 *   for each sample s (just s = 0 without a batch dim):
 *     point m->cur / m->launch_args at sample s
 *     upload(the inputs and the vars buffer)      host -> device; skipped where upload is NULL
 *     s += run(s)                                 every launch; outputs back in host memory
 * Run-time dims are copied between the callers' dense storage and the kernels' layout around
 * that loop (dims.c). create comes after runtime.c has made the host buffers (m->buf: inputs,
 * outputs and STATE zeroed, weights); a backend that runs kernels on the host sets m->arena,
 * and runtime.c then points the arena buffers into it. A GPU backend allocates its device
 * memory and uploads the weights and the zeroed STATE at create, once; STATE then lives on the
 * device: upload sends it again only from tgc_reset_state. */
/* What a backend can run beyond plain buffers (tgc_backend.caps). */
enum { TGC_BACKEND_IMAGES = 1 }; /* TGC_STORAGE_IMAGE buffers (2D images of f32/f16 texels) */

struct tgc_backend {
  const char* name; /* "cpu", "opencl": --help, --info and the --bench JSON */
  unsigned caps;    /* TGC_BACKEND_* flags */
  /* Checks that the launches carry what this backend runs (cpu_fn, or blob + name) and prepares
   * m; sets m->num_threads (0 where no host threads run kernels). num_threads is the caller's
   * request (<= 0: one per online core). Returns the backend's state, or NULL with the error
   * set (having freed what it made). */
  void* (*create)(tgc_model* m, int num_threads);
  /* Copies host buffers bufs[0..n) (indices into desc->buffers, at their m->cur addresses) to
   * the device, ordered before the next run. NULL where kernels use host memory (CPU).
   * 0, or -1 with the error set. */
  int (*upload)(void* be, tgc_model* m, const int32_t* bufs, int32_t n);
  /* Runs every launch for sample `sample` and leaves its outputs in host memory. It may run the
   * samples after it too (the CPU backend runs a batch side by side): returns how many samples
   * it ran (>= 1), or -1 with the error set. */
  int64_t (*run)(void* be, tgc_model* m, int64_t sample);
  void (*destroy)(void* be, tgc_model* m);
  /* The device, for the --bench JSON; NULL where there is none to name (CPU). */
  const char* (*device_name)(const void* be);
  /* The device time of the last run's launches, from the first one's start to the last one's
   * end, in ms, when m->time_launches was set before the first run (tgc-agent times tuning
   * candidates so, without the inputs' and outputs' copies); -1 when not measured. NULL where the
   * backend cannot measure it (CPU). */
  double (*launch_ms)(const void* be);
  /* Bytes of device memory the model holds (arena, weights, state, inputs and outputs), for the
   * --bench JSON; NULL where kernels use host memory (CPU). */
  int64_t (*device_bytes)(const void* be);
};

/* ---- the model (runtime.c) ---- */
struct tgc_model {
  const tgc_model_desc* desc;
  const struct tgc_backend* backend; /* desc->backend */
  void* be;                          /* the backend's state */
  void* arena;                       /* host arena: the CPU backend's (64-byte aligned), NULL on GPU backends */
  void** buf;                        /* base address of each desc->buffers[i] (host side); a GPU backend may
                                      * point unbatched INPUT/OUTPUT/STATE buffers at host memory of its own
                                      * (CUDA: its pinned staging, Vulkan: cached staging slots, OpenCL:
                                      * mapped host-side buffers; io_alloc is then NULL) */
  void** cur;                        /* address of each buffer for the sample being run: buf, but batched
                                      * buffers move by a sample per run of the launches */
  int64_t batch;                     /* samples held by batched buffers (1 without desc->batch_dim) */
  int64_t* var_value;                /* run-time dims: the bound value of each VAR */
  void** dense;                      /* per buffer with run-time dims: the callers' dense storage, else NULL */
  void** io_alloc;                   /* per buffer: own allocation for INPUT/OUTPUT/STATE storage, else NULL */
  void*** launch_args;               /* per launch: resolved argument pointers, in launch order */
  int32_t* uploads;                  /* buffers uploaded before each sample: the inputs, then the vars buffer */
  int32_t num_uploads;
  int32_t* states; /* the STATE buffers */
  int32_t num_states;
  void* weights_map; /* mmap of desc->weights_file, or NULL */
  size_t weights_map_size;
  int num_threads;                               /* host threads running kernels (CPU backend), else 0 */
  int64_t kv_length;                             /* desc->kv_position: positions the KV cache holds */
  int last_logits_only;                          /* tgc_llm_all_logits(m, 0): logit_rows_var bound to 1 */
  int time_launches;                             /* the backend measures launch_ms (set before the first run) */
  int64_t* dense_nbytes;                         /* per buffer: the size of dense[i] */
  struct tgc_tokenizer* tokenizer;               /* desc->vocab: made at the first tgc_tokenize_text (llm/) */
  void (*free_tokenizer)(struct tgc_tokenizer*); /* set with it, so that core links no tokenizer */
};

/* 64-byte aligned, zeroed allocation of at least nbytes (64 when nbytes <= 0); tgc_free64() it. */
void* tgc_alloc64(int64_t nbytes);
void tgc_free64(void* p);
/* Makes p, host memory of a GPU backend's (at least the buffer's nbytes), the runtime's memory
 * for the INPUT/OUTPUT/STATE buffer i (see tgc_model.buf): what the buffer holds moves there and
 * the runtime's own allocation is freed. Called by the backend's create. */
void tgc_adopt_host_memory(tgc_model* m, int32_t i, void* p);
/* Sets buffer addresses `cur` and launch arguments `args` for sample `s`: arena buffers in
 * `arena` (NULL without a host arena), batched buffers at the sample's slice, the rest at their
 * base. tgc_at_sample does it for the model's own arena, cur and launch_args. */
void tgc_point_at_sample(const tgc_model* m, void* arena, void** cur, void*** args, int64_t s);
void tgc_at_sample(tgc_model* m, int64_t s);
/* Work items of launch l as the model is bound: a launch whose outermost work dim is a
 * run-time dim runs only that dim's share (CPU). */
int64_t tgc_launch_items(const tgc_model* m, int32_t l);

/* The token input of a model with a KV cache and a run-time token count, or -1 with the error
 * set (naming `what`, the option or call that needs it). */
int32_t tgc_token_input(const tgc_model* m, const char* what);

/* Sets the batch size of a model with a batch_dim (n >= 1): batched input/output storage is
 * reallocated (zeroed) when it changes. 0, or -1 with the error set. */
int tgc_bind_batch(tgc_model* m, int64_t n);

/* ---- run-time dims (dims.c) ---- */
/* Size of dim k of buffer b as currently bound (batch, VAR or fixed). */
int64_t tgc_dim_size(const tgc_model* m, const tgc_buffer* b, int32_t k);
/* The dims VAR v stands for are this many times its value (--dynamic NAME=MAX/STEP). */
static inline int64_t tgc_var_step(const tgc_model_desc* d, int32_t v) { return d->var_step ? d->var_step[v] : 1; }
/* A VAR's least value: 0 for one the model computes, else where its structure holds. */
static inline int64_t tgc_var_min(const tgc_model_desc* d, int32_t v) {
  return d->var_source && d->var_source[v] >= 0 ? 0 : d->var_min ? d->var_min[v] : 1;
}
/* Bytes of buffer i as currently bound: all samples of a batched buffer, a dense tensor of the
 * bound sizes for one with run-time dims. */
int64_t tgc_bound_nbytes(const tgc_model* m, int32_t i);
int64_t tgc_run_nbytes(const tgc_model* m, int32_t i);
int tgc_dims_init(tgc_model* m); /* VARs at their maxima, dense storage; 0 or -1 */
void tgc_dims_free(tgc_model* m);
/* New VAR values (each 1 to its maximum; those the model computes are not checked): the vars
 * buffer is written and the dense storage of inputs/outputs with run-time dims reallocated
 * (zeroed) when one changes. 0 or -1. */
int tgc_bind_vars(tgc_model* m, const int64_t* values);
/* After launch l: a VAR it computes (sets_var) takes the value the launch stored, so that the
 * launches after it loop up to it (or run, for the side of a branch taken). Backends call it
 * between launches. -1 (error set) where the value is outside the VAR's range: the inputs take
 * a part of the model built for other sizes (the VAR's name says which). */
int tgc_take_computed_var(tgc_model* m, int32_t l);
void tgc_dims_before_run(tgc_model* m); /* dense inputs into the kernels' layout */
int tgc_dims_after_run(tgc_model* m);   /* the kernels' outputs into dense storage; 0 or -1 */

/* TGC_PROFILE: "tgc profile: TITLE, X ms per runSUFFIX", then one launch per line, slowest first
 * (TGC_PROFILE=all: every launch, else the 25 slowest), with its mean time over `runs` and share
 * of the total. */
void tgc_print_profile(const tgc_model_desc* d, const double* total_ms, int64_t runs, const char* title,
                       const char* suffix);

/* Monotonic clock in milliseconds (run timing and TGC_PROFILE). */
double tgc_now_ms(void);
/* The median of v[0, n) (n >= 1), which it sorts. */
double tgc_median(double* v, int64_t n);

/* ---- .npy files (npy.c) ---- */
typedef struct {
  int32_t dtype;
  int32_t rank;
  int64_t shape[16];
  void* data; /* malloc'd, numel * dtype size bytes */
  size_t nbytes;
} tgc_npy;
/* Reads a .npy file (v1/v2/v3 header, little-endian, C order). Returns 0, or -1 with the error set
 * (the message names the file). */
int tgc_npy_read(const char* path, tgc_npy* out);
/* Writes atomically (temp file + rename). Returns 0 or -1 with the error set. */
int tgc_npy_write(const char* path, int32_t dtype, int32_t rank, const int64_t* shape, const void* data, size_t nbytes);
const char* tgc_npy_descr(int32_t dtype); /* "<f4", ...; NULL if not representable */

#endif
