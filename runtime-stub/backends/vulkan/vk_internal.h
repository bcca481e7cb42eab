/* What the Vulkan backend's files share (vulkan.c: instance, device, the backend table;
 * vk_memory.c: buffers, memory, staging; vk_pipelines.c: pipelines and their on-disk cache;
 * vk_record.c: the model's command buffer and TGC_PROFILE). Not part of the ABI. */
#ifndef TGC_VK_INTERNAL_H
#define TGC_VK_INTERNAL_H
#include "backends/gpu_common.h"
#include "core/runtime_internal.h"
#include "volk.h"

typedef struct {
  const tgc_model_desc* desc;
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  int messages; /* validation messages so far (TGC_VK_VALIDATION=1) */
  char first_message[400];
  VkPhysicalDevice phys;
  VkPhysicalDeviceProperties props;
  VkPhysicalDeviceSubgroupProperties subgroup;
  VkPhysicalDeviceFeatures features;      /* the enabled core features */
  int storage16, storage8, float16, int8; /* enabled extension features */
  uint32_t timestamp_bits;                /* of the compute queue family; 0: no timestamps */
  VkDevice device;
  VkQueue queue;
  uint32_t queue_family;

  /* Memory (vk_memory.c). `direct`: the kernels' memory is host-visible and the host reads and
   * writes it through `mapped`; otherwise it is device-local only and inputs/outputs pass through
   * `staging`, copied by the command buffer itself. */
  int direct;
  VkDeviceMemory memory;
  int64_t device_bytes; /* its size */
  unsigned char* mapped;
  VkBuffer arena;
  VkBuffer* own;        /* per desc buffer: its own VkBuffer, or VK_NULL_HANDLE for arena ranges */
  VkBuffer* bound;      /* per desc buffer: the VkBuffer its descriptors name */
  VkDeviceSize* offset; /* per desc buffer: its offset in `bound` */
  unsigned char** host; /* per desc buffer: where the host reads/writes it (mapped or staging), or NULL */
  VkDeviceMemory staging_memory;
  VkBuffer staging;
  unsigned char* staging_mapped;
  VkDeviceSize* staging_at; /* per desc buffer: its offset in `staging` (inputs and outputs) */

  /* Pipelines (vk_pipelines.c). */
  VkPipelineCache cache;
  size_t cache_loaded; /* bytes of driver data loaded from the cache file; 0 when none */
  char cache_path[1024];
  VkShaderModule* modules;
  VkDescriptorSetLayout* set_layouts;
  VkPipelineLayout* layouts;
  VkPipeline* pipelines; /* per launch */
  char* borrowed;        /* per launch: its module, layouts and pipeline are an earlier launch's */
  VkDescriptorPool pool;
  VkDescriptorSet* sets; /* per launch */
  int prepared;

  /* The model's command buffer (vk_record.c), recorded again when a launch's work or a copy's
   * size changes (the run-time dims' values are read from the vars buffer). */
  VkCommandPool cmd_pool;
  VkCommandBuffer cmd;
  VkFence fence;
  int recorded;
  int64_t* sizes;      /* per launch its work items, then per buffer its bytes at the run's sizes:
                          the recording's, then this run's */
  int32_t barriers;    /* pipeline barriers between dispatches in the recording */
  VkQueryPool queries; /* TGC_PROFILE: a timestamp before the first dispatch and after each */
  double* profile_ms;  /* per launch, summed over runs */
  int64_t profile_runs;
  double launch_ms; /* the last run's, from the timestamps; -1 without them */
} tgc_vk;

const char* tgc_vk_err(VkResult r);
/* Fails with the first validation message when there were any (TGC_VK_VALIDATION=1). */
int tgc_vk_check_messages(tgc_vk* vk, const char* when);

/* vk_memory.c */
int tgc_vk_make_memory(tgc_vk* vk, tgc_model* m);
void tgc_vk_free_memory(tgc_vk* vk);
/* Copies host bytes into device buffer b now (one-shot submit): staging-path uploads of what the
 * recorded command buffer does not copy (STATE from tgc_reset_state). */
int tgc_vk_copy_to_device(tgc_vk* vk, int32_t b, const void* src);
/* Is buffer b copied in (INPUT) or out (OUTPUT) by the recorded command buffer? */
int tgc_vk_staged_input(const tgc_vk* vk, int32_t b);
int tgc_vk_staged_output(const tgc_vk* vk, int32_t b);

/* vk_pipelines.c: pipelines and descriptor sets of every launch, the cache loaded before and
 * saved after. */
int tgc_vk_prepare(tgc_vk* vk);
void tgc_vk_free_pipelines(tgc_vk* vk);

/* vk_record.c */
int tgc_vk_record(tgc_vk* vk, tgc_model* m);
int tgc_vk_needs_recording(const tgc_vk* vk, const tgc_model* m);
void tgc_vk_collect_profile(tgc_vk* vk); /* after a run's fence, with TGC_PROFILE */
void tgc_vk_print_profile(const tgc_vk* vk);

#endif
