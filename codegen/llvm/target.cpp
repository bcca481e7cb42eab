#include "codegen/llvm/target.h"

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "ir/error.h"
#include "runtime-stub/include/tgc_cpu_features.h"

namespace tgc {

namespace {
void init_llvm() {
  static bool done = [] {
    LLVMInitializeX86TargetInfo(), LLVMInitializeX86Target(), LLVMInitializeX86TargetMC(),
        LLVMInitializeX86AsmPrinter();
    LLVMInitializeAArch64TargetInfo(), LLVMInitializeAArch64Target(), LLVMInitializeAArch64TargetMC(),
        LLVMInitializeAArch64AsmPrinter();
    LLVMInitializeNVPTXTargetInfo(), LLVMInitializeNVPTXTarget(), LLVMInitializeNVPTXTargetMC(),
        LLVMInitializeNVPTXAsmPrinter();
    // The SLP vectorizer rates the lanes of a reduce over f16 weights (loads widened by
    // vcvtph2ps, multiply-adds into vector accumulators) at cost 0, "not beneficial", and leaves
    // them scalar: an f16 matrix-vector product ran 4x slower than vectorized. A bias of -4
    // tips such even trees over.
    const char* args[] = {"tgc", "-slp-threshold=-4"};
    llvm::cl::ParseCommandLineOptions(2, args);
    return true;
  }();
  (void)done;
}
}  // namespace

namespace {
// The GPU architecture of --target=NAME[:VARIANT], checked against what LLVM can write for.
std::string checked_gpu_arch(const TargetDesc& t, const std::string& target) {
  std::string arch = target_variant(t, target);
  if (t.dialect == Dialect::Ptx) {
    std::string err;
    const llvm::Target* nvptx = llvm::TargetRegistry::lookupTarget("nvptx64-nvidia-cuda", err);
    std::unique_ptr<llvm::MCSubtargetInfo> sti(nvptx ? nvptx->createMCSubtargetInfo("nvptx64-nvidia-cuda", "", "")
                                                     : nullptr);
    if (arch.rfind("sm_", 0) != 0 || !sti || !sti->isCPUStringValid(arch))
      throw Error("target '" + target + "': unknown GPU architecture '" + arch + "' (e.g. sm_80, sm_89, sm_90)");
  }
  return arch;
}
}  // namespace

int run_command(const std::vector<std::string>& argv, std::string& output) {
  std::string cmd;
  for (const auto& a : argv) cmd += "'" + a + "' ";
  cmd += "2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) output.append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

llvm::TargetMachine* make_target_machine(const std::string& triple, const std::string& cpu) {
  init_llvm();
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t) throw Error("target triple '" + triple + "': " + err);
  std::string features;
  if (cpu == llvm::sys::getHostCPUName().str()) {
    for (auto& [name, on] : llvm::sys::getHostCPUFeatures()) features += (on ? "+" : "-") + name.str() + ",";
  }
  llvm::TargetOptions to;
  auto* tm = t->createTargetMachine(triple, cpu, features, to, llvm::Reloc::PIC_, std::nullopt,
                                    llvm::CodeGenOptLevel::Aggressive);
  if (!tm) throw Error("cannot create a target machine for " + triple + " / " + cpu);
  return tm;
}

void optimize(llvm::Module& m, llvm::TargetMachine* tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

void write_object(llvm::Module& m, llvm::TargetMachine* tm, const std::string& path) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) throw Error(path + ": " + ec.message());
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::ObjectFile))
    throw Error("the target cannot emit object files");
  pm.run(m);
}

std::string assembly_text(llvm::Module& m, llvm::TargetMachine* tm) {
  llvm::SmallString<4096> text;
  llvm::raw_svector_ostream out(text);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::AssemblyFile))
    throw Error("the target cannot emit assembly");
  pm.run(m);
  return std::string(text.str());
}

std::string baseline_cpu(const std::string& triple) { return arch_of(triple) == "x86_64" ? "x86-64" : "generic"; }

