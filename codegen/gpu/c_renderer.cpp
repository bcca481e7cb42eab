#include "codegen/gpu/c_renderer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "runtime-stub/include/tgc_model.h"

namespace tgc {

namespace {
// ---- 4-vector accesses. An UPCAST (or UNROLL) by 4 or more of a contiguous axis loads (or
// stores) base+o, ..., base+o+3 in one statement list; where base and o are multiples of 4 the
// four can be one vector access (every buffer starts 16-byte aligned): 16 bytes of a quantized
// weight are four of them.
struct Quad {
  int64_t buffer;
  const UOp* base;
  int64_t offset;  // a multiple of 4
  bool store;
  const UOp* lane[4] = {};
  const LStmt* first = nullptr;  // in statement order
  const LStmt* last = nullptr;
  bool complete() const { return lane[0] && lane[1] && lane[2] && lane[3]; }
};

// index = base + k with k a constant >= 0 (0 where it is not a sum with one).
std::pair<const UOp*, int64_t> lane_of(const UOp* index) {
  if (index->op == Op::Add)
    for (int c = 0; c < 2; ++c) {
      const UOp* k = index->src[size_t(c)];
      if (k->op == Op::Const && k->ival() >= 1) return {index->src[size_t(1 - c)], k->ival()};
    }
  return {index, 0};
}

bool multiple_of_4(const UOp* u) {
  switch (u->op) {
    case Op::Const: return u->ival() % 4 == 0;
    case Op::Add: return multiple_of_4(u->src[0]) && multiple_of_4(u->src[1]);
    case Op::Mul: return multiple_of_4(u->src[0]) || multiple_of_4(u->src[1]);
    default: return false;
  }
}

struct QuadScan {
  std::vector<Quad> quads;                           // complete, at a multiple of 4
  std::map<std::pair<int64_t, bool>, int> accesses;  // (buffer, store) -> its loads or stores, all of them
};

// The 4-vectors among the loads (ungated) and stores of `body` and its loops that `candidate`
// accepts. A second load of the same address stays scalar.
void scan_quads(const std::vector<LStmt>& body, const std::function<bool(const UOp*)>& candidate, QuadScan& out) {
  std::vector<Quad> quads;
  for (const LStmt& s : body) {
    if (s.kind == LStmt::Loop) scan_quads(s.body, candidate, out);
    bool load = s.kind == LStmt::Let && s.u->op == Op::Load, store = s.kind == LStmt::Store;
    if (!load && !store) continue;
    int64_t b = s.u->src[0]->ival();
    ++out.accesses[{b, store}];
    if ((load && s.u->src.size() != 2) || !candidate(s.u)) continue;
    auto [base, at] = lane_of(s.u->src[1]);
    int64_t k = at % 4, offset = at - k;
    auto q = std::find_if(quads.begin(), quads.end(), [&](const Quad& q) {
      return q.buffer == b && q.base == base && q.offset == offset && q.store == store;
    });
    if (q == quads.end()) q = quads.insert(quads.end(), Quad{b, base, offset, store});
    if (q->lane[k]) continue;
    q->lane[k] = s.u;
    if (!q->first) q->first = &s;
    q->last = &s;
  }
  for (const Quad& q : quads)
    if (q.complete() && multiple_of_4(q.base)) out.quads.push_back(q);
}

class CRenderer {
 public:
  CRenderer(const Graph& g, const CDialect& d, int index_bits)
      : g_(g), d_(d), index_(index_bits == 32 ? DType::I32 : DType::I64) {}

  std::string run(const GpuProgram& k) {
    set_stage(k);
    for (size_t i = 0; i < p_->args.size(); ++i) arg_[p_->args[i]] = i;
    written_.insert(p_->args[0]);
    CKernelHead head{p_->name, buffers(), k.local_size, k.global_size, int64_t(g_.vars().size())};
    plan_vectors(head.buffers);
    std::string idx = reg(DType::Index);
    if (k.work_groups) {
      o_ << "  " << idx << " gid = " << d_.group_id() << ", lid = " << d_.local_id() << ";\n";
      decode(k.local_decode, "lid", "  ");
    } else {
      o_ << "  " << idx << " gid = " << d_.global_id() << ";\n";
    }
    decode(k.global_decode, "gid", "  ");
    for (const UOp* r : k.bounded) o_ << "  if (" << name(r) << " >= " << end_of(r) << ") return;\n";
    std::string top = o_.str();
    o_.str("");
    stmts(p_->body, 1);
    return assemble(head, top, o_.str());
  }

