/* CPU backend: the launches' cpu_fn run on the thread pool over a host arena, a whole run handed to
 * the pool at once. Which launches are split across the threads is measured, not guessed: the
 * first CALIBRATION_RUNS runs time every launch on the calling thread alone; a launch whose other
 * threads' share exceeds twice the pool's measured cost of one split (a wake-up and a barrier) is
 * then timed split in the next CALIBRATION_RUNS runs, and split from then on only if that was
 * clearly faster (a split also moves the data to other cores' caches: embedding_model's k17 took 65 us
 * alone and 121 split in two). The next 2 * CALIBRATION_RUNS runs alternate whole runs with those
 * splits and with none, and the splits stay only if their runs were clearly faster: a launch timed
 * alone does not see that splitting its producer moved its input to the other cores' caches
 * (det at 2 threads: unsplit consumers of split producers ran 2-3x slower than at 1 thread, the
 * run as a whole slower than at 1). A batch at least as large as the pool runs a sample per thread
 * instead, each in an arena of its own. TGC_PROFILE times each launch and prints the means when
 * the model is destroyed. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/threadpool.h"

#ifndef CALIBRATION_RUNS
#define CALIBRATION_RUNS 3
#endif

/* A thread's own arena and argument arrays for sample-parallel runs. */
typedef struct {
  void* arena;
  void** cur;
  void*** args;
} cpu_worker;

typedef struct {
  tgc_pool* pool;
  tgc_step* steps;      /* per launch: what the pool runs */
  int64_t* solo_ns;     /* per launch: its fastest calibration run on one thread (-1: none ran) */
  int64_t* split_ns_of; /* per launch: its fastest calibration run split across the pool (-1: none) */
  int runs;             /* runs so far (calibration ends at 4 * CALIBRATION_RUNS) */
  int64_t run_ns[2];    /* the fastest whole run without splits [0] and with the decided ones [1] */
  int64_t split_ns;     /* the pool's cost of one split step */
  void* arena;          /* 64-byte aligned; m->arena points here */
  cpu_worker* workers;  /* per thread, made by the first sample-parallel run, else NULL */
  double* profile_ms;   /* TGC_PROFILE set: time spent per launch */
  int64_t profile_runs;
} cpu_state;

static void free_workers(cpu_state* c, const tgc_model* m) {
  for (int k = 0; c->workers && k < m->num_threads; ++k) {
    cpu_worker* w = &c->workers[k];
    tgc_free64(w->arena);
    free(w->cur);
    for (int32_t l = 0; w->args && l < m->desc->num_launches; ++l) free(w->args[l]);
    free(w->args);
  }
  free(c->workers);
  c->workers = NULL;
}

static int make_workers(cpu_state* c, const tgc_model* m) {
  const tgc_model_desc* d = m->desc;
  if (c->workers) return 0;
  int ok = (c->workers = calloc((size_t)m->num_threads, sizeof *c->workers)) != NULL;
  for (int k = 0; ok && k < m->num_threads; ++k) {
    cpu_worker* w = &c->workers[k];
    ok = (d->arena_size == 0 || (w->arena = tgc_alloc64(d->arena_size))) &&
         (w->cur = calloc((size_t)d->num_buffers + 1, sizeof(void*))) &&
         (w->args = calloc((size_t)d->num_launches + 1, sizeof(void**)));
    for (int32_t l = 0; ok && l < d->num_launches; ++l)
      ok = (w->args[l] = calloc((size_t)d->launches[l].num_buffers + 1, sizeof(void*))) != NULL;
  }
  if (ok) return 0;
  free_workers(c, m);
  tgc_set_error("out of memory for %d sample-parallel arenas of %lld bytes", m->num_threads, (long long)d->arena_size);
  return -1;
}

/* Samples may run side by side only when each writes nothing another reads or writes: every
 * output batched, no STATE (one copy, updated sample after sample). Not with TGC_PROFILE, whose
 * per-kernel times need kernels one at a time. */
