// Elementwise extras: inverse trigonometric and hyperbolic functions, float classification,
// bit shifts, CastLike; and the loss functions, which are gathers plus reductions.
#include <cmath>

#include "frontend/onnx/onnx_ops.h"

namespace tgc {

namespace {
Tensor is_inf(Ctx& c) {
  const Tensor& x = c.in(0);
  bool pos = c.attr_int("detect_positive", 1) != 0, neg = c.attr_int("detect_negative", 1) != 0;
  Tensor r = x.full_like(0).cast(DType::Bool);
  if (pos) r = r.logical_or(x.eq(x.full_like(INFINITY)));
  if (neg) r = r.logical_or(x.eq(x.full_like(-INFINITY)));
  return r;
}

Tensor bit_shift(Ctx& c) {
  std::string dir = c.attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") c.fail("direction must be LEFT or RIGHT, got '" + dir + "'");
  return c.in(0).bitwise(dir == "LEFT" ? Op::Shl : Op::Shr, c.in(1));
}

// NegativeLogLikelihoodLoss on log-probabilities [N, C, d...] and targets [N, d...].
Tensor nll_loss(Ctx& c, const Tensor& logp, const Tensor& target, size_t weight_input) {
  if (logp.ndim() < 2 || target.ndim() != logp.ndim() - 1)
    c.fail("input " + shape_str(logp.shape()) + " and target " + shape_str(target.shape()) + " do not match");
  Tensor t = target.cast(DType::I64);
  Tensor valid = t.full_like(1).cast(DType::Bool);
  if (c.has_attr("ignore_index")) valid = t.ne(t.full_like(double(c.attr_int("ignore_index", 0))));
  Tensor safe = Tensor::where(valid, t, t.full_like(0));  // ignored targets may lie outside [0, C)
  Tensor picked = logp.gather_elements(safe.unsqueeze({1}), 1).squeeze({1});
  Tensor w = c.has(weight_input) ? c.in(weight_input).gather(safe, 0) : picked.full_like(1);
  w = Tensor::where(valid, w, w.full_like(0));
  Tensor loss = -picked * w;
  std::string reduction = c.attr_string("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  if (reduction == "mean") return loss.sum() / w.sum();
  c.fail("unknown reduction '" + reduction + "'");
}

// Determinant by Gaussian elimination with partial pivoting, unrolled over the static size.
Tensor det(Ctx& c) {
  const Tensor& x = c.in(0);
  if (x.ndim() < 2 || x.dim(-1) != x.dim(-2)) c.fail("input must be [..., n, n], got " + shape_str(x.shape()));
  int64_t n = x.dim(-1);
  Shape batch(x.shape().begin(), x.shape().end() - 2);
  int64_t B = numel(batch);
  Tensor a = x.reshape({B, n, n});
  Tensor sign = Tensor::full(c.g, {B}, 1, x.dtype());
  Tensor rows = Tensor::arange(c.g, n);  // [n]
  Tensor zero = a.scalar(0);
  for (int64_t k = 0; k < n; ++k) {
    // Pivot: the first row at or below k with the largest |a[r, k]|.
    Tensor col = a.slice({k}, {k + 1}, {2}, {1}).reshape({B, n});
    Tensor below = rows.ge(rows.full_like(double(k))).reshape({1, n});
    Tensor p = Tensor::where(below, col.abs(), col.full_like(-1)).argmax(1, true);  // [B, 1]
    Tensor is_p = rows.reshape({1, n}).eq(p).reshape({B, n, 1});
    Tensor is_k = rows.eq(rows.full_like(double(k))).reshape({1, n, 1});
    Tensor row_k = a.slice({k}, {k + 1}, {1}, {1});                        // [B, 1, n]
    Tensor row_p = Tensor::where(is_p, a, a.full_like(0)).sum({1}, true);  // [B, 1, n]
    a = Tensor::where(is_k, row_p.expand(a.shape()), Tensor::where(is_p, row_k.expand(a.shape()), a));
    sign = Tensor::where(p.reshape({B}).eq(p.reshape({B}).full_like(double(k))), sign, -sign);
    // Eliminate below the pivot.
    Tensor pivot = a.slice({k}, {k + 1}, {1}, {1}).slice({k}, {k + 1}, {2}, {1});  // [B, 1, 1]
    Tensor pivot_row = a.slice({k}, {k + 1}, {1}, {1});                            // [B, 1, n]
    Tensor factor = a.slice({k}, {k + 1}, {2}, {1}) / pivot;                       // [B, n, 1]
    Tensor after = rows.gt(rows.full_like(double(k))).reshape({1, n, 1});
    factor = Tensor::where(after.logical_and(pivot.ne(zero)), factor, factor.full_like(0));
    a = a - factor * pivot_row;
  }
  Tensor diag = Tensor::full(c.g, {B}, 1, x.dtype());
  for (int64_t k = 0; k < n; ++k)
    diag = diag * a.slice({k}, {k + 1}, {1}, {1}).slice({k}, {k + 1}, {2}, {1}).reshape({B});
  return (diag * sign).reshape(batch);
}

Outs softmax_cross_entropy(Ctx& c) {
  Tensor logp = c.in(0).log_softmax(1);
  return {nll_loss(c, logp, c.in(1), 2), logp};
}
}  // namespace

void add_math_ops(OpTable& t) {
  t["Atan"] = map1([](const Tensor& x) { return x.atan(); });
  t["Asin"] = map1([](const Tensor& x) { return x.asin(); });
  t["Acos"] = map1([](const Tensor& x) { return x.acos(); });
  t["Sinh"] = map1([](const Tensor& x) { return x.sinh(); });
  t["Cosh"] = map1([](const Tensor& x) { return x.cosh(); });
  t["Asinh"] = map1([](const Tensor& x) { return x.asinh(); });
  t["Acosh"] = map1([](const Tensor& x) { return x.acosh(); });
  t["Atanh"] = map1([](const Tensor& x) { return x.atanh(); });
  t["IsNaN"] = map1([](const Tensor& x) { return x.ne(x); });
  t["IsInf"] = [](Ctx& c) -> Outs { return {is_inf(c)}; };
  t["BitShift"] = [](Ctx& c) -> Outs { return {bit_shift(c)}; };
  t["CastLike"] = map2([](const Tensor& x, const Tensor& like) { return x.cast(like.dtype()); });
  t["Det"] = [](Ctx& c) -> Outs { return {det(c)}; };
  t["NegativeLogLikelihoodLoss"] = [](Ctx& c) -> Outs { return {nll_loss(c, c.in(0), c.in(1), 2)}; };
  t["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy;
}

}  // namespace tgc
