#include "passes/kernel_eval.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "ir/error.h"
#include "ir/symbolic.h"

namespace tgc {

namespace {
constexpr size_t kMaxProblems = 10;  // a broken kernel fails everywhere: the first few say enough

// An elementwise op on its operands' values.
Num elementwise(const UOp* u, const Num* args) {
  if (!is_elementwise(u->op))
    throw Error("reference backend: unexpected " + std::string(op_name(u->op)) + " in a kernel");
  DType in = u->op == Op::Where ? u->src[1]->dtype : u->src[0]->dtype;
  return eval_elementwise(u->op, u->dtype, in, args);
}

Num identity(const UOp* reduce) {
  Op op = reduce->reduce().op;
  return Num::of(reduce->dtype, op == Op::Add ? 0 : op == Op::Mul ? 1 : lowest_value(reduce->dtype));
}

Num combine(const UOp* reduce, Num acc, Num v) {
  Num args[2] = {acc, v};
  return eval_elementwise(reduce->reduce().op, reduce->dtype, reduce->dtype, args);
}

// Ranges a kernel's AST runs in parallel: global and local dims, and the UPCAST parts split off
// them (UPCAST and GROUP parts of reduce dims stay in their reduce's list and are iterated there).
std::vector<const UOp*> parallel_ranges(const Kernel& k) {
  std::vector<const UOp*> out = k.global_ranges;
  for (const UOp* l : k.local_ranges)
    if (l->range().kind == RangeKind::Local) out.push_back(l);
  std::set<const UOp*> in_reduce;
  std::vector<const UOp*> all = toposort({k.ast});
  for (const UOp* u : all)
    if (u->op == Op::KReduce) in_reduce.insert(u->src.begin() + 1, u->src.end());
  for (const UOp* u : all)
    if (u->op == Op::Range && u->range().kind == RangeKind::Upcast && !in_reduce.count(u)) out.push_back(u);
  return out;
}

// Positions past a run-time dim's value store nothing, so only then may elements stay unwritten.
bool covers_whole_output(const std::vector<const UOp*>& globals) {
  return std::all_of(globals.begin(), globals.end(), [](const UOp* r) { return r->src[0]->is_const(); });
}
}  // namespace

Num ScalarEval::eval(const UOp* u) {
  switch (u->op) {
    case Op::Const: return is_float(u->dtype) ? Num{u->fval(), 0} : Num{0, u->ival()};
    case Op::Range: return Num{0, env.at(u->range().id)};
    case Op::Var:
      if (!var) throw Error("reference backend: VAR " + u->var().name + " without a value");
      return Num{0, var(u)};
    case Op::Load:
      if (u->src.size() > 2 && !eval(u->src[2]).i) return Num{};
      return load(u->src[0]->ival(), eval(u->src[1]).i);
    case Op::KReduce: {
      Num acc = identity(u);
      for_each_position({u->src.begin() + 1, u->src.end()}, [&] { acc = combine(u, acc, eval(u->src[0])); });
      return acc;
    }
    default: break;
  }
  Num args[3];
  for (size_t i = 0; i < u->src.size() && i < 3; ++i) args[i] = eval(u->src[i]);
  return elementwise(u, args);
}

void ScalarEval::for_each_position(const std::vector<const UOp*>& ranges, const std::function<void()>& f) {
  std::vector<int64_t> sizes;
  int64_t count = 1;
  for (const UOp* r : ranges) count *= sizes.emplace_back(eval(r->src[0]).i);
  for (int64_t n = 0; n < count; ++n) {
    int64_t rest = n;
    for (size_t i = ranges.size(); i-- > 0;) env[ranges[i]->range().id] = rest % sizes[i], rest /= sizes[i];
    f();
  }
}

// What every run shares: reads with their checks, the output with a count of writes per element,
// and the problems found.
struct KernelEvaluator::Run {
  KernelEvaluator& ev;
  std::string kernel;
  int64_t out;
  std::vector<int> writes;
  std::vector<std::string> problems;
  size_t unreported = 0;

  Run(KernelEvaluator& e, std::string name, int64_t out_buf) : ev(e), kernel(std::move(name)), out(out_buf) {
    std::vector<Num>& dst = ev.mem_[out];
    // A state buffer keeps what it held (zero at first): an ASSIGN writes only its part.
    if (!is_state() || dst.empty()) dst.assign(size_t(numel(ev.g_.buffer(out).shape)), Num{});
    writes.assign(dst.size(), 0);
  }

  void problem(const std::string& what) {
    if (problems.size() < kMaxProblems)
      problems.push_back(kernel + " " + what);
    else
      ++unreported;
  }
  std::string name(int64_t buf) const { return "'" + ev.g_.buffer(buf).name + "'"; }
  bool is_state() const { return ev.g_.buffer(out).kind == BufferKind::State; }

