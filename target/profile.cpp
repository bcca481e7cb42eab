#include "target/profile.h"

namespace tgc {

TargetProfile cpu_profile(const std::function<bool(const std::string&)>& has, bool aarch64) {
  TargetProfile t;
  if (aarch64) {
    t.vector_lanes = 4, t.vector_registers = 32;
  } else if (has("avx512f")) {
    t.vector_lanes = 16, t.vector_registers = 32;
  } else if (has("avx2") || has("avx")) {
    t.vector_lanes = 8, t.vector_registers = 16;
  } else {
    t.vector_lanes = 4, t.vector_registers = 16;
  }
  t.fma = aarch64 || has("fma") || has("avx512f");
  if (!aarch64)
    t.int8_dot = has("avx512vnni") && has("avx512vl") ? Int8Dot::Avx512Vnni
                 : has("avxvnni")                     ? Int8Dot::AvxVnni
                                                      : Int8Dot::None;
  return t;
}

TargetProfile opencl_profile() {
  TargetProfile t;
  t.gpu = true;
  t.vector_lanes = 1;
  t.max_local = 256;
  t.local_bytes = 16 << 10;
  // half arithmetic where the device has cl_khr_fp16 (Adreno's doubles its ALU rate), float
  // where it does not: the kernels carry both (codegen/opencl/render_opencl.cpp).
  t.half_math = true;
  // Adreno's texture path caches what its plain loads do not (tinygrad's QCOM backend's main
  // trick); every OpenCL GPU with images runs them.
  t.image_weights = true;
  // A launch through OpenCL costs ~4x one in a CUDA graph (4-5 us of host time per enqueue on
  // NVIDIA's driver, docs/performance-gpu.md; no command buffers there).
  t.redundant_work = 1 << 22;
  // For the same reason a squeeze-excite block's means and FC layers run as one launch.
  t.serial_group = 256;
  return t;
}

// 32-bit indices: Vulkan devices need not have 64-bit integers (shaderInt64), and they are slow
// where they exist. 256 threads and 16 KiB of shared memory per work-group fit every desktop and
// mobile GPU of the last decade.
TargetProfile vulkan_profile() {
  TargetProfile t;
  t.gpu = true;
  t.vector_lanes = 1;
  t.max_local = 256;
  t.local_bytes = 16 << 10;
  t.index_bits = 32;
  // A desktop GPU's SMs or CUs times the threads each keeps resident (64 x 2048).
  t.fill_threads = 1 << 17;
  // Subgroup arithmetic in compute shaders: every desktop GPU and Adreno 6xx+ have it; the
  // runtime names the feature when a device does not.
  t.subgroup_reduce = true;
  // float16_t arithmetic (shaderFloat16): Adreno, Mali, desktop GPUs and lavapipe have it.
  t.half_math = true;
  return t;
}

// ../shared/DESIGN.md §4: 1024 threads and 32 KiB of shared memory per work-group (waves of 64).
TargetProfile adreno_vulkan_profile() {
  TargetProfile t = vulkan_profile();
  t.max_local = 1024;
  t.local_bytes = 32 << 10;
  t.fill_threads = 1 << 13;  // 6 shader processors, about 1536 threads resident each
  return t;
}

// Every NVIDIA GPU since Kepler runs 1024 threads and 48 KiB of static shared memory per block;
// 64-bit indices cost little next to memory traffic there and address any buffer.
TargetProfile cuda_profile() {
  TargetProfile t;
  t.gpu = true;
  t.vector_lanes = 1;
  t.max_local = 1024;
  t.local_bytes = 48 << 10;
  t.gpu_arch = "sm_90";
  t.fill_threads = 1 << 18;  // sm_90: 132 SMs x 2048 resident threads
  return t;
}

}  // namespace tgc
