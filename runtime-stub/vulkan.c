/* Vulkan backend: libvulkan.so.1 through volk (loaded at create, no link-time dependency). All
 * buffers live in one host-visible memory allocation (device-local where the device has such
 * memory: unified-memory GPUs, lavapipe), so uploads and output reads are memcpys; the weights and
 * the zeroed STATE are written once at create. At the first run every launch gets its pipeline
 * (SPIR-V blob, work-group size as specialization constant 0) and descriptor set, and the whole
 * model is recorded into one command buffer with a barrier after each dispatch; each run replays
 * it with one submit and one wait. TGC_VK_VALIDATION=1 turns on the Khronos validation layer and
 * fails create/run on any message; TGC_VK_DEVICE=index|name-substring picks the device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"
#include "volk.h"

typedef struct {
  const tgc_model_desc* desc;
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  int messages;        /* validation messages so far (TGC_VK_VALIDATION=1) */
  char first_message[400];
  VkPhysicalDevice phys;
  VkPhysicalDeviceProperties props;
  VkPhysicalDeviceFeatures features;        /* the enabled core features */
  int storage16, storage8, float16, int8;   /* enabled extension features */
  VkDevice device;
  VkQueue queue;
  uint32_t queue_family;
  VkDeviceMemory memory;
  unsigned char* mapped;
  VkBuffer arena;
  VkBuffer* own;        /* per desc buffer: its own VkBuffer, or VK_NULL_HANDLE for arena ranges */
  VkBuffer* bound;      /* per desc buffer: the VkBuffer its descriptors name */
  VkDeviceSize* offset; /* per desc buffer: its offset in `bound` */
  unsigned char** host; /* per desc buffer: its bytes in the mapped memory */
  VkShaderModule* modules;
  VkDescriptorSetLayout* set_layouts;
  VkPipelineLayout* layouts;
  VkPipeline* pipelines; /* per launch */
  VkDescriptorPool pool;
  VkCommandPool cmd_pool;
  VkCommandBuffer cmd;
  VkFence fence;
  int recorded;
} tgc_vk;

static int verbose(void) {
  const char* v = getenv("TGC_VERBOSE");
  return v && v[0] && strcmp(v, "0") != 0;
}

static const char* vk_device_name(const void* be) { return be ? ((const tgc_vk*)be)->props.deviceName : ""; }

static const char* vk_err(VkResult r) {
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
    default: return "VkResult";
  }
}

/* ---------------------------------------------------------------- instance and device */

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  tgc_vk* vk = user;
  const char* text = data && data->pMessage ? data->pMessage : "(no text)";
  /* The loader's own notes (GENERAL: e.g. another architecture's driver files on a multiarch
   * system) fail nothing and show with TGC_VERBOSE=1; validation messages fail the run. */
  if (!(type & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT)) {
    if (verbose()) fprintf(stderr, "tgc: vulkan loader: %s\n", text);
    return VK_FALSE;
  }
  if (vk->messages++ == 0) snprintf(vk->first_message, sizeof vk->first_message, "%s", text);
  if (vk->messages <= 5) fprintf(stderr, "tgc: vulkan validation: %s\n", text);
  return VK_FALSE;
}

/* Fails with the first validation message when there were any (TGC_VK_VALIDATION=1). */
static int check_messages(tgc_vk* vk, const char* when) {
  if (vk->messages == 0) return 0;
  for (char* c = vk->first_message; *c; ++c)
    if (*c == '\n') *c = ' ';
  tgc_set_error("Vulkan backend: %d validation message(s) %s; the first: %s", vk->messages, when, vk->first_message);
  return -1;
}

static int has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, NULL);
  VkLayerProperties* l = calloc(n + 1, sizeof *l);
  int found = 0;
  if (l && vkEnumerateInstanceLayerProperties(&n, l) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; ++i) found = strcmp(l[i].layerName, name) == 0;
  free(l);
  return found;
}

