/* What the parts of tgc-agent share: the protocol channel, the clock, and the input data and
 * output checksum that make timings of one kernel's candidates comparable. */
#ifndef TGC_AGENT_H
#define TGC_AGENT_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define AGENT_MIN_SAMPLE_US 20.0 /* a sample repeats a fast kernel until it takes this long */

/* The protocol's output. stdout itself goes to stderr, so that a driver or kernel printing
 * something cannot garble the replies. */
extern FILE* agent_out;

double agent_now_us(void);
/* Floats uniform in [-1, 1) from a fixed sequence per seed; integers and bools zero. */
void agent_fill(void* p, int64_t bytes, int32_t dtype, uint64_t seed);
uint64_t agent_seed(int32_t buffer); /* the seed of a candidate's i-th buffer */
double agent_element(const void* p, int64_t i, int32_t dtype);
int64_t agent_dtype_bytes(int32_t dtype);
/* Runs a kernel `reps` times per sample (fast kernels: enough for AGENT_MIN_SAMPLE_US), until
 * max_iters samples or budget_ms have passed (at least 3); returns -1 when `run` failed. Where
 * `device_us` (may be NULL) answers >= 0 after the warm-up run, a sample is one run and its
 * time is what device_us says after it (the device's own clock), not the wall clock. */
typedef int (*agent_run_fn)(void* ctx, long long reps);
typedef double (*agent_device_us_fn)(void* ctx);
int agent_sample(agent_run_fn run, agent_device_us_fn device_us, void* ctx, long long max_iters, double budget_ms,
                 double* min_us, double* median_us, long long* samples);
/* Replies "ok ..." with the checksum of the output buffer (host memory). */
void agent_reply_ok(double min_us, double median_us, long long samples, const void* out, int64_t bytes, int32_t dtype);
void agent_reply_err(const char* what, const char* detail);

/* agent_gpu.c: GPU candidates, run through the tgc runtime's backend of their API
 * (tgc_backend_opencl, tgc_backend_vulkan, tgc_backend_cuda). */
struct tgc_backend;
/* Writes the greeting's line of `api`: "<api> <device>" or "no-<api> <why>". */
void agent_gpu_describe(const struct tgc_backend* backend, const char* api, char* line, size_t cap);
void agent_time_gpu(const struct tgc_backend* backend, const char* payload, size_t bytes, long long max_iters,
                    double budget_ms);

#endif
