#include "codegen/gpu/runtime_candidate.h"

#include <sstream>

namespace tgc {

std::string runtime_candidate(RuntimeApi api, const Graph& g, const LoopProgram& p, const GpuKernel& k) {
  bool vk = api == RuntimeApi::Vulkan;
  std::ostringstream o;
  o << (vk ? "tgc-vk 1" : "tgc-cuda 1") << "\nkernel " << p.name << "\nglobal " << k.global[0] << "\nlocal " << k.local[0] << "\n";
  for (int64_t b : p.args) {
    const BufferInfo& info = g.buffer(b);
    o << "buffer " << numel(info.shape) * dtype_size(info.dtype) << " " << int(info.dtype) << "\n";  // DType = enum tgc_dtype
  }
  o << (vk ? "spirv\n" : "ptx\n") << k.blob;
  return o.str();
}

}  // namespace tgc
