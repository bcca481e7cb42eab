#include "codegen/gpu/image_weights.h"

#include <map>

#include "codegen/gpu/c_renderer.h"
#include "runtime-stub/include/tgc_model.h"

namespace tgc {

void place_image_weights(Graph& g, const std::vector<LoopProgram>& programs) {
  // OpenCL devices hold 2D images at least 8192 texels high (CL_DEVICE_IMAGE2D_MAX_HEIGHT of the
  // full profile); the runtime checks the device's own limits.
  constexpr int64_t kMaxTexels = int64_t(TGC_IMAGE_ROW_TEXELS) * 8192;
  std::map<int64_t, bool> in_fours;  // weight -> every kernel so far reads it only in 4-vectors
  for (const LoopProgram& p : programs) {
    std::set<int64_t> fours = buffers_read_in_fours(g, p);
    for (int64_t b : p.args)
      if (g.buffer(b).kind == BufferKind::Weight) in_fours.emplace(b, true).first->second &= fours.count(b) > 0;
  }
  for (const auto& [b, only_fours] : in_fours) {
    BufferInfo& info = g.buffer(b);
    int64_t n = numel(info.shape);
    bool texels = info.dtype == DType::F32 || info.dtype == DType::F16;
    info.image = only_fours && texels && n % 4 == 0 && n / 4 <= kMaxTexels;
  }
}

}  // namespace tgc
