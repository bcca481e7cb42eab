/* The OpenCL tuning candidate that tgc sends with `time-cl` (docs/tuning.md): a few text lines
 * that say how to launch the kernel, then its OpenCL C source.
 *   tgc-cl 1
 *   kernel <entry point>
 *   global <work items>                  (dimension 0; the kernels flatten their ranges)
 *   local <work-group size>              (0: the driver chooses)
 *   buffer <bytes> <enum tgc_dtype>      one line per kernel argument, output first
 *   source
 *   <the OpenCL C source, to the end of the payload>
 * Written by codegen/gpu/runtime_candidate.cpp; keep the two in sync. */
#ifndef TGC_CL_CANDIDATE_H
#define TGC_CL_CANDIDATE_H
#include <stddef.h>
#include <stdint.h>

#define TGC_CL_CANDIDATE_VERSION 1
#define TGC_CL_CANDIDATE_MAX_BUFFERS 4096

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  char kernel[256];
  int64_t global_size, local_size;
  int32_t num_buffers;
  int64_t buffer_bytes[TGC_CL_CANDIDATE_MAX_BUFFERS];
  int32_t buffer_dtypes[TGC_CL_CANDIDATE_MAX_BUFFERS];
  const char* source; /* points into the payload */
  size_t source_len;
} tgc_cl_candidate;

/* Parses `payload` (n bytes) into *c. Returns 0, or -1 with a one-line reason in err. */
int tgc_cl_candidate_parse(const char* payload, size_t n, tgc_cl_candidate* c, char* err, size_t err_cap);
/* The Vulkan candidate (`time-vk`, codegen/dialect.cpp) has the same lines, but starts with
 * "tgc-vk 1", its local size is the work-group size (specialization constant 0; never 0) and the
 * global size need not be a multiple of it, and "spirv" precedes the SPIR-V binary; c->source
 * points at the binary. */
int tgc_vk_candidate_parse(const char* payload, size_t n, tgc_cl_candidate* c, char* err, size_t err_cap);
/* The CUDA candidate (`time-cuda`) starts with "tgc-cuda 1", its local size is the block (never
 * 0, a divisor of the global size), and "ptx" precedes the PTX text. */
int tgc_cuda_candidate_parse(const char* payload, size_t n, tgc_cl_candidate* c, char* err, size_t err_cap);

#ifdef __cplusplus
}
#endif
#endif
