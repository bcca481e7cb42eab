#include "frontend/gguf/int8_matmul.h"

#include <cstring>

#include "ir/error.h"

namespace tgc {

namespace {
constexpr int64_t kBlock = 32;  // elements of a q4_0 / q8_0 block, and of an activation block

// Bytes of one block of each type: an f16 scale, then the quants.
int64_t quant_words(GgmlType t) { return t == GgmlType::Q4_0 ? 4 : 8; }  // 16 or 32 bytes
// What the stored bytes are offset by: q4_0 nibbles are q + 8, q8_0 bytes (stored xor 0x80) q + 128.
int64_t quant_offset(GgmlType t) { return t == GgmlType::Q4_0 ? 8 : 128; }

Tensor last_slice(const Tensor& x, int64_t i) {
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t d : x.shape()) b.push_back({0, d});
  b.back() = {i, i + 1};
  return x.shrink(b);
}
}  // namespace

Q8Activations quantize_q8(const Tensor& x) {
  int64_t n = x.dim(0), K = x.dim(1), nb = K / kBlock;
  check(K % kBlock == 0, "quantize_q8: the row length is not a multiple of 32");
  Tensor xb = x.reshape({n, nb, kBlock});
  // As llama.cpp computes them, division for division: a rounding that differs in the last
  // bit moves some q by one.
  Tensor amax = xb.abs().max({-1}, true), d = amax.div_exact(amax.scalar(127));
  Tensor inv = Tensor::where(amax.ne(amax.scalar(0)), amax.scalar(127).div_exact(amax), amax.scalar(0));
  Tensor q = (xb * inv).round().cast(DType::I32);  // [n, nb, 32] in [-127, 127]
  Tensor bytes = q.bitwise(Op::And, q.scalar(255)).reshape({n, nb, 8, 4});
  Tensor words = last_slice(bytes, 0);
  for (int64_t k = 1; k < 4; ++k) words = words.bitwise(Op::Or, last_slice(bytes, k).bitwise(Op::Shl, q.scalar(double(8 * k))));
  return {words.reshape({n, nb, 8}), d.cast(DType::F16).cast(DType::F32).reshape({n, nb}), q.sum({-1})};
}

bool int8_matmul_supported(GgmlType t) { return t == GgmlType::Q4_0 || t == GgmlType::Q8_0; }

Int8Weight int8_weight(Graph& g, const GgufFile& f, const GgufTensorInfo& t, int64_t rows) {
  check(int8_matmul_supported(t.type) && t.dims.size() == 2 && rows > 0, "int8_weight: a 2-d q4_0 or q8_0 tensor expected");
  const int64_t block_bytes = ggml_type_info(uint32_t(t.type))->block_bytes, wpb = quant_words(t.type);
  const int64_t K = t.dims[0], R = t.dims[1], nb = K / kBlock, groups = (R + rows - 1) / rows;
  const uint8_t flip = t.type == GgmlType::Q8_0 ? 0x80 : 0;  // i8 -> u8 with offset 128
  std::shared_ptr<const Bytes> src = f.tensor_bytes(t);
  HostTensor words(DType::U32, {groups, nb, wpb, rows}), scale(DType::F16, {groups, nb, rows});  // padding rows: zeros
  for (int64_t r = 0; r < R; ++r) {
    int64_t grp = r / rows, lane = r % rows;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = src->data() + (r * nb + b) * block_bytes;
      std::memcpy(&scale.bytes[size_t(((grp * nb + b) * rows + lane) * 2)], blk, 2);
      for (int64_t j = 0; j < wpb; ++j) {
        uint8_t* w = &words.bytes[size_t((((grp * nb + b) * wpb + j) * rows + lane) * 4)];
        for (int64_t k = 0; k < 4; ++k) w[k] = uint8_t(blk[2 + 4 * j + k] ^ flip);
      }
    }
  }
  Tensor w = Tensor::weight(g, t.name + ".int8", std::move(words));
  Tensor s = Tensor::weight(g, t.name + ".int8_scale", std::move(scale));
  return {w, s, t.type, R};
}

Tensor int8_matmul(const Q8Activations& x, const Int8Weight& w) {
  const int64_t n = x.words.dim(0), nb = x.words.dim(1), groups = w.words.dim(0), rows = w.words.dim(3);
  check(w.words.dim(1) == nb, "int8_matmul: the weight's row length differs from the activations'");
  // One word of every row tile and block: [1, groups, nb, rows]; of every token and block: [n, 1, nb, 1].
  auto weight_word = [&](int64_t j) { return w.words.shrink({{0, groups}, {0, nb}, {j, j + 1}, {0, rows}}).reshape({1, groups, nb, rows}); };
  auto act_word = [&](int64_t j) { return last_slice(x.words, j).reshape({n, 1, nb, 1}); };
  // Two chains of DOT4s per block, each half the dependent latency.
  Tensor zero = Tensor::full(x.words.graph(), {1, 1, 1, 1}, 0, DType::I32), acc[2] = {zero, zero};
  if (w.type == GgmlType::Q4_0) {
    // Byte i of the block holds element i (low nibble) and element i + 16 (high nibble).
    for (int64_t j = 0; j < 4; ++j) {
      Tensor word = weight_word(j), mask = word.scalar(0x0F0F0F0F);
      acc[0] = Tensor::dot4(word.bitwise(Op::And, mask), act_word(j), acc[0]);
      acc[1] = Tensor::dot4(word.bitwise(Op::Shr, word.scalar(4)).bitwise(Op::And, mask), act_word(4 + j), acc[1]);
    }
  } else {
    for (int64_t j = 0; j < 8; ++j) acc[j % 2] = Tensor::dot4(weight_word(j), act_word(j), acc[j % 2]);
  }
  // The block's dot product of q's, exact in i32.
  Tensor exact = acc[0] + acc[1] - x.sum.reshape({n, 1, nb, 1}) * double(quant_offset(w.type));
  Tensor scale = w.scale.cast(DType::F32).reshape({1, groups, nb, rows}) * x.scale.reshape({n, 1, nb, 1});
  // Stored as [n, groups, rows]: the kernel keeps the row tile as an axis of its own (vector lanes).
  Tensor out = (scale * exact.cast(DType::F32)).sum({2}).contiguous().reshape({n, groups * rows});
  return out.shrink({{0, n}, {0, w.rows_out}});
}

}  // namespace tgc
