#include "ir/dtype.h"

#include <cmath>
#include <cstring>

#include "ir/error.h"

namespace tgc {

namespace {
struct Info {
  std::string_view name;
  int size;
  bool is_float, is_unsigned;
};
constexpr Info kInfo[] = {
    {"bool", 1, false, true}, {"i8", 1, false, false},    {"i16", 2, false, false}, {"i32", 4, false, false},
    {"i64", 8, false, false}, {"u8", 1, false, true},     {"u16", 2, false, true},  {"u32", 4, false, true},
    {"u64", 8, false, true},  {"f16", 2, true, false},    {"bf16", 2, true, false}, {"f32", 4, true, false},
    {"f64", 8, true, false},  {"index", 8, false, false},
};
const Info& info(DType t) { return kInfo[static_cast<int>(t)]; }

// Rank used by promote(): floats above ints, wider above narrower.
int rank(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::U8: return 1;
    case DType::I8: return 2;
    case DType::U16: return 3;
    case DType::I16: return 4;
    case DType::U32: return 5;
    case DType::I32: return 6;
    case DType::U64: return 7;
    case DType::I64: return 8;
    case DType::Index: return 9;
    case DType::F16: return 10;
    case DType::BF16: return 11;
    case DType::F32: return 12;
    case DType::F64: return 13;
  }
  return 0;
}

// Round-to-nearest-even to a float with `mant` explicit mantissa bits, via f32 bit tricks.
float round_mantissa(float f, int drop_bits) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return f;  // inf/nan unchanged
  uint32_t half = 1u << (drop_bits - 1);
  uint32_t lsb = (u >> drop_bits) & 1u;
  u = (u + half - 1 + lsb) & ~((1u << drop_bits) - 1);
  std::memcpy(&f, &u, 4);
  return f;
}

double round_f16(double v) {
  float f = static_cast<float>(v);
  float a = std::fabs(f);
  if (std::isnan(f)) return f;
  if (a >= 65520.0f) return std::copysign(INFINITY, f);
  if (a < 6.103515625e-05f) {  // subnormal half: fixed step 2^-24
    return std::nearbyint(f * 16777216.0) / 16777216.0;
  }
  return round_mantissa(f, 13);
}
}  // namespace

int dtype_size(DType t) { return info(t).size; }
bool is_float(DType t) { return info(t).is_float; }
bool is_unsigned(DType t) { return info(t).is_unsigned; }
std::string_view dtype_name(DType t) { return info(t).name; }

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i < static_cast<int>(std::size(kInfo)); ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  throw Error("unknown dtype '" + std::string(name) + "'");
}

DType promote(DType a, DType b) { return rank(a) >= rank(b) ? a : b; }

double round_float(DType t, double v) {
  switch (t) {
    case DType::F32: return static_cast<float>(v);
    case DType::F16: return round_f16(v);
    case DType::BF16: return round_mantissa(static_cast<float>(v), 16);
    default: return v;
  }
}

int64_t wrap_int(DType t, int64_t v) {
  switch (t) {
    case DType::Bool: return v != 0;
    case DType::I8: return static_cast<int8_t>(v);
    case DType::I16: return static_cast<int16_t>(v);
    case DType::I32: return static_cast<int32_t>(v);
    case DType::U8: return static_cast<uint8_t>(v);
    case DType::U16: return static_cast<uint16_t>(v);
    case DType::U32: return static_cast<uint32_t>(v);
    default: return v;  // 64-bit types: u64 is kept as its two's-complement bits
  }
}

double lowest_value(DType t) {
  return is_float(t) ? -INFINITY : (is_unsigned(t) ? 0.0 : -std::pow(2.0, dtype_size(t) * 8 - 1));
}

}  // namespace tgc
