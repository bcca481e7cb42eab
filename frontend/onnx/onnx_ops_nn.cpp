// Neural-network ops beyond the basics: transposed convolution, normalizations, activation
// functions, channel/space rearrangements and the reductions that are compositions.
#include <cmath>

#include "frontend/onnx/onnx_ops.h"

namespace tgc {

namespace {
Tensor conv_transpose(Ctx& c) {
  const Tensor &x = c.in(0), &w = c.in(1);
  size_t n = size_t(w.ndim() - 2);
  if (w.ndim() < 3 || x.ndim() != w.ndim())
    c.fail("input " + shape_str(x.shape()) + " and weight " + shape_str(w.shape()) + " ranks do not match");
  std::vector<int64_t> k = c.attr_ints("kernel_shape", Shape(w.shape().begin() + 2, w.shape().end()));
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dil = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> out_pad = c.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> out_shape = c.attr_ints("output_shape");
  if (k.size() != n || strides.size() != n || dil.size() != n || out_pad.size() != n || pads.size() != 2 * n)
    c.fail("kernel_shape/strides/dilations/output_padding/pads do not match " + std::to_string(n) + " spatial dims");
  if (out_shape.size() == n + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (out_shape.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"))
    for (size_t i = 0; i < n; ++i) out_shape.push_back(x.dim(int64_t(2 + i)) * strides[i]);
  if (auto_pad == "VALID") std::fill(pads.begin(), pads.end(), 0);
  if (!out_shape.empty()) {
    // Pads that give the requested output size; odd totals put the extra pad at the end
    // unless SAME_LOWER, as in the ONNX operator docs.
    if (out_shape.size() != n)
      c.fail("output_shape has " + std::to_string(out_shape.size()) + " values for " + std::to_string(n) +
             " spatial dims");
    for (size_t i = 0; i < n; ++i) {
      int64_t full = strides[i] * (x.dim(int64_t(2 + i)) - 1) + out_pad[i] + (k[i] - 1) * dil[i] + 1;
      int64_t total = full - out_shape[i];
      if (total < 0) {  // a larger output than the full one: extend by output padding
        out_pad[i] += -total;
        total = 0;
      }
      pads[i] = auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2;
      pads[i + n] = total - pads[i];
    }
  }
  std::optional<Tensor> bias;
  if (c.has(2)) bias = c.in(2);
  return x.conv_transpose(w, bias, strides, pads, dil, out_pad, c.attr_int("group", 1));
}

// Normalizes x over `axes` (mean 0, variance 1, biased variance), returning the pieces ONNX's
// LayerNormalization exposes: result, mean and 1/stddev (kept dims).
struct Normalized {
  Tensor y, mean, inv_std;
};
Normalized normalize(const Tensor& x, const std::vector<int64_t>& axes, double eps) {
  Tensor mean = x.mean(axes, true);
  Tensor d = x - mean;
  Tensor inv = ((d * d).mean(axes, true) + eps).rsqrt();
  return {d * inv, mean, inv};
}

Outs layer_norm(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t axis = x.norm_axis(c.attr_int("axis", -1));
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < x.ndim(); ++i) axes.push_back(i);
  // stash_type=1 asks for float32 statistics; lower precision inputs are widened for them.
  Tensor xs = c.attr_int("stash_type", 1) == 1 && x.dtype() != DType::F64 ? x.cast(DType::F32) : x;
  Normalized n = normalize(xs, axes, c.attr_float("epsilon", 1e-5));
  Tensor y = n.y.cast(x.dtype()) * c.in(1);
  if (c.has(2)) y = y + c.in(2);
  return {y, n.mean, n.inv_std};
}

Tensor instance_norm(Ctx& c) {
  const Tensor& x = c.in(0);
  Shape s(size_t(x.ndim()), 1);
  s[1] = x.dim(1);
  Tensor y = normalize(x, spatial_axes(x), c.attr_float("epsilon", 1e-5)).y;
  return y * c.in(1).reshape(s) + c.in(2).reshape(s);
}

Tensor group_norm(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t groups = c.attr_int("num_groups", 0), ch = x.dim(1);
  if (groups <= 0 || ch % groups)
    c.fail("num_groups " + std::to_string(groups) + " does not divide " + std::to_string(ch) + " channels");
  Shape gs = {x.dim(0), groups, -1};
  Tensor y = normalize(x.reshape(gs), {2}, c.attr_float("epsilon", 1e-5)).y.reshape(x.shape());
  // Opset 18 gives scale and bias per group, opset 21 per channel.
  auto per_channel = [&](const Tensor& v) {
    Tensor t = v;
    if (v.numel() == groups && groups != ch) t = v.reshape({groups, 1}).expand({groups, ch / groups});
    Shape s(size_t(x.ndim()), 1);
    s[1] = ch;
    return t.reshape(s);
  };
  return y * per_channel(c.in(1)) + per_channel(c.in(2));
}

Tensor mean_variance_norm(Ctx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes = c.attr_ints("axes", {0, 2, 3});
  Tensor d = x - x.mean(axes, true);
  return d / ((d * d).mean(axes, true).sqrt() + 1e-9);
}

Tensor lrn(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t size = c.attr_int("size", 0);
  if (size <= 0) c.fail("missing size");
  double alpha = c.attr_float("alpha", 1e-4), beta = c.attr_float("beta", 0.75), bias = c.attr_float("bias", 1.0);
  // Sum of squares over a channel window [c - (size-1)/2, c + size/2], as a 1-D pool over channels.
  std::vector<int64_t> to_last = {0};
  for (int64_t i = 2; i < x.ndim(); ++i) to_last.push_back(i);
  to_last.push_back(1);
  std::vector<int64_t> back(to_last.size());
  for (size_t i = 0; i < to_last.size(); ++i) back[size_t(to_last[i])] = int64_t(i);
  Tensor sq = (x * x).permute(to_last);
  std::vector<std::pair<int64_t, int64_t>> p(size_t(x.ndim()), {0, 0});
  p.back() = {(size - 1) / 2, size / 2};
  Tensor sums = sq.pad(p).pool({size}, {1}, {1}).sum({-1}).permute(back);
  Tensor base = sums * (alpha / double(size)) + bias;
  return x * (base.log2() * -beta).exp2();
}

Tensor depth_to_space(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t b = c.attr_int("blocksize", 0);
  if (x.ndim() != 4 || b <= 0 || x.dim(1) % (b * b)) c.fail("needs [N, C, H, W] with C divisible by blocksize^2");
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), co = C / (b * b);
  bool crd = c.attr_string("mode", "DCR") == "CRD";
  Tensor t = crd ? x.reshape({N, co, b, b, H, W}).permute({0, 1, 4, 2, 5, 3})
                 : x.reshape({N, b, b, co, H, W}).permute({0, 3, 4, 1, 5, 2});
  return t.reshape({N, co, H * b, W * b});
}

Tensor space_to_depth(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t b = c.attr_int("blocksize", 0);
  if (x.ndim() != 4 || b <= 0 || x.dim(2) % b || x.dim(3) % b)
    c.fail("needs [N, C, H, W] with H and W divisible by blocksize");
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  return x.reshape({N, C, H / b, b, W / b, b}).permute({0, 3, 5, 1, 2, 4}).reshape({N, C * b * b, H / b, W / b});
}

Tensor hardmax(Ctx& c) {
  const Tensor& x = c.in(0);
  if (c.opset >= 13) {
    int64_t axis = x.norm_axis(c.attr_int("axis", -1));
    Tensor i = x.argmax(axis, true);
    Shape s(size_t(x.ndim()), 1);
    s[size_t(axis)] = x.dim(axis);
    return Tensor::where(i.eq(Tensor::arange(c.g, x.dim(axis)).reshape(s)), x.full_like(1), x.full_like(0));
  }
  // Before opset 13 the input is coerced to 2-D at axis.
  Tensor f = x.flatten(x.norm_axis(c.attr_int("axis", 1)));
  Tensor i = f.argmax(1, true);
  return Tensor::where(i.eq(Tensor::arange(c.g, f.dim(1)).reshape({1, f.dim(1)})), f.full_like(1), f.full_like(0))
      .reshape(x.shape());
}

Tensor max_unpool(Ctx& c) {
  // Scatters each value to the flat position MaxPool's Indices recorded.
  const Tensor &x = c.in(0), &idx = c.in(1);
  size_t n = size_t(x.ndim() - 2);
  std::vector<int64_t> k = c.attr_ints("kernel_shape"), s = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (k.size() != n || s.size() != n || pads.size() != 2 * n)
    c.fail("kernel_shape/strides/pads do not match " + std::to_string(n) + " spatial dims");
  // Indices address the default output shape; a larger output_shape pads it at the end.
  Shape out = {x.dim(0), x.dim(1)};
  for (size_t i = 0; i < n; ++i) out.push_back((x.dim(int64_t(2 + i)) - 1) * s[i] + k[i] - pads[i] - pads[i + n]);
  Tensor zeros = Tensor::full(c.g, {numel(out)}, 0, x.dtype());
  Tensor r = zeros.scatter_elements(idx.reshape({idx.numel()}), x.reshape({x.numel()}), 0, Tensor::Reduction::None)
                 .reshape(out);
  if (!c.has(2)) return r;
  Shape want = c.ints(2);
  if (want.size() != out.size()) c.fail("output_shape " + shape_str(want) + " does not fit " + shape_str(x.shape()));
  std::vector<std::pair<int64_t, int64_t>> grow;
  for (size_t i = 0; i < out.size(); ++i) {
    if (want[i] < out[i]) c.fail("output_shape " + shape_str(want) + " is smaller than the unpooled " + shape_str(out));
    grow.push_back({0, want[i] - out[i]});
  }
  return r.pad(grow);
}

// |x|^p and its inverse, exact products for the common p = 1, 2.
Tensor abs_pow(const Tensor& x, double p) {
  if (p == 1) return x.abs();
  if (p == 2) return x * x;
  return x.abs().pow(x.scalar(p));
}
Tensor root(const Tensor& x, double p) {
  if (p == 1) return x;
  if (p == 2) return x.sqrt();
  return x.pow(x.scalar(1 / p));
}

Tensor lp_pool(Ctx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> k = c.attr_ints("kernel_shape");
  if (k.empty()) c.fail("missing kernel_shape");
  Window w = window(c, x, k);
  if (c.attr_int("ceil_mode", 0)) c.fail("ceil_mode is not supported");
  double p = double(c.attr_int("p", 2));
  std::vector<std::pair<int64_t, int64_t>> pads = {{0, 0}, {0, 0}};
  std::vector<int64_t> red;
  for (size_t i = 0; i < k.size(); ++i)
    pads.push_back({w.pads[i], w.pads[i + k.size()]}), red.push_back(-1 - int64_t(i));
  return root(abs_pow(x, p).pad(pads).pool(k, w.strides, w.dilations).sum(red), p);
}

Tensor elu(const Tensor& x, double alpha) { return Tensor::where(x.lt(x.scalar(0)), (x.exp() - 1.0) * alpha, x); }

Tensor softplus(const Tensor& x) {
  // log(1 + e^x) without overflow: x + log(1 + e^-x) for positive x.
  Tensor pos = x.gt(x.scalar(0));
  Tensor ax = Tensor::where(pos, -x, x);
  return Tensor::where(pos, x, x.full_like(0)) + (ax.exp() + 1.0).log();
}

Tensor reduce_with(Ctx& c, int64_t axes_input_opset, Tensor (*f)(const Tensor&, const std::vector<int64_t>&, bool)) {
  bool keep = c.attr_int("keepdims", 1) != 0;
  std::vector<int64_t> axes = c.opset >= axes_input_opset ? axes_of(c, 1) : c.attr_ints("axes");
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0)) return c.in(0);
  return f(c.in(0), axes, keep);
}

