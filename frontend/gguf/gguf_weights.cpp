#include "frontend/gguf/gguf_weights.h"

#include "ir/error.h"

namespace tgc {

namespace {
// Block views: a u8 tensor [R, nb, B] (R rows of nb blocks of B bytes) sliced on its last axis.
Tensor bytes_at(const Tensor& blk, int64_t lo, int64_t hi) { return blk.slice({lo}, {hi}, {2}, {}); }

// The f16 stored little-endian at bytes [at, at+2) of each block, as f32: [R, nb, 1].
Tensor f16_at(const Tensor& blk, int64_t at) {
  Tensor lo = bytes_at(blk, at, at + 1).cast(DType::U16), hi = bytes_at(blk, at + 1, at + 2).cast(DType::U16);
  return lo.bitwise(Op::Or, hi.bitwise(Op::Shl, hi.scalar(8))).bitcast(DType::F16).cast(DType::F32);
}

// x [..., m] of u8 viewed as [..., k, m] where copy i is (x >> shifts[i]) & mask: how nibbles
// and bit planes unfold (the k copies become consecutive runs of m elements). A concatenation,
// so that where the kernel's loops fix the copy, its shift is a constant.
Tensor unfold_bits(const Tensor& x, const std::vector<int64_t>& shifts, int64_t mask) {
  std::vector<Tensor> copies;
  for (int64_t s : shifts)
    copies.push_back(x.bitwise(Op::Shr, x.scalar(double(s))).bitwise(Op::And, x.scalar(double(mask))).unsqueeze({-2}));
  return Tensor::cat(copies, -2);
}

// Merges the last two axes.
Tensor merge_last(const Tensor& x) {
  Shape s(x.shape().begin(), x.shape().end() - 2);
  s.push_back(x.dim(-2) * x.dim(-1));
  return x.reshape(s);
}

Tensor to_f32(const Tensor& x) { return x.cast(DType::F32); }

// Q4_K / Q5_K: 8 sub-block scales and mins of 6 bits packed into 12 bytes (at byte 4).
std::pair<Tensor, Tensor> k_scales_mins(const Tensor& blk) {
  Tensor d = bytes_at(blk, 4, 8), m = bytes_at(blk, 8, 12), md = bytes_at(blk, 12, 16);
  auto c = [&](double v) { return d.scalar(v); };
  Tensor sc =
      Tensor::cat({d.bitwise(Op::And, c(63)),
                   md.bitwise(Op::And, c(15)).bitwise(Op::Or, d.bitwise(Op::Shr, c(2)).bitwise(Op::And, c(48)))},
                  -1);
  Tensor mn = Tensor::cat({m.bitwise(Op::And, c(63)),
                           md.bitwise(Op::Shr, c(4)).bitwise(Op::Or, m.bitwise(Op::Shr, c(2)).bitwise(Op::And, c(48)))},
                          -1);
  return {sc, mn};  // [R, nb, 8] each
}

Tensor dequant_q8_0(const Tensor& blk) { return to_f32(bytes_at(blk, 2, 34).bitcast(DType::I8)) * f16_at(blk, 0); }

Tensor nibbles(const Tensor& qs) { return merge_last(unfold_bits(qs, {0, 4}, 15)); }  // [R, nb, 2*n]

Tensor dequant_q4_0(const Tensor& blk) {
  Tensor q = nibbles(bytes_at(blk, 2, 18)).cast(DType::I16) - 8;
  return f16_at(blk, 0) * to_f32(q);
}

Tensor dequant_q4_1(const Tensor& blk) {
  return f16_at(blk, 0) * to_f32(nibbles(bytes_at(blk, 4, 20))) + f16_at(blk, 2);
}

// Q5_0/Q5_1: bit j of the 32-bit qh (bit j % 8 of byte j / 8) is the fifth bit of element j.
Tensor fifth_bits(const Tensor& qh /* [R, nb, 4] */) {
  return unfold_bits(qh.unsqueeze({-1}), {0, 1, 2, 3, 4, 5, 6, 7}, 1).reshape({qh.dim(0), qh.dim(1), 32});
}

Tensor q5_values(const Tensor& blk, int64_t qh_at) {
  Tensor ql = nibbles(bytes_at(blk, qh_at + 4, qh_at + 20)), qh = fifth_bits(bytes_at(blk, qh_at, qh_at + 4));
  return ql.bitwise(Op::Or, qh.bitwise(Op::Shl, qh.scalar(4)));
}

Tensor dequant_q5_0(const Tensor& blk) { return f16_at(blk, 0) * to_f32(q5_values(blk, 2).cast(DType::I16) - 16); }

Tensor dequant_q5_1(const Tensor& blk) { return f16_at(blk, 0) * to_f32(q5_values(blk, 4)) + f16_at(blk, 2); }

// Q4_K/Q5_K: value = (d * scale[s]) * q - dmin * min[s] per sub-block s of 32.
Tensor k_quant_affine(const Tensor& blk, const Tensor& q /* [R, nb, 8, 32] */) {
  auto [sc, mn] = k_scales_mins(blk);
  Tensor d = (f16_at(blk, 0) * to_f32(sc)).unsqueeze({-1}), dm = (f16_at(blk, 2) * to_f32(mn)).unsqueeze({-1});
  return merge_last(d * to_f32(q) - dm);
}

Tensor dequant_q4_k(const Tensor& blk) {
  // 128 bytes of nibbles: 4 groups of 32 bytes, low nibbles sub-block 2i, high ones 2i+1.
  Tensor qs = bytes_at(blk, 16, 144).reshape({blk.dim(0), blk.dim(1), 4, 32});
  Tensor q = unfold_bits(qs, {0, 4}, 15).reshape({blk.dim(0), blk.dim(1), 8, 32});
  return k_quant_affine(blk, q);
}

Tensor dequant_q5_k(const Tensor& blk) {
  int64_t R = blk.dim(0), nb = blk.dim(1);
  Tensor ql = unfold_bits(bytes_at(blk, 48, 176).reshape({R, nb, 4, 32}), {0, 4}, 15).reshape({R, nb, 8, 32});
  Tensor qh = unfold_bits(bytes_at(blk, 16, 48), {0, 1, 2, 3, 4, 5, 6, 7}, 1);  // [R, nb, 8, 32]: bit s of byte l
  return k_quant_affine(blk, ql.bitwise(Op::Or, qh.bitwise(Op::Shl, qh.scalar(4))));
}

Tensor dequant_q6_k(const Tensor& blk) {
  int64_t R = blk.dim(0), nb = blk.dim(1);
  Tensor ql = unfold_bits(bytes_at(blk, 0, 128).reshape({R, nb, 2, 64}), {0, 4}, 15).reshape({R, nb, 8, 32});
  Tensor qh = unfold_bits(bytes_at(blk, 128, 192).reshape({R, nb, 2, 32}), {0, 2, 4, 6}, 3).reshape({R, nb, 8, 32});
  Tensor q = ql.bitwise(Op::Or, qh.bitwise(Op::Shl, qh.scalar(4))).cast(DType::I16) - 32;
  Tensor d = f16_at(blk, 208) * to_f32(bytes_at(blk, 192, 208).bitcast(DType::I8));  // [R, nb, 16]
  return merge_last(d.unsqueeze({-1}) * to_f32(q).reshape({R, nb, 16, 16}));
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

Tensor dequantize_blocks(const Tensor& blocks, GgmlType type) {
  const GgmlTypeInfo* info = ggml_type_info(uint32_t(type));
  check(info && blocks.ndim() == 2 && blocks.dtype() == DType::U8 && blocks.dim(1) % info->block_bytes == 0,
        "dequantize_blocks: u8 [rows, whole blocks] of " + ggml_type_name(type) + " expected");
  int64_t R = blocks.dim(0), nb = blocks.dim(1) / info->block_bytes;
  Tensor blk = blocks.reshape({R, nb, info->block_bytes});
  Tensor v;  // [R, nb, block_elems]
  switch (type) {
    case GgmlType::Q8_0: v = dequant_q8_0(blk); break;
    case GgmlType::Q4_0: v = dequant_q4_0(blk); break;
    case GgmlType::Q4_1: v = dequant_q4_1(blk); break;
    case GgmlType::Q5_0: v = dequant_q5_0(blk); break;
    case GgmlType::Q5_1: v = dequant_q5_1(blk); break;
    case GgmlType::Q4_K: v = dequant_q4_k(blk); break;
    case GgmlType::Q5_K: v = dequant_q5_k(blk); break;
    case GgmlType::Q6_K: v = dequant_q6_k(blk); break;
    default: throw Error("dequantize_blocks: " + ggml_type_name(type) + " is not a block type tgc reads");
  }
  return v.reshape({R, nb * info->block_elems});
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
  int64_t row = t.dims[0], rows = t.numel() / std::max<int64_t>(row, 1);
  const GgmlTypeInfo* info = ggml_type_info(uint32_t(t.type));
  Tensor blocks = Tensor::weight(g, t.name, DType::U8, {rows, row / info->block_elems * info->block_bytes}, bytes);
  return dequantize_blocks(blocks, t.type).reshape(shape);
}

}  // namespace tgc
