#include "codegen/pipeline.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include "codegen/c_header.h"
#include "codegen/cpu_objects.h"
#include "codegen/dialect.h"
#include "codegen/emit.h"
#include "codegen/llvm/target.h"
#include "codegen/gpu/c_renderer.h"
#include "codegen/gpu/image_weights.h"
#include "passes/branch_guards.h"
#include "passes/memplan.h"
#include "passes/precision.h"
#include "passes/tensor_cores.h"
#include "passes/schedule.h"

namespace tgc {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A C identifier from the artifact's file name: exported symbols are NAME_create etc.
std::string c_name(const std::string& path) {
  std::string stem = fs::path(path).stem().string();
  if (stem.rfind("lib", 0) == 0) stem = stem.substr(3);
  std::string r;
  for (char ch : stem) r += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  if (r.empty() || std::isdigit(static_cast<unsigned char>(r[0]))) r = "m_" + r;
  return r;
}

// A scratch directory of its own (compiles may run side by side), removed on every way out.
struct WorkDir {
  fs::path path;
  WorkDir() {
    std::string t = (fs::temp_directory_path() / "tgc-XXXXXX").string();
    if (!mkdtemp(t.data())) throw Error("cannot make a scratch directory in " + fs::temp_directory_path().string());
    path = t;
  }
  ~WorkDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The stages of serial launches take serial_stage_opts; BEAM (choose_opts) searches the others.
std::vector<std::vector<Opt>> choose_opts(Graph& g, const Schedule& s, const std::vector<SerialLaunch>& serial,
                                          const ResolvedTarget& t, const CompileOptions& opt) {
  std::vector<std::vector<Opt>> chosen(s.kernels.size());
  if (!opt.optimize) return chosen;
  std::vector<bool> stage(s.kernels.size(), false);
  for (const SerialLaunch& l : serial)
    for (size_t i = l.first; i < l.first + l.count; ++i)
      stage[i] = true, chosen[i] = serial_stage_opts(s.kernels[i], t.profile);
  if (opt.choose_opts) {
    std::vector<Kernel> searched;
    for (size_t i = 0; i < s.kernels.size(); ++i)
      if (!stage[i]) searched.push_back(s.kernels[i]);
    std::vector<std::vector<Opt>> found = opt.choose_opts(g, searched, t);
    check(found.size() == searched.size(), "internal error: choose_opts returned the wrong number of kernels");
    for (size_t i = 0, j = 0; i < s.kernels.size(); ++i)
      if (!stage[i]) chosen[i] = std::move(found[j++]);
    return chosen;
  }
  for (size_t i = 0; i < s.kernels.size(); ++i)
    if (!stage[i]) chosen[i] = heuristic_opts(g, s.kernels[i], t.profile);
  return chosen;
}

// The launch of a lowered kernel: the work items of CPU kernels decode the outermost global range
// first, so over a run-time dim (or that dim tiled by f: a range to ceil(VAR / f)) only its value's
// share of them runs. Tensor-core tiles order their blocks otherwise (columns innermost), and
// those past a run-time size leave by themselves: all of them are launched.
KernelLaunch launch_of(const Graph& g, const LoopProgram& p) {
  KernelLaunch l;
  l.name = p.name;
  l.args = p.args;
  const UOp* outer = p.globals.empty() || p.globals[0] == p.inner || p.tensor_cores ? nullptr : p.globals[0];
  const UOp* end = outer ? outer->src[0] : nullptr;
  if (end && end->op == Op::IDiv && end->src[1]->is_const() && end->src[0]->op == Op::Add &&
      end->src[0]->src[0]->op == Op::Var && end->src[0]->src[1]->is_const(end->src[1]->ival() - 1)) {
    l.outer_step = int32_t(end->src[1]->ival());
    end = end->src[0]->src[0];
  }
  l.outer_var = end && end->op == Op::Var ? int32_t(g.var_slot(end)) : -1;
  if (l.outer_var < 0) l.outer_step = 1;
  return l;
}
}  // namespace

std::vector<SerialLaunch> serial_launches(const Schedule& s, const ResolvedTarget& t) {
  return dialect_ops(t.desc->dialect).render_serial ? plan_serial_launches(s, t.profile) : std::vector<SerialLaunch>{};
}

void prepare_kernels(Graph& g, Schedule& s, const TargetProfile& t, bool optimize, DType storage) {
  if (optimize) rewrite_kernels(g, s, t);
  store_in_half(g, s, storage);
  if (storage == DType::F16 && t.half_math) compute_in_half(g, s);
  if (!t.gpu) widen_reused_halves(g, s, t);
}

void apply_precision(ResolvedTarget& t, const Precision& p) {
  t.profile.tf32 = p.tf32;
  if (p.tf32 && !has_tensor_cores(t.profile, DType::F32))
    throw Error("--precision=tf32: tf32 tensor cores need a cuda target of sm_80 or later (target: " + t.desc->name +
                (t.profile.gpu_arch.empty() ? "" : ":" + t.profile.gpu_arch) + ")");
}

namespace {

// Sizes the model computes from data (NonZero's count) are scheduled after the outputs: a buffer
// each, which the runtime reads once the kernel that stores it has run. An If on a run-time
// condition runs only the side taken unless `both_sides` (see compile_model).
void check_supported(const Model& m, const DialectOps& dialect, bool both_sides) {
  if (m.computes_sizes() && dialect.render_gpu)
    throw Error(
        "the model computes output sizes from data (NonZero, Compress, Unique, TopK with a run-time k, "
        "NonMaxSuppression): only the cpu "
        "target runs such models for now");
  for (const Graph::BranchSelect& b : m.graph->branch_selects())
    if (both_sides && (b.runs[0] || b.runs[1]))
      throw Error(b.why[b.runs[0] ? 0 : 1] +
                  ", which only the cpu target checks at run time (without a batch dim) for now");
}

struct ScheduledModel {
  BranchGuards guards;
  Schedule schedule;
  std::vector<int64_t> var_source;  // per VAR slot: -1, or the buffer where a kernel stores its value
};

// Schedules the conditions of the guarded Ifs first, then the outputs, then the sizes computed
// from data (Model::schedule_roots); the conditions and sizes become var_source.
ScheduledModel schedule_model(Model& m, const ResolvedTarget& target, const CompileOptions& opt, bool both_sides) {
  Graph& g = *m.graph;
  std::vector<const UOp*> roots = m.schedule_roots();
  BranchGuards guards = both_sides ? BranchGuards{} : guard_branches(g, roots);
  std::vector<const UOp*> conditions;
  for (const UOp* v : guards.vars) conditions.push_back(g.var_value(v));
  roots.insert(roots.begin(), conditions.begin(), conditions.end());
  Schedule s = run_stage("schedule", [&] { return schedule(g, roots, schedule_options(target.profile)); });
  prepare_kernels(g, s, target.profile, opt.optimize, opt.precision.storage);
  std::vector<int64_t> var_source(g.vars().size(), -1);
  for (size_t i = 0; i < guards.vars.size(); ++i) var_source[size_t(g.var_slot(guards.vars[i]))] = s.outputs[i];
  s.outputs.erase(s.outputs.begin(), s.outputs.begin() + long(guards.vars.size()));
  for (size_t v = 0, k = m.outputs.size(); v < g.vars().size(); ++v)
    if (g.var_value(g.vars()[v]) && var_source[v] < 0) var_source[v] = s.outputs[k++];
  s.outputs.resize(m.outputs.size());
  return {std::move(guards), std::move(s), std::move(var_source)};
}

void report_schedule(CompileReport& rep, const Schedule& s, const MemoryPlan& plan) {
  rep.kernels = s.kernels.size();
  rep.arena_bytes = plan.arena_bytes;
  rep.intermediate_bytes = plan.intermediate_bytes;
  std::set<size_t> distinct;
  for (const Kernel& k : s.kernels) distinct.insert(k.hash());
  rep.unique_kernels = distinct.size();
}

// When a program runs.
struct Runs {
  int32_t var = 0;
  int64_t from = 0, until = 0;  // a size variant: runs for values of VAR var in [from, until] (0: unbounded)
  int32_t if_var = -1;          // a kernel of one side of an If: runs when VAR if_var is if_value
  int64_t if_value = 0;
  int32_t sets_var = -1;  // the VAR whose value it stores, or -1
};

struct LoweredPrograms {
  std::vector<LoopProgram> programs;
  std::vector<size_t> keys;  // the optimized kernel's hash: identical kernels share code
  std::vector<Runs> runs;    // per program

