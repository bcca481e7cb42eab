/* Vulkan backend: buffers and memory. Every kernel buffer is a VkBuffer (the arena one buffer
 * whose parts are descriptor ranges) bound into one device-local allocation.
 *   direct:  on unified-memory devices (integrated GPUs such as Adreno, CPU devices such as
 *            lavapipe) that memory is also host-visible, so the host writes inputs and reads
 *            outputs through the mapping;
 *   staged:  elsewhere (discrete GPUs: NVIDIA, AMD) it is device-local only; each input and output
 *            has a slot in a host-visible staging buffer, and the recorded command buffer copies
 *            inputs in before the first dispatch and outputs out after the last. Weights and STATE
 *            go up once through a temporary staging buffer and a one-shot submit.
 * TGC_VK_STAGING=1 forces the staged path on any device (so lavapipe tests it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_internal.h"

static int env_on(const char* name) {
  const char* v = getenv(name);
  return v && v[0] && strcmp(v, "0") != 0;
}

static int make_buffer(tgc_vk* vk, VkDeviceSize size, VkBuffer* out) {
  VkBufferCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = size > 16 ? size : 16, /* Vulkan has no empty buffers */
      .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  VkResult r = vkCreateBuffer(vk->device, &ci, NULL, out);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: vkCreateBuffer (%llu bytes) failed: %s (%d)", (unsigned long long)size,
                  tgc_vk_err(r), (int)r);
    return -1;
  }
  return 0;
}

/* The first memory type allowed by `bits` that has every flag of `want` and none of `avoid`. */
static int find_type(const VkPhysicalDeviceMemoryProperties* mp, uint32_t bits, VkMemoryPropertyFlags want,
                     VkMemoryPropertyFlags avoid) {
  for (uint32_t i = 0; i < mp->memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
    if ((bits & (1u << i)) && (f & want) == want && !(f & avoid)) return (int)i;
  }
  return -1;
}

static int allocate(tgc_vk* vk, VkDeviceSize size, int type, VkDeviceMemory* out, const char* what) {
  VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                             .allocationSize = size ? size : 16,
                             .memoryTypeIndex = (uint32_t)type};
  VkResult r = vkAllocateMemory(vk->device, &ai, NULL, out);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: cannot allocate %llu bytes of %s on '%s': %s (%d)", (unsigned long long)size, what,
                  vk->props.deviceName, tgc_vk_err(r), (int)r);
    return -1;
  }
  return 0;
}

/* Host-visible coherent memory for staging, cached where possible (the host reads outputs back;
 * *cached says whether it is, where cached is not NULL). */
static int staging_type(tgc_vk* vk, uint32_t bits, int* cached) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(vk->phys, &mp);
  VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int t = find_type(&mp, bits, hv | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
  if (cached) *cached = t >= 0;
  if (t < 0) t = find_type(&mp, bits, hv, 0);
  if (t < 0)
    tgc_set_error("Vulkan backend: '%s' has no host-visible coherent memory for staging", vk->props.deviceName);
  return t;
}

/* A host-visible buffer of `size` bytes, mapped; *cached when the host caches it (cached may be NULL). */
static int make_staging(tgc_vk* vk, VkDeviceSize size, VkBuffer* buf, VkDeviceMemory* mem, unsigned char** mapped,
                        int* cached) {
  if (make_buffer(vk, size, buf) != 0) return -1;
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(vk->device, *buf, &req);
  int type = staging_type(vk, req.memoryTypeBits, cached);
  if (type < 0 || allocate(vk, req.size, type, mem, "staging memory") != 0) return -1;
  VkResult r = vkBindBufferMemory(vk->device, *buf, *mem, 0);
  if (r == VK_SUCCESS) r = vkMapMemory(vk->device, *mem, 0, VK_WHOLE_SIZE, 0, (void**)mapped);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: mapping staging memory failed: %s (%d)", tgc_vk_err(r), (int)r);
    return -1;
  }
  return 0;
}

int tgc_vk_staged_input(const tgc_vk* vk, int32_t b) {
  const tgc_buffer* x = &vk->desc->buffers[b];
  return !vk->direct && (x->storage == TGC_STORAGE_INPUT || b == vk->desc->vars_buffer) && x->nbytes > 0;
}

int tgc_vk_staged_output(const tgc_vk* vk, int32_t b) {
  const tgc_buffer* x = &vk->desc->buffers[b];
  return !vk->direct && x->storage == TGC_STORAGE_OUTPUT && x->nbytes > 0;
}

