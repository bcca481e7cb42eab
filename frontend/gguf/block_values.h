// The values of a quantized GGUF block unpacked on the host: what the weight layouts that tgc
// stores instead of the file's bytes (gguf_weights.h, int8_matmul.h) are built from.
#pragma once
#include <cstdint>

#include "frontend/gguf/ggml_types.h"

namespace tgc {

constexpr int64_t kBlock = 32;   // elements of a q4_0 ... q8_0 block, and of a K-quant sub-block
constexpr int64_t kSuper = 256;  // elements of a K-quant super-block

bool k_quant(GgmlType t);  // q4_K, q5_K, q6_K
// A min per block or sub-block besides the scale: value = d * q + m (q4_1, q5_1), d * sc * q -
// dmin * mn (q4_K, q5_K).
bool has_min(GgmlType t);
// Bits of a value above its low nibble: the q5 types 1, q6_K 2.
int64_t top_bits(GgmlType t);

// The 32 unsigned values of a q4_0/q4_1/q5_0/q5_1 block in element order: element e's nibble is
// in qs (byte e % 16, high half for e >= 16), the q5 types' fifth bit is bit e of the 32-bit qh.
void legacy_values(GgmlType t, const uint8_t* blk, uint8_t* u);

// The 256 unsigned values of a K-quant super-block, in element order, and its 8 or 16 sub-block
// scales (q4_K/q5_K: 8 pairs of six-bit scale and min; q6_K: 16 i8 scales, one per 16 elements).
void k_values(GgmlType t, const uint8_t* blk, uint8_t* u, uint8_t* scales);

}  // namespace tgc
