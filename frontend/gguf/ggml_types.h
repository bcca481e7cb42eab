// The tensor element types a GGUF file can name (ggml_type), with their block layout: a tensor
// row of n elements is n / block_elems blocks of block_bytes bytes each.
#pragma once
#include <cstdint>
#include <string>

namespace tgc {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct GgmlTypeInfo {
  const char* name;     // as llama.cpp prints it: "f32", "q4_K", ...
  int64_t block_elems;  // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
};

// Null for a type number no known ggml version uses.
const GgmlTypeInfo* ggml_type_info(uint32_t type);
std::string ggml_type_name(GgmlType t);

}  // namespace tgc