  // The stages one after another in one work-group of `group` threads (passes/serial_launches.h).
  // A stage without work-groups: each thread takes every group-th output. With work-groups of L
  // threads: group / L of them per round, every thread through the same rounds (barriers), the
  // last round's surplus groups repeating the last group without storing.
  std::string run_serial(const std::vector<GpuProgram>& stages, const std::string& kernel_name, int64_t group) {
    std::vector<const LoopProgram*> programs;
    for (const GpuProgram& k : stages) programs.push_back(k.program), written_.insert(k.program->args[0]);
    for (int64_t id : serial_launch_args(programs)) arg_.insert({id, arg_.size()});
    CKernelHead head{kernel_name, buffers(), group, group, int64_t(g_.vars().size()), /*distinct=*/false};
    std::string idx = reg(DType::Index), top = "  " + idx + " lid0 = " + d_.local_id() + ";\n", body;
    for (size_t i = 0; i < stages.size(); ++i) {
      const GpuProgram& k = stages[i];
      set_stage(k);
      check(k.bounded.empty() && group % k.local_size == 0, "internal error: kernel " + p_->name +
                                                                " cannot be a stage of a serial launch of " +
                                                                std::to_string(group) + " threads");
      sm_prefix_ = "s" + std::to_string(i) + "_";
      int64_t per_round = group / k.local_size, groups = k.work_groups ? k.global_size / k.local_size : k.global_size;
      o_ << "  // " << p_->name << "\n";
      if (!k.work_groups) {
        o_ << "  for (" << idx << " t = lid0; t < " << groups << "; t += " << group << ") {\n    " << idx
           << " gid = t;\n";
      } else {
        int64_t rounds = (groups + per_round - 1) / per_round;
        o_ << "  for (" << idx << " t = 0; t < " << rounds << "; ++t) {\n"
           << "    " << idx << " gid = t * " << per_round << " + lid0 / " << k.local_size << ", lid = lid0 % "
           << k.local_size << ";\n";
        if (groups % per_round) {
          o_ << "    bool live = gid < " << groups << ";\n    if (!live) gid = " << groups - 1 << ";\n";
          stage_gate_ = "live";
        }
        if (per_round > 1) slot_copies_ = per_round, slot_offset_ = "lid0 / " + std::to_string(k.local_size);
        decode(k.local_decode, "lid", "    ");
      }
      plan_vectors(head.buffers);
      decode(k.global_decode, "gid", "    ");
      stmts(p_->body, 2);
      o_ << "  }\n";
      if (i + 1 < stages.size()) o_ << "  " << d_.global_barrier() << ";\n";
      body += o_.str();
      o_.str("");
    }
    return assemble(head, top, body);
  }

 private:
  // The dialect never sees Index: it is the integer type of the index width.
  DType dialect_type(DType t) const { return t == DType::Index ? index_ : t; }
  std::string reg(DType t) const { return d_.reg_type(dialect_type(t)); }
  std::string mem(DType t) const { return d_.mem_type(dialect_type(t)); }

  void decode(const std::vector<IdDecode>& ranges, const char* from, const char* pad) {
    for (const IdDecode& r : ranges)
      o_ << pad << reg(DType::Index) << " " << name(r.range) << " = " << from << " % " << r.extent << "; " << from
         << " /= " << r.extent << ";\n";
  }

  // Per-stage state starts afresh: names are scoped to the stage's block.
  void set_stage(const GpuProgram& k) {
    k_ = &k, p_ = k.program;
    names_.clear(), vector_load_at_.clear(), vector_lane_.clear(), vector_store_at_.clear(), vector_store_skip_.clear();
    stage_gate_.clear(), slot_offset_.clear(), slot_copies_ = 1;
  }

  std::vector<CBuffer> buffers() const {
    std::vector<CBuffer> out(arg_.size());
    for (const auto& [id, i] : arg_) out[i] = cbuffer(id);
    return out;
  }

