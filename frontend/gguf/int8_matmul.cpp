#include "frontend/gguf/int8_matmul.h"

#include <cstring>

#include "frontend/gguf/block_values.h"
#include "ir/error.h"

namespace tgc {

namespace {
// Row groups stored interleaved in tiles, block by block: the CPU heuristic's register tile of 4
// groups then reads one stream of consecutive vectors instead of four streams a row group apart.
// Measured on Zen 4 (AVX-512, 1B-shaped llama, decode tok/s at 1 thread, tiles of 1 / 2 / 4): q4_0
// 170 / 160 / 193, q4_K_M (q4_K, q6_K) 155 / 131 / 178, but q8_0 120 / 103 / 66.
int64_t group_tile(GgmlType t) { return t == GgmlType::Q8_0 ? 1 : 4; }

// Words of the int8 form per block of 32: q8_0 32 bytes; the others 16 bytes of low nibbles, then
// the top bits (the q5 types one word, q6_K two).
int64_t quant_words(GgmlType t) { return t == GgmlType::Q8_0 ? 8 : 4 + top_bits(t); }
// What the stored values are offset by: q4_0 nibbles are q + 8, q5_0's five bits q + 16, q8_0
// bytes (stored xor 0x80) q + 128, q6_K's six bits q + 32. The types with a min store q as it is.
int64_t quant_offset(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0: return 8;
    case GgmlType::Q5_0: return 16;
    case GgmlType::Q8_0: return 128;
    case GgmlType::Q6_K: return 32;
    default: return 0;
  }
}

// Index i of x's last axis, kept as an axis of 1.
Tensor last_slice(const Tensor& x, int64_t i) { return x.slice({i}, {i + 1}, {-1}, {}); }

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
  for (int64_t k = 1; k < 4; ++k)
    words = words.bitwise(Op::Or, last_slice(bytes, k).bitwise(Op::Shl, q.scalar(double(8 * k))));
  return {words.reshape({n, nb, 8}), d.cast(DType::F16).cast(DType::F32).reshape({n, nb}), q.sum({-1}).reshape({n, nb}),
          q.reshape({n, nb, 2, 16}).sum({-1}).reshape({n, nb, 2})};
}

bool int8_matmul_supported(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q8_0: return true;
    default: return k_quant(t);
  }
}