  Num load(int64_t buf, int64_t i) {
    const std::vector<Num>* m = ev.memory(buf);
    if (!m) {
      problem("reads buffer " + name(buf) + " before it is written");
      return Num{};
    }
    if (i < 0 || i >= int64_t(m->size())) {
      problem("reads " + name(buf) + " out of bounds at " + std::to_string(i));
      return Num{};
    }
    return (*m)[size_t(i)];
  }

  int64_t var(const UOp* v) const {
    auto it = ev.mem_.find(ev.g_.vars_buffer());
    if (it == ev.mem_.end()) throw Error("reference backend: no value fed for the run-time dim " + v->var().name);
    return it->second.at(size_t(ev.g_.var_slot(v))).i;
  }

  ScalarEval scalar_eval() {
    ScalarEval e;
    e.load = [this](int64_t buf, int64_t i) { return load(buf, i); };
    e.var = [this](const UOp* v) { return var(v); };
    return e;
  }

  void store(int64_t at, Num v) {
    if (at < 0 || at >= int64_t(writes.size())) {
      problem("stores out of bounds at " + std::to_string(at));
      return;
    }
    ev.mem_[out][size_t(at)] = v;
    writes[size_t(at)]++;
  }

  std::vector<std::string> finish(bool whole_output) {
    for (size_t i = 0; i < writes.size(); ++i)
      if (writes[i] > 1 || (writes[i] == 0 && whole_output && !is_state()))
        problem("writes element " + std::to_string(i) + " of " + name(out) + " " + std::to_string(writes[i]) +
                " times");
    if (unreported) problems.push_back("... and " + std::to_string(unreported) + " more problems");
    return std::move(problems);
  }
};

namespace {
std::vector<Num> nums(DType t, const uint8_t* p, int64_t n) {
  std::vector<Num> r;
  for (int64_t i = 0; i < n; ++i) r.push_back(load_num(t, p + i * dtype_size(t)));
  return r;
}
}  // namespace

KernelEvaluator::KernelEvaluator(const Graph& g, const std::map<int64_t, HostTensor>& feeds) : g_(g) {
  for (const auto& [id, h] : feeds) mem_[id] = nums(h.dtype, h.bytes.data(), h.numel());
}

const std::vector<Num>* KernelEvaluator::memory(int64_t id) const {
  if (auto it = mem_.find(id); it != mem_.end()) return &it->second;
  const BufferInfo& b = g_.buffer(id);  // weights are read at their first use (a model's may be large)
  if (!b.data) return nullptr;
  return &(mem_[id] = nums(b.dtype, b.data->data(), numel(b.shape)));
}

std::vector<std::string> KernelEvaluator::run(const Kernel& k) {
  Run r(*this, k.name, k.output);
  ScalarEval e = r.scalar_eval();
  const UOp* st = k.ast;
  e.for_each_position(parallel_ranges(k), [&] {
    if (st->src.size() > 3 && !e.eval(st->src[3]).i) return;  // a PADTO axis's padding
    r.store(e.index(st->src[1]), e.eval(st->src[2]));
  });
  return r.finish(covers_whole_output(k.global_ranges));
}

// Runs a loop program as the GPU renderers do, one work-group at a time: its threads (every
// position of the local ranges) run each statement in lockstep, so that a GroupReduce can combine
// their partials. CPU programs have one thread per work item. A value is visible only in the
// scope that computed it, as in the rendered code.
class KernelEvaluator::ProgramRun {
 public:
  ProgramRun(Run& r, const LoopProgram& p) : r_(r), p_(p) {}

  void run() {
    std::vector<const UOp*> items;  // work items: the global dims not run as the inner loop
    for (const UOp* g : p_.globals)
      if (g != p_.inner) items.push_back(g);
    ScalarEval pos = r_.scalar_eval();
    pos.for_each_position(items, [&] {
      threads_.clear();
      pos.for_each_position(p_.locals, [&] { threads_.push_back({pos.env, {}, {}}); });
      exec(p_.body);
    });
  }

 private:
  struct Thread {
    std::map<int64_t, int64_t> ranges;  // range id -> value, for the ranges open here
    std::unordered_map<const UOp*, Num> values;
    std::vector<const UOp*> defined;  // in order, so that a loop body's values can be dropped
  };

  void exec(const std::vector<LStmt>& body) {
    for (const LStmt& s : body) {
      switch (s.kind) {
        case LStmt::Let:
          for (Thread& t : threads_) define(t, s.u, compute(t, s.u));
          break;
        case LStmt::Loop: loop(s); break;
        case LStmt::AccInit:
          for (Thread& t : threads_) define(t, s.u, identity(s.u));
          break;
        case LStmt::AccUpdate:
          for (Thread& t : threads_) {
            auto acc = t.values.find(s.u);
            if (acc == t.values.end())
              r_.problem("updates an accumulator it has not initialized");
            else
              acc->second = combine(s.u, acc->second, value(t, s.value));
          }
          break;
        case LStmt::GroupReduce: group_reduce(s.u); break;
        case LStmt::Store:
          for (Thread& t : threads_) store(t, s.u);
          break;
      }
    }
  }

