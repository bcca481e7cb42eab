#include "codegen/cuda/render_ptx.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <numbers>
#include <array>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/llvm/llvm_expr.h"
#include "codegen/llvm/target.h"
#include "ir/error.h"
#include "passes/tensor_cores.h"

namespace tgc {

namespace {
using llvm::Value;

constexpr unsigned kGlobal = 1, kShared = 3;  // NVPTX address spaces

// The CUDA shell around the expression emitter: thread ids, the id decode of the GPU lowering,
// early exits, loops, accumulators, shared-memory group reduces and gated stores.
class PtxRenderer : LlvmExprHooks {
 public:
  PtxRenderer(llvm::Module& m, const Graph& g, const GpuProgram& k, std::string arch)
      : m_(m),
        g_(g),
        k_(k),
        p_(*k.program),
        arch_(std::move(arch)),
        c_(m.getContext()),
        b_(c_),
        e_(b_, *this, p_.name) {
    e_.allow_contraction();  // multiply-adds fuse, as nvcc's default (-fmad=true) lets them
  }

  void run() {
    auto* i64 = b_.getInt64Ty();
    std::vector<llvm::Type*> params(p_.args.size(), b_.getPtrTy(kGlobal));
    fn_ = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                 llvm::Function::ExternalLinkage, p_.name, m_);
    // The buffers of one kernel never overlap (the memory plan keeps them apart while it runs):
    // noalias lets read-only buffers go through the non-coherent cache (ld.global.nc).
    // Every buffer starts at least 64 bytes aligned (arena offsets, weight offsets, allocations):
    // 16 lets the load/store vectorizer merge an UPCAST's copies into 128-bit accesses.
    for (size_t i = 0; i < p_.args.size(); ++i) {
      fn_->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
      fn_->addParamAttr(unsigned(i), llvm::Attribute::getWithAlignment(c_, llvm::Align(16)));
      args_[p_.args[i]] = fn_->getArg(unsigned(i));
    }
    annotate("kernel", 1);
    annotate("maxntidx", int(ptx_block_size(p_)));
    b_.SetInsertPoint(llvm::BasicBlock::Create(c_, "entry", fn_));
    exit_ = llvm::BasicBlock::Create(c_, "exit", fn_);