static int side_by_side(const cpu_state* c, const tgc_model* m) {
  const tgc_model_desc* d = m->desc;
  if (m->num_threads < 2 || m->batch < m->num_threads || c->profile_ms || m->num_states > 0) return 0;
  for (int32_t i = 0; i < d->num_outputs; ++i)
    if (!d->buffers[d->outputs[i]].batched) return 0;
  return 1;
}

/* Sample-parallel runs: a pool chunk is a range of samples, each run start to end by one thread
 * in its own arena. */
typedef struct {
  tgc_model* m;
  cpu_state* c;
  atomic_int next_worker;
} sample_job;

static void run_samples(void* const* job_ptr, int64_t begin, int64_t end) {
  sample_job* job = (sample_job*)(void*)job_ptr;
  const tgc_model_desc* d = job->m->desc;
  cpu_worker* w = &job->c->workers[atomic_fetch_add(&job->next_worker, 1)];
  for (int64_t s = begin; s < end; ++s) {
    tgc_point_at_sample(job->m, w->arena, w->cur, w->args, s);
    for (int32_t l = 0; l < d->num_launches; ++l) { /* (no sizes computed from data with a batch) */
      int64_t total = tgc_launch_items(job->m, l);
      if (total > 0) d->launches[l].cpu_fn(w->args[l], 0, total);
    }
  }
}

static void noop_kernel(void* const* buffers, int64_t begin, int64_t end) { (void)buffers, (void)begin, (void)end; }

/* The median time of a run of one empty split step: what splitting a launch costs. */
static int64_t measure_split_ns(tgc_pool* pool) {
  enum { N = 33 };
  int64_t t[N];
  tgc_step s = {noop_kernel, NULL, tgc_pool_size(pool), 1};
  for (int i = 0; i < N; ++i) {
    int64_t t0 = tgc_now_ns();
    tgc_pool_run_steps(pool, &s, 1);
    t[i] = tgc_now_ns() - t0;
  }
  for (int i = 1; i < N; ++i)
    for (int j = i; j > 0 && t[j] < t[j - 1]; --j) {
      int64_t x = t[j];
      t[j] = t[j - 1], t[j - 1] = x;
    }
  return t[N / 2];
}

/* Calibration: every launch timed, on this thread alone until the candidates for splitting are
 * picked (no step is split before), then each candidate split across the pool. As within a run,
 * the workers are still spinning where the previous split ended shortly before, else parked. */
static int run_timed(cpu_state* c, tgc_model* m) {
  for (int32_t l = 0; l < m->desc->num_launches; ++l) {
    tgc_step s = c->steps[l];
    if ((s.total = tgc_launch_items(m, l)) <= 0) continue; /* skipped (another variant ran): not timed */
    int64_t t0 = tgc_now_ns();
    if (s.split)
      tgc_pool_run_steps(c->pool, &s, 1);
    else
      s.fn(s.buffers, 0, s.total);
    int64_t t = tgc_now_ns() - t0, *best = s.split ? &c->split_ns_of[l] : &c->solo_ns[l];
    if (*best < 0 || t < *best) *best = t;
    if (tgc_take_computed_var(m, l) != 0) return -1;
  }
  return 0;
}

/* Launches [from, to) on the pool, as many at a time as possible: up to and including one that
 * computes a run-time size (sets_var), which the launches after it need to know their work. */
static int run_launches(cpu_state* c, tgc_model* m, int32_t from, int32_t to) {
  const tgc_launch* L = m->desc->launches;
  while (from < to) {
    int32_t end = from;
    while (end < to && !L[end].sets_var) ++end;
    if (end < to) ++end;
    for (int32_t l = from; l < end; ++l) c->steps[l].total = tgc_launch_items(m, l);
    tgc_pool_run_steps(c->pool, c->steps + from, end - from);
    if (tgc_take_computed_var(m, end - 1) != 0) return -1;
    from = end;
  }
  return 0;
}

