// The LLVM mirror of runtime-stub/include/tgc_model.h: struct types and constant builders for the tables a
// compiled model carries (buffers, launches, the model description). Keep in step with that header
// (TGC_ABI_VERSION).
#pragma once
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Module.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "runtime-stub/include/tgc_model.h"
#include "runtime-stub/llm/tokenizer.h"

namespace tgc {

// The mirror is checked against the C header at compile time: each struct's fields, as the
// emitter writes them, must land at the offsets the C compiler gives the header's fields (LP64,
// as on every target triple tgc emits for), and the DType order must be enum tgc_dtype's.
namespace abi {
enum class Field { I32, I64, Ptr, I64x3 };
constexpr size_t field_size(Field f) { return f == Field::I32 ? 4 : f == Field::I64x3 ? 24 : 8; }
constexpr size_t field_align(Field f) { return f == Field::I32 ? 4 : 8; }
template <size_t N>
constexpr bool same_layout(const std::array<Field, N>& fields, const std::array<size_t, N>& c_offsets, size_t c_size) {
  size_t at = 0, align = 1;
  for (size_t i = 0; i < N; ++i) {
    at = (at + field_align(fields[i]) - 1) / field_align(fields[i]) * field_align(fields[i]);
    if (at != c_offsets[i]) return false;
    at += field_size(fields[i]);
    align = std::max(align, field_align(fields[i]));
  }
  return (at + align - 1) / align * align == c_size;
}
using enum Field;
constexpr std::array kBuffer{Ptr, I32, I32, Ptr, I32, I64, I64, I32, Ptr, Ptr};
static_assert(same_layout(kBuffer,
                          {offsetof(tgc_buffer, name), offsetof(tgc_buffer, dtype), offsetof(tgc_buffer, rank),
                           offsetof(tgc_buffer, shape), offsetof(tgc_buffer, storage), offsetof(tgc_buffer, offset),
                           offsetof(tgc_buffer, nbytes), offsetof(tgc_buffer, batched), offsetof(tgc_buffer, dim_vars),
                           offsetof(tgc_buffer, dim_sizes)},
                          sizeof(tgc_buffer)),
              "codegen/model_desc.h: tgc_buffer mirror out of step with tgc_model.h");
constexpr std::array kLaunch{Ptr, Ptr, Ptr, I64, I32, Ptr, I64x3, I64x3, I32,
                             I32, I32, I64, I64, I32, I32, I64,   Ptr,   I64};
static_assert(
    same_layout(kLaunch,
                {offsetof(tgc_launch, name), offsetof(tgc_launch, cpu_fn), offsetof(tgc_launch, blob),
                 offsetof(tgc_launch, blob_size), offsetof(tgc_launch, num_buffers), offsetof(tgc_launch, buffers),
                 offsetof(tgc_launch, global_size), offsetof(tgc_launch, local_size), offsetof(tgc_launch, outer_var),
                 offsetof(tgc_launch, outer_step), offsetof(tgc_launch, runs_var), offsetof(tgc_launch, runs_from),
                 offsetof(tgc_launch, runs_until), offsetof(tgc_launch, sets_var), offsetof(tgc_launch, runs_if_var),
                 offsetof(tgc_launch, runs_if_value), offsetof(tgc_launch, fallback_blob),
                 offsetof(tgc_launch, fallback_blob_size)},
                sizeof(tgc_launch)),
    "codegen/model_desc.h: tgc_launch mirror out of step with tgc_model.h");
constexpr std::array kDesc{I32, Ptr, Ptr, I32, Ptr, I32, Ptr, I32, Ptr, I32, Ptr, I64, Ptr, I64,
                           Ptr, Ptr, I32, Ptr, Ptr, I32, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr};
static_assert(same_layout(kDesc, {offsetof(tgc_model_desc, abi_version),  offsetof(tgc_model_desc, name),
                                  offsetof(tgc_model_desc, backend),      offsetof(tgc_model_desc, num_buffers),
                                  offsetof(tgc_model_desc, buffers),      offsetof(tgc_model_desc, num_launches),
                                  offsetof(tgc_model_desc, launches),     offsetof(tgc_model_desc, num_inputs),
                                  offsetof(tgc_model_desc, inputs),       offsetof(tgc_model_desc, num_outputs),
                                  offsetof(tgc_model_desc, outputs),      offsetof(tgc_model_desc, arena_size),
                                  offsetof(tgc_model_desc, weights),      offsetof(tgc_model_desc, weights_size),
                                  offsetof(tgc_model_desc, weights_file), offsetof(tgc_model_desc, batch_dim),
                                  offsetof(tgc_model_desc, num_vars),     offsetof(tgc_model_desc, var_names),
                                  offsetof(tgc_model_desc, var_max),      offsetof(tgc_model_desc, vars_buffer),
                                  offsetof(tgc_model_desc, kv_position),  offsetof(tgc_model_desc, vocab),
                                  offsetof(tgc_model_desc, var_source),   offsetof(tgc_model_desc, var_step),
                                  offsetof(tgc_model_desc, var_min),      offsetof(tgc_model_desc, cpu_name),
                                  offsetof(tgc_model_desc, cpu_features)},
                          sizeof(tgc_model_desc)),
              "codegen/model_desc.h: tgc_model_desc mirror out of step with tgc_model.h");
constexpr std::array kVocab{I32, Ptr, Ptr, Ptr, Ptr, I32, I32, I32, I32, I32, I32, I32, I32, I32, Ptr, I32, Ptr};
static_assert(same_layout(kVocab,
                          {offsetof(tgc_vocab, n_tokens), offsetof(tgc_vocab, text), offsetof(tgc_vocab, offsets),
                           offsetof(tgc_vocab, scores), offsetof(tgc_vocab, types), offsetof(tgc_vocab, bos),
                           offsetof(tgc_vocab, eos), offsetof(tgc_vocab, unk), offsetof(tgc_vocab, add_bos),
                           offsetof(tgc_vocab, add_space_prefix), offsetof(tgc_vocab, model), offsetof(tgc_vocab, pre),
                           offsetof(tgc_vocab, ignore_merges), offsetof(tgc_vocab, n_merges),
                           offsetof(tgc_vocab, merges), offsetof(tgc_vocab, rstrip_specials),
                           offsetof(tgc_vocab, chat_template)},
                          sizeof(tgc_vocab)),
              "codegen/model_desc.h: tgc_vocab mirror out of step with tokenizer.h");
static_assert(int(DType::Bool) == TGC_BOOL && int(DType::I8) == TGC_I8 && int(DType::I16) == TGC_I16 &&
                  int(DType::I32) == TGC_I32 && int(DType::I64) == TGC_I64 && int(DType::U8) == TGC_U8 &&
                  int(DType::U16) == TGC_U16 && int(DType::U32) == TGC_U32 && int(DType::U64) == TGC_U64 &&
                  int(DType::F16) == TGC_F16 && int(DType::BF16) == TGC_BF16 && int(DType::F32) == TGC_F32 &&
                  int(DType::F64) == TGC_F64,
              "ir/dtype.h: DType order differs from enum tgc_dtype");
}  // namespace abi

// Builds the constant tables of runtime-stub/include/tgc_model.h as LLVM globals.
class DescBuilder {
 public:
  explicit DescBuilder(llvm::Module& m)
      : m_(m),
        c_(m.getContext()),
        i32_(llvm::Type::getInt32Ty(c_)),
        i64_(llvm::Type::getInt64Ty(c_)),
        ptr_(llvm::PointerType::get(c_, 0)) {}

