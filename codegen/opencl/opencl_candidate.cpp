#include "codegen/opencl/opencl_candidate.h"

#include <sstream>

#include "codegen/opencl/render_opencl.h"

namespace tgc {

std::string opencl_candidate(const Graph& g, const LoopProgram& p, const GpuOptions& gpu) {
  std::ostringstream o;
  // Launched as the runtime launches it (codegen/dialect.cpp): dimension 0 only.
  OpenClLaunch launch = opencl_launch(p);
  o << "tgc-cl 1\nkernel " << p.name << "\nglobal " << launch.global << "\nlocal " << launch.local << "\n";
  for (int64_t b : p.args) {
    const BufferInfo& info = g.buffer(b);
    o << "buffer " << numel(info.shape) * dtype_size(info.dtype) << " " << int(info.dtype) << "\n";  // DType = enum tgc_dtype
  }
  o << "source\n" << render_opencl(g, p, gpu);
  return o.str();
}

}  // namespace tgc