Int8Weight int8_weight(Graph& g, const GgufFile& f, const GgufTensorInfo& t, int64_t rows) {
  check(int8_matmul_supported(t.type) && t.dims.size() == 2 && rows > 0,
        "int8_weight: a 2-d tensor of a type int8_matmul_supported names expected");
  const GgmlTypeInfo* info = ggml_type_info(uint32_t(t.type));
  const int64_t wpb = quant_words(t.type), K = t.dims[0], R = t.dims[1], nb = K / kBlock;
  const int64_t T = group_tile(t.type), tiles = (R + rows * T - 1) / (rows * T);
  const int64_t per_row = K / info->block_elems * info->block_bytes, bits = top_bits(t.type);
  const bool kq = k_quant(t.type);
  std::shared_ptr<const Bytes> src = f.tensor_bytes(t);
  // Padding rows stay zero (scale 0).
  HostTensor words(DType::U32, {tiles, nb, wpb, T, rows});
  const int64_t scales_per_row = kq ? nb / 8 : nb;  // d (and dmin / m): per super-block, else per block
  HostTensor scale(DType::F16, {tiles, scales_per_row, T, rows});
  HostTensor min_scale(DType::F16, has_min(t.type) ? Shape{tiles, scales_per_row, T, rows} : Shape{0});
  HostTensor sub_scale(DType::I8, kq ? Shape{tiles, nb, 2, T, rows} : Shape{0});
  int64_t tile = 0, sub = 0, lane = 0;  // of the row being packed: in group tile * T + sub
  // Element [tile, a, j, sub, lane] of a tensor [tiles, A, J, T, rows].
  auto index = [&](int64_t a, int64_t A, int64_t j, int64_t J) {
    return size_t((((tile * A + a) * J + j) * T + sub) * rows + lane);
  };
  auto word = [&](int64_t b, int64_t j) { return &words.bytes[index(b, nb, j, wpb) * 4]; };
  auto scale_at = [&](HostTensor& h, int64_t b) { return &h.bytes[index(kq ? b / 8 : b, scales_per_row, 0, 1) * 2]; };
  uint8_t u[kSuper], scales[16];
  for (int64_t r = 0; r < R; ++r) {
    tile = r / (rows * T), sub = r / rows % T, lane = r % rows;
    const uint8_t* row = src->data() + r * per_row;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = row + (kq ? b / 8 : b) * info->block_bytes;
      if (t.type == GgmlType::Q8_0) {
        std::memcpy(scale_at(scale, b), blk, 2);
        for (int64_t j = 0; j < wpb; ++j)  // i8 -> u8 with offset 128
          for (int64_t k = 0; k < 4; ++k) word(b, j)[k] = uint8_t(blk[2 + 4 * j + k] ^ 0x80);
        continue;
      }
      const uint8_t* v = u;
      if (!kq) {  // d, then m for the types with a min
        legacy_values(t.type, blk, u);
        std::memcpy(scale_at(scale, b), blk, 2);
        if (has_min(t.type)) std::memcpy(scale_at(min_scale, b), blk + 2, 2);
      } else {
        if (b % 8 == 0) {
          k_values(t.type, blk, u, scales);
          std::memcpy(scale_at(scale, b), blk + (t.type == GgmlType::Q6_K ? 208 : 0), 2);
          if (has_min(t.type)) std::memcpy(scale_at(min_scale, b), blk + 2, 2);
        }
        v = u + b % 8 * kBlock;
        for (int64_t h = 0; h < 2; ++h) sub_scale.bytes[index(b, nb, h, 2)] = scales[(b % 8) * 2 + h];
      }
      // Low nibbles as q4_0 packs them (byte k of word j: elements 4j+k and 16+4j+k). The top bits
      // of element 16h+4j+k are slot s = j+4h of byte k: word 4 + s / (8/bits), shifted by
      // bits * (s % (8/bits)).
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t k = 0; k < 4; ++k) word(b, j)[k] = uint8_t((v[4 * j + k] & 15) | (v[16 + 4 * j + k] & 15) << 4);
      for (int64_t s = 0; bits && s < 8; ++s) {
        const int64_t per_byte = 8 / bits, j = s % 4, h = s / 4;
        for (int64_t k = 0; k < 4; ++k)
          word(b, 4 + s / per_byte)[k] |= uint8_t((v[16 * h + 4 * j + k] >> 4) << (bits * (s % per_byte)));
      }
    }
  }
  Int8Weight w{Tensor::weight(g, t.name + ".int8", std::move(words)),
               Tensor::weight(g, t.name + ".int8_scale", std::move(scale)),
               Tensor(),
               Tensor(),
               t.type,
               R};
  if (kq) w.sub_scale = Tensor::weight(g, t.name + ".int8_subscale", std::move(sub_scale));
  if (has_min(t.type)) w.min_scale = Tensor::weight(g, t.name + ".int8_minscale", std::move(min_scale));
  return w;
}

