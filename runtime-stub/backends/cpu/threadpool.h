/* The CPU backend's thread pool (threadpool.c). Runtime-internal, not part of the ABI. */
#ifndef TGC_THREADPOOL_H
#define TGC_THREADPOOL_H
#include "core/runtime_internal.h"

typedef struct tgc_pool tgc_pool;
/* num_threads counts the calling thread: num_threads - 1 workers are started. NULL on failure. */
tgc_pool* tgc_pool_create(int num_threads);
void tgc_pool_destroy(tgc_pool* p);
int tgc_pool_size(const tgc_pool* p);
/* One launch of a run: fn(buffers, begin, end) over [0, total), by the calling thread alone, or
 * split in contiguous chunks, one per thread. */
typedef struct {
  tgc_cpu_fn fn;
  void* const* buffers;
  int64_t total;
  int split;
} tgc_step;
/* Runs the steps in order and returns when all are done: the workers are woken once (not at all
 * when no step is split) and meet only around split steps. */
void tgc_pool_run_steps(tgc_pool* p, const tgc_step* steps, int num_steps);
/* One step, split when each thread gets at least min_items. */
void tgc_pool_run(tgc_pool* p, tgc_cpu_fn fn, void* const* buffers, int64_t total, int64_t min_items);
int tgc_online_cores(void);

#endif