    Value* tid = b_.CreateZExt(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), i64);
    Value* block = b_.CreateZExt(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), i64);
    if (p_.tensor_cores) {
      if (p_.tensor_cores->tiles.cuda_cores)
        cuda_core_tiles(tid, block);
      else if (warpgroup_fits())
        warpgroup_tiles(tid, block);
      else
        tensor_core_tiles(tid, block);
      b_.CreateBr(exit_);
      b_.SetInsertPoint(exit_);
      b_.CreateRetVoid();
      return;
    }
    for (const UOp* v : read_vars()) e_.set(v, var_value(v));
    compute_range_ends();
    if (k_.work_groups) {
      decode(k_.local_decode, tid);
      decode(k_.global_decode, block);
    } else {
      Value* gid = b_.CreateAdd(b_.CreateMul(block, b_.getInt64(uint64_t(ptx_block_size(p_)))), tid);
      leave_if(b_.CreateICmpUGE(gid, b_.getInt64(uint64_t(k_.global_size))));
      decode(k_.global_decode, gid);
    }
    // Whole work-groups past a run-time dim leave together: no barrier waits for them.
    for (const UOp* r : k_.bounded) leave_if(b_.CreateICmpUGE(value(r), value(r->src[0])));
    stmts(p_.body);
    b_.CreateBr(exit_);
    b_.SetInsertPoint(exit_);
    b_.CreateRetVoid();
  }

 private:
  void annotate(const char* key, int v) {
    llvm::Metadata* md[] = {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(c_, key),
                            llvm::ConstantAsMetadata::get(b_.getInt32(uint32_t(v)))};
    m_.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(c_, md));
  }

  Value* sreg(llvm::Intrinsic::ID id) { return b_.CreateIntrinsic(id, {}, {}); }

  void decode(const std::vector<IdDecode>& ranges, Value* id) {
    for (const IdDecode& r : ranges) {
      Value* n = b_.getInt64(uint64_t(r.extent));
      e_.set(r.range, b_.CreateURem(id, n));
      id = b_.CreateUDiv(id, n);
    }
  }

  // Ranges ending at an expression of VARs (a run-time size through a pad or a window, which no
  // statement computes) get it here, in the entry block, which dominates every use.
  void compute_range_ends() {
    std::vector<const UOp*> ends;
    for (const UOp* r : k_.bounded) ends.push_back(r->src[0]);
    std::function<void(const std::vector<LStmt>&)> loops = [&](const std::vector<LStmt>& body) {
      for (const LStmt& s : body)
        if (s.kind == LStmt::Loop) ends.push_back(s.u->src[0]), loops(s.body);
    };
    loops(p_.body);
    for (const UOp* u : toposort(ends))
      if (!e_.has(u) && u->op != Op::Const) e_.set(u, e_.compute(u));
  }

  void leave_if(Value* cond) {
    auto* cont = llvm::BasicBlock::Create(c_, "go", fn_);
    b_.CreateCondBr(cond, exit_, cont);
    b_.SetInsertPoint(cont);
  }

  // `for (i = 0; i < n; ++i) body(i)` with an alloca counter (mem2reg makes it a phi).
  template <typename F>
  void loop(Value* n, F body) {
    auto* i64 = b_.getInt64Ty();
    llvm::AllocaInst* slot = entry_alloca(i64);
    b_.CreateStore(b_.getInt64(0), slot);
    auto* head = llvm::BasicBlock::Create(c_, "loop", fn_);
    auto* bodyb = llvm::BasicBlock::Create(c_, "body", fn_);
    auto* done = llvm::BasicBlock::Create(c_, "done", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    Value* i = b_.CreateLoad(i64, slot);
    b_.CreateCondBr(b_.CreateICmpSLT(i, n), bodyb, done);
    b_.SetInsertPoint(bodyb);
    body(i);
    b_.CreateStore(b_.CreateAdd(i, b_.getInt64(1), "", true, true), slot);
    b_.CreateBr(head);
    b_.SetInsertPoint(done);
  }

  llvm::AllocaInst* entry_alloca(llvm::Type* t) {
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    return entry.CreateAlloca(t);
  }

  void stmts(const std::vector<LStmt>& body) {
    for (const LStmt& s : body) {
      switch (s.kind) {
        case LStmt::Let: e_.set(s.u, e_.compute(s.u)); break;
        case LStmt::Loop:
          loop(value(s.u->src[0]), [&](Value* i) {
            e_.set(s.u, i);
            stmts(s.body);
          });
          break;
        case LStmt::AccInit:
          acc_[s.u] = entry_alloca(llvm_type(c_, s.u->dtype, false));
          b_.CreateStore(e_.identity(s.u->reduce().op, s.u->dtype), acc_[s.u]);
          break;
        case LStmt::AccUpdate: {
          llvm::AllocaInst* a = acc_.at(s.u);
          b_.CreateStore(e_.accumulate(s.u, b_.CreateLoad(a->getAllocatedType(), a), s.value), a);
          break;
        }
        case LStmt::GroupReduce: group_reduce(s.u); break;
        case LStmt::Store: store(s.u); break;
      }
    }
  }

  llvm::GlobalVariable* shared_array(llvm::Type* t, int64_t n) {
    auto* arr = llvm::ArrayType::get(t, uint64_t(n));
    auto* sm = new llvm::GlobalVariable(m_, arr, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(arr),
                                        "sm_" + std::to_string(shared_++), nullptr, llvm::GlobalValue::NotThreadLocal,
                                        kShared);
    sm->setAlignment(llvm::Align(16));
    return sm;
  }

  // Partials meet in shared memory between two barriers (the second lets the memory be reused);
  // every thread folds the slots of its own GROUP siblings, so all of them end with the total.
  // Where the siblings are runs of whole warps (consecutive thread ids), each warp first sums
  // with shuffles, and shared memory only meets the warps' sums: a fold over 256 slots per
  // thread cost more than the matrix-vector product it ended.
  void group_reduce(const UOp* u) {
    GroupReduceSlots slots = group_reduce_slots(k_, u);
    llvm::Type* t = llvm_type(c_, u->dtype, false);
    if (int64_t run = subgroup_run(slots); run >= 32 && run % 32 == 0 && shuffles(u->dtype)) {
      warp_reduce(u, run, t);
      return;
    }
    llvm::GlobalVariable* sm = shared_array(t, slots.count);
    Value* mine = b_.getInt64(0);
    for (const SlotTerm& term : slots.terms)
      mine = b_.CreateAdd(mine, b_.CreateMul(value(term.range), b_.getInt64(uint64_t(term.stride))));
    llvm::AllocaInst* a = acc_.at(u);
    b_.CreateStore(b_.CreateLoad(t, a), b_.CreateGEP(t, sm, mine));
    barrier();
    b_.CreateStore(e_.identity(u->reduce().op, u->dtype), a);
    fold(u, slots, 0, b_.getInt64(0), sm, t);
    barrier();
  }

  static bool shuffles(DType t) { return t == DType::F32 || t == DType::I32 || t == DType::U32; }

  // A butterfly over the warp's 32 lanes leaves each with the warp's total; runs of more warps
  // meet in shared memory, a slot per warp.
  void warp_reduce(const UOp* u, int64_t run, llvm::Type* t) {
    llvm::AllocaInst* a = acc_.at(u);
    auto id =
        u->dtype == DType::F32 ? llvm::Intrinsic::nvvm_shfl_sync_bfly_f32 : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32;
    Value* v = b_.CreateLoad(t, a);
    for (int lanes = 16; lanes >= 1; lanes /= 2) {
      Value* other =
          b_.CreateIntrinsic(id, {}, {b_.getInt32(0xffffffffu), v, b_.getInt32(uint32_t(lanes)), b_.getInt32(31)});
      v = e_.binary(u->reduce().op, u->dtype, v, other);
    }
    b_.CreateStore(v, a);
    if (run == 32) return;
    llvm::GlobalVariable* sm = shared_array(t, ptx_block_size(p_) / 32);
    Value* tid = b_.CreateZExt(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), b_.getInt64Ty());
    Value* warp = b_.CreateUDiv(tid, b_.getInt64(32));
    auto *lead = llvm::BasicBlock::Create(c_, "lane0", fn_), *joined = llvm::BasicBlock::Create(c_, "lanes", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateURem(tid, b_.getInt64(32)), b_.getInt64(0)), lead, joined);
    b_.SetInsertPoint(lead);
    b_.CreateStore(v, b_.CreateGEP(t, sm, warp));
    b_.CreateBr(joined);
    b_.SetInsertPoint(joined);
    barrier();
    b_.CreateStore(e_.identity(u->reduce().op, u->dtype), a);
    Value* first = b_.CreateMul(b_.CreateUDiv(tid, b_.getInt64(uint64_t(run))), b_.getInt64(uint64_t(run / 32)));
    loop(b_.getInt64(uint64_t(run / 32)), [&](Value* j) {
      Value* w = b_.CreateLoad(t, b_.CreateGEP(t, sm, b_.CreateAdd(first, j)));
      b_.CreateStore(e_.binary(u->reduce().op, u->dtype, b_.CreateLoad(t, a), w), a);
    });
    barrier();
  }

  // Loops over the folded terms from `i` on, then combines sm[base] into the accumulator.
  void fold(const UOp* u, const GroupReduceSlots& slots, size_t i, Value* base, llvm::GlobalVariable* sm,
            llvm::Type* t) {
    if (i == slots.terms.size()) {
      llvm::AllocaInst* a = acc_.at(u);
      Value* v = b_.CreateLoad(t, b_.CreateGEP(t, sm, base));
      b_.CreateStore(e_.binary(u->reduce().op, u->dtype, b_.CreateLoad(t, a), v), a);
      return;
    }
    const SlotTerm& term = slots.terms[i];
    Value* stride = b_.getInt64(uint64_t(term.stride));
    if (!term.folded) {
      fold(u, slots, i + 1, b_.CreateAdd(base, b_.CreateMul(value(term.range), stride)), sm, t);
      return;
    }
    loop(b_.getInt64(uint64_t(term.extent)),
         [&](Value* j) { fold(u, slots, i + 1, b_.CreateAdd(base, b_.CreateMul(j, stride)), sm, t); });
  }

  void barrier() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

  // A gated store (a PADTO axis) skips the padding; with GROUP ranges only the first thread stores.
  void store(const UOp* st) {
    Value* gate = st->src.size() > 3 ? value(st->src[3]) : nullptr;
    for (const UOp* r : k_.store_gate) {
      Value* first = b_.CreateICmpEQ(value(r), b_.getInt64(0));
      gate = gate ? b_.CreateAnd(gate, first) : first;
    }
    llvm::BasicBlock* merge = nullptr;
    if (gate) {
      auto* then = llvm::BasicBlock::Create(c_, "store", fn_);
      merge = llvm::BasicBlock::Create(c_, "stored", fn_);
      b_.CreateCondBr(gate, then, merge);
      b_.SetInsertPoint(then);
    }
    Value* v = value(st->src[2]);
    DType t = st->src[2]->dtype;
    if (t == DType::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
    b_.CreateStore(v, b_.CreateGEP(llvm_type(c_, t, true), args_.at(st->src[0]->ival()), value(st->src[1])));
    if (merge) {
      b_.CreateBr(merge);
      b_.SetInsertPoint(merge);
    }
  }

  Value* value(const UOp* u) { return cur_->value(u); }

  // The run-time dims (VARs) the kernel reads from the vars buffer, and one's value there.
  std::vector<const UOp*> read_vars() const {
    return args_.count(g_.vars_buffer()) ? g_.vars() : std::vector<const UOp*>{};
  }
  Value* var_value(const UOp* v) {
    auto* i64 = b_.getInt64Ty();
    return b_.CreateLoad(i64, b_.CreateConstGEP1_64(i64, args_.at(g_.vars_buffer()), uint64_t(g_.var_slot(v))),
                         v->var().name);
  }

  // ---- Whole matrix tiles (the TC action, passes/tensor_cores.h): the kernel is its matrix
  // product's tiles, whose sums then finish the rest of the kernel's expression per element.
  using Ranges = std::unordered_map<const UOp*, Value*>;

  // Each output range's value where block tile `tile` (brows x bcols of the matrix product) starts:
  // columns innermost in the tile index, then rows, then the kernel's other output ranges.
  Ranges tile_origin(Value* tile, int64_t brows, int64_t bcols) {
    const TensorCorePlan& tc = *p_.tensor_cores;
    Ranges at;
    auto take = [&](int64_t extent) {
      Value* v = b_.CreateURem(tile, b_.getInt64(uint64_t(extent)));
      tile = b_.CreateUDiv(tile, b_.getInt64(uint64_t(extent)));
      return v;
    };
    at[tc.n] = b_.CreateMul(take(range_extent(tc.n) / bcols), b_.getInt64(uint64_t(bcols)));
    at[tc.m] = b_.CreateMul(take(range_extent(tc.m) / brows), b_.getInt64(uint64_t(brows)));
    for (auto r = p_.globals.rbegin(); r != p_.globals.rend(); ++r)
      if (*r != tc.m && *r != tc.n) at[*r] = take(range_extent(*r));
    for (const UOp* v : read_vars()) at[v] = var_value(v);  // (run-time dims: read once)
    return at;
  }

  // Evaluates `u` (nothing under the KREDUCE, which is tc_sum_) in a fresh emitter where the
  // ranges are `values`.
  Value* eval_at(const UOp* u, const Ranges& values) {
    LlvmExprEmitter e(b_, *this, p_.name);
    for (const auto& [r, v] : values) e.set(r, v);
    cur_ = &e;
    std::vector<const UOp*> order;
    std::unordered_set<const UOp*> seen;
    std::function<void(const UOp*)> visit = [&](const UOp* x) {
      if (!seen.insert(x).second || x->op == Op::KReduce || e.has(x)) return;
      for (const UOp* s : x->src) visit(s);
      order.push_back(x);
    };
    visit(u);
    for (const UOp* x : order)
      if (x->op != Op::Const && x->op != Op::Buffer) e.set(x, e.compute(x));
    Value* v = u->op == Op::KReduce ? accumulator(u) : e.value(u);
    cur_ = &e_;
    return v;
  }

  // Where the matrix product's rows end: their range's bound, or its run-time size.
  Value* rows_end(const Ranges& values) {
    const UOp* end = p_.tensor_cores->m->src[0];
    return end->is_const() ? c64(end->ival()) : eval_at(end, values);
  }

  // The kernel's store of one output element whose matrix-product sum is `sum` (none for rows
  // past a run-time size).
  void store_output(Value* sum, const Ranges& values) {
    const UOp* m = p_.tensor_cores->m;
    if (!m->src[0]->is_const()) {
      auto* then = llvm::BasicBlock::Create(c_, "row", fn_);
      auto* done = llvm::BasicBlock::Create(c_, "rowdone", fn_);
      b_.CreateCondBr(b_.CreateICmpULT(values.at(m), rows_end(values)), then, done);
      b_.SetInsertPoint(then);
      store_element(sum, values);
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      return;
    }
    store_element(sum, values);
  }
  void store_element(Value* sum, const Ranges& values) {
    const UOp* store = p_.body.back().u;
    tc_sum_ = sum;
    Value* v = eval_at(store->src[2], values);
    Value* where = eval_at(store->src[1], values);
    tc_sum_ = nullptr;
    DType t = store->src[2]->dtype;
    if (t == DType::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
    b_.CreateStore(v, b_.CreateGEP(llvm_type(c_, t, true), args_.at(store->src[0]->ival()), where));
  }

  llvm::GlobalVariable* shared_buffer(llvm::Type* t, int64_t n, const char* name) {
    auto* ty = llvm::ArrayType::get(t, uint64_t(n));
    auto* g = new llvm::GlobalVariable(m_, ty, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(ty),
                                       name, nullptr, llvm::GlobalValue::NotThreadLocal, kShared);
    g->setAlignment(llvm::Align(32));
    return g;
  }

  Value* c64(int64_t v) { return b_.getInt64(uint64_t(v)); }

  // A's and B's element type in memory (tf32 operands are f32).
  llvm::Type* operand_type() {
    DType t = p_.tensor_cores->type;
    return t == DType::F16 ? b_.getHalfTy() : t == DType::BF16 ? b_.getBFloatTy() : b_.getFloatTy();
  }

  // The ranges at step `kt` of `k` along the reduce, from the tile's origin `at`.
  Ranges at_step(const Ranges& at, Value* kt, int64_t k) {
    Ranges values = at;
    values[p_.tensor_cores->k] = b_.CreateMul(kt, c64(k));
    return values;
  }

  // Where operand `load` (tc.a or tc.b) reads at `values`.
  Value* operand_at(const UOp* load, llvm::Type* et, const Ranges& values) {
    return b_.CreateGEP(et, args_.at(load->src[0]->ival()), eval_at(load->src[1], values));
  }

  // `n` f32 accumulators, zeroed (promoted to registers: every index is a constant).
  llvm::AllocaInst* zeroed_accumulators(int64_t n) {
    auto* f32 = b_.getFloatTy();
    llvm::AllocaInst* acc = entry_alloca(llvm::ArrayType::get(f32, uint64_t(n)));
    for (int64_t i = 0; i < n; ++i) b_.CreateStore(llvm::ConstantFP::get(f32, 0.0), acc_slot(acc, i));
    return acc;
  }
  Value* acc_slot(llvm::AllocaInst* acc, int64_t i) {
    return b_.CreateConstGEP2_32(acc->getAllocatedType(), acc, 0, unsigned(i));
  }

  // ---- CUDA cores (TC(0,1) on f32 operands): a block of 256 threads computes a block tile of
  // 16*tm x 16*tn outputs, each thread tm x tn of them in registers, from A's and B's block rows
  // and columns staged in shared memory bk along the reduce at a time (the next step's loads in
  // flight while this one multiplies). A is stored transposed there, so that a thread reads its
  // rows as 4-vectors, as it reads its columns of B: thread (r, c) owns rows 4r..4r+3 of each
  // 64-row band and columns 4c..4c+3 of each 64-column band, so neighbouring threads read
  // neighbouring vectors.
  void cuda_core_tiles(Value* tid, Value* block) {
    const TensorCorePlan& tc = *p_.tensor_cores;
    const TensorCoreTiles& w = tc.tiles;
    auto* f32 = b_.getFloatTy();
    auto* v4 = llvm::FixedVectorType::get(f32, 4);
    const int64_t tm = w.wm, tn = w.wn, BK = w.staged, brows = 16 * tm, bcols = 16 * tn, threads = 256;
    Ranges at = tile_origin(block, brows, bcols);
    Value* tr = b_.CreateUDiv(tid, c64(16));
    Value* tcol = b_.CreateURem(tid, c64(16));
    // Shared memory: A transposed (BK rows of brows, padded by 4), B as it is (BK rows of bcols).
    const int64_t lda_s = brows + 4, ldb_s = bcols + 4;
    llvm::GlobalVariable* sa = shared_buffer(f32, BK * lda_s, "mt_a");
    llvm::GlobalVariable* sb = shared_buffer(f32, BK * ldb_s, "mt_b");
    // This thread's 4-vectors of the block: A's brows x BK and B's BK x bcols, threads apart.
    const int64_t chunks_a = brows * BK / 4 / threads, chunks_b = BK * bcols / 4 / threads;
    if (chunks_a * threads * 4 != brows * BK || chunks_b * threads * 4 != BK * bcols)
      throw Error("cuda codegen: kernel " + p_.name + ": CUDA-core tiles whose staging the threads do not divide");
    auto* regs_ty = llvm::ArrayType::get(v4, uint64_t(chunks_a + chunks_b));
    llvm::AllocaInst* regs = entry_alloca(regs_ty);
    auto reg = [&](int64_t n) { return b_.CreateConstGEP2_32(regs_ty, regs, 0, unsigned(n)); };
    auto fetch = [&](Value* kt) {
      Ranges values = at_step(at, kt, BK);
      Value* a = operand_at(tc.a, f32, values);
      Value* b = operand_at(tc.b, f32, values);
      for (int64_t n = 0; n < chunks_a; ++n) {  // chunk c: row c / (BK/4), reduce offset 4 * (c % (BK/4))
        Value* c = b_.CreateAdd(tid, c64(n * threads));
        Value* off = b_.CreateAdd(b_.CreateMul(b_.CreateUDiv(c, c64(BK / 4)), c64(tc.lda)),
                                  b_.CreateMul(b_.CreateURem(c, c64(BK / 4)), c64(4)));
        b_.CreateStore(b_.CreateAlignedLoad(v4, b_.CreateGEP(f32, a, off), llvm::Align(16)), reg(n));
      }
      for (int64_t n = 0; n < chunks_b; ++n) {  // chunk c: reduce row c / (bcols/4), column 4 * (c % (bcols/4))
        Value* c = b_.CreateAdd(tid, c64(n * threads));
        Value* off = b_.CreateAdd(b_.CreateMul(b_.CreateUDiv(c, c64(bcols / 4)), c64(tc.ldb)),
                                  b_.CreateMul(b_.CreateURem(c, c64(bcols / 4)), c64(4)));
        b_.CreateStore(b_.CreateAlignedLoad(v4, b_.CreateGEP(f32, b, off), llvm::Align(16)), reg(chunks_a + n));
      }
    };
    auto put = [&]() {
      for (int64_t n = 0; n < chunks_a; ++n) {
        Value* c = b_.CreateAdd(tid, c64(n * threads));
        Value *row = b_.CreateUDiv(c, c64(BK / 4)), *k0 = b_.CreateMul(b_.CreateURem(c, c64(BK / 4)), c64(4));
        Value* v = b_.CreateLoad(v4, reg(n));
        for (int64_t q = 0; q < 4; ++q)
          b_.CreateStore(b_.CreateExtractElement(v, uint64_t(q)),
                         b_.CreateGEP(f32, sa, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(k0, c64(q)), c64(lda_s)), row)));
      }
      for (int64_t n = 0; n < chunks_b; ++n) {
        Value* c = b_.CreateAdd(tid, c64(n * threads));
        Value* off = b_.CreateAdd(b_.CreateMul(b_.CreateUDiv(c, c64(bcols / 4)), c64(ldb_s)),
                                  b_.CreateMul(b_.CreateURem(c, c64(bcols / 4)), c64(4)));
        b_.CreateAlignedStore(b_.CreateLoad(v4, reg(chunks_a + n)), b_.CreateGEP(f32, sb, off), llvm::Align(16));
      }
    };
    // The accumulators, tm x tn per thread.
    llvm::AllocaInst* acc = zeroed_accumulators(tm * tn);
    auto acc_at = [&](int64_t i, int64_t j) { return acc_slot(acc, i * tn + j); };
    // Thread (r, c)'s rows: 4r + 64 * band + x; columns 4c + 64 * band + x.
    auto row_of = [&](int64_t i) { return b_.CreateAdd(b_.CreateMul(tr, c64(4)), c64(64 * (i / 4) + i % 4)); };
    auto col_of = [&](int64_t j) { return b_.CreateAdd(b_.CreateMul(tcol, c64(4)), c64(64 * (j / 4) + j % 4)); };
    const int64_t steps = range_extent(tc.k) / BK;
    fetch(c64(0));
    loop(c64(steps), [&](Value* kt) {
      put();
      barrier();
      fetch(b_.CreateSelect(b_.CreateICmpULT(b_.CreateAdd(kt, c64(1)), c64(steps)), b_.CreateAdd(kt, c64(1)), kt));
      for (int64_t kk = 0; kk < BK; ++kk) {
        std::vector<Value*> a, b;
        for (int64_t i = 0; i < tm; i += 4) {
          Value* v = b_.CreateAlignedLoad(v4, b_.CreateGEP(f32, sa, b_.CreateAdd(c64(kk * lda_s), row_of(i))),
                                          llvm::Align(16));
          for (int64_t x = 0; x < 4; ++x) a.push_back(b_.CreateExtractElement(v, uint64_t(x)));
        }
        for (int64_t j = 0; j < tn; j += 4) {
          Value* v = b_.CreateAlignedLoad(v4, b_.CreateGEP(f32, sb, b_.CreateAdd(c64(kk * ldb_s), col_of(j))),
                                          llvm::Align(16));
          for (int64_t x = 0; x < 4; ++x) b.push_back(b_.CreateExtractElement(v, uint64_t(x)));
        }
        for (int64_t i = 0; i < tm; ++i)
          for (int64_t j = 0; j < tn; ++j)
            b_.CreateStore(b_.CreateIntrinsic(llvm::Intrinsic::fma, {f32},
                                              {a[size_t(i)], b[size_t(j)], b_.CreateLoad(f32, acc_at(i, j))}),
                           acc_at(i, j));
      }
      barrier();
    });
    for (int64_t i = 0; i < tm; ++i)
      for (int64_t j = 0; j < tn; ++j) {
        Ranges values = at;
        values[tc.m] = b_.CreateAdd(at[tc.m], row_of(i));
        values[tc.n] = b_.CreateAdd(at[tc.n], col_of(j));
        store_output(b_.CreateLoad(f32, acc_at(i, j)), values);
      }
  }

  // ---- Hopper's warpgroup MMA (--target=cuda:sm_90a): a staged f16 or bf16 block of 4 warps is
  // one warpgroup, which multiplies 64 x BN tiles (wgmma m64nBNk16, f32 accumulators in registers)
  // straight from shared memory. A's BM x 32 and B's 32 x BN tiles of a step travel there by
  // cp.async, two steps ahead, into three stages of shared memory; each stage holds them as wgmma
  // reads them with 64-byte swizzling: atoms of 8 rows of 64 bytes (A: 8 rows of its 32 columns;
  // B, read transposed: 8 rows of 32 of its columns), the 16-byte chunk q of row r at q ^ (r / 2 % 4).
  // H200, f16 4096^3: 0.270 ms (WMMA from shared memory 0.451, wgmma from register-staged
  // tiles 0.404); cp.async frees the registers that staged them: 168 per thread, 3 blocks per SM.
  static constexpr int64_t kWarpgroupStages = 3, kWarpgroupK = 32;

  bool warpgroup_fits() const {
    const TensorCorePlan& tc = *p_.tensor_cores;
    const TensorCoreTiles& w = tc.tiles;
    const int64_t bm = 32 * w.wm, bn = 32 * w.wn;
    return arch_ == "sm_90a" && w.staged && w.warps == 4 && tc.type != DType::F32 && tc.a_row && tc.b_row &&
           !tc.convert && tc.m->src[0]->is_const() && bm % 64 == 0 && bn % 64 == 0 && bn <= 256 &&
           kWarpgroupStages * (bm + bn) * kWarpgroupK * 2 <= 48 * 1024 && range_extent(tc.k) % kWarpgroupK == 0;
  }

  void asm_call(const std::string& text) {
    auto* ty = llvm::FunctionType::get(b_.getVoidTy(), false);
    b_.CreateCall(llvm::InlineAsm::get(ty, text, "~{memory}", true), {});
  }

  // A warpgroup's block tile: BM x BN outputs, `halves` bands of 64 rows, `acc_n` accumulators
  // per thread and band; A's and B's stages in shared memory.
  struct WarpgroupTile {
    int64_t bm, bn, halves, acc_n;
    llvm::Type* et;
    Ranges at;
    llvm::GlobalVariable *sa, *sb;
    llvm::AllocaInst* acc;
  };
  // A 16-byte chunk that a thread copies per step: where it is in global memory (elements from
  // the step's corner) and in a stage (elements).
  struct CopyChunk {
    Value* global;
    Value* shared;
  };

  void warpgroup_tiles(Value* tid, Value* block) {
    const TensorCoreTiles& w = p_.tensor_cores->tiles;
    WarpgroupTile t;
    t.bm = 32 * w.wm, t.bn = 32 * w.wn, t.halves = t.bm / 64, t.acc_n = t.bn / 2;
    t.et = operand_type();
    Value* lane = b_.CreateURem(tid, c64(32));
    Value* warp = b_.CreateUDiv(tid, c64(32));
    t.at = tile_origin(block, t.bm, t.bn);
    // The epilogue reuses A's stages: 4 warps x 16 x 64 floats. Swizzle atoms start 512-aligned.
    t.sa = shared_buffer(t.et, std::max(kWarpgroupStages * t.bm * kWarpgroupK, int64_t(4 * 16 * 64 * 2)), "wg_a");
    t.sb = shared_buffer(t.et, kWarpgroupStages * kWarpgroupK * t.bn, "wg_b");
    t.sa->setAlignment(llvm::Align(1024));
    t.sb->setAlignment(llvm::Align(1024));
    t.acc = zeroed_accumulators(t.halves * t.acc_n);
    const std::vector<CopyChunk> chunks = warpgroup_chunks(t, tid);
    llvm::InlineAsm* mma = wgmma(t);
    // Each step: wait for its stage, let everyone see it, start the copy two steps ahead (into the
    // stage the previous step read, whose multiplies are done), multiply, wait for the multiplies.
    const int64_t steps = range_extent(p_.tensor_cores->k) / kWarpgroupK, ahead = kWarpgroupStages - 1;
    for (int64_t s0 = 0; s0 < ahead; ++s0) warpgroup_copy(t, chunks, c64(s0), c64(s0)), cp_async_commit();
    loop(c64(steps), [&](Value* kt) { warpgroup_step(t, chunks, mma, kt, steps); });
    warpgroup_epilogue(t, lane, warp);
  }

  // The chunks this thread copies per step. A: row r = c / 4, chunk q = c % 4, atom r / 8. B:
  // chunk q = c % 4 of row 8 kg + kr of column block nb (kr = c / 4 % 8, nb = c / 32 % (BN/32),
  // kg = c / BN), atom nb * 4 + kg. A quarter warp fills 128 distinct bytes of an atom.
  std::vector<CopyChunk> warpgroup_chunks(const WarpgroupTile& t, Value* tid) {
    const TensorCorePlan& tc = *p_.tensor_cores;
    const int64_t BK = kWarpgroupK, threads = 128;
    const int64_t chunks_a = t.bm * BK / 8 / threads, chunks_b = BK * t.bn / 8 / threads;
    std::vector<CopyChunk> chunks;
    for (int64_t n = 0; n < chunks_a + chunks_b; ++n) {
      bool is_b = n >= chunks_a;
      Value* c = b_.CreateAdd(tid, c64((is_b ? n - chunks_a : n) * threads));
      Value* q = b_.CreateURem(c, c64(4));
      Value *r, *g, *atom;
      if (!is_b) {
        r = b_.CreateUDiv(c, c64(4));
        g = b_.CreateAdd(b_.CreateMul(r, c64(tc.lda)), b_.CreateMul(q, c64(8)));
        atom = b_.CreateUDiv(r, c64(8));
      } else {
        Value* nb = b_.CreateURem(b_.CreateUDiv(c, c64(32)), c64(t.bn / 32));
        Value* kg = b_.CreateUDiv(c, c64(t.bn));
        r = b_.CreateAdd(b_.CreateURem(b_.CreateUDiv(c, c64(4)), c64(8)), b_.CreateMul(kg, c64(8)));
        g = b_.CreateAdd(b_.CreateMul(r, c64(tc.ldb)),
                         b_.CreateAdd(b_.CreateMul(nb, c64(32)), b_.CreateMul(q, c64(8))));
        atom = b_.CreateAdd(b_.CreateMul(nb, c64(BK / 8)), kg);
      }
      Value* row = b_.CreateURem(r, c64(8));
      Value* swizzled = b_.CreateXor(q, b_.CreateURem(b_.CreateUDiv(row, c64(2)), c64(4)));
      Value* bytes = b_.CreateAdd(b_.CreateMul(atom, c64(512)),
                                  b_.CreateAdd(b_.CreateMul(row, c64(64)), b_.CreateMul(swizzled, c64(16))));
      chunks.push_back({g, b_.CreateUDiv(bytes, c64(2))});
    }
    return chunks;
  }

  // Starts the copies of step kt into `stage` (A's chunks first, then B's).
  void warpgroup_copy(const WarpgroupTile& t, const std::vector<CopyChunk>& chunks, Value* kt, Value* stage) {
    const TensorCorePlan& tc = *p_.tensor_cores;
    const int64_t BK = kWarpgroupK, chunks_a = t.bm * BK / 8 / 128;
    Value* a = operand_at(tc.a, t.et, at_step(t.at, kt, BK));
    Value* bp = operand_at(tc.b, t.et, at_step(t.at, kt, BK));
    for (size_t n = 0; n < chunks.size(); ++n) {
      bool is_a = n < size_t(chunks_a);
      Value* to = b_.CreateAdd(chunks[n].shared, b_.CreateMul(stage, c64(is_a ? t.bm * BK : BK * t.bn)));
      b_.CreateIntrinsic(
          llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16, {},
          {b_.CreateGEP(t.et, is_a ? t.sa : t.sb, to), b_.CreateGEP(t.et, is_a ? a : bp, chunks[n].global)});
    }
  }

  void cp_async_commit() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {}); }

  // A matrix descriptor: start address / 16, the byte offsets / 16 between atoms along K (bits
  // 16-29; A: unused) and along M or N (bits 32-45), 64-byte swizzle (2 << 62).
  Value* wgmma_descriptor(llvm::GlobalVariable* buf, Value* byte_offset, int64_t lbo, int64_t sbo) {
    Value* addr = b_.CreateAdd(b_.CreatePtrToInt(buf, b_.getInt64Ty()), byte_offset);
    Value* d = b_.CreateLShr(b_.CreateAnd(addr, c64(0x3FFFF)), c64(4));
    return b_.CreateOr(d, c64(((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (int64_t(2) << 62)));
  }

  // wgmma.mma_async m64nBNk16 as inline asm (LLVM 19 has no intrinsic for it): the accumulators
  // in and out, A's and B's descriptors, scale-d 1 (accumulate), B transposed.
  llvm::InlineAsm* wgmma(const WarpgroupTile& t) {
    auto* f32 = b_.getFloatTy();
    auto* i64 = b_.getInt64Ty();
    const int64_t acc_n = t.acc_n;
    const std::string ty = p_.tensor_cores->type == DType::F16 ? "f16" : "bf16";
    std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(acc_n + 2) +
                       ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(t.bn) + "k16.f32." + ty + "." + ty +
                       " {";
    std::string cons;
    for (int64_t i = 0; i < acc_n; ++i) text += (i ? ",$" : "$") + std::to_string(i), cons += "=f,";
    text += "}, $" + std::to_string(acc_n) + ", $" + std::to_string(acc_n + 1) + ", p, 1, 1, 0, 1;\n}";
    cons += "l,l,r";
    for (int64_t i = 0; i < acc_n; ++i) cons += "," + std::to_string(i);
    std::vector<llvm::Type*> ins{i64, i64, b_.getInt32Ty()}, outs(size_t(acc_n), f32);
    for (int64_t i = 0; i < acc_n; ++i) ins.push_back(f32);
    return llvm::InlineAsm::get(llvm::FunctionType::get(llvm::StructType::get(c_, outs), ins, false), text, cons, true);
  }

  void warpgroup_step(const WarpgroupTile& t, const std::vector<CopyChunk>& chunks, llvm::InlineAsm* mma, Value* kt,
                      int64_t steps) {
    auto* f32 = b_.getFloatTy();
    const int64_t BK = kWarpgroupK, S = kWarpgroupStages, ahead = S - 1;
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b_.getInt32(uint32_t(ahead - 1))});
    asm_call("fence.proxy.async.shared::cta;");  // cp.async wrote through the generic proxy, wgmma reads through the
                                                 // async one
    barrier();
    Value* next = b_.CreateAdd(kt, c64(ahead));
    auto* go = llvm::BasicBlock::Create(c_, "copy", fn_);
    auto* on = llvm::BasicBlock::Create(c_, "copied", fn_);
    b_.CreateCondBr(b_.CreateICmpULT(next, c64(steps)), go, on);
    b_.SetInsertPoint(go);
    warpgroup_copy(t, chunks, next, b_.CreateURem(next, c64(S)));
    b_.CreateBr(on);
    b_.SetInsertPoint(on);
    cp_async_commit();  // empty past the last step, so that the count waited for above holds
    Value* stage = b_.CreateURem(kt, c64(S));
    asm_call("wgmma.fence.sync.aligned;");
    for (int64_t s16 = 0; s16 < BK / 16; ++s16)
      for (int64_t h = 0; h < t.halves; ++h) {
        Value* da = wgmma_descriptor(
            t.sa, b_.CreateAdd(b_.CreateMul(stage, c64(t.bm * BK * 2)), c64(h * 8 * 512 + s16 * 32)), 16, 512);
        Value* db = wgmma_descriptor(t.sb, b_.CreateAdd(b_.CreateMul(stage, c64(BK * t.bn * 2)), c64(2 * s16 * 512)),
                                     BK / 8 * 512, 512);
        std::vector<Value*> args{da, db, b_.getInt32(1)};
        for (int64_t i = 0; i < t.acc_n; ++i) args.push_back(b_.CreateLoad(f32, acc_slot(t.acc, h * t.acc_n + i)));
        Value* d = b_.CreateCall(mma, args);
        for (int64_t i = 0; i < t.acc_n; ++i)
          b_.CreateStore(b_.CreateExtractValue(d, unsigned(i)), acc_slot(t.acc, h * t.acc_n + i));
      }
    asm_call("wgmma.commit_group.sync.aligned;");
    asm_call("wgmma.wait_group.sync.aligned 0;");
  }

  // The accumulators pass through an empty asm after the last wait, so that no read of them moves
  // above it; then everyone is past the last step before the epilogue reuses A's stages. Per 64
  // rows and 64 columns, each warp's 16 x 64 accumulators (warp w holds rows 16w.. of each 64;
  // rows lane / 4 (+ 8), columns 2 (lane % 4) (+ 1) of each 8) go to its part of shared memory,
  // then finish_from_shared.
  void warpgroup_epilogue(const WarpgroupTile& t, Value* lane, Value* warp) {
    auto* f32 = b_.getFloatTy();
    auto* pin = llvm::InlineAsm::get(llvm::FunctionType::get(f32, {f32}, false), "", "=f,0", true);
    for (int64_t i = 0; i < t.halves * t.acc_n; ++i)
      b_.CreateStore(b_.CreateCall(pin, {b_.CreateLoad(f32, acc_slot(t.acc, i))}), acc_slot(t.acc, i));
    barrier();
    Value* mine = b_.CreateMul(warp, c64(16 * 64));
    for (int64_t h = 0; h < t.halves; ++h)
      for (int64_t cq = 0; cq < t.bn / 64; ++cq) {
        for (int64_t j = 0; j < 8; ++j)
          for (int64_t x = 0; x < 4; ++x) {
            Value* row = b_.CreateAdd(b_.CreateUDiv(lane, c64(4)), c64(8 * (x / 2)));
            Value* col = b_.CreateAdd(c64(8 * j + x % 2), b_.CreateMul(b_.CreateURem(lane, c64(4)), c64(2)));
            b_.CreateStore(b_.CreateLoad(f32, acc_slot(t.acc, h * t.acc_n + 4 * (cq * 8 + j) + x)),
                           b_.CreateGEP(f32, t.sa, b_.CreateAdd(mine, b_.CreateAdd(b_.CreateMul(row, c64(64)), col))));
          }
        finish_from_shared(t.sa, mine, lane, 16, 64, t.at, b_.CreateAdd(c64(64 * h), b_.CreateMul(warp, c64(16))),
                           c64(64 * cq));
      }
  }

  // ---- Tensor cores (the TC action, passes/tensor_cores.h). Each warp computes wm x wn 16x16
  // fragments of the output, multiplying fragments of A and B into f32 accumulator fragments per
  // step of 16 (f16, bf16) or 8 (tf32) along the reduce. Unstaged, a warp loads its fragments
  // straight from global memory (WMMA). Staged, a block of 2 x 2 warps first copies its rows of A and columns of B, 32
  // or 64 along the reduce at a time, into shared memory with 16-byte loads, and its warps load their fragments from
  // there: each element of A and B leaves global memory once per block instead of once per warp. The accumulators then
  // go to shared memory a row of fragments at a time, and each lane finishes its share of the elements with the rest of
  // the kernel's expression (the sum read back from shared memory) and stores them.
  using IntrinsicId = llvm::Intrinsic::ID;

  // A WMMA tile: a warp's rows x cols outputs at `at`, its block's brows x bcols at `block_at`
  // (the same unstaged), k along the reduce per multiply; the WMMA intrinsics of the operands'
  // layouts; wm x wn fragments of 8 accumulators per lane.
  struct WmmaTile {
    int64_t rows, cols, brows, bcols, k;
    llvm::Type* et;
    IntrinsicId load_a, load_b, mma, store_d;
    Ranges at, block_at;
    llvm::AllocaInst* acc;
  };

  void tensor_core_tiles(Value* tid, Value* block) {
    const TensorCorePlan& tc = *p_.tensor_cores;
    const TensorCoreTiles& w = tc.tiles;
    const int64_t T = kTensorCoreTile;
    WmmaTile t;
    t.rows = w.wm * T, t.cols = w.wn * T, t.k = tensor_core_k(tc.type);
    t.et = operand_type();
    Value* lane = b_.CreateURem(tid, c64(32));
    Value* warp = b_.CreateUDiv(tid, c64(32));
    // The tile's origin: columns innermost, then rows, then the other output ranges. Unstaged a
    // tile is a warp's; staged it is the block's, 2 x 2 warp tiles.
    t.brows = w.staged ? 2 * t.rows : t.rows, t.bcols = w.staged ? 2 * t.cols : t.cols;
    Value* tile = w.staged ? block : b_.CreateAdd(b_.CreateMul(block, c64(w.warps)), warp);
    t.at = tile_origin(tile, t.brows, t.bcols);
    t.block_at = t.at;
    // Rows that end at a run-time size: blocks past it leave together (before any barrier).
    if (!tc.m->src[0]->is_const()) leave_if(b_.CreateICmpUGE(t.at.at(tc.m), rows_end(t.at)));
    if (w.staged) {
      t.at[tc.n] = b_.CreateAdd(t.at[tc.n], b_.CreateMul(b_.CreateURem(warp, c64(2)), c64(t.cols)));
      t.at[tc.m] = b_.CreateAdd(t.at[tc.m], b_.CreateMul(b_.CreateUDiv(warp, c64(2)), c64(t.rows)));
    }
    t.acc = zeroed_accumulators(8 * w.wm * w.wn);
    const Wmma& ops = wmma_ops(tc.type);
    t.load_a = ops.load_a[tc.a_row], t.load_b = ops.load_b[tc.b_row], t.mma = ops.mma[tc.a_row][tc.b_row],
    t.store_d = ops.store_d;
    llvm::GlobalVariable* staging_a = nullptr;  // staged: A's shared memory, reused for the tiles below
    if (!w.staged)
      wmma_unstaged(t);
    else
      staging_a = wmma_staged(t, tid, warp);
    wmma_epilogue(t, staging_a, lane, warp);
  }

  // The WMMA intrinsics of the operands' type, indexed by [row-major A][row-major B].
  struct Wmma {
    IntrinsicId load_a[2], load_b[2], mma[2][2], store_d;
  };
  static const Wmma& wmma_ops(DType type) {
    namespace In = llvm::Intrinsic;
    static const Wmma f16_ops{
        {In::nvvm_wmma_m16n16k16_load_a_f16_col_stride, In::nvvm_wmma_m16n16k16_load_a_f16_row_stride},
        {In::nvvm_wmma_m16n16k16_load_b_f16_col_stride, In::nvvm_wmma_m16n16k16_load_b_f16_row_stride},
        {{In::nvvm_wmma_m16n16k16_mma_col_col_f32_f32, In::nvvm_wmma_m16n16k16_mma_col_row_f32_f32},
         {In::nvvm_wmma_m16n16k16_mma_row_col_f32_f32, In::nvvm_wmma_m16n16k16_mma_row_row_f32_f32}},
        In::nvvm_wmma_m16n16k16_store_d_f32_row_stride};
    static const Wmma bf16_ops{
        {In::nvvm_wmma_m16n16k16_load_a_bf16_col_stride, In::nvvm_wmma_m16n16k16_load_a_bf16_row_stride},
        {In::nvvm_wmma_m16n16k16_load_b_bf16_col_stride, In::nvvm_wmma_m16n16k16_load_b_bf16_row_stride},
        {{In::nvvm_wmma_m16n16k16_mma_col_col_bf16, In::nvvm_wmma_m16n16k16_mma_col_row_bf16},
         {In::nvvm_wmma_m16n16k16_mma_row_col_bf16, In::nvvm_wmma_m16n16k16_mma_row_row_bf16}},
        In::nvvm_wmma_m16n16k16_store_d_f32_row_stride};
    static const Wmma tf32_ops{
        {In::nvvm_wmma_m16n16k8_load_a_tf32_col_stride, In::nvvm_wmma_m16n16k8_load_a_tf32_row_stride},
        {In::nvvm_wmma_m16n16k8_load_b_tf32_col_stride, In::nvvm_wmma_m16n16k8_load_b_tf32_row_stride},
        {{In::nvvm_wmma_m16n16k8_mma_col_col_tf32, In::nvvm_wmma_m16n16k8_mma_col_row_tf32},
         {In::nvvm_wmma_m16n16k8_mma_row_col_tf32, In::nvvm_wmma_m16n16k8_mma_row_row_tf32}},
        In::nvvm_wmma_m16n16k8_store_d_f32_row_stride};
    return type == DType::F16 ? f16_ops : type == DType::BF16 ? bf16_ops : tf32_ops;
  }

  // A fragment's registers (8 of <2 x half> for f16, 4 of i32 for bf16 and tf32).
  std::vector<Value*> wmma_fragment(IntrinsicId id, Value* ptr, unsigned space, int64_t ld) {
    Value* f = b_.CreateIntrinsic(id, {b_.getPtrTy(space)}, {ptr, b_.getInt32(uint32_t(ld))});
    std::vector<Value*> parts;
    for (unsigned i = 0; i < f->getType()->getStructNumElements(); ++i) parts.push_back(b_.CreateExtractValue(f, i));
    return parts;
  }

  // Multiplies the warp's fragments of A (a row each) and B (a column each) into its accumulators.
  void wmma_multiply(const WmmaTile& t, const std::vector<std::vector<Value*>>& a,
                     const std::vector<std::vector<Value*>>& b) {
    const TensorCoreTiles& w = p_.tensor_cores->tiles;
    auto* f32 = b_.getFloatTy();
    for (unsigned i = 0; i < unsigned(w.wm); ++i)
      for (unsigned j = 0; j < unsigned(w.wn); ++j) {
        unsigned f = i * unsigned(w.wn) + j;
        std::vector<Value*> args = a[i];
        args.insert(args.end(), b[j].begin(), b[j].end());
        for (unsigned x = 0; x < 8; ++x) args.push_back(b_.CreateLoad(f32, acc_slot(t.acc, 8 * f + x)));
        Value* d = b_.CreateIntrinsic(t.mma, {}, args);
        for (unsigned x = 0; x < 8; ++x) b_.CreateStore(b_.CreateExtractValue(d, x), acc_slot(t.acc, 8 * f + x));
      }
  }

  // Unstaged: per step, the warp's fragments straight from global memory.
  void wmma_unstaged(const WmmaTile& t) {
    const TensorCorePlan& tc = *p_.tensor_cores;
    const TensorCoreTiles& w = tc.tiles;
    const int64_t T = kTensorCoreTile;
    auto shifted = [&](const Ranges& values, const UOp* r, Value* by) {
      Ranges v = values;
      v[r] = b_.CreateAdd(v.at(r), by);
      return v;
    };
    loop(c64(range_extent(tc.k) / t.k), [&](Value* kt) {
      Ranges values = at_step(t.at, kt, t.k);
      std::vector<std::vector<Value*>> a, b;
      for (int64_t i = 0; i < w.wm; ++i)
        a.push_back(
            wmma_fragment(t.load_a, operand_at(tc.a, t.et, shifted(values, tc.m, c64(i * T))), kGlobal, tc.lda));
      for (int64_t j = 0; j < w.wn; ++j)
        b.push_back(
            wmma_fragment(t.load_b, operand_at(tc.b, t.et, shifted(values, tc.n, c64(j * T))), kGlobal, tc.ldb));
      wmma_multiply(t, a, b);
    });
  }

  // Staged: row-major A and B (tensor_core_plan's `staged` condition): A's block rows are brows x
  // BK elements at lda apart, B's BK rows of bcols elements at ldb apart; in shared memory each
  // row is padded by 16 bytes, which keeps WMMA's rows off one bank. Chunks of 16 bytes move as
  // 4 x i32, whatever the elements: loaded from global memory into registers, later stored to
  // shared memory. The next step's chunks are loaded while this step multiplies, so the loads'
  // latency hides behind the tensor cores' work. Converted factors (TensorCorePlan::convert) are
  // computed instead, 8 consecutive elements along the reduce per chunk, and rounded to f16; B
  // then lies in shared memory column by column (bcols rows of BK).
  struct WmmaStaging {
    int64_t bk, chunk, threads, chunks_a;  // chunk: elements per 16 bytes
    int64_t lda_s, ldb_s;
    llvm::GlobalVariable *sa, *sb;
    llvm::FixedVectorType* chunk_ty;
    llvm::ArrayType* regs_ty;
    llvm::AllocaInst* regs;
    Value* tid;
  };
  // An operand's rows x (row_chunks * chunk) block of a step: ld apart in global memory from
  // `from`, ld_s apart in shared memory `to`. Converted: `expr` at the ranges `at` of the step's
  // corner, its rows along `rows` (m or n), `from` unused.
  struct StagedPart {
    Value* from;
    int64_t ld;
    llvm::GlobalVariable* to;
    int64_t ld_s, rows_n, row_chunks;
    const UOp *expr = nullptr, *rows = nullptr;
    Ranges at;
  };

  // Returns A's shared memory, which the epilogue reuses.
  llvm::GlobalVariable* wmma_staged(const WmmaTile& t, Value* tid, Value* warp) {
    const TensorCorePlan& tc = *p_.tensor_cores;
    const TensorCoreTiles& w = tc.tiles;
    const int64_t esize = tc.type == DType::F32 ? 4 : 2;
    WmmaStaging st;
    st.bk = w.staged, st.chunk = 16 / esize, st.threads = 32 * w.warps, st.tid = tid;
    st.lda_s = st.bk + 16 / esize, st.ldb_s = (tc.b_row ? t.bcols : st.bk) + 16 / esize;
    st.sa = shared_buffer(t.et, std::max(t.brows * st.lda_s, w.warps * kTensorCoreTile * t.cols * 4 / esize), "tc_a");
    st.sb = shared_buffer(t.et, (tc.b_row ? st.bk : t.bcols) * st.ldb_s, "tc_b");
    st.chunk_ty =
        tc.convert ? llvm::FixedVectorType::get(b_.getHalfTy(), 8) : llvm::FixedVectorType::get(b_.getInt32Ty(), 4);
    st.chunks_a = t.brows * st.bk / st.chunk / st.threads;
    const int64_t chunks_b = st.bk * t.bcols / st.chunk / st.threads;
    st.regs_ty = llvm::ArrayType::get(st.chunk_ty, uint64_t(st.chunks_a + chunks_b));
    st.regs = entry_alloca(st.regs_ty);
    Value* warp_row = b_.CreateMul(b_.CreateUDiv(warp, c64(2)), c64(t.rows));
    Value* warp_col = b_.CreateMul(b_.CreateURem(warp, c64(2)), c64(t.cols));
    const int64_t steps = range_extent(tc.k) / st.bk;
    fetch_chunks(t, st, c64(0));
    loop(c64(steps), [&](Value* kt) {
      put_chunks(t, st, kt);
      barrier();
      // The next step's chunks (the last step fetches its own again: in bounds, unused).
      fetch_chunks(
          t, st, b_.CreateSelect(b_.CreateICmpULT(b_.CreateAdd(kt, c64(1)), c64(steps)), b_.CreateAdd(kt, c64(1)), kt));
      for (int64_t kk = 0; kk < st.bk; kk += t.k) {
        std::vector<std::vector<Value*>> a, b;
        for (int64_t i = 0; i < w.wm; ++i) {
          Value* row = b_.CreateAdd(warp_row, c64(i * kTensorCoreTile));
          a.push_back(wmma_fragment(t.load_a,
                                    b_.CreateGEP(t.et, st.sa, b_.CreateAdd(b_.CreateMul(row, c64(st.lda_s)), c64(kk))),
                                    kShared, st.lda_s));
        }
        for (int64_t j = 0; j < w.wn; ++j) {
          Value* col = b_.CreateAdd(warp_col, c64(j * kTensorCoreTile));
          Value* at = tc.b_row ? b_.CreateAdd(c64(kk * st.ldb_s), col)
                               : b_.CreateAdd(b_.CreateMul(col, c64(st.ldb_s)), c64(kk));
          b.push_back(wmma_fragment(t.load_b, b_.CreateGEP(t.et, st.sb, at), kShared, st.ldb_s));
        }
        wmma_multiply(t, a, b);
      }
      barrier();
    });
    return st.sa;
  }

  std::array<StagedPart, 2> staged_parts(const WmmaTile& t, const WmmaStaging& st, Value* kt) {
    const TensorCorePlan& tc = *p_.tensor_cores;
    Ranges values = at_step(t.block_at, kt, st.bk);
    if (tc.convert)
      return std::array<StagedPart, 2>{
          StagedPart{nullptr, 0, st.sa, st.lda_s, t.brows, st.bk / st.chunk, tc.a, tc.m, values},
          StagedPart{nullptr, 0, st.sb, st.ldb_s, t.bcols, st.bk / st.chunk, tc.b, tc.n, values}};
    return std::array<StagedPart, 2>{
        StagedPart{operand_at(tc.a, t.et, values), tc.lda, st.sa, st.lda_s, t.brows, st.bk / st.chunk},
        StagedPart{operand_at(tc.b, t.et, values), tc.ldb, st.sb, st.ldb_s, st.bk, t.bcols / st.chunk}};
  }

  // Calls f(n, row, column) for this thread's chunks of `p` (the column in elements).
  void each_chunk(const WmmaStaging& st, const StagedPart& p, const std::function<void(int64_t, Value*, Value*)>& f) {
    for (int64_t c0 = 0, n = 0; c0 < p.rows_n * p.row_chunks; c0 += st.threads, ++n) {
      Value* c = b_.CreateAdd(st.tid, c64(c0));
      f(n, b_.CreateUDiv(c, c64(p.row_chunks)), b_.CreateMul(b_.CreateURem(c, c64(p.row_chunks)), c64(st.chunk)));
    }
  }

  Value* chunk_register(const WmmaStaging& st, int x, int64_t n) {
    return b_.CreateConstGEP2_32(st.regs_ty, st.regs, 0, unsigned(x ? st.chunks_a + n : n));
  }

  // A converted factor's 8 elements from (r, q) past the step's corner, rounded to f16.
  Value* computed_chunk(const WmmaStaging& st, const StagedPart& p, Value* r, Value* q) {
    const UOp* k = p_.tensor_cores->k;
    Ranges values = p.at;
    values[p.rows] = b_.CreateAdd(values.at(p.rows), r);
    Value* v = llvm::UndefValue::get(st.chunk_ty);
    for (int64_t i = 0; i < st.chunk; ++i) {
      values[k] = b_.CreateAdd(p.at.at(k), b_.CreateAdd(q, c64(i)));
      v = b_.CreateInsertElement(v, b_.CreateFPTrunc(eval_at(p.expr, values), b_.getHalfTy()), uint64_t(i));
    }
    return v;
  }

  void fetch_chunks(const WmmaTile& t, const WmmaStaging& st, Value* kt) {
    std::array<StagedPart, 2> ps = staged_parts(t, st, kt);
    for (int x = 0; x < 2; ++x) {
      const StagedPart& p = ps[size_t(x)];
      each_chunk(st, p, [&](int64_t n, Value* r, Value* q) {
        Value* v = p.expr ? computed_chunk(st, p, r, q)
                          : b_.CreateAlignedLoad(
                                st.chunk_ty, b_.CreateGEP(t.et, p.from, b_.CreateAdd(b_.CreateMul(r, c64(p.ld)), q)),
                                llvm::Align(16));
        b_.CreateStore(v, chunk_register(st, x, n));
      });
    }
  }

  void put_chunks(const WmmaTile& t, const WmmaStaging& st, Value* kt) {
    std::array<StagedPart, 2> ps = staged_parts(t, st, kt);
    for (int x = 0; x < 2; ++x) {
      const StagedPart& p = ps[size_t(x)];
      each_chunk(st, p, [&](int64_t n, Value* r, Value* q) {
        Value* v = b_.CreateLoad(st.chunk_ty, chunk_register(st, x, n));
        b_.CreateAlignedStore(v, b_.CreateGEP(t.et, p.to, b_.CreateAdd(b_.CreateMul(r, c64(p.ld_s)), q)),
                              llvm::Align(16));
      });
    }
  }

  // A row of the warp's fragments at a time to its part of shared memory (T x cols floats),
  // staged: in A's staging buffer, which the last step's barrier freed.
  void wmma_epilogue(const WmmaTile& t, llvm::GlobalVariable* staging_a, Value* lane, Value* warp) {
    const TensorCoreTiles& w = p_.tensor_cores->tiles;
    const int64_t T = kTensorCoreTile;
    auto* f32 = b_.getFloatTy();
    llvm::GlobalVariable* sm = staging_a ? staging_a : shared_buffer(f32, w.warps * T * t.cols, "tc_tiles");
    Value* mine = b_.CreateMul(warp, c64(T * t.cols));
    for (unsigned i = 0; i < unsigned(w.wm); ++i) {
      for (unsigned j = 0; j < unsigned(w.wn); ++j) {
        std::vector<Value*> st{b_.CreateGEP(f32, sm, b_.CreateAdd(mine, c64(int64_t(j) * T)))};
        for (unsigned x = 0; x < 8; ++x)
          st.push_back(b_.CreateLoad(f32, acc_slot(t.acc, 8 * (i * unsigned(w.wn) + j) + x)));
        st.push_back(b_.getInt32(uint32_t(t.cols)));
        b_.CreateIntrinsic(t.store_d, {b_.getPtrTy(kShared)}, st);
      }
      finish_from_shared(sm, mine, lane, T, t.cols, t.at, c64(int64_t(i) * T), c64(0));
    }
  }

  // The tensor-core paths' epilogue: a warp's rows x cols sums, which its lanes just stored to
  // shared memory at `mine` (rows of cols floats), finished per element with the rest of the
  // kernel's expression and stored, for the outputs from (row0, col0) past the tile's origin `at`.
  void finish_from_shared(llvm::GlobalVariable* sm, Value* mine, Value* lane, int64_t rows, int64_t cols,
                          const Ranges& at, Value* row0, Value* col0) {
    const TensorCorePlan& tc = *p_.tensor_cores;
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_bar_warp_sync, {}, {b_.getInt32(0xffffffffu)});
    loop(c64(rows * cols / 32), [&](Value* e) {
      Value* idx = b_.CreateAdd(lane, b_.CreateMul(e, c64(32)));
      Ranges values = at;
      values[tc.m] = b_.CreateAdd(at.at(tc.m), b_.CreateAdd(row0, b_.CreateUDiv(idx, c64(cols))));
      values[tc.n] = b_.CreateAdd(at.at(tc.n), b_.CreateAdd(col0, b_.CreateURem(idx, c64(cols))));
      store_output(b_.CreateLoad(b_.getFloatTy(), b_.CreateGEP(b_.getFloatTy(), sm, b_.CreateAdd(mine, idx))), values);
    });
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_bar_warp_sync, {}, {b_.getInt32(0xffffffffu)});
  }

  // The emitter's hooks. A gated load reads index 0 (always in bounds) where its gate is false,
  // then selects 0: no branch, so the loads of a tile can be scheduled together.
  Value* load(const UOp* u) override {
    Value* idx = value(u->src[1]);
    Value* gate = u->src.size() > 2 ? value(u->src[2]) : nullptr;
    if (gate) idx = b_.CreateSelect(gate, idx, b_.getInt64(0));
    llvm::Type* mem = llvm_type(c_, u->dtype, true);
    Value* v = b_.CreateLoad(mem, b_.CreateGEP(mem, args_.at(u->src[0]->ival()), idx));
    if (u->dtype == DType::Bool) v = b_.CreateICmpNE(v, b_.getInt8(0));
    return gate ? b_.CreateSelect(gate, v, llvm::Constant::getNullValue(v->getType())) : v;
  }

  Value* accumulator(const UOp* reduce) override {
    if (tc_sum_) return tc_sum_;
    llvm::AllocaInst* a = acc_.at(reduce);
    return b_.CreateLoad(a->getAllocatedType(), a);
  }

  // NVPTX lowers neither llvm.exp2/log2 (no libcall) nor llvm.sin (an LLVM abort): the hardware's
  // approximations instead (ex2/lg2.approx: ~2 ulp; sin.approx after reducing the argument to
  // [-pi, pi], where its absolute error is below 2^-20). Other float types compute in f32.
  Value* math(Op op, DType t, Value* x) override {
    if (op == Op::Sqrt && (t == DType::F32 || t == DType::F64))
      return b_.CreateIntrinsic(llvm::Intrinsic::sqrt, {x->getType()}, {x});
    llvm::Type* f32 = b_.getFloatTy();
    Value* y = t == DType::F32 ? x : b_.CreateFPCast(x, f32);
    switch (op) {
      case Op::Exp2: y = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_f, {}, {y}); break;
      case Op::Log2: y = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_lg2_approx_f, {}, {y}); break;
      case Op::Sqrt: y = b_.CreateIntrinsic(llvm::Intrinsic::sqrt, {f32}, {y}); break;
      case Op::Sin: {
        // x - k*2pi with 2pi in two parts (Cody-Waite), exact enough for |x| up to ~1e5.
        constexpr double two_pi = 2 * std::numbers::pi;
        const float hi = float(two_pi), lo = float(two_pi - double(hi));
        Value* k = b_.CreateIntrinsic(llvm::Intrinsic::rint, {f32},
                                      {b_.CreateFMul(y, llvm::ConstantFP::get(f32, 1 / two_pi))});
        Value* r =
            b_.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {b_.CreateFNeg(k), llvm::ConstantFP::get(f32, hi), y});
        r = b_.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {b_.CreateFNeg(k), llvm::ConstantFP::get(f32, lo), r});
        y = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_sin_approx_f, {}, {r});
        break;
      }
      default: return nullptr;
    }
    return t == DType::F32 ? y : b_.CreateFPCast(y, x->getType());
  }

  llvm::Module& m_;
  const Graph& g_;
  const GpuProgram& k_;
  const LoopProgram& p_;
  const std::string arch_;  // sm_90 ...
  llvm::LLVMContext& c_;
  llvm::IRBuilder<> b_;
  LlvmExprEmitter e_;
  LlvmExprEmitter* cur_ = &e_;  // where value() looks (the tensor-core path evaluates in scopes of its own)
  Value* tc_sum_ = nullptr;     // the tensor-core path: the KREDUCE's value, read back from the tile
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* exit_ = nullptr;
  int shared_ = 0;
  std::unordered_map<int64_t, Value*> args_;
  std::unordered_map<const UOp*, llvm::AllocaInst*> acc_;
};
}  // namespace

