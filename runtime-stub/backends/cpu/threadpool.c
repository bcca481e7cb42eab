/* A persistent pthread pool that runs a whole model run at once: the caller hands it the run's
 * steps (launches), the workers are woken once, and every thread walks the steps in order. A
 * step is either run by the calling thread alone (too small to pay for splitting) or split into
 * one contiguous chunk per thread; threads meet at a barrier only around split steps, so runs of
 * small launches cost no synchronisation at all, and a run with no split step wakes no worker.
 * Waiting (for a run, at a barrier) spins, then yields, then parks on a condition variable. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/threadpool.h"

/* Waiting: poll with a pause for PAUSE_NS, then poll with sched_yield (lets an oversubscribed
 * machine run the thread we wait for) until SPIN_NS, then block on the condition variable. */
#ifndef PAUSE_NS
#define PAUSE_NS 5000
#endif
#ifndef SPIN_NS
#define SPIN_NS 100000
#endif

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
  pthread_cond_t cv;
  atomic_uint gen;    /* bumped per run (and to stop) */
  atomic_uint phase;  /* bumped each time every thread has reached the barrier */
  atomic_int arrived; /* threads at the barrier */
  atomic_int parked;  /* threads blocked on cv */
  atomic_int stop;
  /* the current run, written before gen is bumped (release), read after (acquire) */
  const tgc_step* steps;
  int num_steps;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

int64_t tgc_now_ns(void) {
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
    int64_t t = tgc_now_ns();
    if (s->start == 0)
      s->start = t;
    else if (t - s->start > SPIN_NS)
      return 0;
    if (t - s->start > PAUSE_NS) {
      sched_yield();
      return 1;
    }
  }
  cpu_relax();
  return 1;
}

/* Waits until *word differs from `seen`; returns the new value. Sequentially consistent with
 * wake(): either the waker sees `parked` or the waiter sees the new value. */
static unsigned wait_change(tgc_pool* p, atomic_uint* word, unsigned seen) {
  unsigned v;
  spin_wait s = {0, 0};
  while ((v = atomic_load(word)) == seen && spin(&s)) {
  }
  if (v != seen) return v;
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add(&p->parked, 1);
  while ((v = atomic_load(word)) == seen) pthread_cond_wait(&p->cv, &p->mu);
  atomic_fetch_sub(&p->parked, 1);
  pthread_mutex_unlock(&p->mu);
  return v;
}

