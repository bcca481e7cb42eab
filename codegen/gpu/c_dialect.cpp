#include "codegen/gpu/c_dialect.h"

namespace tgc {

std::string CDialect::bf16_round(const std::string& v) const {
  std::string u = bitcast(DType::F32, DType::U32, v);
  return "(" + call(CFunction::IsNan, {v}) + " || " + call(CFunction::IsInf, {v}) + " ? " + v + " : " +
         bitcast(DType::U32, DType::F32, "(" + u + " + 0x7fffu + ((" + u + " >> 16) & 1u)) & 0xffff0000u") + ")";
}

std::string CDialect::bf16_bits(const std::string& v) const {
  return cast(mem_type(DType::BF16), bitcast(DType::F32, DType::U32, bf16_round(v)) + " >> 16");
}

std::string CDialect::bf16_from_bits(const std::string& bits) const {
  return bitcast(DType::U32, DType::F32, cast(reg_type(DType::U32), bits) + " << 16");
}

std::string CDialect::call(CFunction f, const std::vector<std::string>& args) const {
  std::string s = function(f) + "(";
  for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
  return s + ")";
}

}  // namespace tgc
