// bench-ceilings: the machine's measured ceilings that tgc-bench holds its results against:
// OpenBLAS (Debian's) sgemm GFLOP/s at given square sizes, and memcpy GB/s on a buffer far
// larger than the caches, both at a given thread count. One JSON line per measurement.
//
// usage: bench-ceilings --threads T [--sgemm N,N,...] [--memcpy-mib M] [--budget SECONDS]
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// Times fn(ctx) after one warm-up call: at least 5 runs, more while within `budget_ms`.
// Returns the median in ms and the run count in *iters.
#define MAX_ITERS 1000
static double median_ms(void (*fn)(void*), void* ctx, double budget_ms, int* iters) {
  static double t[MAX_ITERS];
  fn(ctx);
  double start = now_ms();
  int n = 0;
  while (n < MAX_ITERS && (n < 5 || now_ms() - start < budget_ms)) {
    double t0 = now_ms();
    fn(ctx);
    t[n++] = now_ms() - t0;
  }
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  *iters = n;
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

struct gemm {
  int n;
  float *a, *b, *c;
};
static void run_gemm(void* p) {
  struct gemm* g = p;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->a, g->n, g->b, g->n, 0.0f, g->c,
              g->n);
}

// memcpy split into one contiguous slice per thread, as a multi-threaded kernel would stream.
struct copy_slice {
  char* dst;
  const char* src;
  size_t bytes;
};
struct copy {
  int threads;
  size_t bytes;
  char *dst, *src;
};
static void* copy_one(void* p) {
  struct copy_slice* s = p;
  memcpy(s->dst, s->src, s->bytes);
  return NULL;
}
static void run_copy(void* p) {
  struct copy* c = p;
  pthread_t tid[256];
  struct copy_slice s[256];
  size_t per = (c->bytes / (size_t)c->threads) & ~(size_t)4095;
  for (int i = 0; i < c->threads; ++i) {
    s[i].dst = c->dst + (size_t)i * per;
    s[i].src = c->src + (size_t)i * per;
    s[i].bytes = i == c->threads - 1 ? c->bytes - (size_t)i * per : per;
  }
  for (int i = 1; i < c->threads; ++i) pthread_create(&tid[i], NULL, copy_one, &s[i]);
  copy_one(&s[0]);
  for (int i = 1; i < c->threads; ++i) pthread_join(tid[i], NULL);
}

static int fail(const char* msg, const char* arg) {
  fprintf(stderr, "bench-ceilings: error: %s%s\n", msg, arg ? arg : "");
  return 1;
}

int main(int argc, char** argv) {
  int threads = 1;
  const char* sizes = "";
  long mib = 0;
  double budget_s = 1.0;
  for (int i = 1; i < argc; ++i) {
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--threads") && v)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sgemm") && v)
      sizes = argv[++i];
    else if (!strcmp(argv[i], "--memcpy-mib") && v)
      mib = atol(argv[++i]);
    else if (!strcmp(argv[i], "--budget") && v)
      budget_s = atof(argv[++i]);
    else
      return fail(
          "usage: bench-ceilings --threads T [--sgemm N,N,...] [--memcpy-mib M] [--budget SECONDS]; bad argument ",
          argv[i]);
  }
  if (threads < 1 || threads > 256) return fail("--threads must be 1..256", NULL);
  openblas_set_num_threads(threads);
  printf("{\"what\": \"openblas\", \"config\": \"%s\", \"core\": \"%s\", \"threads\": %d}\n", openblas_get_config(),
         openblas_get_corename(), openblas_get_num_threads());

  for (const char* p = sizes; *p;) {
    char* end;
    long n = strtol(p, &end, 10);
    if (end == p || n < 1 || n > 16384) return fail("bad --sgemm size list: ", sizes);
    struct gemm g = {(int)n, malloc(sizeof(float) * n * n), malloc(sizeof(float) * n * n),
                     malloc(sizeof(float) * n * n)};
    if (!g.a || !g.b || !g.c) return fail("out of memory", NULL);
    for (long i = 0; i < n * n; ++i) {
      g.a[i] = (float)((i * 7 % 13) - 6) / 8.0f;
      g.b[i] = (float)((i * 5 % 11) - 5) / 8.0f;
    }
    int iters;
    double ms = median_ms(run_gemm, &g, budget_s * 1e3, &iters);
    printf("{\"what\": \"sgemm\", \"n\": %ld, \"threads\": %d, \"iters\": %d, \"median_ms\": %.6f, \"gflops\": %.3f}\n",
           n, threads, iters, ms, 2.0 * (double)n * n * n / (ms * 1e6));
    fflush(stdout);
    free(g.a), free(g.b), free(g.c);
    p = *end == ',' ? end + 1 : end;
  }

  if (mib > 0) {
    struct copy c = {threads, (size_t)mib << 20, malloc((size_t)mib << 20), malloc((size_t)mib << 20)};
    if (!c.dst || !c.src) return fail("out of memory", NULL);
    memset(c.src, 1, c.bytes);  // touch every page before timing
    memset(c.dst, 0, c.bytes);
    int iters;
    double ms = median_ms(run_copy, &c, budget_s * 1e3, &iters);
    // GB/s counts bytes read plus bytes written, as tgc-bench does for kernels.
    printf(
        "{\"what\": \"memcpy\", \"mib\": %ld, \"threads\": %d, \"iters\": %d, \"median_ms\": %.6f, \"gbps\": %.3f}\n",
        mib, threads, iters, ms, 2.0 * (double)c.bytes / (ms * 1e6));
    free(c.dst), free(c.src);
  }
  return 0;
}
