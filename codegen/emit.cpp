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

BufferTable buffer_table(const Model& m, const Schedule& s) {
  BufferTable table;
  for (const auto& in : m.inputs) table.add(in.tensor.uop()->ival());
  for (int64_t o : s.outputs) table.add(o);
  for (const Kernel& k : s.kernels) {
    table.add(k.output);
    for (int64_t b : k.inputs) table.add(b);
  }
  return table;
}

// What the buffer entries of the model's inputs and outputs carry beside the graph's buffer info.
struct IoBufferFacts {
  std::map<int64_t, std::string> name;                // outputs are named by the model
  std::set<int64_t> batched;                          // buffers holding one sample of a run-time batch
  std::map<int64_t, std::vector<int32_t>> dim_vars;   // input/output buffer -> VAR slot per dim
  std::map<int64_t, std::vector<int64_t>> dim_sizes;  // output buffer -> tables of derived dims
};

IoBufferFacts io_buffer_facts(const Model& m, const Schedule& s) {
  IoBufferFacts io;
  for (size_t i = 0; i < s.outputs.size(); ++i) io.name[s.outputs[i]] = m.outputs[i].name;
  for (size_t i = 0; i < m.batched_inputs.size(); ++i)
    if (m.batched_inputs[i]) io.batched.insert(m.inputs[i].tensor.uop()->ival());
  for (size_t i = 0; i < m.batched_outputs.size(); ++i)
    if (m.batched_outputs[i]) io.batched.insert(s.outputs[i]);
  for (size_t i = 0; i < m.input_dim_vars.size(); ++i)
    if (!m.input_dim_vars[i].empty()) io.dim_vars[m.inputs[i].tensor.uop()->ival()] = m.input_dim_vars[i];
  for (size_t i = 0; i < m.output_dim_vars.size(); ++i)
    if (!m.output_dim_vars[i].empty()) io.dim_vars[s.outputs[i]] = m.output_dim_vars[i];
  for (size_t i = 0; i < m.output_dim_sizes.size(); ++i)
    if (!m.output_dim_sizes[i].empty()) io.dim_sizes[s.outputs[i]] = m.output_dim_sizes[i];
  return io;
}

// The run-time dims (VARs) as the model description lists them; an empty list is a null table.
struct VarTables {
  std::vector<llvm::Constant*> names;
  std::vector<int64_t> max;
  std::vector<int32_t> kv_position;  // {length VAR, count input, logit rows VAR or -1}
  int32_t logit_rows = -1;
  std::vector<int32_t> source;  // buffer indices of the values the model computes, or -1
  std::vector<int64_t> step;    // --dynamic NAME=MAX/STEP
  std::vector<int64_t> min;     // where the model's structure holds (model/dim_axes)
};

// One object file's LLVM module: the model description's tables, then the entry points.
class ObjectEmitter {
 public:
  ObjectEmitter(const ModelObject& mo, const BufferTable& table, const WeightLayout& weights,
                const std::string& weights_symbol)
      : mo_(mo),
        m_(mo.model),
        g_(*mo.model.graph),
        table_(table),
        weights_(weights),
        weights_symbol_(weights_symbol),
        mod_(std::make_unique<llvm::Module>("tgc_model", ctx_)),
        // main() and the library's entry points run before the runtime has checked the CPU's
        // features (tgc_create): they are built for the baseline, the kernels for --cpu.
        tm_(make_target_machine(mo.target.triple, baseline_cpu(mo.target.triple))),
        d_(*mod_),
        b_(ctx_) {
    mod_->setTargetTriple(mo.target.triple);
    mod_->setDataLayout(tm_->createDataLayout());
  }

