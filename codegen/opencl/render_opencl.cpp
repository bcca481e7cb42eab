#include "codegen/opencl/render_opencl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "ir/error.h"

namespace tgc {

namespace {
// Register type; f16/bf16 compute in float.
const char* reg_type(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::I8: return "char";
    case DType::U8: return "uchar";
    case DType::I16: return "short";
    case DType::U16: return "ushort";
    case DType::I32: return "int";
    case DType::U32: return "uint";
    case DType::I64: case DType::Index: return "long";
    case DType::U64: return "ulong";
    case DType::F64: return "double";
    default: return "float";
  }
}
// Buffer element type. OpenCL C has no bfloat16: bf16 buffers hold the upper 16 bits of a float.
const char* mem_type(DType t) {
  if (t == DType::Bool) return "uchar";
  if (t == DType::F16) return "half";
  if (t == DType::BF16) return "ushort";
  return reg_type(t);
}

// bf16 in registers is a float whose low 16 bits are zero. These round a float expression `v`
// to bf16 (to nearest, ties to even; NaN and inf kept, as LLVM's fptrunc and the interpreter do)
// as a float, and give the 16 bits a bf16 buffer stores.
std::string bf16_round(const std::string& v) {
  std::string u = "as_uint(" + v + ")";
  return "(isnan(" + v + ") || isinf(" + v + ") ? " + v + " : as_float((" + u + " + 0x7fffu + ((" + u +
         " >> 16) & 1u)) & 0xffff0000u))";
}
std::string bf16_bits(const std::string& v) { return "(ushort)(as_uint(" + bf16_round(v) + ") >> 16)"; }
std::string bf16_from_bits(const std::string& bits) { return "as_float((uint)(" + bits + ") << 16)"; }

std::string float_lit(double v, DType t) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  std::ostringstream o;
  o.precision(std::numeric_limits<double>::max_digits10);
  o << v;
  std::string s = o.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return t == DType::F64 ? s : s + "f";
}

class ClRenderer {
 public:
  ClRenderer(const Graph& g, const LoopProgram& p) : g_(g), p_(p) {}

  std::string run() {
    o_ << "__kernel void " << p_.name << "(";
    for (size_t i = 0; i < p_.args.size(); ++i) {
      const BufferInfo& b = g_.buffer(p_.args[i]);
      o_ << (i ? ", " : "") << "__global " << (i ? "const " : "") << mem_type(b.dtype) << "* restrict b" << i;
      arg_[p_.args[i]] = i;
    }
    // All dims are flattened into dimension 0: work-groups over the global ranges, threads of a
    // group over the local ranges.
    if (p_.locals.empty()) {
      o_ << ") {\n  long gid = get_global_id(0);\n";
    } else {
      o_ << ") {\n  long gid = get_group_id(0), lid = get_local_id(0);\n";
      decode(p_.locals, "lid");
    }
    decode(p_.globals, "gid");
    // Work-groups past a run-time dim's value hold nothing (globals are group ids, so the whole
    // group leaves together and no barrier waits for it).
    for (const UOp* r : p_.globals)
      if (!r->src[0]->is_const()) o_ << "  if (" << name(r) << " >= " << ref(r->src[0]) << ") return;\n";
    std::string head = o_.str();
    o_.str("");
    stmts(p_.body, 1);
    return head + shared_.str() + o_.str() + "}\n";
  }

 private:
  void decode(const std::vector<const UOp*>& ranges, const char* from) {
    for (size_t i = ranges.size(); i-- > 0;) {
      int64_t n = range_extent(ranges[i]);  // a run-time dim's range decodes at its upper bound
      o_ << "  long " << name(ranges[i]) << " = " << from << " % " << n << "; " << from << " /= " << n << ";\n";
    }
  }

  std::string name(const UOp* u) {
    auto it = names_.find(u);
    if (it != names_.end()) return it->second;
    std::string n = u->op == Op::Range ? "r" + std::to_string(u->range().id) : "v" + std::to_string(names_.size());
    return names_[u] = n;
  }

