#include "passes/lower.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "ir/print.h"
#include "ir/rewrite.h"
#include "ir/symbolic.h"

namespace tgc {

namespace {
using RangeSet = std::set<const UOp*>;

class Lowerer {
 public:
  std::vector<LStmt> run(const std::vector<const UOp*>& stores, const UOp* inner) {
    scopes_.push_back({nullptr, {}});
    if (inner) open(inner);
    for (const UOp* u : toposort(stores))
      if (u->op == Op::KReduce) reduces_.push_back(u);
    // Values first, then the stores side by side: a renderer can check their gates together.
    for (const UOp* st : stores)
      for (size_t i = 1; i < st->src.size(); ++i) emit(st->src[i]);
    for (const UOp* st : stores) place(st, {LStmt::Store, st});
    while (scopes_.size() > 1) close();
    return std::move(scopes_[0].body);
  }

 private:
  struct Scope {
    const UOp* range;
    std::vector<LStmt> body;
    int serial = 0;  // the same range can be looped over twice (two reduces): tell them apart
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
    placed_[u] = scopes_[t].serial;
  }

  bool visible(const UOp* u) {
    auto it = placed_.find(u);
    if (it == placed_.end()) return false;
    for (const Scope& s : scopes_)
      if (s.serial == it->second) return true;
    return false;
  }

  void open(const UOp* range) { scopes_.push_back({range, {}, ++serials_}); }
  void close() {
    Scope s = std::move(scopes_.back());
    scopes_.pop_back();
    scopes_.back().body.push_back({LStmt::Loop, s.range, nullptr, std::move(s.body)});
  }

  // Reduces `u` runs beside in one loop nest: same ranges, same placement, independent.
  std::vector<const UOp*> siblings(const UOp* u) {
    std::vector<const UOp*> group = {u};
    size_t t = target(u);
    for (const UOp* c : reduces_) {
      if (c == u || visible(c) || c->src.size() != u->src.size() || target(c) != t) continue;
      if (!std::equal(c->src.begin() + 1, c->src.end(), u->src.begin() + 1)) continue;
      bool independent =
          std::none_of(group.begin(), group.end(), [&](const UOp* m) { return reaches(c, m) || reaches(m, c); });
      if (independent) group.push_back(c);
    }
    return group;
  }

  bool reaches(const UOp* from, const UOp* to) {
    auto key = std::make_pair(from, to);
    if (auto it = reach_.find(key); it != reach_.end()) return it->second;
    bool r = from == to;
    for (const UOp* s : from->src) r = r || reaches(s, to);
    return reach_[key] = r;
  }

  void emit(const UOp* u) {
    // VARs, like ranges, are defined by the kernel around the program (read from the vars buffer).
    if (u->op == Op::Const || u->op == Op::Range || u->op == Op::Var || u->op == Op::Buffer || visible(u)) return;
    if (u->op == Op::KReduce) {
      std::vector<const UOp*> group = siblings(u);
      for (const UOp* m : group) place(m, {LStmt::AccInit, m});
      // Loops open inside the accumulators' scope; the bodies' invariants still land outside.
      size_t t = target(u);
      std::vector<Scope> saved(std::make_move_iterator(scopes_.begin() + long(t) + 1),
                               std::make_move_iterator(scopes_.end()));
      scopes_.resize(t + 1);
      // GROUP ranges are thread ids, not loops: each thread accumulates its share.
      std::vector<const UOp*> loops;
      for (size_t i = 1; i < u->src.size(); ++i)
        if (u->src[i]->range().kind != RangeKind::Group) loops.push_back(u->src[i]);
      for (const UOp* r : loops) open(r);
      for (const UOp* m : group) emit(m->src[0]);
      for (const UOp* m : group) scopes_.back().body.push_back({LStmt::AccUpdate, m, m->src[0]});
      for (size_t i = 0; i < loops.size(); ++i) close();
      if (loops.size() + 1 < u->src.size())
        for (const UOp* m : group) scopes_.back().body.push_back({LStmt::GroupReduce, m});
      for (auto& s : saved) scopes_.push_back(std::move(s));
      return;
    }
    for (const UOp* s : u->src) emit(s);
    place(u, {LStmt::Let, u});
  }

