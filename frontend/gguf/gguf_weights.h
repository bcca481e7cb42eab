// GGUF tensors as Tensor API values. A quantized weight stays a u8 buffer holding the file's
// blocks byte for byte; its f32 values are an elementwise expression over that buffer (byte
// slices through movement ops, shifts, masks, f16 scales from bitcasts), so dequantization
// happens inside whichever kernel reads the weight and no expanded copy exists in the artifact.
#pragma once
#include <string>

#include "frontend/gguf/gguf_file.h"
#include "ir/tensor.h"

namespace tgc {

// Whether tgc can read tensors of this type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K, Q6_K).
bool gguf_type_supported(GgmlType t);

// The tensor's values as f32 in row-major order of the reversed ggml dims ([rows..., row
// length]), built over a weight buffer that holds the file's bytes unchanged.
Tensor gguf_weight(Graph& g, const GgufFile& f, const GgufTensorInfo& t);

// The dequantization of `blocks` (u8, [rows, bytes per row] in `type`'s block layout) to f32
// [rows, row length]: the expression gguf_weight puts over its buffer, for tests.
Tensor dequantize_blocks(const Tensor& blocks, GgmlType type);

}  // namespace tgc
