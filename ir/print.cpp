#include "ir/print.h"

#include <sstream>
#include <unordered_map>

namespace tgc {

namespace {
std::string ints_str(const std::vector<int64_t>& v) {
  std::ostringstream o;
  for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << v[i];
  return o.str();
}

const char* infix(Op op) {
  switch (op) {
    case Op::Add: return "+";
    case Op::Mul: return "*";
    case Op::IDiv: return "//";
    case Op::Mod: return "%";
    case Op::CmpLt: return "<";
    case Op::CmpNe: return "!=";
    case Op::And: return "&";
    case Op::Or: return "|";
    case Op::Xor: return "^";
    default: return nullptr;
  }
}
}  // namespace

std::string arg_str(const UOp* u) {
  std::ostringstream o;
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
          o << a;
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          o << "(" << ints_str(a) << ")";
        else if constexpr (std::is_same_v<T, ReduceArg>)
          o << op_name(a.op) << " axes=(" << ints_str(a.axes) << ")" << (a.ordered ? " ordered" : "");
        else if constexpr (std::is_same_v<T, VarArg>)
          o << a.name << "[" << a.min << ".." << a.max << "]";
        else if constexpr (std::is_same_v<T, RangeArg>)
          o << "r" << a.id;
      },
      u->arg);
  return o.str();
}

std::string print_graph(const Graph& g, const std::vector<const UOp*>& roots) {
  std::unordered_map<const UOp*, int> id;
  std::ostringstream o;
  for (const UOp* u : toposort(roots)) {
    int n = int(id.size());
    id[u] = n;
    o << "%" << n << " = " << op_name(u->op) << " " << dtype_name(u->dtype) << shape_str(u->shape);
    for (const UOp* s : u->src) o << " %" << id[s];
    if (u->op == Op::Buffer)
      o << " '" << g.buffer(u->ival()).name << "'";
    else if (!std::holds_alternative<std::monostate>(u->arg))
      o << " " << arg_str(u);
    o << "\n";
  }
  return o.str();
}

std::string print_expr(const Graph& g, const UOp* u) {
  auto s = [&](int i) { return print_expr(g, u->src[size_t(i)]); };
  if (const char* op = infix(u->op); op && u->src.size() == 2) return "(" + s(0) + op + s(1) + ")";
  switch (u->op) {
    case Op::Const: return arg_str(u);
    case Op::Range: return "r" + std::to_string(u->range().id);
    case Op::Var: return u->var().name;
    case Op::Buffer: return g.buffer(u->ival()).name;
    case Op::Load: return s(0) + "[" + s(1) + (u->src.size() > 2 ? " if " + s(2) : "") + "]";
    case Op::Where: return "(" + s(0) + " ? " + s(1) + " : " + s(2) + ")";
    case Op::Store: return s(0) + "[" + s(1) + "] = " + s(2) + (u->src.size() > 3 ? " if " + s(3) : "");
    case Op::KReduce: {
      std::string r = "reduce_" + std::string(op_name(u->reduce().op)) + "(" + s(0);
      for (size_t i = 1; i < u->src.size(); ++i) r += ", " + s(int(i));
      return r + ")";
    }
    case Op::Cast: return std::string(dtype_name(u->dtype)) + "(" + s(0) + ")";
    default: {
      std::string r = std::string(op_name(u->op)) + "(";
      for (size_t i = 0; i < u->src.size(); ++i) r += (i ? ", " : "") + s(int(i));
      return r + ")";
    }
  }
}

}  // namespace tgc