static int create_instance(tgc_vk* vk) {
  if (volkInitialize() != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: cannot load libvulkan.so.1; install a Vulkan loader (libvulkan1) and a driver");
    return -1;
  }
  const char* env = getenv("TGC_VK_VALIDATION");
  int validation = env && env[0] && strcmp(env, "0") != 0;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  if (validation && !has_layer(layer)) {
    tgc_set_error("Vulkan backend: TGC_VK_VALIDATION=1 but the %s layer is not installed (vulkan-validationlayers)",
                  layer);
    return -1;
  }
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                           .pApplicationName = vk->desc->name ? vk->desc->name : "tgc model",
                           .pEngineName = "tgc",
                           .apiVersion = VK_API_VERSION_1_1};
  VkDebugUtilsMessengerCreateInfoEXT msg = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
      .pfnUserCallback = on_message,
      .pUserData = vk};
  VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                             .pNext = validation ? &msg : NULL, /* also reports on create/destroy */
                             .pApplicationInfo = &app,
                             .enabledLayerCount = validation ? 1 : 0,
                             .ppEnabledLayerNames = &layer,
                             .enabledExtensionCount = validation ? 1 : 0,
                             .ppEnabledExtensionNames = &ext};
  VkResult r = vkCreateInstance(&ci, NULL, &vk->instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) { /* what the loader says when it finds no driver at all */
    tgc_set_error("Vulkan backend: no Vulkan device found (no Vulkan 1.1 driver; install one, e.g. mesa-vulkan-drivers)");
    return -1;
  }
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: vkCreateInstance (Vulkan 1.1) failed: %s (%d)", vk_err(r), (int)r);
    return -1;
  }
  volkLoadInstance(vk->instance);
  if (validation && vkCreateDebugUtilsMessengerEXT(vk->instance, &msg, NULL, &vk->messenger) != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: cannot create the validation messenger");
    return -1;
  }
  return 0;
}

static int compute_family(VkPhysicalDevice p, uint32_t* family) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(p, &n, NULL);
  VkQueueFamilyProperties q[32];
  if (n > 32) n = 32;
  vkGetPhysicalDeviceQueueFamilyProperties(p, &n, q);
  for (uint32_t i = 0; i < n; ++i)
    if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return *family = i, 0;
  return -1;
}

/* GPUs before CPU devices; TGC_VK_DEVICE (an index or a piece of the name) overrides. */
static int device_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
    default: return 3;
  }
}

static int pick_device(tgc_vk* vk) {
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(vk->instance, &n, NULL);
  if (n == 0) {
    tgc_set_error("Vulkan backend: no Vulkan device found (install a driver, e.g. mesa-vulkan-drivers)");
    return -1;
  }
  VkPhysicalDevice* all = calloc(n, sizeof *all);
  if (!all) return tgc_set_error("out of memory"), -1;
  vkEnumeratePhysicalDevices(vk->instance, &n, all);
  const char* want = getenv("TGC_VK_DEVICE");
  char* end = NULL;
  long index = want && want[0] ? strtol(want, &end, 10) : -1;
  int by_index = want && want[0] && end && *end == '\0';
  int best = -1, best_rank = 99;
  char names[512] = "";
  for (uint32_t i = 0; i < n; ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(all[i], &p);
    size_t used = strlen(names);
    snprintf(names + used, sizeof names - used, "%s%u: %s", i ? ", " : "", i, p.deviceName);
    uint32_t family;
    if (p.apiVersion < VK_API_VERSION_1_1 || compute_family(all[i], &family) != 0) continue;
    int chosen = want && want[0] ? (by_index ? (long)i == index : strstr(p.deviceName, want) != NULL)
                                 : device_rank(p.deviceType) < best_rank;
    if (chosen && (best < 0 || !(want && want[0]))) best = (int)i, best_rank = device_rank(p.deviceType);
  }
  if (best < 0) {
    if (want && want[0]) tgc_set_error("Vulkan backend: TGC_VK_DEVICE=%s matches no Vulkan 1.1 compute device (%s)", want, names);
    else tgc_set_error("Vulkan backend: no Vulkan 1.1 device with a compute queue (%s)", names);
    free(all);
    return -1;
  }
  vk->phys = all[best];
  free(all);
  vkGetPhysicalDeviceProperties(vk->phys, &vk->props);
  compute_family(vk->phys, &vk->queue_family);
  return 0;
}

