/* A shared library built like a generated .so: the runtime linked in with hidden visibility, one
 * exported wrapper. Its model reads external weights, which must be found next to the .so. */
#include <string.h>

#include "model.h"
#include "tgc_runtime.h"

static tgc_model_desc g_desc;

/* Creates the model, runs it once on input variant 4, checks the outputs. 0 = ok; *err explains. */
__attribute__((visibility("default"))) int rt_so_check(const char** err) {
  g_desc = tgc_test_model_cpu;
  g_desc.weights = NULL;
  g_desc.weights_file = "rt_so_test.weights";
  tgc_model* m = tgc_create(&g_desc, 2);
  if (!m) return *err = tgc_last_error(), -1;
  float a[TEST_N], b[TEST_N], out[TEST_N];
  int64_t cnt[TEST_ROWS];
  tgc_test_inputs(a, b, 4);
  tgc_test_reference(a, b, out, cnt);
  int r = tgc_set_input(m, 0, a, sizeof a) || tgc_set_input(m, 1, b, sizeof b) || tgc_run(m) ||
          memcmp(tgc_output_data(m, 0), out, sizeof out) || memcmp(tgc_output_data(m, 1), cnt, sizeof cnt);
  *err = r ? "wrong results" : "";
  tgc_destroy(m);
  return r ? -1 : 0;
}
