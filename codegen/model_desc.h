// The LLVM mirror of runtime-stub/tgc_model.h: struct types and constant builders for the tables a
// compiled model carries (buffers, launches, the model description). Keep in step with that header
// (TGC_ABI_VERSION).
#pragma once
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Module.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

// Builds the constant tables of runtime-stub/tgc_model.h as LLVM globals.
class DescBuilder {
 public:
  explicit DescBuilder(llvm::Module& m) : m_(m), c_(m.getContext()), i32_(llvm::Type::getInt32Ty(c_)),
      i64_(llvm::Type::getInt64Ty(c_)), ptr_(llvm::PointerType::get(c_, 0)) {}

  llvm::Constant* str(const std::string& s) {
    auto* init = llvm::ConstantDataArray::getString(c_, s);
    return global(init, "str");
  }
  llvm::Constant* global(llvm::Constant* init, const std::string& name, unsigned align = 8) {
    auto* gv = new llvm::GlobalVariable(m_, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init, "tgc." + name);
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
  llvm::Constant* I32(int64_t v) { return llvm::ConstantInt::get(i32_, uint64_t(v)); }
  llvm::Constant* I64(int64_t v) { return llvm::ConstantInt::get(i64_, uint64_t(v)); }
  llvm::Constant* null() { return llvm::ConstantPointerNull::get(ptr_); }
  llvm::StructType* buffer_t() { return llvm::StructType::get(c_, {ptr_, i32_, i32_, ptr_, i32_, i64_, i64_, i32_, ptr_}); }
  llvm::StructType* launch_t() {
    auto* a3 = llvm::ArrayType::get(i64_, 3);
    return llvm::StructType::get(c_, {ptr_, ptr_, ptr_, i32_, ptr_, a3, a3, i32_});
  }
  llvm::StructType* desc_t() {
    return llvm::StructType::get(c_, {i32_, ptr_, i32_, i32_, ptr_, i32_, ptr_, i32_, ptr_, i32_, ptr_, i64_, ptr_, i64_, ptr_, ptr_, i32_, ptr_, ptr_, i32_});
  }
  llvm::Constant* array(llvm::StructType* t, const std::vector<llvm::Constant*>& v, const std::string& name) {
    if (v.empty()) return null();
    return global(llvm::ConstantArray::get(llvm::ArrayType::get(t, v.size()), v), name);
  }
  llvm::Constant* a3(std::array<int64_t, 3> v) {
    return llvm::ConstantArray::get(llvm::ArrayType::get(i64_, 3), {I64(v[0]), I64(v[1]), I64(v[2])});
  }

  llvm::Module& m_;
  llvm::LLVMContext& c_;
  llvm::Type *i32_, *i64_;
  llvm::PointerType* ptr_;
};

}  // namespace tgc
