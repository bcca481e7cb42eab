/* Vulkan backend: the whole model in one command buffer, replayed by every run (one submit, one
 * wait) and recorded again only when a launch's work or a copy's size changes: kernels read the
 * run-time dims from the vars buffer, so one recording serves every decode step of an LLM (its
 * cache length changes, its launches do not), and a launch over a dim whose value starts its work
 * items dispatches only its share of work-groups.
 * Barriers only where they are needed: a dispatch waits for the earlier ones only when it reads
 * what one of them wrote since the last barrier, or writes what one of them read or wrote (the
 * arena reuses memory, so buffers are compared as byte ranges of their VkBuffers).
 * TGC_PROFILE=1 (or =all): a barrier after every dispatch and a timestamp after each, so each
 * dispatch's GPU time is the difference; destroying the model prints the means, slowest first.
 * m->time_launches (tgc-agent) records the same timestamps, and prints nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_internal.h"

typedef struct {
  VkBuffer buffer;
  VkDeviceSize begin, end;
} span;

static span span_of(const tgc_vk* vk, int32_t b) {
  VkDeviceSize n = (VkDeviceSize)vk->desc->buffers[b].nbytes;
  return (span){vk->bound[b], vk->offset[b], vk->offset[b] + (n ? n : 1)};
}

static int overlaps(span s, const span* set, int32_t n) {
  for (int32_t i = 0; i < n; ++i)
    if (set[i].buffer == s.buffer && s.begin < set[i].end && set[i].begin < s.end) return 1;
  return 0;
}

static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags from, VkAccessFlags src, VkPipelineStageFlags to,
                    VkAccessFlags dst) {
  VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src, .dstAccessMask = dst};
  vkCmdPipelineBarrier(cmd, from, to, 0, 1, &b, 0, NULL, 0, NULL);
}

static int profiling(void) {
  const char* p = getenv("TGC_PROFILE");
  return p && p[0] && strcmp(p, "0") != 0;
}

/* Work-groups spread over x and y: Vulkan guarantees only 65535 per dimension. */
static int dispatch_size(tgc_vk* vk, const tgc_launch* L, int64_t items, uint32_t* gx, uint32_t* gy) {
  const uint32_t* max = vk->props.limits.maxComputeWorkGroupCount;
  int64_t groups = (items + L->local_size[0] - 1) / L->local_size[0];
  int64_t x = groups < (int64_t)max[0] ? groups : (int64_t)max[0];
  int64_t y = (groups + x - 1) / x;
  if (y > (int64_t)max[1]) {
    tgc_set_error("Vulkan backend: kernel '%s' needs %lld work-groups, more than '%s' can launch", L->name,
                  (long long)groups, vk->props.deviceName);
    return -1;
  }
  *gx = (uint32_t)x;
  *gy = (uint32_t)y;
  return 0;
}

static int make_queries(tgc_vk* vk) {
  const tgc_model_desc* d = vk->desc;
  if (vk->timestamp_bits == 0) {
    fprintf(stderr, "tgc profile: '%s' has no timestamps on its compute queue; no kernel times\n",
            vk->props.deviceName);
    return 0;
  }
  VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                              .queryType = VK_QUERY_TYPE_TIMESTAMP,
                              .queryCount = (uint32_t)d->num_launches + 1};
  VkResult r = vkCreateQueryPool(vk->device, &qi, NULL, &vk->queries);
  if (r == VK_SUCCESS && !(vk->profile_ms = calloc((size_t)d->num_launches + 1, sizeof(double)))) {
    tgc_set_error("out of memory");
    return -1;
  }
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: creating the TGC_PROFILE query pool failed: %s (%d)", tgc_vk_err(r), (int)r);
    return -1;
  }
  return 0;
}

/* What a recording depends on besides the model, at this run's sizes: each launch's work items
 * (0: not launched), then each buffer's bytes (the staged copies). */
static void recorded_sizes(const tgc_vk* vk, const tgc_model* m, int64_t* out) {
  const tgc_model_desc* d = vk->desc;
  for (int32_t l = 0; l < d->num_launches; ++l) out[l] = d->launches[l].global_size[0] > 0 ? tgc_launch_items(m, l) : 0;
  for (int32_t b = 0; b < d->num_buffers; ++b) out[d->num_launches + b] = tgc_run_nbytes(m, b);
}

int tgc_vk_needs_recording(const tgc_vk* vk, const tgc_model* m) {
  size_t n = (size_t)(vk->desc->num_launches + vk->desc->num_buffers);
  recorded_sizes(vk, m, vk->sizes + n);
  return !vk->recorded || memcmp(vk->sizes, vk->sizes + n, n * sizeof *vk->sizes) != 0;
}

