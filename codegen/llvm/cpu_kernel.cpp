#include "codegen/llvm/cpu_kernel.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "codegen/llvm/lane_vectors.h"
#include "codegen/llvm/llvm_expr.h"
#include "ir/error.h"

namespace tgc {

namespace {
using llvm::IRBuilder;
using llvm::Value;

// The CPU shell around the expression emitter: the function and its work-item loop, buffer
// pointers and their alias scopes, accumulators, gated loads and stores.
class CpuRenderer : LlvmExprHooks {
 public:
  CpuRenderer(llvm::Module& m, const Graph& g, const LoopProgram& p, const TargetProfile& t)
      : m_(m),
        g_(g),
        p_(p),
        l2_bytes_(t.l2_bytes),
        tile_groups_(!p.lane_sums && !has_dot4(p.body)),
        min_group_(tile_groups_ ? size_t(std::max(4, t.vector_lanes)) : 4),
        c_(m.getContext()),
        b_(c_),
        e_(b_, *this, p.name),
        widen_exactly_(!p.lanes_expanded && !has_sum(p.body)),
        lanes_(b_, e_, [this](const UOp* u, llvm::Type* t, Value* idx) { return load_at(u, t, idx); }) {
    e_.set_int8_dot(t.int8_dot);
    e_.set_fma(t.fma);
    plan_lane_groups(p.body);
  }