  llvm::Constant* str(const std::string& s) {
    auto* init = llvm::ConstantDataArray::getString(c_, s);
    return global(init, "str");
  }
  // Bytes without a terminating NUL (kernel blobs: SPIR-V and PTX are not C strings).
  llvm::Constant* bytes(const std::string& s, const std::string& name) {
    return global(llvm::ConstantDataArray::getString(c_, s, /*AddNull=*/false), name);
  }
  // The address of a symbol the runtime defines (a backend's table).
  llvm::Constant* runtime_symbol(const std::string& name) {
    auto* gv = m_.getOrInsertGlobal(name, llvm::Type::getInt8Ty(c_));
    llvm::cast<llvm::GlobalVariable>(gv)->setVisibility(llvm::GlobalValue::HiddenVisibility);
    return gv;
  }
  llvm::Constant* global(llvm::Constant* init, const std::string& name, unsigned align = 8) {
    auto* gv =
        new llvm::GlobalVariable(m_, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init, "tgc." + name);
    gv->setAlignment(llvm::Align(align));
    return gv;
  }
  llvm::Constant* i64s(const std::vector<int64_t>& v, const std::string& name) {
    if (v.empty()) return llvm::ConstantPointerNull::get(ptr_);
    std::vector<uint64_t> u(v.begin(), v.end());
    return global(llvm::ConstantDataArray::get(c_, u), name);
  }
  llvm::Constant* i32s(const std::vector<int32_t>& v, const std::string& name) {
    if (v.empty()) return llvm::ConstantPointerNull::get(ptr_);
    std::vector<uint32_t> u(v.begin(), v.end());
    return global(llvm::ConstantDataArray::get(c_, u), name);
  }
  llvm::Constant* f32s(const std::vector<float>& v, const std::string& name) {
    if (v.empty()) return llvm::ConstantPointerNull::get(ptr_);
    return global(llvm::ConstantDataArray::get(c_, v), name);
  }
  llvm::Constant* I32(int64_t v) { return llvm::ConstantInt::get(i32_, uint64_t(v)); }
  llvm::Constant* I64(int64_t v) { return llvm::ConstantInt::get(i64_, uint64_t(v)); }
  llvm::Constant* null() { return llvm::ConstantPointerNull::get(ptr_); }
  llvm::StructType* buffer_t() { return type(abi::kBuffer); }
  llvm::StructType* launch_t() { return type(abi::kLaunch); }
  llvm::StructType* desc_t() { return type(abi::kDesc); }
  llvm::StructType* vocab_t() { return type(abi::kVocab); }
  llvm::Constant* array(llvm::StructType* t, const std::vector<llvm::Constant*>& v, const std::string& name) {
    if (v.empty()) return null();
    return global(llvm::ConstantArray::get(llvm::ArrayType::get(t, v.size()), v), name);
  }
  llvm::Constant* a3(std::array<int64_t, 3> v) {
    return llvm::ConstantArray::get(llvm::ArrayType::get(i64_, 3), {I64(v[0]), I64(v[1]), I64(v[2])});
  }

  template <size_t N>
  llvm::StructType* type(const std::array<abi::Field, N>& fields) {
    std::vector<llvm::Type*> t;
    for (abi::Field f : fields)
      t.push_back(f == abi::I32   ? i32_
                  : f == abi::I64 ? i64_
                  : f == abi::Ptr ? static_cast<llvm::Type*>(ptr_)
                                  : llvm::ArrayType::get(i64_, 3));
    return llvm::StructType::get(c_, t);
  }

  llvm::Module& m_;
  llvm::LLVMContext& c_;
  llvm::Type *i32_, *i64_;
  llvm::PointerType* ptr_;
};

}  // namespace tgc
