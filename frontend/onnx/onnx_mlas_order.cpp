// onnxruntime's CPU arithmetic for quantized chains (onnx_mlas_order.h). The orders follow
// onnxruntime's core/optimizer/nchwc_transformer.cc (which convs and resizes run in NCHWc form),
// core/mlas/lib/snchwc.cpp (how the kernels step over input channels and rows) and the x86
// kernels (lib/x86_64/SconvKernelCommon.h, SconvKernelAvx512F.S: a block's taps from zeroed
// accumulators, then the output added, then the bias), checked against onnxruntime 1.30's
// outputs (tests/integration/ops_vs_ort.sh: dynamic_quant_chain, dynamic_quant_chain_wide).
#include "frontend/onnx/onnx_mlas_order.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include "frontend/onnx/onnx_graph_check.h"
#include "frontend/onnx/onnx_ops.h"
#include "ir/error.h"

namespace tgc {

namespace {

// Ops through which a value reaches a quantizer with the bits onnxruntime's would have, where
// their inputs have them: tgc computes them exactly as onnxruntime does (movement, selection,
// one rounded add, multiply or cast per element; Resize as onnxruntime's kernels, Conv here).
bool keeps_bits(const std::string& op) {
  static const std::set<std::string> ops = {
      "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",    "Slice",       "Concat",   "Split",
      "Pad",      "Relu",    "Clip",    "Max",     "Min",       "MaxPool",      "Resize",      "Upsample", "Add",
      "Sub",      "Mul",     "Neg",     "Cast",    "Conv",      "DepthToSpace", "SpaceToDepth"};
  return ops.count(op) > 0;
}

struct GraphView {
  const onnx::GraphProto& gp;
  std::map<std::string, const onnx::TensorProto*> inits;
  std::map<std::string, const onnx::NodeProto*> producer;

  explicit GraphView(const onnx::GraphProto& g) : gp(g) {
    for (const auto& t : g.initializer()) inits[t.name()] = &t;
    for (const auto& [name, n] : producers(g)) producer[name] = &g.node(n);
  }

  // A float initializer of that rank (a constant weight, as the transformer requires).
  const onnx::TensorProto* float_init(const std::string& name, int rank) const {
    auto it = inits.find(name);
    if (it == inits.end() || it->second->data_type() != onnx::TensorProto::FLOAT || it->second->dims_size() != rank)
      return nullptr;
    return it->second;
  }

