// Symbolic integer arithmetic over constants, loop ranges and VARs, and the rule table that
// simplifies it (constant folding, linear-form normalisation, div/mod with range bounds, masks).
#pragma once
#include <map>
#include <optional>
#include <vector>

#include "ir/rewrite.h"
#include "ir/uop.h"

namespace tgc {

// Builders for index expressions (dtype Index) and masks (dtype Bool). They fold constants
// eagerly but otherwise build plainly; simplify() does the real work.
struct Sym {
  Graph& g;
  const UOp* c(int64_t v) { return g.cint(v); }
  const UOp* add(const UOp* a, const UOp* b);
  const UOp* mul(const UOp* a, const UOp* b);
  const UOp* mul(const UOp* a, int64_t k) { return mul(a, c(k)); }
  const UOp* add(const UOp* a, int64_t k) { return add(a, c(k)); }
  const UOp* idiv(const UOp* a, int64_t k);
  const UOp* mod(const UOp* a, int64_t k);
  const UOp* lt(const UOp* a, const UOp* b);
  const UOp* lt(const UOp* a, int64_t k) { return lt(a, c(k)); }
  const UOp* ge(const UOp* a, int64_t k);       // a >= k
  const UOp* and_(const UOp* a, const UOp* b);  // null means "always true"
};

// Rules for index/bool scalars and generic constant folding of scalar kernel expressions.
const std::vector<Rule>& symbolic_rules();
const UOp* simplify(Graph& g, const UOp* u);

// `u` simplified where `condition` holds: the bounds that the condition's conjuncts `x < c` and
// `x >= c` put on ranges and VARs are used (a gated load's index under its gate).
const UOp* simplify_given(Graph& g, const UOp* u, const UOp* condition);

// The value of an index expression over constants and VARs, the VARs at `vars` (a run-time
// dim's extent at a size; the runtime computes the same in kernels). Throws for other nodes.
int64_t eval_index(const UOp* u, const std::map<const UOp*, int64_t>& vars);

// a - b when it simplifies to a constant.
std::optional<int64_t> constant_difference(Graph& g, const UOp* a, const UOp* b);
// How much `idx` grows when range `r` grows by one, when that is a constant.
std::optional<int64_t> stride_along(Graph& g, const UOp* idx, const UOp* r);

}  // namespace tgc