  std::vector<Scope> scopes_;
  std::vector<const UOp*> reduces_;
  std::map<std::pair<const UOp*, const UOp*>, bool> reach_;
  std::unordered_map<const UOp*, RangeSet> deps_;
  std::unordered_map<const UOp*, int> placed_;
  int serials_ = 0;
};

struct Printer {
  const Graph& g;
  std::ostringstream o;
  std::map<const UOp*, int> acc;

  std::string acc_name(const UOp* u) {
    return "acc" + std::to_string(acc.try_emplace(u, int(acc.size())).first->second);
  }

  void stmts(const std::vector<LStmt>& body, int indent) {
    std::string pad(size_t(indent) * 2, ' ');
    for (const LStmt& s : body) {
      switch (s.kind) {
        case LStmt::Loop:
          o << pad << "for r" << s.u->range().id << " in 0.." << print_expr(g, s.u->src[0]) << ":";
          for (const LStmt::Stream& st : s.streams)
            o << (&st == &s.streams[0] ? "  # streams " : ", ") << g.buffer(st.buffer).name << " +" << st.stride
              << " B";
          o << "\n";
          stmts(s.body, indent + 1);
          break;
        case LStmt::AccInit: o << pad << acc_name(s.u) << " = identity(" << op_name(s.u->reduce().op) << ")\n"; break;
        case LStmt::AccUpdate:
          o << pad << acc_name(s.u) << " = " << op_name(s.u->reduce().op) << "(" << acc_name(s.u) << ", "
            << print_expr(g, s.value) << ")\n";
          break;
        case LStmt::GroupReduce:
          o << pad << acc_name(s.u) << " = " << op_name(s.u->reduce().op) << " over the work-group (shared memory)\n";
          break;
        case LStmt::Let: break;  // values are shown inline where they are used
        case LStmt::Store: o << pad << print_expr(g, s.u) << "\n"; break;
      }
    }
  }
};

// Every assignment of constants to `ranges` (the last one varies fastest).
std::vector<std::unordered_map<const UOp*, const UOp*>> assignments(Graph& g, const std::vector<const UOp*>& ranges) {
  std::vector<std::unordered_map<const UOp*, const UOp*>> out = {{}};
  for (const UOp* r : ranges) {
    std::vector<std::unordered_map<const UOp*, const UOp*>> next;
    for (const auto& a : out)
      for (int64_t v = 0; v < r->src[0]->ival(); ++v) {
        next.push_back(a);
        next.back()[r] = g.cint(v);
      }
    out = std::move(next);
  }
  return out;
}

// Each loop's streams: loads of its own statements (not of the loops inside it, nor inside a
// KREDUCE, whose loops are elsewhere) that move on by 32 to 2048 bytes per iteration and read
// what they move over: loads of one buffer less than a stride apart (the lanes of a row, the
// bytes of a quantized block) are one stream, which must span at least half its stride (not a
// walk across channels that reads a row of each).
void mark_streams(Graph& g, std::vector<LStmt>& body) {
  const int64_t kMinStride = 32, kMaxStride = 2048, kMaxStreams = 8;
  for (LStmt& s : body) {
    if (s.kind != LStmt::Loop) continue;
    mark_streams(g, s.body);
    struct Walk {
      LStmt::Stream stream;
      const UOp* first;              // the index offsets are counted from
      int64_t step, lo = 0, hi = 0;  // elements; the loads' offsets from `first`
    };
    std::vector<Walk> walks;
    std::vector<const UOp*> work;
    for (const LStmt& t : s.body)
      if (t.kind != LStmt::Loop) work.insert(work.end(), {t.u, t.value});
    std::unordered_set<const UOp*> seen;
    while (!work.empty()) {
      const UOp* u = work.back();
      work.pop_back();
      if (!u || !seen.insert(u).second || u->op == Op::KReduce) continue;
      work.insert(work.end(), u->src.begin(), u->src.end());
      if (u->op != Op::Load) continue;
      int64_t buffer = u->src[0]->ival(), size = dtype_size(g.buffer(buffer).dtype);
      std::optional<int64_t> step = stride_along(g, u->src[1], s.u);
      if (!step || *step * size < kMinStride || *step * size > kMaxStride) continue;
      bool joined = false;
      for (Walk& w : walks) {
        if (w.stream.buffer != buffer || w.step != *step) continue;
        std::optional<int64_t> d = constant_difference(g, u->src[1], w.first);
        if (!d || *d <= w.hi - *step || *d >= w.lo + *step) continue;
        if (*d < w.lo) w.stream.index = u->src[1], w.lo = *d;
        w.hi = std::max(w.hi, *d);
        joined = true;
        break;
      }
      if (!joined) walks.push_back({{buffer, u->src[1], *step * size}, u->src[1], *step});
    }
    for (Walk& w : walks) {
      if (2 * (w.hi - w.lo + 1) < w.step || int64_t(s.streams.size()) == kMaxStreams) continue;
      s.streams.push_back(w.stream);
    }
  }
}

std::vector<const UOp*> upcast_ranges(const std::vector<const UOp*>& roots) {
  std::vector<const UOp*> rs;
  for (const UOp* u : toposort(roots))
    if (u->op == Op::Range && u->range().kind == RangeKind::Upcast) rs.push_back(u);
  return rs;
}

// The factors of a float product tree, left to right.
void product_factors(const UOp* u, std::vector<const UOp*>& out) {
  if (u->op == Op::Mul && is_float(u->dtype)) {
    product_factors(u->src[0], out);
    product_factors(u->src[1], out);
  } else {
    out.push_back(u);
  }
}

// Whether integer `e` holds a small value (a masked field such as a nibble, or a widened byte):
// converting e and e + c to float then is exact, so f32(e + c) == f32(e) + c.
bool small_int(const UOp* e) {
  if (e->op == Op::And)
    for (const UOp* m : e->src)
      if (m->is_const() && m->ival() >= 0 && m->ival() <= 1 << 16) return true;
  return e->op == Op::Cast && is_int(e->src[0]->dtype) && dtype_size(e->src[0]->dtype) <= 2;
}

// The offset c of a factor f32(e + c) with e a small integer (q4_0's nibble - 8), and e.
std::optional<std::pair<int64_t, const UOp*>> offset_factor(const UOp* f) {
  if (f->op != Op::Cast || !is_float(f->dtype) || f->src[0]->op != Op::Add) return std::nullopt;
  const UOp* add = f->src[0];
  for (int i = 0; i < 2; ++i)
    if (add->src[i]->is_const() && std::abs(add->src[i]->ival()) <= 1 << 16 && small_int(add->src[1 - i]))
      return std::make_pair(add->src[i]->ival(), add->src[1 - i]);
  return std::nullopt;
}

// x0*f32(e0 + c) + x1*f32(e1 + c) + ... -> (x0*f32(e0) + x1*f32(e1) + ...) + c*(x0 + x1 + ...):
// an offset every term's integer factor shares leaves the products as one product with the sum
// of the other factors, which the rows of an UPCAST share (the activations of a q4_0 matrix-vector
// product: the - 8 of every nibble becomes one multiply-add per block and row). nullptr where
// the factor lists differ in that.
const UOp* offset_out(Graph& g, const std::vector<std::vector<const UOp*>>& factors) {
  std::optional<int64_t> offset;
  std::vector<size_t> at(factors.size());
  std::vector<const UOp*> field(factors.size());  // e of each term's f32(e + c)
  for (size_t i = 0; i < factors.size(); ++i) {
    const std::vector<const UOp*>& fs = factors[i];
    std::optional<std::pair<int64_t, const UOp*>> o;
    for (size_t j = 0; j < fs.size() && !o; ++j) o = offset_factor(fs[j]), at[i] = j;
    if (!o || fs.size() < 2 || (offset && *offset != o->first)) return nullptr;
    offset = o->first, field[i] = o->second;
  }
  const UOp *products = nullptr, *others = nullptr;
  for (size_t i = 0; i < factors.size(); ++i) {
    const UOp *product = nullptr, *other = nullptr;
    for (size_t j = 0; j < factors[i].size(); ++j) {
      const UOp* f = factors[i][j];
      if (j == at[i]) {
        f = g.make(Op::Cast, f->dtype, {field[i]});
      } else {
        other = other ? g.make(Op::Mul, f->dtype, {other, f}) : f;
      }
      product = product ? g.make(Op::Mul, f->dtype, {product, f}) : f;
    }
    products = products ? g.make(Op::Add, product->dtype, {products, product}) : product;
    others = others ? g.make(Op::Add, other->dtype, {others, other}) : other;
  }
  const UOp* c = g.cfloat(double(*offset), others->dtype);
  return g.make(Op::Add, products->dtype, {products, g.make(Op::Mul, others->dtype, {c, others})});
}

// terms[0] + terms[1] + ... with the factors every term's product has taken out once:
// x0*(d*w0) + x1*(d*w1) -> d*(x0*w0 + x1*w1) (a quantized block's scale times its unrolled
// products), and a shared offset out of their integer factors (offset_out); nullptr where the
// terms share neither.
const UOp* factored_sum(Graph& g, const std::vector<const UOp*>& terms) {
  if (terms.size() < 2) return nullptr;
  std::vector<std::vector<const UOp*>> factors(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) product_factors(terms[i], factors[i]);
  std::vector<const UOp*> common;
  for (const UOp* f : factors[0]) {
    bool everywhere = std::all_of(factors.begin() + 1, factors.end(), [&](const std::vector<const UOp*>& fs) {
      return std::find(fs.begin(), fs.end(), f) != fs.end();
    });
    if (everywhere && std::find(common.begin(), common.end(), f) == common.end()) common.push_back(f);
  }
  for (std::vector<const UOp*>& fs : factors) {
    for (const UOp* c : common) fs.erase(std::find(fs.begin(), fs.end(), c));
    if (fs.empty()) return nullptr;  // a term that is only the common factors
  }
  const UOp* sum = offset_out(g, factors);
  if (!sum && common.empty()) return nullptr;
  if (!sum)
    for (const std::vector<const UOp*>& fs : factors) {
      const UOp* term = fs[0];
      for (size_t i = 1; i < fs.size(); ++i) term = g.make(Op::Mul, term->dtype, {term, fs[i]});
      sum = sum ? g.make(Op::Add, sum->dtype, {sum, term}) : term;
    }
  for (const UOp* c : common) sum = g.make(Op::Mul, sum->dtype, {c, sum});
  return sum;
}
}  // namespace

std::vector<const UOp*> expand_upcasts(Graph& g, const UOp* store, bool factor_sums) {
  // Reduces first, innermost first: KREDUCE(v, r, u) with u upcast -> KREDUCE(v[u=0] op v[u=1] ..., r).
  std::unordered_map<const UOp*, const UOp*> done;
  for (const UOp* u : toposort({store})) {
    std::vector<const UOp*> src;
    for (const UOp* s : u->src) src.push_back(done.at(s));
    const UOp* n = with_src(g, u, std::move(src));
    if (n->op == Op::KReduce) {
      std::vector<const UOp*> ups, rest;
      for (size_t i = 1; i < n->src.size(); ++i)
        (n->src[i]->range().kind == RangeKind::Upcast ? ups : rest).push_back(n->src[i]);
      if (!ups.empty()) {
        std::vector<const UOp*> terms;
        for (const auto& a : assignments(g, ups)) terms.push_back(simplify(g, substitute(g, n->src[0], a)));
        const UOp* acc = factor_sums && n->reduce().op == Op::Add && !n->reduce().ordered && is_float(n->dtype)
                             ? factored_sum(g, terms)
                             : nullptr;
        if (!acc)
          for (const UOp* v : terms) acc = acc ? g.make(n->reduce().op, n->dtype, {acc, v}) : v;
        rest.insert(rest.begin(), acc);
        n = rest.size() == 1 ? acc : g.make(Op::KReduce, n->dtype, rest, n->arg);
      }
    }
    done[u] = n;
  }
  const UOp* root = done.at(store);
  // Copies in address order (the axis with the smallest store stride varies fastest), so that
  // neighbouring copies are neighbouring vector lanes for the SLP vectorizer.
  std::vector<const UOp*> ups = upcast_ranges({root});
  auto stride = [&](const UOp* r) {
    std::optional<int64_t> d = stride_along(g, root->src[1], r);
    return d ? std::abs(*d) : INT64_MAX;
  };
  std::stable_sort(ups.begin(), ups.end(), [&](const UOp* a, const UOp* b) { return stride(a) > stride(b); });
  std::vector<const UOp*> stores;
  for (const auto& a : assignments(g, ups)) stores.push_back(simplify(g, substitute(g, root, a)));
  return stores;
}

LoopProgram lower(Graph& g, const Kernel& k, const LowerOptions& opt) {
  LoopProgram p;
  p.name = k.name;
  p.globals = k.global_ranges;
  p.locals = k.local_ranges;
  if (k.tensor_cores) p.tensor_cores = tensor_core_plan(g, k).value();
  if (opt.inner_loop && !p.globals.empty()) p.inner = p.globals.back();
  p.args.push_back(k.output);
  p.args.insert(p.args.end(), k.inputs.begin(), k.inputs.end());
  std::vector<const UOp*> stores = expand_upcasts(g, k.ast, opt.factor_sums);
  for (size_t i = 1; i < stores.size() && !p.lanes_expanded; ++i)
    p.lanes_expanded = constant_difference(g, stores[i]->src[1], stores[0]->src[1]) == 1;
  // LANES: a reduce over nothing but UPCAST ranges combines the lanes' partial sums.
  for (const UOp* u : toposort({k.ast}))
    if (u->op == Op::KReduce && std::all_of(u->src.begin() + 1, u->src.end(),
                                            [](const UOp* r) { return r->range().kind == RangeKind::Upcast; }))
      p.lanes_expanded = p.lane_sums = true;
  p.body = Lowerer().run(stores, p.inner);
  if (opt.streams) mark_streams(g, p.body);
  return p;
}

std::string print_program(const Graph& g, const LoopProgram& p) {
  Printer pr{g, {}, {}};
  std::ostringstream& o = pr.o;
  o << p.name << (p.tensor_cores ? " [tensor cores]" : "") << "(";
  for (size_t i = 0; i < p.args.size(); ++i) o << (i ? ", " : "") << g.buffer(p.args[i]).name;
  o << ") global[";
  for (size_t i = 0; i < p.globals.size(); ++i)
    o << (i ? "," : "") << "r" << p.globals[i]->range().id << "<" << print_expr(g, p.globals[i]->src[0]);
  o << "]";
  if (!p.locals.empty()) {
    o << " local[";
    for (size_t i = 0; i < p.locals.size(); ++i)
      o << (i ? "," : "") << "r" << p.locals[i]->range().id << "<" << p.locals[i]->src[0]->ival();
    o << "]";
  }
  o << "\n";
  pr.stmts(p.body, 1);
  return o.str();
}

}  // namespace tgc
