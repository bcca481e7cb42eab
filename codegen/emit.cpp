#include "codegen/emit.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/TargetParser/Host.h>
#include <unistd.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "codegen/c_header.h"
#include "codegen/llvm/cpu_kernel.h"
#include "codegen/model_desc.h"
#include "codegen/llvm/target.h"
#include "codegen/opencl/render_opencl.h"
#include "frontend/npy.h"
#include "ir/error.h"
#include "passes/lower.h"
#include "passes/memplan.h"
#include "passes/schedule.h"
#include "runtime-stub/tgc_model.h"

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
}  // namespace

CompileReport compile_model(Model& m, const CompileOptions& opt) {
  ResolvedTarget target = resolve_target(opt.target, opt.triple, opt.cpu);
  bool opencl = opt.target == "qcom";
  if (opt.output.empty()) throw Error("no output path (-o)");
  CompileReport rep;
  Graph& g = *m.graph;
  rep.triple = target.triple;
  rep.cpu = target.cpu;

  auto t0 = Clock::now();
  std::vector<const UOp*> roots;
  for (const auto& o : m.outputs) roots.push_back(o.tensor.uop());
  Schedule s = schedule(g, roots);
  MemoryPlan plan = plan_memory(g, s, opencl ? 512 : 64);
  rep.schedule_s = since(t0);
  rep.kernels = s.kernels.size();
  rep.arena_bytes = plan.arena_bytes;
  rep.intermediate_bytes = plan.intermediate_bytes;

  // Runtime buffer table: model inputs first, then everything the kernels touch.
  std::vector<int64_t> table;
  std::map<int64_t, int32_t> index;
  auto add = [&](int64_t b) {
    if (!index.count(b)) index[b] = int32_t(table.size()), table.push_back(b);
  };
  for (const auto& in : m.inputs) add(in.tensor.uop()->ival());
  for (int64_t o : s.outputs) add(o);
  for (const Kernel& k : s.kernels) {
    add(k.output);
    for (int64_t b : k.inputs) add(b);
  }

  // Weights: one blob, 64-byte aligned entries.
  std::vector<uint8_t> blob;
  std::map<int64_t, int64_t> weight_offset;
  for (int64_t b : table) {
    const BufferInfo& info = g.buffer(b);
    if (info.kind != BufferKind::Weight) continue;
    blob.resize((blob.size() + 63) / 64 * 64);
    weight_offset[b] = int64_t(blob.size());
    blob.insert(blob.end(), info.data->begin(), info.data->end());
  }
  rep.weight_bytes = int64_t(blob.size());

  auto t1 = Clock::now();
  llvm::LLVMContext ctx;
  auto mod = std::make_unique<llvm::Module>("tgc_model", ctx);
  std::unique_ptr<llvm::TargetMachine> tm(make_target_machine(rep.triple, rep.cpu));
  mod->setTargetTriple(rep.triple);
  mod->setDataLayout(tm->createDataLayout());
  DescBuilder d(*mod);

  std::map<size_t, llvm::Function*> by_hash;  // identical kernels share one function
  std::vector<llvm::Constant*> launches;
  const TargetProfile& profile = target.profile;
  std::vector<std::vector<Opt>> chosen(s.kernels.size());
  if (opt.optimize && opt.choose_opts) {
    auto tt = Clock::now();
    chosen = opt.choose_opts(g, s.kernels, target);
    check(chosen.size() == s.kernels.size(), "choose_opts returned the wrong number of kernels");
    rep.tune_s = since(tt);
  } else if (opt.optimize) {
    for (size_t i = 0; i < s.kernels.size(); ++i) chosen[i] = heuristic_opts(g, s.kernels[i], profile);
  }
  for (size_t ki = 0; ki < s.kernels.size(); ++ki) {
    const Kernel& plain = s.kernels[ki];
    Kernel k = apply_opts(g, plain, chosen[ki], profile);
    LoopProgram p = lower(g, k, {.inner_loop = !opencl});
    std::vector<int32_t> args;
    for (int64_t b : p.args) args.push_back(index.at(b));
    if (opencl) {
      launches.push_back(llvm::ConstantStruct::get(
          d.launch_t(), {d.str(k.name), d.null(), d.str(render_opencl(g, p)), d.I32(int64_t(args.size())),
                         d.i32s(args, k.name + ".args"), d.a3({opencl_global_size(p), 1, 1}),
                         d.a3({p.locals.empty() ? 0 : opencl_local_size(p), 0, 0}), d.I32(-1)}));
      continue;
    }
    CpuWorkSplit split = cpu_work_split(p);
    size_t key = k.hash() ^ (size_t(split.chunk) * 0x9e3779b97f4a7c15ULL);
    llvm::Function*& fn = by_hash[key];
    if (!fn) fn = render_cpu_kernel(*mod, g, p, split);
    // Work items decode the outermost global range first: over a run-time dim, only its value's
    // share of them runs.
    const UOp* outer = p.globals.empty() || p.globals[0] == p.inner ? nullptr : p.globals[0];
    int64_t outer_var = outer && outer->src[0]->op == Op::Var ? g.var_slot(outer->src[0]) : -1;
    launches.push_back(llvm::ConstantStruct::get(
        d.launch_t(), {d.str(k.name), fn, d.null(), d.I32(int64_t(args.size())), d.i32s(args, k.name + ".args"),
                       d.a3({split.items, 1, 1}), d.a3({0, 0, 0}), d.I32(outer_var)}));
  }
  std::set<size_t> distinct;
  for (const Kernel& k : s.kernels) distinct.insert(k.hash());
  rep.unique_kernels = distinct.size();

  for (size_t i = 0; i < s.outputs.size(); ++i) g.buffer(s.outputs[i]).name = m.outputs[i].name;
  std::set<int64_t> batched;  // buffers holding one sample of a run-time batch
  for (size_t i = 0; i < m.batched_inputs.size(); ++i)
    if (m.batched_inputs[i]) batched.insert(m.inputs[i].tensor.uop()->ival());
  for (size_t i = 0; i < m.batched_outputs.size(); ++i)
    if (m.batched_outputs[i]) batched.insert(s.outputs[i]);
  std::map<int64_t, std::vector<int32_t>> dim_vars;  // input/output buffer -> VAR slot per dim
  for (size_t i = 0; i < m.input_dim_vars.size(); ++i)
    if (!m.input_dim_vars[i].empty()) dim_vars[m.inputs[i].tensor.uop()->ival()] = m.input_dim_vars[i];
  for (size_t i = 0; i < m.output_dim_vars.size(); ++i)
    if (!m.output_dim_vars[i].empty()) dim_vars[s.outputs[i]] = m.output_dim_vars[i];
  std::vector<llvm::Constant*> buffers;
  for (int64_t b : table) {
    const BufferInfo& info = g.buffer(b);
    int storage = TGC_STORAGE_ARENA;
    int64_t offset = 0;
    if (info.kind == BufferKind::Weight) storage = TGC_STORAGE_WEIGHT, offset = weight_offset.at(b);
    else if (info.kind == BufferKind::Input) storage = TGC_STORAGE_INPUT;
    else if (info.kind == BufferKind::Output) storage = TGC_STORAGE_OUTPUT;
    else offset = plan.arena_offset.at(b);
    buffers.push_back(llvm::ConstantStruct::get(
        d.buffer_t(), {d.str(info.name), d.I32(int64_t(info.dtype)), d.I32(int64_t(info.shape.size())),
                       d.i64s(info.shape, "shape"), d.I32(storage), d.I64(offset), d.I64(numel(info.shape) * dtype_size(info.dtype)),
                       d.I32(batched.count(b)), dim_vars.count(b) ? d.i32s(dim_vars.at(b), "dim_vars") : d.null()}));
  }
  std::vector<int32_t> ins, outs;
  for (const auto& in : m.inputs) ins.push_back(index.at(in.tensor.uop()->ival()));
  for (int64_t o : s.outputs) outs.push_back(index.at(o));
  std::vector<llvm::Constant*> var_names;
  std::vector<int64_t> var_max;
  for (const UOp* v : g.vars()) var_names.push_back(d.str(v->var().name)), var_max.push_back(v->var().max);
  std::string name = c_name(opt.output);
  std::string weights_file = fs::path(opt.output).filename().string() + ".weights";
  llvm::Constant* weights = d.null();
  if (!opt.external_weights && !blob.empty())
    weights = d.global(llvm::ConstantDataArray::get(ctx, llvm::ArrayRef<uint8_t>(blob)), "weights", 64);
  auto* desc_init = llvm::ConstantStruct::get(
      d.desc_t(), {d.I32(TGC_ABI_VERSION), d.str(name), d.I32(opencl ? TGC_BACKEND_OPENCL : TGC_BACKEND_CPU), d.I32(int64_t(buffers.size())), d.array(d.buffer_t(), buffers, "buffers"),
                   d.I32(int64_t(launches.size())), d.array(d.launch_t(), launches, "launches"), d.I32(int64_t(ins.size())),
                   d.i32s(ins, "inputs"), d.I32(int64_t(outs.size())), d.i32s(outs, "outputs"), d.I64(plan.arena_bytes),
                   weights, d.I64(int64_t(blob.size())), opt.external_weights ? d.str(weights_file) : d.null(),
                   m.batch_dim.empty() ? d.null() : d.str(m.batch_dim), d.I32(int64_t(var_names.size())),
                   var_names.empty() ? d.null() : d.global(llvm::ConstantArray::get(llvm::ArrayType::get(d.ptr_, var_names.size()), var_names), "var_names"),
                   d.i64s(var_max, "var_max"), d.I32(index.count(g.vars_buffer()) ? index.at(g.vars_buffer()) : -1)});
  llvm::Constant* desc = d.global(desc_init, "desc");

  // Entry points: main() for executables; NAME_* wrappers for shared libraries.
  llvm::IRBuilder<> b(ctx);
  auto* i32 = b.getInt32Ty();
  auto* ptr = b.getPtrTy();
  auto declare = [&](const char* fname, llvm::Type* ret, std::vector<llvm::Type*> params) {
    return mod->getOrInsertFunction(fname, llvm::FunctionType::get(ret, params, false));
  };
  auto define = [&](const std::string& fname, llvm::Type* ret, std::vector<llvm::Type*> params) {
    auto* f = llvm::Function::Create(llvm::FunctionType::get(ret, params, false), llvm::Function::ExternalLinkage, fname, *mod);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
    return f;
  };
  if (!opt.shared) {
    auto* f = define("main", i32, {i32, ptr});
    b.CreateRet(b.CreateCall(declare("tgc_main", i32, {ptr, i32, ptr}), {desc, f->getArg(0), f->getArg(1)}));
  } else {
    auto* f = define(name + "_create", ptr, {i32});
    b.CreateRet(b.CreateCall(declare("tgc_create", ptr, {ptr, i32}), {desc, f->getArg(0)}));
    f = define(name + "_destroy", b.getVoidTy(), {ptr});
    b.CreateCall(declare("tgc_destroy", b.getVoidTy(), {ptr}), {f->getArg(0)});
    b.CreateRetVoid();
    f = define(name + "_run", i32, {ptr});
    b.CreateRet(b.CreateCall(declare("tgc_run", i32, {ptr}), {f->getArg(0)}));
    f = define(name + "_input", ptr, {ptr, i32});
    b.CreateRet(b.CreateCall(declare("tgc_input_data", ptr, {ptr, i32}), {f->getArg(0), f->getArg(1)}));
    f = define(name + "_output", ptr, {ptr, i32});
    b.CreateRet(b.CreateCall(declare("tgc_output_data", ptr, {ptr, i32}), {f->getArg(0), f->getArg(1)}));
    f = define(name + "_last_error", ptr, {});
    b.CreateRet(b.CreateCall(declare("tgc_last_error", ptr, {}), {}));
    // Shapes and names come from per-model tables.
    f = define(name + "_set_input_shape", i32, {ptr, i32, i32, ptr});
    b.CreateRet(b.CreateCall(declare("tgc_set_input_shape", i32, {ptr, i32, i32, ptr}),
                             {f->getArg(0), f->getArg(1), f->getArg(2), f->getArg(3)}));
    auto io_table = [&](const std::vector<NamedTensor>& v, const std::vector<bool>& batched,
                        const std::vector<std::vector<int32_t>>& vars, bool is_input) {
      std::vector<llvm::Constant*> names, shapes;
      std::vector<int32_t> ranks;
      for (size_t i = 0; i < v.size(); ++i) {
        const NamedTensor& t = v[i];
        names.push_back(d.str(t.name));
        Shape sh = declared_shape(t, at_or(batched, i, false), at_or(vars, i, {}));
        sh.resize(8, 0);
        shapes.push_back(d.i64s(sh, "ioshape"));
        ranks.push_back(int32_t(t.tensor.shape().size()));
      }
      std::string kind = is_input ? "input" : "output";
      auto* names_g = d.global(llvm::ConstantArray::get(llvm::ArrayType::get(ptr, names.size()), names), kind + "_names");
      auto* shapes_g = d.global(llvm::ConstantArray::get(llvm::ArrayType::get(ptr, shapes.size()), shapes), kind + "_shapes");
      auto* ranks_g = d.i32s(ranks, kind + "_ranks");
      int64_t n = int64_t(v.size());
      // NAME_kind_name(i): i in range ? names[i] : NULL
      auto* fn = define(name + "_" + kind + "_name", ptr, {i32});
      auto* ok = b.CreateICmpULT(fn->getArg(0), b.getInt32(uint32_t(n)));
      auto* safe = b.CreateSelect(ok, fn->getArg(0), b.getInt32(0));
      auto* nm = b.CreateLoad(ptr, b.CreateGEP(ptr, names_g, {b.CreateZExt(safe, b.getInt64Ty())}));
      b.CreateRet(b.CreateSelect(ok, nm, d.null()));
      // NAME_kind_shape(i, dims): copies 8 dims, returns the rank (-1 when out of range).
      fn = define(name + "_" + kind + "_shape", i32, {i32, ptr});
      ok = b.CreateICmpULT(fn->getArg(0), b.getInt32(uint32_t(n)));
      safe = b.CreateZExt(b.CreateSelect(ok, fn->getArg(0), b.getInt32(0)), b.getInt64Ty());
      auto* sp = b.CreateLoad(ptr, b.CreateGEP(ptr, shapes_g, {safe}));
      auto* rank = b.CreateLoad(i32, b.CreateGEP(i32, ranks_g, {safe}));
      auto* copy = llvm::BasicBlock::Create(ctx, "copy", fn);
      auto* done = llvm::BasicBlock::Create(ctx, "done", fn);
      b.CreateCondBr(ok, copy, done);
      b.SetInsertPoint(copy);
      b.CreateMemCpy(fn->getArg(1), llvm::MaybeAlign(8), sp, llvm::MaybeAlign(8), 64);
      b.CreateBr(done);
      b.SetInsertPoint(done);
      auto* phi = b.CreatePHI(i32, 2);
      phi->addIncoming(b.getInt32(uint32_t(-1)), &fn->getEntryBlock());
      phi->addIncoming(rank, copy);
      b.CreateRet(phi);
    };
    io_table(m.inputs, m.batched_inputs, m.input_dim_vars, true);
    io_table(m.outputs, m.batched_outputs, m.output_dim_vars, false);
  }
  std::string verify;
  llvm::raw_string_ostream vs(verify);
  if (llvm::verifyModule(*mod, &vs)) throw Error("internal error: invalid LLVM module: " + verify.substr(0, 500));
  optimize(*mod, tm.get());

  fs::path out = fs::absolute(opt.output);
  if (!out.parent_path().empty()) fs::create_directories(out.parent_path());
  fs::path tmpdir = fs::temp_directory_path() / ("tgc-" + std::to_string(getpid()));
  fs::create_directories(tmpdir);
  std::string obj = (tmpdir / "model.o").string();
  write_object(*mod, tm.get(), obj);
  rep.codegen_s = since(t1) - rep.tune_s;

  auto t2 = Clock::now();
  std::string tmp_out = out.string() + ".partial";
  link_with_runtime({obj}, rep.triple, opt.runtime_dir, opt.shared, tmp_out);
  // Only now touch the real output paths, so a failure never leaves half an artifact.
  if (opt.external_weights) {
    std::ofstream w(out.string() + ".weights", std::ios::binary);
    w.write(reinterpret_cast<const char*>(blob.data()), std::streamsize(blob.size()));
    if (!w) throw Error(out.string() + ".weights: write failed");
  }
  if (opt.shared) {
    std::ofstream h(out.parent_path() / (name + ".h"));
    h << header_text(name, m);
  }
  fs::rename(tmp_out, out);
  fs::remove_all(tmpdir);
  rep.link_s = since(t2);
  return rep;
}

}  // namespace tgc
