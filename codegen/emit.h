// The emitter: schedules, lowers and renders a model, packs its weights and launch list into
// a tgc_model_desc (runtime-stub/tgc_model.h), writes one object file for the target triple
// and links it with the prebuilt runtime stub into an executable or a shared library.
#pragma once
#include <string>

#include "frontend/onnx/onnx_import.h"
#include <functional>

#include "codegen/llvm/target.h"
#include "passes/opt.h"

namespace tgc {

struct CompileOptions {
  std::string target = "cpu";  // cpu (LLVM) or qcom (OpenCL C kernels, runtime loads libOpenCL)
  std::string triple;          // default: the host's
  std::string cpu;             // LLVM CPU name; default: the host CPU for host triples, else generic
  bool optimize = true;        // apply kernel optimizations (choose_opts, else the heuristic)
  // Picks the optimizations of every kernel (all at once: a search can share work between
  // identical kernels and report progress); default heuristic_opts. BEAM search plugs in here.
  std::function<std::vector<std::vector<Opt>>(Graph&, const std::vector<Kernel>&, const ResolvedTarget&)> choose_opts;
  bool shared = false;         // libNAME.so + NAME.h instead of an executable
  bool external_weights = false;
  std::string output;          // artifact path
  std::string runtime_dir;     // holds <triple>/libtgc_runtime.a
};

struct CompileReport {
  size_t kernels = 0, unique_kernels = 0;
  int64_t arena_bytes = 0, intermediate_bytes = 0, weight_bytes = 0;
  double schedule_s = 0, tune_s = 0, codegen_s = 0, link_s = 0;
  std::string triple, cpu;
};

CompileReport compile_model(Model& m, const CompileOptions& opt);

}  // namespace tgc
