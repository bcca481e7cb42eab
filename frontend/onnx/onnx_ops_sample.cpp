// GridSample: sampling at data-dependent positions. The taps of every output point form a sparse
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
    c.fail("supports X [N, C, H, W] with grid [N, Ho, Wo, 2], got " + shape_str(x.shape()) + " and " + shape_str(grid.shape()));
  std::string mode = c.attr_string("mode", c.opset >= 20 ? "linear" : "bilinear");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") c.fail("unknown mode '" + mode + "'");
  std::string padding = c.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") c.fail("unknown padding_mode '" + padding + "'");
  bool align = c.attr_int("align_corners", 0) != 0;
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), Ho = grid.dim(1), Wo = grid.dim(2);
  Axis ax{W, align, padding}, ay{H, align, padding};
  Tensor g = grid.cast(x.dtype()).reshape({N, Ho * Wo, 2});
  Tensor gx = ax.unnormalize(g.slice({0}, {1}, {2}, {1})), gy = ay.unnormalize(g.slice({1}, {2}, {2}, {1}));  // [N, P, 1]
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
    Tensor inside = tx.ge(tx.full_like(0)).logical_and(tx.le(tx.full_like(double(W - 1))))
                        .logical_and(ty.ge(ty.full_like(0))).logical_and(ty.le(ty.full_like(double(H - 1))));
    Tensor idx = Tensor::where(inside, ty * double(W) + tx, tx.full_like(-1)).cast(DType::I64);
    Tensor hit = idx.eq(q);
    Tensor term = Tensor::where(hit, w.expand(hit.shape()), Tensor::full(c.g, hit.shape(), 0, x.dtype()));
    m = m ? *m + term : term;
  }
  Tensor out = x.reshape({N, C, H * W}).matmul(m->transpose());  // [N, C, P]
  return out.reshape({N, C, Ho, Wo});
}
}  // namespace

void add_sample_ops(OpTable& t) { t["GridSample"] = [](Ctx& c) -> Outs { return {grid_sample(c)}; }; }

}  // namespace tgc