/* Copies srcs[i] (nbytes of buffer bufs[i]) to the device through a temporary staging buffer and
 * one submit, waited for. */
static int upload_now(tgc_vk* vk, const int32_t* bufs, const void* const* srcs, int32_t n) {
  const tgc_model_desc* d = vk->desc;
  VkDeviceSize total = 0;
  for (int32_t i = 0; i < n; ++i) total += ((VkDeviceSize)d->buffers[bufs[i]].nbytes + 63) / 64 * 64;
  if (total == 0) return 0;
  VkBuffer buf = VK_NULL_HANDLE;
  VkDeviceMemory mem = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  unsigned char* mapped;
  int rc = -1;
  if (make_staging(vk, total, &buf, &mem, &mapped, NULL) != 0) goto done;
  VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                    .commandPool = vk->cmd_pool,
                                    .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                    .commandBufferCount = 1};
  VkResult r = vkAllocateCommandBuffers(vk->device, &ai, &cmd);
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                 .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  if (r == VK_SUCCESS) r = vkBeginCommandBuffer(cmd, &bi);
  VkDeviceSize at = 0;
  for (int32_t i = 0; i < n && r == VK_SUCCESS; ++i) {
    int32_t b = bufs[i];
    VkDeviceSize nbytes = (VkDeviceSize)d->buffers[b].nbytes;
    if (nbytes == 0) continue;
    memcpy(mapped + at, srcs[i], (size_t)nbytes);
    VkBufferCopy region = {.srcOffset = at, .dstOffset = vk->offset[b], .size = nbytes};
    vkCmdCopyBuffer(cmd, buf, vk->bound[b], 1, &region);
    at += (nbytes + 63) / 64 * 64;
  }
  /* The copies reach the kernels of later submits. */
  VkMemoryBarrier done_copy = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                               .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                               .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
  if (r == VK_SUCCESS) {
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &done_copy, 0,
                         NULL, 0, NULL);
    r = vkEndCommandBuffer(cmd);
  }
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
  if (r == VK_SUCCESS) r = vkResetFences(vk->device, 1, &vk->fence);
  if (r == VK_SUCCESS) r = vkQueueSubmit(vk->queue, 1, &si, vk->fence);
  if (r == VK_SUCCESS) r = vkWaitForFences(vk->device, 1, &vk->fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: copying %llu bytes to '%s' failed: %s (%d)", (unsigned long long)total,
                  vk->props.deviceName, tgc_vk_err(r), (int)r);
    goto done;
  }
  rc = 0;
done:
  if (cmd) vkFreeCommandBuffers(vk->device, vk->cmd_pool, 1, &cmd);
  if (buf) vkDestroyBuffer(vk->device, buf, NULL);
  if (mem) vkFreeMemory(vk->device, mem, NULL);
  return rc;
}

int tgc_vk_copy_to_device(tgc_vk* vk, int32_t b, const void* src) { return upload_now(vk, &b, &src, 1); }

/* The arena is one VkBuffer whose buffers are descriptor ranges; every other buffer (and an arena
 * buffer off the device's offset alignment that shares no memory) is its own VkBuffer. */
static int make_buffers(tgc_vk* vk) {
  const tgc_model_desc* d = vk->desc;
  VkDeviceSize align = vk->props.limits.minStorageBufferOffsetAlignment;
  if (d->arena_size > 0 && make_buffer(vk, (VkDeviceSize)d->arena_size, &vk->arena) != 0) return -1;
  for (int32_t i = 0; i < d->num_buffers; ++i) {
    const tgc_buffer* b = &d->buffers[i];
    /* A kernel sees a buffer through one storage-buffer descriptor (lavapipe: 128 MiB at most). */
    if ((uint64_t)b->nbytes > vk->props.limits.maxStorageBufferRange) {
      tgc_set_error(
          "Vulkan backend: buffer '%s' has %lld bytes; '%s' lets a kernel address at most %u "
          "(maxStorageBufferRange)",
          b->name ? b->name : "?", (long long)b->nbytes, vk->props.deviceName, vk->props.limits.maxStorageBufferRange);
      return -1;
    }
    int in_arena = b->storage == TGC_STORAGE_ARENA && b->nbytes > 0 && (VkDeviceSize)b->offset % align == 0;
    if (b->storage == TGC_STORAGE_ARENA && !in_arena && b->nbytes > 0 && tgc_arena_overlaps(d, i)) {
      tgc_set_error(
          "Vulkan backend: arena buffer '%s' at offset %lld shares memory with another buffer but is not "
          "aligned to the device's %llu-byte storage buffer offset alignment ('%s')",
          b->name ? b->name : "?", (long long)b->offset, (unsigned long long)align, vk->props.deviceName);
      return -1;
    }
    if (in_arena) {
      vk->bound[i] = vk->arena;
      vk->offset[i] = (VkDeviceSize)b->offset;
    } else {
      if (make_buffer(vk, (VkDeviceSize)b->nbytes, &vk->own[i]) != 0) return -1;
      vk->bound[i] = vk->own[i];
    }
  }
  return 0;
}

