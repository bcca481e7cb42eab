/* A stand-in libvulkan.so.1 for fault injection in the Vulkan runtime (runtime-stub/backends/vulkan/vulkan.c):
 * it loads the real loader (TGC_FAKE_VK_LOADER, a path) and hands the runtime the real entry
 * points, except that the calls below answer with a fault. The runtime (volk) reaches every
 * function through vkGetInstanceProcAddr and vkGetDeviceProcAddr, so those two are where the
 * faults are put in. TGC_FAKE_VK_FAIL picks the fault:
 *   noinstance  vkCreateInstance answers VK_ERROR_INCOMPATIBLE_DRIVER
 *   nodevice    vkEnumeratePhysicalDevices finds none
 *   device      vkCreateDevice answers VK_ERROR_INITIALIZATION_FAILED
 *   alloc:N     the Nth vkAllocateMemory answers VK_ERROR_OUT_OF_DEVICE_MEMORY
 *   pipeline    vkCreateComputePipelines answers VK_ERROR_OUT_OF_DEVICE_MEMORY
 *   lost        every vkQueueSubmit answers VK_ERROR_DEVICE_LOST
 * Unset: the real driver runs (lavapipe in the tests). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

static PFN_vkGetInstanceProcAddr real_gipa;
static PFN_vkGetDeviceProcAddr real_gdpa;
/* The last instance and device created (the runtime makes one of each): what calls without
 * them (vkCreateDevice, vkQueueSubmit) go through. */
static VkInstance instance;
static VkDevice device;
static int allocations;

static int fault(const char* kind) {
  const char* f = getenv("TGC_FAKE_VK_FAIL");
  return f && strncmp(f, kind, strlen(kind)) == 0;
}

static PFN_vkVoidFunction real(VkInstance i, const char* name) { return real_gipa ? real_gipa(i, name) : NULL; }
static PFN_vkVoidFunction real_device(VkDevice d, const char* name) { return real_gdpa ? real_gdpa(d, name) : NULL; }

static VkResult VKAPI_CALL fake_CreateInstance(const VkInstanceCreateInfo* ci, const VkAllocationCallbacks* a,
                                               VkInstance* out) {
  if (fault("noinstance")) return VK_ERROR_INCOMPATIBLE_DRIVER;
  VkResult r = ((PFN_vkCreateInstance)real(NULL, "vkCreateInstance"))(ci, a, out);
  if (r == VK_SUCCESS) {
    instance = *out;
    real_gdpa = (PFN_vkGetDeviceProcAddr)real(instance, "vkGetDeviceProcAddr");
  }
  return r;
}

static VkResult VKAPI_CALL fake_EnumeratePhysicalDevices(VkInstance i, uint32_t* n, VkPhysicalDevice* out) {
  if (fault("nodevice")) return *n = 0, VK_SUCCESS;
  return ((PFN_vkEnumeratePhysicalDevices)real(i, "vkEnumeratePhysicalDevices"))(i, n, out);
}

static VkResult VKAPI_CALL fake_CreateDevice(VkPhysicalDevice p, const VkDeviceCreateInfo* ci,
                                             const VkAllocationCallbacks* a, VkDevice* out) {
  if (fault("device")) return VK_ERROR_INITIALIZATION_FAILED;
  VkResult r = ((PFN_vkCreateDevice)real(instance, "vkCreateDevice"))(p, ci, a, out);
  if (r == VK_SUCCESS) device = *out;
  return r;
}

static VkResult VKAPI_CALL fake_AllocateMemory(VkDevice d, const VkMemoryAllocateInfo* ai,
                                               const VkAllocationCallbacks* a, VkDeviceMemory* out) {
  if (fault("alloc:") && ++allocations == atoi(getenv("TGC_FAKE_VK_FAIL") + 6)) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
  return ((PFN_vkAllocateMemory)real_device(d, "vkAllocateMemory"))(d, ai, a, out);
}

static VkResult VKAPI_CALL fake_CreateComputePipelines(VkDevice d, VkPipelineCache c, uint32_t n,
                                                       const VkComputePipelineCreateInfo* ci,
                                                       const VkAllocationCallbacks* a, VkPipeline* out) {
  if (fault("pipeline")) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
  return ((PFN_vkCreateComputePipelines)real_device(d, "vkCreateComputePipelines"))(d, c, n, ci, a, out);
}

static VkResult VKAPI_CALL fake_QueueSubmit(VkQueue q, uint32_t n, const VkSubmitInfo* s, VkFence f);

static PFN_vkVoidFunction VKAPI_CALL fake_GetDeviceProcAddr(VkDevice d, const char* name);

/* The entry points that carry a fault, by name; NULL for the others. */
static PFN_vkVoidFunction faulty(const char* name) {
  static const struct {
    const char* name;
    PFN_vkVoidFunction fn;
  } table[] = {
      {"vkCreateInstance", (PFN_vkVoidFunction)fake_CreateInstance},
      {"vkEnumeratePhysicalDevices", (PFN_vkVoidFunction)fake_EnumeratePhysicalDevices},
      {"vkCreateDevice", (PFN_vkVoidFunction)fake_CreateDevice},
      {"vkAllocateMemory", (PFN_vkVoidFunction)fake_AllocateMemory},
      {"vkCreateComputePipelines", (PFN_vkVoidFunction)fake_CreateComputePipelines},
      {"vkQueueSubmit", (PFN_vkVoidFunction)fake_QueueSubmit},
      {"vkGetDeviceProcAddr", (PFN_vkVoidFunction)fake_GetDeviceProcAddr},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
    if (strcmp(name, table[i].name) == 0) return table[i].fn;
  return NULL;
}

static VkResult VKAPI_CALL fake_QueueSubmit(VkQueue q, uint32_t n, const VkSubmitInfo* s, VkFence f) {
  if (fault("lost")) return VK_ERROR_DEVICE_LOST;
  return ((PFN_vkQueueSubmit)real_device(device, "vkQueueSubmit"))(q, n, s, f);
}

static PFN_vkVoidFunction VKAPI_CALL fake_GetDeviceProcAddr(VkDevice d, const char* name) {
  PFN_vkVoidFunction f = faulty(name);
  return f ? f : real_device(d, name);
}

PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance i, const char* name) {
  if (!real_gipa) {
    const char* path = getenv("TGC_FAKE_VK_LOADER");
    void* lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!lib) {
      fprintf(stderr, "fake_vulkan: cannot load the real loader (TGC_FAKE_VK_LOADER=%s)\n", path ? path : "");
      return NULL;
    }
    real_gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
  }
  if (strcmp(name, "vkGetInstanceProcAddr") == 0) return (PFN_vkVoidFunction)vkGetInstanceProcAddr;
  PFN_vkVoidFunction f = faulty(name);
  return f ? f : real(i, name);
}
