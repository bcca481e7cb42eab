// LLVM target plumbing shared by the emitter and the tuner: target machines, the O3 pipeline,
// object files, and linking objects with the runtime stub through clang's driver and LLD.
#pragma once
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <string>
#include <vector>

#include "target/targets.h"

namespace tgc {

// resolve_target: the row named `target` (target/targets.h), its triple and CPU (the host's by
// default) and the profile the CPU's features give.
ResolvedTarget resolve_target(const std::string& target, const std::string& triple, const std::string& cpu);

// The CPU every machine of the triple's architecture runs (x86-64, generic): code that must run
// before the CPU has been checked (an artifact's main) is compiled for it.
std::string baseline_cpu(const std::string& triple);

llvm::TargetMachine* make_target_machine(const std::string& triple, const std::string& cpu);
void optimize(llvm::Module& m, llvm::TargetMachine* tm);  // O3 with loop and SLP vectorizers
void write_object(llvm::Module& m, llvm::TargetMachine* tm, const std::string& path);
std::string assembly_text(llvm::Module& m, llvm::TargetMachine* tm);  // for `tgc inspect --stage=asm`

// Runs argv (quoted for the shell) and collects stdout+stderr; returns the exit status.
int run_command(const std::vector<std::string>& argv, std::string& output);

// Links objects (+ <runtime_dir>/<arch>-linux-gnu/libtgc_runtime.a unless runtime_dir is empty)
// into an executable or, with `shared`, a shared library. Throws with the linker's output.
void link_with_runtime(const std::vector<std::string>& objects, const std::string& triple,
                       const std::string& runtime_dir, bool shared, const std::string& output);

}  // namespace tgc
