// The compile driver: a model through named stages into one artifact.
//   schedule  -> kernels and the memory plan (passes/schedule, passes/memplan)
//   tune      -> each kernel's optimization actions (heuristic, or BEAM through choose_opts)
//   lower     -> loop programs in the target's dialect (codegen/dialect.h)
//   codegen   -> CPU kernels into host objects on every core, or GPU kernels into launch blobs
//   emit      -> the model description, entry points and weights (codegen/emit.h)
//   link      -> with the runtime stub into an executable or a shared library
// A failure names its stage; a compile that fails leaves no artifact behind.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "target/targets.h"
#include "ir/error.h"
#include "model/model.h"
#include "passes/opt.h"
#include "passes/precision.h"
#include "passes/serial_launches.h"

namespace tgc {

struct CompileOptions {
  std::string target = "cpu";  // a row of target/targets.h
  std::string triple;          // default: the row's architecture, else the host's
  std::string cpu;             // LLVM CPU name; default: the host CPU for host triples, else generic
  bool optimize = true;        // apply kernel optimizations (choose_opts, else the heuristic)
  // Picks the optimizations of every kernel (all at once: a search can share work between
  // identical kernels and report progress); default heuristic_opts. BEAM search plugs in here.
  std::function<std::vector<std::vector<Opt>>(Graph&, const std::vector<Kernel>&, const ResolvedTarget&)> choose_opts;
  bool shared = false;  // libNAME.so + NAME.h instead of an executable
  bool external_weights = false;
  std::string output;       // artifact path
  std::string runtime_dir;  // holds <triple>/libtgc_runtime.a
  int jobs = 0;             // threads for kernel codegen; 0: one per core
  Precision precision;      // --precision (passes/precision.h)
};

struct CompileReport {
  size_t kernels = 0, unique_kernels = 0;
  size_t launches = 0;  // the kernels' launches: fewer where serial launches run several
  int64_t arena_bytes = 0, intermediate_bytes = 0, weight_bytes = 0;
  double schedule_s = 0, tune_s = 0, codegen_s = 0, link_s = 0;
  std::string triple, cpu;
  std::vector<const UOp*> branch_vars;  // the conditions of Ifs that run only the side taken (passes/branch_guards)
};

CompileReport compile_model(Model& m, const CompileOptions& opt);

// What compile_model does to the kernels between the schedule and the choice of actions: the
// target's rewrites (with `optimize`), the storage precision, and on CPUs the widening of
// reused 16-bit data (passes/opt.h, passes/precision.h). `tgc inspect` shows kernels so.
void prepare_kernels(Graph& g, Schedule& s, const TargetProfile& t, bool optimize, DType storage);

// The serial launches of s on target t: none where its dialect has none (passes/serial_launches.h).
std::vector<SerialLaunch> serial_launches(const Schedule& s, const ResolvedTarget& t);

// The target as --precision changes it (tf32: tensor cores for f32 matrix products, which only
// cuda sm_80+ has: an error elsewhere).
void apply_precision(ResolvedTarget& t, const Precision& p);

// Runs `fn` as stage `stage` of a compile: errors that are not tgc::Error (an internal failure,
// e.g. std::bad_variant_access) become one tgc::Error naming the stage.
template <class F>
auto run_stage(const char* stage, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(std::string("internal error in stage '") + stage + "': " + e.what());
  }
}

}  // namespace tgc