/* The candidates for splitting: launches whose other threads' share of their time outweighs twice
 * the split's cost. A launch that calibration never ran (the variant for other run-time sizes) is
 * split: variants exist for large sizes, whose kernels are the long ones. */
static void pick_candidates(cpu_state* c, const tgc_model* m) {
  int n = m->num_threads;
  for (int32_t l = 0; l < m->desc->num_launches; ++l)
    c->steps[l].split = n > 1 && (c->solo_ns[l] < 0 || c->solo_ns[l] * (n - 1) / n > 2 * c->split_ns);
}

/* A candidate stays split where splitting was clearly faster (by a fifth: three runs of each
 * decide, and a borderline split gains little where it wins and loses much where the timing
 * misled), or was not timed either way. */
static void decide_splits(cpu_state* c, const tgc_model* m) {
  for (int32_t l = 0; l < m->desc->num_launches; ++l)
    if (c->steps[l].split && c->solo_ns[l] >= 0 && c->split_ns_of[l] >= 0)
      c->steps[l].split = c->split_ns_of[l] * 5 < c->solo_ns[l] * 4;
}

/* Every launch on this thread, in order: a run as it would be without splits. */
static int run_alone(cpu_state* c, tgc_model* m) {
  for (int32_t l = 0; l < m->desc->num_launches; ++l) {
    int64_t total = tgc_launch_items(m, l);
    if (total > 0) c->steps[l].fn(c->steps[l].buffers, 0, total);
    if (tgc_take_computed_var(m, l) != 0) return -1;
  }
  return 0;
}

/* Runs 2C..4C-1 (C = CALIBRATION_RUNS): whole runs alternately without splits and with the
 * decided ones; after the last, the splits stay only if their fastest run beat the other's by a
 * twentieth. A narrower win is within this noise (silero_vad_legacy split 35 of 70 launches on
 * such a win and ran at 2 threads 0.035-0.039 ms, as at 1); without splits a run is the
 * one-thread run, no worker woken. */
static int run_checked(cpu_state* c, tgc_model* m) {
  int with = (c->runs - 2 * CALIBRATION_RUNS) % 2;
  int64_t t0 = tgc_now_ns();
  if ((with ? run_launches(c, m, 0, m->desc->num_launches) : run_alone(c, m)) != 0) return -1;
  int64_t t = tgc_now_ns() - t0;
  if (c->run_ns[with] < 0 || t < c->run_ns[with]) c->run_ns[with] = t;
  if (c->runs + 1 == 4 * CALIBRATION_RUNS && c->run_ns[1] * 20 > c->run_ns[0] * 19)
    for (int32_t l = 0; l < m->desc->num_launches; ++l) c->steps[l].split = 0;
  return 0;
}

static int64_t cpu_run(void* be, tgc_model* m, int64_t sample) {
  cpu_state* c = be;
  const tgc_model_desc* d = m->desc;
  // A batch of at least as many samples as threads runs a sample per thread: one sample's
  // kernels are often too small to split well.
  if (sample == 0 && side_by_side(c, m)) {
    if (make_workers(c, m) != 0) return -1;
    sample_job job = {m, c, 0};
    tgc_pool_run(c->pool, run_samples, (void* const*)(void*)&job, m->batch, 1);
    return m->batch;
  }
  if (c->runs < 2 * CALIBRATION_RUNS && m->num_threads > 1) {
    if (run_timed(c, m) != 0) return -1;
    ++c->runs;
    if (c->runs == CALIBRATION_RUNS) pick_candidates(c, m);
    if (c->runs == 2 * CALIBRATION_RUNS) {
      decide_splits(c, m);
      int any = 0;
      for (int32_t l = 0; l < d->num_launches; ++l) any |= c->steps[l].split;
      if (!any) c->runs = 4 * CALIBRATION_RUNS; /* nothing split: nothing to check */
    }
    return 1;
  }
  if (c->runs < 4 * CALIBRATION_RUNS && m->num_threads > 1) {
    if (run_checked(c, m) != 0) return -1;
    ++c->runs;
    return 1;
  }
  if (!c->profile_ms) {
    return run_launches(c, m, 0, d->num_launches) != 0 ? -1 : 1;
  }
  for (int32_t l = 0; l < d->num_launches; ++l) {
    double t0 = tgc_now_ms();
    if (run_launches(c, m, l, l + 1) != 0) return -1;
    c->profile_ms[l] += tgc_now_ms() - t0;
  }
  if (sample == 0) c->profile_runs++; /* per tgc_run, over all its samples */
  return 1;
}