/* Chooses direct or staged memory for buffers allowed in memory types `bits`. */
static int choose_memory(tgc_vk* vk, uint32_t bits) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(vk->phys, &mp);
  VkMemoryPropertyFlags dl = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  VkPhysicalDeviceType t = vk->props.deviceType;
  int unified = t == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU || t == VK_PHYSICAL_DEVICE_TYPE_CPU;
  int shared_type = find_type(&mp, bits, dl | hv, 0);
  /* Device-local memory the host cannot see first: on a discrete GPU a host-visible device-local
   * type is the small PCIe window (BAR), slow for the host to read. */
  int local_type = find_type(&mp, bits, dl, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  if (local_type < 0) local_type = find_type(&mp, bits, dl, 0);
  int type;
  if (unified && shared_type >= 0 && !env_on("TGC_VK_STAGING")) {
    vk->direct = 1, type = shared_type;
  } else if (local_type >= 0) {
    vk->direct = 0, type = local_type;
  } else { /* no device-local memory at all: host memory the device reads */
    vk->direct = 1, type = find_type(&mp, bits, hv, 0);
    if (type < 0) {
      tgc_set_error("Vulkan backend: '%s' has neither device-local nor host-visible memory for the model's buffers",
                    vk->props.deviceName);
      return -1;
    }
  }
  if (tgc_gpu_verbose())
    fprintf(stderr, "tgc: vulkan: memory type %d (%s), %s\n", type,
            (mp.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) ? "device-local, host-visible"
                                                                                       : "device-local",
            vk->direct ? "inputs and outputs through the mapping" : "inputs and outputs through staging copies");
  return type;
}

/* Callers read and write an input's or output's host view itself where the host caches that
 * memory, so a run copies nothing on the host (as the CUDA backend does with its pinned staging).
 * A batched buffer moves by a sample per run and keeps the runtime's memory. */
static void adopt_host_view(tgc_vk* vk, tgc_model* model, int32_t i) {
  const tgc_buffer* b = &vk->desc->buffers[i];
  if ((b->storage != TGC_STORAGE_INPUT && b->storage != TGC_STORAGE_OUTPUT) || b->batched || b->nbytes <= 0 ||
      i == vk->desc->vars_buffer)
    return;
  tgc_adopt_host_memory(model, i, vk->host[i]);
}

static int host_cached(tgc_vk* vk, int type) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(vk->phys, &mp);
  return (mp.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) != 0;
}

/* A model larger than the memory heap it would live in fails in one line, before allocating. */
static int fits_heap(tgc_vk* vk, VkDeviceSize total, int type) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(vk->phys, &mp);
  VkDeviceSize heap = mp.memoryHeaps[mp.memoryTypes[type].heapIndex].size;
  if (total <= heap) return 0;
  tgc_set_error("Vulkan backend: the model needs %llu bytes of device memory; '%s' has a heap of %llu",
                (unsigned long long)total, vk->props.deviceName, (unsigned long long)heap);
  return -1;
}

