#include "ir/scalar.h"

#include <cmath>
#include <cstring>

#include "ir/error.h"

namespace tgc {

namespace {
uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  uint32_t bits = exp == 31 ? sign | 0x7f800000u | (mant << 13) : sign | ((exp + 112) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  float r = static_cast<float>(round_float(DType::F16, f));  // already representable
  uint32_t b;
  std::memcpy(&b, &r, 4);
  uint16_t sign = (b >> 16) & 0x8000;
  int32_t exp = int32_t((b >> 23) & 0xff) - 127 + 15;
  uint32_t mant = b & 0x7fffff;
  if (std::isnan(r)) return sign | 0x7e00;
  if (std::isinf(r)) return sign | 0x7c00;
  if (r == 0) return sign;
  if (exp <= 0) return sign | uint16_t(std::lround(std::fabs(r) * 16777216.0));  // subnormal
  return sign | uint16_t(exp << 10) | uint16_t(mant >> 13);
}

double cast_to_float(DType t, Num v, DType from) {
  double d = v.as_double(from);
  return round_float(t, d);
}

int64_t float_to_int(DType t, double d) {
  if (t == DType::Bool) return d != 0;
  if (std::isnan(d)) return 0;
  // Saturate before converting so out-of-range values don't hit C++ undefined behaviour.
  if (is_unsigned(t)) {
    if (d <= 0) return 0;
    if (d >= 18446744073709551615.0) return -1;
    return wrap_int(t, int64_t(uint64_t(d)));
  }
  if (d >= 9.2233720368547758e18) return INT64_MAX;
  if (d <= -9.2233720368547758e18) return INT64_MIN;
  return wrap_int(t, int64_t(d));
}
}  // namespace

double Num::as_double(DType t) const {
  if (is_float(t)) return f;
  return is_unsigned(t) && t != DType::Bool ? double(u(i)) : double(i);
}

Num eval_elementwise(Op op, DType out, DType in, const Num* a) {
  if (op == Op::Cast) {
    if (is_float(out)) return {cast_to_float(out, a[0], in), 0};
    if (is_float(in)) return {0, float_to_int(out, a[0].f)};
    return {0, wrap_int(out, a[0].i)};
  }
  if (op == Op::Where) return a[0].i ? a[1] : a[2];
  if (op == Op::Dot4) {
    int64_t r = a[2].i;
    for (int k = 0; k < 4; ++k)
      r += int64_t(uint8_t(u(a[0].i) >> (8 * k))) * int64_t(int8_t(uint8_t(u(a[1].i) >> (8 * k))));
    return {0, wrap_int(out, r)};
  }
  if (op == Op::Bitcast) {
    uint8_t bytes[8] = {};
    store_num(in, bytes, a[0]);
    return load_num(out, bytes);
  }
  if (op == Op::CmpLt || op == Op::CmpNe) {
    bool r;
    if (is_float(in))
      r = op == Op::CmpLt ? a[0].f < a[1].f : a[0].f != a[1].f;
    else if (is_unsigned(in))
      r = op == Op::CmpLt ? u(a[0].i) < u(a[1].i) : a[0].i != a[1].i;
    else
      r = op == Op::CmpLt ? a[0].i < a[1].i : a[0].i != a[1].i;
    return {0, r};
  }
  if (is_float(out)) {
    double x = a[0].f, y = is_binary(op) || op == Op::MulAcc ? a[1].f : 0, r;
    switch (op) {
      case Op::Neg: r = -x; break;
      case Op::Exp2: r = std::exp2(x); break;
      case Op::Log2: r = std::log2(x); break;
      case Op::Sin: r = std::sin(x); break;
      case Op::Sqrt: r = std::sqrt(x); break;
      case Op::Recip: r = 1.0 / x; break;
      case Op::Trunc: r = std::trunc(x); break;
      case Op::Add: r = x + y; break;
      case Op::Mul: r = x * y; break;
      case Op::Max: r = std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); break;
      case Op::Mod: r = std::fmod(x, y); break;
      case Op::IDiv: r = x / y; break;  // Tensor::div_exact
      case Op::MulAcc: r = x * y + a[2].f; break;
      default: throw Error("op " + std::string(op_name(op)) + " is not defined on " + std::string(dtype_name(out)));
    }
    return {round_float(out, r), 0};
  }
  int64_t x = a[0].i, y = is_binary(op) || op == Op::MulAcc ? a[1].i : 0, r;
  bool uns = is_unsigned(out);
  switch (op) {
    case Op::Neg: r = int64_t(0 - u(x)); break;
    case Op::Add: r = int64_t(u(x) + u(y)); break;
    case Op::Mul: r = int64_t(u(x) * u(y)); break;
    case Op::MulAcc: r = int64_t(u(x) * u(y) + u(a[2].i)); break;
    case Op::Max: r = uns ? int64_t(std::max(u(x), u(y))) : std::max(x, y); break;
    case Op::IDiv:
      if (y == 0)
        r = 0;
      else if (uns)
        r = int64_t(u(x) / u(y));
      else
        r = (x == INT64_MIN && y == -1) ? x : x / y;
      break;
    case Op::Mod:
      if (y == 0)
        r = 0;
      else if (uns)
        r = int64_t(u(x) % u(y));
      else
        r = (y == -1) ? 0 : x % y;
      break;
    case Op::And: r = x & y; break;
    case Op::Or: r = x | y; break;
    case Op::Xor: r = x ^ y; break;
    case Op::Shl: r = y >= 64 || y < 0 ? 0 : int64_t(u(x) << y); break;
    case Op::Shr: r = y >= 64 || y < 0 ? 0 : (uns ? int64_t(u(wrap_int(out, x)) >> y) : x >> y); break;
    case Op::Trunc: r = x; break;
    default: throw Error("op " + std::string(op_name(op)) + " is not defined on " + std::string(dtype_name(out)));
  }
  return {0, wrap_int(out, r)};
}

Num load_num(DType t, const void* p) {
  switch (t) {
    case DType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      return {v, 0};
    }
    case DType::F64: {
      double v;
      std::memcpy(&v, p, 8);
      return {v, 0};
    }
    case DType::F16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return {half_to_float(h), 0};
    }
    case DType::BF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      uint32_t b = uint32_t(h) << 16;
      float v;
      std::memcpy(&v, &b, 4);
      return {v, 0};
    }
    case DType::Bool: return {0, *static_cast<const uint8_t*>(p) != 0};
    case DType::I8: return {0, *static_cast<const int8_t*>(p)};
    case DType::U8: return {0, *static_cast<const uint8_t*>(p)};
    case DType::I16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return {0, v};
    }
    case DType::U16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return {0, v};
    }
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return {0, v};
    }
    case DType::U32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return {0, v};
    }
    default: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return {0, v};
    }
  }
}

void store_num(DType t, void* p, Num v) {
  switch (t) {
    case DType::F32: {
      float f = float(v.f);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::F64: std::memcpy(p, &v.f, 8); return;
    case DType::F16: {
      uint16_t h = float_to_half(float(v.f));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::BF16: {
      float f = float(round_float(DType::BF16, v.f));
      uint32_t b;
      std::memcpy(&b, &f, 4);
      uint16_t h = uint16_t(b >> 16);
      std::memcpy(p, &h, 2);
      return;
    }
    default: std::memcpy(p, &v.i, size_t(dtype_size(t))); return;  // little-endian truncation
  }
}

}  // namespace tgc