  // File scope, signature, entry, the ids (`top`), then the body; shared arrays are known once the
  // body is rendered.
  std::string assemble(const CKernelHead& head, const std::string& top, const std::string& body) {
    std::string file_scope = d_.prelude(head), kernel_scope;
    for (const std::string& decl : shared_) {
      if (d_.shared_at_file_scope())
        file_scope += decl + "\n";
      else
        kernel_scope += "  " + decl + "\n";
    }
    return file_scope + d_.signature(head) + " {\n" + d_.entry(head) + top + kernel_scope + body + "}\n";
  }

  std::string name(const UOp* u) {
    auto it = names_.find(u);
    if (it != names_.end()) return it->second;
    std::string n = u->op == Op::Range ? "r" + std::to_string(u->range().id) : "v" + std::to_string(names_.size());
    return names_[u] = n;
  }

  std::string buffer(int64_t id) const { return "b" + std::to_string(arg_.at(id)); }

  CBuffer cbuffer(int64_t id) const {
    const BufferInfo& info = g_.buffer(id);
    CBuffer b{buffer(id), info.dtype, written_.count(id) > 0, id == g_.vars_buffer()};
    if (info.image) b.image_width = std::min<int64_t>(numel(info.shape) / 4, TGC_IMAGE_ROW_TEXELS);
    return b;
  }

  // ---- 4-vector accesses (scan_quads). Loads: the vector is read at the first of the four,
  // which then take its components. Stores: all of an output's stores or none (GLSL writes them
  // through a second view of the binding), written at the last of the four.
  void plan_vectors(std::vector<CBuffer>& buffers) {
    QuadScan scan;
    scan_quads(
        p_->body,
        [&](const UOp* u) {
          bool store = u->op == Op::Store;
          DType t = store ? u->src[2]->dtype : u->dtype;
          const BufferInfo& b = g_.buffer(u->src[0]->ival());
          if (b.dtype != t) return false;
          if (b.image) return !store;  // texels, read as float 4-vectors whatever they store
          if (d_.vector_type(t).empty()) return false;
          return !store || (u->src.size() <= 3 && k_->store_gate.empty() && stage_gate_.empty());
        },
        scan);
    std::unordered_map<int64_t, int> in_quads;
    for (const Quad& q : scan.quads)
      if (q.store) in_quads[q.buffer] += 4;
    for (const Quad& q : scan.quads) {
      if (!q.store) {
        std::string v = "q" + std::to_string(vector_load_at_.size());
        for (int k = 0; k < 4; ++k) vector_lane_[q.lane[k]] = v + "." + "xyzw"[k];
        vector_load_at_[q.first->u] = {v, q};
        buffers[arg_.at(q.buffer)].vector4 = true;
        continue;
      }
      if (in_quads[q.buffer] != scan.accesses[{q.buffer, true}]) continue;
      buffers[arg_.at(q.buffer)].vector4 = true;
      for (const UOp* l : q.lane) vector_store_skip_.insert(l);
      vector_store_at_[q.last->u] = q;
    }
  }

  // The quad's index among the buffer's 4-vectors.
  std::string quad_index(const Quad& q) {
    return "(" + ref(q.base) + " / 4" + (q.offset ? " + " + std::to_string(q.offset / 4) : "") + ")";
  }

  // The vector read before the first of its four loads.
  void vector_load(const UOp* first, const std::string& pad) {
    auto it = vector_load_at_.find(first);
    if (it == vector_load_at_.end()) return;
    const auto& [v, q] = it->second;
    CBuffer b = cbuffer(q.buffer);
    b.vector4 = true;
    o_ << pad << d_.vector_type(b.image_width > 0 ? DType::F32 : b.dtype) << " " << v << " = "
       << d_.vector_element(b, quad_index(q)) << ";\n";
  }

  std::unordered_map<const UOp*, std::pair<std::string, Quad>> vector_load_at_;  // first load -> vector, quad
  std::unordered_map<const UOp*, std::string> vector_lane_;                      // load -> "q3.y"
  std::unordered_map<const UOp*, Quad> vector_store_at_;                         // last store -> quad
  std::unordered_set<const UOp*> vector_store_skip_;                             // stores made by a vector store

