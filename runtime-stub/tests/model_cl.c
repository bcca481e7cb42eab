/* The OpenCL variant of the test model (see model.h): the same buffers, launches of OpenCL C. */
#include "model.h"

/* ---- OpenCL C: launches 0 and 1 share a program */
static const char kSrcA[] =
    "__kernel void k_fma_relu(__global const float* a, __global const float* w, __global const float* b,\n"
    "                         __global float* t) {\n"
    "  size_t i = get_global_id(0);\n"
    "  float v = a[i] * w[i] + b[i];\n"
    "  t[i] = v > 0.0f ? v : 0.0f;\n"
    "}\n"
    "__kernel void k_double(__global const float* t, __global float* u) {\n"
    "  size_t i = get_global_id(1) * get_global_size(0) + get_global_id(0);\n"
    "  u[i] = t[i] * 2.0f;\n"
    "}\n";
static const char kSrcB[] =
    "__kernel void k_add_bias(__global const float* u, __global const float* bias, __global float* out) {\n"
    "  size_t i = get_global_id(0);\n"
    "  out[i] = u[i] + bias[0];\n"
    "}\n";
static const char kSrcC[] =
    "__kernel void k_count(__global const float* t, __global long* cnt) {\n"
    "  size_t r = get_global_id(0);\n"
    "  long c = 0;\n"
    "  for (int j = 0; j < 100; ++j) c += t[r * 100 + j] > 0.0f ? 1 : 0;\n"
    "  cnt[r] = c;\n"
    "}\n";

#define SRC(s) s, (int64_t)sizeof s - 1 /* blob and size: the text, without its NUL */
static const tgc_launch kLaunchesCl[] = {
    {"k_fma_relu", NULL, SRC(kSrcA), 4, tgc_test_args0, {TEST_N, 1, 1}, {0, 0, 0}, -1},
    {"k_double", NULL, SRC(kSrcA), 2, tgc_test_args1, {100, 10, 1}, {0, 0, 0}, -1},
    {"k_add_bias", NULL, SRC(kSrcB), 3, tgc_test_args2, {TEST_N, 1, 1}, {100, 1, 1}, -1},
    {"k_count", NULL, SRC(kSrcC), 2, tgc_test_args3, {TEST_ROWS, 1, 1}, {0, 0, 0}, -1},
};

const tgc_model_desc tgc_test_model_cl = TGC_TEST_DESC("rt_test_cl", &tgc_backend_opencl, kLaunchesCl);
