/* CPU backend: the launches' cpu_fn run on the thread pool over a host arena. A batch at least as
 * large as the pool runs a sample per thread instead, each in an arena of its own. TGC_PROFILE
 * times each launch and prints the means when the model is destroyed. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

/* A thread's own arena and argument arrays for sample-parallel runs. */
typedef struct {
  void* arena;
  void** cur;
  void*** args;
} cpu_worker;

typedef struct {
  tgc_pool* pool;
  void* arena;          /* 64-byte aligned; m->arena points here */
  cpu_worker* workers;  /* per thread, made by the first sample-parallel run, else NULL */
  double* profile_ms;   /* TGC_PROFILE set: time spent per launch */
  int64_t profile_runs;
} cpu_state;

static void free_workers(cpu_state* c, const tgc_model* m) {
  for (int k = 0; c->workers && k < m->num_threads; ++k) {
    cpu_worker* w = &c->workers[k];
    free(w->arena);
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
    for (int32_t l = 0; l < d->num_launches; ++l) {
      int64_t total = tgc_launch_items(job->m, l);
      if (total > 0) d->launches[l].cpu_fn(w->args[l], 0, total);
    }
  }
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
  for (int32_t l = 0; l < d->num_launches; ++l) {
    int64_t total = tgc_launch_items(m, l);
    double t0 = c->profile_ms ? tgc_now_ms() : 0;
    if (total > 0) tgc_pool_run(c->pool, d->launches[l].cpu_fn, m->launch_args[l], total, 2);
    if (c->profile_ms) c->profile_ms[l] += tgc_now_ms() - t0;
  }
  if (sample == 0) c->profile_runs++; /* per tgc_run, over all its samples */
  return 1;
}

/* TGC_PROFILE=1: per-launch mean time over all runs, slowest first, on stderr. */
static void print_profile(const cpu_state* c, const tgc_model* m) {
  const tgc_model_desc* d = m->desc;
  int32_t n = d->num_launches;
  double total = 0;
  for (int32_t l = 0; l < n; ++l) total += c->profile_ms[l];
  fprintf(stderr, "tgc profile: %lld runs, %.4f ms per run\n", (long long)c->profile_runs, total / (double)c->profile_runs);
  // TGC_PROFILE=all lists every launch; otherwise the 25 slowest.
  const char* env = getenv("TGC_PROFILE");
  int32_t shown = env && strcmp(env, "all") == 0 ? n : 25;
  char* done = calloc((size_t)n + 1, 1);
  for (int32_t k = 0; k < n && k < shown && done; ++k) {
    int32_t best = -1;
    for (int32_t l = 0; l < n; ++l)
      if (!done[l] && (best < 0 || c->profile_ms[l] > c->profile_ms[best])) best = l;
    done[best] = 1;
    fprintf(stderr, "  %8.4f ms %5.1f%%  %s\n", c->profile_ms[best] / (double)c->profile_runs,
            100.0 * c->profile_ms[best] / (total > 0 ? total : 1), d->launches[best].name);
  }
  free(done);
}

static void cpu_destroy(void* be, tgc_model* m) {
  cpu_state* c = be;
  if (c->profile_ms && c->profile_runs > 0) print_profile(c, m);
  free(c->profile_ms);
  if (c->pool) tgc_pool_destroy(c->pool);
  free_workers(c, m);
  free(c->arena);
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
  m->num_threads = num_threads > 0 ? num_threads : tgc_online_cores();
  if (m->num_threads > 1024) m->num_threads = 1024;
  if (!c || (getenv("TGC_PROFILE") && !(c->profile_ms = calloc((size_t)d->num_launches + 1, sizeof(double)))) ||
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