  void add(LoweredKernel k, const std::string& suffix, Runs r, int32_t var, int64_t from, int64_t until) {
    k.program.name += suffix;
    keys.push_back(k.hash);
    programs.push_back(std::move(k.program));
    r.var = var, r.from = from, r.until = until;
    runs.push_back(r);
  }
};

// When all of a kernel's programs run: on one side of an If; storing a VAR's value.
Runs kernel_runs(const Graph& g, const Kernel& kernel, const BranchGuards& guards,
                 const std::vector<int64_t>& var_source) {
  Runs r;
  auto source = std::find(var_source.begin(), var_source.end(), kernel.output);
  if (source != var_source.end()) r.sets_var = int32_t(source - var_source.begin());
  if (auto guard = guards.of.find(kernel.node); guard != guards.of.end())
    r.if_var = int32_t(g.var_slot(guard->second.var)), r.if_value = guard->second.value;
  return r;
}

// A kernel's programs. Tuned kernels (BEAM, --no-opt) keep their one schedule. Others may get a
// variant for large run-time sizes, or, where their run-time loops are short, the static kernel
// for the VAR's largest value.
void lower_with_variants(Graph& g, const Kernel& kernel, const std::vector<Opt>& opts, const ResolvedTarget& target,
                         const CompileOptions& opt, const Runs& base, LoweredPrograms& out) {
  LoweredKernel k = lower_kernel(g, kernel, opts, target);
  // GPU targets without serial launches (those group programs by kernel) get a few-tokens variant.
  bool gpu_variants = opt.optimize && !opt.choose_opts && target.profile.gpu && !target.profile.serial_group;
  if (SizeVariant few = gpu_variants ? few_tokens_variant(g, kernel, target.profile, opts) : SizeVariant{};
      !few.opts.empty()) {
    int32_t var = int32_t(g.var_slot(few.var));
    out.add(lower_kernel(g, few.kernel ? *few.kernel : kernel, few.opts, target), "_few", base, var, 0, few.until);
    out.add(std::move(k), "", base, var, few.until + 1, 0);
    return;
  }
  bool variants = opt.optimize && !opt.choose_opts && !target.profile.gpu;
  SizeVariant large = variants ? large_size_variant(g, kernel, target.profile, opts) : SizeVariant{};
  // (Not where the opts took the short loops whole already: the kernel reads no VAR then.)
  bool reads_vars = std::count(k.program.args.begin(), k.program.args.end(), g.vars_buffer()) > 0;
  BoundVariant at_max = variants && large.opts.empty() && reads_vars ? bound_variant(g, kernel) : BoundVariant{};
  if (!large.opts.empty()) {
    int32_t var = int32_t(g.var_slot(large.var));
    out.add(std::move(k), "", base, var, 0, large.from - 1);
    out.add(lower_kernel(g, kernel, large.opts, target), "_from" + std::to_string(large.from), base, var, large.from,
            0);
  } else if (at_max.var) {
    int32_t var = int32_t(g.var_slot(at_max.var));
    int64_t max = at_max.var->var().max;
    out.add(std::move(k), "", base, var, 0, max - 1);
    out.add(lower_kernel(g, at_max.kernel, heuristic_opts(g, at_max.kernel, target.profile), target), "_at_max", base,
            var, max, 0);
  } else {
    out.add(std::move(k), "", base, 0, 0, 0);
  }
}

LoweredPrograms lower_programs(Graph& g, const ScheduledModel& sm, const std::vector<std::vector<Opt>>& chosen,
                               const ResolvedTarget& target, const CompileOptions& opt) {
  LoweredPrograms out;
  for (size_t i = 0; i < sm.schedule.kernels.size(); ++i) {
    const Kernel& kernel = sm.schedule.kernels[i];
    lower_with_variants(g, kernel, chosen[i], target, opt, kernel_runs(g, kernel, sm.guards, sm.var_source), out);
  }
  return out;
}

// Where and when launch l runs: a size variant's range of its VAR, one side of an If, a VAR it sets.
void set_runs(KernelLaunch& l, const Runs& r) {
  l.runs_var = r.var, l.runs_from = r.from, l.runs_until = r.until;
  l.runs_if_var = r.if_var, l.runs_if_value = r.if_value;
  l.sets_var = r.sets_var;
}

// GPU kernels, a launch each (size variants too), or one per serial launch of several (targets
// with serial launches have no size variants: there program i is kernel i).
std::vector<KernelLaunch> gpu_launches(Graph& g, const Schedule& s, LoweredPrograms& lowered,
                                       const std::vector<SerialLaunch>& serial, const DialectOps& dialect,
                                       const ResolvedTarget& target) {
  std::vector<LoopProgram>& programs = lowered.programs;
  if (target.profile.image_weights) place_image_weights(g, programs);
  std::vector<KernelLaunch> launches;
  auto next_serial = serial.begin();
  for (size_t i = 0; i < programs.size();) {
    KernelLaunch l = launch_of(g, programs[i]);
    GpuKernel k;
    if (next_serial != serial.end() && next_serial->first == i) {
      std::vector<const LoopProgram*> stages;
      for (size_t j = i; j < i + next_serial->count; ++j) stages.push_back(&programs[j]);
      l.name = serial_launch_name(s, *next_serial);
      l.args = serial_launch_args(stages);
      k = dialect.render_serial(g, stages, l.name, target.profile);
      i += next_serial++->count;
    } else {
      if (lowered.runs[i].from || lowered.runs[i].until) set_runs(l, lowered.runs[i]);
      k = dialect.render_gpu(g, programs[i++], target.profile);
    }
    l.blob = std::move(k.blob), l.fallback_blob = std::move(k.fallback), l.global = k.global, l.local = k.local;
    launches.push_back(std::move(l));
  }
  return launches;
}

std::vector<KernelLaunch> cpu_launches(const Graph& g, const LoweredPrograms& lowered, const CpuKernels& ck) {
  std::vector<KernelLaunch> launches;
  for (size_t i = 0; i < lowered.programs.size(); ++i) {
    const Runs& r = lowered.runs[i];
    KernelLaunch l = launch_of(g, lowered.programs[i]);
    set_runs(l, r);
    l.cpu_symbol = ck.symbols[i];
    l.global = {ck.items[i], 1, 1};
    launches.push_back(std::move(l));
  }
  return launches;
}

// Where the artifact's files are written first: removed unless the compile gets to rename them
// into place, so a failure never leaves half an artifact.
struct Partials {
  std::vector<std::string> paths;
  ~Partials() {
    std::error_code ec;
    for (const auto& p : paths) fs::remove(p, ec);
  }
};

fs::path make_output_folder(const std::string& output) {
  fs::path out = fs::absolute(output);
  std::error_code ec;
  if (!out.parent_path().empty() && !fs::create_directories(out.parent_path(), ec) && ec)
    throw Error(output + ": cannot create its folder " + out.parent_path().string() + " (" + ec.message() + ")");
  return out;
}

void rename_into_place(const std::string& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw Error(to.string() + ": cannot rename into place (" + ec.message() + ")");
}

// A shared library's C header, which too goes through a partial file.
void write_header(const std::string& name, const Model& m, const ResolvedTarget& target, const fs::path& header,
                  Partials& partials) {
  std::string cpu_note;
  if (target.desc->dialect == Dialect::LlvmCpu && !target.cpu_features.empty()) {
    cpu_note = "The kernels were built for --cpu=" + target.cpu + " and use ";
    for (size_t i = 0; i < target.cpu_features.size(); ++i) cpu_note += (i ? ", " : "") + target.cpu_features[i];
  }
  partials.paths.push_back(header.string() + ".partial");
  {
    std::ofstream h(partials.paths.back());
    h << header_text(name, m, cpu_note);
    if (!h.flush()) throw Error(header.string() + ": write failed");
  }
  rename_into_place(partials.paths.back(), header);
}

}  // namespace

CompileReport compile_model(Model& m, const CompileOptions& opt) {
  if (opt.output.empty()) throw Error("no output path (-o)");
  ResolvedTarget target = resolve_target(opt.target, opt.triple, opt.cpu);
  apply_precision(target, opt.precision);
  const DialectOps& dialect = dialect_ops(target.desc->dialect);
  CompileReport rep;
  Graph& g = *m.graph;
  rep.triple = target.triple;
  rep.cpu = target.cpu;

  auto t0 = Clock::now();
  // An If on a run-time condition: on the CPU only the side taken runs; the conditions come
  // first (GPU backends record every launch once, and a batch runs one program per sample: both
  // sides run there, the selects picking one).
  bool both_sides = dialect.render_gpu || !m.batch_dim.empty();
  check_supported(m, dialect, both_sides);
  ScheduledModel sm = schedule_model(m, target, opt, both_sides);
  rep.branch_vars = sm.guards.vars;
  const Schedule& s = sm.schedule;
  MemoryPlan plan = run_stage("memory plan", [&] { return plan_memory(g, s, target.desc->arena_alignment); });
  rep.schedule_s = since(t0);
  report_schedule(rep, s, plan);

  auto t1 = Clock::now();
  std::vector<SerialLaunch> serial = serial_launches(s, target);
  rep.launches = launch_count(s, serial);
  std::vector<std::vector<Opt>> chosen = run_stage("tune", [&] { return choose_opts(g, s, serial, target, opt); });
  rep.tune_s = since(t1);

  auto t2 = Clock::now();
  LoweredPrograms lowered = run_stage("lower", [&] { return lower_programs(g, sm, chosen, target, opt); });
  WorkDir work;
  ModelObject mo{m,
                 s,
                 plan,
                 target,
                 {},
                 c_name(opt.output),
                 opt.shared,
                 opt.external_weights ? fs::path(opt.output).filename().string() + ".weights" : "",
                 sm.var_source};
  std::vector<std::string> objects;
  run_stage("codegen", [&] {
    if (dialect.render_gpu) {
      mo.launches = gpu_launches(g, s, lowered, serial, dialect, target);
      return;
    }
    CpuKernels ck = build_cpu_kernels(g, lowered.programs, lowered.keys, target, work.path.string(), opt.jobs);
    mo.launches = cpu_launches(g, lowered, ck);
    objects = ck.objects;
  });

  fs::path out = make_output_folder(opt.output);
  // External weights go straight to their own partial file; embedded ones into an object.
  std::string weights_path =
      opt.external_weights ? out.string() + ".weights.partial" : (work.path / "weights.o").string();
  std::string tmp_out = out.string() + ".partial";
  Partials partials{{weights_path, tmp_out}};
  std::string model_obj = (work.path / "model.o").string();
  rep.weight_bytes = run_stage("emit", [&] { return emit_model_object(mo, model_obj, weights_path); });
  objects.insert(objects.begin(), model_obj);
  if (!opt.external_weights && rep.weight_bytes > 0) objects.push_back(weights_path);
  rep.codegen_s = since(t2);

  auto t3 = Clock::now();
  link_with_runtime(objects, rep.triple, opt.runtime_dir, opt.shared, tmp_out);
  // Only now touch the real output paths, so a failure never leaves half an artifact.
  if (opt.shared) write_header(mo.name, m, mo.target, out.parent_path() / (mo.name + ".h"), partials);
  if (opt.external_weights) rename_into_place(weights_path, out.string() + ".weights");
  rename_into_place(tmp_out, out);
  rep.link_s = since(t3);
  return rep;
}

}  // namespace tgc
