/* The contract between a compiled model object (written by tgc's emitter) and the runtime stub.
 * The emitter produces one constant tgc_model_desc per model; the runtime executes it.
 * C11, no dependencies. Keep this file and codegen/emit in sync (TGC_ABI_VERSION). */
#ifndef TGC_MODEL_H
#define TGC_MODEL_H
#include <stdint.h>

#define TGC_ABI_VERSION 13

/* Same order as tgc::DType in the compiler. */
enum tgc_dtype {
  TGC_BOOL,
  TGC_I8,
  TGC_I16,
  TGC_I32,
  TGC_I64,
  TGC_U8,
  TGC_U16,
  TGC_U32,
  TGC_U64,
  TGC_F16,
  TGC_BF16,
  TGC_F32,
  TGC_F64
};

/* Where a buffer lives. Inputs and outputs have their own allocations owned by the runtime
 * (so that callers can fill / read them between runs); intermediates share the arena. STATE
 * buffers persist across runs (KV caches, recurrent state): their own allocation, zeroed at
 * create and by tgc_reset_state, kept on the device between runs by GPU backends, never batched. */
enum tgc_storage {
  TGC_STORAGE_ARENA,
  TGC_STORAGE_WEIGHT,
  TGC_STORAGE_INPUT,
  TGC_STORAGE_OUTPUT,
  TGC_STORAGE_STATE,
  TGC_STORAGE_IMAGE
};
/* IMAGE: a WEIGHT (f32 or f16, a multiple of 4 elements) that OpenCL kernels read as a 2D image
 * of RGBA texels (CL_FLOAT or CL_HALF_FLOAT), 4 elements each, read_imagef at texel i =
 * (i % w, i / w) with w = min(texels, TGC_IMAGE_ROW_TEXELS); the rows past the data are zeros. */
#define TGC_IMAGE_ROW_TEXELS 4096

struct tgc_vocab; /* tokenizer.h */

/* A runtime backend (its ops table is runtime-internal). A description points at the table of
 * its backend, so an artifact links that backend's code and no other's. */
struct tgc_backend;
extern const struct tgc_backend tgc_backend_cpu;    /* cpu.c */
extern const struct tgc_backend tgc_backend_opencl; /* opencl.c */
extern const struct tgc_backend tgc_backend_vulkan; /* vulkan.c */
extern const struct tgc_backend tgc_backend_cuda;   /* cuda.c */

typedef struct {
  const char* name; /* ONNX value name for inputs/outputs, internal name otherwise */
  int32_t dtype;    /* enum tgc_dtype */
  int32_t rank;
  const int64_t* shape;
  int32_t storage; /* enum tgc_storage */
  int64_t offset;  /* byte offset into the arena (ARENA) or the weight blob (WEIGHT) */
  int64_t nbytes;
  int32_t batched;          /* INPUT/OUTPUT of a model with a batch_dim: shape[0] is that dim (1 here,
                             * nbytes are one sample's); the runtime holds as many samples as bound */
  const int32_t* dim_vars;  /* INPUT/OUTPUT: NULL, or per dim the run-time dim (index into var_names)
                             * it is, -1 for a fixed dim; shape holds the upper bounds, the layout the
                             * kernels use; callers see the dense tensor of the bound sizes. An OUTPUT
                             * dim that a run-time dim went through pads or windows to is -2 - j: */
  const int64_t* dim_sizes; /* its table at dim_sizes[j]: the run-time dim's index, then the dim's
                             * size at each of its values 1..var_max */
} tgc_buffer;

/* A CPU kernel computes the work items [begin, end) of its launch; the runtime splits
 * [0, global_size[0]*global_size[1]*global_size[2]) over its threads. buffers[i] is the base
 * address of the launch's i-th buffer. */
typedef void (*tgc_cpu_fn)(void* const* buffers, int64_t begin, int64_t end);

