#include "codegen/dialect.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/cuda/render_ptx.h"
#include "codegen/gpu/runtime_candidate.h"
#include "codegen/kernel_library.h"
#include "codegen/opencl/render_opencl.h"
#include "codegen/vulkan/glsl_to_spirv.h"
#include "codegen/vulkan/render_glsl.h"
#include "ir/error.h"

namespace tgc {
namespace {
namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in) throw Error(path + ": cannot read");
  return s.str();
}

// CPU candidates are one-kernel shared objects for the tuning machine's triple and CPU.
std::string cpu_candidate(const Graph& g, const LoopProgram& p, const ResolvedTarget& t, const std::string& workdir) {
  static std::atomic<uint64_t> serial{0};  // candidates of one kernel are built side by side
  std::string path = (fs::path(workdir) / (p.name + "_" + std::to_string(serial++) + ".so")).string();
  write_kernel_library(g, p, t, workdir, path);
  std::string so = read_file(path);
  std::error_code ec;
  fs::remove(path, ec);
  return so;
}

std::string opencl_source(const Graph& g, const LoopProgram& p, const TargetProfile& profile) {
  return render_opencl(g, p, {.index_bits = profile.index_bits});
}

GpuKernel opencl_kernel(const Graph& g, const LoopProgram& p, const TargetProfile& profile) {
  // All global dims are flattened into dimension 0 (codegen/gpu/gpu_lowering.h).
  OpenClLaunch launch = opencl_launch(p);
  return {opencl_source(g, p, profile), {launch.global, 1, 1}, {launch.local, 0, 0}};
}

// One work-group of the profile's serial group size.
GpuKernel opencl_serial_kernel(const Graph& g, const std::vector<const LoopProgram*>& stages, const std::string& name,
                               const TargetProfile& profile) {
  int64_t n = profile.serial_group;
  return {render_opencl_serial(g, stages, name, n, {.index_bits = profile.index_bits}), {n, 1, 1}, {n, 0, 0}};
}

std::string glsl_source(const Graph& g, const LoopProgram& p, const TargetProfile& profile) {
  return render_glsl(g, p, {.index_bits = profile.index_bits, .subgroups = profile.subgroup_reduce});
}

// Whether SPIR-V declares a capability that only some devices have and that the renderer can do
// without: Float16 (9, f16 arithmetic), GroupNonUniformArithmetic (63, subgroup reduces).
bool needs_optional_feature(const std::string& spirv) {
  for (uint32_t c : spirv_capabilities(spirv))
    if (c == 9 || c == 63) return true;
  return false;
}

// The launch counts threads in dimension 0 and names the work-group size, which the runtime
// passes as specialization constant 0; the shader returns at once in padding threads. A kernel
// that uses an optional device feature also carries itself without any (float registers: the
// same f16 loads and stores, the arithmetic unrounded; group reduces through shared memory only),
// which the runtime loads on a device that lacks one.
GpuKernel glsl_kernel(const Graph& g, const LoopProgram& p, const TargetProfile& profile) {
  GpuKernel k{glsl_to_spirv(glsl_source(g, p, profile), p.name),
              {gpu_global_size(p), 1, 1},
              {p.locals.empty() ? kGlslDefaultLocalSize : gpu_local_size(p), 1, 1}};
  if (needs_optional_feature(k.blob))
    k.fallback = glsl_to_spirv(
        render_glsl(g, p, {.index_bits = profile.index_bits, .subgroups = false, .half_math = false}), p.name);
  return k;
}
std::string ptx_source(const Graph& g, const LoopProgram& p, const TargetProfile& profile) {
  return render_ptx(g, p, {.sm = profile.gpu_arch});
}

// Whole blocks of threads: the runtime launches global / local blocks.
GpuKernel ptx_kernel(const Graph& g, const LoopProgram& p, const TargetProfile& profile) {
  return {ptx_source(g, p, profile), {ptx_grid_threads(p), 1, 1}, {ptx_block_size(p), 1, 1}};
}
}  // namespace

const DialectOps& dialect_ops(Dialect d) {
  static const DialectOps llvm_cpu{
      "llvm-cpu", {.inner_loop = true, .streams = true}, nullptr, nullptr, nullptr, cpu_candidate, "time"};
  static const DialectOps opencl{"opencl",
                                 {.inner_loop = false, .factor_sums = true},
                                 opencl_kernel,
                                 opencl_source,
                                 opencl_serial_kernel,
                                 [](const Graph& g, const LoopProgram& p, const ResolvedTarget& t, const std::string&) {
                                   return runtime_candidate(RuntimeApi::OpenCl, g, p, opencl_kernel(g, p, t.profile));
                                 },
                                 "time-cl",
                                 "opencl",
                                 "OpenCL"};
  static const DialectOps glsl{"glsl",
                               {.inner_loop = false, .factor_sums = true},
                               glsl_kernel,
                               glsl_source,
                               nullptr,
                               [](const Graph& g, const LoopProgram& p, const ResolvedTarget& t, const std::string&) {
                                 return runtime_candidate(RuntimeApi::Vulkan, g, p, glsl_kernel(g, p, t.profile));
                               },
                               "time-vk",
                               "vulkan",
                               "Vulkan",
                               true};
  static const DialectOps ptx{"ptx",
                              {.inner_loop = false, .factor_sums = true},
                              ptx_kernel,
                              ptx_source,
                              nullptr,
                              [](const Graph& g, const LoopProgram& p, const ResolvedTarget& t, const std::string&) {
                                return runtime_candidate(RuntimeApi::Cuda, g, p, ptx_kernel(g, p, t.profile));
                              },
                              "time-cuda",
                              "cuda",
                              "CUDA",
                              true};
  switch (d) {
    case Dialect::LlvmCpu: return llvm_cpu;
    case Dialect::OpenCL: return opencl;
    case Dialect::Glsl: return glsl;
    case Dialect::Ptx: return ptx;
  }
  throw Error("internal error: unknown kernel dialect");
}

LoweredKernel lower_kernel(Graph& g, const Kernel& k, const std::vector<Opt>& opts, const ResolvedTarget& t) {
  Kernel optimized = apply_opts(g, k, opts, t.profile);
  // Equal code takes equal arguments: a kernel whose VAR the opts folded away (a short run-time
  // loop taken whole) reads no vars buffer.
  list_vars_buffer(g, optimized);
  return {lower(g, optimized, dialect_ops(t.desc->dialect).lower), optimized.hash()};
}

}  // namespace tgc
