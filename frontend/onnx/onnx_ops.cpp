// ONNX operators as Tensor API compositions. One entry per op type; opset differences are
// handled inside the entry (attributes that became inputs, changed defaults).
#include "frontend/onnx/onnx_ops.h"

#include <cmath>
#include <numeric>

namespace tgc {

// ---- helpers shared with the other op files (declared in onnx_ops.h) -------------------------
// Every axis after batch and channel.
std::vector<int64_t> spatial_axes(const Tensor& x) {
  std::vector<int64_t> axes;
  for (int i = 2; i < x.ndim(); ++i) axes.push_back(i);
  return axes;
}

// Axes given as an attribute (older opsets) or as an optional input (newer ones).
std::vector<int64_t> axes_of(Ctx& c, size_t input, const char* attr) {
  if (c.has(input)) return c.ints(input);
  return c.attr_ints(attr);
}

Tensor variadic(Ctx& c, Tensor (*combine)(const Tensor&, const Tensor&)) {
  Tensor acc = c.in(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) acc = combine(acc, c.in(i));
  return acc;
}

// Resolves auto_pad into explicit begin/end pads (ONNX order: all begins, then all ends).
std::vector<int64_t> spatial_pads(Ctx& c, const Shape& in_spatial, const std::vector<int64_t>& kernel,
                                  const std::vector<int64_t>& strides, const std::vector<int64_t>& dil) {
  size_t n = kernel.size();
  std::string mode = c.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (pads.size() != 2 * n)
    c.fail("pads has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * n));
  if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t out = (in_spatial[i] + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in_spatial[i]);
      pads[i] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + n] = total - pads[i];
    }
  } else if (mode == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  } else if (mode != "NOTSET") {
    c.fail("unknown auto_pad '" + mode + "'");
  }
  return pads;
}

Window window(Ctx& c, const Tensor& x, std::vector<int64_t> kernel) {
  size_t n = kernel.size();
  if (x.ndim() != int(n) + 2)
    c.fail("input rank " + std::to_string(x.ndim()) + " does not match a " + std::to_string(n) + "-d window");
  Window w;
  w.kernel = kernel;
  w.strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  if (w.strides.size() != n || w.dilations.size() != n) c.fail("strides/dilations do not match the kernel rank");
  w.pads = spatial_pads(c, Shape(x.shape().begin() + 2, x.shape().end()), kernel, w.strides, w.dilations);
  return w;
}

namespace {

Tensor reduce_op(Ctx& c, Tensor (Tensor::*f)(std::vector<int64_t>, bool) const, int64_t axes_input_opset) {
  bool keep = c.attr_int("keepdims", 1) != 0;
  std::vector<int64_t> axes = c.opset >= axes_input_opset ? axes_of(c, 1) : c.attr_ints("axes");
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0)) return c.in(0);
  return (c.in(0).*f)(axes, keep);
}

Tensor softmax_like(Ctx& c, bool log) {
  const Tensor& x = c.in(0);
  if (c.opset >= 13) {
    int64_t axis = c.attr_int("axis", -1);
    return log ? x.log_softmax(axis) : x.softmax(axis);
  }
  // Before opset 13 the input is coerced to 2-D at `axis` and normalised over the flattened tail.
  int64_t axis = x.norm_axis(c.attr_int("axis", 1));
  Tensor f = x.flatten(axis);
  return (log ? f.log_softmax(1) : f.softmax(1)).reshape(x.shape());
}

Tensor gemm(Ctx& c) {
  Tensor a = c.in(0), b = c.in(1);
  if (c.attr_int("transA", 0)) a = a.transpose();
  if (c.attr_int("transB", 0)) b = b.transpose();
  Tensor r = a.matmul(b);
  if (double alpha = c.attr_float("alpha", 1.0); alpha != 1.0) r = r * alpha;
  if (c.has(2)) {
    Tensor bias = c.in(2);
    if (double beta = c.attr_float("beta", 1.0); beta != 1.0) bias = bias * beta;
    r = r + bias;
  }
  return r;
}