  llvm::Function* run(const CpuWorkSplit& split) {
    auto* i64 = b_.getInt64Ty();
    auto* ptr = b_.getPtrTy();
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, i64}, false);
    fn_ = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "tgc_kernel_" + p_.name, m_);
    fn_->addParamAttr(0, llvm::Attribute::NoAlias);
    b_.SetInsertPoint(llvm::BasicBlock::Create(c_, "entry", fn_));
    // Buffer base pointers, loaded once.
    for (size_t i = 0; i < p_.args.size(); ++i) {
      Value* slot = b_.CreateConstGEP1_64(ptr, fn_->getArg(0), i);
      args_[p_.args[i]] = b_.CreateLoad(ptr, slot, "buf" + std::to_string(i));
    }
    // Run-time dims: their values, from the vars buffer (unused loads are dropped by O3).
    if (args_.count(g_.vars_buffer()))
      for (const UOp* v : g_.vars())
        e_.set(v, b_.CreateLoad(i64, b_.CreateConstGEP1_64(i64, args_.at(g_.vars_buffer()), uint64_t(g_.var_slot(v))),
                                v->var().name));
    // A loop over an axis that follows a run-time dim ends at an expression of VARs ((W+1)/2
    // after a strided window): computed once, here.
    std::vector<const UOp*> ranges = p_.globals;
    each_stmt(p_.body, [&](const LStmt& st) {
      if (st.kind == LStmt::Loop) ranges.push_back(st.u);
    });
    for (const UOp* r : ranges)
      for (const UOp* x : toposort({r->src[0]}))
        if (!x->is_const() && x->op != Op::Var && !e_.has(x)) e_.set(x, e_.compute(x));
    make_alias_scopes();
    // for item in [begin, end): decode outer indices and the chunk, then run the body.
    loop(fn_->getArg(1), fn_->getArg(2), [&](Value* item) {
      Value* rest = item;
      // Ranges over run-time dims decode at their upper bound (the layout) and stop at their VAR.
      int64_t inner_n = p_.inner ? range_extent(p_.inner) : 1;
      int64_t nchunks = (inner_n + split.chunk - 1) / split.chunk;
      Value* chunk = nullptr;
      if (p_.inner) {
        chunk = b_.CreateURem(rest, b_.getInt64(uint64_t(nchunks)));
        rest = b_.CreateUDiv(rest, b_.getInt64(uint64_t(nchunks)));
      }
      for (size_t i = p_.globals.size(); i-- > 0;) {
        const UOp* r = p_.globals[i];
        if (r == p_.inner) continue;
        int64_t n = range_extent(r);
        e_.set(r, b_.CreateURem(rest, b_.getInt64(uint64_t(n))));
        rest = b_.CreateUDiv(rest, b_.getInt64(uint64_t(n)));
      }
      if (p_.inner) {
        lo_ = b_.CreateMul(chunk, b_.getInt64(uint64_t(split.chunk)));
        Value* hi = b_.CreateAdd(lo_, b_.getInt64(uint64_t(split.chunk)));
        Value* end = value(p_.inner->src[0]);
        hi_ = b_.CreateSelect(b_.CreateICmpULT(hi, end), hi, end);
      }
      // Positions past a run-time dim's value hold nothing: skip them.
      Value* live = nullptr;
      for (const UOp* r : p_.globals)
        if (r != p_.inner && !r->src[0]->is_const()) {
          Value* in = b_.CreateICmpULT(value(r), value(r->src[0]));
          live = live ? b_.CreateAnd(live, in) : in;
        }
      if (!live) {
        stmts(p_.body);
        return;
      }
      auto* body = llvm::BasicBlock::Create(c_, "live", fn_);
      auto* after = llvm::BasicBlock::Create(c_, "skip", fn_);
      b_.CreateCondBr(live, body, after);
      b_.SetInsertPoint(body);
      stmts(p_.body);
      b_.CreateBr(after);
      b_.SetInsertPoint(after);
    });
    b_.CreateRetVoid();
    return fn_;
  }

 private:
  // The buffers of one kernel never overlap (the memory plan keeps every buffer a kernel touches
  // alive, so apart, for the whole kernel), which LLVM cannot see through the pointer array:
  // scoped-noalias metadata tells it, so stores do not pin later loads in place and the SLP
  // vectorizer can bundle them.
  void make_alias_scopes() {
    llvm::MDBuilder md(c_);
    llvm::MDNode* domain = md.createAnonymousAliasScopeDomain(p_.name);
    std::vector<llvm::Metadata*> scopes;
    for (size_t i = 0; i < p_.args.size(); ++i) scopes.push_back(md.createAnonymousAliasScope(domain));
    for (size_t i = 0; i < p_.args.size(); ++i) {
      std::vector<llvm::Metadata*> others = scopes;
      others.erase(others.begin() + std::ptrdiff_t(i));
      scope_[p_.args[i]] = llvm::MDNode::get(c_, {scopes[i]});
      noalias_[p_.args[i]] = llvm::MDNode::get(c_, others);
    }
  }
  void tag_buffer_access(llvm::Instruction* access, int64_t buffer) {
    access->setMetadata(llvm::LLVMContext::MD_alias_scope, scope_.at(buffer));
    access->setMetadata(llvm::LLVMContext::MD_noalias, noalias_.at(buffer));
  }

  // Whether a loop's body holds copies of one computation (register tiles, LANES): then they are
  // the vector lanes (SLP), and vectorizing the loop as well would multiply every accumulator by
  // the vector width and spill. Other loops of such a kernel (a softmax's sum of exponentials
  // beside its laned max) are left to the loop vectorizer: disabling it kernel-wide made softmax
  // 9x slower than without opts.
  // Stores of copies to addresses apart (an elementwise copy by phase, passes/opt phase_opts)
  // are not SLP lanes: such a loop is left to the loop vectorizer, one vector per copy.
  static bool holds_copies(const std::vector<LStmt>& body) {
    int n = 0;
    bool accumulates = false, neighbours = false;
    std::vector<const UOp*> stored;
    std::function<void(const std::vector<LStmt>&)> count = [&](const std::vector<LStmt>& b) {
      for (const LStmt& s : b) {
        n += s.kind == LStmt::AccUpdate || s.kind == LStmt::Store;
        accumulates |= s.kind == LStmt::AccUpdate;
        if (s.kind == LStmt::Store) stored.push_back(s.u->src[1]);
        count(s.body);
      }
    };
    count(body);
    for (const UOp* i : stored)
      for (const UOp* j : stored)
        neighbours |= j->op == Op::Add && j->src[0] == i && j->src[1]->op == Op::Const && j->src[1]->ival() == 1;
    return n > 1 && (accumulates || neighbours);
  }

  // Emits `for (i = lo; i < hi; ++i) body(i)` with an alloca counter (mem2reg makes it a phi).
  template <typename F>
  void loop(Value* lo, Value* hi, F body, bool copies = true) {
    auto* i64 = b_.getInt64Ty();
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    llvm::AllocaInst* slot = entry.CreateAlloca(i64);
    b_.CreateStore(lo, slot);
    auto* head = llvm::BasicBlock::Create(c_, "loop", fn_);
    auto* bodyb = llvm::BasicBlock::Create(c_, "body", fn_);
    auto* exit = llvm::BasicBlock::Create(c_, "exit", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    Value* i = b_.CreateLoad(i64, slot);
    b_.CreateCondBr(b_.CreateICmpSLT(i, hi), bodyb, exit);
    b_.SetInsertPoint(bodyb);
    body(i);
    b_.CreateStore(b_.CreateAdd(i, b_.getInt64(1), "", true, true), slot);
    llvm::BranchInst* latch = b_.CreateBr(head);
    if ((p_.lanes_expanded || !groups_.empty()) && copies) {
      llvm::Metadata* off[] = {llvm::MDString::get(c_, "llvm.loop.vectorize.enable"),
                               llvm::ConstantAsMetadata::get(b_.getFalse())};
      llvm::MDNode* self = llvm::MDNode::getDistinct(c_, {nullptr, llvm::MDNode::get(c_, off)});
      self->replaceOperandWith(0, self);
      latch->setMetadata(llvm::LLVMContext::MD_loop, self);
    }
    b_.SetInsertPoint(exit);
  }

  void stmts(const std::vector<LStmt>& body) {
    for (size_t i = 0; i < body.size(); ++i) {
      const LStmt& s = body[i];
      if (s.kind == LStmt::Store) {
        size_t end = i;
        while (end < body.size() && body[end].kind == LStmt::Store) ++end;
        stores(&body[i], &body[0] + end);
        i = end - 1;
        continue;
      }
      switch (s.kind) {
        case LStmt::Let:
          if (known_true_.count(s.u)) break;
          if (Value* sum = lane_sum(s.u))
            e_.set(s.u, sum);
          else
            e_.set(s.u, e_.compute(s.u));
          break;
        case LStmt::Loop: {
          if (s.u == p_.inner) {
            inner_loop(s);
            break;
          }
          loop(
              b_.getInt64(0), value(s.u->src[0]),
              [&](Value* i) {  // to a constant or a run-time dim's VAR
                e_.set(s.u, i);
                stmts(s.body);
                prefetch(s);
              },
              holds_copies(s.body));
          break;
        }
        case LStmt::AccInit: {
          llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
          llvm::Type* t = llvm_type(c_, s.u->dtype, false);
          Value* identity = e_.identity(s.u->reduce().op, s.u->dtype);
          if (auto lane = lane_of_.find(s.u);
              lane != lane_of_.end()) {  // the group's vector, once per lane: stores of one value
            LaneGroup& grp = groups_[lane->second.first];
            auto n = unsigned(grp.reduces.size());
            if (!grp.acc) grp.acc = entry.CreateAlloca(llvm::FixedVectorType::get(t, n));
            b_.CreateStore(b_.CreateVectorSplat(n, identity), grp.acc);
            break;
          }
          acc_[s.u] = entry.CreateAlloca(t);
          b_.CreateStore(identity, acc_[s.u]);
          break;
        }
        case LStmt::AccUpdate: {
          if (auto grp = group_at_.find(&s); grp != group_at_.end()) {
            if (grp->second < 0) break;  // a lane of the group updated at its first lane
            const LaneGroup& lg = groups_[size_t(grp->second)];
            std::vector<const UOp*> values;  // the group's statements follow this one, stride apart
            size_t stride = stride_at_.at(&s);
            for (size_t j = 0; j < lg.reduces.size(); ++j) values.push_back((&s)[j * stride].value);
            Value* cur = b_.CreateLoad(lg.acc->getAllocatedType(), lg.acc);
            b_.CreateStore(lanes_.accumulate(s.u, cur, values), lg.acc);
            break;
          }
          // A lane of a group updated here on its own (this run was not a vector): its element.
          auto lane = lane_of_.find(s.u);
          llvm::AllocaInst* a = lane != lane_of_.end() ? groups_[lane->second.first].acc : acc_.at(s.u);
          Value* cur = b_.CreateLoad(a->getAllocatedType(), a);
          Value* v = e_.accumulate(
              s.u, lane != lane_of_.end() ? b_.CreateExtractElement(cur, uint64_t(lane->second.second)) : cur, s.value);
          if (!s.u->reduce().ordered) allow_reassociation(v);  // lets LLVM vectorize float sums
          if (lane != lane_of_.end()) v = b_.CreateInsertElement(cur, v, uint64_t(lane->second.second));
          b_.CreateStore(v, a);
          break;
        }
        case LStmt::GroupReduce:
          throw Error("cpu codegen: kernel " + p_.name + " has a work-group reduce (GROUP is GPU only)");
        case LStmt::Store: break;  // above, side by side
      }
    }
  }

  // Loops that walk a buffer larger than L2 (a weight row per output in a decode step) fetch
  // kPrefetchAhead bytes ahead, a line per 64 bytes of stride. LLVM interleaves an unrolled laned
  // reduce's loads out of address order, and the hardware prefetchers then fall behind: an f16
  // matrix-vector product of 32000x2048 (Zen 5, one thread) ran at 30 GB/s, 38 with these
  // prefetches, where a loop loading in order reaches 40 (4-8 KB ahead measured best).
  void prefetch(const LStmt& s) {
    const int64_t kPrefetchAhead = 4096, kLine = 64;
    for (const LStmt::Stream& st : s.streams) {
      const BufferInfo& buf = g_.buffer(st.buffer);
      if (numel(buf.shape) * dtype_size(buf.dtype) < l2_bytes_) continue;
      Value* at = b_.CreateGEP(llvm_type(c_, buf.dtype, false), args_.at(st.buffer), value(st.index));
      for (int64_t off = 0; off < st.stride; off += kLine) {
        Value* p = b_.CreateGEP(b_.getInt8Ty(), at, b_.getInt64(uint64_t(kPrefetchAhead + off)));
        b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()},
                           {p, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
      }
    }
  }

  // The innermost dim's loop over this work item's chunk [lo_, hi_). Where its body has gates
  // that bound the dim to an interval [a, b) (the edges of a pad, a concat's parts), it runs as
  // three loops: before a, the interval with those gates known true, and from b on. The middle
  // one has no branches or masked loads; masked loads of 16-bit types are scalarized on x86,
  // which left an f16 pad kernel scalar and 20x slower than its f32 twin.
  void inner_loop(const LStmt& s) {
    Gates gates = gates_of(s);
    auto run = [&](Value* lo, Value* hi, const std::vector<const UOp*>& hold) {
      auto saved = e_.values();
      for (const UOp* g : hold) e_.set(g, b_.getTrue()), known_true_.insert(g);
      loop(
          lo, hi,
          [&](Value* i) {
            e_.set(s.u, i);
            stmts(s.body);
            prefetch(s);
          },
          holds_copies(s.body));
      e_.values() = std::move(saved);
      known_true_.clear();
    };
    if (gates.bounds.empty()) return run(lo_, hi_, {});
    auto smin = [&](Value* x, Value* y) { return b_.CreateSelect(b_.CreateICmpSLT(x, y), x, y); };
    auto smax = [&](Value* x, Value* y) { return b_.CreateSelect(b_.CreateICmpSLT(x, y), y, x); };
    Value* m1 = smin(smax(lo_, b_.getInt64(uint64_t(gates.a))), hi_);
    Value* m2 = smax(smin(hi_, b_.getInt64(uint64_t(gates.b))), m1);
    run(lo_, m1, {});
    if (gates.invariant.empty()) {
      run(m1, m2, gates.bounds);
    } else {
      // Conjuncts that do not change along the dim (a pad's rows, seen from its columns) decide
      // once, before the loop, which copy runs: where they hold, the loop has no gates left.
      Value* all = nullptr;
      for (const UOp* g : gates.invariant) all = all ? b_.CreateAnd(all, value(g)) : value(g);
      auto* then = llvm::BasicBlock::Create(c_, "gates_hold", fn_);
      auto* other = llvm::BasicBlock::Create(c_, "gates_vary", fn_);
      auto* merge = llvm::BasicBlock::Create(c_, "gates_done", fn_);
      b_.CreateCondBr(all, then, other);
      b_.SetInsertPoint(then);
      std::vector<const UOp*> hold = gates.bounds;
      hold.insert(hold.end(), gates.invariant.begin(), gates.invariant.end());
      run(m1, m2, hold);
      b_.CreateBr(merge);
      b_.SetInsertPoint(other);
      run(m1, m2, gates.bounds);
      b_.CreateBr(merge);
      b_.SetInsertPoint(merge);
    }
    run(m2, hi_, {});
  }

  // The conjuncts of the gates that loop `s` evaluates (of gated loads, WHEREs, gated stores):
  // those that bound its range to [a, b), and those computed before it (they read no range of
  // the loop or of the loops inside it, no accumulator and no memory: the lowering hoists such
  // expressions above the loop).
  struct Gates {
    int64_t a = 0, b = 0;
    std::vector<const UOp*> bounds, invariant;
  };
  static Gates gates_of(const LStmt& s) {
    Gates out;
    out.b = range_extent(s.u);
    std::vector<const UOp*> roots;
    std::unordered_set<const UOp*> inside = {s.u};
    each_stmt(s.body, [&](const LStmt& t) {
      roots.push_back(t.u);
      if (t.value) roots.push_back(t.value);
      if (t.kind == LStmt::Loop) inside.insert(t.u);
    });
    auto before_loop = [&](const UOp* c) {
      if (c->is_const()) return false;
      for (const UOp* u : toposort({c}))
        if (inside.count(u) || u->op == Op::KReduce || u->op == Op::Load) return false;
      return true;
    };
    for (const UOp* u : evaluated_in(roots)) {
      const UOp* gate = u->op == Op::Load && u->src.size() > 2    ? u->src[2]
                        : u->op == Op::Where                      ? u->src[0]
                        : u->op == Op::Store && u->src.size() > 3 ? u->src[3]
                                                                  : nullptr;
      std::vector<const UOp*> work = {gate};
      while (!work.empty()) {
        const UOp* c = work.back();
        work.pop_back();
        if (!c) continue;
        if (c->op == Op::And && c->dtype == DType::Bool)
          work.insert(work.end(), c->src.begin(), c->src.end());
        else if (interval_bound(c, s.u, out.a, out.b))
          out.bounds.push_back(c);
        else if (before_loop(c))
          out.invariant.push_back(c);
      }
    }
    return out;
  }

  // Calls f on every statement of `body`, nested ones too, outer first.
  template <class F>
  static void each_stmt(const std::vector<LStmt>& body, const F& f) {
    for (const LStmt& s : body) {
      f(s);
      each_stmt(s.body, f);
    }
  }

  // The expressions the statements evaluate: not the insides of a KREDUCE, whose value is an
  // accumulator filled in a loop of its own (perhaps a sibling of this one).
  static std::vector<const UOp*> evaluated_in(const std::vector<const UOp*>& roots) {
    std::vector<const UOp*> out, work(roots.begin(), roots.end());
    std::unordered_set<const UOp*> seen;
    while (!work.empty()) {
      const UOp* u = work.back();
      work.pop_back();
      if (!u || !seen.insert(u).second) continue;
      out.push_back(u);
      if (u->op != Op::KReduce) work.insert(work.end(), u->src.begin(), u->src.end());
    }
    return out;
  }

  // Accumulator updates through DOT4 (an int8 matmul's tile of rows): SLP does not turn the
  // scalar byte arithmetic into dot-product instructions, so these are vectorized here too.
  static bool has_dot4(const std::vector<LStmt>& body) {
    bool dot = false;
    each_stmt(body, [&](const LStmt& s) {
      if (s.kind == LStmt::AccUpdate && !dot)
        for (const UOp* u : toposort({s.value})) dot = dot || u->op == Op::Dot4;
    });
    return dot;
  }

  static bool has_sum(const std::vector<LStmt>& body) {
    bool sum = false;
    each_stmt(body, [&](const LStmt& s) { sum = sum || (s.kind == LStmt::AccInit && s.u->reduce().op == Op::Add); });
    return sum;
  }

  // Whether `u` is `r + k < c` or its negation `r + k >= c`; if so narrows [a, b) to where it holds.
  static bool interval_bound(const UOp* u, const UOp* r, int64_t& a, int64_t& b) {
    bool negated = u->op == Op::Xor && u->src[1]->is_const(1);
    const UOp* cmp = negated ? u->src[0] : u;
    if (cmp->op != Op::CmpLt || cmp->src[0]->dtype != DType::Index || !cmp->src[1]->is_const()) return false;
    const UOp* x = cmp->src[0];
    int64_t k = 0;
    if (x->op == Op::Add && x->src[1]->is_const()) k = x->src[1]->ival(), x = x->src[0];
    if (x != r) return false;
    int64_t c = cmp->src[1]->ival() - k;
    if (negated)
      a = std::max(a, c);
    else
      b = std::min(b, c);
    return true;
  }

  // The stores of one scope. Gated ones (the padding of a PADTO axis) are first tried all at
  // once: where every gate holds, as in all but the last tile, they stay straight-line code that
  // the SLP vectorizer bundles. Otherwise each is a branch (masked stores for the loop vectorizer).
  void stores(const LStmt* first, const LStmt* last) {
    Value* all = nullptr;
    for (const LStmt* s = first; s != last; ++s)
      if (s->u->src.size() > 3) all = all ? b_.CreateAnd(all, value(s->u->src[3])) : value(s->u->src[3]);
    if (!all) return ungated_stores(first, last);
    if (last - first == 1) return store(first->u, true);
    auto* fast = llvm::BasicBlock::Create(c_, "all_stores", fn_);
    auto* slow = llvm::BasicBlock::Create(c_, "gated_stores", fn_);
    auto* merge = llvm::BasicBlock::Create(c_, "stored", fn_);
    b_.CreateCondBr(all, fast, slow);
    b_.SetInsertPoint(fast);
    ungated_stores(first, last);
    b_.CreateBr(merge);
    b_.SetInsertPoint(slow);
    for (const LStmt* s = first; s != last; ++s) store(s->u, true);
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
  }

  // Stores that need no gate. A run of UPCAST copies narrowing f32 results to f16 at
  // consecutive addresses becomes one vector conversion and store: the SLP vectorizer leaves
  // such runs scalar when their values come from loop accumulators, and then the whole register
  // tile stays scalar (an f16 conv ran 10x slower than its f32 twin).
  void ungated_stores(const LStmt* first, const LStmt* last) {
    for (const LStmt* s = first; s != last;) {
      size_t n = p_.lanes_expanded ? narrowing_run(s, last) : 1;
      if (n < 4) {
        store(s->u, false);
        ++s;
        continue;
      }
      n = size_t(1) << llvm::Log2_64(n);  // a power of two: legal vector widths
      auto* vt = llvm::FixedVectorType::get(b_.getFloatTy(), unsigned(n));
      Value* vec = llvm::PoisonValue::get(vt);
      for (size_t j = 0; j < n; ++j) vec = b_.CreateInsertElement(vec, value(s[j].u->src[2]->src[0]), uint64_t(j));
      Value* half = b_.CreateFPTrunc(vec, llvm::FixedVectorType::get(b_.getHalfTy(), unsigned(n)));
      const UOp* st = s->u;
      Value* p = b_.CreateGEP(b_.getHalfTy(), args_.at(st->src[0]->ival()), value(st->src[1]));
      tag_buffer_access(b_.CreateAlignedStore(half, p, llvm::Align(2)), st->src[0]->ival());
      s += n;
    }
  }

  // How many stores from `s` on write CAST(f16, f32 value) to consecutive elements of one buffer.
  size_t narrowing_run(const LStmt* s, const LStmt* last) {
    auto narrows = [](const UOp* st) {
      const UOp* v = st->src[2];
      return st->src.size() == 3 && v->op == Op::Cast && v->dtype == DType::F16 && v->src[0]->dtype == DType::F32;
    };
    if (!narrows(s->u)) return 1;
    auto [base, off] = base_offset(value(s->u->src[1]));
    size_t n = 1;
    for (const LStmt* t = s + 1; t != last && narrows(t->u) && t->u->src[0] == s->u->src[0]; ++t, ++n) {
      auto [b, o] = base_offset(value(t->u->src[1]));
      if (b != base || o != off + int64_t(n)) break;
    }
    return n;
  }

  // An index value as base + constant (the form the copies' indices take after constant folding).
  static std::pair<Value*, int64_t> base_offset(Value* idx) {
    if (auto* add = llvm::dyn_cast<llvm::BinaryOperator>(idx); add && add->getOpcode() == llvm::Instruction::Add)
      if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(add->getOperand(1)))
        return {add->getOperand(0), c->getSExtValue()};
    return {idx, 0};
  }

  void store(const UOp* st, bool gated) {
    llvm::BasicBlock* merge = nullptr;
    if (gated && st->src.size() > 3) {
      auto* then = llvm::BasicBlock::Create(c_, "store", fn_);
      merge = llvm::BasicBlock::Create(c_, "after_store", fn_);
      b_.CreateCondBr(b_.CreateFreeze(value(st->src[3])), then, merge);
      b_.SetInsertPoint(then);
    }
    Value* v = value(st->src[2]);
    DType t = st->src[2]->dtype;
    if (t == DType::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
    Value* p = b_.CreateGEP(llvm_type(c_, t, true), args_.at(st->src[0]->ival()), value(st->src[1]));
    tag_buffer_access(b_.CreateStore(v, p), st->src[0]->ival());
    if (merge) {
      b_.CreateBr(merge);
      b_.SetInsertPoint(merge);
    }
  }

  Value* value(const UOp* u) { return e_.value(u); }

  // The emitter's hooks. A gated load (`gate ? buf[idx] : 0`) is a branch around the load: the
  // loop vectorizer turns it into a masked vector load where the index is contiguous (pads,
  // concats). Copies expanded for SLP keep the branch-free select form, since SLP works on
  // straight-line code, and so do 16-bit loads (below).
  Value* load(const UOp* u) override {
    auto s = [&](int i) { return value(u->src[size_t(i)]); };
    if (u->src.size() <= 2) return load_buffer(u, s(1));
    // 16-bit elements too: x86 has no masked 16-bit loads or gathers, so the loop vectorizer
    // would leave a branch per element (an f16 concat of resized maps ran 17x its f32 twin).
    if (!p_.lanes_expanded && dtype_size(u->dtype) != 2) return conditional_load(u);
    // Gated, branch-free: read index 0 (always in bounds) where the gate is false, then select 0.
    Value* v = load_buffer(u, b_.CreateSelect(s(2), s(1), b_.getInt64(0)));
    return b_.CreateSelect(s(2), v, llvm::Constant::getNullValue(v->getType()));
  }

  Value* accumulator(const UOp* reduce) override {
    if (auto lane = lane_of_.find(reduce); lane != lane_of_.end()) {
      llvm::AllocaInst* v = groups_[lane->second.first].acc;
      return b_.CreateExtractElement(b_.CreateLoad(v->getAllocatedType(), v), uint64_t(lane->second.second));
    }
    llvm::AllocaInst* a = acc_.at(reduce);
    return b_.CreateLoad(a->getAllocatedType(), a);
  }

  Value* math(Op op, DType t, Value* x) override { return e_.intrinsic_math(op, t, x); }

  // In elementwise and max/min-reduce loops left to the loop vectorizer, 16-bit floats widen
  // with integer arithmetic (exact, vectorizable) instead of fpext: InstCombine turns a compare,
  // max or min of fpext'ed values into the same op on f16, which x86 without AVX512-FP16 runs
  // one element at a time (an f16 LeakyRelu's compare became a data-dependent branch per
  // element, 50x slower than f32). Sums of products (convs, matmuls) and register-tiled (SLP)
  // kernels keep fpext: one vcvtph2ps per vector, and nothing there to narrow.
  Value* widen_half(Value* x, DType from) override {
    if (!widen_exactly_) return nullptr;
    auto* i32 = b_.getInt32Ty();
    Value* u = b_.CreateZExt(b_.CreateBitCast(x, b_.getInt16Ty()), i32);
    if (from == DType::BF16) return b_.CreateBitCast(b_.CreateShl(u, 16), b_.getFloatTy());
    // f16: exponent and mantissa shifted into f32 position, rebiased by 2^112 (exact for
    // normals and subnormals); infinities and NaNs keep an all-ones exponent; then the sign.
    Value* em = b_.CreateAnd(u, 0x7fff);
    Value* shifted = b_.CreateShl(em, 13);
    Value* scaled =
        b_.CreateFMul(b_.CreateBitCast(shifted, b_.getFloatTy()), llvm::ConstantFP::get(b_.getFloatTy(), 0x1p112));
    Value* special = b_.CreateOr(shifted, 0x7f800000);
    Value* bits = b_.CreateSelect(b_.CreateICmpUGE(em, b_.getInt32(0x7c00)), special, b_.CreateBitCast(scaled, i32));
    Value* sign = b_.CreateShl(b_.CreateAnd(u, 0x8000), 16);
    return b_.CreateBitCast(b_.CreateOr(bits, sign), b_.getFloatTy());
  }

  // Runs of accumulator updates (LANES, or a register tile's copies) that are vectors lane by
  // lane (isomorphic_lanes): the widest power-of-two width up to 64 that splits the run into such
  // groups, at the smallest stride. A reduce keeps one lane in one group wherever it is updated.
  // Widest first, not nearest first: a conv's tile of 16 channels (a weight vector) x 4 columns
  // (4 neighbouring inputs) left to SLP, or grouped nearest first, became 64 accumulators of 4
  // columns each, spilled (resnet18's 3x3 convs at 28x28: 26 GFLOP/s; 16 zmm of channels: 180).
  // No group narrower than a vector register: a tile of 14 columns x 2 rows of a 1x1 conv, 28
  // neighbours, would split into groups of 4 (shufflenet's 1x1 convs at 14x14 3x slower than
  // SLP's vectors of 16, 8 and 4).
  void plan_lane_groups(const std::vector<LStmt>& body) {
    for (size_t i = 0; i < body.size();) {
      if (body[i].kind == LStmt::Loop) plan_lane_groups(body[i].body);
      if (body[i].kind != LStmt::AccUpdate) {
        ++i;
        continue;
      }
      size_t end = i;
      while (end < body.size() && body[end].kind == LStmt::AccUpdate) ++end;
      const size_t n = end - i;
      // Lanes of consecutive updates, else of updates `stride` apart: an unrolled tile whose
      // vector axis is not its innermost (an int8 conv's DOT4 lanes along output channels,
      // outside a spatial tile).
      bool grouped = false;
      auto group = [&](size_t w, size_t stride) {
        if (n % (w * stride) || !lane_groups_fit(&body[i], n, w, stride)) return false;
        for (size_t block = 0; block < n; block += w * stride)
          for (size_t first = 0; first < stride; ++first) add_lane_group(&body[i + block + first], w, stride);
        return true;
      };
      if (tile_groups_)
        for (size_t w = 64; w >= min_group_ && !grouped; w /= 2)
          for (size_t stride = 1; stride <= n / w && !grouped; ++stride) grouped = group(w, stride);
      else
        for (size_t stride = 1; stride <= n / 4 && !grouped; ++stride)
          for (size_t w = 64; w >= 4 && !grouped; w /= 2) grouped = group(w, stride);
      i = end;
    }
  }
  bool lane_groups_fit(const LStmt* s, size_t n, size_t w, size_t stride) {
    for (size_t block = 0; block < n; block += w * stride)
      for (size_t at = block; at < block + stride; ++at)
        if (!lane_group_fits(s + at, w, stride)) return false;
    return true;
  }
  // The w updates s[0], s[stride], ... as one group's lanes.
  bool lane_group_fits(const LStmt* s, size_t w, size_t stride) {
    std::vector<const UOp*> values;
    for (size_t m = 0; m < w; ++m) {
      const UOp* r = s[m * stride].u;
      if (r->dtype == DType::Bool || r->reduce().op != s[0].u->reduce().op || r->dtype != s[0].u->dtype) return false;
      // Accumulators updated elsewhere too must form the same group there.
      auto l = lane_of_.find(r), first = lane_of_.find(s[0].u);
      if ((l == lane_of_.end()) != (first == lane_of_.end())) return false;
      if (l != lane_of_.end() && (l->second != std::make_pair(first->second.first, unsigned(m)) ||
                                  groups_[l->second.first].reduces.size() != w))
        return false;
      values.push_back(s[m * stride].value);
    }
    return isomorphic_lanes(values);
  }
  void add_lane_group(const LStmt* s, size_t w, size_t stride) {
    std::vector<const UOp*> reduces;
    for (size_t m = 0; m < w; ++m) reduces.push_back(s[m * stride].u);
    // The same accumulators updated elsewhere (a loop emitted in parts) share the group.
    size_t index = groups_.size();
    if (auto l = lane_of_.find(reduces[0]); l != lane_of_.end())
      index = l->second.first;
    else
      groups_.push_back({reduces, nullptr});
    for (size_t m = 0; m < w; ++m) {
      lane_of_[reduces[m]] = {index, unsigned(m)};
      group_at_[&s[m * stride]] = -1;
    }
    group_at_[s] = int64_t(index);
    stride_at_[s] = stride;
  }

  // The sum of every lane of whole groups (LANES' combine after the loop; a quantized block's
  // lanes may form several groups) as vector adds and one vector reduction: a few shuffles
  // instead of a scalar add per lane. nullptr for any other value.
  Value* lane_sum(const UOp* u) {
    if (groups_.empty() || u->op != Op::Add) return nullptr;
    std::vector<const UOp*> leaves, todo{u};
    while (!todo.empty()) {
      const UOp* x = todo.back();
      todo.pop_back();
      if (x->op == Op::Add && x->dtype == u->dtype)
        todo.insert(todo.end(), x->src.begin(), x->src.end());
      else
        leaves.push_back(x);
    }
    std::map<size_t, size_t> lanes;  // group -> its lanes among the leaves
    std::unordered_set<const UOp*> seen;
    for (const UOp* x : leaves) {
      auto l = lane_of_.find(x);
      if (l == lane_of_.end() || x->reduce().op != Op::Add || !seen.insert(x).second) return nullptr;
      ++lanes[l->second.first];
    }
    Value* v = nullptr;
    for (auto [g, n] : lanes) {
      llvm::AllocaInst* acc = groups_[g].acc;
      if (n != groups_[g].reduces.size() || (v && acc->getAllocatedType() != v->getType())) return nullptr;
      Value* part = b_.CreateLoad(acc->getAllocatedType(), acc);
      v = v ? e_.binary(Op::Add, u->dtype, v, part) : part;
      if (auto* add = llvm::dyn_cast<llvm::Instruction>(v); add && llvm::isa<llvm::FPMathOperator>(add))
        add->setHasAllowReassoc(true);
    }
    if (!is_float(u->dtype)) return b_.CreateAddReduce(v);
    auto* r = llvm::cast<llvm::Instruction>(
        b_.CreateFAddReduce(llvm::ConstantFP::getNegativeZero(v->getType()->getScalarType()), v));
    r->setHasAllowReassoc(true);  // a tree of shuffles and adds, within f32 rounding
    return r;
  }

  // A load of `t` (the LOAD's element type in memory, or a vector of it: lanes) from element idx
  // of its buffer, aligned to the element.
  Value* load_at(const UOp* u, llvm::Type* t, Value* idx) {
    llvm::Type* elem = llvm_type(c_, u->dtype, true);
    llvm::LoadInst* load = b_.CreateAlignedLoad(t, b_.CreateGEP(elem, args_.at(u->src[0]->ival()), idx),
                                                llvm::Align(elem->getScalarSizeInBits() / 8));
    tag_buffer_access(load, u->src[0]->ival());
    return load;
  }

  // buf[idx] of a LOAD, in register form (bools are bytes in memory).
  Value* load_buffer(const UOp* u, Value* idx) {
    Value* load = load_at(u, llvm_type(c_, u->dtype, true), idx);
    return u->dtype == DType::Bool ? b_.CreateICmpNE(load, b_.getInt8(0)) : load;
  }

  Value* conditional_load(const UOp* u) {
    Value* idx = value(u->src[1]);
    Value* gate = value(u->src[2]);
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(gate); c && c->isOne()) return load_buffer(u, idx);
    llvm::BasicBlock* before = b_.GetInsertBlock();
    auto* then = llvm::BasicBlock::Create(c_, "gated", fn_);
    auto* merge = llvm::BasicBlock::Create(c_, "merged", fn_);
    // freeze (a no-op on a defined i1) keeps SimplifyCFG from turning the gate's compare chain
    // into a switch, which LLVM 19's loop vectorizer gives up on.
    b_.CreateCondBr(b_.CreateFreeze(gate), then, merge);
    b_.SetInsertPoint(then);
    Value* v = load_buffer(u, idx);
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
    llvm::PHINode* phi = b_.CreatePHI(v->getType(), 2);
    phi->addIncoming(v, then);
    phi->addIncoming(llvm::Constant::getNullValue(v->getType()), before);
    return phi;
  }

  llvm::Module& m_;
  const Graph& g_;
  const LoopProgram& p_;
  int64_t l2_bytes_;  // buffers larger than L2 stream from memory
  // Lane groups of a register tile (not LANES' partial sums, nor DOT4s): widest first, none
  // narrower than a vector register (plan_lane_groups).
  bool tile_groups_;
  size_t min_group_;
  llvm::LLVMContext& c_;
  IRBuilder<> b_;
  LlvmExprEmitter e_;
  llvm::Function* fn_ = nullptr;
  Value *lo_ = nullptr, *hi_ = nullptr;
  bool widen_exactly_;                         // 16-bit floats widen by integer arithmetic (widen_half)
  std::unordered_set<const UOp*> known_true_;  // gates that hold in the inner loop being emitted
  std::unordered_map<int64_t, Value*> args_;
  std::unordered_map<int64_t, llvm::MDNode*> scope_, noalias_;  // per buffer: its scope, the others
  std::unordered_map<const UOp*, llvm::AllocaInst*> acc_;
  // LANES updates emitted as vectors: the groups, each reduce's (group, lane), and per update
  // statement its group (at the group's first lane) or -1 (the other lanes).
  struct LaneGroup {
    std::vector<const UOp*> reduces;
    llvm::AllocaInst* acc;
  };
  LaneVectorEmitter lanes_;
  std::vector<LaneGroup> groups_;
  std::unordered_map<const UOp*, std::pair<size_t, unsigned>> lane_of_;
  std::unordered_map<const LStmt*, int64_t> group_at_;
  std::unordered_map<const LStmt*, size_t> stride_at_;  // a group's first statement: its lanes' distance
};
}  // namespace