  void stmts(const std::vector<LStmt>& body, int depth) {
    std::string pad(size_t(depth) * 2, ' ');
    for (const LStmt& s : body) {
      switch (s.kind) {
        case LStmt::Let: {
          vector_load(s.u, pad);
          auto lane = vector_lane_.find(s.u);
          o_ << pad << reg(s.u->dtype) << " " << name(s.u) << " = "
             << (lane != vector_lane_.end() ? lane->second : expr(s.u)) << ";\n";
          break;
        }
        case LStmt::Loop: {
          std::string r = name(s.u);
          o_ << pad << "for (" << reg(DType::Index) << " " << r << " = 0; " << r << " < " << end_of(s.u) << "; ++" << r
             << ") {\n";
          stmts(s.body, depth + 1);
          o_ << pad << "}\n";
          break;
        }
        case LStmt::AccInit: o_ << pad << reg(s.u->dtype) << " " << name(s.u) << " = " << identity(s.u) << ";\n"; break;
        case LStmt::AccUpdate: o_ << pad << combine(s.u, name(s.u), ref(s.value)) << "\n"; break;
        case LStmt::GroupReduce: group_reduce(s.u, pad); break;
        case LStmt::Store: store(s.u, pad); break;
      }
    }
  }

  // Partials meet in shared memory between two barriers (the second lets the memory be reused);
  // every thread folds the slots of its own GROUP siblings, so all of them end with the total.
  // Where the dialect has subgroup reduces and the siblings are runs of consecutive local ids
  // (this reduce's GROUP ranges are the innermost local ranges), a subgroup reduce comes first
  // when the subgroup size divides the run, and shared memory only folds the subgroups' results.
  void group_reduce(const UOp* u, const std::string& pad) {
    GroupReduceSlots slots = group_reduce_slots(*k_, u);
    // In a serial launch several work-groups' worth share the group: a copy of the slots each.
    std::string copy = slot_offset_.empty() ? "0" : "(" + slot_offset_ + ")*" + std::to_string(slots.count);
    std::string a = name(u), sm = sm_prefix_ + "sm_" + a, mine = copy, base = copy, open;
    for (const SlotTerm& t : slots.terms) {
      std::string term = name(t.range) + "*" + std::to_string(t.stride);
      mine += "+" + term;
      if (t.folded) {
        std::string j = "j" + std::to_string(t.range->range().id);
        open += "for (int " + j + " = 0; " + j + " < " + std::to_string(t.extent) + "; ++" + j + ") ";
        base += "+" + j + "*" + std::to_string(t.stride);
      } else {
        base += "+" + term;
      }
    }
    shared_.push_back(d_.shared_array(reg(u->dtype), sm, slots.count * slot_copies_));
    std::string fold = pad + "{ " + sm + "[" + mine + "] = " + a + "; " + d_.barrier() + ";\n" + pad + "  " + a +
                       " = " + identity(u) + ";\n" + pad + "  " + open + combine(u, a, sm + "[" + base + "]") + "\n" +
                       pad + "  " + d_.barrier() + "; }\n";
    std::string sub = d_.subgroup_reduce(u->reduce().op, dialect_type(u->dtype));
    int64_t run = subgroup_run(slots);
    if (sub.empty() || run <= 1 || slot_copies_ > 1) {
      o_ << fold;
      return;
    }
    // The condition is the same in every thread of the work-group, so the barriers stay uniform.
    std::string sg = d_.subgroup_size(), runs = std::to_string(run) + "u", lid = "uint(" + d_.local_id() + ")";
    o_ << pad << "if (" << runs << " % " << sg << " == 0u) {\n"
       << pad << "  " << a << " = " << sub << "(" << a << ");\n"
       << pad << "  if (" << runs << " != " << sg << ") {\n"
       << pad << "    if (" << d_.subgroup_lane() << " == 0u) " << sm << "[" << lid << " / " << sg << "] = " << a
       << "; " << d_.barrier() << ";\n"
       << pad << "    " << a << " = " << identity(u) << ";\n"
       << pad << "    for (uint j = 0u; j < " << runs << " / " << sg << "; ++j) "
       << combine(u, a, sm + "[" + lid + " / " + runs + " * (" + runs + " / " + sg + ") + j]") << "\n"
       << pad << "    " << d_.barrier() << ";\n"
       << pad << "  }\n"
       << pad << "} else\n"
       << fold;
  }

