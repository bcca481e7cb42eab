/* One model object run at several run-time lengths in turn (tests/dynamic_dims.sh): the
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

/* The f32 payload of a .npy file (past its header); *n elements. */
static float* read_npy(const char* path, size_t* n) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char head[10];
  float* data = NULL;
  if (fread(head, 1, 10, f) == 10) {
    long start = 10 + (long)(head[8] | (head[9] << 8));
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    fseek(f, start, SEEK_SET);
    *n = (size_t)(end - start) / sizeof(float);
    data = malloc(*n * sizeof(float) + 1);
    if (data && fread(data, sizeof(float), *n, f) != *n) free(data), data = NULL;
  }
  fclose(f);
  return data;
}

static int check(const char* what, const float* got, const char* dir, const char* name, size_t want_n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t n = 0;
  float* ref = read_npy(path, &n);
  if (!ref || n != want_n) return fprintf(stderr, "FAIL %s: cannot read %s with %zu elements\n", what, path, want_n), 1;
  double top = 0, worst = 0;
  for (size_t i = 0; i < n; ++i) top = fmax(top, fabs(ref[i])), worst = fmax(worst, fabs(got[i] - ref[i]));
  free(ref);
  int bad = worst > 1e-5 * (top > 0 ? top : 1);
  printf("%s %s: max abs err %g (max|ref| %g)\n", bad ? "FAIL" : "ok  ", what, worst, top);
  return bad;
}

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
