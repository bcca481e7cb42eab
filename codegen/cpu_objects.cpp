#include "codegen/cpu_objects.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "codegen/llvm/cpu_kernel.h"
#include "codegen/llvm/target.h"
#include "ir/error.h"

namespace tgc {

CpuKernels build_cpu_kernels(const Graph& g, const std::vector<LoopProgram>& programs, const std::vector<size_t>& keys,
                             const ResolvedTarget& t, const std::string& workdir, int jobs) {
  CpuKernels out;
  out.symbols.resize(programs.size());
  out.items.resize(programs.size());
  std::vector<CpuWorkSplit> splits(programs.size());
  std::map<std::pair<size_t, int64_t>, size_t> first;  // (code, chunk) -> its first program
  std::vector<size_t> distinct;
  for (size_t i = 0; i < programs.size(); ++i) {
    splits[i] = cpu_work_split(programs[i]);
    out.items[i] = splits[i].items;
    auto [it, fresh] = first.emplace(std::make_pair(keys[i], splits[i].chunk), i);
    if (fresh) distinct.push_back(i);
    out.symbols[i] = "tgc_kernel_" + programs[it->second].name;
  }

  if (jobs <= 0) jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  // A module per thread: small models stay one module (no thread start-up, one object).
  size_t n_modules = std::min<size_t>(size_t(jobs), (distinct.size() + 7) / 8);
  n_modules = std::max<size_t>(n_modules, 1);
  out.objects.resize(n_modules);
  std::exception_ptr failure;
  std::mutex failure_mu;
  auto build = [&](size_t j) {
    try {
      llvm::LLVMContext ctx;
      llvm::Module mod("tgc_kernels_" + std::to_string(j), ctx);
      std::unique_ptr<llvm::TargetMachine> tm(make_target_machine(t.triple, t.cpu));
      mod.setTargetTriple(t.triple);
      mod.setDataLayout(tm->createDataLayout());
      for (size_t d = j; d < distinct.size(); d += n_modules) {
        size_t i = distinct[d];
        llvm::Function* fn = render_cpu_kernel(mod, g, programs[i], splits[i], t.profile);
        fn->setName(out.symbols[i]);
        fn->setLinkage(llvm::GlobalValue::ExternalLinkage);
        fn->setVisibility(llvm::GlobalValue::HiddenVisibility);
      }
      std::string verify;
      llvm::raw_string_ostream vs(verify);
      if (llvm::verifyModule(mod, &vs)) throw Error("internal error: invalid LLVM module: " + verify.substr(0, 500));
      optimize(mod, tm.get());
      out.objects[j] = (std::filesystem::path(workdir) / ("kernels" + std::to_string(j) + ".o")).string();
      write_object(mod, tm.get(), out.objects[j]);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mu);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (size_t j = 1; j < n_modules; ++j) threads.emplace_back(build, j);
  build(0);
  for (auto& th : threads) th.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

}  // namespace tgc