  // A gated store (a PADTO axis) skips the padding; with GROUP ranges only the first thread stores.
  void store(const UOp* st, const std::string& pad) {
    if (vector_store_skip_.count(st)) {
      auto it = vector_store_at_.find(st);
      if (it == vector_store_at_.end()) return;
      const Quad& q = it->second;
      CBuffer b = cbuffer(q.buffer);
      b.vector4 = true;
      o_ << pad << d_.vector_element(b, quad_index(q)) << " = "
         << d_.vector_make(b.dtype, ref(q.lane[0]->src[2]), ref(q.lane[1]->src[2]), ref(q.lane[2]->src[2]),
                           ref(q.lane[3]->src[2]))
         << ";\n";
      return;
    }
    std::string first = st->src.size() > 3 ? ref(st->src[3]) : "";
    for (const UOp* r : k_->store_gate) first += (first.empty() ? "" : " && ") + name(r) + " == 0";
    if (!stage_gate_.empty()) first += (first.empty() ? "" : " && ") + stage_gate_;
    if (!first.empty())
      o_ << pad << "if (" << first << ")\n" << pad << "  ";
    else
      o_ << pad;
    DType t = st->src[2]->dtype;
    std::string b = buffer(st->src[0]->ival()), idx = ref(st->src[1]), v = ref(st->src[2]);
    if (t == DType::F16 || t == DType::BF16)
      o_ << d_.store_half(t, b, idx, v) << ";\n";
    else
      o_ << b << "[" << idx << "] = " << d_.cast(mem(t), v) << ";\n";
  }

  // acc = acc (op) v, for the reduce `u`.
  std::string combine(const UOp* u, const std::string& a, const std::string& v) {
    switch (u->reduce().op) {
      case Op::Add: return a + " += " + v + ";";
      case Op::Mul: return a + " *= " + v + ";";
      default: return a + " = " + d_.call(is_float(u->dtype) ? CFunction::FloatMax : CFunction::IntMax, {a, v}) + ";";
    }
  }

  std::string identity(const UOp* u) {
    DType t = u->dtype;
    switch (u->reduce().op) {
      // Integers in their own type: GLSL does not narrow an int literal into a uint8_t.
      case Op::Add: return is_float(t) ? float_lit(0, t) : d_.cast(reg(t), "0");
      case Op::Mul: return is_float(t) ? float_lit(1, t) : d_.cast(reg(t), "1");
      default:
        if (is_float(t)) return float_lit(-INFINITY, t);
        return is_unsigned(t) ? d_.cast(reg(t), "0") : d_.int_min(dialect_type(t));
    }
  }

  std::string float_lit(double v, DType t) const {
    // f16 registers of their own type: the constant converted (folded by every compiler), as
    // neither GLSL nor OpenCL C narrows a float literal implicitly everywhere.
    if (t == DType::F16 && d_.reg_type(DType::F16) != d_.reg_type(DType::F32))
      return d_.cast(reg(t), float_lit(v, DType::F32));
    if (std::isnan(v)) return d_.nan();
    if (std::isinf(v)) return v > 0 ? d_.infinity() : "(-" + d_.infinity() + ")";
    std::ostringstream o;
    o.precision(std::numeric_limits<double>::max_digits10);
    o << v;
    std::string s = o.str();
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s + d_.float_suffix(t);
  }

  // Where range `r` ends: a constant, a VAR, or an expression of VARs (a run-time size through a
  // pad or window), written out in place since no statement computes it.
  std::string end_of(const UOp* r) {
    inline_index_ = true;
    std::string s = ref(r->src[0]);
    inline_index_ = false;
    return s;
  }
  bool inline_index_ = false;

