#include "ir/rewrite.h"

#include "ir/error.h"

namespace tgc {

const UOp* with_src(Graph& g, const UOp* u, std::vector<const UOp*> src) {
  if (src == u->src) return u;
  return g.make(u->op, u->dtype, std::move(src), u->arg);
}

const UOp* rebuild(Graph& g, const UOp* root,
                   const std::function<const UOp*(const UOp* u, std::vector<const UOp*>& src)>& f) {
  std::unordered_map<const UOp*, const UOp*> done;
  for (const UOp* u : toposort({root})) {
    std::vector<const UOp*> src;
    for (const UOp* s : u->src) src.push_back(done.at(s));
    const UOp* out = f(u, src);
    done[u] = out ? out : with_src(g, u, std::move(src));
  }
  return done.at(root);
}

const UOp* substitute(Graph& g, const UOp* root, const std::unordered_map<const UOp*, const UOp*>& m) {
  std::unordered_map<const UOp*, const UOp*> done(m);
  for (const UOp* u : toposort({root})) {
    if (done.count(u)) continue;
    std::vector<const UOp*> src;
    for (const UOp* s : u->src) src.push_back(done.at(s));
    done[u] = with_src(g, u, std::move(src));
  }
  return done.at(root);
}

const UOp* Rewriter::rewrite(const UOp* root) {
  // Iterative post-order so deep graphs (long elementwise chains) cannot overflow the stack.
  std::vector<std::pair<const UOp*, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [u, expanded] = stack.back();
    if (memo_.count(u)) {
      stack.pop_back();
      continue;
    }
    if (!expanded) {
      stack.back().second = true;
      for (const UOp* s : u->src)
        if (!memo_.count(s)) stack.push_back({s, false});
      continue;
    }
    stack.pop_back();
    std::vector<const UOp*> src;
    src.reserve(u->src.size());
    for (const UOp* s : u->src) src.push_back(memo_.at(s));
    const UOp* cur = with_src(g_, u, std::move(src));
    for (int steps = 0;; ++steps) {
      if (steps > 1000) throw Error("rewrite did not converge at " + std::string(op_name(u->op)));
      const UOp* next = nullptr;
      for (const Rule& r : rules_)
        if ((next = r(g_, cur)) && next != cur) break;
      if (!next || next == cur) break;
      // The replacement may contain new, unsimplified nodes: rewrite it fully (memoized).
      next = (next == u) ? next : rewrite(next);
      cur = next;
    }
    memo_[u] = cur;
    if (cur != u) memo_[cur] = cur;
  }
  return memo_.at(root);
}

}  // namespace tgc