  // Whether onnxruntime's NchwcTransformer turns this Conv into an NCHWc one (block channels).
  bool nchwc_conv(const onnx::NodeProto& n, int64_t block) const {
    if (n.op_type() != "Conv" || !(n.domain().empty() || n.domain() == "ai.onnx") || n.input_size() < 2) return false;
    const onnx::TensorProto* w = float_init(n.input(1), 4);
    if (!w) return false;
    int64_t cout = w->dims(0), cin_g = w->dims(1), groups = node_attr_int(n, "group", 1);
    if (n.input_size() >= 3 && !n.input(2).empty()) {
      const onnx::TensorProto* b = float_init(n.input(2), 1);
      if (!b || b->dims(0) != cout) return false;
    }
    if (groups == 1) return true;  // fewer channels than a block: NCHW input; else padded to blocks
    if (groups < 1 || cout % block != 0) return false;
    if (cin_g == 1 && cout == groups) return true;  // depthwise
    return cin_g % block == 0 && cout % groups == 0 && (cout / groups) % block == 0;
  }
};

}  // namespace

MlasOrder plan_mlas_order(const onnx::GraphProto& gp, int64_t block) {
  MlasOrder plan;
  plan.block = block;
  if (block <= 0) return plan;
  GraphView v(gp);
  // Backwards from every quantizer's input through ops that keep onnxruntime's bits.
  std::deque<std::string> todo;
  for (const auto& n : gp.node())
    if ((n.op_type() == "DynamicQuantizeLinear" || n.op_type() == "QuantizeLinear") && n.input_size() > 0)
      todo.push_back(n.input(0));
  std::set<const onnx::NodeProto*> seen;
  while (!todo.empty()) {
    std::string name = todo.front();
    todo.pop_front();
    auto it = v.producer.find(name);
    if (it == v.producer.end() || !seen.insert(it->second).second) continue;
    const onnx::NodeProto& n = *it->second;
    if (!keeps_bits(n.op_type())) continue;
    if (n.op_type() == "Conv") {
      if (!v.nchwc_conv(n, block)) continue;  // MLAS's im2col and SGEMM: not modelled
      plan.convs.insert(&n);
      todo.push_back(n.input(0));
      continue;
    }
    for (const auto& in : n.input())
      if (!in.empty()) todo.push_back(in);
  }
  // Linear resizes of NCHWc conv outputs (through activations the transformer keeps in NCHWc).
  for (const auto& n : gp.node()) {
    if (n.op_type() != "Resize" || n.input_size() < 3 || node_attr_string(n, "mode", "nearest") != "linear" ||
        node_attr(n, "axes") || node_attr_int(n, "antialias", 0) != 0)
      continue;
    std::string coord = node_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    if (coord != "half_pixel" && coord != "asymmetric" && coord != "align_corners") continue;
    const onnx::NodeProto* p = nullptr;
    for (std::string in = n.input(0);;) {
      auto it = v.producer.find(in);
      if (it == v.producer.end()) break;
      const std::string& op = it->second->op_type();
      if (op == "Relu" || op == "Sigmoid" || op == "Tanh") {
        in = it->second->input(0);
        continue;
      }
      p = it->second;
      break;
    }
    if (p && v.nchwc_conv(*p, block)) plan.upsamples.insert(&n);
  }
  return plan;
}

Tensor mlas_conv(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                 const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                 const std::vector<int64_t>& dilations, int64_t groups, int64_t block) {
  if (x.ndim() != 4 || w.ndim() != 4) throw Error("mlas_conv: a 2-D convolution needs 4-D x and w");
  int64_t cin_g = w.dim(1), cout = w.dim(0), kh = w.dim(2), kw = w.dim(3);
  bool pointwise = kh == 1 && kw == 1 && std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  Tensor xp = x, wp = w;
  int64_t cp = cin_g;
  if (cin_g >= block && cin_g % block != 0) {
    // The transformer pads the channels to a whole block (zeros in both), and so do these sums.
    cp = (cin_g + block - 1) / block * block;
    xp = x.pad({{0, 0}, {0, cp - cin_g}, {0, 0}, {0, 0}});
    wp = w.pad({{0, 0}, {0, cp - cin_g}, {0, 0}, {0, 0}});
  }
  // [N, g, Cout/g, OH, OW, C, KH, KW]
  Tensor p = xp.conv_products(wp, strides, pads, dilations, groups);
  Shape lead(p.shape().begin(), p.shape().begin() + 5);
  auto shaped = [&](std::vector<int64_t> tail) {
    Shape s = lead;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  Tensor r;
  if (cin_g < block) {
    r = p.sum_in_order({6, 7}).sum_in_order({5});  // per channel its taps, then the channels
  } else if (pointwise) {
    constexpr int64_t kRun = 128;  // MaximumInputChannelBatch
    int64_t full = cp / kRun, tail = cp % kRun;
    std::optional<Tensor> head, rest;
    if (full > 0)
      head =
          p.shrink(
               {{0, lead[0]}, {0, lead[1]}, {0, lead[2]}, {0, lead[3]}, {0, lead[4]}, {0, full * kRun}, {0, 1}, {0, 1}})
              .reshape(shaped({full, kRun}))
              .sum_in_order({6})
              .sum_in_order({5});
    if (tail > 0)
      rest = p.shrink({{0, lead[0]},
                       {0, lead[1]},
                       {0, lead[2]},
                       {0, lead[3]},
                       {0, lead[4]},
                       {full * kRun, cp},
                       {0, 1},
                       {0, 1}})
                 .reshape(shaped({tail}))
                 .sum_in_order({5});
    r = head && rest ? *head + *rest : head ? *head : *rest;
  } else {
    // [.., blocks, block, KH, KW] -> [.., blocks, KH, KW, block]: a block's taps, channel innermost
    r = p.reshape(shaped({cp / block, block, kh, kw}))
            .permute({0, 1, 2, 3, 4, 5, 7, 8, 6})
            .sum_in_order({6, 7, 8})
            .sum_in_order({5});
  }
  r = r.reshape({x.dim(0), cout, p.dim(3), p.dim(4)});
  if (!bias) return r;
  return r + bias->reshape({1, cout, 1, 1});
}

Tensor mlas_upsample_linear(Graph& g, const Tensor& x, const std::string& coord, int64_t sh, int64_t sw) {
  struct Axis {
    std::vector<int64_t> i0, i1;
    std::vector<double> m0, m1;  // weights of i1 (the fraction) and of i0
  };
  auto axis = [&](int64_t in, int64_t scale) {
    int64_t out = in * scale;
    Axis a;
    for (int64_t o = 0; o < out; ++o) {
      float p = float(o);  // NchwcUpsample::ComputeInterpolation, in f32
      if (scale != 1) {
        if (coord == "align_corners")
          p = float(o) * float(in - 1) / float(out - 1);
        else if (coord == "half_pixel")
          p = std::max(0.0f, (float(o) + 0.5f) / float(scale) - 0.5f);
        else
          p = float(o) / float(scale);
      }
      int64_t i0 = int64_t(p), i1 = std::min(i0 + 1, in - 1);
      float f = p - float(i0), rest = 1.0f - f;
      a.i0.push_back(i0), a.i1.push_back(i1), a.m0.push_back(f), a.m1.push_back(rest);
    }
    return a;
  };
  Axis ay = axis(x.dim(2), sh), ax = axis(x.dim(3), sw);
  auto coeffs = [&](const std::vector<double>& v, int64_t dim) {
    Shape s = {1, 1, 1, 1};
    s[size_t(dim)] = int64_t(v.size());
    HostTensor h(DType::F32, s);
    for (size_t i = 0; i < v.size(); ++i) h.set(int64_t(i), v[i]);
    return Tensor::weight(g, "upsample_coeffs", std::move(h));
  };
  Tensor r0 = x.take(2, ay.i0), r1 = x.take(2, ay.i1);
  Tensor v00 = r0.take(3, ax.i0), v01 = r0.take(3, ax.i1), v10 = r1.take(3, ax.i0), v11 = r1.take(3, ax.i1);
  Tensor y1 = coeffs(ay.m1, 2), y0 = coeffs(ay.m0, 2), x1 = coeffs(ax.m1, 3), x0 = coeffs(ax.m0, 3);
  return ((y1 * x1) * v00 + (y1 * x0) * v01) + ((y0 * x1) * v10 + (y0 * x0) * v11);
}

}  // namespace tgc