// A conv weight is [out, in/group, k...]: its rank is checked before its spatial dims are taken.
void check_conv_weight(Ctx& c, const Tensor& w) {
  if (w.ndim() < 3)
    c.fail("weight " + shape_str(w.shape()) + " has rank " + std::to_string(w.ndim()) + ", a conv needs 3 or more");
}

Tensor conv(Ctx& c) {
  const Tensor &x = c.in(0), &w = c.in(1);
  check_conv_weight(c, w);
  std::vector<int64_t> k = c.attr_ints("kernel_shape", Shape(w.shape().begin() + 2, w.shape().end()));
  Window win = window(c, x, k);
  std::optional<Tensor> bias;
  if (c.has(2)) bias = c.in(2);
  if (c.in_mlas_order() && x.ndim() == 4 && x.dtype() == DType::F32)
    return mlas_conv(x, w, bias, win.strides, win.pads, win.dilations, c.attr_int("group", 1), c.mlas->block);
  return x.conv(w, bias, win.strides, win.pads, win.dilations, c.attr_int("group", 1));
}

Outs pool(Ctx& c, bool is_max) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> k = c.attr_ints("kernel_shape");
  if (k.empty()) c.fail("missing kernel_shape");
  Window w = window(c, x, k);
  bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  if (!is_max) return {x.avg_pool(k, w.strides, w.pads, c.attr_int("count_include_pad", 0) != 0, ceil_mode)};
  if (c.node.output_size() > 1 && !c.node.output(1).empty()) {
    auto [values, indices] =
        x.max_pool_with_indices(k, w.strides, w.pads, w.dilations, ceil_mode, c.attr_int("storage_order", 0) != 0);
    return {values, indices};
  }
  return {x.max_pool(k, w.strides, w.pads, w.dilations, ceil_mode)};
}

Tensor reshape(Ctx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> s = c.opset >= 5 ? c.ints(1) : c.attr_ints("shape");
  bool allow_zero = c.attr_int("allowzero", 0) != 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == 0 && !allow_zero) {
      if (int(i) >= x.ndim()) c.fail("shape has 0 at position " + std::to_string(i) + " beyond the input rank");
      s[i] = x.shape()[i];
    }
  return x.reshape(s);
}

Tensor slice(Ctx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = c.attr_ints("starts"), ends = c.attr_ints("ends"), axes = c.attr_ints("axes");
  } else {
    starts = c.ints(1), ends = c.ints(2);
    if (c.has(3)) axes = c.ints(3);
    if (c.has(4)) steps = c.ints(4);
  }
  if (axes.empty()) axes.resize(starts.size()), std::iota(axes.begin(), axes.end(), 0);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  // ONNX clamps huge sentinel values (INT64_MAX); slice() clamps to the axis.
  for (auto& e : ends) e = std::clamp<int64_t>(e, -(int64_t(1) << 40), int64_t(1) << 40);
  for (auto& s : starts) s = std::clamp<int64_t>(s, -(int64_t(1) << 40), int64_t(1) << 40);
  return x.slice(starts, ends, axes, steps);
}

Tensor gather(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t axis = x.norm_axis(c.attr_int("axis", 0));
  const Tensor& idx = c.in(1);
  // Constant indices become slices and a concat: no one-hot reduce needed.
  if (c.is_constant(1) && idx.numel() <= 64) {
    std::vector<int64_t> ids = c.ints(1);
    std::vector<Tensor> parts;
    int64_t n = x.shape()[size_t(axis)];
    for (int64_t i : ids) {
      if (i < -n || i >= n)
        c.fail("index " + std::to_string(i) + " out of range for axis of size " + std::to_string(n));
      if (i < 0) i += n;
      parts.push_back(x.slice({i}, {i + 1}, {axis}, {1}));
    }
    Tensor cat = parts.empty() ? x.slice({0}, {0}, {axis}, {1}) : Tensor::cat(parts, axis);
    Shape s(x.shape().begin(), x.shape().begin() + axis);
    s.insert(s.end(), idx.shape().begin(), idx.shape().end());
    s.insert(s.end(), x.shape().begin() + axis + 1, x.shape().end());
    return cat.reshape(s);
  }
  return x.gather(idx, axis);
}