int tgc_vk_make_memory(tgc_vk* vk, tgc_model* model) {
  const tgc_model_desc* d = vk->desc;
  int32_t n = d->num_buffers;
  if (make_buffers(vk) != 0) return -1;
  /* Lay the VkBuffers out in one allocation: the arena first, then the own ones. */
  VkDeviceSize* at = calloc((size_t)n + 1, sizeof *at); /* [n]: the arena */
  if (!at) return tgc_set_error("out of memory"), -1;
  VkDeviceSize total = 0;
  uint32_t bits = ~0u;
  for (int32_t i = -1; i < n; ++i) {
    VkBuffer buf = i < 0 ? vk->arena : vk->own[i];
    if (buf == VK_NULL_HANDLE) continue;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->device, buf, &req);
    total = (total + req.alignment - 1) / req.alignment * req.alignment;
    at[i < 0 ? n : i] = total;
    total += req.size;
    bits &= req.memoryTypeBits;
  }
  int type = choose_memory(vk, bits);
  if (type < 0 || fits_heap(vk, total, type) != 0 ||
      allocate(vk, total, type, &vk->memory, "device memory for the model's buffers") != 0)
    return free(at), -1;
  vk->device_bytes = (int64_t)total;
  VkResult r = VK_SUCCESS;
  if (vk->direct) r = vkMapMemory(vk->device, vk->memory, 0, VK_WHOLE_SIZE, 0, (void**)&vk->mapped);
  for (int32_t i = -1; i < n && r == VK_SUCCESS; ++i) {
    VkBuffer buf = i < 0 ? vk->arena : vk->own[i];
    if (buf != VK_NULL_HANDLE) r = vkBindBufferMemory(vk->device, buf, vk->memory, at[i < 0 ? n : i]);
  }
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: mapping or binding buffer memory failed: %s (%d)", tgc_vk_err(r), (int)r);
    return free(at), -1;
  }
  if (vk->direct) {
    int cached = host_cached(vk, type);
    if (tgc_gpu_verbose() && cached)
      fprintf(stderr, "tgc: vulkan: inputs and outputs are read and written in place (host-cached memory)\n");
    for (int32_t i = 0; i < n; ++i) {
      vk->host[i] = vk->mapped + (vk->own[i] != VK_NULL_HANDLE ? at[i] : at[n] + vk->offset[i]);
      const tgc_buffer* b = &d->buffers[i];
      if ((b->storage == TGC_STORAGE_WEIGHT || b->storage == TGC_STORAGE_STATE) && b->nbytes > 0)
        memcpy(vk->host[i], model->buf[i], (size_t)b->nbytes);
      if (cached) adopt_host_view(vk, model, i);
    }
    free(at);
    return 0;
  }
  free(at);
  /* Staged: a slot per input and output, then the weights and STATE go up once. */
  VkDeviceSize slots = 0;
  for (int32_t i = 0; i < n; ++i)
    if (tgc_vk_staged_input(vk, i) || tgc_vk_staged_output(vk, i)) {
      vk->staging_at[i] = slots;
      slots += ((VkDeviceSize)d->buffers[i].nbytes + 63) / 64 * 64;
    }
  int cached;
  if (make_staging(vk, slots, &vk->staging, &vk->staging_memory, &vk->staging_mapped, &cached) != 0) return -1;
  if (tgc_gpu_verbose() && cached)
    fprintf(stderr,
            "tgc: vulkan: inputs and outputs are read and written in their staging slots (host-cached memory)\n");
  for (int32_t i = 0; i < n; ++i)
    if (tgc_vk_staged_input(vk, i) || tgc_vk_staged_output(vk, i)) {
      vk->host[i] = vk->staging_mapped + vk->staging_at[i];
      if (cached) adopt_host_view(vk, model, i);
    }
  int32_t* once = calloc((size_t)n + 1, sizeof *once);
  const void** src = calloc((size_t)n + 1, sizeof *src);
  int32_t k = 0;
  if (!once || !src) return free(once), free(src), tgc_set_error("out of memory"), -1;
  for (int32_t i = 0; i < n; ++i) {
    const tgc_buffer* b = &d->buffers[i];
    if ((b->storage == TGC_STORAGE_WEIGHT || b->storage == TGC_STORAGE_STATE) && b->nbytes > 0)
      once[k] = i, src[k++] = model->buf[i];
  }
  int rc = upload_now(vk, once, src, k);
  free(once);
  free(src);
  return rc;
}

void tgc_vk_free_memory(tgc_vk* vk) {
  for (int32_t i = 0; vk->own && i < vk->desc->num_buffers; ++i)
    if (vk->own[i]) vkDestroyBuffer(vk->device, vk->own[i], NULL);
  if (vk->arena) vkDestroyBuffer(vk->device, vk->arena, NULL);
  if (vk->memory) vkFreeMemory(vk->device, vk->memory, NULL);
  if (vk->staging) vkDestroyBuffer(vk->device, vk->staging, NULL);
  if (vk->staging_memory) vkFreeMemory(vk->device, vk->staging_memory, NULL);
}