  void loop(const LStmt& s) {
    int64_t id = s.u->range().id;
    std::map<const UOp*, int64_t> vars;
    for (const UOp* x : toposort({s.u->src[0]}))
      if (x->op == Op::Var) vars[x] = r_.var(x);
    int64_t n = eval_index(s.u->src[0], vars);
    for (int64_t v = 0; v < n; ++v) {
      std::vector<size_t> marks;
      for (Thread& t : threads_) t.ranges[id] = v, marks.push_back(t.defined.size());
      exec(s.body);
      for (size_t i = 0; i < threads_.size(); ++i) {
        Thread& t = threads_[i];
        for (size_t d = marks[i]; d < t.defined.size(); ++d) t.values.erase(t.defined[d]);
        t.defined.resize(marks[i]);
      }
    }
    for (Thread& t : threads_) t.ranges.erase(id);
  }

  void define(Thread& t, const UOp* u, Num v) {
    t.values[u] = v;
    t.defined.push_back(u);
  }

  // A source's value where it is used: constants anywhere, ranges inside their loops (or as
  // work-item and thread ids), everything else once a statement in scope has computed it.
  Num value(const Thread& t, const UOp* u) {
    if (u->op == Op::Const) return is_float(u->dtype) ? Num{u->fval(), 0} : Num{0, u->ival()};
    if (u->op == Op::Var) return Num{0, r_.var(u)};
    if (u->op == Op::Range) {
      if (auto it = t.ranges.find(u->range().id); it != t.ranges.end()) return Num{0, it->second};
      r_.problem("uses r" + std::to_string(u->range().id) + " outside its loop");
      return Num{};
    }
    if (auto it = t.values.find(u); it != t.values.end()) return it->second;
    r_.problem("uses a " + std::string(op_name(u->op)) + " before computing it (or outside its scope)");
    return Num{};
  }

  Num compute(const Thread& t, const UOp* u) {
    if (u->op == Op::Var) return Num{0, r_.var(u)};
    if (u->op == Op::Load) {
      if (u->src.size() > 2 && !value(t, u->src[2]).i) return Num{};
      return r_.load(u->src[0]->ival(), value(t, u->src[1]).i);
    }
    Num args[3];
    for (size_t i = 0; i < u->src.size() && i < 3; ++i) args[i] = value(t, u->src[i]);
    return elementwise(u, args);
  }

  // Each thread folds the partials of the threads that differ from it only in this reduce's GROUP
  // ranges (along another reduce's GROUP range the partials are the same value).
  void group_reduce(const UOp* u) {
    std::vector<Num> partial;
    for (const Thread& t : threads_) partial.push_back(value(t, u));
    auto siblings = [&](const Thread& a, const Thread& b) {
      for (const UOp* l : p_.locals)
        if (!std::count(u->src.begin() + 1, u->src.end(), l) &&
            a.ranges.at(l->range().id) != b.ranges.at(l->range().id))
          return false;
      return true;
    };
    for (Thread& t : threads_) {
      Num acc = identity(u);
      for (size_t j = 0; j < threads_.size(); ++j)
        if (siblings(t, threads_[j])) acc = combine(u, acc, partial[j]);
      t.values[u] = acc;
    }
  }

  // With GROUP ranges every thread of the group holds the result: the first one stores.
  void store(const Thread& t, const UOp* st) {
    if (st->src.size() > 3 && !value(t, st->src[3]).i) return;  // a PADTO axis's padding
    for (const UOp* l : p_.locals)
      if (l->range().kind == RangeKind::Group && t.ranges.at(l->range().id) != 0) return;
    r_.store(value(t, st->src[1]).i, value(t, st->src[2]));
  }

  Run& r_;
  const LoopProgram& p_;
  std::vector<Thread> threads_;
};

std::vector<std::string> KernelEvaluator::run(const LoopProgram& p) {
  Run r(*this, p.name, p.args.at(0));
  ProgramRun(r, p).run();
  return r.finish(covers_whole_output(p.globals));
}

std::vector<double> KernelEvaluator::result(int64_t id) const {
  const std::vector<Num>* m = memory(id);
  if (!m) throw Error("reference backend: nothing fed or wrote buffer '" + g_.buffer(id).name + "'");
  std::vector<double> r;
  for (const Num& v : *m) r.push_back(v.as_double(g_.buffer(id).dtype));
  return r;
}

}  // namespace tgc