namespace {
// --cpu=NAME names a CPU LLVM knows for the triple's architecture (LLVM itself only warns, then
// builds for a CPU with no features: an x86-64 one without 64-bit mode aborts).
void check_cpu_name(const std::string& triple, const std::string& cpu) {
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(t ? t->createMCSubtargetInfo(triple, "", "") : nullptr);
  if (!sti || sti->isCPUStringValid(cpu)) return;
  std::string arch = arch_of(triple);
  throw Error("--cpu=" + cpu + ": not a CPU LLVM knows for " + arch +
              (arch == "x86_64" ? " (e.g. x86-64-v2, x86-64-v3, x86-64-v4, haswell, skylake-avx512, znver4"
                                : " (e.g. generic, cortex-a76, neoverse-n1, neoverse-v1, apple-m1") +
              "; llc-19 -mtriple=" + arch + " -mcpu=help lists them)");
}

// The features of tgc_cpu_features.h that a target machine enables: what its code may need.
std::vector<std::string> required_features(const std::string& triple, llvm::TargetMachine* tm) {
  std::vector<std::string> names;
  const llvm::MCSubtargetInfo* sti = tm->getMCSubtargetInfo();
  auto known = sti->getAllProcessorFeatures();
  auto add = [&](const char* name) {
    // (checkFeatures takes a name it does not know for an enabled feature)
    if (std::none_of(known.begin(), known.end(),
                     [&](const llvm::SubtargetFeatureKV& kv) { return kv.Key == std::string_view(name); }))
      throw Error(std::string("internal error: tgc_cpu_features.h names the CPU feature '") + name +
                  "', which LLVM does not know");
    if (sti->checkFeatures(std::string("+") + name) && std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  };
  if (arch_of(triple) == "x86_64") {
#define TGC_X(name, leaf, sub, reg, bit, state) add(name);
    TGC_X86_CPU_FEATURES(TGC_X)
#undef TGC_X
  } else if (arch_of(triple) == "aarch64") {
#define TGC_X(name, word, bit) add(name);
    TGC_AARCH64_CPU_FEATURES(TGC_X)
#undef TGC_X
  }
  return names;
}
}  // namespace

ResolvedTarget resolve_target(const std::string& target, const std::string& triple, const std::string& cpu) {
  init_llvm();
  ResolvedTarget r;
  r.desc = &find_target(target);
  std::string host = llvm::sys::getDefaultTargetTriple();
  std::string default_triple = r.desc->default_arch.empty() ? host : r.desc->default_arch + "-unknown-linux-gnu";
  r.triple = triple.empty() ? default_triple : llvm::Triple::normalize(triple);
  r.cpu = !cpu.empty() ? cpu : (arch_of(r.triple) == arch_of(host) ? llvm::sys::getHostCPUName().str() : "generic");
  if (!cpu.empty()) check_cpu_name(r.triple, cpu);
  std::unique_ptr<llvm::TargetMachine> tm(make_target_machine(r.triple, r.cpu));
  r.cpu_features = required_features(r.triple, tm.get());
  r.profile = r.desc->profile([&](const std::string& f) { return tm->getMCSubtargetInfo()->checkFeatures("+" + f); },
                              arch_of(r.triple) == "aarch64");
  if (!r.desc->default_variant.empty()) r.profile.gpu_arch = checked_gpu_arch(*r.desc, target);
  return r;
}

void link_with_runtime(const std::vector<std::string>& objects, const std::string& triple,
                       const std::string& runtime_dir, bool shared, const std::string& output) {
  namespace fs = std::filesystem;
  std::string arch = arch_of(triple);
  // clang-19 with lld links for any triple. Without it (a machine with only gcc, such as a GPU
  // box tgc was carried to), the system's cc links for its own architecture.
  std::vector<std::string> cmd = {"clang-19", "--target=" + arch + "-linux-gnu", "-fuse-ld=lld"};
  if (!llvm::sys::findProgramByName("clang-19")) {
    if (arch != arch_of(llvm::sys::getDefaultTargetTriple()) || !llvm::sys::findProgramByName("cc"))
      throw Error("linking for " + arch + " needs clang-19 and lld on PATH (Debian: apt-get install clang-19 lld-19)");
    cmd = {"cc"};
  }
  cmd.insert(cmd.end(), objects.begin(), objects.end());
  if (!runtime_dir.empty()) {
    fs::path rt = fs::path(runtime_dir) / (arch + "-linux-gnu") / "libtgc_runtime.a";
    if (!fs::exists(rt))
      throw Error("no runtime stub for " + arch + " at " + rt.string() +
                  " (was it built? aarch64 needs gcc-aarch64-linux-gnu)");
    cmd.push_back(rt.string());
  }
  cmd.insert(cmd.end(), {"-lm", "-lpthread", "-ldl", "-o", output, "-Wl,--gc-sections", "-Wl,-O1"});
  if (shared) cmd.insert(cmd.end(), {"-shared", "-Wl,--exclude-libs,ALL"});
  std::string log;
  if (run_command(cmd, log) != 0) {
    fs::remove(output);
    // One line: the linker's first complaint (the driver's "linker command failed" follows it),
    // or that it crashed (LLVM's stack dump, e.g. on a write past RLIMIT_FSIZE).
    std::string why, line;
    std::istringstream lines(log);
    while (why.empty() && std::getline(lines, line))
      if (line.find("error:") != std::string::npos) why = line;
    if (why.empty())
      why = log.find("Stack dump") != std::string::npos ? "the linker crashed" : log.substr(0, log.find('\n'));
    throw Error("link failed: " + (why.empty() ? std::string("clang-19 exited with an error") : why.substr(0, 2000)));
  }
}

}  // namespace tgc
