// The target table: every `--target` tgc knows is one row here, and nothing else in the compiler
// compares target names. A row says where the artifact's host code runs, which kernel dialect
// renders its kernels (codegen/dialect.h), which runtime backend executes them
// (runtime-stub/<backend>.c), and the profile its kernels are optimized for. Adding a backend is
// a dialect, a runtime file and a row.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "target/profile.h"

namespace tgc {

// How kernels are written: LLVM functions in the host object, or a GPU language whose text or
// binary the artifact carries as a launch blob.
enum class Dialect { LlvmCpu, OpenCL, Glsl, Ptx };

struct TargetDesc {
  std::string name;          // --target=NAME
  std::string summary;       // one line for --help
  std::string default_arch;  // host code's architecture when no --triple is given ("" = host)
  Dialect dialect;
  std::string runtime_backend;  // the runtime's backend table the model object references
  int64_t arena_alignment;      // bytes: offsets of intermediates in the arena
  // --target=NAME:VARIANT picks the GPU architecture (profile.gpu_arch), e.g. cuda:sm_80; the
  // variant when none is given. Empty: the target takes no variant.
  std::string default_variant;
  // The profile for host code with these CPU features (`has_feature`: LLVM feature names).
  std::function<TargetProfile(const std::function<bool(const std::string&)>& has_feature, bool aarch64)> profile;
};

const std::vector<TargetDesc>& targets();
// The row of --target=NAME (or NAME:VARIANT); throws tgc::Error listing the known names, or
// saying that NAME takes no variant.
const TargetDesc& find_target(const std::string& name);
// VARIANT of NAME:VARIANT, else the row's default variant.
std::string target_variant(const TargetDesc& t, const std::string& name);
std::string target_names();  // "cpu, qcom"

// "aarch64" of "aarch64-unknown-linux-gnu"
inline std::string arch_of(const std::string& triple) { return triple.substr(0, triple.find('-')); }

// A row of the target table with the host code's triple and CPU filled in (the row's default
// architecture, else the host's) and the profile its kernels are optimized for.
struct ResolvedTarget {
  const TargetDesc* desc;
  std::string triple, cpu;
  std::vector<std::string> cpu_features;  // LLVM features of `cpu` past the baseline that code may use
  TargetProfile profile;
};

}  // namespace tgc
