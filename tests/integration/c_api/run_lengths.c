/* One model object run at several run-time lengths in turn (tests/integration/dynamic_dims.sh): the attention
 * block of that test (input x [1, seq, D], outputs y [1, seq, D] and a [1, seq, seq]), compiled
 * --shared as libattn.so. Each argument pair is an input .npy and a directory with the
 * reference y.npy and a.npy; every output must be within 1e-5 of max|ref|. On the Vulkan backend
 * a new length re-records the command buffer where a launch's work changes with it.
 * usage: run_lengths X.npy REFDIR [X.npy REFDIR ...]   (f32 .npy files, little-endian) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "npy_payload.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc % 2 == 0) return fprintf(stderr, "usage: run_lengths X.npy REFDIR [X.npy REFDIR ...]\n"), 2;
  int64_t dims[8];
  if (attn_input_shape(0, dims) != 3) return fprintf(stderr, "FAIL input x is not rank 3\n"), 1;
  int64_t d = dims[2];
  attn_model* m = attn_create(1);
  if (!m) return fprintf(stderr, "FAIL create: %s\n", attn_last_error()), 1;
  int fail = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    size_t n = 0;
    float* x = read_npy(argv[i], &n);
    if (!x) return fprintf(stderr, "FAIL cannot read %s\n", argv[i]), 1;
    int64_t t = (int64_t)n / d, shape[3] = {1, t, d};
    if (attn_set_input_shape(m, 0, 3, shape) != 0)
      return fprintf(stderr, "FAIL length %lld: %s\n", (long long)t, attn_last_error()), 1;
    memcpy(attn_input(m, 0), x, n * sizeof(float));
    if (attn_run(m) != 0) return fprintf(stderr, "FAIL length %lld: %s\n", (long long)t, attn_last_error()), 1;
    char what[64];
    snprintf(what, sizeof what, "length %lld y", (long long)t);
    fail |= check(what, attn_output(m, 0), argv[i + 1], "y.npy", (size_t)(t * d));
    snprintf(what, sizeof what, "length %lld a", (long long)t);
    fail |= check(what, attn_output(m, 1), argv[i + 1], "a.npy", (size_t)(t * t));
    free(x);
  }
  attn_destroy(m);
  return fail;
}
