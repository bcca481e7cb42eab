/* A persistent pthread pool that runs one CPU launch at a time: [0, total) is split into one
 * contiguous chunk per thread, the calling thread takes chunk 0. Workers spin briefly on the job
 * generation counter before blocking on a condition variable, so back-to-back launches are cheap. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime_internal.h"

/* Waiting: poll with a pause for PAUSE_NS, then poll with sched_yield (lets an oversubscribed
 * machine run the thread we wait for) until SPIN_NS, then block on the condition variable. */
#ifndef PAUSE_NS
#define PAUSE_NS 5000
#endif
#ifndef SPIN_NS
#define SPIN_NS 50000
#endif
#include <time.h>

struct tgc_pool;
typedef struct {
  struct tgc_pool* pool;
  int index;
} worker_arg;

struct tgc_pool {
  int n; /* threads including the caller */
  int started;
  pthread_t* threads;
  worker_arg* args;
  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv;
  atomic_uint gen;
  atomic_int pending;
  atomic_int stop;
  /* the current job, written before gen is bumped (release), read after (acquire) */
  tgc_cpu_fn fn;
  void* const* buffers;
  int64_t total;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

typedef struct {
  int64_t start; /* 0 until the first clock read */
  int polls;
} spin_wait;

/* One step of waiting; returns 0 once it is time to block. */
static int spin(spin_wait* s) {
  if ((++s->polls & 15) == 0 || s->start == 0) {
    int64_t t = now_ns();
    if (s->start == 0) s->start = t;
    else if (t - s->start > SPIN_NS) return 0;
    if (t - s->start > PAUSE_NS) {
      sched_yield();
      return 1;
    }
  }
  cpu_relax();
  return 1;
}

int tgc_online_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static void run_chunk(tgc_pool* p, int i) {
  int64_t total = p->total, n = p->n, chunk = total / n, rem = total % n;
  int64_t begin = i * chunk + (i < rem ? i : rem);
  int64_t end = begin + chunk + (i < rem ? 1 : 0);
  if (begin < end) p->fn(p->buffers, begin, end);
}

static void* worker(void* arg) {
  tgc_pool* p = ((worker_arg*)arg)->pool;
  int index = ((worker_arg*)arg)->index;
  unsigned seen = 0;
  for (;;) {
    unsigned g = atomic_load_explicit(&p->gen, memory_order_acquire);
    if (g == seen) {
      spin_wait s = {0, 0};
      while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen && spin(&s)) {
      }
    }
    if (g == seen) {
      pthread_mutex_lock(&p->mu);
      while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen) pthread_cond_wait(&p->work_cv, &p->mu);
      pthread_mutex_unlock(&p->mu);
    }
    seen = g;
    if (atomic_load_explicit(&p->stop, memory_order_acquire)) return NULL;
    run_chunk(p, index);
    if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done_cv);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

tgc_pool* tgc_pool_create(int num_threads) {
  tgc_pool* p = calloc(1, sizeof *p);
  if (!p) {
    tgc_set_error("out of memory creating the thread pool");
    return NULL;
  }
  p->n = num_threads > 0 ? num_threads : 1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work_cv, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  atomic_init(&p->gen, 0);
  atomic_init(&p->pending, 0);
  atomic_init(&p->stop, 0);
  if (p->n == 1) return p;
  p->threads = calloc((size_t)p->n, sizeof(pthread_t));
  p->args = calloc((size_t)p->n, sizeof(worker_arg));
  if (!p->threads || !p->args) {
    tgc_set_error("out of memory creating the thread pool");
    tgc_pool_destroy(p);
    return NULL;
  }
  /* Workers block all signals: they belong to the application's main thread. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  for (int i = 1; i < p->n; ++i) {
    p->args[i].pool = p;
    p->args[i].index = i;
    int rc = pthread_create(&p->threads[i], NULL, worker, &p->args[i]);
    if (rc != 0) {
      pthread_sigmask(SIG_SETMASK, &old, NULL);
      tgc_set_error("cannot start worker thread %d of %d: %s", i, p->n - 1, strerror(rc));
      tgc_pool_destroy(p);
      return NULL;
    }
    p->started = i;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return p;
}

void tgc_pool_destroy(tgc_pool* p) {
  if (!p) return;
  if (p->started > 0) {
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->stop, 1, memory_order_release);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i <= p->started; ++i) pthread_join(p->threads[i], NULL);
  }
  pthread_cond_destroy(&p->work_cv);
  pthread_cond_destroy(&p->done_cv);
  pthread_mutex_destroy(&p->mu);
  free(p->threads);
  free(p->args);
  free(p);
}

int tgc_pool_size(const tgc_pool* p) { return p ? p->n : 0; }

void tgc_pool_run(tgc_pool* p, tgc_cpu_fn fn, void* const* buffers, int64_t total, int64_t min_items) {
  if (total <= 0) return;
  if (p->n == 1 || total < min_items * (int64_t)p->n) {
    fn(buffers, 0, total);
    return;
  }
  p->fn = fn;
  p->buffers = buffers;
  p->total = total;
  atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  run_chunk(p, 0);
  spin_wait s = {0, 0};
  while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0 && spin(&s)) {
  }
  if (atomic_load_explicit(&p->pending, memory_order_acquire) != 0) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0) pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
}
