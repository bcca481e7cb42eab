#include "frontend/gguf/gguf_weights.h"

#include <cstring>

#include "frontend/gguf/block_values.h"
#include "ir/error.h"

namespace tgc {

namespace {
// A quantized tensor's blocks split by field, over R rows of K elements.
struct SplitBlocks {
  HostTensor d;   // f16 [R, blocks]: the scale of each block (K-quants: of each super-block)
  HostTensor m;   // f16, as d: q4_1/q5_1's min, q4_K/q5_K's dmin
  HostTensor sc;  // K-quants: q4_K/q5_K u8 [R, K/32] six-bit scales; q6_K i8 [R, K/16]
  HostTensor mn;  // q4_K/q5_K: u8 [R, K/32] six-bit mins
  HostTensor lo;  // u8 [R, K/2]: each value's low nibble, element 2j in the low half of byte j
  HostTensor hi;  // u8 [R, K*b/8]: the b top bits (q5 types 1, q6_K 2) packed the same way, low first
  HostTensor q8;  // q8_0: i8 [R, K]
};

SplitBlocks split_blocks(GgmlType type, const uint8_t* src, int64_t R, int64_t K) {
  const GgmlTypeInfo* info = ggml_type_info(uint32_t(type));
  const bool kq = k_quant(type), q8 = type == GgmlType::Q8_0;
  const int64_t nb = K / info->block_elems, per_row = nb * info->block_bytes, bits = top_bits(type);
  SplitBlocks s;
  s.d = HostTensor(DType::F16, {R, nb});
  if (has_min(type)) s.m = HostTensor(DType::F16, {R, nb});
  if (type == GgmlType::Q6_K) s.sc = HostTensor(DType::I8, {R, K / 16});
  if (kq && type != GgmlType::Q6_K) s.sc = HostTensor(DType::U8, {R, K / kBlock}), s.mn = s.sc;
  if (q8) s.q8 = HostTensor(DType::I8, {R, K});
  if (!q8) s.lo = HostTensor(DType::U8, {R, K / 2});
  if (bits) s.hi = HostTensor(DType::U8, {R, K * bits / 8});
  uint8_t u[kSuper], scales[16];
  for (int64_t r = 0; r < R; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = src + r * per_row + b * info->block_bytes;
      const int64_t at = r * nb + b, first = r * K + b * info->block_elems;  // first: the block's element 0
      std::memcpy(&s.d.bytes[size_t(at * 2)], blk + (type == GgmlType::Q6_K ? 208 : 0), 2);
      if (has_min(type)) std::memcpy(&s.m.bytes[size_t(at * 2)], blk + 2, 2);
      if (q8) {
        std::memcpy(&s.q8.bytes[size_t(first)], blk + 2, kBlock);
        continue;
      }
      if (kq) {
        k_values(type, blk, u, scales);
        if (type == GgmlType::Q6_K) std::memcpy(&s.sc.bytes[size_t(first / 16)], scales, 16);
        for (int64_t j = 0; type != GgmlType::Q6_K && j < 8; ++j)
          s.sc.bytes[size_t(first / kBlock + j)] = scales[2 * j],
                                             s.mn.bytes[size_t(first / kBlock + j)] = scales[2 * j + 1];
      } else {
        legacy_values(type, blk, u);
      }
      for (int64_t e = 0; e < info->block_elems; ++e) {
        const int64_t i = first + e;
        s.lo.bytes[size_t(i / 2)] |= uint8_t((u[e] & 15) << (4 * (i % 2)));
        if (bits) s.hi.bytes[size_t(i * bits / 8)] |= uint8_t((u[e] >> 4) << (i * bits % 8));
      }
    }
  return s;
}

// [R, n] with each value repeated `each` times along the row: [R, n * each].
Tensor repeat_each(const Tensor& x, int64_t each) {
  int64_t R = x.dim(0), n = x.dim(1);
  return x.reshape({R, n, 1}).expand({R, n, each}).reshape({R, n * each});
}

// u8 [R, W] as their bit fields of `bits` bits, low first: i32 [R, W * 8 / bits]. A concatenation
// of shifted copies, so that where a kernel's loops fix the field, its shift is a constant (and
// where they do not, a select among 8 / bits copies: two for nibbles). Bytes rather than words:
// consecutive bytes a thread reads still become one vector load.
Tensor bit_fields(const Tensor& bytes, int64_t bits) {
  const int64_t R = bytes.dim(0), W = bytes.dim(1), per_word = 8 / bits;
  // In i32: a GPU extracts a field of a loaded word in one instruction (PTX bfe), not through
  // 8- and 16-bit registers.
  Tensor w = bytes.cast(DType::I32).unsqueeze({-1});
  std::vector<Tensor> fields;
  for (int64_t i = 0; i < per_word; ++i)
    fields.push_back(
        w.bitwise(Op::Shr, w.scalar(double(i * bits))).bitwise(Op::And, w.scalar(double((1 << bits) - 1))));
  return Tensor::cat(fields, -1).reshape({R, W * per_word});
}

Tensor f32(const Tensor& x) { return x.cast(DType::F32); }

// The f32 values [R, K] of a quantized tensor from its fields, each product in the order
// llama.cpp's dequantization computes it.
Tensor dequantize(Graph& g, const std::string& name, GgmlType type, SplitBlocks s) {
  auto weight = [&](const char* field, HostTensor& h) { return Tensor::weight(g, name + field, std::move(h)); };
  Tensor d = f32(weight(".d", s.d));
  if (type == GgmlType::Q8_0) return f32(weight(".q8", s.q8)) * repeat_each(d, kBlock);
  Tensor q = bit_fields(weight(".lo", s.lo), 4);
  if (top_bits(type)) {
    Tensor top = bit_fields(weight(".hi", s.hi), top_bits(type));
    q = q.bitwise(Op::Or, top.bitwise(Op::Shl, top.scalar(4)));
  }
  switch (type) {
    case GgmlType::Q4_0: return repeat_each(d, kBlock) * f32(q - 8);
    case GgmlType::Q5_0: return repeat_each(d, kBlock) * f32(q - 16);
    case GgmlType::Q4_1:
    case GgmlType::Q5_1: return repeat_each(d, kBlock) * f32(q) + repeat_each(f32(weight(".m", s.m)), kBlock);
    case GgmlType::Q6_K: {
      Tensor dsc = repeat_each(d, kSuper / 16) * f32(weight(".sc", s.sc));  // [R, K/16]
      return repeat_each(dsc, 16) * f32(q - 32);
    }
    default: {  // q4_K, q5_K: (d * scale) * q - dmin * min per sub-block of 32
      Tensor dsc = repeat_each(d, kSuper / kBlock) * f32(weight(".sc", s.sc));
      Tensor dmn = repeat_each(f32(weight(".m", s.m)), kSuper / kBlock) * f32(weight(".mn", s.mn));
      return repeat_each(dsc, kBlock) * f32(q) - repeat_each(dmn, kBlock);
    }
  }
}
}  // namespace

bool gguf_type_supported(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return true;
    default: return false;
  }
}

Tensor gguf_weight(Graph& g, const GgufFile& f, const GgufTensorInfo& t) {
  if (!gguf_type_supported(t.type))
    throw Error(f.path() + ": tensor '" + t.name + "' has type " + ggml_type_name(t.type) +
                "; tgc reads f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K and q6_K");
  Shape shape(t.dims.rbegin(), t.dims.rend());
  std::shared_ptr<const Bytes> bytes = f.tensor_bytes(t);
  switch (t.type) {
    case GgmlType::F32: return Tensor::weight(g, t.name, DType::F32, shape, bytes);
    case GgmlType::F16: return Tensor::weight(g, t.name, DType::F16, shape, bytes).cast(DType::F32);
    case GgmlType::BF16: return Tensor::weight(g, t.name, DType::BF16, shape, bytes).cast(DType::F32);
    default: break;
  }
  const int64_t K = t.dims[0], R = t.numel() / std::max<int64_t>(K, 1);
  return dequantize(g, t.name, t.type, split_blocks(t.type, bytes->data(), R, K)).reshape(shape);
}

}  // namespace tgc
