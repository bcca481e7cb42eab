/* Vulkan backend: a compute pipeline per launch (SPIR-V blob, work-group size as specialization
 * constant 0), its descriptor set, and the pipeline cache on
 * disk: $TGC_VK_CACHE, else $XDG_CACHE_HOME/tgc, else ~/.cache/tgc, one file per model build and
 * device, named by a hash of the kernels and the device's pipelineCacheUUID. A file is used only
 * when its checksum and the driver's header (vendor, device, cache UUID) match; anything else
 * (truncated, corrupt, another driver's) is ignored and rewritten, since drivers are not required
 * to survive bad cache data. Writes go to a temporary file renamed into place. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/vulkan/vk_internal.h"

#define CACHE_MAGIC "TGCVKPC1" /* then u64 payload bytes, u64 FNV-1a of the payload, the payload */

/* ---------------------------------------------------------------- the cache file */

static void cache_path(tgc_vk* vk) {
  const tgc_model_desc* d = vk->desc;
  char base[900];
  if (tgc_gpu_cache_dir("TGC_VK_CACHE", base, sizeof base) != 0) return; /* nowhere to keep it */
  uint64_t h = TGC_FNV1A_BASIS;
  for (int32_t l = 0; l < d->num_launches; ++l) {
    const tgc_launch* L = &d->launches[l];
    h = tgc_fnv1a(h, L->blob, (size_t)L->blob_size);
    h = tgc_fnv1a(h, &L->local_size[0], sizeof L->local_size[0]);
  }
  char uuid[2 * VK_UUID_SIZE + 1];
  for (unsigned i = 0; i < VK_UUID_SIZE; ++i) snprintf(uuid + 2 * i, 3, "%02x", vk->props.pipelineCacheUUID[i]);
  snprintf(vk->cache_path, sizeof vk->cache_path, "%s/vk-%016llx-%s.pipelines", base, (unsigned long long)h, uuid);
}

/* The driver's data from the cache file, or NULL (and *why) when there is none to trust. */
static void* read_cache(tgc_vk* vk, size_t* size, const char** why) {
  FILE* f = fopen(vk->cache_path, "rb");
  if (!f) return *why = "no cache file yet", NULL;
  unsigned char head[24];
  void* data = NULL;
  *why = "truncated";
  if (fread(head, 1, sizeof head, f) == sizeof head) {
    uint64_t n, sum;
    memcpy(&n, head + 8, 8);
    memcpy(&sum, head + 16, 8);
    const uint32_t* h32 = NULL;
    if (memcmp(head, CACHE_MAGIC, 8) != 0)
      *why = "not a tgc pipeline cache";
    else if (n < 32 || n > ((uint64_t)1 << 31) || !(data = malloc((size_t)n)))
      *why = "bad size";
    else if (fread(data, 1, (size_t)n, f) != n || fgetc(f) != EOF)
      *why = "truncated or overlong";
    else if (tgc_fnv1a(TGC_FNV1A_BASIS, data, (size_t)n) != sum)
      *why = "checksum mismatch";
    else if ((h32 = data), h32[0] < 32 || h32[0] > n || h32[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
      *why = "unknown driver header";
    else if (h32[2] != vk->props.vendorID || h32[3] != vk->props.deviceID ||
             memcmp((const unsigned char*)data + 16, vk->props.pipelineCacheUUID, VK_UUID_SIZE) != 0)
      *why = "another device or driver";
    else
      *why = NULL, *size = (size_t)n;
  }
  fclose(f);
  if (*why) free(data), data = NULL;
  return data;
}

static void load_cache(tgc_vk* vk) {
  cache_path(vk);
  size_t size = 0;
  const char* why = "no cache directory (no HOME)";
  void* data = vk->cache_path[0] ? read_cache(vk, &size, &why) : NULL;
  VkPipelineCacheCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO, .initialDataSize = data ? size : 0, .pInitialData = data};
  VkResult r = vkCreatePipelineCache(vk->device, &ci, NULL, &vk->cache);
  if (r != VK_SUCCESS && data) { /* the driver refused it after all: start empty */
    why = "refused by the driver";
    ci.initialDataSize = 0, ci.pInitialData = NULL;
    r = vkCreatePipelineCache(vk->device, &ci, NULL, &vk->cache);
  }
  if (r != VK_SUCCESS) vk->cache = VK_NULL_HANDLE; /* pipelines are made without one */
  vk->cache_loaded = r == VK_SUCCESS && !why ? size : 0;
  if (tgc_gpu_verbose()) {
    if (!why)
      fprintf(stderr, "tgc: vulkan: pipeline cache %s: loaded %zu bytes\n", vk->cache_path, size);
    else
      fprintf(stderr, "tgc: vulkan: pipeline cache %s: not used (%s)\n", vk->cache_path, why);
  }
  free(data);
}

/* Saves the cache when the pipelines added to it (a failure to save costs only the next start-up). */
static void save_cache(tgc_vk* vk) {
  size_t size = 0;
  if (!vk->cache || !vk->cache_path[0] || vkGetPipelineCacheData(vk->device, vk->cache, &size, NULL) != VK_SUCCESS ||
      size < 32 || size == vk->cache_loaded)
    return;
  unsigned char* data = malloc(size);
  if (!data) return;
  const char* why = NULL;
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", vk->cache_path, (long)getpid());
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", vk->cache_path);
  char* slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  if (vkGetPipelineCacheData(vk->device, vk->cache, &size, data) != VK_SUCCESS)
    why = "the driver gave no data";
  else if (slash && tgc_mkdirs(dir) != 0)
    why = strerror(errno);
  else {
    FILE* f = fopen(tmp, "wb");
    uint64_t n = size, sum = tgc_fnv1a(TGC_FNV1A_BASIS, data, size);
    int ok = f && fwrite(CACHE_MAGIC, 1, 8, f) == 8 && fwrite(&n, 8, 1, f) == 1 && fwrite(&sum, 8, 1, f) == 1 &&
             fwrite(data, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, vk->cache_path) != 0) why = "cannot write it", remove(tmp);
  }
  if (tgc_gpu_verbose()) {
    if (why)
      fprintf(stderr, "tgc: vulkan: pipeline cache %s: not saved (%s)\n", vk->cache_path, why);
    else
      fprintf(stderr, "tgc: vulkan: pipeline cache %s: saved %zu bytes\n", vk->cache_path, size);
  }
  free(data);
}

