/* tgc-agent's GPU side: times `time-cl`, `time-vk` and `time-cuda` candidates (cl_candidate.h:
 * an OpenCL C, SPIR-V or PTX kernel and its launch) on the device the tgc runtime would pick, by
 * running them through the runtime's own backend: the candidate becomes a one-kernel model
 * description whose kernel is launched kRepeats times in a run (OpenCL: one queue; Vulkan: one
 * command buffer with a barrier between launches; CUDA: one graph of dependent launches), as
 * between dependent launches of a model, so a sample is one submit and one wait shared by
 * kRepeats launches, and the time per launch is what a model's launch costs. A run also copies
 * the inputs in and the output back (on a discrete GPU, tens of microseconds for a large buffer:
 * more than many kernels take), so a sample is the launches' device time, from the backend's
 * timestamps (OpenCL events, CUDA events around the graph, Vulkan timestamp queries), where the
 * device has them; else the run's wall clock. The GPU libraries are loaded only by the runtime,
 * so an agent without them still times CPU candidates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "cl_candidate.h"
#include "tgc_timing.h"

enum { kRepeats = 8 };

/* The device's name, from a model with no launches (the runtime picks the device at create).
 * That model lives as long as the agent: its Vulkan instance keeps the driver loaded. Each
 * candidate makes and drops an instance of its own, and without one held the loader unloads the
 * driver every time; NVIDIA's, loaded afresh per candidate, stopped loading after a few dozen
 * (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER), so BEAM dropped most candidates there. The
 * CUDA probe likewise keeps the primary context retained between candidates. */
void agent_gpu_describe(const struct tgc_backend* backend, const char* api, char* line, size_t cap) {
  static const int64_t shape[1] = {1};
  static const tgc_buffer out = {
      .name = "probe", .dtype = TGC_F32, .rank = 1, .shape = shape, .storage = TGC_STORAGE_OUTPUT, .nbytes = 4};
  static const int32_t outputs[1] = {0};
  tgc_model_desc d = {.abi_version = TGC_ABI_VERSION,
                      .name = "tgc-agent probe",
                      .backend = backend,
                      .num_buffers = 1,
                      .buffers = &out,
                      .num_outputs = 1,
                      .outputs = outputs,
                      .vars_buffer = -1};
  tgc_model* m = tgc_create(&d, 1); /* held until exit */
  if (!m) {
    snprintf(line, cap, "no-%s %s", api, tgc_last_error());
    return;
  }
  snprintf(line, cap, "%s %s", api, tgc_device_name(m));
  for (char* c = line; *c; ++c)
    if (*c == '\n' || *c == '\r') *c = ' ';
}

/* `reps` runs of the model, each kRepeats launches of the candidate. */
static int run_model(void* ctx, long long reps) {
  for (long long i = 0; i < reps; ++i)
    if (tgc_run(ctx) != 0) return -1;
  return 0;
}

/* The device's time of the last run's launches (CUDA events, Vulkan timestamps), -1 without. */
static double launches_us(void* ctx) {
  double ms = tgc_launch_ms(ctx);
  return ms >= 0 ? ms * 1e3 : -1;
}

void agent_time_gpu(const struct tgc_backend* backend, const char* payload, size_t bytes, long long max_iters,
                    double budget_ms) {
  static tgc_cl_candidate c; /* large (its buffer tables), and one at a time */
  char msg[1024];
  int vk = backend == &tgc_backend_vulkan, cl = backend == &tgc_backend_opencl;
  if ((cl   ? tgc_cl_candidate_parse
       : vk ? tgc_vk_candidate_parse
            : tgc_cuda_candidate_parse)(payload, bytes, &c, msg, sizeof msg) != 0)
    return agent_reply_err(cl ? "bad OpenCL candidate" : vk ? "bad Vulkan candidate" : "bad CUDA candidate", msg);
  if (vk && c.source_len % 4 != 0) return agent_reply_err("bad Vulkan candidate", "SPIR-V size is not a multiple of 4");
  int32_t n = c.num_buffers;
  uint32_t* blob = malloc(c.source_len + 1); /* word-aligned, as the Vulkan runtime reads SPIR-V */
  tgc_buffer* bufs = calloc((size_t)n, sizeof *bufs);
  int64_t* shapes = calloc((size_t)n, sizeof *shapes);
  int32_t* index = calloc((size_t)n, sizeof *index);
  tgc_launch launches[kRepeats];
  tgc_model* m = NULL;
  if (!blob || !bufs || !shapes || !index) {
    agent_reply_err("out of memory", NULL);
    goto done;
  }
  memcpy(blob, c.source, c.source_len);
  for (int32_t i = 0; i < n; ++i) {
    int64_t size = agent_dtype_bytes(c.buffer_dtypes[i]);
    shapes[i] = size > 0 ? c.buffer_bytes[i] / size : 0;
    index[i] = i;
    bufs[i] = (tgc_buffer){.name = i ? "input" : "output",
                           .dtype = c.buffer_dtypes[i],
                           .rank = 1,
                           .shape = &shapes[i],
                           .storage = i ? TGC_STORAGE_INPUT : TGC_STORAGE_OUTPUT,
                           .nbytes = shapes[i] * size};
  }
  for (int r = 0; r < kRepeats; ++r)
    launches[r] = (tgc_launch){.name = c.kernel,
                               .blob = blob,
                               .blob_size = (int64_t)c.source_len,
                               .num_buffers = n,
                               .buffers = index,
                               .global_size = {c.global_size, 1, 1},
                               .local_size = {c.local_size, 1, 1},
                               .outer_var = -1};
  tgc_model_desc d = {.abi_version = TGC_ABI_VERSION,
                      .name = c.kernel,
                      .backend = backend,
                      .num_buffers = n,
                      .buffers = bufs,
                      .num_launches = kRepeats,
                      .launches = launches,
                      .num_inputs = n - 1,
                      .inputs = index + 1,
                      .num_outputs = 1,
                      .outputs = index,
                      .vars_buffer = -1};
  if (!(m = tgc_create(&d, 1))) {
    agent_reply_err("cannot create the candidate's model", tgc_last_error());
    goto done;
  }
  tgc_time_launches(m);
  /* Inputs as the CPU and OpenCL paths fill them; the first run (pipelines, recording, the
   * CUDA graph) is the warm-up. */
  for (int32_t i = 1; i < n; ++i)
    agent_fill(tgc_input_data(m, i - 1), c.buffer_bytes[i], c.buffer_dtypes[i], agent_seed(i));
  if (tgc_run(m) != 0) {
    agent_reply_err("the candidate does not run", tgc_last_error());
    goto done;
  }
  double min_us, median_us;
  long long samples;
  if (agent_sample(run_model, launches_us, m, max_iters, budget_ms, &min_us, &median_us, &samples) != 0) {
    agent_reply_err("the candidate does not run", tgc_last_error());
    goto done;
  }
  agent_reply_ok(min_us / kRepeats, median_us / kRepeats, samples, tgc_output_data(m, 0), c.buffer_bytes[0],
                 c.buffer_dtypes[0]);
done:
  if (m) tgc_destroy(m);
  free(blob);
  free(bufs);
  free(shapes);
  free(index);
}
