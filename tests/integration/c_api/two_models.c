/* Links two tgc-compiled shared libraries into one program through their generated headers,
 * runs both on the same digits sample and checks the probabilities against the expected ones.
 * usage: two_models IMAGE.npy EXPECTED.npy (both f32, read past their 128-byte .npy header) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "digitsa.h"
#include "digitsb.h"

static int read_f32(const char* path, float* out, size_t n) {
  FILE* f = fopen(path, "rb");
  if (!f) return -1;
  unsigned char head[10];
  if (fread(head, 1, 10, f) != 10) return fclose(f), -1;
  size_t hlen = (size_t)head[8] | ((size_t)head[9] << 8);
  fseek(f, (long)(10 + hlen), SEEK_SET);
  size_t got = fread(out, sizeof(float), n, f);
  fclose(f);
  return got == n ? 0 : -1;
}

int main(int argc, char** argv) {
  if (argc != 3) return fprintf(stderr, "usage: two_models IMAGE.npy EXPECTED.npy\n"), 2;
  float image[64], expected[10];
  if (read_f32(argv[1], image, 64) || read_f32(argv[2], expected, 10))
    return fprintf(stderr, "cannot read inputs\n"), 1;
  int64_t dims[8];
  if (digitsa_input_shape(0, dims) != 4 || dims[2] != 8 || strcmp(digitsa_input_name(0), "image") != 0)
    return fprintf(stderr, "unexpected input descriptor\n"), 1;
  if (digitsb_output_shape(0, dims) != 2 || dims[1] != 10 || digitsb_output_shape(5, dims) != -1)
    return fprintf(stderr, "unexpected output descriptor\n"), 1;
  digitsa_model* a = digitsa_create(2);
  digitsb_model* b = digitsb_create(1);
  if (!a || !b) return fprintf(stderr, "create failed: %s %s\n", digitsa_last_error(), digitsb_last_error()), 1;
  memcpy(digitsa_input(a, 0), image, sizeof image);
  memcpy(digitsb_input(b, 0), image, sizeof image);
  if (digitsa_run(a) || digitsb_run(b)) return fprintf(stderr, "run failed\n"), 1;
  const float* pa = digitsa_output(a, 0);
  const float* pb = digitsb_output(b, 0);
  double worst = 0;
  for (int i = 0; i < 10; ++i) {
    worst = fmax(worst, fabs(pa[i] - expected[i]));
    worst = fmax(worst, fabs(pb[i] - expected[i]));
  }
  printf("two models: max abs diff to expected %g\n", worst);
  digitsa_destroy(a);
  digitsb_destroy(b);
  return worst < 1e-4 ? 0 : 1;
}