static int has_device_extension(VkPhysicalDevice p, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(p, NULL, &n, NULL);
  VkExtensionProperties* e = calloc(n + 1, sizeof *e);
  int found = 0;
  if (e && vkEnumerateDeviceExtensionProperties(p, NULL, &n, e) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; ++i) found = strcmp(e[i].extensionName, name) == 0;
  free(e);
  return found;
}

/* Enables every feature the kernels may ask for that the device has; pipelines check theirs. */
static int create_device(tgc_vk* vk) {
  VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeaturesKHR s8 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES_KHR};
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR f16 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR};
  const char* exts[2];
  uint32_t num_exts = 0;
  void* chain = &s16;
  if (has_device_extension(vk->phys, VK_KHR_8BIT_STORAGE_EXTENSION_NAME)) {
    exts[num_exts++] = VK_KHR_8BIT_STORAGE_EXTENSION_NAME;
    s8.pNext = chain;
    chain = &s8;
  }
  if (has_device_extension(vk->phys, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) {
    exts[num_exts++] = VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
    f16.pNext = chain;
    chain = &f16;
  }
  VkPhysicalDeviceFeatures2 all = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = chain};
  vkGetPhysicalDeviceFeatures2(vk->phys, &all);
  VkPhysicalDeviceFeatures want = {.shaderInt64 = all.features.shaderInt64,
                                   .shaderInt16 = all.features.shaderInt16,
                                   .shaderFloat64 = all.features.shaderFloat64};
  vk->features = want;
  /* Only the storage classes the kernels use (storage buffers). */
  s16 = (VkPhysicalDevice16BitStorageFeatures){.sType = s16.sType, .pNext = s16.pNext,
                                               .storageBuffer16BitAccess = s16.storageBuffer16BitAccess};
  s8 = (VkPhysicalDevice8BitStorageFeaturesKHR){.sType = s8.sType, .pNext = s8.pNext,
                                                .storageBuffer8BitAccess = s8.storageBuffer8BitAccess};
  vk->storage16 = s16.storageBuffer16BitAccess;
  vk->storage8 = s8.storageBuffer8BitAccess;
  vk->float16 = f16.shaderFloat16;
  vk->int8 = f16.shaderInt8;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                               .queueFamilyIndex = vk->queue_family,
                               .queueCount = 1,
                               .pQueuePriorities = &priority};
  VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                           .pNext = chain,
                           .queueCreateInfoCount = 1,
                           .pQueueCreateInfos = &q,
                           .enabledExtensionCount = num_exts,
                           .ppEnabledExtensionNames = exts,
                           .pEnabledFeatures = &want};
  VkResult r = vkCreateDevice(vk->phys, &ci, NULL, &vk->device);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: vkCreateDevice on '%s' failed: %s (%d)", vk->props.deviceName, vk_err(r), (int)r);
    return -1;
  }
  volkLoadDevice(vk->device);
  vkGetDeviceQueue(vk->device, vk->queue_family, 0, &vk->queue);
  return 0;
}

/* ---------------------------------------------------------------- memory */


static int make_buffer(tgc_vk* vk, VkDeviceSize size, VkBuffer* out) {
  VkBufferCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                           .size = size > 16 ? size : 16, /* Vulkan has no empty buffers */
                           .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                           .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  VkResult r = vkCreateBuffer(vk->device, &ci, NULL, out);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: vkCreateBuffer (%llu bytes) failed: %s (%d)", (unsigned long long)size, vk_err(r),
                  (int)r);
    return -1;
  }
  return 0;
}

/* Host-visible and coherent, device-local where possible (unified memory). */
static int memory_type(tgc_vk* vk, uint32_t bits, uint32_t* type) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(vk->phys, &mp);
  VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  VkMemoryPropertyFlags wants[2] = {host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, host};
  for (int w = 0; w < 2; ++w)
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
      if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & wants[w]) == wants[w]) {
        if (verbose()) fprintf(stderr, "tgc: vulkan: memory type %u (%s)\n", i, w == 0 ? "device-local, host-visible" : "host-visible, not device-local");
        return *type = i, 0;
      }
  tgc_set_error("Vulkan backend: '%s' has no host-visible coherent memory for the model's buffers", vk->props.deviceName);
  return -1;
}

