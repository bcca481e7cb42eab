/* The C API of a model with a run-time batch dim (run by tests/integration/dynamic_dims.sh): z = x * y + w and
 * s = sum(z, axis 1), x and y [N, 4], w = [1, 2, 3, 4]. Binds N = 1, then 5, and checks every
 * sample; a wrong shape must be refused. */
#include <stdio.h>
#include <string.h>

#include "dyn.h"

static int g_fail;
#define CHECK(c, ...)                   \
  do {                                  \
    if (!(c)) {                         \
      fprintf(stderr, "FAIL %s: ", #c); \
      fprintf(stderr, __VA_ARGS__);     \
      fputc('\n', stderr);              \
      g_fail = 1;                       \
    }                                   \
  } while (0)

static void run(dyn_model* m, int n) {
  int64_t shape[2] = {n, 4}, dims[8];
  CHECK(dyn_set_input_shape(m, 0, 2, shape) == 0 && dyn_set_input_shape(m, 1, 2, shape) == 0, "%s", dyn_last_error());
  float* x = dyn_input(m, 0);
  float* y = dyn_input(m, 1);
  for (int i = 0; i < n * 4; ++i) x[i] = (float)(i % 5), y[i] = (float)(i / 4);
  CHECK(dyn_run(m) == 0, "%s", dyn_last_error());
  const float* z = dyn_output(m, 0);
  const float* s = dyn_output(m, 1);
  for (int b = 0; b < n; ++b) {
    float sum = 0;
    for (int j = 0; j < 4; ++j) {
      float want = x[b * 4 + j] * y[b * 4 + j] + (float)(j + 1);
      CHECK(z[b * 4 + j] == want, "batch %d: z[%d][%d] = %g, want %g", n, b, j, z[b * 4 + j], want);
      sum += want;
    }
    CHECK(s[b] == sum, "batch %d: s[%d] = %g, want %g", n, b, s[b], sum);
  }
  CHECK(dyn_output_shape(0, dims) == 2 && dims[0] == -1 && dims[1] == 4, "declared shape [-1,4]");
}

int main(void) {
  dyn_model* m = dyn_create(2);
  if (!m) return fprintf(stderr, "FAIL create: %s\n", dyn_last_error()), 1;
  run(m, 1);
  run(m, 5);
  int64_t bad[2] = {5, 3};
  CHECK(dyn_set_input_shape(m, 0, 2, bad) == -1 && strstr(dyn_last_error(), "has shape [N,4], got [5,3]"), "%s",
        dyn_last_error());
  dyn_destroy(m);
  if (!g_fail) printf("dynamic batch C API ok\n");
  return g_fail;
}
