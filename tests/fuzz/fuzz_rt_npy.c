/* The runtime stub's .npy reader (runtime-stub/core/npy.c) and the C API input path after it, as an
 * artifact's main() uses them: any bytes are refused with -1 and a message, or become input `a`
 * or `b:0` of the runtime's test model (runtime-stub/tests/model.c), which then runs. */
#include <stdlib.h>
#include <string.h>

#include "core/runtime_internal.h"
#include "model.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static tgc_model* m;
  if (!m && !(m = tgc_create(&tgc_test_model_cpu, 1))) abort();
  const char* path = fuzz_write_file(data, size, ".npy");
  tgc_npy t;
  if (tgc_npy_read(path, &t) != 0) {
    if (!tgc_last_error()[0]) abort(); /* a refusal always says why */
    return 0;
  }
  size_t want = 1;
  for (int32_t k = 0; k < t.rank; ++k) want *= (size_t)t.shape[k];
  if (t.nbytes != want * (size_t)tgc_dtype_size(t.dtype)) abort();
  int index = (int)(size % 2);
  /* the checks main.c makes before binding; the C API must refuse what they would */
  if (tgc_set_input_shape(m, index, t.rank, t.shape) == 0 && tgc_set_input(m, index, t.data, t.nbytes) == 0 &&
      tgc_run(m) != 0)
    abort();
  free(t.data);
  return 0;
}