/* The arena is one VkBuffer whose buffers are descriptor ranges; every other buffer (and an arena
 * buffer off the device's offset alignment that shares no memory) is its own VkBuffer. All of
 * them are bound into one allocation. */
static int make_memory(tgc_vk* vk, tgc_model* model) {
  const tgc_model_desc* d = vk->desc;
  VkDeviceSize align = vk->props.limits.minStorageBufferOffsetAlignment;
  if (d->arena_size > 0 && make_buffer(vk, (VkDeviceSize)d->arena_size, &vk->arena) != 0) return -1;
  for (int32_t i = 0; i < d->num_buffers; ++i) {
    const tgc_buffer* b = &d->buffers[i];
    int in_arena = b->storage == TGC_STORAGE_ARENA && b->nbytes > 0 && (VkDeviceSize)b->offset % align == 0;
    if (b->storage == TGC_STORAGE_ARENA && !in_arena && b->nbytes > 0 && tgc_arena_overlaps(d, i)) {
      tgc_set_error("Vulkan backend: arena buffer '%s' at offset %lld shares memory with another buffer but is not "
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
  /* Lay the VkBuffers out in one allocation: the arena first, then the own ones. */
  int32_t n = d->num_buffers;
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
  uint32_t type;
  if (memory_type(vk, bits, &type) != 0) return free(at), -1;
  VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = total, .memoryTypeIndex = type};
  VkResult r = vkAllocateMemory(vk->device, &ai, NULL, &vk->memory);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: cannot allocate %llu bytes of memory on '%s': %s (%d)", (unsigned long long)total,
                  vk->props.deviceName, vk_err(r), (int)r);
    return free(at), -1;
  }
  r = vkMapMemory(vk->device, vk->memory, 0, VK_WHOLE_SIZE, 0, (void**)&vk->mapped);
  for (int32_t i = -1; i < n && r == VK_SUCCESS; ++i) {
    VkBuffer buf = i < 0 ? vk->arena : vk->own[i];
    if (buf != VK_NULL_HANDLE) r = vkBindBufferMemory(vk->device, buf, vk->memory, at[i < 0 ? n : i]);
  }
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: mapping or binding buffer memory failed: %s (%d)", vk_err(r), (int)r);
    return free(at), -1;
  }
  for (int32_t i = 0; i < n; ++i) {
    vk->host[i] = vk->mapped + (vk->own[i] != VK_NULL_HANDLE ? at[i] : at[n] + vk->offset[i]);
    const tgc_buffer* b = &d->buffers[i];
    if ((b->storage == TGC_STORAGE_WEIGHT || b->storage == TGC_STORAGE_STATE) && b->nbytes > 0)
      memcpy(vk->host[i], model->buf[i], (size_t)b->nbytes);
  }
  free(at);
  return 0;
}

/* ---------------------------------------------------------------- pipelines */

/* The SPIR-V capabilities a kernel declares that need a device feature, against what was enabled. */
static int check_capabilities(tgc_vk* vk, const tgc_launch* L) {
  const uint32_t* w = L->blob;
  size_t n = (size_t)L->blob_size / 4;
  for (size_t i = 5; i < n;) {
    uint32_t words = w[i] >> 16, op = w[i] & 0xffff;
    if (words == 0 || i + words > n) break;
    if (op == 17 /* OpCapability */ && words == 2) {
      const char* need = NULL;
      switch (w[i + 1]) {
        case 9: need = vk->float16 ? NULL : "shaderFloat16"; break;
        case 10: need = vk->features.shaderFloat64 ? NULL : "shaderFloat64"; break;
        case 11: need = vk->features.shaderInt64 ? NULL : "shaderInt64"; break;
        case 22: need = vk->features.shaderInt16 ? NULL : "shaderInt16"; break;
        case 39: need = vk->int8 ? NULL : "shaderInt8"; break;
        case 4433: need = vk->storage16 ? NULL : "storageBuffer16BitAccess"; break;
        case 4448: need = vk->storage8 ? NULL : "storageBuffer8BitAccess"; break;
      }
      if (need) {
        tgc_set_error("Vulkan backend: kernel '%s' needs %s, which '%s' does not have", L->name, need,
                      vk->props.deviceName);
        return -1;
      }
    }
    i += words;
  }
  return 0;
}