  llvm::Constant* model_desc() {
    std::vector<llvm::Constant*> launches = launch_entries();
    std::vector<llvm::Constant*> buffers = buffer_entries();
    std::vector<int32_t> ins, outs;
    for (const auto& in : m_.inputs) ins.push_back(table_.index.at(in.tensor.uop()->ival()));
    for (int64_t o : mo_.schedule.outputs) outs.push_back(table_.index.at(o));
    vars_ = var_tables();
    llvm::Constant* vocab = vocab_entry();
    llvm::Constant* weights = weights_reference();
    const VarTables& v = vars_;
    // The CPU features the kernels may use, which the runtime checks (GPU targets run no CPU kernels).
    const bool cpu = mo_.target.desc->dialect == Dialect::LlvmCpu;
    std::string features;
    for (const std::string& f : mo_.target.cpu_features) features += (features.empty() ? "" : ",") + f;
    auto* init = llvm::ConstantStruct::get(
        d_.desc_t(),
        {d_.I32(TGC_ABI_VERSION),
         d_.str(mo_.name),
         d_.runtime_symbol(mo_.target.desc->runtime_backend),
         d_.I32(int64_t(buffers.size())),
         d_.array(d_.buffer_t(), buffers, "buffers"),
         d_.I32(int64_t(launches.size())),
         d_.array(d_.launch_t(), launches, "launches"),
         d_.I32(int64_t(ins.size())),
         d_.i32s(ins, "inputs"),
         d_.I32(int64_t(outs.size())),
         d_.i32s(outs, "outputs"),
         d_.I64(mo_.plan.arena_bytes),
         weights,
         d_.I64(weights_.bytes),
         mo_.weights_file.empty() ? d_.null() : d_.str(mo_.weights_file),
         m_.batch_dim.empty() ? d_.null() : d_.str(m_.batch_dim),
         d_.I32(int64_t(v.names.size())),
         v.names.empty()
             ? d_.null()
             : d_.global(llvm::ConstantArray::get(llvm::ArrayType::get(d_.ptr_, v.names.size()), v.names), "var_names"),
         d_.i64s(v.max, "var_max"),
         d_.I32(table_.index.count(g_.vars_buffer()) ? table_.index.at(g_.vars_buffer()) : -1),
         v.kv_position.empty() ? d_.null() : d_.i32s(v.kv_position, "kv_position"),
         vocab,
         v.source.empty() ? d_.null() : d_.i32s(v.source, "var_source"),
         v.step.empty() ? d_.null() : d_.i64s(v.step, "var_step"),
         v.min.empty() ? d_.null() : d_.i64s(v.min, "var_min"),
         cpu ? d_.str(mo_.target.cpu) : d_.null(),
         cpu && !features.empty() ? d_.str(features) : d_.null()});
    return d_.global(init, "desc");
  }

  // main() for executables: a model with a KV cache gets the language-model command line; others
  // link without it.
  void main_entry(llvm::Constant* desc) {
    auto* i32 = b_.getInt32Ty();
    auto* ptr = b_.getPtrTy();
    auto* f = define("main", i32, {i32, ptr});
    const char* entry = vars_.kv_position.empty() && !m_.vocab ? "tgc_main" : "tgc_llm_main";
    b_.CreateRet(b_.CreateCall(declare(entry, i32, {ptr, i32, ptr}), {desc, f->getArg(0), f->getArg(1)}));
  }

  // NAME_* for shared libraries: wrappers of the runtime's API with the model's description bound.
  void library_api(llvm::Constant* desc) {
    auto* i32 = b_.getInt32Ty();
    auto* i64 = b_.getInt64Ty();
    auto* ptr = b_.getPtrTy();
    auto* f = define(mo_.name + "_create", ptr, {i32});
    b_.CreateRet(b_.CreateCall(declare("tgc_create", ptr, {ptr, i32}), {desc, f->getArg(0)}));
    forward("_destroy", "tgc_destroy", b_.getVoidTy(), {ptr});
    forward("_run", "tgc_run", i32, {ptr});
    forward("_input", "tgc_input_data", ptr, {ptr, i32});
    forward("_output", "tgc_output_data", ptr, {ptr, i32});
    forward("_last_error", "tgc_last_error", ptr, {});
    if (!vars_.kv_position.empty()) {
      forward("_kv_length", "tgc_kv_length", i64, {ptr});
      forward("_set_kv_length", "tgc_set_kv_length", i32, {ptr, i64});
      forward("_reset", "tgc_reset_state", i32, {ptr});
    }
    if (has_llm_api(m_)) {
      forward("_eval", "tgc_llm_eval", i32, {ptr, ptr, i64});
      forward("_logits", "tgc_llm_logits", ptr, {ptr, ptr}, {d_.null()});  // n_vocab: NAME_N_VOCAB
      forward("_last_logits", "tgc_llm_last_logits", ptr, {ptr});
      if (vars_.logit_rows >= 0) forward("_all_logits", "tgc_llm_all_logits", i32, {ptr, i32});
      forward("_sample", "tgc_llm_sample", i32, {ptr, ptr, ptr});
    }
    if (m_.vocab) {
      forward("_tokenize", "tgc_tokenize_text", i64, {ptr, ptr, i64, i32, ptr, i64});
      forward("_detokenize", "tgc_detokenize", i64, {ptr, i32, ptr, i64});
      forward("_chat_apply_template", "tgc_chat_apply_template", i64, {ptr, ptr, ptr, i64, i32, ptr, i64});
    }
    forward("_set_input_shape", "tgc_set_input_shape", i32, {ptr, i32, i32, ptr});
    io_accessors(m_.inputs, m_.batched_inputs, m_.input_dim_vars, "input");
    io_accessors(m_.outputs, m_.batched_outputs, m_.output_dim_vars, "output");
  }