Tensor int8_matmul(const Q8Activations& x, const Int8Weight& w) {
  const int64_t n = x.words.dim(0), nb = x.words.dim(1), tiles = w.words.dim(0), T = w.words.dim(3),
                rows = w.words.dim(4);
  const int64_t groups = tiles * T;
  check(w.words.dim(1) == nb, "int8_matmul: the weight's row length differs from the activations'");
  // [tiles, A, T, rows] as [1, groups, A, rows]; slice j of [tiles, A, J, T, rows] so.
  auto by_group = [&](const Tensor& t) { return t.permute({0, 2, 1, 3}).reshape({1, groups, t.dim(1), rows}); };
  auto slice = [&](const Tensor& t, int64_t j) {
    return by_group(t.slice({j}, {j + 1}, {2}, {}).reshape({tiles, t.dim(1), T, rows}));
  };
  // One word of every row group and block: [1, groups, nb, rows]; of every token and block: [n, 1, nb, 1].
  auto weight_word = [&](int64_t j) { return slice(w.words, j); };
  auto act_word = [&](int64_t j) { return last_slice(x.words, j).reshape({n, 1, nb, 1}); };
  auto per_block = [&](const Tensor& t) { return t.reshape({n, 1, nb, 1}); };
  auto sub_scale = [&](int64_t h) { return slice(w.sub_scale, h).cast(DType::I32); };
  // f16 per super-block of 8 blocks -> f32 per block: [1, groups, nb, rows].
  auto per_super = [&](const Tensor& s) {
    return by_group(s)
        .cast(DType::F32)
        .reshape({groups, nb / 8, 1, rows})
        .expand({groups, nb / 8, 8, rows})
        .reshape({1, groups, nb, rows});
  };
  const double offset = double(quant_offset(w.type));
  const int64_t bits = top_bits(w.type);
  // One chain of DOT4s per block (q6_K: one per half, whose scales differ).
  Tensor zero = Tensor::full(x.words.graph(), {1, 1, 1, 1}, 0, DType::I32), acc[2] = {zero, zero};
  if (w.type == GgmlType::Q8_0) {
    for (int64_t j = 0; j < 8; ++j) acc[0] = Tensor::dot4(weight_word(j), act_word(j), acc[0]);
  } else {
    // Byte k of word j holds element 4j+k (low nibble) and element 16+4j+k (high nibble): chain
    // h sums elements 16h..16h+15.
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t h = 0; h < 2; ++h) {
        Tensor word = weight_word(j);
        Tensor v = (h ? word.bitwise(Op::Shr, word.scalar(4)) : word).bitwise(Op::And, word.scalar(0x0F0F0F0F));
        if (bits) {  // the top bits (int8_weight's layout)
          const int64_t s = j + 4 * h, per_byte = 8 / bits;
          Tensor top = weight_word(4 + s / per_byte);
          top = top.bitwise(Op::Shr, top.scalar(double(bits * (s % per_byte))))
                    .bitwise(Op::And, top.scalar(bits == 1 ? 0x01010101 : 0x03030303));
          v = v.bitwise(Op::Or, top.bitwise(Op::Shl, top.scalar(4)));
        }
        int64_t c = w.type == GgmlType::Q6_K ? h : 0;
        acc[c] = Tensor::dot4(v, act_word(4 * h + j), acc[c]);
      }
  }
  Tensor a_scale = per_block(x.scale), terms;
  switch (w.type) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q5_0: {
      Tensor exact = acc[0] - per_block(x.sum) * offset;
      terms = by_group(w.scale).cast(DType::F32) * a_scale * exact.cast(DType::F32);
      break;
    }
    case GgmlType::Q4_1:
    case GgmlType::Q5_1: {  // d * q + m
      Tensor d = by_group(w.scale).cast(DType::F32), m = by_group(w.min_scale).cast(DType::F32);
      terms = (d * acc[0].cast(DType::F32) + m * per_block(x.sum).cast(DType::F32)) * a_scale;
      break;
    }
    case GgmlType::Q6_K: {  // each half of the block has a scale of its own
      auto sum_half = [&](int64_t h) { return last_slice(x.sum16, h).reshape({n, 1, nb, 1}); };
      Tensor exact = (acc[0] - sum_half(0) * offset) * sub_scale(0) + (acc[1] - sum_half(1) * offset) * sub_scale(1);
      terms = per_super(w.scale) * a_scale * exact.cast(DType::F32);
      break;
    }
    default: {  // q4_K, q5_K: d * scale * q - dmin * min
      // The weights' factors apart (computed once per block for every token of a register tile),
      // so that each token adds two products: (d * scale) (a_s * dot) - (dmin * min) (a_s * sum).
      Tensor dsc = per_super(w.scale) * sub_scale(0).cast(DType::F32),
             dmn = per_super(w.min_scale) * sub_scale(1).cast(DType::F32);
      terms = dsc * (a_scale * acc[0].cast(DType::F32)) - dmn * (a_scale * per_block(x.sum).cast(DType::F32));
      break;
    }
  }
  // Stored as [n, groups, rows]: the kernel keeps the row tile as an axis of its own (vector lanes).
  Tensor out = terms.sum({2}).contiguous().reshape({n, groups * rows});
  return out.shrink({{0, n}, {0, w.rows_out}});
}

}  // namespace tgc