  void stmts(const std::vector<LStmt>& body, int depth) {
    std::string pad(size_t(depth) * 2, ' ');
    for (const LStmt& s : body) {
      switch (s.kind) {
        case LStmt::Let: o_ << pad << reg_type(s.u->dtype) << " " << name(s.u) << " = " << expr(s.u) << ";\n"; break;
        case LStmt::Loop: {
          std::string r = name(s.u);
          o_ << pad << "for (long " << r << " = 0; " << r << " < " << ref(s.u->src[0]) << "; ++" << r << ") {\n";
          stmts(s.body, depth + 1);
          o_ << pad << "}\n";
          break;
        }
        case LStmt::AccInit: o_ << pad << reg_type(s.u->dtype) << " " << name(s.u) << " = " << identity(s.u) << ";\n"; break;
        case LStmt::AccUpdate: o_ << pad << combine(s.u, name(s.u), ref(s.value)) << "\n"; break;
        case LStmt::GroupReduce: {
          // Partials meet in shared memory (one slot per thread of the work-group); every
          // thread folds the slots of its GROUP siblings, so all of them end with the total.
          // Only this reduce's GROUP ranges are folded: along another reduce's GROUP range
          // (softmax: one for the max, one for the sum) the threads hold the same partial.
          // The second barrier lets the memory be reused.
          std::string a = name(s.u), sm = "sm_" + a, mine = "0", base = "0", open, close;
          int64_t stride = 1;
          for (size_t i = p_.locals.size(); i-- > 0;) {
            const UOp* r = p_.locals[i];
            std::string term = name(r) + "*" + std::to_string(stride);
            mine += "+" + term;
            if (std::count(s.u->src.begin() + 1, s.u->src.end(), r)) {
              std::string j = "j" + std::to_string(r->range().id);
              open += "for (int " + j + " = 0; " + j + " < " + std::to_string(r->src[0]->ival()) + "; ++" + j + ") ";
              base += "+" + j + "*" + std::to_string(stride);
            } else {
              base += "+" + term;
            }
            stride *= r->src[0]->ival();
          }
          // OpenCL C wants __local variables at kernel scope.
          shared_ << "  __local " << reg_type(s.u->dtype) << " " << sm << "[" << stride << "];\n";
          o_ << pad << "{ " << sm << "[" << mine << "] = " << a << "; barrier(CLK_LOCAL_MEM_FENCE);\n"
             << pad << "  " << a << " = " << identity(s.u) << ";\n"
             << pad << "  " << open << combine(s.u, a, sm + "[" + base + "]") << "\n"
             << pad << "  barrier(CLK_LOCAL_MEM_FENCE); }\n";
          break;
        }
        case LStmt::Store: {
          const UOp* st = s.u;
          size_t b = arg_.at(st->src[0]->ival());
          // With GROUP ranges, the group's threads all hold the result: the first one stores.
          // A gated store (a PADTO axis) skips the padding.
          std::string first = st->src.size() > 3 ? ref(st->src[3]) : "";
          for (const UOp* r : p_.locals)
            if (r->range().kind == RangeKind::Group) first += (first.empty() ? "" : " && ") + name(r) + " == 0";
          if (!first.empty()) o_ << pad << "if (" << first << ")\n" << pad << "  ";
          else o_ << pad;
          DType t = st->src[2]->dtype;
          if (t == DType::F16)
            o_ << "vstore_half_rte(" << ref(st->src[2]) << ", " << ref(st->src[1]) << ", b" << b << ");\n";
          else if (t == DType::BF16)
            o_ << "b" << b << "[" << ref(st->src[1]) << "] = " << bf16_bits(ref(st->src[2])) << ";\n";
          else
            o_ << "b" << b << "[" << ref(st->src[1]) << "] = (" << mem_type(t) << ")(" << ref(st->src[2]) << ");\n";
          break;
        }
      }
    }
  }

  // acc = acc (op) v, for the reduce `u`.
  std::string combine(const UOp* u, const std::string& a, const std::string& v) {
    switch (u->reduce().op) {
      case Op::Add: return a + " += " + v + ";";
      case Op::Mul: return a + " *= " + v + ";";
      default: return a + " = " + (is_float(u->dtype) ? "fmax(" : "max(") + a + ", " + v + ");";
    }
  }

  std::string identity(const UOp* u) {
    DType t = u->dtype;
    switch (u->reduce().op) {
      case Op::Add: return is_float(t) ? float_lit(0, t) : "0";
      case Op::Mul: return is_float(t) ? float_lit(1, t) : "1";
      default:
        if (is_float(t)) return "(-INFINITY)";
        if (is_unsigned(t)) return "0";
        return t == DType::I64 ? "LONG_MIN" : t == DType::I32 ? "INT_MIN" : t == DType::I16 ? "SHRT_MIN" : "CHAR_MIN";
    }
  }

  std::string ref(const UOp* u) {
    if (u->op == Op::Const) {
      if (is_float(u->dtype)) return float_lit(u->fval(), u->dtype);
      if (u->dtype == DType::Bool) return u->ival() ? "true" : "false";
      return "(" + std::string(reg_type(u->dtype)) + ")(" + std::to_string(u->ival()) + (u->dtype == DType::I64 || u->dtype == DType::Index ? "L" : "") + ")";
    }
    if (u->op == Op::Var)  // a run-time dim: its value in the vars buffer
      return "b" + std::to_string(arg_.at(g_.vars_buffer())) + "[" + std::to_string(g_.var_slot(u)) + "]";
    return name(u);
  }