int64_t ptx_block_size(const LoopProgram& p) {
  if (p.tensor_cores) return 32 * p.tensor_cores->tiles.warps;
  return p.locals.empty() ? kPtxDefaultBlock : gpu_local_size(p);
}

int64_t ptx_grid_threads(const LoopProgram& p) {
  if (p.tensor_cores) {  // a warp per tile of wm x wn fragments, or a thread per wm x wn outputs (CUDA cores)
    const TensorCoreTiles& w = p.tensor_cores->tiles;
    if (w.cuda_cores) return gpu_global_size(p) / (w.wm * w.wn);
    return gpu_global_size(p) / (kTensorCoreTile * kTensorCoreTile * w.wm * w.wn) * 32;
  }
  int64_t block = ptx_block_size(p), n = gpu_global_size(p);
  return (n + block - 1) / block * block;
}

std::string render_ptx(const Graph& g, const LoopProgram& p, const PtxOptions& o) {
  GpuProgram k = lower_gpu(g, p, {.index_bits = 64});
  std::unique_ptr<llvm::TargetMachine> tm(make_target_machine("nvptx64-nvidia-cuda", o.sm));
  llvm::LLVMContext c;
  llvm::Module m(p.name, c);
  m.setTargetTriple("nvptx64-nvidia-cuda");
  m.setDataLayout(tm->createDataLayout());
  PtxRenderer(m, g, k, o.sm).run();
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(m, &es)) throw Error("ptx codegen: kernel " + p.name + ": invalid LLVM IR: " + err);
  optimize(m, tm.get());
  return assembly_text(m, tm.get());
}

}  // namespace tgc