static int make_pipeline(tgc_vk* vk, int32_t l) {
  const tgc_launch* L = &vk->desc->launches[l];
  const VkPhysicalDeviceLimits* lim = &vk->props.limits;
  if (L->local_size[0] < 1 || L->local_size[0] > lim->maxComputeWorkGroupInvocations ||
      L->local_size[0] > lim->maxComputeWorkGroupSize[0]) {
    tgc_set_error("Vulkan backend: kernel '%s' has work-groups of %lld threads; '%s' allows at most %u", L->name,
                  (long long)L->local_size[0], vk->props.deviceName, lim->maxComputeWorkGroupInvocations);
    return -1;
  }
  if (check_capabilities(vk, L) != 0) return -1;
  VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                 .codeSize = (size_t)L->blob_size,
                                 .pCode = L->blob};
  VkResult r = vkCreateShaderModule(vk->device, &mi, NULL, &vk->modules[l]);
  VkDescriptorSetLayoutBinding bind[64];
  if (L->num_buffers > 64) return tgc_set_error("Vulkan backend: kernel '%s' has more than 64 buffers", L->name), -1;
  for (int32_t i = 0; i < L->num_buffers; ++i)
    bind[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i,
                                             .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                             .descriptorCount = 1,
                                             .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
  VkDescriptorSetLayoutCreateInfo si = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                        .bindingCount = (uint32_t)L->num_buffers,
                                        .pBindings = bind};
  if (r == VK_SUCCESS) r = vkCreateDescriptorSetLayout(vk->device, &si, NULL, &vk->set_layouts[l]);
  VkPipelineLayoutCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                   .setLayoutCount = 1,
                                   .pSetLayouts = &vk->set_layouts[l]};
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
  if (r == VK_SUCCESS) r = vkCreateComputePipelines(vk->device, VK_NULL_HANDLE, 1, &ci, NULL, &vk->pipelines[l]);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: creating the pipeline of kernel '%s' on '%s' failed: %s (%d)", L->name,
                  vk->props.deviceName, vk_err(r), (int)r);
    return -1;
  }
  return 0;
}

/* Work-groups spread over x and y: Vulkan guarantees only 65535 per dimension. */
static int dispatch_size(tgc_vk* vk, const tgc_launch* L, uint32_t* gx, uint32_t* gy) {
  const uint32_t* max = vk->props.limits.maxComputeWorkGroupCount;
  int64_t items = L->global_size[0] * L->global_size[1] * L->global_size[2];
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

/* Pipelines, descriptor sets, and the whole model in one command buffer. */
static int record(tgc_vk* vk) {
  const tgc_model_desc* d = vk->desc;
  uint32_t sets = 0, descriptors = 0;
  for (int32_t l = 0; l < d->num_launches; ++l) {
    if (d->launches[l].global_size[0] <= 0) continue;
    if (make_pipeline(vk, l) != 0) return -1;
    sets++;
    descriptors += (uint32_t)d->launches[l].num_buffers;
  }
  VkDescriptorPoolSize size = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = descriptors ? descriptors : 1};
  VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                    .maxSets = sets ? sets : 1,
                                    .poolSizeCount = 1,
                                    .pPoolSizes = &size};
  VkResult r = vkCreateDescriptorPool(vk->device, &pci, NULL, &vk->pool);
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  if (r == VK_SUCCESS) r = vkBeginCommandBuffer(vk->cmd, &bi);
  /* Each dispatch's writes reach the next ones' reads and writes. */
  VkMemoryBarrier between = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                             .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT,
                             .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
  for (int32_t l = 0; l < d->num_launches && r == VK_SUCCESS; ++l) {
    const tgc_launch* L = &d->launches[l];
    if (L->global_size[0] <= 0) continue;
    VkDescriptorSet set;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = vk->pool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &vk->set_layouts[l]};
    if ((r = vkAllocateDescriptorSets(vk->device, &ai, &set)) != VK_SUCCESS) break;
    VkDescriptorBufferInfo info[64];
    VkWriteDescriptorSet w[64];
    for (int32_t i = 0; i < L->num_buffers; ++i) {
      int32_t b = L->buffers[i];
      int64_t nbytes = d->buffers[b].nbytes;
      info[i] = (VkDescriptorBufferInfo){vk->bound[b], vk->offset[b], vk->own[b] != VK_NULL_HANDLE ? VK_WHOLE_SIZE
                                                                     : (VkDeviceSize)nbytes};
      w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                    .dstSet = set,
                                    .dstBinding = (uint32_t)i,
                                    .descriptorCount = 1,
                                    .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                    .pBufferInfo = &info[i]};
    }
    vkUpdateDescriptorSets(vk->device, (uint32_t)L->num_buffers, w, 0, NULL);
    uint32_t gx, gy;
    if (dispatch_size(vk, L, &gx, &gy) != 0) return -1;
    vkCmdBindPipeline(vk->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipelines[l]);
    vkCmdBindDescriptorSets(vk->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vk->layouts[l], 0, 1, &set, 0, NULL);
    vkCmdDispatch(vk->cmd, gx, gy, 1);
    vkCmdPipelineBarrier(vk->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                         &between, 0, NULL, 0, NULL);
  }
  /* The outputs are read through the mapping once the fence signals. */
  VkMemoryBarrier to_host = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                             .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                             .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
  if (r == VK_SUCCESS) {
    vkCmdPipelineBarrier(vk->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0,
                         NULL, 0, NULL);
    r = vkEndCommandBuffer(vk->cmd);
  }
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: recording the model's command buffer failed: %s (%d)", vk_err(r), (int)r);
    return -1;
  }
  if (check_messages(vk, "while recording the model") != 0) return -1;
  vk->recorded = 1;
  return 0;
}

