/* The CPU check through the C API of a --shared build (model name "cpumodel"): create fails with
 * the runtime's one-line error on a CPU without the features the kernels were compiled for, or
 * the model runs a digits sample and matches the expected probabilities.
 * usage: cpu_check IMAGE.npy EXPECTED.npy; exit 0: ran and matched, 1: wrong output, 3: create
 * failed (the error on stderr) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpumodel.h"
#include "npy_payload.h"

int main(int argc, char** argv) {
  if (argc != 3) return fprintf(stderr, "usage: cpu_check IMAGE.npy EXPECTED.npy\n"), 2;
  size_t n_image = 0, n_expected = 0;
  float* image = read_npy(argv[1], &n_image);
  float* expected = read_npy(argv[2], &n_expected);
  if (!image || n_image != 64 || !expected || n_expected != 10) return fprintf(stderr, "cannot read inputs\n"), 2;
  cpumodel_model* m = cpumodel_create(1);
  if (!m) return fprintf(stderr, "create failed: %s\n", cpumodel_last_error()), 3;
  memcpy(cpumodel_input(m, 0), image, 64 * sizeof *image);
  if (cpumodel_run(m)) return fprintf(stderr, "run failed: %s\n", cpumodel_last_error()), 1;
  const float* p = cpumodel_output(m, 0);
  double worst = 0;
  for (int i = 0; i < 10; ++i) worst = fmax(worst, fabs(p[i] - expected[i]));
  printf("cpu_check: max abs diff to expected %g\n", worst);
  cpumodel_destroy(m);
  free(image);
  free(expected);
  return worst < 1e-4 ? 0 : 1;
}
