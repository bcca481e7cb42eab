/* The contract between a tuning candidate (a shared object tgc builds from ONE kernel) and
 * tgc-agent, which times it. Keep in sync with codegen/kernel_library.cpp (TGC_CANDIDATE_ABI). */
#ifndef TGC_CANDIDATE_H
#define TGC_CANDIDATE_H
#include <stdint.h>

#define TGC_CANDIDATE_ABI 1

typedef struct {
  int32_t abi;                  /* TGC_CANDIDATE_ABI */
  int32_t num_buffers;          /* kernel arguments, output first */
  int64_t work_items;           /* run as tgc_kernel(buffers, 0, work_items) */
  const int64_t* buffer_bytes;  /* size of each argument */
  const int32_t* buffer_dtypes; /* enum tgc_dtype (runtime-stub/include/tgc_model.h) */
} tgc_candidate_desc;

/* Exported by every candidate. */
#define TGC_CANDIDATE_DESC_SYMBOL "tgc_candidate"
#define TGC_CANDIDATE_KERNEL_SYMBOL "tgc_kernel"

#endif