Tensor log_sum_exp(const Tensor& x, const std::vector<int64_t>& axes, bool keep) {
  Tensor m = x.max(axes, true);
  // An all -inf slice has max -inf; shift by 0 there so that the result stays -inf, not NaN.
  Tensor finite = Tensor::where(m.abs().lt(m.full_like(INFINITY)), m, m.full_like(0));
  Tensor r = (x - finite).exp().sum(axes, true).log() + finite;
  if (keep) return r;
  return axes.empty() ? r.reshape({}) : r.squeeze(axes);
}
}  // namespace

void add_nn_ops(OpTable& t) {
  t["ConvTranspose"] = [](Ctx& c) -> Outs { return {conv_transpose(c)}; };
  t["LayerNormalization"] = layer_norm;
  t["InstanceNormalization"] = [](Ctx& c) -> Outs { return {instance_norm(c)}; };
  t["GroupNormalization"] = [](Ctx& c) -> Outs { return {group_norm(c)}; };
  t["MeanVarianceNormalization"] = [](Ctx& c) -> Outs { return {mean_variance_norm(c)}; };
  t["LRN"] = [](Ctx& c) -> Outs { return {lrn(c)}; };
  t["DepthToSpace"] = [](Ctx& c) -> Outs { return {depth_to_space(c)}; };
  t["SpaceToDepth"] = [](Ctx& c) -> Outs { return {space_to_depth(c)}; };
  t["Hardmax"] = [](Ctx& c) -> Outs { return {hardmax(c)}; };
  t["MaxUnpool"] = [](Ctx& c) -> Outs { return {max_unpool(c)}; };
  t["LpPool"] = [](Ctx& c) -> Outs { return {lp_pool(c)}; };
  t["GlobalLpPool"] = [](Ctx& c) -> Outs {
    const Tensor& x = c.in(0);
    double p = double(c.attr_int("p", 2));
    return {root(abs_pow(x, p).sum(spatial_axes(x), true), p)};
  };
  t["LpNormalization"] = [](Ctx& c) -> Outs {
    const Tensor& x = c.in(0);
    double p = double(c.attr_int("p", 2));
    if (p != 1 && p != 2) c.fail("p must be 1 or 2");
    return {x / root(abs_pow(x, p).sum({c.attr_int("axis", -1)}, true), p)};
  };
  // Activations.
  t["Elu"] = [](Ctx& c) -> Outs { return {elu(c.in(0), c.attr_float("alpha", 1.0))}; };
  t["Celu"] = [](Ctx& c) -> Outs {
    double a = c.attr_float("alpha", 1.0);
    const Tensor& x = c.in(0);
    return {x.relu() + ((x * (1 / a)).exp() - 1.0).minimum(x.full_like(0)) * a};
  };
  t["Selu"] = [](Ctx& c) -> Outs {
    double a = c.attr_float("alpha", 1.67326319217681884765625), g = c.attr_float("gamma", 1.05070102214813232421875);
    return {elu(c.in(0), a) * g};
  };
  t["Softplus"] = map1(softplus);
  t["Softsign"] = map1([](const Tensor& x) { return x / (x.abs() + 1.0); });
  t["Mish"] = map1([](const Tensor& x) { return x * softplus(x).tanh(); });
  t["Gelu"] = [](Ctx& c) -> Outs { return {c.in(0).gelu(c.attr_string("approximate", "none") == "tanh")}; };
  t["PRelu"] = [](Ctx& c) -> Outs {
    const Tensor& x = c.in(0);
    Tensor slope = c.in(1);
    // Before opset 7 a 1-D slope is per channel (axis 1) rather than numpy-broadcast.
    if (c.opset < 7 && slope.ndim() == 1 && x.ndim() > 2 && slope.dim(0) == x.dim(1) && slope.dim(0) != x.dim(-1)) {
      Shape s(size_t(x.ndim() - 1), 1);
      s[0] = slope.dim(0);
      slope = slope.reshape(s);
    }
    return {Tensor::where(x.lt(x.scalar(0)), x * slope, x)};
  };
  t["ThresholdedRelu"] = [](Ctx& c) -> Outs {
    const Tensor& x = c.in(0);
    return {Tensor::where(x.gt(x.scalar(c.attr_float("alpha", 1.0))), x, x.full_like(0))};
  };
  t["Shrink"] = [](Ctx& c) -> Outs {
    const Tensor& x = c.in(0);
    double l = c.attr_float("lambd", 0.5), b = c.attr_float("bias", 0);
    return {Tensor::where(x.lt(x.scalar(-l)), x + b, Tensor::where(x.gt(x.scalar(l)), x - b, x.full_like(0)))};
  };
  // Reductions composed from sum/max.
  t["ReduceL1"] = [](Ctx& c) -> Outs {
    return {
        reduce_with(c, 18, [](const Tensor& x, const std::vector<int64_t>& a, bool k) { return x.abs().sum(a, k); })};
  };
  t["ReduceL2"] = [](Ctx& c) -> Outs {
    return {reduce_with(c, 18, [](const Tensor& x, const std::vector<int64_t>& a, bool k) {
      Tensor xf = is_float(x.dtype()) ? x : x.cast(DType::F32);
      Tensor r = (xf * xf).sum(a, k).sqrt();
      return is_float(x.dtype()) ? r : r.cast(x.dtype());
    })};
  };
  t["ReduceSumSquare"] = [](Ctx& c) -> Outs {
    return {
        reduce_with(c, 18, [](const Tensor& x, const std::vector<int64_t>& a, bool k) { return (x * x).sum(a, k); })};
  };
  t["ReduceLogSum"] = [](Ctx& c) -> Outs {
    return {
        reduce_with(c, 18, [](const Tensor& x, const std::vector<int64_t>& a, bool k) { return x.sum(a, k).log(); })};
  };
  t["ReduceLogSumExp"] = [](Ctx& c) -> Outs { return {reduce_with(c, 18, log_sum_exp)}; };
  add_resize_ops(t);
  add_signal_ops(t);
  add_sample_ops(t);
}

}  // namespace tgc
