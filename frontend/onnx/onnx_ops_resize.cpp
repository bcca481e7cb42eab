// Resize and Upsample. Resampling is separable: each resized axis is a gather with compile-time
// indices (Tensor::take, movement ops for the regular patterns of nearest and linear
// resampling) weighted by compile-time coefficients (linear: 2 taps, cubic: 4).
#include <algorithm>
#include <cmath>
#include <optional>

#include "frontend/onnx/onnx_ops.h"

namespace tgc {

namespace {
struct ResizeAttrs {
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false;
};

// Position in the input that output index o maps to (ONNX coordinate_transformation_mode).
// `out` is the resized length before flooring (in * scale): the ONNX reference uses it, not the
// integer output size, where a scale gives a fractional length.
double source_coord(Ctx& c, const ResizeAttrs& a, int64_t o, double scale, int64_t in, double out, double roi_start,
                    double roi_end) {
  const std::string& m = a.coord;
  double x = double(o);
  if (m == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (m == "half_pixel_symmetric") {
    double adj = std::floor(out) / (scale * double(in));
    double center = double(in) / 2;
    return center * (1 - adj) + (x + 0.5) / scale - 0.5;
  }
  if (m == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (m == "align_corners") return out == 1 ? 0 : x * double(in - 1) / (out - 1);
  if (m == "asymmetric") return x / scale;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (m == "tf_crop_and_resize")
    return out > 1 ? roi_start * double(in - 1) + x * (roi_end - roi_start) * double(in - 1) / (out - 1)
                   : 0.5 * (roi_start + roi_end) * double(in - 1);
  c.fail("unknown coordinate_transformation_mode '" + m + "'");
}

int64_t nearest_index(Ctx& c, const std::string& mode, double x, bool downsampling) {
  double f = std::floor(x);
  if (mode == "round_prefer_floor") return int64_t(x == f + 0.5 ? f : std::round(x));
  if (mode == "round_prefer_ceil") return int64_t(x == f + 0.5 ? f + 1 : std::round(x));
  if (mode == "floor") return int64_t(f);
  if (mode == "ceil") return int64_t(std::ceil(x));
  if (mode == "simple") return int64_t(downsampling ? std::ceil(x) : x);  // Upsample-era rule
  c.fail("unknown nearest_mode '" + mode + "'");
}

double cubic_coeff(double d, double A) {  // Keys' cubic convolution kernel at distance |d|
  d = std::fabs(d);
  if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0;
}

// Coefficients shaped to broadcast along `axis` of a rank-r tensor.
Tensor coeff_tensor(Graph& g, const std::vector<double>& w, int64_t axis, int rank, DType t) {
  Shape s(size_t(rank), 1);
  s[size_t(axis)] = int64_t(w.size());
  HostTensor h(t, s);
  for (size_t i = 0; i < w.size(); ++i) h.set(int64_t(i), w[i]);
  return Tensor::weight(g, "resize_coeffs", std::move(h));
}

// Resamples x along one axis to `out` elements.
Tensor resize_axis(Ctx& c, const ResizeAttrs& a, const Tensor& x, int64_t axis, int64_t out, double scale,
                   double roi_start, double roi_end) {
  int64_t in = x.dim(axis);
  bool crop = a.coord == "tf_crop_and_resize";
  std::vector<double> pos(static_cast<size_t>(out));
  std::vector<bool> inside(size_t(out), true);
  for (int64_t o = 0; o < out; ++o) {
    pos[size_t(o)] = source_coord(c, a, o, scale, in, double(in) * scale, roi_start, roi_end);
    if (crop) inside[size_t(o)] = pos[size_t(o)] >= 0 && pos[size_t(o)] <= double(in - 1);
  }
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  Tensor r;
  if (a.mode == "nearest") {
    std::vector<int64_t> idx;
    for (double p : pos) idx.push_back(clamp(nearest_index(c, a.nearest, p, scale < 1)));
    r = x.take(axis, idx);
  } else {
    // taps[k][o]: input index and weight of tap k for output o.
    std::vector<std::vector<int64_t>> ids;
    std::vector<std::vector<double>> ws;
    if (a.mode == "linear") {
      ids.assign(2, std::vector<int64_t>(size_t(out)));
      ws.assign(2, std::vector<double>(size_t(out)));
      for (int64_t o = 0; o < out; ++o) {
        double p = std::clamp(pos[size_t(o)], 0.0, double(in - 1));
        int64_t i0 = int64_t(std::floor(p));
        double t = p - double(i0);
        ids[0][size_t(o)] = i0, ids[1][size_t(o)] = clamp(i0 + 1);
        ws[0][size_t(o)] = 1 - t, ws[1][size_t(o)] = t;
      }
    } else if (a.mode == "cubic") {
      ids.assign(4, std::vector<int64_t>(size_t(out)));
      ws.assign(4, std::vector<double>(size_t(out)));
      for (int64_t o = 0; o < out; ++o) {
        double p = pos[size_t(o)];
        int64_t i0 = int64_t(std::floor(p));
        double t = p - double(i0), total = 0;
        for (int64_t k = 0; k < 4; ++k) {
          int64_t i = i0 - 1 + k;
          double w = cubic_coeff(t - double(k - 1), a.cubic_a);
          if (a.exclude_outside && (i < 0 || i >= in)) w = 0;
          ids[size_t(k)][size_t(o)] = clamp(i), ws[size_t(k)][size_t(o)] = w, total += w;
        }
        if (a.exclude_outside && total != 0)
          for (int64_t k = 0; k < 4; ++k) ws[size_t(k)][size_t(o)] /= total;
      }
    } else {
      c.fail("unknown mode '" + a.mode + "'");
    }
    DType t = is_float(x.dtype()) ? x.dtype() : DType::F32;
    Tensor xf = x.cast(t);
    for (size_t k = 0; k < ids.size(); ++k) {
      if (std::all_of(ws[k].begin(), ws[k].end(), [](double w) { return w == 0; })) continue;
      Tensor term = xf.take(axis, ids[k]) * coeff_tensor(c.g, ws[k], axis, x.ndim(), t);
      r = r.uop() ? r + term : term;
    }
    if (!r.uop()) r = xf.take(axis, ids[0]) * 0.0;
    if (!is_float(x.dtype())) r = r.round().cast(x.dtype());
  }
  if (crop && !std::all_of(inside.begin(), inside.end(), [](bool b) { return b; })) {
    std::vector<double> m(inside.begin(), inside.end());
    Tensor mask = coeff_tensor(c.g, m, axis, x.ndim(), DType::Bool);
    r = Tensor::where(mask, r, Tensor::full(c.g, {}, a.extrapolation, r.dtype()));
  }
  return r;
}

bool has_data(Ctx& c, size_t i) { return c.has(i) && c.in(i).numel() > 0; }

// onnxruntime's CPU kernel for a linear resize of a 2-D tensor, or of a 4-D one along its last
// two axes (NCHW), in its own arithmetic: the source coordinate and the distances to the two taps
// in f32 per axis (dy1 = |y - y1|, dy2 = |y - y2|; 0.5 each where the taps coincide at the edge),
// then Y = dx2 * dy2 * X11 + dx1 * dy2 * X21 + dx2 * dy1 * X12 + dx1 * dy1 * X22, each weight a
// product of two f32 distances and the sum left to right. The separable form (an axis at a time)
// rounds differently, in the last bit of about one value in ten, and a DynamicQuantizeLinear
// after the resize then picks a different scale. Returns nothing where the kernel would not be
// that one, or where its coordinates are not the ONNX reference's (align_corners at a fractional
// resized length).
std::optional<Tensor> ort_bilinear(Ctx& c, const ResizeAttrs& a, const Tensor& x, const std::vector<int64_t>& axes,
                                   const std::vector<int64_t>& out, const std::vector<double>& scales,
                                   bool sizes_given) {
  int rank = x.ndim();
  if (a.mode != "linear" || x.dtype() != DType::F32 || (rank != 2 && rank != 4)) return std::nullopt;
  if (a.coord != "half_pixel" && a.coord != "asymmetric" && a.coord != "pytorch_half_pixel" &&
      a.coord != "align_corners")
    return std::nullopt;
  std::vector<int64_t> size(x.shape().begin(), x.shape().end());
  std::vector<float> scale(size_t(rank), 1.0f);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t in = x.dim(axes[i]);
    size[size_t(axes[i])] = out[i];
    // With sizes, onnxruntime's scale is out / in in f32.
    scale[size_t(axes[i])] = sizes_given ? float(out[i]) / float(in) : float(scales[i]);
    if (a.coord == "align_corners" && double(in) * scales[i] != double(out[i])) return std::nullopt;
  }
  for (int d = 0; d < rank - 2; ++d)
    if (size[size_t(d)] != x.dim(d) || scale[size_t(d)] != 1.0f) return std::nullopt;
  // Per axis: the taps' indices and distances, as onnxruntime's SetupUpsampleBilinear has them.
  struct Taps {
    std::vector<int64_t> i1, i2;
    std::vector<double> d1, d2;
  };
  auto taps = [&](int64_t axis) {
    int64_t in = x.dim(axis), n = size[size_t(axis)];
    float s = scale[size_t(axis)];
    Taps t;
    for (int64_t o = 0; o < n; ++o) {
      float p = float(o);
      if (s != 1.0f) {
        if (a.coord == "half_pixel")
          p = (p + 0.5f) / s - 0.5f;
        else if (a.coord == "asymmetric")
          p = p / s;
        else if (a.coord == "pytorch_half_pixel")
          p = n > 1 ? (p + 0.5f) / s - 0.5f : 0.0f;
        else
          p = n == 1 ? 0.0f : p * float(in - 1) / float(n - 1);
      }
      p = std::max(0.0f, std::min(p, float(in - 1)));
      int64_t i1 = std::min(int64_t(p), in - 1), i2 = std::min(i1 + 1, in - 1);
      float d1 = std::fabs(p - float(i1)), d2 = std::fabs(p - float(i2));
      if (i1 == i2) d1 = d2 = 0.5f;
      t.i1.push_back(i1), t.i2.push_back(i2), t.d1.push_back(d1), t.d2.push_back(d2);
    }
    return t;
  };
  int64_t ay = rank - 2, ax = rank - 1;
  Taps ty = taps(ay), tx = taps(ax);
  auto w = [&](const std::vector<double>& v, int64_t axis) { return coeff_tensor(c.g, v, axis, rank, DType::F32); };
  Tensor r1 = x.take(ay, ty.i1), r2 = x.take(ay, ty.i2);
  Tensor x11 = r1.take(ax, tx.i1), x21 = r1.take(ax, tx.i2), x12 = r2.take(ax, tx.i1), x22 = r2.take(ax, tx.i2);
  Tensor dx1 = w(tx.d1, ax), dx2 = w(tx.d2, ax), dy1 = w(ty.d1, ay), dy2 = w(ty.d2, ay);
  return dx2 * dy2 * x11 + dx1 * dy2 * x21 + dx2 * dy1 * x12 + dx1 * dy1 * x22;
}

// onnxruntime's NCHWc upsample where its NchwcTransformer makes one of this node (a linear resize
// of an NCHWc conv's output by whole factors along H and W: onnx_mlas_order.h); else nothing.
std::optional<Tensor> nchwc_upsample(Ctx& c, const ResizeAttrs& a, const Tensor& x, const std::vector<int64_t>& axes,
                                     const std::vector<int64_t>& out, const std::vector<double>& scales) {
  if (!c.mlas_upsample() || a.mode != "linear" || x.ndim() != 4 || x.dtype() != DType::F32 || axes.size() != 4)
    return std::nullopt;
  std::vector<int64_t> factor(4);
  for (size_t i = 0; i < 4; ++i) {
    int64_t in = x.dim(axes[i]);
    if (in <= 0 || out[i] % in != 0 || double(out[i] / in) != scales[i]) return std::nullopt;
    factor[size_t(axes[i])] = out[i] / in;
  }
  if (factor[0] != 1 || factor[1] != 1) return std::nullopt;
  return mlas_upsample_linear(c.g, x, a.coord, factor[2], factor[3]);
}

Tensor resize(Ctx& c) {
  const Tensor& x = c.in(0);
  int rank = x.ndim();
  ResizeAttrs a;
  a.mode = c.attr_string("mode", "nearest");
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes, axes;
  if (c.node.op_type() == "Upsample" || c.opset < 11) {
    // Upsample and Resize-10: scales only, asymmetric coordinates.
    a.coord = "asymmetric", a.nearest = c.node.op_type() == "Upsample" ? "floor" : "simple";
    scales = c.opset >= 9 ? c.floats(1) : c.attr_floats("scales");
  } else {
    a.coord = c.attr_string("coordinate_transformation_mode", "half_pixel");
    a.nearest = c.attr_string("nearest_mode", "round_prefer_floor");
    a.cubic_a = c.attr_float("cubic_coeff_a", -0.75);
    a.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
    a.extrapolation = c.attr_float("extrapolation_value", 0);
    if (c.attr_int("antialias", 0)) c.fail("antialias is not supported");
    if (has_data(c, 1) && a.coord == "tf_crop_and_resize") roi = c.floats(1);
    if (has_data(c, 2)) scales = c.floats(2);
    if (has_data(c, 3)) sizes = c.ints(3);
    axes = c.attr_ints("axes");
  }
  if (a.mode == "bilinear" || a.mode == "trilinear") a.mode = "linear";  // Upsample-7 names
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (auto& ax : axes) ax = x.norm_axis(ax);
  size_t n = axes.size();
  if (scales.empty() == sizes.empty()) c.fail("exactly one of scales and sizes must be given");
  if (!scales.empty() && scales.size() != n)
    c.fail("scales has " + std::to_string(scales.size()) + " values for " + std::to_string(n) + " axes");
  if (!sizes.empty() && sizes.size() != n)
    c.fail("sizes has " + std::to_string(sizes.size()) + " values for " + std::to_string(n) + " axes");
  if (!roi.empty() && roi.size() != 2 * n)
    c.fail("roi has " + std::to_string(roi.size()) + " values, expected " + std::to_string(2 * n));
  std::vector<int64_t> out(n);
  if (!sizes.empty()) {
    std::string policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch") {
      double s = policy == "not_larger" ? INFINITY : 0;
      for (size_t i = 0; i < n; ++i) {
        double r = double(sizes[i]) / double(x.dim(axes[i]));
        s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
      }
      for (size_t i = 0; i < n; ++i) sizes[i] = int64_t(std::round(s * double(x.dim(axes[i]))));
    }
    scales.resize(n);
    for (size_t i = 0; i < n; ++i) out[i] = sizes[i], scales[i] = double(sizes[i]) / double(x.dim(axes[i]));
  } else {
    for (size_t i = 0; i < n; ++i) {
      if (scales[i] <= 0) c.fail("scales must be positive");
      double span = roi.empty() ? 1.0 : roi[i + n] - roi[i];
      out[i] = int64_t(std::floor(double(x.dim(axes[i])) * span * scales[i]));
    }
  }
  if (std::optional<Tensor> r = nchwc_upsample(c, a, x, axes, out, scales); r && roi.empty()) return *r;
  if (roi.empty())
    if (std::optional<Tensor> r = ort_bilinear(c, a, x, axes, out, scales, !sizes.empty())) return *r;
  Tensor r = x;
  for (size_t i = 0; i < n; ++i) {
    double rs = roi.empty() ? 0 : roi[i], re = roi.empty() ? 1 : roi[i + n];
    if (out[i] == x.dim(axes[i]) && scales[i] == 1 && roi.empty() && a.coord != "tf_half_pixel_for_nn") continue;
    r = resize_axis(c, a, r, axes[i], out[i], scales[i], rs, re);
  }
  return r;
}
}  // namespace

void add_resize_ops(OpTable& t) {
  t["Resize"] = [](Ctx& c) -> Outs { return {resize(c)}; };
  t["Upsample"] = [](Ctx& c) -> Outs { return {resize(c)}; };
}

}  // namespace tgc
