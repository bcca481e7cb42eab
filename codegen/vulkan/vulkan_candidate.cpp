#include "codegen/vulkan/vulkan_candidate.h"

#include <sstream>

namespace tgc {

std::string vulkan_candidate(const Graph& g, const LoopProgram& p, const GpuKernel& k) {
  std::ostringstream o;
  o << "tgc-vk 1\nkernel " << p.name << "\nglobal " << k.global[0] << "\nlocal " << k.local[0] << "\n";
  for (int64_t b : p.args) {
    const BufferInfo& info = g.buffer(b);
    o << "buffer " << numel(info.shape) * dtype_size(info.dtype) << " " << int(info.dtype) << "\n";  // DType = enum tgc_dtype
  }
  o << "spirv\n" << k.blob;
  return o.str();
}

}  // namespace tgc