Tensor clip(Ctx& c) {
  const Tensor& x = c.in(0);
  if (c.opset < 11) {
    std::optional<double> lo, hi;
    if (c.has_attr("min")) lo = c.attr_float("min", 0);
    if (c.has_attr("max")) hi = c.attr_float("max", 0);
    return x.clip(lo, hi);
  }
  Tensor r = x;
  if (c.has(1)) r = r.maximum(c.in(1).cast(x.dtype()));
  if (c.has(2)) r = r.minimum(c.in(2).cast(x.dtype()));
  return r;
}

Tensor constant(Ctx& c) {
  if (const onnx::TensorProto* t = c.attr_tensor("value"))
    return Tensor::weight(c.g, c.node.output(0), host_tensor_from_proto(*t, ""));
  auto scalar_or_list = [&](DType t, const std::vector<double>& v, bool list) {
    HostTensor h(t, list ? Shape{int64_t(v.size())} : Shape{});
    for (size_t i = 0; i < v.size(); ++i) h.set(int64_t(i), v[i]);
    return Tensor::weight(c.g, c.node.output(0), std::move(h));
  };
  if (c.has_attr("value_float")) return scalar_or_list(DType::F32, {c.attr_float("value_float", 0)}, false);
  if (c.has_attr("value_floats")) return scalar_or_list(DType::F32, c.attr_floats("value_floats"), true);
  if (c.has_attr("value_int")) return scalar_or_list(DType::I64, {double(c.attr_int("value_int", 0))}, false);
  if (c.has_attr("value_ints")) {
    std::vector<double> v;
    for (int64_t i : c.attr_ints("value_ints")) v.push_back(double(i));
    return scalar_or_list(DType::I64, v, true);
  }
  c.fail("Constant without a supported value attribute");
}

Tensor shape_of(Ctx& c) {
  const Shape& s = c.in(0).shape();
  int64_t r = int64_t(s.size());
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r), end = std::clamp<int64_t>(end, start, r);
  HostTensor h(DType::I64, {end - start});
  for (int64_t i = start; i < end; ++i) h.set(i - start, double(s[size_t(i)]));
  return Tensor::weight(c.g, c.node.output(0), std::move(h));
}

Outs batch_norm(Ctx& c) {
  const Tensor &x = c.in(0), &scale = c.in(1), &bias = c.in(2), &mean = c.in(3), &var = c.in(4);
  double eps = c.attr_float("epsilon", 1e-5);
  if (!c.attr_int("training_mode", 0)) return {x.batch_norm(scale, bias, mean, var, eps)};
  // Training (opset 14+): normalize with the batch's own statistics (population variance over
  // every axis but the channels) and blend them into the running ones.
  if (x.ndim() < 2) c.fail("training_mode=1 needs an input of rank >= 2, got " + shape_str(x.shape()));
  std::vector<int64_t> axes = {0};
  for (int64_t a = 2; a < x.ndim(); ++a) axes.push_back(a);
  Tensor batch_mean = x.mean(axes);
  Shape per_channel(size_t(x.ndim()), 1);
  per_channel[1] = x.dim(1);
  Tensor centered = x - batch_mean.reshape(per_channel);
  Tensor batch_var = (centered * centered).mean(axes);
  double momentum = c.attr_float("momentum", 0.9);
  Tensor running_mean = mean * momentum + batch_mean.cast(mean.dtype()) * (1 - momentum);
  Tensor running_var = var * momentum + batch_var.cast(var.dtype()) * (1 - momentum);
  return {x.batch_norm(scale, bias, batch_mean, batch_var, eps), running_mean, running_var};
}

Tensor squeeze(Ctx& c) { return c.in(0).squeeze(c.opset >= 13 ? axes_of(c, 1) : c.attr_ints("axes")); }
Tensor unsqueeze(Ctx& c) {
  std::vector<int64_t> axes = c.opset >= 13 ? c.ints(1) : c.attr_ints("axes");
  if (axes.empty()) c.fail("Unsqueeze needs axes");
  return c.in(0).unsqueeze(axes);
}

Tensor transpose(Ctx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty())
    for (int i = x.ndim() - 1; i >= 0; --i) perm.push_back(i);
  if (int(perm.size()) != x.ndim())
    c.fail("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(x.ndim()));
  return x.permute(perm);
}

