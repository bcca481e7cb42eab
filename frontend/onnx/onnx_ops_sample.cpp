// GridSample and RoiAlign: sampling at data-dependent positions. The taps of every output point form a sparse
// interpolation matrix M[n, out, in] (weights on one-hot compares of tap index and input
// position); the result is the batched matmul X[n, c, in] @ M^T.
#include <array>
#include <cmath>
#include <optional>

#include "frontend/onnx/onnx_ops.h"

namespace tgc {

namespace {
// Mirrors x into [lo, lo + span] (PyTorch's reflect_coordinates, with twice_low = 2 lo).
Tensor reflect(const Tensor& x, double lo, double span) {
  if (span <= 0) return x.full_like(0);
  Tensor in = (x - lo).abs();
  Tensor extra = in.fmod(in.full_like(span));
  Tensor flips = (in * (1.0 / span)).floor();
  Tensor even = flips.fmod(flips.full_like(2)).eq(flips.full_like(0));
  return Tensor::where(even, extra + lo, extra.full_like(span + lo) - extra);
}

// One spatial coordinate: unnormalized, with the padding rule applied to real positions.
struct Axis {
  int64_t size;
  bool align;
  std::string padding;
  Tensor unnormalize(const Tensor& g) const {
    return align ? (g + 1.0) * (0.5 * double(size - 1)) : ((g + 1.0) * double(size) - 1.0) * 0.5;
  }
  Tensor pad(const Tensor& x) const {
    if (padding == "border") return x.clip(0.0, double(size - 1));
    if (padding == "reflection") {
      Tensor r = align ? reflect(x, 0, double(size - 1)) : reflect(x, -0.5, double(size));
      return r.clip(0.0, double(size - 1));
    }
    return x;
  }
};

Tensor grid_sample(Ctx& c) {
  const Tensor &x = c.in(0), &grid = c.in(1);
  if (x.ndim() != 4 || grid.ndim() != 4 || grid.dim(3) != 2 || grid.dim(0) != x.dim(0))
    c.fail("supports X [N, C, H, W] with grid [N, Ho, Wo, 2], got " + shape_str(x.shape()) + " and " +
           shape_str(grid.shape()));
  std::string mode = c.attr_string("mode", c.opset >= 20 ? "linear" : "bilinear");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") c.fail("unknown mode '" + mode + "'");
  std::string padding = c.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    c.fail("unknown padding_mode '" + padding + "'");
  bool align = c.attr_int("align_corners", 0) != 0;
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), Ho = grid.dim(1), Wo = grid.dim(2);
  Axis ax{W, align, padding}, ay{H, align, padding};
  Tensor g = grid.cast(x.dtype()).reshape({N, Ho * Wo, 2});
  Tensor gx = ax.unnormalize(g.slice({0}, {1}, {2}, {1})),
         gy = ay.unnormalize(g.slice({1}, {2}, {2}, {1}));  // [N, P, 1]
  // Taps: integer positions (as floats) and weights, each [N, P, 1].
  std::vector<std::array<Tensor, 3>> taps;  // x, y, weight
  if (mode == "nearest" || mode == "bilinear") {
    gx = ax.pad(gx), gy = ay.pad(gy);
    if (mode == "nearest") {
      taps.push_back({gx.round(), gy.round(), gx.full_like(1)});
    } else {
      Tensor x0 = gx.floor(), y0 = gy.floor();
      Tensor fx = gx - x0, fy = gy - y0;
      Tensor one = fx.full_like(1);
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx)
          taps.push_back({x0 + double(dx), y0 + double(dy), (dx ? fx : one - fx) * (dy ? fy : one - fy)});
    }
  } else {
    // Bicubic: 4x4 taps around floor(x); padding applies to each tap position.
    constexpr double A = -0.75;
    Tensor x0 = gx.floor(), y0 = gy.floor();
    Tensor tx = gx - x0, ty = gy - y0;
    auto weight = [&](const Tensor& t, int k) {  // Keys' kernel at distance |t - (k - 1)|
      Tensor d = (t - double(k - 1)).abs();
      Tensor near = ((d * (A + 2) - (A + 3)) * d * d) + 1.0;
      Tensor far = ((d * A - 5 * A) * d + 8 * A) * d - 4 * A;
      return Tensor::where(d.le(d.full_like(1)), near, far);
    };
    for (int ky = 0; ky < 4; ++ky)
      for (int kx = 0; kx < 4; ++kx)
        taps.push_back({ax.pad(x0 + double(kx - 1)), ay.pad(y0 + double(ky - 1)), weight(tx, kx) * weight(ty, ky)});
  }
  // Interpolation matrix M[n, p, q]: tap weights where q is the tap's input position.
  Tensor q = Tensor::arange(c.g, H * W).reshape({1, 1, H * W});
  std::optional<Tensor> m;
  for (const auto& [tx, ty, w] : taps) {
    Tensor inside = tx.ge(tx.full_like(0))
                        .logical_and(tx.le(tx.full_like(double(W - 1))))
                        .logical_and(ty.ge(ty.full_like(0)))
                        .logical_and(ty.le(ty.full_like(double(H - 1))));
    Tensor idx = Tensor::where(inside, ty * double(W) + tx, tx.full_like(-1)).cast(DType::I64);
    Tensor hit = idx.eq(q);
    Tensor term = Tensor::where(hit, w.expand(hit.shape()), Tensor::full(c.g, hit.shape(), 0, x.dtype()));
    m = m ? *m + term : term;
  }
  Tensor out = x.reshape({N, C, H * W}).matmul(m->transpose());  // [N, C, P]
  return out.reshape({N, C, Ho, Wo});
}
// RoiAlign (average mode): every output bin averages sampling_ratio^2 bilinear samples of its
// roi's image; all of them are taps of one interpolation matrix per roi.
Tensor roi_align(Ctx& c) {
  const Tensor &x = c.in(0), &rois = c.in(1), &batch_idx = c.in(2);
  if (x.ndim() != 4 || rois.ndim() != 2 || rois.dim(1) != 4 || batch_idx.numel() != rois.dim(0))
    c.fail("needs X [N, C, H, W], rois [R, 4] and batch_indices [R]");
  if (c.attr_string("mode", "avg") != "avg") c.fail("only mode 'avg' is supported");
  int64_t ratio = c.attr_int("sampling_ratio", 0);
  if (ratio <= 0) c.fail("sampling_ratio 0 (adaptive, per roi) is not supported: the sample count must be static");
  bool half_pixel = c.opset >= 16 && c.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), R = rois.dim(0);
  int64_t oh = c.attr_int("output_height", 1), ow = c.attr_int("output_width", 1), S = ratio * ratio, P = oh * ow;
  double scale = c.attr_float("spatial_scale", 1.0), offset = half_pixel ? 0.5 : 0;
  Tensor r = rois.cast(x.dtype()) * scale - offset;  // [R, 4]: x1, y1, x2, y2
  auto coord = [&](int64_t i) { return r.slice({i}, {i + 1}, {1}, {1}).reshape({R, 1, 1}); };
  Tensor x1 = coord(0), y1 = coord(1), rw = coord(2) - x1, rh = coord(3) - y1;
  if (!half_pixel) rw = rw.maximum(rw.full_like(1)), rh = rh.maximum(rh.full_like(1));
  // Sample (bin, point) positions as fractions of a bin: [1, P * S, 1] constants.
  HostTensor fy(x.dtype(), {1, P * S, 1}), fx(x.dtype(), {1, P * S, 1});
  for (int64_t p = 0; p < P; ++p)
    for (int64_t s = 0; s < S; ++s) {
      fy.set(p * S + s, double(p / ow) + (double(s / ratio) + 0.5) / double(ratio));
      fx.set(p * S + s, double(p % ow) + (double(s % ratio) + 0.5) / double(ratio));
    }
  Tensor y = y1 + Tensor::weight(c.g, "roi_fy", std::move(fy)) * (rh * (1.0 / double(oh)));
  Tensor xs = x1 + Tensor::weight(c.g, "roi_fx", std::move(fx)) * (rw * (1.0 / double(ow)));  // [R, P*S, 1]
  Tensor valid = y.ge(y.full_like(-1))
                     .logical_and(y.le(y.full_like(double(H))))
                     .logical_and(xs.ge(xs.full_like(-1)))
                     .logical_and(xs.le(xs.full_like(double(W))));
  // Clamp into the image; a position at or past the last row/column uses that row/column alone.
  auto corners = [&](Tensor v, int64_t size) {
    v = v.maximum(v.full_like(0));
    Tensor lo = v.floor();
    Tensor last = lo.ge(lo.full_like(double(size - 1)));
    lo = Tensor::where(last, lo.full_like(double(size - 1)), lo);
    Tensor hi = Tensor::where(last, lo, lo + 1.0);
    Tensor frac = Tensor::where(last, lo.full_like(0), v - lo);
    return std::array<Tensor, 3>{lo, hi, frac};
  };
  auto [ylo, yhi, ly] = corners(y, H);
  auto [xlo, xhi, lx] = corners(xs, W);
  Tensor one = ly.full_like(1);
  Tensor q = Tensor::arange(c.g, H * W).reshape({1, 1, H * W});
  std::optional<Tensor> m;
  for (int cy = 0; cy < 2; ++cy)
    for (int cx = 0; cx < 2; ++cx) {
      Tensor w = (cy ? ly : one - ly) * (cx ? lx : one - lx);
      w = Tensor::where(valid, w, w.full_like(0)) * (1.0 / double(S));
      Tensor idx = ((cy ? yhi : ylo) * double(W) + (cx ? xhi : xlo)).cast(DType::I64);
      Tensor hit = idx.eq(q);
      Tensor term = Tensor::where(hit, w.expand(hit.shape()), Tensor::full(c.g, hit.shape(), 0, x.dtype()));
      m = m ? *m + term : term;
    }
  Tensor mat = m->reshape({R, P, S, H * W}).sum({2});  // [R, P, HW]
  Tensor img = x.reshape({N, C * H * W}).gather(batch_idx.cast(DType::I64).reshape({R}), 0).reshape({R, C, H * W});
  return img.matmul(mat.transpose()).reshape({R, C, oh, ow});
}
}  // namespace

void add_sample_ops(OpTable& t) {
  t["GridSample"] = [](Ctx& c) -> Outs { return {grid_sample(c)}; };
  t["RoiAlign"] = [](Ctx& c) -> Outs { return {roi_align(c)}; };
}

}  // namespace tgc
