/* Allocation failure in the runtime's create and run paths: every malloc/calloc/realloc/
 * posix_memalign the runtime makes (its objects are linked with -Wl,--wrap for these) fails in
 * turn, first the 1st call, then the 2nd, ... until a create + run + destroy goes through
 * without reaching the failing call. Each time the runtime must return NULL or -1 with a message,
 * never crash; once a model exists its outputs are right. Under ASan (TGC_SANITIZE) the failure
 * paths are also checked for leaks and bad frees.
 * usage: alloc_fail [THREADS] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "tgc_runtime.h"

void* __real_malloc(size_t n);
void* __real_calloc(size_t n, size_t size);
void* __real_realloc(void* p, size_t n);
int __real_posix_memalign(void** p, size_t align, size_t n);

static long calls, fail_at = -1;
static int inject(void) { return ++calls == fail_at; }

void* __wrap_malloc(size_t n) { return inject() ? NULL : __real_malloc(n); }
void* __wrap_calloc(size_t n, size_t size) { return inject() ? NULL : __real_calloc(n, size); }
void* __wrap_realloc(void* p, size_t n) { return inject() ? NULL : __real_realloc(p, n); }
int __wrap_posix_memalign(void** p, size_t align, size_t n) {
  return inject() ? ENOMEM : __real_posix_memalign(p, align, n);
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  static float a[TEST_N], b[TEST_N], out[TEST_N];
  static int64_t cnt[TEST_ROWS];
  tgc_test_inputs(a, b, 0);
  tgc_test_reference(a, b, out, cnt);
  int create_failed = 0, run_failed = 0;
  for (long k = 1;; ++k) {
    calls = 0, fail_at = k;
    tgc_model* m = tgc_create(&tgc_test_model_cpu, threads);
    if (!m) {
      const char* e = tgc_last_error();
      if (!e || !e[0]) return fprintf(stderr, "FAIL: create failed at allocation %ld without a message\n", k), 1;
      ++create_failed;
      continue;
    }
    int ok = tgc_set_input(m, 0, a, sizeof a) == 0 && tgc_set_input(m, 1, b, sizeof b) == 0;
    int rc = ok ? tgc_run(m) : -1;
    if (rc != 0) {
      const char* e = tgc_last_error();
      if (!e || !e[0]) return fprintf(stderr, "FAIL: run failed at allocation %ld without a message\n", k), 1;
      ++run_failed;
    } else if (memcmp(tgc_output_data(m, 0), out, sizeof out) != 0 ||
               memcmp(tgc_output_data(m, 1), cnt, sizeof cnt) != 0) {
      return fprintf(stderr, "FAIL: wrong output after allocation %ld failed\n", k), 1;
    }
    tgc_destroy(m);
    if (calls < k) { /* this round reached no failing allocation: every point is covered */
      printf(
          "alloc_fail (%d threads): %ld allocation points failed in turn: create refused %d times, run %d times; "
          "all with a message, no crash\n",
          threads, k - 1, create_failed, run_failed);
      return create_failed > 0 ? 0 : (fprintf(stderr, "FAIL: no create failure was injected\n"), 1);
    }
  }
}
