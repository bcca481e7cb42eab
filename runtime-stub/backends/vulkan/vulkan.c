/* Vulkan backend: libvulkan.so.1 through volk (loaded at create, no link-time dependency); the
 * instance, the device and the backend table. Memory: vk_memory.c; pipelines and their cache:
 * vk_pipelines.c; the model's command buffer, its barriers and TGC_PROFILE: vk_record.c. A run is
 * one submit and one wait. TGC_VK_VALIDATION=1 turns on the Khronos validation layer and fails
 * create/run on any message; TGC_VK_DEVICE=index|name-substring picks the device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_internal.h"

static const char* vk_device_name(const void* be) { return be ? ((const tgc_vk*)be)->props.deviceName : ""; }
static double vk_launch_ms(const void* be) { return ((const tgc_vk*)be)->launch_ms; }
static int64_t vk_device_bytes(const void* be) { return be ? ((const tgc_vk*)be)->device_bytes : 0; }

const char* tgc_vk_err(VkResult r) {
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
    if (tgc_gpu_verbose()) fprintf(stderr, "tgc: vulkan loader: %s\n", text);
    return VK_FALSE;
  }
  if (vk->messages++ == 0) snprintf(vk->first_message, sizeof vk->first_message, "%s", text);
  if (vk->messages <= 5) fprintf(stderr, "tgc: vulkan validation: %s\n", text);
  return VK_FALSE;
}

/* Fails with the first validation message when there were any (TGC_VK_VALIDATION=1). */
int tgc_vk_check_messages(tgc_vk* vk, const char* when) {
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
      .messageSeverity =
          VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
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
    tgc_set_error(
        "Vulkan backend: no Vulkan device found (no Vulkan 1.1 driver; install one, e.g. mesa-vulkan-drivers)");
    return -1;
  }
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: vkCreateInstance (Vulkan 1.1) failed: %s (%d)", tgc_vk_err(r), (int)r);
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
    if (want && want[0])
      tgc_set_error("Vulkan backend: TGC_VK_DEVICE=%s matches no Vulkan 1.1 compute device (%s)", want, names);
    else
      tgc_set_error("Vulkan backend: no Vulkan 1.1 device with a compute queue (%s)", names);
    free(all);
    return -1;
  }
  vk->phys = all[best];
  free(all);
  vkGetPhysicalDeviceProperties(vk->phys, &vk->props);
  vk->subgroup = (VkPhysicalDeviceSubgroupProperties){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &vk->subgroup};
  vkGetPhysicalDeviceProperties2(vk->phys, &p2);
  compute_family(vk->phys, &vk->queue_family);
  uint32_t nq = 0;
  VkQueueFamilyProperties q[32];
  vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nq, NULL);
  if (nq > 32) nq = 32;
  vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nq, q);
  vk->timestamp_bits = vk->queue_family < nq ? q[vk->queue_family].timestampValidBits : 0;
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
  s16 = (VkPhysicalDevice16BitStorageFeatures){
      .sType = s16.sType, .pNext = s16.pNext, .storageBuffer16BitAccess = s16.storageBuffer16BitAccess};
  s8 = (VkPhysicalDevice8BitStorageFeaturesKHR){
      .sType = s8.sType, .pNext = s8.pNext, .storageBuffer8BitAccess = s8.storageBuffer8BitAccess};
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
    tgc_set_error("Vulkan backend: vkCreateDevice on '%s' failed: %s (%d)", vk->props.deviceName, tgc_vk_err(r),
                  (int)r);
    return -1;
  }
  volkLoadDevice(vk->device);
  vkGetDeviceQueue(vk->device, vk->queue_family, 0, &vk->queue);
  return 0;
}

/* ---------------------------------------------------------------- the backend */

static void vk_free(tgc_vk* vk) {
  if (!vk) return;
  if (vk->device) {
    vkDeviceWaitIdle(vk->device);
    tgc_vk_free_pipelines(vk);
    if (vk->queries) vkDestroyQueryPool(vk->device, vk->queries, NULL);
    if (vk->fence) vkDestroyFence(vk->device, vk->fence, NULL);
    if (vk->cmd_pool) vkDestroyCommandPool(vk->device, vk->cmd_pool, NULL);
    tgc_vk_free_memory(vk);
    vkDestroyDevice(vk->device, NULL);
  }
  if (vk->messenger) vkDestroyDebugUtilsMessengerEXT(vk->instance, vk->messenger, NULL);
  if (vk->instance) vkDestroyInstance(vk->instance, NULL);
  free(vk->own);
  free(vk->bound);
  free(vk->offset);
  free(vk->host);
  free(vk->staging_at);
  free(vk->modules);
  free(vk->set_layouts);
  free(vk->layouts);
  free(vk->pipelines);
  free(vk->sets);
  free(vk->borrowed);
  free(vk->sizes);
  free(vk->profile_ms);
  free(vk);
}

static void vk_destroy(void* be, tgc_model* m) {
  tgc_vk_print_profile(be);
  vk_free(be);
}

/* The command pool (its buffers are reset one by one: the model's is recorded again when a
 * run-time dim changes) and the fence every submit waits on. */