/* ---------------------------------------------------------------- pipelines */

/* Test hook: TGC_VK_HIDE=subgroup-arithmetic (float16, storage16...) makes the device look as if
 * it lacked that feature, so the one-line error for a missing feature, or the fallback kernel that
 * avoids it, can be checked on a device that has it. */
static int hidden(const char* feature) {
  const char* h = getenv("TGC_VK_HIDE");
  return h && strstr(h, feature) != NULL;
}

static int has_subgroup(const tgc_vk* vk, VkSubgroupFeatureFlags op, const char* name) {
  return (vk->subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (vk->subgroup.supportedOperations & op) &&
         !hidden(name);
}

/* The first device feature that SPIR-V `w` (n words) declares a need for and the device lacks
 * (what was enabled), or NULL. */
static const char* missing_feature(const tgc_vk* vk, const uint32_t* w, size_t n) {
  for (size_t i = 5; i < n;) {
    uint32_t words = w[i] >> 16, op = w[i] & 0xffff;
    if (words == 0 || i + words > n) break;
    if (op == 17 /* OpCapability */ && words == 2) {
      const char* need = NULL;
      switch (w[i + 1]) {
        case 9: need = vk->float16 && !hidden("float16") ? NULL : "shaderFloat16"; break;
        case 10: need = vk->features.shaderFloat64 ? NULL : "shaderFloat64"; break;
        case 11: need = vk->features.shaderInt64 ? NULL : "shaderInt64"; break;
        case 22: need = vk->features.shaderInt16 ? NULL : "shaderInt16"; break;
        case 39: need = vk->int8 ? NULL : "shaderInt8"; break;
        case 4433: need = vk->storage16 && !hidden("storage16") ? NULL : "storageBuffer16BitAccess"; break;
        case 4448: need = vk->storage8 ? NULL : "storageBuffer8BitAccess"; break;
        case 61:
          need = has_subgroup(vk, VK_SUBGROUP_FEATURE_BASIC_BIT, "subgroup-basic")
                     ? NULL
                     : "subgroup operations in compute shaders";
          break;
        case 63:
          need = has_subgroup(vk, VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "subgroup-arithmetic")
                     ? NULL
                     : "subgroup arithmetic in compute shaders";
          break;
      }
      if (need) return need;
    }
    i += words;
  }
  return NULL;
}

/* The launch's SPIR-V on this device: its own, or where the device lacks a feature it needs, the
 * one without optional features that the launch may carry (tgc_launch.fallback_blob). */
static const uint32_t* launch_code(tgc_vk* vk, const tgc_launch* L, size_t* bytes) {
  const char* need = missing_feature(vk, L->blob, (size_t)L->blob_size / 4);
  *bytes = (size_t)L->blob_size;
  if (!need) return L->blob;
  if (L->fallback_blob && !missing_feature(vk, L->fallback_blob, (size_t)L->fallback_blob_size / 4)) {
    *bytes = (size_t)L->fallback_blob_size;
    return L->fallback_blob;
  }
  tgc_set_error("Vulkan backend: kernel '%s' needs %s, which '%s' does not have", L->name, need, vk->props.deviceName);
  return NULL;
}

static int make_pipeline(tgc_vk* vk, int32_t l) {
  const tgc_model_desc* d = vk->desc;
  const tgc_launch* L = &d->launches[l];
  const VkPhysicalDeviceLimits* lim = &vk->props.limits;
  if (L->local_size[0] < 1 || L->local_size[0] > lim->maxComputeWorkGroupInvocations ||
      L->local_size[0] > lim->maxComputeWorkGroupSize[0]) {
    tgc_set_error("Vulkan backend: kernel '%s' has work-groups of %lld threads; '%s' allows at most %u", L->name,
                  (long long)L->local_size[0], vk->props.deviceName, lim->maxComputeWorkGroupInvocations);
    return -1;
  }
  if (L->num_buffers > 64) return tgc_set_error("Vulkan backend: kernel '%s' has more than 64 buffers", L->name), -1;
  VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  if (!(mi.pCode = launch_code(vk, L, &mi.codeSize))) return -1;
  VkResult r = vkCreateShaderModule(vk->device, &mi, NULL, &vk->modules[l]);
  VkDescriptorSetLayoutBinding bind[64];
  for (int32_t i = 0; i < L->num_buffers; ++i)
    bind[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i,
                                             .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                             .descriptorCount = 1,
                                             .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
  VkDescriptorSetLayoutCreateInfo si = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                        .bindingCount = (uint32_t)L->num_buffers,
                                        .pBindings = bind};
  if (r == VK_SUCCESS) r = vkCreateDescriptorSetLayout(vk->device, &si, NULL, &vk->set_layouts[l]);
  VkPipelineLayoutCreateInfo pi = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1, .pSetLayouts = &vk->set_layouts[l]};
  if (r == VK_SUCCESS) r = vkCreatePipelineLayout(vk->device, &pi, NULL, &vk->layouts[l]);
  uint32_t local = (uint32_t)L->local_size[0];
  VkSpecializationMapEntry entry = {.constantID = 0, .offset = 0, .size = sizeof local};
  VkSpecializationInfo spec = {.mapEntryCount = 1, .pMapEntries = &entry, .dataSize = sizeof local, .pData = &local};
  VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                    .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                              .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                                              .module = vk->modules[l],
                                              .pName = "main",
                                              .pSpecializationInfo = &spec},
                                    .layout = vk->layouts[l]};
  if (r == VK_SUCCESS) r = vkCreateComputePipelines(vk->device, vk->cache, 1, &ci, NULL, &vk->pipelines[l]);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: creating the pipeline of kernel '%s' on '%s' failed: %s (%d)", L->name,
                  vk->props.deviceName, tgc_vk_err(r), (int)r);
    return -1;
  }
  return 0;
}