static void bump_and_wake(tgc_pool* p, atomic_uint* word) {
  atomic_fetch_add(word, 1);
  if (atomic_load(&p->parked) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
}

/* Every thread of the pool arrives before any leaves. */
static void barrier(tgc_pool* p) {
  unsigned phase = atomic_load(&p->phase);
  if (atomic_fetch_add(&p->arrived, 1) == p->n - 1) {
    atomic_store(&p->arrived, 0);
    bump_and_wake(p, &p->phase);
    return;
  }
  wait_change(p, &p->phase, phase);
}

static void run_chunk(const tgc_step* s, int i, int n) {
  int64_t chunk = s->total / n, rem = s->total % n;
  int64_t begin = i * chunk + (i < rem ? i : rem);
  int64_t end = begin + chunk + (i < rem ? 1 : 0);
  if (begin < end) s->fn(s->buffers, begin, end);
}

/* Thread i's part of a run. Around a split step every thread meets at the barrier (before it, so
 * that it sees what the caller's solo steps wrote; after it, so that everyone sees its result),
 * and the run ends at a barrier too. Past that last barrier the caller may return and reuse the
 * steps, so no thread reads them there (hence `after_split`, kept in a local). */
static void run_steps(tgc_pool* p, int i) {
  const tgc_step* steps = p->steps;
  int n = p->num_steps, after_split = 1;
  for (int k = 0; k < n; ++k) {
    const tgc_step* s = &steps[k];
    if (!s->split) {
      if (i == 0 && s->total > 0) s->fn(s->buffers, 0, s->total);
      after_split = 0;
      continue;
    }
    if (!after_split) barrier(p);
    run_chunk(s, i, p->n);
    after_split = 1;
    barrier(p);
  }
  if (!after_split) barrier(p);
}

static void* worker(void* arg) {
  tgc_pool* p = ((worker_arg*)arg)->pool;
  int index = ((worker_arg*)arg)->index;
  unsigned seen = 0;
  for (;;) {
    seen = wait_change(p, &p->gen, seen);
    if (atomic_load(&p->stop)) return NULL;
    run_steps(p, index);
  }
}

int tgc_online_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* A CPU's core as one number (package and core id, from sysfs), -1 where sysfs says nothing. */
static long core_key(int cpu) {
  long pkg = -1, core = -1;
  char path[128];
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  if (fscanf(f, "%ld", &pkg) != 1) pkg = -1;
  fclose(f);
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
  if (!(f = fopen(path, "r"))) return -1;
  if (fscanf(f, "%ld", &core) != 1) core = -1;
  fclose(f);
  return pkg < 0 || core < 0 ? -1 : pkg * 1000003 + core;
}

/* Distinct (package, core) pairs among the online CPUs: SMT siblings share a core's vector units,
 * so a second thread on one core rarely speeds kernels up. The online count where sysfs says
 * nothing. */
int tgc_physical_cores(void) {
  int online = tgc_online_cores(), found = 0;
  long* seen = calloc((size_t)online + 1, sizeof(long));
  for (int cpu = 0; seen && cpu < 4096 && found < online; ++cpu) {
    long key = core_key(cpu);
    if (key < 0) continue;
    int dup = 0;
    for (int k = 0; k < found && !dup; ++k) dup = seen[k] == key;
    if (!dup) seen[found++] = key;
  }
  free(seen);
  return found > 0 && found <= online ? found : online;
}

/* Each worker on a CPU of its own, other than the creating thread's, on cores of their own where
 * there are enough (TGC_PIN_THREADS=0: left to the scheduler). Unpinned, Linux often woke a parked
 * worker on the caller's CPU: then every split waited for a context switch, and a process measured
 * a split at 14 us instead of 0.2-0.9 and ran embedding_model at 2 threads no faster than at 1
 * (0.64 ms; pinned 0.55 in every process). The caller stays unpinned: it is the application's. */
static void pin_workers(tgc_pool* p) {
  const char* env = getenv("TGC_PIN_THREADS");
  cpu_set_t allowed, taken;
  if ((env && strcmp(env, "0") == 0) || sched_getaffinity(0, sizeof allowed, &allowed) != 0 ||
      CPU_COUNT(&allowed) < p->n)
    return;
  long* key = malloc(CPU_SETSIZE * sizeof(long)); /* each allowed CPU's core (-1: unknown, a core of its own) */
  if (!key) return;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) key[cpu] = CPU_ISSET(cpu, &allowed) ? core_key(cpu) : -1;
  CPU_ZERO(&taken);
  int self = sched_getcpu(), k = 1;
  if (self >= 0 && self < CPU_SETSIZE) CPU_SET(self, &taken);
  for (int pass = 0; pass < 2 && k < p->n; ++pass) /* first a core apiece, then any CPU left */
    for (int cpu = 0; cpu < CPU_SETSIZE && k < p->n; ++cpu) {
      if (!CPU_ISSET(cpu, &allowed) || CPU_ISSET(cpu, &taken)) continue;
      int sibling = 0;
      for (int c = 0; pass == 0 && key[cpu] >= 0 && c < CPU_SETSIZE && !sibling; ++c)
        sibling = CPU_ISSET(c, &taken) && key[c] == key[cpu];
      if (sibling) continue;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      if (pthread_setaffinity_np(p->threads[k], sizeof one, &one) != 0) break;
      CPU_SET(cpu, &taken);
      ++k;
    }
  free(key);
}

tgc_pool* tgc_pool_create(int num_threads) {
  tgc_pool* p = calloc(1, sizeof *p);
  if (!p) {
    tgc_set_error("out of memory creating the thread pool");
    return NULL;
  }
  p->n = num_threads > 0 ? num_threads : 1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
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
  pin_workers(p);
  return p;
}

void tgc_pool_destroy(tgc_pool* p) {
  if (!p) return;
  if (p->started > 0) {
    atomic_store(&p->stop, 1);
    bump_and_wake(p, &p->gen);
    for (int i = 1; i <= p->started; ++i) pthread_join(p->threads[i], NULL);
  }
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p->threads);
  free(p->args);
  free(p);
}

int tgc_pool_size(const tgc_pool* p) { return p ? p->n : 0; }

void tgc_pool_run_steps(tgc_pool* p, const tgc_step* steps, int num_steps) {
  int any_split = 0;
  for (int k = 0; k < num_steps; ++k) any_split |= steps[k].split && steps[k].total > 0;
  if (p->n == 1 || !any_split) {
    for (int k = 0; k < num_steps; ++k)
      if (steps[k].total > 0) steps[k].fn(steps[k].buffers, 0, steps[k].total);
    return;
  }
  p->steps = steps;
  p->num_steps = num_steps;
  bump_and_wake(p, &p->gen);
  run_steps(p, 0);
}

void tgc_pool_run(tgc_pool* p, tgc_cpu_fn fn, void* const* buffers, int64_t total, int64_t min_items) {
  tgc_step s = {fn, buffers, total, total >= min_items * (int64_t)p->n};
  tgc_pool_run_steps(p, &s, 1);
}