  void write(const std::string& object_path) {
    std::string verify;
    llvm::raw_string_ostream vs(verify);
    if (llvm::verifyModule(*mod_, &vs)) throw Error("internal error: invalid LLVM module: " + verify.substr(0, 500));
    optimize(*mod_, tm_.get());
    write_object(*mod_, tm_.get(), object_path);
  }

 private:
  std::vector<llvm::Constant*> launch_entries() {
    const bool gpu = mo_.target.desc->dialect != Dialect::LlvmCpu;
    std::vector<llvm::Constant*> launches;
    for (const KernelLaunch& l : mo_.launches) {
      std::vector<int32_t> args;
      for (int64_t b : l.args) args.push_back(table_.index.at(b));
      llvm::Constant* fn = d_.null();
      if (!gpu) {
        auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {d_.ptr_, d_.i64_, d_.i64_}, false);
        auto* f = llvm::cast<llvm::Function>(mod_->getOrInsertFunction(l.cpu_symbol, type).getCallee());
        f->setVisibility(llvm::GlobalValue::HiddenVisibility);  // defined in the kernel objects
        fn = f;
      }
      launches.push_back(llvm::ConstantStruct::get(
          d_.launch_t(), {d_.str(l.name), fn, gpu ? d_.bytes(l.blob, l.name + ".blob") : d_.null(),
                          d_.I64(gpu ? int64_t(l.blob.size()) : 0), d_.I32(int64_t(args.size())),
                          d_.i32s(args, l.name + ".args"), d_.a3(l.global), d_.a3(l.local), d_.I32(l.outer_var),
                          d_.I32(l.outer_step), d_.I32(l.runs_var), d_.I64(l.runs_from), d_.I64(l.runs_until),
                          d_.I32(l.sets_var + 1), d_.I32(l.runs_if_var + 1), d_.I64(l.runs_if_value),
                          l.fallback_blob.empty() ? d_.null() : d_.bytes(l.fallback_blob, l.name + ".fallback"),
                          d_.I64(int64_t(l.fallback_blob.size()))}));
    }
    return launches;
  }

  std::vector<llvm::Constant*> buffer_entries() {
    IoBufferFacts io = io_buffer_facts(m_, mo_.schedule);
    std::vector<llvm::Constant*> buffers;
    for (int64_t b : table_.ids) {
      const BufferInfo& info = g_.buffer(b);
      int storage = TGC_STORAGE_ARENA;
      int64_t offset = 0;
      if (info.kind == BufferKind::Weight)
        storage = info.image ? TGC_STORAGE_IMAGE : TGC_STORAGE_WEIGHT, offset = weights_.offset.at(b);
      else if (info.kind == BufferKind::Input)
        storage = TGC_STORAGE_INPUT;
      else if (info.kind == BufferKind::Output)
        storage = TGC_STORAGE_OUTPUT;
      else if (info.kind == BufferKind::State)
        storage = TGC_STORAGE_STATE;
      else
        offset = mo_.plan.arena_offset.at(b);
      std::string bname = io.name.count(b) ? io.name.at(b) : info.name;
      buffers.push_back(llvm::ConstantStruct::get(
          d_.buffer_t(),
          {d_.str(bname), d_.I32(int64_t(info.dtype)), d_.I32(int64_t(info.shape.size())), d_.i64s(info.shape, "shape"),
           d_.I32(storage), d_.I64(offset), d_.I64(numel(info.shape) * dtype_size(info.dtype)),
           d_.I32(io.batched.count(b)), io.dim_vars.count(b) ? d_.i32s(io.dim_vars.at(b), "dim_vars") : d_.null(),
           io.dim_sizes.count(b) ? d_.i64s(io.dim_sizes.at(b), "dim_sizes") : d_.null()}));
    }
    return buffers;
  }

  VarTables var_tables() {
    VarTables v;
    for (const UOp* x : g_.vars()) v.names.push_back(d_.str(x->var().name)), v.max.push_back(x->var().max);
    for (const UOp* x : g_.vars()) {
      if (x->var().name == m_.kv_length_var) v.kv_position = {int32_t(g_.var_slot(x)), int32_t(m_.kv_count_input)};
      if (x->var().name == m_.logit_rows_var) v.logit_rows = int32_t(g_.var_slot(x));
    }
    if (!m_.kv_length_var.empty() && v.kv_position.empty())
      throw Error("internal error: KV length dim '" + m_.kv_length_var + "' is not a VAR");
    if (!m_.logit_rows_var.empty() && v.logit_rows < 0)
      throw Error("internal error: logit rows dim '" + m_.logit_rows_var + "' is not a VAR");
    if (!v.kv_position.empty()) v.kv_position.push_back(v.logit_rows);
    for (int64_t b : mo_.var_source) v.source.push_back(b < 0 ? -1 : table_.index.at(b));
    if (std::all_of(v.source.begin(), v.source.end(), [](int32_t b) { return b < 0; })) v.source.clear();
    for (const UOp* x : g_.vars()) v.step.push_back(g_.var_step(x));
    if (std::all_of(v.step.begin(), v.step.end(), [](int64_t s) { return s == 1; })) v.step.clear();
    for (const UOp* x : g_.vars()) v.min.push_back(g_.var_min(x));  // (the runtime takes 0 for computed VARs)
    if (std::all_of(v.min.begin(), v.min.end(), [&](int64_t s) { return s <= 1; })) v.min.clear();
    return v;
  }

  llvm::Constant* vocab_entry() {
    if (!m_.vocab) return d_.null();
    const Vocab& v = *m_.vocab;
    return d_.global(
        llvm::ConstantStruct::get(
            d_.vocab_t(),
            {d_.I32(v.n_tokens()), d_.bytes(v.text, "vocab.text"), d_.i64s(v.offsets, "vocab.offsets"),
             d_.f32s(v.scores, "vocab.scores"), d_.i32s(v.types, "vocab.types"), d_.I32(v.bos), d_.I32(v.eos),
             d_.I32(v.unk), d_.I32(v.add_bos), d_.I32(v.add_space_prefix), d_.I32(v.model), d_.I32(v.pre),
             d_.I32(v.ignore_merges), d_.I32(v.n_merges()), d_.i32s(v.merges, "vocab.merges"),
             d_.I32(v.rstrip_specials), v.chat_template.empty() ? d_.null() : d_.str(v.chat_template)}),
        "vocab");
  }

  // Embedded weights are defined by the weights object; external ones are read at run time.
  llvm::Constant* weights_reference() {
    if (!mo_.weights_file.empty() || weights_.bytes == 0) return d_.null();
    auto* gv = new llvm::GlobalVariable(*mod_, llvm::ArrayType::get(llvm::Type::getInt8Ty(ctx_), 0), true,
                                        llvm::GlobalValue::ExternalLinkage, nullptr, weights_symbol_);
    gv->setVisibility(llvm::GlobalValue::HiddenVisibility);
    return gv;
  }

  llvm::FunctionCallee declare(const char* fname, llvm::Type* ret, std::vector<llvm::Type*> params) {
    return mod_->getOrInsertFunction(fname, llvm::FunctionType::get(ret, params, false));
  }

  llvm::Function* define(const std::string& fname, llvm::Type* ret, std::vector<llvm::Type*> params) {
    auto* f = llvm::Function::Create(llvm::FunctionType::get(ret, params, false), llvm::Function::ExternalLinkage,
                                     fname, *mod_);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
    return f;
  }

  // NAME_suffix(args...) { return runtime_fn(args..., extra...); }
  void forward(const std::string& suffix, const char* runtime_fn, llvm::Type* ret, std::vector<llvm::Type*> params,
               std::vector<llvm::Value*> extra = {}) {
    auto* fn = define(mo_.name + suffix, ret, params);
    std::vector<llvm::Value*> args;
    for (auto& a : fn->args()) args.push_back(&a);
    std::vector<llvm::Type*> callee_params = params;
    for (llvm::Value* x : extra) args.push_back(x), callee_params.push_back(x->getType());
    auto* call = b_.CreateCall(declare(runtime_fn, ret, callee_params), args);
    if (ret->isVoidTy())
      b_.CreateRetVoid();
    else
      b_.CreateRet(call);
  }

  // NAME_kind_name(i) and NAME_kind_shape(i, dims) over per-model tables of the inputs' or the
  // outputs' names and shapes.
  void io_accessors(const std::vector<NamedTensor>& v, const std::vector<bool>& batched,
                    const std::vector<std::vector<int32_t>>& vars, const std::string& kind) {
    auto* ptr = b_.getPtrTy();
    std::vector<llvm::Constant*> names, shapes;
    std::vector<int32_t> ranks;
    for (size_t i = 0; i < v.size(); ++i) {
      const NamedTensor& t = v[i];
      names.push_back(d_.str(t.name));
      Shape sh = declared_shape(t, at_or(batched, i, false), at_or(vars, i, {}));
      sh.resize(8, 0);
      shapes.push_back(d_.i64s(sh, "ioshape"));
      ranks.push_back(int32_t(t.tensor.shape().size()));
    }
    auto* names_g =
        d_.global(llvm::ConstantArray::get(llvm::ArrayType::get(ptr, names.size()), names), kind + "_names");
    auto* shapes_g =
        d_.global(llvm::ConstantArray::get(llvm::ArrayType::get(ptr, shapes.size()), shapes), kind + "_shapes");
    auto* ranks_g = d_.i32s(ranks, kind + "_ranks");
    int64_t n = int64_t(v.size());
    io_name_accessor(kind, names_g, n);
    io_shape_accessor(kind, shapes_g, ranks_g, n);
  }

  // NAME_kind_name(i): i in range ? names[i] : NULL
  void io_name_accessor(const std::string& kind, llvm::Constant* names, int64_t n) {
    auto* ptr = b_.getPtrTy();
    auto* fn = define(mo_.name + "_" + kind + "_name", ptr, {b_.getInt32Ty()});
    auto* ok = b_.CreateICmpULT(fn->getArg(0), b_.getInt32(uint32_t(n)));
    auto* safe = b_.CreateSelect(ok, fn->getArg(0), b_.getInt32(0));
    auto* nm = b_.CreateLoad(ptr, b_.CreateGEP(ptr, names, {b_.CreateZExt(safe, b_.getInt64Ty())}));
    b_.CreateRet(b_.CreateSelect(ok, nm, d_.null()));
  }

  // NAME_kind_shape(i, dims): copies 8 dims, returns the rank (-1 when out of range).
  void io_shape_accessor(const std::string& kind, llvm::Constant* shapes, llvm::Constant* ranks, int64_t n) {
    auto* i32 = b_.getInt32Ty();
    auto* ptr = b_.getPtrTy();
    auto* fn = define(mo_.name + "_" + kind + "_shape", i32, {i32, ptr});
    auto* ok = b_.CreateICmpULT(fn->getArg(0), b_.getInt32(uint32_t(n)));
    auto* safe = b_.CreateZExt(b_.CreateSelect(ok, fn->getArg(0), b_.getInt32(0)), b_.getInt64Ty());
    auto* sp = b_.CreateLoad(ptr, b_.CreateGEP(ptr, shapes, {safe}));
    auto* rank = b_.CreateLoad(i32, b_.CreateGEP(i32, ranks, {safe}));
    auto* copy = llvm::BasicBlock::Create(ctx_, "copy", fn);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", fn);
    b_.CreateCondBr(ok, copy, done);
    b_.SetInsertPoint(copy);
    b_.CreateMemCpy(fn->getArg(1), llvm::MaybeAlign(8), sp, llvm::MaybeAlign(8), 64);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    auto* phi = b_.CreatePHI(i32, 2);
    phi->addIncoming(b_.getInt32(uint32_t(-1)), &fn->getEntryBlock());
    phi->addIncoming(rank, copy);
    b_.CreateRet(phi);
  }

  const ModelObject& mo_;
  const Model& m_;
  const Graph& g_;
  const BufferTable& table_;
  const WeightLayout& weights_;
  const std::string& weights_symbol_;
  llvm::LLVMContext ctx_;
  std::unique_ptr<llvm::Module> mod_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  DescBuilder d_;
  llvm::IRBuilder<> b_;
  VarTables vars_;  // set by model_desc()
};

}  // namespace

int64_t emit_model_object(const ModelObject& mo, const std::string& object_path, const std::string& weights_path) {
  BufferTable table = buffer_table(mo.model, mo.schedule);
  WeightLayout weights = layout_weights(*mo.model.graph, table.ids);
  std::string weights_symbol = "tgc_weights_" + mo.name;
  if (mo.weights_file.empty())
    write_weights_object(*mo.model.graph, weights, arch_of(mo.target.triple), weights_symbol, weights_path);
  else
    write_weights_file(*mo.model.graph, weights, weights_path);

  ObjectEmitter e(mo, table, weights, weights_symbol);
  llvm::Constant* desc = e.model_desc();
  if (!mo.shared)
    e.main_entry(desc);
  else
    e.library_api(desc);
  e.write(object_path);
  return weights.bytes;
}

}  // namespace tgc
