#include "codegen/emit.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <set>

#include "codegen/c_header.h"
#include "codegen/llvm/target.h"
#include "codegen/model_desc.h"
#include "codegen/weights_object.h"
#include "ir/error.h"
#include "runtime-stub/include/tgc_model.h"

namespace tgc {
namespace {

// The runtime's buffer table: model inputs first, then everything the kernels touch.
struct BufferTable {
  std::vector<int64_t> ids;
  std::map<int64_t, int32_t> index;
  void add(int64_t b) {
    if (index.emplace(b, int32_t(ids.size())).second) ids.push_back(b);
  }
};

}  // namespace

int64_t emit_model_object(const ModelObject& mo, const std::string& object_path, const std::string& weights_path) {
  const Model& m = mo.model;
  const Graph& g = *m.graph;
  const Schedule& s = mo.schedule;
  const std::string& name = mo.name;

  BufferTable table;
  for (const auto& in : m.inputs) table.add(in.tensor.uop()->ival());
  for (int64_t o : s.outputs) table.add(o);
  for (const Kernel& k : s.kernels) {
    table.add(k.output);
    for (int64_t b : k.inputs) table.add(b);
  }
  WeightLayout weights_layout = layout_weights(g, table.ids);
  std::string weights_symbol = "tgc_weights_" + name;
  if (mo.weights_file.empty()) write_weights_object(g, weights_layout, arch_of(mo.target.triple), weights_symbol, weights_path);
  else write_weights_file(g, weights_layout, weights_path);

  llvm::LLVMContext ctx;
  auto mod = std::make_unique<llvm::Module>("tgc_model", ctx);
  std::unique_ptr<llvm::TargetMachine> tm(make_target_machine(mo.target.triple, mo.target.cpu));
  mod->setTargetTriple(mo.target.triple);
  mod->setDataLayout(tm->createDataLayout());
  DescBuilder d(*mod);
  bool gpu = mo.target.desc->dialect != Dialect::LlvmCpu;

  std::vector<llvm::Constant*> launches;
  for (const KernelLaunch& l : mo.launches) {
    std::vector<int32_t> args;
    for (int64_t b : l.args) args.push_back(table.index.at(b));
    llvm::Constant* fn = d.null();
    if (!gpu) {
      auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {d.ptr_, d.i64_, d.i64_}, false);
      auto* f = llvm::cast<llvm::Function>(mod->getOrInsertFunction(l.cpu_symbol, type).getCallee());
      f->setVisibility(llvm::GlobalValue::HiddenVisibility);  // defined in the kernel objects
      fn = f;
    }
    launches.push_back(llvm::ConstantStruct::get(
        d.launch_t(), {d.str(l.name), fn, gpu ? d.bytes(l.blob, l.name + ".blob") : d.null(), d.I64(gpu ? int64_t(l.blob.size()) : 0),
                       d.I32(int64_t(args.size())),
                       d.i32s(args, l.name + ".args"), d.a3(l.global), d.a3(l.local), d.I32(l.outer_var), d.I32(l.outer_step),
                       d.I32(l.runs_var), d.I64(l.runs_from), d.I64(l.runs_until), d.I32(l.sets_var + 1),
                       d.I32(l.runs_if_var + 1), d.I64(l.runs_if_value),
                       l.fallback_blob.empty() ? d.null() : d.bytes(l.fallback_blob, l.name + ".fallback"), d.I64(int64_t(l.fallback_blob.size()))}));
  }

