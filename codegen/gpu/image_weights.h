// Weights as images (TargetProfile::image_weights: the qcom target). A weight that every kernel
// reads only in aligned 4-vectors (an UNROLL or UPCAST by 4 along its contiguous axis) lives in a
// 2D image of RGBA texels (f32 or f16, read as float 4-vectors) and is read through the texture
// cache, which on Adreno caches what its plain loads leave to L2 (tinygrad's QCOM backend's main
// trick). The layout stays the buffer's: texel i holds elements 4i..4i+3 (runtime-stub/include/tgc_model.h
// TGC_STORAGE_IMAGE).
#pragma once
#include <vector>

#include "passes/lower.h"

namespace tgc {

// Marks those weights BufferInfo::image, given every kernel of the model as it will be rendered.
void place_image_weights(Graph& g, const std::vector<LoopProgram>& programs);

}  // namespace tgc
