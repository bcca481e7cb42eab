// Quantization: (de)quantize with per-tensor or per-axis scales, and the integer matmul/conv
// ops, which accumulate (x - zero_point) products in int32.
#include <cmath>

#include "frontend/onnx/onnx_ops.h"

namespace tgc {

namespace {
// A scale or zero point shaped to broadcast against x: scalar, or 1-D along `axis`.
Tensor along_axis(Ctx& c, const Tensor& v, const Tensor& x, int64_t axis) {
  if (v.numel() == 1) return v.reshape({});
  if (v.ndim() != 1 || v.dim(0) != x.dim(axis))
    c.fail("scale/zero point of shape " + shape_str(v.shape()) + " does not match axis " + std::to_string(axis) +
           " of " + shape_str(x.shape()));
  Shape s(size_t(x.ndim()), 1);
  s[size_t(x.norm_axis(axis))] = v.dim(0);
  return v.reshape(s);
}

std::pair<double, double> int_range(DType t) {
  if (t == DType::U8) return {0, 255};
  if (t == DType::I8) return {-128, 127};
  if (t == DType::U16) return {0, 65535};
  if (t == DType::I16) return {-32768, 32767};
  if (t == DType::I32) return {-2147483648.0, 2147483647.0};
  throw Error("quantization to " + std::string(dtype_name(t)) + " is not supported");
}

// a / b rounded once to f32, as onnxruntime's float division: the f64 quotient through a f64
// reciprocal is within 2^-52 of a / b, and a quotient of two f32 values is either a f32 value
// or at least 2^-49 (relative) away from every midpoint between two, so rounding it to f32 gives
// the correctly rounded quotient. (tgc's float division is a multiply by a f32 reciprocal,
// which is off by an ulp in a few percent of cases; a quantizer's ties move with it.)
Tensor f32_div(const Tensor& a, const Tensor& b) {
  return (a.cast(DType::F64) * b.cast(DType::F64).reciprocal()).cast(DType::F32);
}

// round(q) + zero_point (half to even), saturated to t: onnxruntime clamps q to the range
// less the zero point and rounds, the same for integer bounds.
Tensor requantize(const Tensor& q, const std::optional<Tensor>& zp, DType t) {
  auto [lo, hi] = int_range(t);
  Tensor r = q.cast(DType::F32).round();
  if (zp) r = r + zp->cast(DType::F32);
  return r.clip(lo, hi).cast(t);
}

Tensor quantize(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t axis = c.attr_int("axis", 1);
  Tensor scale = along_axis(c, c.in(1), x, axis);
  std::optional<Tensor> zp;
  DType t = DType::U8;
  if (c.has(2)) zp = along_axis(c, c.in(2), x, axis), t = c.in(2).dtype();
  return requantize(f32_div(x.cast(DType::F32), scale.cast(DType::F32)), zp, t);
}

Tensor dequantize(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t axis = c.attr_int("axis", 1);
  Tensor scale = along_axis(c, c.in(1), x, axis);
  Tensor v = x.cast(DType::F32);
  if (c.has(2)) v = v - along_axis(c, c.in(2), x, axis).cast(DType::F32);
  return v * scale;
}

// onnxruntime's arithmetic (GetQuantizationParameter): the range includes 0, scale =
// (max - min) / 255 in f32 (1 when max == min, i.e. all zeros), zero point round(0 - min / scale).
Outs dynamic_quantize(Ctx& c) {
  Tensor x = c.in(0).cast(DType::F32);
  Tensor zero = x.scalar(0);
  Tensor hi = x.max().maximum(zero), lo = x.min().minimum(zero);
  Tensor scale = Tensor::where(hi.eq(lo), x.scalar(1), f32_div(hi - lo, x.scalar(255)));
  Tensor zp = requantize(f32_div(-lo, scale), std::nullopt, DType::U8);
  Tensor y = requantize(f32_div(x, scale), zp, DType::U8);
  return {y, scale, zp};
}

// x - zero_point in int32; `row_axis` says where a 1-D zero point applies (-1: last axis).
Tensor centered(Ctx& c, size_t x_in, size_t zp_in, int64_t zp_axis) {
  Tensor x = c.in(x_in).cast(DType::I32);
  if (!c.has(zp_in)) return x;
  const Tensor& zp = c.in(zp_in);
  if (zp.numel() == 1) return x - zp.reshape({}).cast(DType::I32);
  Shape s(size_t(x.ndim()), 1);
  s[size_t(x.norm_axis(zp_axis))] = zp.numel();
  return x - zp.reshape(s).cast(DType::I32);
}

Tensor matmul_integer(Ctx& c) {
  // a's zero point is per row (axis -2), b's per column (axis -1).
  return centered(c, 0, 2, -2).matmul(centered(c, 1, 3, -1));
}

Tensor qlinear_matmul(Ctx& c) {
  Tensor a = c.in(0).cast(DType::I32) -
             c.in(2).cast(DType::I32).reshape(c.in(2).numel() == 1 ? Shape{} : Shape{c.in(2).numel(), 1});
  Tensor b = c.in(3).cast(DType::I32) -
             c.in(5).cast(DType::I32).reshape(c.in(5).numel() == 1 ? Shape{} : Shape{c.in(5).numel()});
  Tensor acc = a.matmul(b);
  Tensor scale = f32_div(c.in(1).cast(DType::F32) *
                             c.in(4).cast(DType::F32).reshape(c.in(4).numel() == 1 ? Shape{} : Shape{c.in(4).numel()}),
                         c.in(6).cast(DType::F32));
  return requantize(acc.cast(DType::F32) * scale, c.in(7), c.in(7).dtype());
}

Tensor conv_int(Ctx& c, const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias) {
  if (w.ndim() < 3)
    c.fail("weight " + shape_str(w.shape()) + " has rank " + std::to_string(w.ndim()) + ", a conv needs 3 or more");
  std::vector<int64_t> k = c.attr_ints("kernel_shape", Shape(w.shape().begin() + 2, w.shape().end()));
  Window win = window(c, x, k);
  return x.conv(w, bias, win.strides, win.pads, win.dilations, c.attr_int("group", 1));
}

// Bytes (i32 values, taken mod 256) packed four to a word along the channels (axis 1), which
// must be a multiple of 4: byte k of word j is channel 4j + k.
Tensor pack_channel_bytes(const Tensor& t) {
  Shape s = t.shape();
  s[1] /= 4;
  s.insert(s.begin() + 2, 4);
  Shape at(s.size(), 1);
  at[2] = 4;
  Tensor shift = (Tensor::arange(t.graph(), 4, DType::U32) * 8.0).reshape(at);
  Tensor bytes = t.cast(DType::U32).bitwise(Op::And, t.scalar(255).cast(DType::U32)).reshape(s);
  return bytes.bitwise(Op::Shl, shift).sum({2});  // (the bytes do not overlap: a sum is an OR)
}

// ConvInteger over u8 activations as int8 dot products (Op::Dot4: VNNI where the CPU has it):
// with w shifted into i8 as w - o (o = 128 for u8 weights, 0 for i8),
//   sum (x - xz)(w - wz) = sum x (w - o) + (o - wz) sum x - xz sum (w - wz),
// the first two terms dot products of packed x against packed w - o and against ones, the last
// one per output channel. The padding holds xz (a centered 0). Channels per group a multiple of
// 4 and one group; other convs keep the plain i32 form.
std::optional<Tensor> conv_integer_dot4(Ctx& c) {
  const Tensor &x = c.in(0), &w = c.in(1);
  int64_t groups = c.attr_int("group", 1);
  if (x.dtype() != DType::U8 || (w.dtype() != DType::U8 && w.dtype() != DType::I8) || groups != 1 || x.ndim() < 3 ||
      w.ndim() != x.ndim() || x.dim(1) % 4 || w.dim(1) != x.dim(1))
    return std::nullopt;
  std::vector<int64_t> k = c.attr_ints("kernel_shape", Shape(w.shape().begin() + 2, w.shape().end()));
  Window win = window(c, x, k);
  int64_t nsp = x.ndim() - 2, cout = w.dim(0);
  Tensor xz = c.has(2) ? c.in(2).reshape({}).cast(DType::I32) : Tensor::full(x.graph(), {}, 0, DType::I32);
  Tensor wz = c.has(3) ? c.in(3).cast(DType::I32) : Tensor::full(x.graph(), {}, 0, DType::I32);
  if (wz.numel() > 1)
    wz = wz.reshape({cout});
  else
    wz = wz.reshape({});
  const double o = w.dtype() == DType::U8 ? 128 : 0;
  // x's words, padded with xz's word.
  std::vector<std::pair<int64_t, int64_t>> pads = {{0, 0}, {0, 0}};
  for (int64_t i = 0; i < nsp; ++i) pads.push_back({win.pads[size_t(i)], win.pads[size_t(i + nsp)]});
  Tensor words = pack_channel_bytes(x.cast(DType::I32));
  Tensor inside = Tensor::full(x.graph(), words.shape(), 1, DType::U32).pad(pads);
  Tensor xz_word = (xz * double(0x01010101)).cast(DType::U32);
  words = words.pad(pads) + (inside.scalar(1) - inside) * xz_word;
  std::vector<int64_t> none(size_t(2 * nsp), 0);
  Tensor shifted = w.cast(DType::I32) - o;
  Tensor dots = words.conv(pack_channel_bytes(shifted), std::nullopt, win.strides, none, win.dilations, 1, Op::Dot4);
  Shape ones_shape = w.shape();
  ones_shape[0] = 1;
  // Realized once per position: inlined, each output channel would sum its window again.
  Tensor sum_x = words
                     .conv(pack_channel_bytes(Tensor::full(x.graph(), ones_shape, 1, DType::I32)), std::nullopt,
                           win.strides, none, win.dilations, 1, Op::Dot4)
                     .contiguous();  // [N, 1, *out]
  // Per output channel: the zero point and the sum of the centered filter.
  Shape per_channel(size_t(x.ndim()), 1), filter_shape(size_t(w.ndim()), 1);
  per_channel[1] = filter_shape[0] = cout;
  std::vector<int64_t> filter;
  for (int64_t i = 1; i < w.ndim(); ++i) filter.push_back(i);
  // A kernel of its own, which depends on weights only and is folded at compile time.
  Tensor sum_w =
      (w.cast(DType::I32) - (wz.ndim() ? wz.reshape(filter_shape) : wz)).sum(filter).contiguous().reshape(per_channel);
  Tensor wz_c = wz.ndim() ? wz.reshape(per_channel) : wz;
  return dots + sum_x * (wz_c.scalar(o) - wz_c) - sum_w * xz;
}

Tensor conv_integer(Ctx& c) {
  if (std::optional<Tensor> dots = conv_integer_dot4(c)) return *dots;
  Tensor x = centered(c, 0, 2, 1), w = centered(c, 1, 3, 0);
  return conv_int(c, x, w, std::nullopt);
}

Tensor qlinear_conv(Ctx& c) {
  // Inputs: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias (int32).
  Tensor x = centered(c, 0, 2, 1), w = centered(c, 3, 5, 0);
  std::optional<Tensor> bias;
  if (c.has(8)) bias = c.in(8).cast(DType::I32);
  Tensor acc = conv_int(c, x, w, bias);
  Tensor ws = c.in(4).cast(DType::F32);
  if (ws.numel() > 1) {
    Shape s(size_t(acc.ndim()), 1);
    s[1] = ws.numel();
    ws = ws.reshape(s);
  } else {
    ws = ws.reshape({});
  }
  Tensor scale = f32_div(c.in(1).cast(DType::F32).reshape({}) * ws, c.in(6).cast(DType::F32).reshape({}));
  return requantize(acc.cast(DType::F32) * scale, c.in(7).reshape({}), c.in(7).dtype());
}
}  // namespace

void add_quant_ops(OpTable& t) {
  t["QuantizeLinear"] = [](Ctx& c) -> Outs { return {quantize(c)}; };
  t["DequantizeLinear"] = [](Ctx& c) -> Outs { return {dequantize(c)}; };
  t["DynamicQuantizeLinear"] = dynamic_quantize;
  t["MatMulInteger"] = [](Ctx& c) -> Outs { return {matmul_integer(c)}; };
  t["QLinearMatMul"] = [](Ctx& c) -> Outs { return {qlinear_matmul(c)}; };
  t["ConvInteger"] = [](Ctx& c) -> Outs { return {conv_integer(c)}; };
  t["QLinearConv"] = [](Ctx& c) -> Outs { return {qlinear_conv(c)}; };
}

}  // namespace tgc
