#include "ir/symbolic.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "ir/error.h"
#include "ir/scalar.h"

namespace tgc {

namespace {
bool is_index(const UOp* u) { return u->dtype == DType::Index && u->shape.empty(); }
bool is_cint(const UOp* u) { return u->op == Op::Const && is_int(u->dtype); }

// An index expression as sum(coef * term) + constant.
struct Linear {
  std::vector<std::pair<const UOp*, int64_t>> terms;
  int64_t constant = 0;
};

void decompose(const UOp* u, int64_t k, Linear& out) {
  if (u->op == Op::Add) {
    decompose(u->src[0], k, out);
    decompose(u->src[1], k, out);
  } else if (u->op == Op::Mul && is_cint(u->src[1])) {
    decompose(u->src[0], k * u->src[1]->ival(), out);
  } else if (u->op == Op::Neg) {
    decompose(u->src[0], -k, out);
  } else if (is_cint(u)) {
    out.constant += k * u->ival();
  } else {
    out.terms.push_back({u, k});
  }
}

// Merges equal terms, folds (x//c)*c + x%c back into x, drops zeros, orders terms stably.
void normalize(Linear& l) {
  for (bool changed = true; changed;) {
    changed = false;
    std::map<const UOp*, int64_t> acc;
    for (auto& [t, k] : l.terms) acc[t] += k;
    l.terms.clear();
    for (auto& [t, k] : acc)
      if (k != 0) l.terms.push_back({t, k});
    for (size_t i = 0; i < l.terms.size() && !changed; ++i) {
      auto [t, k] = l.terms[i];
      if (t->op != Op::Mod || !is_cint(t->src[1])) continue;
      const UOp* x = t->src[0];
      int64_t c = t->src[1]->ival();
      // (x//a)%c * k + (x//(a*c)) * c*k  ->  (x//a) * k: the simplifier already merged
      // (x//a)//c into x//(a*c), so look for that form as well.
      const UOp* base = x->op == Op::IDiv && is_cint(x->src[1]) ? x->src[0] : nullptr;
      int64_t a = base ? x->src[1]->ival() : 0;
      for (size_t j = 0; j < l.terms.size(); ++j) {
        auto [d, kd] = l.terms[j];
        bool plain = d->op == Op::IDiv && d->src[0] == x && d->src[1] == t->src[1];
        bool merged =
            base && d->op == Op::IDiv && d->src[0] == base && is_cint(d->src[1]) && d->src[1]->ival() == a * c;
        if ((plain || merged) && kd == k * c && x->vmin >= 0) {
          l.terms[i] = {x, k};
          l.terms[j].second = 0;
          changed = true;
          break;
        }
      }
    }
  }
  std::sort(l.terms.begin(), l.terms.end(), [](auto& a, auto& b) {
    return a.first->hash != b.first->hash ? a.first->hash < b.first->hash : a.second < b.second;
  });
}

const UOp* rebuild(Graph& g, const Linear& l) {
  const UOp* r = nullptr;
  for (auto [t, k] : l.terms) {
    const UOp* term = k == 1 ? t : g.make(Op::Mul, DType::Index, {t, g.cint(k)});
    r = r ? g.make(Op::Add, DType::Index, {r, term}) : term;
  }
  if (!r) return g.cint(l.constant);
  return l.constant ? g.make(Op::Add, DType::Index, {r, g.cint(l.constant)}) : r;
}

Linear linear_of(const UOp* u) {
  Linear l;
  decompose(u, 1, l);
  normalize(l);
  return l;
}

// Splits x = q*c + rest: each coefficient k contributes k/c to q and k%c to rest (truncated, so
// a negative coefficient of a term that is never positive, like the -x of a clamped pad
// index, leaves a non-negative rest). Callers check that rest stays non-negative.
void split_by(const Linear& l, int64_t c, Linear& quot, Linear& rest) {
  for (auto [t, k] : l.terms) {
    if (k / c) quot.terms.push_back({t, k / c});
    if (k % c) rest.terms.push_back({t, k % c});
  }
  quot.constant = l.constant / c;
  rest.constant = l.constant % c;
  if (rest.constant < 0) rest.constant += c, quot.constant -= 1;
}

// ---- rules ---------------------------------------------------------------------------------
const UOp* fold_constants(Graph& g, const UOp* u) {
  if (!u->shape.empty() || !is_elementwise(u->op) || u->src.empty()) return nullptr;
  for (const UOp* s : u->src)
    if (s->op != Op::Const) return nullptr;
  Num args[3];
  for (size_t i = 0; i < u->src.size(); ++i) {
    const UOp* s = u->src[i];
    args[i] = is_float(s->dtype) ? Num{s->fval(), 0} : Num{0, s->ival()};
  }
  DType in = u->op == Op::Where ? u->src[1]->dtype : u->src[0]->dtype;
  Num r = eval_elementwise(u->op, u->dtype, in, args);
  return is_float(u->dtype) ? g.cfloat(r.f, u->dtype) : g.cint(r.i, u->dtype);
}

// Index/bool scalars whose bounds pin them to one value are that constant. A RANGE of size 1
// stays: reduces list their ranges as sources (expressions using it still fold).
const UOp* fold_bounds(Graph& g, const UOp* u) {
  if (!u->shape.empty() || (u->dtype != DType::Index && u->dtype != DType::Bool) || u->op == Op::Const ||
      u->op == Op::Range)
    return nullptr;
  if (u->vmin == u->vmax && u->op != Op::Load) return g.cint(u->vmin, u->dtype);
  return nullptr;
}

const UOp* identities(Graph& g, const UOp* u) {
  if (!u->shape.empty()) return nullptr;
  auto src = u->src;
  switch (u->op) {
    case Op::Add:
    case Op::Mul:
    case Op::Max:
    case Op::And:
    case Op::Or:
      // Constants go right so the rules below need to look in one place only.
      if (src[0]->op == Op::Const && src[1]->op != Op::Const) return g.make(u->op, u->dtype, {src[1], src[0]}, u->arg);
      if (u->op == Op::Add && src[1]->is_const(0) && !is_float(u->dtype)) return src[0];
      if (u->op == Op::Mul && src[1]->is_const(1)) return src[0];
      if (u->op == Op::Mul && src[1]->is_const(0) && !is_float(u->dtype)) return src[1];
      if (u->dtype == DType::Bool && u->op == Op::And && src[1]->op == Op::Const)
        return src[1]->ival() ? src[0] : src[1];
      if (u->dtype == DType::Bool && u->op == Op::Or && src[1]->op == Op::Const)
        return src[1]->ival() ? src[1] : src[0];
      if ((u->op == Op::And || u->op == Op::Or || u->op == Op::Max) && src[0] == src[1]) return src[0];
      // A clamp that its operand's bounds never reach.
      if (u->op == Op::Max && u->dtype == DType::Index && src[0]->vmin >= src[1]->vmax) return src[0];
      if (u->op == Op::Max && u->dtype == DType::Index && src[1]->vmin >= src[0]->vmax) return src[1];
      return nullptr;
    case Op::Where:
      if (src[0]->op == Op::Const) return src[0]->ival() ? src[1] : src[2];
      if (src[1] == src[2]) return src[1];
      return nullptr;
    case Op::IDiv:
      if (src[1]->is_const(1)) return src[0];
      return nullptr;
    case Op::Mod:
      if (src[1]->is_const(1) && is_int(u->dtype)) return g.cint(0, u->dtype);
      return nullptr;
    case Op::Cast:
      if (src[0]->dtype == u->dtype) return src[0];
      return nullptr;
    default: return nullptr;
  }
}

// Sums (and products of sums or products with constants) are kept in one canonical linear form.
const UOp* normalize_sum(Graph& g, const UOp* u) {
  if (!is_index(u)) return nullptr;
  bool sum =
      u->op == Op::Add || (u->op == Op::Mul && is_cint(u->src[1]) &&
                           (u->src[0]->op == Op::Add || (u->src[0]->op == Op::Mul && is_cint(u->src[0]->src[1]))));
  if (!sum) return nullptr;
  const UOp* r = rebuild(g, linear_of(u));
  return r == u ? nullptr : r;
}

// x = g*big + small with 0 <= small < g, where g divides c:
//   x // c = big // (c/g)        x % c = (big % (c/g))*g + small
const UOp* gcd_divmod(Graph& g, const UOp* u, const Linear& l, int64_t c) {
  for (const auto& [_, kj] : l.terms) {
    int64_t d = std::gcd(std::abs(kj), c);
    if (d <= 1) continue;
    Linear big, small;
    for (auto [t, k] : l.terms) (k % d == 0 ? big.terms.push_back({t, k / d}) : small.terms.push_back({t, k}));
    small.constant = l.constant;
    const UOp* sm = rebuild(g, small);
    if (sm->vmin < 0 || sm->vmax >= d) continue;
    const UOp* b = rebuild(g, big);
    if (b->vmin < 0) continue;
    if (u->op == Op::IDiv) return g.make(Op::IDiv, DType::Index, {b, g.cint(c / d)});
    const UOp* m = g.make(Op::Mul, DType::Index, {g.make(Op::Mod, DType::Index, {b, g.cint(c / d)}), g.cint(d)});
    return g.make(Op::Add, DType::Index, {m, sm});
  }
  return nullptr;
}

const UOp* divmod(Graph& g, const UOp* u) {
  if (!is_index(u) || (u->op != Op::IDiv && u->op != Op::Mod) || !is_cint(u->src[1])) return nullptr;
  const UOp* x = u->src[0];
  int64_t c = u->src[1]->ival();
  if (c <= 0 || x->vmin < 0) return nullptr;
  if (x->vmax < c) return u->op == Op::IDiv ? g.cint(0) : x;
  // Nested: (x // a) // b = x // (a*b); (x % (b*k)) % b = x % b.
  if (u->op == Op::IDiv && x->op == Op::IDiv && is_cint(x->src[1]) && x->src[1]->ival() > 0 && x->src[0]->vmin >= 0)
    return g.make(Op::IDiv, DType::Index, {x->src[0], g.cint(x->src[1]->ival() * c)});
  if (u->op == Op::Mod && x->op == Op::Mod && is_cint(x->src[1]) && x->src[1]->ival() % c == 0)
    return g.make(Op::Mod, DType::Index, {x->src[0], u->src[1]});
  // (x % (c*k)) // c = (x // c) % k
  if (u->op == Op::IDiv && x->op == Op::Mod && is_cint(x->src[1]) && x->src[1]->ival() % c == 0 && x->src[0]->vmin >= 0)
    return g.make(Op::Mod, DType::Index,
                  {g.make(Op::IDiv, DType::Index, {x->src[0], u->src[1]}), g.cint(x->src[1]->ival() / c)});
  // Pull out the multiples of c from every coefficient.
  Linear l = linear_of(x), quot, rest;
  split_by(l, c, quot, rest);
  const UOp* r = rebuild(g, rest);
  bool progress = !quot.terms.empty() || quot.constant != 0 || r->vmax < c;
  if (!progress || r->vmin < 0) return gcd_divmod(g, u, l, c);
  if (u->op == Op::Mod) return r->vmax < c ? r : g.make(Op::Mod, DType::Index, {r, u->src[1]});
  const UOp* q = rebuild(g, quot);
  if (r->vmax < c) return q;
  return g.make(Op::Add, DType::Index, {q, g.make(Op::IDiv, DType::Index, {r, u->src[1]})});
}

// a*k < c  ->  a < ceil(c/k) for k > 0, which lets bounds decide more masks.
const UOp* compare(Graph& g, const UOp* u) {
  if (u->op != Op::CmpLt || !is_index(u->src[0]) || !is_cint(u->src[1])) return nullptr;
  const UOp* a = u->src[0];
  int64_t c = u->src[1]->ival();
  if (a->op == Op::Mul && is_cint(a->src[1]) && a->src[1]->ival() > 0) {
    int64_t k = a->src[1]->ival();
    int64_t q = c >= 0 ? (c + k - 1) / k : -((-c) / k);
    return g.make(Op::CmpLt, DType::Bool, {a->src[0], g.cint(q)});
  }
  // (x + k) < c  ->  x < c - k
  if (a->op == Op::Add && is_cint(a->src[1]))
    return g.make(Op::CmpLt, DType::Bool, {a->src[0], g.cint(c - a->src[1]->ival())});
  return nullptr;
}
}  // namespace

const UOp* Sym::add(const UOp* a, const UOp* b) {
  if (a->op == Op::Const && b->op == Op::Const) return c(a->ival() + b->ival());
  if (b->is_const(0)) return a;
  if (a->is_const(0)) return b;
  return g.make(Op::Add, DType::Index, {a, b});
}
const UOp* Sym::mul(const UOp* a, const UOp* b) {
  if (a->op == Op::Const && b->op == Op::Const) return c(a->ival() * b->ival());
  if (b->is_const(1)) return a;
  if (a->is_const(1)) return b;
  if (a->is_const(0) || b->is_const(0)) return c(0);
  return g.make(Op::Mul, DType::Index, {a, b});
}
const UOp* Sym::idiv(const UOp* a, int64_t k) { return k == 1 ? a : g.make(Op::IDiv, DType::Index, {a, c(k)}); }
const UOp* Sym::mod(const UOp* a, int64_t k) { return k == 1 ? c(0) : g.make(Op::Mod, DType::Index, {a, c(k)}); }
const UOp* Sym::lt(const UOp* a, const UOp* b) { return g.make(Op::CmpLt, DType::Bool, {a, b}); }
const UOp* Sym::ge(const UOp* a, int64_t k) { return g.make(Op::Xor, DType::Bool, {lt(a, k), g.cint(1, DType::Bool)}); }
const UOp* Sym::and_(const UOp* a, const UOp* b) {
  if (!a) return b;
  if (!b) return a;
  return g.make(Op::And, DType::Bool, {a, b});
}

const std::vector<Rule>& symbolic_rules() {
  static const std::vector<Rule> rules = {fold_constants, fold_bounds, identities, normalize_sum, divmod, compare};
  return rules;
}

const UOp* simplify(Graph& g, const UOp* u) { return graph_rewrite(g, u, symbolic_rules()); }

namespace {
// Tightens `bounds` by the conjuncts of `c` of the forms x + d < k and (x + d < k) ^ 1 on
// ranges/VARs.
void bounds_from(const UOp* c, std::map<const UOp*, std::pair<int64_t, int64_t>>& bounds) {
  if (c->op == Op::And) {
    bounds_from(c->src[0], bounds);
    bounds_from(c->src[1], bounds);
    return;
  }
  bool negated = c->op == Op::Xor && c->src[1]->is_const(1);
  const UOp* lt = negated ? c->src[0] : c;
  if (lt->op != Op::CmpLt || !is_index(lt->src[1])) return;
  // x + d < k; k may be an expression over VARs (a run-time size): x + d < k <= k.vmax (and
  // x + d >= k >= k.vmin when negated).
  const UOp* x = lt->src[0];
  int64_t offset = 0;
  if (x->op == Op::Add && is_cint(x->src[1])) offset = x->src[1]->ival(), x = x->src[0];
  if (x->op != Op::Range && x->op != Op::Var) return;
  auto [it, _] = bounds.try_emplace(x, x->vmin, x->vmax);
  const UOp* rhs = lt->src[1];
  int64_t k = (is_cint(rhs) ? rhs->ival() : negated ? rhs->vmin : rhs->vmax) - offset;
  if (negated)
    it->second.first = std::max(it->second.first, k);
  else
    it->second.second = std::min(it->second.second, k - 1);
}
}  // namespace

const UOp* simplify_given(Graph& g, const UOp* u, const UOp* condition) {
  std::map<const UOp*, std::pair<int64_t, int64_t>> bounds;
  bounds_from(condition, bounds);
  std::unordered_map<const UOp*, const UOp*> narrow, back;
  for (auto [x, b] : bounds) {
    if (b.first <= x->vmin && b.second >= x->vmax) continue;
    if (b.first > b.second) return simplify(g, u);  // never true: any value will do
    // A stand-in VAR with the tighter bounds, swapped back after simplifying.
    std::string name = "given." + std::to_string(x->hash);
    const UOp* v = g.var(name, b.first, b.second);
    narrow[x] = v, back[v] = x;
  }
  if (narrow.empty()) return simplify(g, u);
  return substitute(g, simplify(g, substitute(g, u, narrow)), back);
}

std::optional<int64_t> constant_difference(Graph& g, const UOp* a, const UOp* b) {
  Sym s{g};
  const UOp* d = simplify(g, s.add(a, s.mul(b, -1)));
  if (d->is_const()) return d->ival();
  return std::nullopt;
}

std::optional<int64_t> stride_along(Graph& g, const UOp* idx, const UOp* r) {
  Sym s{g};
  return constant_difference(g, substitute(g, idx, {{r, s.add(r, 1)}}), idx);
}

int64_t eval_index(const UOp* u, const std::map<const UOp*, int64_t>& vars) {
  if (u->op == Op::Const && is_int(u->dtype)) return u->ival();
  if (u->op == Op::Var) {
    auto it = vars.find(u);
    if (it == vars.end()) throw Error("eval_index: VAR '" + u->var().name + "' has no value");
    return it->second;
  }
  if (!is_elementwise(u->op) || u->src.size() > 3)
    throw Error("eval_index: " + std::string(op_name(u->op)) + " is not index arithmetic");
  Num args[3];
  for (size_t i = 0; i < u->src.size(); ++i) args[i] = Num{0, eval_index(u->src[i], vars)};
  return eval_elementwise(u->op, u->dtype, u->src[0]->dtype, args).i;
}

}  // namespace tgc
