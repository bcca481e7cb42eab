/* Hand-written tuning candidates for the agent tests (tools/tgc-agent/tgc_candidate.h): one
 * that computes out[i] = 2 * in[i], and misbehaving ones selected by BEHAVIOUR. */
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#include "tgc_candidate.h"
#include "tgc_model.h"

#define GOOD 0
#define CRASH 1
#define HANG 2
#define EXIT 3

static const int64_t bytes[2] = {4 * 1024, 4 * 1024};
static const int32_t dtypes[2] = {TGC_F32, TGC_F32};
__attribute__((visibility("default")))
const tgc_candidate_desc tgc_candidate = {TGC_CANDIDATE_ABI, 2, 1024, bytes, dtypes};

__attribute__((visibility("default"))) void tgc_kernel(void* const* buffers, int64_t begin, int64_t end) {
#if BEHAVIOUR == CRASH
  raise(SIGSEGV);
#elif BEHAVIOUR == HANG
  for (;;) pause();
#elif BEHAVIOUR == EXIT
  _exit(3);
#endif
  float* out = buffers[0];
  const float* in = buffers[1];
  for (int64_t i = begin; i < end; ++i) out[i] = 2 * in[i];
}