  std::map<int64_t, std::string> io_name;  // outputs are named by the model
  for (size_t i = 0; i < s.outputs.size(); ++i) io_name[s.outputs[i]] = m.outputs[i].name;
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
  std::map<int64_t, std::vector<int64_t>> dim_sizes;  // output buffer -> tables of derived dims
  for (size_t i = 0; i < m.output_dim_sizes.size(); ++i)
    if (!m.output_dim_sizes[i].empty()) dim_sizes[s.outputs[i]] = m.output_dim_sizes[i];
  std::vector<llvm::Constant*> buffers;
  for (int64_t b : table.ids) {
    const BufferInfo& info = g.buffer(b);
    int storage = TGC_STORAGE_ARENA;
    int64_t offset = 0;
    if (info.kind == BufferKind::Weight) storage = info.image ? TGC_STORAGE_IMAGE : TGC_STORAGE_WEIGHT, offset = weights_layout.offset.at(b);
    else if (info.kind == BufferKind::Input) storage = TGC_STORAGE_INPUT;
    else if (info.kind == BufferKind::Output) storage = TGC_STORAGE_OUTPUT;
    else if (info.kind == BufferKind::State) storage = TGC_STORAGE_STATE;
    else offset = mo.plan.arena_offset.at(b);
    std::string bname = io_name.count(b) ? io_name.at(b) : info.name;
    buffers.push_back(llvm::ConstantStruct::get(
        d.buffer_t(), {d.str(bname), d.I32(int64_t(info.dtype)), d.I32(int64_t(info.shape.size())),
                       d.i64s(info.shape, "shape"), d.I32(storage), d.I64(offset), d.I64(numel(info.shape) * dtype_size(info.dtype)),
                       d.I32(batched.count(b)), dim_vars.count(b) ? d.i32s(dim_vars.at(b), "dim_vars") : d.null(),
                       dim_sizes.count(b) ? d.i64s(dim_sizes.at(b), "dim_sizes") : d.null()}));
  }
  std::vector<int32_t> ins, outs;
  for (const auto& in : m.inputs) ins.push_back(table.index.at(in.tensor.uop()->ival()));
  for (int64_t o : s.outputs) outs.push_back(table.index.at(o));
  std::vector<llvm::Constant*> var_names;
  std::vector<int64_t> var_max;
  for (const UOp* v : g.vars()) var_names.push_back(d.str(v->var().name)), var_max.push_back(v->var().max);
  std::vector<int32_t> kv_position;  // {length VAR, count input, logit rows VAR or -1}
  int32_t logit_rows = -1;
  for (const UOp* v : g.vars()) {
    if (v->var().name == m.kv_length_var) kv_position = {int32_t(g.var_slot(v)), int32_t(m.kv_count_input)};
    if (v->var().name == m.logit_rows_var) logit_rows = int32_t(g.var_slot(v));
  }
  if (!m.kv_length_var.empty() && kv_position.empty()) throw Error("internal error: KV length dim '" + m.kv_length_var + "' is not a VAR");
  if (!m.logit_rows_var.empty() && logit_rows < 0) throw Error("internal error: logit rows dim '" + m.logit_rows_var + "' is not a VAR");
  if (!kv_position.empty()) kv_position.push_back(logit_rows);
  std::vector<int32_t> var_source;  // buffer indices of the values the model computes, or -1
  for (int64_t b : mo.var_source) var_source.push_back(b < 0 ? -1 : table.index.at(b));
  if (std::all_of(var_source.begin(), var_source.end(), [](int32_t b) { return b < 0; })) var_source.clear();
  std::vector<int64_t> var_step;  // --dynamic NAME=MAX/STEP
  for (const UOp* v : g.vars()) var_step.push_back(g.var_step(v));
  if (std::all_of(var_step.begin(), var_step.end(), [](int64_t s) { return s == 1; })) var_step.clear();
  std::vector<int64_t> var_min;  // where the model's structure holds (passes/dim_axes)
  for (const UOp* v : g.vars()) var_min.push_back(g.var_min(v));  // (the runtime takes 0 for computed VARs)
  if (std::all_of(var_min.begin(), var_min.end(), [&](int64_t s) { return s <= 1; })) var_min.clear();
  llvm::Constant* vocab = d.null();
  if (m.vocab) {
    const Vocab& v = *m.vocab;
    vocab = d.global(llvm::ConstantStruct::get(d.vocab_t(), {d.I32(v.n_tokens()), d.bytes(v.text, "vocab.text"), d.i64s(v.offsets, "vocab.offsets"),
                                                             d.f32s(v.scores, "vocab.scores"), d.i32s(v.types, "vocab.types"), d.I32(v.bos),
                                                             d.I32(v.eos), d.I32(v.unk), d.I32(v.add_bos), d.I32(v.add_space_prefix),
                                                             d.I32(v.model), d.I32(v.pre), d.I32(v.ignore_merges), d.I32(v.n_merges()),
                                                             d.i32s(v.merges, "vocab.merges")}),
                     "vocab");
  }
  llvm::Constant* weights = d.null();
  if (mo.weights_file.empty() && weights_layout.bytes > 0) {  // defined by the weights object
    auto* gv = new llvm::GlobalVariable(*mod, llvm::ArrayType::get(llvm::Type::getInt8Ty(ctx), 0), true,
                                        llvm::GlobalValue::ExternalLinkage, nullptr, weights_symbol);
    gv->setVisibility(llvm::GlobalValue::HiddenVisibility);
    weights = gv;
  }
  auto* desc_init = llvm::ConstantStruct::get(
      d.desc_t(), {d.I32(TGC_ABI_VERSION), d.str(name), d.runtime_symbol(mo.target.desc->runtime_backend), d.I32(int64_t(buffers.size())), d.array(d.buffer_t(), buffers, "buffers"),
                   d.I32(int64_t(launches.size())), d.array(d.launch_t(), launches, "launches"), d.I32(int64_t(ins.size())),
                   d.i32s(ins, "inputs"), d.I32(int64_t(outs.size())), d.i32s(outs, "outputs"), d.I64(mo.plan.arena_bytes),
                   weights, d.I64(weights_layout.bytes), mo.weights_file.empty() ? d.null() : d.str(mo.weights_file),
                   m.batch_dim.empty() ? d.null() : d.str(m.batch_dim), d.I32(int64_t(var_names.size())),
                   var_names.empty() ? d.null() : d.global(llvm::ConstantArray::get(llvm::ArrayType::get(d.ptr_, var_names.size()), var_names), "var_names"),
                   d.i64s(var_max, "var_max"), d.I32(table.index.count(g.vars_buffer()) ? table.index.at(g.vars_buffer()) : -1),
                   kv_position.empty() ? d.null() : d.i32s(kv_position, "kv_position"), vocab,
                   var_source.empty() ? d.null() : d.i32s(var_source, "var_source"),
                   var_step.empty() ? d.null() : d.i64s(var_step, "var_step"),
                   var_min.empty() ? d.null() : d.i64s(var_min, "var_min")});
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
  if (!mo.shared) {
    auto* f = define("main", i32, {i32, ptr});
    // A model with a KV cache gets the language-model command line; others link without it.
    const char* entry = kv_position.empty() && !m.vocab ? "tgc_main" : "tgc_llm_main";
    b.CreateRet(b.CreateCall(declare(entry, i32, {ptr, i32, ptr}), {desc, f->getArg(0), f->getArg(1)}));
  } else {
    // NAME_suffix(args...) { return runtime_fn(args..., extra...); }
    auto forward = [&](const std::string& suffix, const char* runtime_fn, llvm::Type* ret, std::vector<llvm::Type*> params,
                       std::vector<llvm::Value*> extra = {}) {
      auto* fn = define(name + suffix, ret, params);
      std::vector<llvm::Value*> args;
      for (auto& a : fn->args()) args.push_back(&a);
      std::vector<llvm::Type*> callee_params = params;
      for (llvm::Value* x : extra) args.push_back(x), callee_params.push_back(x->getType());
      auto* call = b.CreateCall(declare(runtime_fn, ret, callee_params), args);
      if (ret->isVoidTy()) b.CreateRetVoid();
      else b.CreateRet(call);
    };
    auto* i64 = b.getInt64Ty();
    auto* f = define(name + "_create", ptr, {i32});
    b.CreateRet(b.CreateCall(declare("tgc_create", ptr, {ptr, i32}), {desc, f->getArg(0)}));
    forward("_destroy", "tgc_destroy", b.getVoidTy(), {ptr});
    forward("_run", "tgc_run", i32, {ptr});
    forward("_input", "tgc_input_data", ptr, {ptr, i32});
    forward("_output", "tgc_output_data", ptr, {ptr, i32});
    forward("_last_error", "tgc_last_error", ptr, {});
    if (!kv_position.empty()) {
      forward("_kv_length", "tgc_kv_length", i64, {ptr});
      forward("_set_kv_length", "tgc_set_kv_length", i32, {ptr, i64});
      forward("_reset", "tgc_reset_state", i32, {ptr});
    }
    if (has_llm_api(m)) {
      forward("_eval", "tgc_llm_eval", i32, {ptr, ptr, i64});
      forward("_logits", "tgc_llm_logits", ptr, {ptr, ptr}, {d.null()});  // n_vocab: NAME_N_VOCAB
      forward("_last_logits", "tgc_llm_last_logits", ptr, {ptr});
      if (logit_rows >= 0) forward("_all_logits", "tgc_llm_all_logits", i32, {ptr, i32});
      forward("_sample", "tgc_llm_sample", i32, {ptr, ptr, ptr});
    }
    if (m.vocab) {
      forward("_tokenize", "tgc_tokenize_text", i64, {ptr, ptr, i64, i32, ptr, i64});
      forward("_detokenize", "tgc_detokenize", i64, {ptr, i32, ptr, i64});
    }
    forward("_set_input_shape", "tgc_set_input_shape", i32, {ptr, i32, i32, ptr});
    // Shapes and names come from per-model tables.
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
  write_object(*mod, tm.get(), object_path);
  return weights_layout.bytes;
}

}  // namespace tgc
