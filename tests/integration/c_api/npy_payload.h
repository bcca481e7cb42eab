/* Test helpers of the C API programs in tests/integration/c_api: a .npy file's payload and a comparison of an
 * f32 output with a reference .npy (header-only; the programs are single files built by cc). */
#ifndef TGC_TESTS_NPY_PAYLOAD_H
#define TGC_TESTS_NPY_PAYLOAD_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The payload of a version-1 .npy file (past its header): *n bytes, or NULL. */
static void* read_npy_payload(const char* path, size_t* n) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char head[10];
  void* data = NULL;
  if (fread(head, 1, 10, f) == 10) {
    long start = 10 + (long)(head[8] | (head[9] << 8));
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    fseek(f, start, SEEK_SET);
    *n = (size_t)(end - start);
    data = malloc(*n + 1);
    if (data && fread(data, 1, *n, f) != *n) free(data), data = NULL;
  }
  fclose(f);
  return data;
}

/* The f32 payload of a .npy file: *n elements. */
static float* read_npy(const char* path, size_t* n) {
  float* data = (float*)read_npy_payload(path, n);
  *n /= sizeof(float);
  return data;
}

/* 0 when `got` (want_n floats) is within 1e-5 of max|ref| of DIR/NAME; prints a line either way. */
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

#endif
