#include "passes/lower.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ir/error.h"
#include "ir/print.h"

namespace tgc {

namespace {
using RangeSet = std::set<const UOp*>;

class Lowerer {
 public:
  explicit Lowerer(const Kernel& k) : k_(k) {}

  std::vector<LStmt> run(const UOp* inner) {
    scopes_.push_back({nullptr, {}});
    if (inner) open(inner);
    const UOp* st = k_.ast;
    emit(st->src[1]);
    emit(st->src[2]);
    place(st, {LStmt::Store, st});
    while (scopes_.size() > 1) close();
    return std::move(scopes_[0].body);
  }

 private:
  struct Scope {
    const UOp* range;
    std::vector<LStmt> body;
  };

  const RangeSet& deps(const UOp* u) {
    if (auto it = deps_.find(u); it != deps_.end()) return it->second;
    RangeSet d;
    if (u->op == Op::Range) d.insert(u);
    for (const UOp* s : u->src) {
      const RangeSet& sd = deps(s);
      d.insert(sd.begin(), sd.end());
    }
    if (u->op == Op::KReduce)
      for (size_t i = 1; i < u->src.size(); ++i) d.erase(u->src[i]);
    return deps_[u] = std::move(d);
  }

  // The innermost open scope whose range `u` depends on (0: the function body).
  size_t target(const UOp* u) {
    const RangeSet& d = deps(u);
    for (size_t i = scopes_.size(); i-- > 1;)
      if (d.count(scopes_[i].range)) return i;
    return 0;
  }

  void place(const UOp* u, LStmt s) {
    size_t t = target(u);
    scopes_[t].body.push_back(std::move(s));
    placed_[u] = scopes_[t].range;
  }

  bool visible(const UOp* u) {
    auto it = placed_.find(u);
    if (it == placed_.end()) return false;
    for (const Scope& s : scopes_)
      if (s.range == it->second) return true;
    return false;
  }

  void open(const UOp* range) { scopes_.push_back({range, {}}); }
  void close() {
    Scope s = std::move(scopes_.back());
    scopes_.pop_back();
    scopes_.back().body.push_back({LStmt::Loop, s.range, nullptr, std::move(s.body)});
  }

  void emit(const UOp* u) {
    if (u->op == Op::Const || u->op == Op::Range || u->op == Op::Buffer || visible(u)) return;
    if (u->op == Op::KReduce) {
      place(u, {LStmt::AccInit, u});
      // Loops open inside the accumulator's scope; the body's invariants still land outside.
      size_t t = target(u);
      std::vector<Scope> saved(std::make_move_iterator(scopes_.begin() + long(t) + 1), std::make_move_iterator(scopes_.end()));
      scopes_.resize(t + 1);
      for (size_t i = 1; i < u->src.size(); ++i) open(u->src[i]);
      emit(u->src[0]);
      scopes_.back().body.push_back({LStmt::AccUpdate, u, u->src[0]});
      for (size_t i = 1; i < u->src.size(); ++i) close();
      for (auto& s : saved) scopes_.push_back(std::move(s));
      return;
    }
    for (const UOp* s : u->src) emit(s);
    place(u, {LStmt::Let, u});
  }

  const Kernel& k_;
  std::vector<Scope> scopes_;
  std::unordered_map<const UOp*, RangeSet> deps_;
  std::unordered_map<const UOp*, const UOp*> placed_;
};

void print_stmts(const Graph& g, const std::vector<LStmt>& body, int indent, std::ostringstream& o) {
  std::string pad(size_t(indent) * 2, ' ');
  for (const LStmt& s : body) {
    switch (s.kind) {
      case LStmt::Loop:
        o << pad << "for r" << s.u->range().id << " in 0.." << s.u->src[0]->ival() << ":\n";
        print_stmts(g, s.body, indent + 1, o);
        break;
      case LStmt::AccInit: o << pad << "acc" << s.u->hash % 10000 << " = identity(" << op_name(s.u->reduce().op) << ")\n"; break;
      case LStmt::AccUpdate:
        o << pad << "acc" << s.u->hash % 10000 << " = " << op_name(s.u->reduce().op) << "(acc" << s.u->hash % 10000 << ", "
          << print_expr(g, s.value) << ")\n";
        break;
      case LStmt::Let: break;  // values are shown inline where they are used
      case LStmt::Store: o << pad << print_expr(g, s.u) << "\n"; break;
    }
  }
}
}  // namespace

LoopProgram lower(const Graph& g, const Kernel& k, const LowerOptions& opt) {
  LoopProgram p;
  p.name = k.name;
  p.globals = k.global_ranges;
  if (opt.inner_loop && !p.globals.empty()) p.inner = p.globals.back();
  p.args.push_back(k.output);
  p.args.insert(p.args.end(), k.inputs.begin(), k.inputs.end());
  p.body = Lowerer(k).run(p.inner);
  return p;
}

std::string print_program(const Graph& g, const LoopProgram& p) {
  std::ostringstream o;
  o << p.name << "(";
  for (size_t i = 0; i < p.args.size(); ++i) o << (i ? ", " : "") << g.buffer(p.args[i]).name;
  o << ") global[";
  for (size_t i = 0; i < p.globals.size(); ++i) o << (i ? "," : "") << "r" << p.globals[i]->range().id << "<" << p.globals[i]->src[0]->ival();
  o << "]\n";
  print_stmts(g, p.body, 1, o);
  return o.str();
}

}  // namespace tgc
