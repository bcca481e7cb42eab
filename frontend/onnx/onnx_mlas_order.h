// onnxruntime's CPU arithmetic, bit for bit, where a quantizer would show its rounding. A float
// Conv whose output reaches a DynamicQuantizeLinear or QuantizeLinear (through ops that compute
// the same bits in tgc as there: movement, Relu, Clip, Add, Mul, Cast, Resize, other such Convs)
// is summed in the order of MLAS's NCHWc kernels, which onnxruntime's NchwcTransformer picks on
// x86 (block: 16 channels with AVX-512, else 8):
//  - fewer input channels per group than a block (a first layer; depthwise): each channel's
//    taps (kh, kw) from zero, then the channels' sums in order (the NCHW kernel);
//  - 1x1 without padding: the channels (padded to a block) from zero in runs of 128, then the
//    runs' sums (the pointwise kernel);
//  - otherwise: per block of channels (padded to a block), its taps in (kh, kw, channel) order
//    from zero, then the blocks' sums in order (the NCHWc kernel, MLAS_CONV_KERNEL_FLAG_
//    ACCUMULATE_OUTPUT);
// each step a fused multiply-add (vfmadd231ps; a product and a sum on x86 without FMA3), the
// bias added last. A linear Resize of such a conv's output (through Relu, Sigmoid, Tanh) by
// integer scales (half_pixel, asymmetric or align_corners) is then MLAS's NCHWc upsample, which
// weights and sums its four taps otherwise than the CPU Resize kernel (onnx_ops_resize.cpp).
// Elsewhere (GPU targets, aarch64, convs that no quantizer reads) convs keep tgc's own order.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "onnx/onnx.pb.h"

namespace tgc {

struct MlasOrder {
  int64_t block = 0;                           // MLAS's NCHWc block; 0: tgc's own order everywhere
  std::set<const onnx::NodeProto*> convs;      // Conv nodes summed in MLAS's order
  std::set<const onnx::NodeProto*> upsamples;  // linear Resize nodes that read an NCHWc conv's output
};

// The nodes of `gp` that onnxruntime computes so, for NCHWc blocks of `block` channels (0: none).
MlasOrder plan_mlas_order(const onnx::GraphProto& gp, int64_t block);

// A 2-D convolution (x: [N, C, H, W]) summed as MLAS's NCHWc kernels sum it (above).
Tensor mlas_conv(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                 const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                 const std::vector<int64_t>& dilations, int64_t groups, int64_t block);

// MLAS's NCHWc linear upsample of x [N, C, H, W] by integer factors (sh, sw): per axis the source
// position in f32 (`coord`: half_pixel, asymmetric or align_corners), taps i0 = trunc(p) and
// min(i0 + 1, in - 1), weights f = p - i0 and 1 - f; then
// (w11 * X00 + w10 * X01) + (w01 * X10 + w00 * X11), each weight the f32 product of its two.
Tensor mlas_upsample_linear(Graph& g, const Tensor& x, const std::string& coord, int64_t sh, int64_t sw);

}  // namespace tgc
