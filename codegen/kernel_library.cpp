#include "codegen/kernel_library.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <filesystem>

#include "codegen/llvm/cpu_kernel.h"
#include "codegen/llvm/target.h"
#include "ir/error.h"

namespace tgc {

namespace {
constexpr int32_t kCandidateAbi = 1;  // TGC_CANDIDATE_ABI

llvm::Constant* constant_global(llvm::Module& m, llvm::Constant* init, const std::string& name,
                                llvm::GlobalValue::LinkageTypes linkage = llvm::GlobalValue::PrivateLinkage) {
  auto* gv = new llvm::GlobalVariable(m, init->getType(), true, linkage, init, name);
  gv->setAlignment(llvm::Align(8));
  return gv;
}
}  // namespace

void write_kernel_library(const Graph& g, const LoopProgram& p, const ResolvedTarget& t, const std::string& workdir,
                          const std::string& path) {
  llvm::LLVMContext ctx;
  llvm::Module mod("tgc_candidate", ctx);
  std::unique_ptr<llvm::TargetMachine> tm(make_target_machine(t.triple, t.cpu));
  mod.setTargetTriple(t.triple);
  mod.setDataLayout(tm->createDataLayout());

  CpuWorkSplit split = cpu_work_split(p);
  llvm::Function* fn = render_cpu_kernel(mod, g, p, split, t.profile);
  fn->setName("tgc_kernel");
  fn->setLinkage(llvm::GlobalValue::ExternalLinkage);

  std::vector<uint64_t> bytes;
  std::vector<uint32_t> dtypes;
  for (int64_t b : p.args) {
    const BufferInfo& info = g.buffer(b);
    bytes.push_back(uint64_t(numel(info.shape) * dtype_size(info.dtype)));
    dtypes.push_back(uint32_t(info.dtype));
  }
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto* desc_t = llvm::StructType::get(ctx, {i32, i32, i64, ptr, ptr});
  auto* desc = llvm::ConstantStruct::get(
      desc_t, {llvm::ConstantInt::get(i32, kCandidateAbi), llvm::ConstantInt::get(i32, p.args.size()),
               llvm::ConstantInt::get(i64, uint64_t(split.items)),
               constant_global(mod, llvm::ConstantDataArray::get(ctx, bytes), "tgc.bytes"),
               constant_global(mod, llvm::ConstantDataArray::get(ctx, dtypes), "tgc.dtypes")});
  constant_global(mod, desc, "tgc_candidate", llvm::GlobalValue::ExternalLinkage);

  std::string verify;
  llvm::raw_string_ostream vs(verify);
  if (llvm::verifyModule(mod, &vs))
    throw Error("internal error: invalid LLVM module for " + p.name + ": " + verify.substr(0, 500));
  optimize(mod, tm.get());
  std::string obj = (std::filesystem::path(workdir) / (std::filesystem::path(path).stem().string() + ".o")).string();
  write_object(mod, tm.get(), obj);
  // LLD directly, without the compiler driver: a quarter of the time, and no libraries: the
  // few libm functions a kernel may call are resolved from tgc-agent when it loads the object.
  std::string log;
  int rc = run_command({"ld.lld-19", "-shared", "--gc-sections", "-O1", obj, "-o", path}, log);
  std::filesystem::remove(obj);
  if (rc != 0) throw Error("linking a tuning candidate failed: " + log.substr(0, 2000));
}

}  // namespace tgc