/* TGC_PROFILE=1: per-launch mean time over all runs, slowest first, on stderr. */
static void print_profile(const cpu_state* c, const tgc_model* m) {
  const tgc_model_desc* d = m->desc;
  int32_t split = 0;
  for (int32_t l = 0; l < d->num_launches; ++l) split += c->steps[l].split;
  char title[200];
  snprintf(title, sizeof title, "%lld runs; %d of %d launches split across %d threads (a split costs %.1f us)",
           (long long)c->profile_runs, (int)split, (int)d->num_launches, m->num_threads, (double)c->split_ns / 1e3);
  tgc_print_profile(d, c->profile_ms, c->profile_runs, title, "");
}

static void cpu_destroy(void* be, tgc_model* m) {
  cpu_state* c = be;
  if (c->profile_ms && c->profile_runs > 0) print_profile(c, m);
  free(c->profile_ms);
  free(c->steps);
  free(c->solo_ns);
  free(c->split_ns_of);
  if (c->pool) tgc_pool_destroy(c->pool);
  free_workers(c, m);
  tgc_free64(c->arena);
  m->arena = NULL;
  free(c);
}

static void* cpu_create(tgc_model* m, int num_threads) {
  const tgc_model_desc* d = m->desc;
  for (int32_t l = 0; l < d->num_launches; ++l)
    if (!d->launches[l].cpu_fn) {
      tgc_set_error("launch %d '%s': no CPU function", (int)l, d->launches[l].name ? d->launches[l].name : "?");
      return NULL;
    }
  cpu_state* c = calloc(1, sizeof *c);
  m->num_threads = num_threads > 0 ? num_threads : tgc_physical_cores();
  if (m->num_threads > 1024) m->num_threads = 1024;
  size_t nl = (size_t)d->num_launches + 1;
  if (!c || !(c->steps = calloc(nl, sizeof *c->steps)) || !(c->solo_ns = calloc(nl, sizeof *c->solo_ns)) ||
      !(c->split_ns_of = calloc(nl, sizeof *c->split_ns_of)) ||
      (getenv("TGC_PROFILE") && !(c->profile_ms = calloc(nl, sizeof(double)))) ||
      (d->arena_size > 0 && !(c->arena = tgc_alloc64(d->arena_size)))) {
    tgc_set_error("out of memory creating model '%s'", d->name ? d->name : "?");
    if (c) cpu_destroy(c, m);
    return NULL;
  }
  m->arena = c->arena; /* runtime.c points the arena buffers into it */
  if (!(c->pool = tgc_pool_create(m->num_threads))) {
    cpu_destroy(c, m);
    return NULL;
  }
  for (int32_t l = 0; l < d->num_launches; ++l) {
    c->steps[l] = (tgc_step){d->launches[l].cpu_fn, m->launch_args[l], 0, 0};
    c->solo_ns[l] = c->split_ns_of[l] = -1; /* not timed yet */
  }
  c->run_ns[0] = c->run_ns[1] = -1;
  if (m->num_threads > 1) c->split_ns = measure_split_ns(c->pool);
  return c;
}

const struct tgc_backend tgc_backend_cpu = {
    .name = "cpu",
    .create = cpu_create,
    .upload = NULL, /* kernels read the host buffers themselves */
    .run = cpu_run,
    .destroy = cpu_destroy,
    .device_name = NULL,
};
