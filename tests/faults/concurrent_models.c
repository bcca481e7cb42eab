/* The .so's concurrency contract, the part the runtime owns: N application threads, each with its
 * own model instance (and its own worker pool), run at once; every output is bit-identical to a
 * single-threaded run, and an error in one thread never shows in another's tgc_last_error().
 * Run under TSan by tools/scripts/sanitize.sh tsan.  usage: concurrent_models [THREADS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "tgc_runtime.h"

enum { RUNS = 50 };
static float want[4][TEST_N];
static int64_t want_cnt[4][TEST_ROWS];

static void* worker(void* arg) {
  long id = (long)arg;
  tgc_model* m = tgc_create(&tgc_test_model_cpu, 1 + (int)(id % 3));
  if (!m) return (void*)"create failed";
  static _Thread_local float a[TEST_N], b[TEST_N];
  const char* bad = NULL;
  for (int r = 0; r < RUNS && !bad; ++r) {
    int v = (int)((id + r) % 4);
    tgc_test_inputs(a, b, v);
    if (tgc_set_input(m, 0, a, sizeof a) != 0 || tgc_set_input(m, 1, b, sizeof b) != 0 || tgc_run(m) != 0)
      bad = "run failed";
    else if (memcmp(tgc_output_data(m, 0), want[v], sizeof want[v]) != 0 ||
             memcmp(tgc_output_data(m, 1), want_cnt[v], sizeof want_cnt[v]) != 0)
      bad = "output differs from the single-threaded run";
    if (id % 2 && tgc_set_input(m, 7, a, sizeof a) == 0)
      bad = "a bad index was accepted"; /* errors in odd threads only */
    if (id % 2 == 0 && tgc_last_error()[0]) bad = "another thread's error showed here";
  }
  tgc_destroy(m);
  return (void*)bad;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 8;
  tgc_model* m = tgc_create(&tgc_test_model_cpu, 1); /* the single-threaded reference */
  static float a[TEST_N], b[TEST_N];
  for (int v = 0; v < 4 && m; ++v) {
    tgc_test_inputs(a, b, v);
    if (tgc_set_input(m, 0, a, sizeof a) || tgc_set_input(m, 1, b, sizeof b) || tgc_run(m))
      return fprintf(stderr, "FAIL reference run\n"), 1;
    memcpy(want[v], tgc_output_data(m, 0), sizeof want[v]);
    memcpy(want_cnt[v], tgc_output_data(m, 1), sizeof want_cnt[v]);
  }
  if (!m) return fprintf(stderr, "FAIL: %s\n", tgc_last_error()), 1;
  tgc_destroy(m);
  pthread_t t[64];
  if (n < 1 || n > 64) n = 8;
  for (long i = 0; i < n; ++i) pthread_create(&t[i], NULL, worker, (void*)i);
  int fail = 0;
  for (int i = 0; i < n; ++i) {
    void* r;
    pthread_join(t[i], &r);
    if (r) fprintf(stderr, "FAIL thread %d: %s\n", i, (const char*)r), fail = 1;
  }
  if (!fail)
    printf("concurrent_models: %d threads x %d runs, each its own model: outputs bit-identical, errors thread-local\n",
           n, RUNS);
  return fail;
}
