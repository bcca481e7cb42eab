// Matmuls of GGUF q4_0 / q4_1 / q5_0 / q5_1 / q8_0 / q4_K / q5_K / q6_K weights as int8 dot
// products, as llama.cpp computes them: the activations are quantized per block of 32 to q8_0 (a scale and 32 i8), each
// block's products are summed in i32 (Op::Dot4: VNNI's vpdpbusd on x86), and the f32 scales are
// applied once per block. (llama.cpp quantizes the K-quants' activations per 256 instead, as q8_K.)
//
// The weights are repacked at compile time so that one vector register holds the same four
// bytes of `rows` consecutive rows (their words interleaved): a register tile of rows is then one
// vector load per word, and each lane of a DOT4 accumulates one row's block. Values are stored
// unsigned (q4 nibbles as they are, q8_0 bytes offset by 128, the q5 types' and q6_K's five or six
// bits split into a nibble and the top bits); the offset's share, offset * sum of the activation
// block (for the types with a min: min * sum), is subtracted per block. As many bytes as the GGUF tensor, give or take
// the K-quants' unpacked six-bit scales.
#pragma once
#include "frontend/gguf/gguf_file.h"
#include "ir/tensor.h"

namespace tgc {

// Activations x [n, K] (K a multiple of 32) as q8_0 blocks: d = max|x| / 127 (rounded to f16, as
// llama.cpp stores it), q = round(x / d).
struct Q8Activations {
  Tensor words;  // i32 [n, K/32, 8]: q packed four to a word, little-endian
  Tensor scale;  // f32 [n, K/32]: d
  Tensor sum;    // i32 [n, K/32]: the sum of the block's q
  Tensor sum16;  // i32 [n, K/32, 2]: the sums of its halves
};
Q8Activations quantize_q8(const Tensor& x);

bool int8_matmul_supported(GgmlType t);  // q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K and q6_K

// A weight [R, K] in the int8 form for register tiles of `rows` rows (the vector's i32 lanes).
// Rows come in groups of `rows`, and groups in tiles of T (4; q8_0 1) whose vectors are
// interleaved block by block (a register tile of 4 groups reads one stream): row r is lane
// r % rows of group g = r / rows, which is sub-group g % T of tile g / T.
struct Int8Weight {
  Tensor words;  // u32 [tiles, K/32, words per block, T, rows]
  Tensor scale;  // f16 [tiles, K/32, T, rows]; K-quants: [.., K/256, ..], d per super-block
  // K-quants: i8 [tiles, K/32, 2, T, rows]: q6_K the scale of each 16 elements, q4_K/q5_K the
  // block's six-bit scale and min.
  Tensor sub_scale;
  Tensor min_scale;  // the types with a min: f16 shaped as `scale` (q4_1/q5_1 m, q4_K/q5_K dmin)
  GgmlType type;
  int64_t rows_out;  // R
};
Int8Weight int8_weight(Graph& g, const GgufFile& f, const GgufTensorInfo& t, int64_t rows);

// x @ w^T: f32 [n, R].
Tensor int8_matmul(const Q8Activations& x, const Int8Weight& w);

}  // namespace tgc