  std::string ref(const UOp* u) {
    if (inline_index_ && u->op != Op::Const && u->op != Op::Var && u->op != Op::Range) return "(" + expr(u) + ")";
    if (u->op == Op::Const) {
      if (is_float(u->dtype)) return float_lit(u->fval(), u->dtype);
      if (u->dtype == DType::Bool) return u->ival() ? "true" : "false";
      return d_.cast(reg(u->dtype), std::to_string(u->ival()) + d_.int_suffix(dialect_type(u->dtype)));
    }
    if (u->op == Op::Var) {  // a run-time dim: its value as the dialect passes it, or in the vars buffer
      std::string passed = d_.var_value(g_.var_slot(u));
      if (!passed.empty()) return d_.cast(reg(DType::Index), passed);
      int64_t vars = g_.vars_buffer();
      std::string v = buffer(vars) + "[" + std::to_string(g_.var_slot(u)) + "]";
      return g_.buffer(vars).dtype == dialect_type(DType::Index) ? v : d_.cast(reg(DType::Index), v);
    }
    return name(u);
  }

  std::string expr(const UOp* u) {
    auto s = [&](int i) { return ref(u->src[size_t(i)]); };
    DType t = u->dtype;
    bool f = is_float(t);
    switch (u->op) {
      case Op::Load: {
        std::string b = buffer(u->src[0]->ival());
        std::string idx = u->src.size() > 2 ? "(" + s(2) + " ? " + s(1) + " : 0)" : s(1);
        std::string v = t == DType::F16 || t == DType::BF16 ? d_.load_half(t, b, idx) : b + "[" + idx + "]";
        if (t == DType::Bool) v = "(" + v + " != 0)";
        if (u->src.size() > 2) return "(" + s(2) + " ? " + d_.cast(reg(t), v) + " : " + d_.zero(reg(t)) + ")";
        return v;
      }
      case Op::Neg: return "(-" + s(0) + ")";
      case Op::Exp2: return d_.call(CFunction::Exp2, {s(0)});
      case Op::Log2: return d_.call(CFunction::Log2, {s(0)});
      case Op::Sin: return d_.call(CFunction::Sin, {s(0)});
      case Op::Sqrt: return d_.call(CFunction::Sqrt, {s(0)});
      case Op::Trunc: return f ? d_.call(CFunction::Trunc, {s(0)}) : s(0);
      case Op::Recip: return "(" + float_lit(1, t) + " / " + s(0) + ")";
      case Op::Cast:
        if (t == DType::Bool) return "(" + s(0) + " != 0)";
        if (t == DType::BF16) return d_.bf16_round("(" + d_.cast(reg(DType::F32), s(0)) + ")");
        return d_.cast(reg(t), s(0));
      case Op::Bitcast:
        // bf16 registers are floats: move its 16 bits into or out of the upper half.
        if (t == DType::BF16) return d_.bf16_from_bits(s(0));
        if (u->src[0]->dtype == DType::BF16)
          return d_.cast(reg(t), d_.bitcast(DType::F32, DType::U32, s(0)) + " >> 16");
        return d_.bitcast(dialect_type(u->src[0]->dtype), dialect_type(t), s(0));
      case Op::Add: return "(" + s(0) + (t == DType::Bool ? " || " : " + ") + s(1) + ")";
      case Op::Mul: return "(" + s(0) + (t == DType::Bool ? " && " : " * ") + s(1) + ")";
      case Op::Max: return d_.call(f ? CFunction::FloatMax : CFunction::IntMax, {s(0), s(1)});
      // The 0 in the operands' type, as for identities.
      // Integers: the model's through the dialect (the signs of negative operands), index
      // arithmetic as it is (positions; every real model and op case runs so on NVIDIA's Vulkan).
      case Op::Mod:
        if (f) return d_.call(CFunction::FloatMod, {s(0), s(1)});
        return "(" + s(1) + " == 0 ? " + d_.zero(reg(t)) + " : " +
               (t == DType::Index ? s(0) + " % " + s(1) : d_.int_rem(t, s(0), s(1))) + ")";
      case Op::IDiv:  // floats: Tensor::div_exact, IEEE division
        if (f) return "(" + s(0) + " / " + s(1) + ")";
        return "(" + s(1) + " == 0 ? " + d_.zero(reg(t)) + " : " +
               (t == DType::Index ? s(0) + " / " + s(1) : d_.int_div(t, s(0), s(1))) + ")";
      case Op::CmpLt: return "(" + s(0) + " < " + s(1) + ")";
      case Op::CmpNe: return "(" + s(0) + " != " + s(1) + ")";
      case Op::And: return "(" + s(0) + (t == DType::Bool ? " && " : " & ") + s(1) + ")";
      case Op::Or: return "(" + s(0) + (t == DType::Bool ? " || " : " | ") + s(1) + ")";
      case Op::Xor: return t == DType::Bool ? "(" + s(0) + " != " + s(1) + ")" : "(" + s(0) + " ^ " + s(1) + ")";
      case Op::Shl: return "(" + s(0) + " << " + s(1) + ")";
      case Op::Shr: return "(" + s(0) + " >> " + s(1) + ")";
      case Op::Where: return "(" + s(0) + " ? " + s(1) + " : " + s(2) + ")";
      case Op::MulAcc: return d_.call(CFunction::Fma, {s(0), s(1), s(2)});
      case Op::Dot4: {
        // Byte k of a unsigned, of b sign-extended ((byte ^ 128) - 128), products summed in i32.
        std::string a = d_.cast(reg(DType::I32), s(0)), b = d_.cast(reg(DType::I32), s(1)), r = "(" + s(2);
        for (int k = 0; k < 4; ++k) {
          std::string sh = std::to_string(8 * k);
          r += " + ((" + a + " >> " + sh + ") & 255) * ((((" + b + " >> " + sh + ") & 255) ^ 128) - 128)";
        }
        return r + ")";
      }
      case Op::KReduce: return name(u);
      default: throw Error("gpu codegen: kernel " + p_->name + ": cannot render " + std::string(op_name(u->op)));
    }
  }

