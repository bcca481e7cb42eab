#include "passes/branch_guards.h"

#include <map>
#include <string>
#include <tuple>

#include "ir/tensor.h"

namespace tgc {

BranchGuards guard_branches(Graph& g, const std::vector<const UOp*>& roots) {
  BranchGuards r;
  std::unordered_map<const UOp*, const UOp*> var_of;  // select -> its condition's VAR
  // Selects share a VAR where they share the condition and the sizes each side was built for.
  std::map<std::tuple<const UOp*, const UOp*, const UOp*>, const UOp*> by_cond;
  std::vector<Graph::BranchSelect> selects = g.branch_selects();
  for (const Graph::BranchSelect& b : selects) {
    const UOp* cond = b.select->src[0];
    while (cond->op == Op::Expand || cond->op == Op::Reshape) cond = cond->src[0];
    const UOp*& var = by_cond[{cond, b.runs[0], b.runs[1]}];
    if (!var) {
      // 1 or 2 for the side taken; -1 where that side was built for other run-time sizes (the
      // runtime's error then quotes the VAR's name, unique: an If in an unrolled loop repeats).
      std::string name = b.why[0].empty() ? b.why[1] : b.why[1].empty() ? b.why[0] : b.why[0] + "; " + b.why[1];
      if (name.empty()) name = g.origin(b.select) ? *g.origin(b.select) : "branch";
      var = g.declare_var(g.fresh_var_name(name), 0, 2);
      auto side = [&](int s) {
        Tensor taken = Tensor::full(g, {}, double(s + 1), DType::I64);
        return b.runs[s] ? Tensor::where(Tensor(g, b.runs[s]), taken, taken.full_like(-1)) : taken;
      };
      g.set_var_value(var, Tensor::where(Tensor(g, cond).reshape({}), side(1), side(0)).uop());
      r.vars.push_back(var);
    }
    var_of[b.select] = var;
  }
  if (r.vars.empty()) return r;
  // Consumers first: a node takes its consumers' side while they agree on one. A select gives
  // its two values the sides of its condition; what a root or two sides need always runs.
  enum State { kUnseen, kSide, kAlways };
  struct Need {
    State state = kUnseen;
    BranchGuards::Guard side{};
  };
  std::unordered_map<const UOp*, Need> need;
  auto merge = [](Need& n, const Need& from) {
    if (n.state == kUnseen)
      n = from;
    else if (n.state == kSide &&
             (from.state != kSide || from.side.var != n.side.var || from.side.value != n.side.value))
      n.state = kAlways;
  };
  for (const UOp* root : roots) need[root].state = kAlways;
  std::vector<const UOp*> order = toposort(roots);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp* u = *it;
    const Need n = need[u];
    auto sel = var_of.find(u);
    for (size_t i = 0; i < u->src.size(); ++i) {
      Need from = n;
      if (sel != var_of.end() && i > 0) from = {kSide, {sel->second, i == 1 ? 2 : 1}};
      merge(need[u->src[i]], from);
    }
    if (n.state == kSide) r.of[u] = n.side;
  }
  return r;
}

}  // namespace tgc
