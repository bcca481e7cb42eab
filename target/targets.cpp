#include "target/targets.h"

#include "ir/error.h"

namespace tgc {

const std::vector<TargetDesc>& targets() {
  static const std::vector<TargetDesc> rows = {
      {"cpu", "LLVM kernels for the host code's CPU (x86-64 or aarch64), on a thread pool", "", Dialect::LlvmCpu,
       "tgc_backend_cpu", 64, "", cpu_profile},
      // Adreno 6xx boards are aarch64 Linux/Android. Arena offsets stay 512-byte aligned so the
      // runtime can cut OpenCL sub-buffers out of one arena on any device.
      {"qcom",
       "OpenCL C kernels for Qualcomm Adreno 6xx, weights read as images (runs on any OpenCL 1.2 device with images)",
       "aarch64", Dialect::OpenCL, "tgc_backend_opencl", 512, "", [](const auto&, bool) { return opencl_profile(); }},
      // Arena offsets 256-byte aligned: the largest minStorageBufferOffsetAlignment Vulkan allows,
      // so arena buffers are ranges of one VkBuffer on any device.
      {"vulkan", "GLSL compute kernels as SPIR-V for any Vulkan 1.1 GPU, host code for the host", "", Dialect::Glsl,
       "tgc_backend_vulkan", 256, "", [](const auto&, bool) { return vulkan_profile(); }},
      {"adreno", "SPIR-V kernels for the Adreno X1-85 (Snapdragon X Elite) through Vulkan, aarch64 Linux host code",
       "aarch64", Dialect::Glsl, "tgc_backend_vulkan", 256, "",
       [](const auto&, bool) { return adreno_vulkan_profile(); }},
      // PTX for one GPU architecture (cuda:sm_80 ...), JIT-compiled by the driver at load time.
      // 256-byte arena offsets: what cuMemAlloc guarantees, and wide enough for vector loads.
      {"cuda",
       "PTX kernels for NVIDIA GPUs (cuda:sm_XX, default sm_90; sm_90a: Hopper only, wgmma) through the CUDA driver, "
       "host code for the host",
       "", Dialect::Ptx, "tgc_backend_cuda", 256, "sm_90", [](const auto&, bool) { return cuda_profile(); }},
  };
  return rows;
}

std::string target_names() {
  std::string s;
  for (const TargetDesc& t : targets()) s += (s.empty() ? "" : ", ") + t.name;
  return s;
}

const TargetDesc& find_target(const std::string& name) {
  size_t colon = name.find(':');
  std::string base = name.substr(0, colon);
  for (const TargetDesc& t : targets()) {
    if (t.name != base) continue;
    if (colon != std::string::npos && t.default_variant.empty())
      throw Error("target '" + base + "' takes no variant (got '" + name + "')");
    return t;
  }
  throw Error("unknown target '" + name + "' (known: " + target_names() + ")");
}

std::string target_variant(const TargetDesc& t, const std::string& name) {
  size_t colon = name.find(':');
  return colon == std::string::npos ? t.default_variant : name.substr(colon + 1);
}

}  // namespace tgc
