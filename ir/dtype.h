// Scalar element types of the IR and their properties.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace tgc {

enum class DType : uint8_t {
  Bool,
  I8,
  I16,
  I32,
  I64,
  U8,
  U16,
  U32,
  U64,
  F16,
  BF16,
  F32,
  F64,
  Index,  // symbolic integer used by index and shape arithmetic (64-bit signed)
};

int dtype_size(DType t);  // bytes per element (Index: 8)
bool is_float(DType t);
bool is_unsigned(DType t);                                                    // Bool counts as unsigned
inline bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }  // 16-bit floats
inline bool is_int(DType t) { return !is_float(t); }
std::string_view dtype_name(DType t);          // "f32", "i64", ...
DType dtype_from_name(std::string_view name);  // throws tgc::Error on unknown names
// The type two operands of a binary op are promoted to (float beats int, wider beats narrower).
DType promote(DType a, DType b);
// Round a value to what the type can represent: floats to their precision, ints wrap.
double round_float(DType t, double v);
int64_t wrap_int(DType t, int64_t v);
// The smallest value of the type (-inf for floats): the identity of a max.
double lowest_value(DType t);

}  // namespace tgc
