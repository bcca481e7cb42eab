// LLVM target plumbing shared by the emitter and the tuner: target machines, the O3 pipeline,
// object files, and linking objects with the runtime stub through clang's driver and LLD.
#pragma once
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <string>
#include <vector>

#include "passes/opt.h"
#include "target/targets.h"

namespace tgc {

std::string arch_of(const std::string& triple);  // "aarch64" of "aarch64-unknown-linux-gnu"

// A row of the target table with the host code's triple and CPU filled in (the row's default
// architecture, else the host's) and the profile its kernels are optimized for.
struct ResolvedTarget {
  const TargetDesc* desc;
  std::string triple, cpu;
  TargetProfile profile;
};
ResolvedTarget resolve_target(const std::string& target, const std::string& triple, const std::string& cpu);

llvm::TargetMachine* make_target_machine(const std::string& triple, const std::string& cpu);
void optimize(llvm::Module& m, llvm::TargetMachine* tm);  // O3 with loop and SLP vectorizers
void write_object(llvm::Module& m, llvm::TargetMachine* tm, const std::string& path);
std::string assembly_text(llvm::Module& m, llvm::TargetMachine* tm);  // for `tgc inspect --stage=asm`

// Runs argv (quoted for the shell) and collects stdout+stderr; returns the exit status.
int run_command(const std::vector<std::string>& argv, std::string& output);

// Links objects (+ <runtime_dir>/<arch>-linux-gnu/libtgc_runtime.a unless runtime_dir is empty)
// into an executable or, with `shared`, a shared library. Throws with the linker's output.
void link_with_runtime(const std::vector<std::string>& objects, const std::string& triple, const std::string& runtime_dir,
                       bool shared, const std::string& output);

}  // namespace tgc
