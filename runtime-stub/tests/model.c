/* The hand-written test model (see model.h): what tgc's emitter would produce, written by hand.
 * Its CPU variant; the OpenCL one is in model_cl.c, so that a CPU program links no OpenCL code. */
#include "model.h"

/* ---- weights: w[i] = (i % 7 - 3) / 4, then bias2 = 1 */
#define W(i) ((float)((i) % 7 - 3) * 0.25f)
#define R10(b) W(b), W(b + 1), W(b + 2), W(b + 3), W(b + 4), W(b + 5), W(b + 6), W(b + 7), W(b + 8), W(b + 9)
#define R100(b)                                                                                                   \
  R10(b), R10(b + 10), R10(b + 20), R10(b + 30), R10(b + 40), R10(b + 50), R10(b + 60), R10(b + 70), R10(b + 80), \
      R10(b + 90)
_Alignas(64) const float tgc_test_weights[TEST_N + 1] = {
    R100(0), R100(100), R100(200), R100(300), R100(400), R100(500), R100(600), R100(700), R100(800), R100(900), 1.0f};

/* ---- CPU kernels */
static void k_fma_relu(void* const* buf, int64_t begin, int64_t end) {
  const float *a = buf[0], *w = buf[1], *b = buf[2];
  float* t = buf[3];
  for (int64_t i = begin; i < end; ++i) {
    float v = a[i] * w[i] + b[i];
    t[i] = v > 0 ? v : 0;
  }
}
static void k_double(void* const* buf, int64_t begin, int64_t end) {
  const float* t = buf[0];
  float* u = buf[1];
  for (int64_t i = begin; i < end; ++i) u[i] = t[i] * 2;
}
static void k_add_bias(void* const* buf, int64_t begin, int64_t end) {
  const float *u = buf[0], *bias = buf[1];
  float* out = buf[2];
  for (int64_t i = begin; i < end; ++i) out[i] = u[i] + bias[0];
}
static void k_count(void* const* buf, int64_t begin, int64_t end) {
  const float* t = buf[0];
  int64_t* cnt = buf[1];
  for (int64_t r = begin; r < end; ++r) {
    int64_t c = 0;
    for (int j = 0; j < TEST_COLS; ++j) c += t[r * TEST_COLS + j] > 0;
    cnt[r] = c;
  }
}

static const int64_t kShape2[] = {TEST_ROWS, TEST_COLS}, kShapeN[] = {TEST_N}, kShape1[] = {1}, kShapeR[] = {TEST_ROWS};
enum { B_A, B_B, B_W, B_BIAS, B_T, B_U, B_OUT, B_CNT, NUM_B };
_Static_assert(NUM_B == 8, "TGC_TEST_DESC counts 8 buffers");
const tgc_buffer tgc_test_buffers[NUM_B] = {
    [B_A] = {"a", TGC_F32, 2, kShape2, TGC_STORAGE_INPUT, 0, 4000},
    [B_B] = {"b:0", TGC_F32, 1, kShapeN, TGC_STORAGE_INPUT, 0, 4000},
    [B_W] = {"w", TGC_F32, 1, kShapeN, TGC_STORAGE_WEIGHT, 0, 4000},
    [B_BIAS] = {"bias2", TGC_F32, 1, kShape1, TGC_STORAGE_WEIGHT, 4000, 4},
    [B_T] = {"t", TGC_F32, 1, kShapeN, TGC_STORAGE_ARENA, 0, 4000},
    [B_U] = {"u", TGC_F32, 1, kShapeN, TGC_STORAGE_ARENA, 4096, 4000},
    [B_OUT] = {"out", TGC_F32, 2, kShape2, TGC_STORAGE_OUTPUT, 0, 4000},
    [B_CNT] = {"pos/count:0", TGC_I64, 1, kShapeR, TGC_STORAGE_OUTPUT, 0, 80},
};
const int32_t tgc_test_args0[] = {B_A, B_W, B_B, B_T}, tgc_test_args1[] = {B_T, B_U},
              tgc_test_args2[] = {B_U, B_BIAS, B_OUT}, tgc_test_args3[] = {B_T, B_CNT};
const int32_t tgc_test_input_bufs[] = {B_A, B_B}, tgc_test_output_bufs[] = {B_OUT, B_CNT};

static const tgc_launch kLaunchesCpu[] = {
    {"k_fma_relu", k_fma_relu, NULL, 0, 4, tgc_test_args0, {TEST_N, 1, 1}, {0, 0, 0}, -1},
    {"k_double", k_double, NULL, 0, 2, tgc_test_args1, {100, 10, 1}, {0, 0, 0}, -1},
    {"k_add_bias", k_add_bias, NULL, 0, 3, tgc_test_args2, {TEST_N, 1, 1}, {0, 0, 0}, -1},
    {"k_count", k_count, NULL, 0, 2, tgc_test_args3, {TEST_ROWS, 1, 1}, {0, 0, 0}, -1},
};

const tgc_model_desc tgc_test_model_cpu = TGC_TEST_DESC("rt_test", &tgc_backend_cpu, kLaunchesCpu);

void tgc_test_inputs(float* a, float* b, int variant) {
  for (int i = 0; i < TEST_N; ++i) {
    a[i] = (float)((i * 37 + variant * 11) % 101 - 50) / 64.0f;
    b[i] = (float)((i * 13 + variant) % 17 - 8) / 32.0f;
  }
}

void tgc_test_reference(const float* a, const float* b, float* out, int64_t* cnt) {
  for (int r = 0; r < TEST_ROWS; ++r) cnt[r] = 0;
  for (int i = 0; i < TEST_N; ++i) {
    double v = (double)a[i] * tgc_test_weights[i] + b[i]; /* exact in f32 too */
    float t = v > 0 ? (float)v : 0.0f;
    out[i] = t * 2 + tgc_test_weights[TEST_N];
    cnt[i / TEST_COLS] += t > 0;
  }
}
