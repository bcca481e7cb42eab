// GGUF tensors as Tensor API values. A quantized weight is stored split by field: each field of
// the file's blocks (scales, mins, sub-block scales, values) becomes an array of its own over the
// row, the values packed in element order (two nibbles to a byte, then the q5 and q6 types' top
// bits). Its f32 values are an elementwise expression over those arrays (shifts, masks, f16
// scales), so dequantization happens inside whichever kernel reads the weight, a thread's
// consecutive elements come from consecutive aligned bytes (vector loads on GPUs), and no
// expanded copy exists in the artifact; it takes as many bytes as the file's blocks (q4_K and
// q5_K: their six-bit scales as bytes, 4.6 bits per value instead of 4.5).
#pragma once
#include <string>

#include "frontend/gguf/gguf_file.h"
#include "ir/tensor.h"

namespace tgc {

// Whether tgc can read tensors of this type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K, Q6_K).
bool gguf_type_supported(GgmlType t);

// The tensor's values as f32 in row-major order of the reversed ggml dims ([rows..., row
// length]).
Tensor gguf_weight(Graph& g, const GgufFile& f, const GgufTensorInfo& t);

}  // namespace tgc