static int make_commands(tgc_vk* vk) {
  VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                 .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                 .queueFamilyIndex = vk->queue_family};
  VkResult r = vkCreateCommandPool(vk->device, &pci, NULL, &vk->cmd_pool);
  VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                    .commandPool = vk->cmd_pool,
                                    .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                    .commandBufferCount = 1};
  if (r == VK_SUCCESS) r = vkAllocateCommandBuffers(vk->device, &ai, &vk->cmd);
  VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (r == VK_SUCCESS) r = vkCreateFence(vk->device, &fi, NULL, &vk->fence);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: creating the command buffer failed: %s (%d)", tgc_vk_err(r), (int)r);
    return -1;
  }
  return 0;
}

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
  vk->launch_ms = -1;
  size_t nb = (size_t)d->num_buffers + 1, nl = (size_t)d->num_launches + 1;
  vk->own = calloc(nb, sizeof *vk->own);
  vk->bound = calloc(nb, sizeof *vk->bound);
  vk->offset = calloc(nb, sizeof *vk->offset);
  vk->host = calloc(nb, sizeof *vk->host);
  vk->staging_at = calloc(nb, sizeof *vk->staging_at);
  vk->modules = calloc(nl, sizeof *vk->modules);
  vk->set_layouts = calloc(nl, sizeof *vk->set_layouts);
  vk->layouts = calloc(nl, sizeof *vk->layouts);
  vk->pipelines = calloc(nl, sizeof *vk->pipelines);
  vk->sets = calloc(nl, sizeof *vk->sets);
  vk->borrowed = calloc(nl, sizeof *vk->borrowed);
  vk->sizes = calloc(2 * (nl + nb) + 1, sizeof *vk->sizes);
  if (!vk->own || !vk->bound || !vk->offset || !vk->host || !vk->staging_at || !vk->modules || !vk->set_layouts ||
      !vk->layouts || !vk->pipelines || !vk->sets || !vk->borrowed || !vk->sizes) {
    tgc_set_error("out of memory");
    goto fail;
  }
  if (create_instance(vk) != 0 || pick_device(vk) != 0 || create_device(vk) != 0) goto fail;
  if (tgc_gpu_verbose())
    fprintf(stderr, "tgc: vulkan: device '%s', Vulkan %u.%u, driver %u, subgroup size %u\n", vk->props.deviceName,
            VK_API_VERSION_MAJOR(vk->props.apiVersion), VK_API_VERSION_MINOR(vk->props.apiVersion),
            vk->props.driverVersion, vk->subgroup.subgroupSize);
  if (make_commands(vk) != 0 || tgc_vk_make_memory(vk, model) != 0) goto fail;
  if (tgc_vk_check_messages(vk, "while setting up the device") != 0) goto fail;
  return vk;
fail:
  vk_free(vk);
  return NULL;
}

/* No work is in flight between runs: inputs and the vars buffer are written where the host sees
 * them (the mapping, or their staging slot, which the command buffer copies in). Anything else
 * (STATE, from tgc_reset_state) is copied now. */
static int vk_upload(void* be, tgc_model* m, const int32_t* bufs, int32_t n) {
  tgc_vk* vk = be;
  for (int32_t i = 0; i < n; ++i) {
    int32_t b = bufs[i];
    const tgc_buffer* x = &vk->desc->buffers[b];
    if (x->nbytes <= 0) continue;
    if (vk->host[b]) {
      if (vk->host[b] != m->cur[b]) memcpy(vk->host[b], m->cur[b], (size_t)x->nbytes);
    } else if (tgc_vk_copy_to_device(vk, b, m->cur[b]) != 0)
      return -1;
  }
  return 0;
}

static int64_t vk_run(void* be, tgc_model* m, int64_t sample) {
  tgc_vk* vk = be;
  const tgc_model_desc* d = vk->desc;
  if (tgc_vk_needs_recording(vk, m) && tgc_vk_record(vk, m) != 0) return -1;
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &vk->cmd};
  VkResult r = vkResetFences(vk->device, 1, &vk->fence);
  if (r == VK_SUCCESS) r = vkQueueSubmit(vk->queue, 1, &si, vk->fence);
  if (r == VK_SUCCESS) r = vkWaitForFences(vk->device, 1, &vk->fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) {
    tgc_set_error("Vulkan backend: running '%s' on '%s' failed: %s (%d)", d->name ? d->name : "?", vk->props.deviceName,
                  tgc_vk_err(r), (int)r);
    return -1;
  }
  tgc_vk_collect_profile(vk);
  for (int32_t i = 0; i < d->num_outputs; ++i) {
    int32_t b = d->outputs[i];
    if (d->buffers[b].nbytes > 0 && m->cur[b] != vk->host[b])
      memcpy(m->cur[b], vk->host[b], (size_t)d->buffers[b].nbytes);
  }
  if (tgc_vk_check_messages(vk, "during the run") != 0) return -1;
  return 1;
}

const struct tgc_backend tgc_backend_vulkan = {
    .name = "vulkan",
    .create = vk_create,
    .upload = vk_upload,
    .run = vk_run,
    .destroy = vk_destroy,
    .device_name = vk_device_name,
    .launch_ms = vk_launch_ms,
    .device_bytes = vk_device_bytes,
};
