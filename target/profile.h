// What the kernel heuristics, the optimizer's legality checks and the GPU lowering know about a
// target: its vector width, registers, work-group limits and index width. Plain data without
// LLVM, so passes/ can read it; each row of the target table (target/targets.h) builds one.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace tgc {

// The CPU's int8 dot-product instruction (Op::Dot4 on vectors): x86 VNNI's vpdpbusd, EVEX
// (AVX512-VNNI: 128 to 512 bits) or VEX (AVX-VNNI: 128 and 256); otherwise plain integer code.
enum class Int8Dot : uint8_t { None, Avx512Vnni, AvxVnni };

struct TargetProfile {
  bool gpu = false;
  int vector_lanes = 8;            // f32 lanes of one vector register
  int vector_registers = 16;       // architectural vector registers
  int64_t l2_bytes = 1 << 20;      // per core
  int max_local = 256;             // GPU: work-group size limit
  int64_t local_bytes = 0;         // GPU: shared memory per work-group
  int64_t fill_threads = 1 << 16;  // GPU: threads in flight that keep it busy (SMs x resident threads)
  int max_expand = 256;            // CPU: most copies one kernel body may be expanded into
  int index_bits = 64;             // width of index arithmetic in kernels (GPUs may want 32)
  std::string gpu_arch;            // the GPU architecture kernels are written for ("sm_90"), if the target names one
  bool subgroup_reduce = false;    // GPU: group reduces through subgroup arithmetic
  bool half_math = false;          // GPU: the kernel language computes in f16 (--precision=fp16 uses it)
  bool tf32 = false;               // CUDA: f32 matrix products may run on tensor cores in tf32 (--precision=tf32)
  // GPU: weights read 4 elements at a time live in 2D images and are read through the texture
  // cache (codegen/gpu/image_weights.h); the heuristic unrolls reduces by 4 along such weights.
  bool image_weights = false;
  // GPU: redundant reduce work (elements read again by the threads that share a reduce's result)
  // worth one kernel launch less: a launch costs a few microseconds, in which a GPU reads a few
  // million elements (passes/schedule.h).
  double redundant_work = 1 << 20;
  // GPU: threads of the one work-group in which consecutive small kernels run as one launch
  // (passes/serial_launches.h); 0: every kernel is a launch of its own.
  int64_t serial_group = 0;
  Int8Dot int8_dot = Int8Dot::None;  // CPU
  bool fma = true;                   // CPU: a fused multiply-add instruction (x86: FMA3 or AVX-512)
};

// Reads the vector width from the CPU's features (LLVM names: avx512f, avx2...).
TargetProfile cpu_profile(const std::function<bool(const std::string&)>& has_feature, bool aarch64);
// Adreno 6xx through OpenCL (the qcom target).
TargetProfile opencl_profile();
// Any Vulkan 1.1 GPU (the vulkan target), and the Adreno X1-85 through Vulkan (adreno).
TargetProfile vulkan_profile();
TargetProfile adreno_vulkan_profile();
// NVIDIA GPUs through CUDA (the cuda target).
TargetProfile cuda_profile();

}  // namespace tgc
