#include "codegen/gpu/runtime_candidate.h"

#include <sstream>

namespace tgc {

std::string runtime_candidate(RuntimeApi api, const Graph& g, const LoopProgram& p, const GpuKernel& k) {
  static const char* const header[] = {"tgc-cl 1", "tgc-vk 1", "tgc-cuda 1"};
  static const char* const code[] = {"source\n", "spirv\n", "ptx\n"};
  std::ostringstream o;
  o << header[int(api)] << "\nkernel " << p.name << "\nglobal " << k.global[0] << "\nlocal " << k.local[0] << "\n";
  for (int64_t b : p.args) {
    const BufferInfo& info = g.buffer(b);
    o << "buffer " << numel(info.shape) * dtype_size(info.dtype) << " " << int(info.dtype)
      << "\n";  // DType = enum tgc_dtype
  }
  o << code[int(api)] << k.blob;
  return o.str();
}

}  // namespace tgc
