// Kernel dialects: how a target's kernels are lowered, rendered and built as tuning candidates.
// One row per `Dialect` of target/targets.h. CPU kernels (LlvmCpu) become LLVM functions in the
// model's host objects (codegen/cpu_objects.h); GPU dialects render each kernel into a launch blob
// (its source or binary) that the artifact carries and the runtime backend loads.
#pragma once
#include <array>
#include <functional>
#include <string>

#include "passes/lower.h"
#include "passes/opt.h"
#include "target/targets.h"

namespace tgc {

// A GPU kernel as the runtime launches it.
struct GpuKernel {
  std::string blob;                        // OpenCL C source, SPIR-V or PTX: no NUL terminator
  std::array<int64_t, 3> global{1, 1, 1};  // work items in all, per dimension
  std::array<int64_t, 3> local{0, 0, 0};   // work-group size; 0: the driver chooses
  std::string fallback;  // "", or SPIR-V without the optional features blob needs (Float16, subgroup arithmetic)
};

struct DialectOps {
  const char* name;    // "llvm-cpu", "opencl", "glsl": tuning-cache and --help spelling
  LowerOptions lower;  // how loop programs are shaped for this dialect
  // GPU dialects: the kernel's launch blob and sizes, and its source text (`tgc inspect
  // --stage=source`; the blob itself where that is text). Empty for LlvmCpu.
  std::function<GpuKernel(const Graph&, const LoopProgram&, const TargetProfile&)> render_gpu;
  std::function<std::string(const Graph&, const LoopProgram&, const TargetProfile&)> render_source;
  // GPU dialects with serial launches (passes/serial_launches.h): one launch running `stages`
  // in one work-group of TargetProfile::serial_group threads, taking serial_launch_args
  // (codegen/gpu/c_renderer.h); null where the dialect has none.
  std::function<GpuKernel(const Graph&, const std::vector<const LoopProgram*>& stages, const std::string& name,
                          const TargetProfile&)>
      render_serial;
  // A tuning candidate for tgc-agent (docs/tuning.md) and the agent request that times it.
  std::function<std::string(const Graph&, const LoopProgram&, const ResolvedTarget&, const std::string& workdir)>
      candidate;
  const char* agent_request;  // "time" (a one-kernel shared object), "time-cl" (OpenCL C), "time-vk" (SPIR-V),
                              // "time-cuda" (PTX)
  // GPU dialects: the API of the agent's greeting that times the candidates (tune/agent_client.h's
  // kAgentApis), its name in messages, and whether the tuning cache's key names the device (SPIR-V
  // and PTX are the same code on any device; OpenCL C is compiled by the driver). Null for the CPU.
  const char* agent_api = nullptr;
  const char* api_title = nullptr;
  bool key_names_device = false;
};

const DialectOps& dialect_ops(Dialect d);

// The per-kernel pipeline: the optimization actions applied, then the loop program lowered as the
// target's dialect wants it. Grows the graph, so one thread at a time.
struct LoweredKernel {
  LoopProgram program;
  size_t hash;  // of the optimized kernel: equal hashes, same code
};
LoweredKernel lower_kernel(Graph& g, const Kernel& k, const std::vector<Opt>& opts, const ResolvedTarget& t);

}  // namespace tgc