typedef struct {
  const char* name;  /* kernel name; the GPU entry point */
  tgc_cpu_fn cpu_fn; /* CPU backend */
  const void* blob;  /* GPU backends: the kernel's code (OpenCL C source, SPIR-V, PTX); OpenCL
                        source with `#ifdef TGC_POOL` also has the pool's signature (opencl.c) */
  int64_t blob_size; /* bytes of blob (OpenCL C: the text without a terminating NUL) */
  int32_t num_buffers;
  const int32_t* buffers; /* indices into tgc_model_desc.buffers, in kernel-argument order */
  int64_t global_size[3];
  int64_t local_size[3];      /* OpenCL: 0 = let the driver choose; Vulkan: specialization constant 0 */
  int32_t outer_var;          /* models with run-time dims: -1, or the VAR (index into var_names) that
                               * the outermost dim of the work items is, at its upper bound: the runtime
                               * runs var/var_max of the items (CPU) */
  int32_t outer_step;         /* 0 or 1; f > 1: the outermost dim is ceil(var / f) (an axis over the
                               * run-time dim tiled by f), at its upper bound var_max / f */
  int32_t runs_var;           /* with runs_from or runs_until set: the launch runs only for values */
  int64_t runs_from;          /* of VAR runs_var in [runs_from, runs_until] (0: unbounded); a */
  int64_t runs_until;         /* kernel's variants for small and large run-time sizes (the others
                               * skip) */
  int32_t sets_var;           /* 0, or 1 + the VAR v (a size the model computes from data) whose value
                               * this launch stores in buffer var_source[v]: the runtime binds it
                               * before the launches after this one */
  int32_t runs_if_var;        /* 0, or 1 + the VAR v of an If's condition (computed by the model: 1
                               * else, 2 then): the launch, a kernel of one side, runs only when v's */
  int64_t runs_if_value;      /* value is this */
  const void* fallback_blob;  /* Vulkan: NULL, or the kernel without the optional features blob */
  int64_t fallback_blob_size; /* needs (Float16, subgroup arithmetic), for devices without them */
} tgc_launch;

typedef struct {
  int32_t abi_version;               /* TGC_ABI_VERSION */
  const char* name;                  /* model name */
  const struct tgc_backend* backend; /* &tgc_backend_cpu, &tgc_backend_opencl, ... */
  int32_t num_buffers;
  const tgc_buffer* buffers;
  int32_t num_launches;
  const tgc_launch* launches;
  int32_t num_inputs;
  const int32_t* inputs; /* buffer indices, in the model's input order */
  int32_t num_outputs;
  const int32_t* outputs;
  int64_t arena_size;     /* bytes */
  const uint8_t* weights; /* embedded weight blob, or NULL when weights_file is used */
  int64_t weights_size;
  const char* weights_file;      /* --weights=external: file name, resolved next to the artifact */
  const char* batch_dim;         /* NULL, or the name of a batch size bound at run time: the launches are
                                  * one sample's program, run once per sample of the batched buffers */
  int32_t num_vars;              /* run-time dims (VARs): the kernels read their values, in this order, */
  const char* const* var_names;  /* from buffer vars_buffer (i64[num_vars]), which the runtime fills */
  const int64_t* var_max;        /* upper bounds (the lower bound is 1) */
  int32_t vars_buffer;           /* -1 without run-time dims */
  const int32_t* kv_position;    /* NULL, or {length_var, count_input, logit_rows_var} for a model
                                  * whose STATE grows by each run's tokens (a KV cache): VAR length_var is
                                  * the filled length after a run, which the runtime binds itself to the
                                  * length before the run plus dim 0 of input count_input, and keeps
                                  * across runs (0 at create and after tgc_reset_state). VAR
                                  * logit_rows_var (-1: none) is dim 0 of output 0, the last rows of the
                                  * run's tokens: the runtime binds it to their count, or to 1 after
                                  * tgc_llm_all_logits(m, 0) */
  const struct tgc_vocab* vocab; /* NULL, or the model's tokenizer tables (tokenizer.h) */
  const int32_t* var_source;     /* NULL, or per VAR: -1 (bound by the caller or the runtime), or the
                                  * buffer (i64, one element) where a launch (sets_var) stores the VAR's
                                  * value, a size the model computes from data (NonZero's count), 0 to
                                  * var_max; outputs along it are as long as that value after a run */
  const int64_t* var_step;       /* NULL, or per VAR: the dims it stands for are var_step * its value
                                  * (--dynamic NAME=MAX/STEP; 1: the value itself); var_max counts steps */
  const int64_t* var_min;        /* NULL, or per VAR bound from the inputs: its least value (in steps),
                                  * where the model's structure holds (a conv's window fits the data);
                                  * the runtime refuses smaller sizes. NULL: 1 (0 for computed VARs) */
  const char* cpu_name;          /* NULL, or the --cpu the kernels were compiled for (e.g. "x86-64-v3") */
  const char* cpu_features;      /* NULL, or the CPU features past the baseline they may use, comma-
                                  * separated LLVM names from tgc_cpu_features.h: tgc_create fails on a
                                  * CPU without one of them, before any kernel runs (ABI 13) */
} tgc_model_desc;

#endif
