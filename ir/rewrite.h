// Graph rewriting with rule tables: most passes are a list of small rules, not special cases.
#pragma once
#include <functional>
#include <unordered_map>
#include <vector>

#include "ir/uop.h"

namespace tgc {

// A rule returns the replacement for `u`, or nullptr when it does not apply.
using Rule = std::function<const UOp*(Graph&, const UOp*)>;

// Rewrites bottom-up to a fixed point: sources first, then rules on the rebuilt node until none
// applies; a rule's result is rewritten again. Results are memoized per call.
class Rewriter {
 public:
  Rewriter(Graph& g, const std::vector<Rule>& rules) : g_(g), rules_(rules) {}
  const UOp* rewrite(const UOp* u);

 private:
  Graph& g_;
  const std::vector<Rule>& rules_;
  std::unordered_map<const UOp*, const UOp*> memo_;
};

inline const UOp* graph_rewrite(Graph& g, const UOp* root, const std::vector<Rule>& rules) {
  return Rewriter(g, rules).rewrite(root);
}

// Rebuilds `u` with new sources (same op, dtype and arg).
const UOp* with_src(Graph& g, const UOp* u, std::vector<const UOp*> src);

// `root` rebuilt bottom-up: each node gets its rebuilt sources, then `f(node, sources)` gives its
// replacement, or nullptr for the node with those sources (a pass that changes some nodes'
// types, where a rule table's fixed point is not what is wanted).
const UOp* rebuild(Graph& g, const UOp* root,
                   const std::function<const UOp*(const UOp* u, std::vector<const UOp*>& src)>& f);

// `root` with every node that is a key of `m` replaced by its value (replacements are not
// substituted again, and nothing is simplified).
const UOp* substitute(Graph& g, const UOp* root, const std::unordered_map<const UOp*, const UOp*>& m);

}  // namespace tgc