/* Descriptor sets: they name buffers, which never move, so they are written once. */
static int make_sets(tgc_vk* vk) {
  const tgc_model_desc* d = vk->desc;
  uint32_t sets = 0, descriptors = 0;
  for (int32_t l = 0; l < d->num_launches; ++l)
    if (d->launches[l].global_size[0] > 0) sets++, descriptors += (uint32_t)d->launches[l].num_buffers;
  VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                               .descriptorCount = descriptors ? descriptors : 1};
  VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                    .maxSets = sets ? sets : 1,
                                    .poolSizeCount = 1,
                                    .pPoolSizes = &size};
  VkResult r = vkCreateDescriptorPool(vk->device, &pci, NULL, &vk->pool);
  for (int32_t l = 0; l < d->num_launches && r == VK_SUCCESS; ++l) {
    const tgc_launch* L = &d->launches[l];
    if (L->global_size[0] <= 0) continue;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = vk->pool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &vk->set_layouts[l]};
    if ((r = vkAllocateDescriptorSets(vk->device, &ai, &vk->sets[l])) != VK_SUCCESS) break;
    VkDescriptorBufferInfo info[64];
    VkWriteDescriptorSet w[64];
    for (int32_t i = 0; i < L->num_buffers; ++i) {
      int32_t b = L->buffers[i];
      VkDeviceSize range = vk->own[b] != VK_NULL_HANDLE ? VK_WHOLE_SIZE : (VkDeviceSize)d->buffers[b].nbytes;
      info[i] = (VkDescriptorBufferInfo){vk->bound[b], vk->offset[b], range};
      w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                    .dstSet = vk->sets[l],
                                    .dstBinding = (uint32_t)i,
                                    .descriptorCount = 1,
                                    .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                    .pBufferInfo = &info[i]};
    }
    vkUpdateDescriptorSets(vk->device, (uint32_t)L->num_buffers, w, 0, NULL);
  }
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: allocating descriptor sets failed: %s (%d)", tgc_vk_err(r), (int)r);
    return -1;
  }
  return 0;
}