Outs split(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t axis = x.norm_axis(c.attr_int("axis", 0));
  std::vector<int64_t> sizes = c.opset >= 13 ? (c.has(1) ? c.ints(1) : std::vector<int64_t>{}) : c.attr_ints("split");
  if (sizes.empty()) {
    int64_t n = c.node.output_size(), len = x.shape()[size_t(axis)];
    int64_t chunk = (len + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::min(chunk, len - i * chunk));
  }
  return x.split(sizes, axis);
}

Tensor pad(Ctx& c) {
  const Tensor& x = c.in(0);
  std::string mode = c.attr_string("mode", "constant");
  std::vector<int64_t> pads = c.opset >= 11 ? c.ints(1) : c.attr_ints("pads");
  double value = c.opset >= 11 ? (c.has(2) ? c.floats(2).at(0) : 0.0) : c.attr_float("value", 0);
  std::vector<int64_t> axes;
  if (c.has(3))
    axes = c.ints(3);
  else
    axes.resize(size_t(x.ndim())), std::iota(axes.begin(), axes.end(), 0);
  if (pads.size() != 2 * axes.size())
    c.fail("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(axes.size()) + " axes");
  std::vector<std::pair<int64_t, int64_t>> p(size_t(x.ndim()), {0, 0});
  for (size_t i = 0; i < axes.size(); ++i) p[size_t(x.norm_axis(axes[i]))] = {pads[i], pads[i + axes.size()]};
  if (mode == "constant") return x.pad(p, value);
  if (mode == "reflect") return x.pad(p, Tensor::PadMode::Reflect);
  if (mode == "edge") return x.pad(p, Tensor::PadMode::Edge);
  if (mode == "wrap") return x.pad(p, Tensor::PadMode::Wrap);
  c.fail("unknown pad mode '" + mode + "'");
}

Tensor expand(Ctx& c) {
  const Tensor& x = c.in(0);
  return x.expand(broadcast_shape(x.shape(), c.ints(1)));
}

Tensor constant_of_shape(Ctx& c) {
  std::vector<int64_t> s = c.ints(0);
  DType t = DType::F32;
  double v = 0;
  if (const onnx::TensorProto* p = c.attr_tensor("value")) {
    HostTensor h = host_tensor_from_proto(*p, "");
    t = h.dtype, v = h.get(0);
  }
  return Tensor::full(c.g, s, v, t);
}

Tensor arg_op(Ctx& c, bool is_max) {
  const Tensor& x = c.in(0);
  int64_t axis = c.attr_int("axis", 0);
  bool keep = c.attr_int("keepdims", 1) != 0;
  if (c.attr_int("select_last_index", 0)) {
    // The last maximum is the first one of the flipped axis.
    int64_t n = x.dim(axis);
    Tensor f = x.flip({axis});
    Tensor i = is_max ? f.argmax(axis, keep) : f.argmin(axis, keep);
    return i.full_like(double(n - 1)) - i;
  }
  return is_max ? x.argmax(axis, keep) : x.argmin(axis, keep);
}

Tensor pow_op(Ctx& c) {
  const Tensor &x = c.in(0), &e = c.in(1);
  // Small constant exponents are exact products: faster and closer to what runtimes compute.
  if (e.numel() == 1 && is_float(x.dtype())) {
    if (c.is_constant(1)) {
      double v = c.floats(1).at(0);
      if (v == 1) return x;
      if (v == 2) return x * x;
      if (v == 3) return x * x * x;
      if (v == 0.5) return x.sqrt();
      if (v == -1) return x.reciprocal();
    }
  }
  return x.pow(e).cast(x.dtype());
}

Tensor hard_sigmoid(Ctx& c) {
  const Tensor& x = c.in(0);
  return (x * c.attr_float("alpha", 0.2) + c.attr_float("beta", 0.5)).clip(0.0, 1.0);
}
}  // namespace

