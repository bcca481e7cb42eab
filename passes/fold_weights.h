// Compile-time evaluation of kernels that read nothing but weights and write integers: the
// packed int8 words and filter sums that the frontend builds from a quantized conv's weight
// (frontend/onnx ConvInteger) would otherwise be recomputed on every run (an int8 embedding
// model ran 213 kernels, 104 of them on weights only). They run once on the reference backend
// (passes/kernel_eval.h: exact for integers) and their outputs become weights. Float kernels
// stay: the reference backend rounds differently from compiled code.
#pragma once
#include "passes/schedule.h"

namespace tgc {

void fold_weight_kernels(Graph& g, Schedule& s);

}  // namespace tgc