int tgc_vk_record(tgc_vk* vk, tgc_model* m) {
  const tgc_model_desc* d = vk->desc;
  int profile = profiling() || m->time_launches;
  if (!vk->prepared && tgc_vk_prepare(vk) != 0) return -1;
  if (profile && !vk->queries && !vk->profile_ms && make_queries(vk) != 0) return -1;
  recorded_sizes(vk, m, vk->sizes);
  int32_t refs = 0;
  for (int32_t l = 0; l < d->num_launches; ++l) refs += d->launches[l].num_buffers;
  span* written = calloc((size_t)refs + 1, sizeof *written);
  span* read = calloc((size_t)refs + 1, sizeof *read);
  if (!written || !read) return free(written), free(read), tgc_set_error("out of memory"), -1;
  int32_t nw = 0, nr = 0;
  vk->recorded = 0;
  vk->barriers = 0;
  VkResult r = vkResetCommandBuffer(vk->cmd, 0);
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  if (r == VK_SUCCESS) r = vkBeginCommandBuffer(vk->cmd, &bi);
  if (r != VK_SUCCESS) goto done;
  VkCommandBuffer cmd = vk->cmd;
  VkPipelineStageFlags work = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkAccessFlags any = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                      VK_ACCESS_TRANSFER_WRITE_BIT;
  /* The previous run's writes reach this run's reads, and its reads finish before this run writes. */
  barrier(cmd, work, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, work, any);
  if (!vk->direct) { /* inputs in from staging */
    int copied = 0;
    for (int32_t b = 0; b < d->num_buffers; ++b)
      if (tgc_vk_staged_input(vk, b) && vk->sizes[d->num_launches + b] > 0) {
        VkBufferCopy region = {vk->staging_at[b], vk->offset[b], (VkDeviceSize)vk->sizes[d->num_launches + b]};
        vkCmdCopyBuffer(cmd, vk->staging, vk->bound[b], 1, &region);
        copied = 1;
      }
    if (copied)
      barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_READ_BIT);
  }
  if (vk->queries) {
    vkCmdResetQueryPool(cmd, vk->queries, 0, (uint32_t)d->num_launches + 1);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, vk->queries, 0);
  }
  int dispatched = 0;
  for (int32_t l = 0; l < d->num_launches; ++l) {
    const tgc_launch* L = &d->launches[l];
    int64_t items = vk->sizes[l]; /* 0: a size variant of other sizes */
    if (items > 0) {
      /* Output first, then the inputs; the vars buffer changes only by the copy before them. */
      span out = span_of(vk, L->buffers[0]);
      int wait = overlaps(out, written, nw) || overlaps(out, read, nr);
      for (int32_t i = 1; i < L->num_buffers && !wait; ++i)
        if (L->buffers[i] != d->vars_buffer) wait = overlaps(span_of(vk, L->buffers[i]), written, nw);
      if ((wait || profile) && dispatched) {
        barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
        vk->barriers++;
        nw = nr = 0;
      }
      written[nw++] = out;
      for (int32_t i = 1; i < L->num_buffers; ++i)
        if (L->buffers[i] != d->vars_buffer) read[nr++] = span_of(vk, L->buffers[i]);
      uint32_t gx, gy;
      if (dispatch_size(vk, L, items, &gx, &gy) != 0) {
        vkEndCommandBuffer(cmd);
        free(written), free(read);
        return -1;
      }
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipelines[l]);
      vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vk->layouts[l], 0, 1, &vk->sets[l], 0, NULL);
      vkCmdDispatch(cmd, gx, gy, 1);
      dispatched++;
    }
    if (vk->queries) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, vk->queries, (uint32_t)l + 1);
  }
  if (!vk->direct) { /* outputs out to staging: what this run's sizes cover (recorded again when they change) */
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_READ_BIT);
    for (int32_t b = 0; b < d->num_buffers; ++b)
      if (tgc_vk_staged_output(vk, b) && vk->sizes[d->num_launches + b] > 0) {
        VkBufferCopy region = {vk->offset[b], vk->staging_at[b], (VkDeviceSize)vk->sizes[d->num_launches + b]};
        vkCmdCopyBuffer(cmd, vk->bound[b], vk->staging, 1, &region);
      }
    barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  } else { /* the outputs are read through the mapping once the fence signals */
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  }
  r = vkEndCommandBuffer(cmd);
done:
  free(written);
  free(read);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: recording the model's command buffer failed: %s (%d)", tgc_vk_err(r), (int)r);
    return -1;
  }
  if (tgc_vk_check_messages(vk, "while recording the model") != 0) return -1;
  if (tgc_gpu_verbose())
    fprintf(stderr, "tgc: vulkan: recorded %d dispatches with %d barriers between them (%s)\n", dispatched,
            (int)vk->barriers, vk->direct ? "direct memory" : "staging copies");
  vk->recorded = 1;
  return 0;
}

void tgc_vk_collect_profile(tgc_vk* vk) {
  if (!vk->queries) return;
  int32_t n = vk->desc->num_launches;
  uint64_t* t = calloc((size_t)n + 1, sizeof *t);
  if (!t) return;
  if (vkGetQueryPoolResults(vk->device, vk->queries, 0, (uint32_t)n + 1, ((size_t)n + 1) * sizeof *t, t, sizeof *t,
                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
    uint64_t mask = vk->timestamp_bits >= 64 ? ~0ull : (1ull << vk->timestamp_bits) - 1;
    double ns = vk->props.limits.timestampPeriod;
    for (int32_t l = 0; l < n; ++l) vk->profile_ms[l] += (double)((t[l + 1] - t[l]) & mask) * ns / 1e6;
    vk->launch_ms = (double)((t[n] - t[0]) & mask) * ns / 1e6;
    vk->profile_runs++;
  }
  free(t);
}

/* As the other backends print it: the mean per launch over all runs, slowest first. */
void tgc_vk_print_profile(const tgc_vk* vk) {
  if (!vk->profile_ms || vk->profile_runs == 0 || !profiling()) return;
  char title[64], suffix[400];
  snprintf(title, sizeof title, "%lld runs", (long long)vk->profile_runs);
  snprintf(suffix, sizeof suffix, " of GPU time (timestamps; one barrier per dispatch while profiling) on '%s'",
           vk->props.deviceName);
  tgc_print_profile(vk->desc, vk->profile_ms, vk->profile_runs, title, suffix);
}
