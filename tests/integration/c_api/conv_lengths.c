/* One model object run at several run-time lengths in turn (tests/integration/dynamic_dims.sh): the
 * convolution model of that test (input x [1, C, T], outputs y [1, 6, T] and head [1, 6, 1]),
 * compiled --shared as libconv_t.so. A long run first leaves its values in the memory past a
 * shorter length, so pads and reduces that went past the run-time length would read them.
 * Each argument pair is an input .npy and a directory with the reference y.npy and head.npy;
 * every output must be within 1e-5 of max|ref|.
 * usage: conv_lengths X.npy REFDIR [X.npy REFDIR ...]   (f32 .npy files, little-endian) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_t.h"
#include "npy_payload.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc % 2 == 0) return fprintf(stderr, "usage: conv_lengths X.npy REFDIR [X.npy REFDIR ...]\n"), 2;
  int64_t dims[8];
  if (conv_t_input_shape(0, dims) != 3) return fprintf(stderr, "FAIL input x is not rank 3\n"), 1;
  int64_t c = dims[1];
  conv_t_model* m = conv_t_create(1);
  if (!m) return fprintf(stderr, "FAIL create: %s\n", conv_t_last_error()), 1;
  int fail = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    size_t n = 0;
    float* x = read_npy(argv[i], &n);
    if (!x) return fprintf(stderr, "FAIL cannot read %s\n", argv[i]), 1;
    int64_t t = (int64_t)n / c, shape[3] = {1, c, t};
    if (conv_t_set_input_shape(m, 0, 3, shape) != 0)
      return fprintf(stderr, "FAIL length %lld: %s\n", (long long)t, conv_t_last_error()), 1;
    memcpy(conv_t_input(m, 0), x, n * sizeof(float));
    if (conv_t_run(m) != 0) return fprintf(stderr, "FAIL length %lld: %s\n", (long long)t, conv_t_last_error()), 1;
    char what[64];
    snprintf(what, sizeof what, "length %lld y", (long long)t);
    fail |= check(what, conv_t_output(m, 0), argv[i + 1], "y.npy", (size_t)(t * 6));
    snprintf(what, sizeof what, "length %lld head", (long long)t);
    fail |= check(what, conv_t_output(m, 1), argv[i + 1], "head.npy", 6);
    free(x);
  }
  conv_t_destroy(m);
  return fail;
}