/* ---------------------------------------------------------------- the backend */

static void vk_free(tgc_vk* vk) {
  if (!vk) return;
  if (vk->device) {
    vkDeviceWaitIdle(vk->device);
    for (int32_t l = 0; l < vk->desc->num_launches; ++l) {
      if (vk->pipelines && vk->pipelines[l]) vkDestroyPipeline(vk->device, vk->pipelines[l], NULL);
      if (vk->layouts && vk->layouts[l]) vkDestroyPipelineLayout(vk->device, vk->layouts[l], NULL);
      if (vk->set_layouts && vk->set_layouts[l]) vkDestroyDescriptorSetLayout(vk->device, vk->set_layouts[l], NULL);
      if (vk->modules && vk->modules[l]) vkDestroyShaderModule(vk->device, vk->modules[l], NULL);
    }
    if (vk->pool) vkDestroyDescriptorPool(vk->device, vk->pool, NULL);
    if (vk->fence) vkDestroyFence(vk->device, vk->fence, NULL);
    if (vk->cmd_pool) vkDestroyCommandPool(vk->device, vk->cmd_pool, NULL);
    for (int32_t i = 0; vk->own && i < vk->desc->num_buffers; ++i)
      if (vk->own[i]) vkDestroyBuffer(vk->device, vk->own[i], NULL);
    if (vk->arena) vkDestroyBuffer(vk->device, vk->arena, NULL);
    if (vk->memory) vkFreeMemory(vk->device, vk->memory, NULL);
    vkDestroyDevice(vk->device, NULL);
  }
  if (vk->messenger) vkDestroyDebugUtilsMessengerEXT(vk->instance, vk->messenger, NULL);
  if (vk->instance) vkDestroyInstance(vk->instance, NULL);
  free(vk->own);
  free(vk->bound);
  free(vk->offset);
  free(vk->host);
  free(vk->modules);
  free(vk->set_layouts);
  free(vk->layouts);
  free(vk->pipelines);
  free(vk);
}

static void vk_destroy(void* be, tgc_model* m) { vk_free(be); }

