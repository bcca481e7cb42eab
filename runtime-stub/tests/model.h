/* The hand-written test model, in a CPU and an OpenCL variant:
 *   t   = relu(a * w + b)          launch 0, 1000 items         (t: arena offset 0)
 *   u   = t * 2                    launch 1, global 100 x 10    (u: arena offset 4096)
 *   out = u + bias2                launch 2, 1000 items, OpenCL local size 100
 *   cnt = rows of t: count(t > 0)  launch 3, 10 items (runs inline on the CPU)
 * inputs  "a" f32[10,100], "b:0" f32[1000] (file-safe: b_0)
 * outputs "out" f32[10,100], "pos/count:0" i64[10] (file-safe: pos_count_0)
 * weights w f32[1000] at offset 0, bias2 f32[1] = 1 at offset 4000 (4004 bytes, embedded)
 * model.c holds the CPU variant and what both share, model_cl.c the OpenCL one. */
#ifndef TGC_TEST_MODEL_H
#define TGC_TEST_MODEL_H
#include <stddef.h>
#include <stdint.h>

#include "tgc_model.h"

#define TEST_N 1000
#define TEST_ROWS 10
#define TEST_COLS 100

extern const tgc_model_desc tgc_test_model_cpu;
extern const tgc_model_desc tgc_test_model_cl;
extern const tgc_buffer tgc_test_buffers[]; /* the buffer table both variants share */
extern const float tgc_test_weights[TEST_N + 1];
/* the launches' argument lists, and the input and output buffers */
extern const int32_t tgc_test_args0[], tgc_test_args1[], tgc_test_args2[], tgc_test_args3[];
extern const int32_t tgc_test_input_bufs[], tgc_test_output_bufs[];

/* The description of the test model's 8 buffers and 4 launches on one backend. */
#define TGC_TEST_DESC(NAME, BACKEND, LAUNCHES)  \
  {.abi_version = TGC_ABI_VERSION,              \
   .name = NAME,                                \
   .backend = BACKEND,                          \
   .num_buffers = 8,                            \
   .buffers = tgc_test_buffers,                 \
   .num_launches = 4,                           \
   .launches = LAUNCHES,                        \
   .num_inputs = 2,                             \
   .inputs = tgc_test_input_bufs,               \
   .num_outputs = 2,                            \
   .outputs = tgc_test_output_bufs,             \
   .arena_size = 8096,                          \
   .weights = (const uint8_t*)tgc_test_weights, \
   .weights_size = 4004,                        \
   .vars_buffer = -1}

/* Inputs whose products and sums are exact in f32, so every backend must match bit for bit. */
void tgc_test_inputs(float* a, float* b, int variant);
void tgc_test_reference(const float* a, const float* b, float* out, int64_t* cnt);

#endif