CpuWorkSplit cpu_work_split(const LoopProgram& p, int64_t target_items) {
  CpuWorkSplit s;
  // Outer dims over a run-time size count at their smallest (1 for a token count): their upper
  // bound would leave a one-token decode step a single item, the whole row loop, for one
  // thread. Not where a loop
  // runs before the inner one (a softmax's max and sum, hoisted out of it): every chunk would
  // run it again (rec's 6625-class softmax in 64 chunks a row: 6.3 ms instead of 0.28).
  bool hoisted = std::any_of(p.body.begin(), p.body.end(),
                             [&](const LStmt& s) { return s.kind == LStmt::Loop && s.u != p.inner; });
  int64_t outer = 1, bound = 1;
  for (const UOp* r : p.globals)
    if (r != p.inner)
      outer *= r->src[0]->is_const() || hoisted ? range_extent(r) : std::max<int64_t>(1, r->src[0]->vmin),
          bound *= range_extent(r);
  int64_t inner = p.inner ? range_extent(p.inner) : 1;
  if (outer == 0 || inner == 0) {  // a zero-element output: nothing to run
    s.chunk = 1, s.items = 0;
    return s;
  }
  s.chunk = inner;
  if (outer < target_items && inner > 1) {
    int64_t want = (target_items + outer - 1) / outer;
    s.chunk = std::max<int64_t>(64, (inner + want - 1) / want);
    s.chunk = std::min(s.chunk, inner);
  }
  s.items = bound * ((inner + s.chunk - 1) / s.chunk);
  return s;
}

llvm::Function* render_cpu_kernel(llvm::Module& m, const Graph& g, const LoopProgram& p, const CpuWorkSplit& split,
                                  const TargetProfile& t) {
  return CpuRenderer(m, g, p, t).run(split);
}

}  // namespace tgc