static void* vk_create(tgc_model* model, int num_threads) {
  const tgc_model_desc* d = model->desc;
  for (int32_t l = 0; l < d->num_launches; ++l) {
    const tgc_launch* L = &d->launches[l];
    const uint32_t* w = L->blob;
    if (!L->name || !w || L->blob_size < 20 || L->blob_size % 4 != 0 || w[0] != 0x07230203u) {
      tgc_set_error("launch %d '%s': no SPIR-V module (blob %s, blob_size %lld)", (int)l, L->name ? L->name : "?",
                    L->blob ? "set" : "NULL", (long long)L->blob_size);
      return NULL;
    }
  }
  model->num_threads = 0;
  tgc_vk* vk = calloc(1, sizeof *vk);
  if (!vk) return tgc_set_error("out of memory"), NULL;
  vk->desc = d;
  size_t nb = (size_t)d->num_buffers + 1, nl = (size_t)d->num_launches + 1;
  vk->own = calloc(nb, sizeof *vk->own);
  vk->bound = calloc(nb, sizeof *vk->bound);
  vk->offset = calloc(nb, sizeof *vk->offset);
  vk->host = calloc(nb, sizeof *vk->host);
  vk->modules = calloc(nl, sizeof *vk->modules);
  vk->set_layouts = calloc(nl, sizeof *vk->set_layouts);
  vk->layouts = calloc(nl, sizeof *vk->layouts);
  vk->pipelines = calloc(nl, sizeof *vk->pipelines);
  if (!vk->own || !vk->bound || !vk->offset || !vk->host || !vk->modules || !vk->set_layouts || !vk->layouts ||
      !vk->pipelines) {
    tgc_set_error("out of memory");
    goto fail;
  }
  if (create_instance(vk) != 0 || pick_device(vk) != 0 || create_device(vk) != 0) goto fail;
  if (verbose())
    fprintf(stderr, "tgc: vulkan: device '%s', Vulkan %u.%u, driver %u\n", vk->props.deviceName,
            VK_API_VERSION_MAJOR(vk->props.apiVersion), VK_API_VERSION_MINOR(vk->props.apiVersion),
            vk->props.driverVersion);
  if (make_memory(vk, model) != 0) goto fail;
  VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, .queueFamilyIndex = vk->queue_family};
  VkResult r = vkCreateCommandPool(vk->device, &pci, NULL, &vk->cmd_pool);
  VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                    .commandPool = vk->cmd_pool,
                                    .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                    .commandBufferCount = 1};
  if (r == VK_SUCCESS) r = vkAllocateCommandBuffers(vk->device, &ai, &vk->cmd);
  VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (r == VK_SUCCESS) r = vkCreateFence(vk->device, &fi, NULL, &vk->fence);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: creating the command buffer failed: %s (%d)", vk_err(r), (int)r);
    goto fail;
  }
  if (check_messages(vk, "while setting up the device") != 0) goto fail;
  return vk;
fail:
  vk_free(vk);
  return NULL;
}

/* The memory is host-visible: no work is in flight between runs, so copies are memcpys. */
static int vk_upload(void* be, tgc_model* m, const int32_t* bufs, int32_t n) {
  tgc_vk* vk = be;
  for (int32_t i = 0; i < n; ++i) {
    const tgc_buffer* b = &vk->desc->buffers[bufs[i]];
    if (b->nbytes > 0) memcpy(vk->host[bufs[i]], m->cur[bufs[i]], (size_t)b->nbytes);
  }
  return 0;
}

static int64_t vk_run(void* be, tgc_model* m, int64_t sample) {
  tgc_vk* vk = be;
  const tgc_model_desc* d = vk->desc;
  if (!vk->recorded && record(vk) != 0) return -1;
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &vk->cmd};
  VkResult r = vkResetFences(vk->device, 1, &vk->fence);
  if (r == VK_SUCCESS) r = vkQueueSubmit(vk->queue, 1, &si, vk->fence);
  if (r == VK_SUCCESS) r = vkWaitForFences(vk->device, 1, &vk->fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: running '%s' on '%s' failed: %s (%d)", d->name ? d->name : "?", vk->props.deviceName,
                  vk_err(r), (int)r);
    return -1;
  }
  for (int32_t i = 0; i < d->num_outputs; ++i) {
    int32_t b = d->outputs[i];
    if (d->buffers[b].nbytes > 0) memcpy(m->cur[b], vk->host[b], (size_t)d->buffers[b].nbytes);
  }
  if (check_messages(vk, "during the run") != 0) return -1;
  return 1;
}

const struct tgc_backend tgc_backend_vulkan = {
    .name = "vulkan",
    .create = vk_create,
    .upload = vk_upload,
    .run = vk_run,
    .destroy = vk_destroy,
    .device_name = vk_device_name,
};
