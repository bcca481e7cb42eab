// Math functions composed from the minimal elementwise set (EXP2, LOG2, SIN, SQRT, RECIP, ...).
#include <cmath>

#include "ir/error.h"
#include "ir/tensor.h"

namespace tgc {

namespace {
constexpr double kLog2E = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;
constexpr double kPi = 3.14159265358979323846;

void need_float(const Tensor& t, const char* what) {
  if (!is_float(t.dtype()))
    throw Error(std::string(what) + " needs a float tensor, got " + std::string(dtype_name(t.dtype())));
}
}  // namespace

Tensor Tensor::exp2() const {
  need_float(*this, "exp2");
  return make(Op::Exp2, {u_});
}
Tensor Tensor::log2() const {
  need_float(*this, "log2");
  return make(Op::Log2, {u_});
}
Tensor Tensor::exp() const { return (*this * kLog2E).exp2(); }
Tensor Tensor::log() const { return log2() * kLn2; }
Tensor Tensor::sqrt() const {
  need_float(*this, "sqrt");
  return make(Op::Sqrt, {u_});
}
Tensor Tensor::reciprocal() const {
  need_float(*this, "reciprocal");
  return make(Op::Recip, {u_});
}
Tensor Tensor::sin() const {
  need_float(*this, "sin");
  return make(Op::Sin, {u_});
}
Tensor Tensor::cos() const { return (scalar(kPi / 2) - *this).sin(); }
Tensor Tensor::trunc() const { return is_float(dtype()) ? make(Op::Trunc, {u_}) : *this; }

Tensor Tensor::abs() const {
  if (is_unsigned(dtype())) return *this;
  return where(lt(full_like(0)), -*this, *this);
}

Tensor Tensor::sign() const {
  Tensor zero = full_like(0);
  return where(lt(zero), full_like(-1), where(gt(zero), full_like(1), zero));
}

Tensor Tensor::floor() const {
  if (!is_float(dtype())) return *this;
  Tensor t = trunc();
  return where(lt(t), t - 1.0, t);
}

Tensor Tensor::ceil() const {
  if (!is_float(dtype())) return *this;
  Tensor t = trunc();
  return where(gt(t), t + 1.0, t);
}

Tensor Tensor::round() const {
  if (!is_float(dtype())) return *this;
  // x - floor(x) is exact, so the comparison with 0.5 is too; x + 0.5 is not (for x = 0.5 + 2^-24
  // it rounds to 1.0 in f32, which looked like a tie). Large floats are integers (fraction 0);
  // inf and NaN stay as they are (their fraction is NaN).
  Tensor f = floor();
  Tensor frac = *this - f;
  Tensor odd = f.fmod(f.full_like(2)).ne(f.full_like(0));
  Tensor up = frac.gt(full_like(0.5)).logical_or(frac.eq(full_like(0.5)).logical_and(odd));
  return where(up, f + 1.0, f);
}

Tensor Tensor::pow(const Tensor& e) const {
  Tensor b = *this, x = e;
  if (is_int(b.dtype()) && is_float(x.dtype())) b = b.cast(x.dtype());
  if (is_int(x.dtype())) x = x.cast(is_float(b.dtype()) ? b.dtype() : DType::F32);
  bool int_base = is_int(b.dtype());
  Tensor bf = int_base ? b.cast(DType::F64) : b;
  x = x.cast(bf.dtype());
  Tensor mag = (x * bf.abs().log2()).exp2();
  // Negative bases: defined for integer exponents, with the sign of (-1)^e.
  Tensor xi = x.trunc();
  Tensor is_int_exp = xi.eq(x);
  Tensor odd = xi.fmod(xi.full_like(2)).ne(xi.full_like(0));
  Tensor neg = bf.lt(bf.full_like(0));
  Tensor signed_mag = where(neg.logical_and(odd), -mag, mag);
  Tensor r = where(neg.logical_and(is_int_exp.logical_not()), mag.full_like(NAN), signed_mag);
  r = where(x.eq(x.full_like(0)), r.full_like(1), r);  // x^0 = 1, also for x = 0
  return int_base ? r.round().cast(b.dtype()) : r;
}

Tensor Tensor::relu() const { return maximum(full_like(0)); }

Tensor Tensor::leaky_relu(double alpha) const { return where(lt(full_like(0)), *this * alpha, *this); }

Tensor Tensor::sigmoid() const {
  need_float(*this, "sigmoid");
  return ((*this * -kLog2E).exp2() + 1.0).reciprocal();
}

Tensor Tensor::tanh() const { return (*this * 2.0).sigmoid() * 2.0 - 1.0; }

Tensor Tensor::erf() const {
  // Abramowitz & Stegun 7.1.26 is too coarse (1.5e-7 abs but poor relative near 0); use the
  // odd series for |x| < 0.5 and the A&S form elsewhere, each exact to f32 precision.
  need_float(*this, "erf");
  Tensor a = abs();
  Tensor t = (a * 0.3275911 + 1.0).reciprocal();
  Tensor poly = ((((t * 1.061405429 + -1.453152027) * t + 1.421413741) * t + -0.284496736) * t + 0.254829592) * t;
  Tensor tail = scalar(1.0) - poly * (-(a * a)).exp();
  Tensor x2 = *this * *this;
  // erf(x) = 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320)
  Tensor series = *this *
                  ((((((x2 * (-1.0 / 1320) + 1.0 / 216) * x2 + -1.0 / 42) * x2 + 0.1) * x2 + -1.0 / 3) * x2) + 1.0) *
                  1.1283791670955126;
  Tensor signed_tail = where(lt(full_like(0)), -tail, tail);
  return where(a.lt(full_like(0.5)), series, signed_tail);
}

Tensor Tensor::gelu(bool tanh_approx) const {
  if (tanh_approx) {
    Tensor inner = (*this + *this * *this * *this * 0.044715) * 0.7978845608028654;
    return *this * 0.5 * (inner.tanh() + 1.0);
  }
  return *this * 0.5 * ((*this * 0.7071067811865476).erf() + 1.0);
}

// ---- inverse trigonometric and hyperbolic functions -------------------------------------------
// Odd power series near 0, where the closed forms below lose precision to cancellation.
namespace {
Tensor odd_series(const Tensor& x, const std::vector<double>& coeffs) {  // x * (c0 + c1 x^2 + c2 x^4 + ...)
  Tensor x2 = x * x;
  Tensor p = x.full_like(coeffs.back());
  for (size_t i = coeffs.size() - 1; i-- > 0;) p = p * x2 + coeffs[i];
  return x * p;
}
Tensor near_zero(const Tensor& x, const Tensor& series, const Tensor& closed) {
  return Tensor::where(x.abs().lt(x.full_like(0.1)), series, closed);
}
}  // namespace

Tensor Tensor::atan() const {
  need_float(*this, "atan");
  // Reduce |x| to [0, tan(pi/8)]: atan(a) = pi/2 + atan(-1/a) above tan(3pi/8), and
  // pi/4 + atan((a-1)/(a+1)) above tan(pi/8); then a degree-9 minimax polynomial (Cephes).
  Tensor a = abs();
  Tensor big = a.gt(full_like(2.414213562373095)), mid = a.gt(full_like(0.41421356237309503));
  Tensor t = where(big, -a.reciprocal(), where(mid, (a - 1.0) / (a + 1.0), a));
  Tensor base = where(big, full_like(kPi / 2), where(mid, full_like(kPi / 4), full_like(0)));
  Tensor z = t * t;
  Tensor poly = (((z * 8.05374449538e-2 - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * t + t;
  Tensor r = base + poly;
  return where(lt(full_like(0)), -r, r);
}
// (1 - x)(1 + x) rather than 1 - x^2: exact where x is near 1.
Tensor Tensor::asin() const { return (*this / ((scalar(1) - *this) * (*this + 1.0)).sqrt()).atan(); }
Tensor Tensor::acos() const { return ((scalar(1) - *this) / (*this + 1.0)).sqrt().atan() * 2.0; }
Tensor Tensor::sinh() const {
  return near_zero(*this, odd_series(*this, {1, 1.0 / 6, 1.0 / 120, 1.0 / 5040}), (exp() - (-*this).exp()) * 0.5);
}
Tensor Tensor::cosh() const { return (exp() + (-*this).exp()) * 0.5; }
Tensor Tensor::asinh() const {
  Tensor a = abs();
  Tensor closed = (a + (a * a + 1.0).sqrt()).log();
  closed = where(lt(full_like(0)), -closed, closed);
  return near_zero(*this, odd_series(*this, {1, -1.0 / 6, 3.0 / 40, -15.0 / 336}), closed);
}
Tensor Tensor::acosh() const { return (*this + ((*this - 1.0) * (*this + 1.0)).sqrt()).log(); }
Tensor Tensor::atanh() const {
  Tensor closed = ((scalar(1) + *this) / (scalar(1) - *this)).log() * 0.5;
  return near_zero(*this, odd_series(*this, {1, 1.0 / 3, 1.0 / 5, 1.0 / 7}), closed);
}

Tensor Tensor::clip(std::optional<double> lo, std::optional<double> hi) const {
  Tensor r = *this;
  if (lo) r = r.maximum(full_like(*lo));
  if (hi) r = r.minimum(full_like(*hi));
  return r;
}

Tensor Tensor::clip(const Tensor& lo, const Tensor& hi) const { return maximum(lo).minimum(hi); }

}  // namespace tgc