  std::string expr(const UOp* u) {
    auto s = [&](int i) { return ref(u->src[size_t(i)]); };
    DType t = u->dtype;
    bool f = is_float(t);
    switch (u->op) {
      case Op::Load: {
        size_t b = arg_.at(u->src[0]->ival());
        std::string idx = u->src.size() > 2 ? "(" + s(2) + " ? " + s(1) + " : 0)" : s(1);
        std::string v = "b" + std::to_string(b) + "[" + idx + "]";
        if (t == DType::F16) v = "vload_half(" + idx + ", b" + std::to_string(b) + ")";
        if (t == DType::BF16) v = bf16_from_bits(v);
        if (t == DType::Bool) v = "(" + v + " != 0)";
        if (u->src.size() > 2) return "(" + s(2) + " ? (" + std::string(reg_type(t)) + ")(" + v + ") : (" + reg_type(t) + ")0)";
        return v;
      }
      case Op::Neg: return "(-" + s(0) + ")";
      case Op::Exp2: return "exp2(" + s(0) + ")";
      case Op::Log2: return "log2(" + s(0) + ")";
      case Op::Sin: return "sin(" + s(0) + ")";
      case Op::Sqrt: return "sqrt(" + s(0) + ")";
      case Op::Trunc: return f ? "trunc(" + s(0) + ")" : s(0);
      case Op::Recip: return "(" + float_lit(1, t) + " / " + s(0) + ")";
      case Op::Cast:
        if (t == DType::Bool) return "(" + s(0) + " != 0)";
        if (t == DType::BF16) return bf16_round("((float)(" + s(0) + "))");
        return "(" + std::string(reg_type(t)) + ")(" + s(0) + ")";
      case Op::Bitcast:
        // bf16 registers are floats: move its 16 bits into or out of the upper half.
        if (t == DType::BF16) return bf16_from_bits(s(0));
        if (u->src[0]->dtype == DType::BF16) return "(" + std::string(reg_type(t)) + ")(as_uint(" + s(0) + ") >> 16)";
        return "as_" + std::string(reg_type(t)) + "(" + s(0) + ")";
      case Op::Add: return "(" + s(0) + (t == DType::Bool ? " || " : " + ") + s(1) + ")";
      case Op::Mul: return "(" + s(0) + (t == DType::Bool ? " && " : " * ") + s(1) + ")";
      case Op::Max: return (f ? "fmax(" : "max(") + s(0) + ", " + s(1) + ")";
      case Op::Mod: return f ? "fmod(" + s(0) + ", " + s(1) + ")" : "(" + s(1) + " == 0 ? 0 : " + s(0) + " % " + s(1) + ")";
      case Op::IDiv: return "(" + s(1) + " == 0 ? 0 : " + s(0) + " / " + s(1) + ")";
      case Op::CmpLt: return "(" + s(0) + " < " + s(1) + ")";
      case Op::CmpNe: return "(" + s(0) + " != " + s(1) + ")";
      case Op::And: return "(" + s(0) + (t == DType::Bool ? " && " : " & ") + s(1) + ")";
      case Op::Or: return "(" + s(0) + (t == DType::Bool ? " || " : " | ") + s(1) + ")";
      case Op::Xor: return t == DType::Bool ? "(" + s(0) + " != " + s(1) + ")" : "(" + s(0) + " ^ " + s(1) + ")";
      case Op::Shl: return "(" + s(0) + " << " + s(1) + ")";
      case Op::Shr: return "(" + s(0) + " >> " + s(1) + ")";
      case Op::Where: return "(" + s(0) + " ? " + s(1) + " : " + s(2) + ")";
      case Op::MulAcc: return "fma(" + s(0) + ", " + s(1) + ", " + s(2) + ")";
      case Op::KReduce: return name(u);
      default: throw Error("opencl codegen: cannot render " + std::string(op_name(u->op)));
    }
  }

  const Graph& g_;
  const LoopProgram& p_;
  std::ostringstream o_, shared_;
  std::unordered_map<const UOp*, std::string> names_;
  std::unordered_map<int64_t, size_t> arg_;
};
}  // namespace

std::string render_opencl(const Graph& g, const LoopProgram& p) {
  std::string src = ClRenderer(g, p).run();
  bool f64 = false;
  for (int64_t b : p.args) f64 = f64 || g.buffer(b).dtype == DType::F64;
  return (f64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "") + src;
}

int64_t opencl_local_size(const LoopProgram& p) {
  int64_t n = 1;
  for (const UOp* r : p.locals) n *= r->src[0]->ival();
  return n;
}

int64_t opencl_global_size(const LoopProgram& p) {
  int64_t n = opencl_local_size(p);
  for (const UOp* r : p.globals) n *= range_extent(r);
  return n;
}

}  // namespace tgc