const OpTable& onnx_ops() {
  static const OpTable table = [] {
    OpTable table = {
      // Elementwise arithmetic.
      {"Add", map2([](const Tensor& a, const Tensor& b) { return a + b; })},
      {"Sub", map2([](const Tensor& a, const Tensor& b) { return a - b; })},
      {"Mul", map2([](const Tensor& a, const Tensor& b) { return a * b; })},
      {"Div", map2([](const Tensor& a, const Tensor& b) { return a / b; })},
      {"Pow", [](Ctx& c) -> Outs { return {pow_op(c)}; }},
      {"Mod", [](Ctx& c) -> Outs { return {c.attr_int("fmod", 0) ? c.in(0).fmod(c.in(1)) : c.in(0).mod(c.in(1))}; }},
      {"Max", [](Ctx& c) -> Outs { return {variadic(c, [](const Tensor& a, const Tensor& b) { return a.maximum(b); })}; }},
      {"Min", [](Ctx& c) -> Outs { return {variadic(c, [](const Tensor& a, const Tensor& b) { return a.minimum(b); })}; }},
      {"Sum", [](Ctx& c) -> Outs { return {variadic(c, [](const Tensor& a, const Tensor& b) { return a + b; })}; }},
      {"Mean", [](Ctx& c) -> Outs {
         return {variadic(c, [](const Tensor& a, const Tensor& b) { return a + b; }) * (1.0 / double(c.num_inputs()))};
       }},
      {"Neg", map1([](const Tensor& x) { return -x; })},
      {"Abs", map1([](const Tensor& x) { return x.abs(); })},
      {"Sign", map1([](const Tensor& x) { return x.sign(); })},
      {"Reciprocal", map1([](const Tensor& x) { return x.reciprocal(); })},
      {"Sqrt", map1([](const Tensor& x) { return x.sqrt(); })},
      {"Exp", map1([](const Tensor& x) { return x.exp(); })},
      {"Log", map1([](const Tensor& x) { return x.log(); })},
      {"Sin", map1([](const Tensor& x) { return x.sin(); })},
      {"Cos", map1([](const Tensor& x) { return x.cos(); })},
      {"Tan", map1([](const Tensor& x) { return x.tan(); })},
      {"Floor", map1([](const Tensor& x) { return x.floor(); })},
      {"Ceil", map1([](const Tensor& x) { return x.ceil(); })},
      {"Round", map1([](const Tensor& x) { return x.round(); })},
      {"Relu", map1([](const Tensor& x) { return x.relu(); })},
      {"LeakyRelu", [](Ctx& c) -> Outs { return {c.in(0).leaky_relu(c.attr_float("alpha", 0.01))}; }},
      {"Sigmoid", map1([](const Tensor& x) { return x.sigmoid(); })},
      {"HardSigmoid", [](Ctx& c) -> Outs { return {hard_sigmoid(c)}; }},
      {"HardSwish", map1([](const Tensor& x) { return x * ((x * (1.0 / 6) + 0.5).clip(0.0, 1.0)); })},
      {"Tanh", map1([](const Tensor& x) { return x.tanh(); })},
      {"Erf", map1([](const Tensor& x) { return x.erf(); })},
      {"Clip", [](Ctx& c) -> Outs { return {clip(c)}; }},
      // Comparisons and logic.
      {"Equal", map2([](const Tensor& a, const Tensor& b) { return a.eq(b); })},
      {"Less", map2([](const Tensor& a, const Tensor& b) { return a.lt(b); })},
      {"LessOrEqual", map2([](const Tensor& a, const Tensor& b) { return a.le(b); })},
      {"Greater", map2([](const Tensor& a, const Tensor& b) { return a.gt(b); })},
      {"GreaterOrEqual", map2([](const Tensor& a, const Tensor& b) { return a.ge(b); })},
      {"Not", map1([](const Tensor& x) { return x.logical_not(); })},
      {"And", map2([](const Tensor& a, const Tensor& b) { return a.logical_and(b); })},
      {"Or", map2([](const Tensor& a, const Tensor& b) { return a.logical_or(b); })},
      {"Xor", map2([](const Tensor& a, const Tensor& b) { return a.logical_xor(b); })},
      {"Where", [](Ctx& c) -> Outs { return {Tensor::where(c.in(0), c.in(1), c.in(2))}; }},
      // Linear algebra and convolution.
      {"MatMul", map2([](const Tensor& a, const Tensor& b) { return a.matmul(b); })},
      {"Gemm", [](Ctx& c) -> Outs { return {gemm(c)}; }},
      {"Conv", [](Ctx& c) -> Outs { return {conv(c)}; }},
      {"MaxPool", [](Ctx& c) -> Outs { return pool(c, true); }},
      {"AveragePool", [](Ctx& c) -> Outs { return pool(c, false); }},
      {"GlobalAveragePool", map1([](const Tensor& x) { return x.mean(spatial_axes(x), true); })},
      {"GlobalMaxPool", map1([](const Tensor& x) { return x.max(spatial_axes(x), true); })},
      {"BatchNormalization", batch_norm},
      {"Softmax", [](Ctx& c) -> Outs { return {softmax_like(c, false)}; }},
      {"LogSoftmax", [](Ctx& c) -> Outs { return {softmax_like(c, true)}; }},
      // Reductions.
      {"ReduceSum", [](Ctx& c) -> Outs { return {reduce_op(c, &Tensor::sum, 13)}; }},
      {"ReduceMean", [](Ctx& c) -> Outs { return {reduce_op(c, &Tensor::mean, 18)}; }},
      {"ReduceMax", [](Ctx& c) -> Outs { return {reduce_op(c, &Tensor::max, 18)}; }},
      {"ReduceMin", [](Ctx& c) -> Outs { return {reduce_op(c, &Tensor::min, 18)}; }},
      {"ReduceProd", [](Ctx& c) -> Outs { return {reduce_op(c, &Tensor::prod, 18)}; }},
      {"ArgMax", [](Ctx& c) -> Outs { return {arg_op(c, true)}; }},
      {"ArgMin", [](Ctx& c) -> Outs { return {arg_op(c, false)}; }},
      // Shape and data movement.
      {"Reshape", [](Ctx& c) -> Outs { return {reshape(c)}; }},
      {"Flatten", [](Ctx& c) -> Outs { return {c.in(0).flatten(c.attr_int("axis", 1))}; }},
      {"Transpose", [](Ctx& c) -> Outs { return {transpose(c)}; }},
      {"Squeeze", [](Ctx& c) -> Outs { return {squeeze(c)}; }},
      {"Unsqueeze", [](Ctx& c) -> Outs { return {unsqueeze(c)}; }},
      {"Concat", [](Ctx& c) -> Outs { return {Tensor::cat(c.all_inputs(), c.attr_int("axis", 0))}; }},
      {"Split", split},
      {"Slice", [](Ctx& c) -> Outs { return {slice(c)}; }},
      {"Gather", [](Ctx& c) -> Outs { return {gather(c)}; }},
      {"Pad", [](Ctx& c) -> Outs { return {pad(c)}; }},
      {"Expand", [](Ctx& c) -> Outs { return {expand(c)}; }},
      {"Tile", [](Ctx& c) -> Outs { return {c.in(0).repeat(c.ints(1))}; }},
      {"Shape", [](Ctx& c) -> Outs { return {shape_of(c)}; }},
      {"Size", [](Ctx& c) -> Outs { return {Tensor::full(c.g, {}, double(c.in(0).numel()), DType::I64)}; }},
      {"Constant", [](Ctx& c) -> Outs { return {constant(c)}; }},
      {"ConstantOfShape", [](Ctx& c) -> Outs { return {constant_of_shape(c)}; }},
      {"Dropout", [](Ctx& c) -> Outs {
         // Inference: the identity with an all-true mask. Training mode drops at random, which
         // only a zero ratio makes deterministic.
         bool training = c.has(2) && c.ints(2).at(0);
         if (training && !(c.has(1) && c.floats(1).at(0) == 0)) c.fail("training_mode=true is not supported (inference only)");
         const Tensor& x = c.in(0);
         return {x, Tensor::full(c.g, x.shape(), 1, DType::Bool)};
       }},
      {"Cast", [](Ctx& c) -> Outs { return {c.in(0).cast(dtype_from_onnx(int(c.attr_int("to", 1))))}; }},
  };
    add_nn_ops(table);
    add_math_ops(table);
    add_index_ops(table);
    add_data_ops(table);
    add_quant_ops(table);
    add_control_ops(table);
    add_rnn_ops(table);
    add_text_ops(table);
    add_sequence_ops(table);
    return table;
  }();
  return table;
}

}  // namespace tgc