  const Graph& g_;
  const GpuProgram* k_ = nullptr;  // the kernel, or the stage, being rendered
  const LoopProgram* p_ = nullptr;
  const CDialect& d_;
  DType index_;
  std::ostringstream o_;
  std::vector<std::string> shared_;
  std::unordered_map<const UOp*, std::string> names_;
  std::map<int64_t, size_t> arg_;  // buffer id -> argument position
  std::set<int64_t> written_;
  // Serial stages: the condition for a store (a round's surplus groups store nothing), the
  // copies of each group reduce's slots and which one a thread's group uses, the stage's prefix
  // for its shared arrays.
  std::string stage_gate_, slot_offset_, sm_prefix_;
  int64_t slot_copies_ = 1;
};
bool any_half_arithmetic(const std::vector<LStmt>& body) {
  for (const LStmt& s : body) {
    if (s.kind == LStmt::Loop && any_half_arithmetic(s.body)) return true;
    bool value = s.u->op != Op::Load && s.u->op != Op::Cast && s.u->op != Op::Bitcast && s.u->op != Op::Const;
    if (s.kind == LStmt::Let && s.u->dtype == DType::F16 && value) return true;
  }
  return false;
}
}  // namespace

bool computes_in_half(const LoopProgram& p) { return any_half_arithmetic(p.body); }

std::set<int64_t> buffers_read_in_fours(const Graph& g, const LoopProgram& p) {
  QuadScan scan;
  scan_quads(
      p.body,
      [&](const UOp* u) {
        bool texel = u->dtype == DType::F32 || u->dtype == DType::F16;
        return u->op == Op::Load && texel && g.buffer(u->src[0]->ival()).dtype == u->dtype;
      },
      scan);
  std::map<int64_t, int> in_quads;
  for (const Quad& q : scan.quads)
    if (!q.store) in_quads[q.buffer] += 4;
  std::set<int64_t> out;
  for (const auto& [b, n] : in_quads)
    if (n == scan.accesses[{b, false}]) out.insert(b);
  return out;
}

std::string render_c(const Graph& g, const GpuProgram& k, const CDialect& d) {
  return CRenderer(g, d, k.index_bits).run(k);
}

std::vector<int64_t> serial_launch_args(const std::vector<const LoopProgram*>& stages) {
  std::vector<int64_t> args;
  for (const LoopProgram* p : stages)
    for (int64_t id : p->args)
      if (std::find(args.begin(), args.end(), id) == args.end()) args.push_back(id);
  return args;
}

std::string render_c_serial(const Graph& g, const std::vector<GpuProgram>& stages, const std::string& name,
                            int64_t group, const CDialect& d) {
  check(!stages.empty() && !d.global_barrier().empty(),
        "internal error: a serial launch needs stages and a dialect with global barriers");
  return CRenderer(g, d, stages[0].index_bits).run_serial(stages, name, group);
}

}  // namespace tgc