/* An earlier launch with the same SPIR-V, work-group size and buffer count, whose pipeline this
 * one can use (its own descriptor set names its own buffers), or -1. Repeated blocks of a model
 * repeat kernels; the tuning agent launches one kernel several times. */
static int32_t same_pipeline(const tgc_vk* vk, int32_t l) {
  const tgc_launch* L = &vk->desc->launches[l];
  for (int32_t j = 0; j < l; ++j) {
    const tgc_launch* J = &vk->desc->launches[j];
    if (J->global_size[0] > 0 && !vk->borrowed[j] && J->blob_size == L->blob_size &&
        J->local_size[0] == L->local_size[0] && J->num_buffers == L->num_buffers &&
        (J->blob == L->blob || memcmp(J->blob, L->blob, (size_t)L->blob_size) == 0))
      return j;
  }
  return -1;
}

int tgc_vk_prepare(tgc_vk* vk) {
  const tgc_model_desc* d = vk->desc;
  load_cache(vk);
  int made = 0, reused = 0;
  for (int32_t l = 0; l < d->num_launches; ++l) {
    if (d->launches[l].global_size[0] <= 0) continue;
    int32_t j = same_pipeline(vk, l);
    if (j < 0) {
      if (make_pipeline(vk, l) != 0) return -1;
      made++;
      continue;
    }
    reused++;
    vk->borrowed[l] = 1;
    vk->modules[l] = vk->modules[j], vk->set_layouts[l] = vk->set_layouts[j];
    vk->layouts[l] = vk->layouts[j], vk->pipelines[l] = vk->pipelines[j];
  }
  if (tgc_gpu_verbose()) fprintf(stderr, "tgc: vulkan: %d pipelines made, %d launches reuse one\n", made, reused);
  save_cache(vk);
  if (make_sets(vk) != 0) return -1;
  vk->prepared = 1;
  return 0;
}

void tgc_vk_free_pipelines(tgc_vk* vk) {
  for (int32_t l = 0; l < vk->desc->num_launches; ++l) {
    if (vk->borrowed && vk->borrowed[l]) continue; /* its owner frees them */
    if (vk->pipelines && vk->pipelines[l]) vkDestroyPipeline(vk->device, vk->pipelines[l], NULL);
    if (vk->layouts && vk->layouts[l]) vkDestroyPipelineLayout(vk->device, vk->layouts[l], NULL);
    if (vk->set_layouts && vk->set_layouts[l]) vkDestroyDescriptorSetLayout(vk->device, vk->set_layouts[l], NULL);
    if (vk->modules && vk->modules[l]) vkDestroyShaderModule(vk->device, vk->modules[l], NULL);
  }
  if (vk->pool) vkDestroyDescriptorPool(vk->device, vk->pool, NULL);
  if (vk->cache) vkDestroyPipelineCache(vk->device, vk->cache, NULL);
}
