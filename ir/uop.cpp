#include "ir/uop.h"

#include <algorithm>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"

namespace tgc {

namespace {
constexpr std::string_view kOpNames[] = {
    "BUFFER",  "CONST",   "VAR",     "ASSIGN", "CONTIGUOUS", "NEG",  "EXP2",  "LOG2",   "SIN",   "SQRT",
    "RECIP",   "CAST",    "BITCAST", "TRUNC",  "ADD",        "MUL",  "MAX",   "MOD",    "IDIV",  "CMPLT",
    "CMPNE",   "AND",     "OR",      "XOR",    "SHL",        "SHR",  "WHERE", "MULACC", "DOT4",  "REDUCE",
    "RESHAPE", "PERMUTE", "EXPAND",  "PAD",    "SHRINK",     "FLIP", "RANGE", "LOAD",   "STORE", "KREDUCE",
};
static_assert(std::size(kOpNames) == static_cast<size_t>(Op::KReduce) + 1);

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

size_t hash_ints(const std::vector<int64_t>& v) {
  size_t h = v.size();
  for (int64_t x : v) h = mix(h, std::hash<int64_t>()(x));
  return h;
}

size_t hash_arg(const Arg& a) {
  size_t h = a.index();
  switch (a.index()) {
    case 1: return mix(h, std::hash<int64_t>()(std::get<int64_t>(a)));
    case 2: return mix(h, std::hash<double>()(std::get<double>(a)));
    case 3: return mix(h, hash_ints(std::get<std::vector<int64_t>>(a)));
    case 4: {
      const ReduceArg& r = std::get<ReduceArg>(a);
      return mix(mix(mix(h, size_t(r.op)), hash_ints(r.axes)), size_t(r.ordered));
    }
    case 5: {
      const auto& v = std::get<VarArg>(a);
      return mix(mix(mix(h, std::hash<std::string>()(v.name)), size_t(v.min)), size_t(v.max));
    }
    case 6: return mix(mix(h, size_t(std::get<RangeArg>(a).id)), size_t(std::get<RangeArg>(a).kind));
    default: return h;
  }
}

// Saturating helpers so bound arithmetic never overflows.
int64_t sat(__int128 v) { return v > kMax ? kMax : v < kMin ? kMin : static_cast<int64_t>(v); }

bool is_symbolic(DType t) { return t == DType::Index || t == DType::Bool; }

void set_bounds(UOp& u) {
  u.vmin = kMin;
  u.vmax = kMax;
  if (u.dtype == DType::Bool) u.vmin = 0, u.vmax = 1;
  if (!is_symbolic(u.dtype) || !u.shape.empty()) {
    if (u.op == Op::Const && is_int(u.dtype)) u.vmin = u.vmax = u.ival();
    return;
  }
  auto a = [&](int i) { return u.src[i]; };
  switch (u.op) {
    case Op::Const: u.vmin = u.vmax = u.ival(); break;
    case Op::Var: u.vmin = u.var().min, u.vmax = u.var().max; break;
    case Op::Range: u.vmin = 0, u.vmax = a(0)->vmax - 1; break;
    case Op::Add:
      u.vmin = sat(__int128(a(0)->vmin) + a(1)->vmin);
      u.vmax = sat(__int128(a(0)->vmax) + a(1)->vmax);
      break;
    case Op::Neg: u.vmin = sat(-__int128(a(0)->vmax)), u.vmax = sat(-__int128(a(0)->vmin)); break;
    case Op::Mul: {
      __int128 c[4] = {__int128(a(0)->vmin) * a(1)->vmin, __int128(a(0)->vmin) * a(1)->vmax,
                       __int128(a(0)->vmax) * a(1)->vmin, __int128(a(0)->vmax) * a(1)->vmax};
      u.vmin = sat(*std::min_element(c, c + 4));
      u.vmax = sat(*std::max_element(c, c + 4));
      break;
    }
    case Op::Max:
      u.vmin = std::max(a(0)->vmin, a(1)->vmin);
      u.vmax = std::max(a(0)->vmax, a(1)->vmax);
      break;
    case Op::IDiv:
      // Truncating division by a positive constant never decreases: the ends map to the ends.
      if (a(1)->op == Op::Const && a(1)->ival() > 0) {
        u.vmin = a(0)->vmin / a(1)->ival();
        u.vmax = a(0)->vmax / a(1)->ival();
      }
      break;
    case Op::Mod:
      if (a(1)->op == Op::Const && a(1)->ival() > 0 && a(0)->vmin >= 0) {
        bool whole = a(0)->vmax < a(1)->ival();
        u.vmin = whole ? a(0)->vmin : 0;
        u.vmax = whole ? a(0)->vmax : a(1)->ival() - 1;
      }
      break;
    case Op::CmpLt:
      if (a(0)->vmax < a(1)->vmin)
        u.vmin = u.vmax = 1;
      else if (a(0)->vmin >= a(1)->vmax)
        u.vmin = u.vmax = 0;
      break;
    case Op::CmpNe:
      if (a(0)->vmax < a(1)->vmin || a(0)->vmin > a(1)->vmax)
        u.vmin = u.vmax = 1;
      else if (a(0)->vmin == a(0)->vmax && a(1)->vmin == a(1)->vmax && a(0)->vmin == a(1)->vmin)
        u.vmin = u.vmax = 0;
      break;
    case Op::And:
      if (u.dtype == DType::Bool) u.vmin = a(0)->vmin & a(1)->vmin, u.vmax = a(0)->vmax & a(1)->vmax;
      break;
    case Op::Or:
      if (u.dtype == DType::Bool) u.vmin = a(0)->vmin | a(1)->vmin, u.vmax = a(0)->vmax | a(1)->vmax;
      break;
    case Op::Where:
      u.vmin = std::min(a(1)->vmin, a(2)->vmin);
      u.vmax = std::max(a(1)->vmax, a(2)->vmax);
      if (a(0)->vmin == 1) u.vmin = a(1)->vmin, u.vmax = a(1)->vmax;
      if (a(0)->vmax == 0) u.vmin = a(2)->vmin, u.vmax = a(2)->vmax;
      break;
    case Op::Cast:
      if (a(0)->dtype == DType::Bool || a(0)->dtype == DType::Index) u.vmin = a(0)->vmin, u.vmax = a(0)->vmax;
      break;
    default: break;
  }
}

[[noreturn]] void shape_error(Op op, const std::string& what) { throw Error(std::string(op_name(op)) + ": " + what); }

Shape infer_shape(const Graph& g, Op op, const std::vector<const UOp*>& src, const Arg& arg) {
  if (op == Op::Buffer) return g.buffer(std::get<int64_t>(arg)).shape;
  if (op == Op::Const || op == Op::Var || op >= Op::Range) return {};
  if (op == Op::Assign) return src.at(0)->shape;
  const Shape& in = src.at(0)->shape;
  if (is_elementwise(op) || op == Op::Contiguous) {
    for (const UOp* s : src)
      if (s->shape != in) shape_error(op, "operand shapes differ: " + shape_str(in) + " vs " + shape_str(s->shape));
    return in;
  }
  switch (op) {
    case Op::Reduce: {
      Shape out = in;
      for (int64_t ax : std::get<ReduceArg>(arg).axes) {
        if (ax < 0 || ax >= int64_t(in.size())) shape_error(op, "axis out of range");
        out[ax] = 1;
      }
      return out;
    }
    case Op::Reshape: {
      const auto& s = std::get<std::vector<int64_t>>(arg);
      if (numel(s) != numel(in)) shape_error(op, "cannot reshape " + shape_str(in) + " to " + shape_str(s));
      return s;
    }
    case Op::Permute: {
      const auto& p = std::get<std::vector<int64_t>>(arg);
      if (p.size() != in.size()) shape_error(op, "order has wrong rank");
      Shape out(in.size());
      std::vector<bool> seen(in.size());
      for (size_t i = 0; i < p.size(); ++i) {
        if (p[i] < 0 || p[i] >= int64_t(in.size()) || seen[p[i]]) shape_error(op, "not a permutation");
        seen[p[i]] = true;
        out[i] = in[p[i]];
      }
      return out;
    }
    case Op::Expand: {
      const auto& s = std::get<std::vector<int64_t>>(arg);
      if (s.size() != in.size()) shape_error(op, "rank mismatch " + shape_str(in) + " to " + shape_str(s));
      for (size_t i = 0; i < s.size(); ++i)
        if (in[i] != s[i] && in[i] != 1) shape_error(op, "cannot expand " + shape_str(in) + " to " + shape_str(s));
      return s;
    }
    case Op::Pad:
    case Op::Shrink: {
      const auto& p = std::get<std::vector<int64_t>>(arg);
      if (p.size() != 2 * in.size()) shape_error(op, "needs two numbers per axis");
      Shape out(in.size());
      for (size_t i = 0; i < in.size(); ++i) {
        if (op == Op::Pad) {
          if (p[2 * i] < 0 || p[2 * i + 1] < 0) shape_error(op, "negative padding");
          out[i] = in[i] + p[2 * i] + p[2 * i + 1];
        } else {
          if (p[2 * i] < 0 || p[2 * i + 1] > in[i] || p[2 * i] > p[2 * i + 1])
            shape_error(op, "bad bounds for " + shape_str(in));
          out[i] = p[2 * i + 1] - p[2 * i];
        }
      }
      return out;
    }
    case Op::Flip:
      if (std::get<std::vector<int64_t>>(arg).size() != in.size()) shape_error(op, "needs one flag per axis");
      return in;
    default: return in;
  }
}
}  // namespace

std::string_view op_name(Op op) { return kOpNames[static_cast<int>(op)]; }
bool is_unary(Op op) { return op >= Op::Neg && op <= Op::Trunc; }
bool is_binary(Op op) { return op >= Op::Add && op <= Op::Shr; }
bool is_elementwise(Op op) { return op >= Op::Neg && op <= Op::Dot4; }
bool is_movement(Op op) { return op >= Op::Reshape && op <= Op::Flip; }
bool is_compute(Op op) { return is_elementwise(op) || op == Op::Reduce || op == Op::Contiguous || op == Op::Assign; }

int64_t numel(const Shape& s) {
  int64_t n = 1;
  // A product past int64 is a hostile or broken model, never a shape to compute with.
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) throw Error("shape " + shape_str(s) + " has more elements than int64 holds");
  return n;
}

std::string shape_str(const Shape& s) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? "," : "") << s[i];
  o << "]";
  return o.str();
}

bool Graph::Eq::operator()(const UOp* a, const UOp* b) const {
  return a->op == b->op && a->dtype == b->dtype && a->src == b->src && a->arg == b->arg;
}

const UOp* Graph::make(Op op, DType dtype, std::vector<const UOp*> src, Arg arg) {
  UOp probe{op, dtype, std::move(src), std::move(arg), {}};
  size_t h = mix(mix(size_t(op), size_t(dtype)), hash_arg(probe.arg));
  for (const UOp* s : probe.src) h = mix(h, s->hash);  // structural: stable across runs
  probe.hash = h;
  if (auto it = interned_.find(&probe); it != interned_.end()) return *it;
  probe.shape = infer_shape(*this, op, probe.src, probe.arg);
  set_bounds(probe);
  nodes_.push_back(std::move(probe));
  interned_.insert(&nodes_.back());
  return &nodes_.back();
}

const UOp* Graph::declare_var(const std::string& name, int64_t min, int64_t max) {
  const UOp* v = var(name, min, max);
  if (std::find(vars_.begin(), vars_.end(), v) != vars_.end()) return v;
  vars_.push_back(v);
  if (vars_buffer_ < 0) vars_buffer_ = add_buffer({"tgc.vars", DType::I64, {1}, BufferKind::Input, nullptr});
  buffer(vars_buffer_).shape = {int64_t(vars_.size())};
  return v;
}

const UOp* Graph::find_var(const std::string& name) const {
  for (const UOp* v : vars_)
    if (v->var().name == name) return v;
  return nullptr;
}

std::string Graph::fresh_var_name(const std::string& base) const {
  std::string name = base;
  for (int k = 2; find_var(name); ++k) name = base + "#" + std::to_string(k);
  return name;
}

int64_t Graph::var_slot(const UOp* var) const {
  auto it = std::find(vars_.begin(), vars_.end(), var);
  if (it == vars_.end()) throw Error("internal error: VAR " + var->var().name + " was not declared");
  return int64_t(it - vars_.begin());
}

int64_t Graph::add_buffer(BufferInfo info) {
  buffers_.push_back(std::move(info));
  return int64_t(buffers_.size()) - 1;
}

bool depends_on(const UOp* u, const UOp* r) {
  std::vector<const UOp*> work = {u};
  std::unordered_set<const UOp*> seen = {u};
  while (!work.empty()) {
    const UOp* x = work.back();
    work.pop_back();
    if (x == r) return true;
    for (const UOp* s : x->src)
      if (seen.insert(s).second) work.push_back(s);
  }
  return false;
}

std::vector<const UOp*> toposort(const std::vector<const UOp*>& roots) {
  std::vector<const UOp*> order;
  std::unordered_map<const UOp*, bool> done;  // false: on the stack, true: emitted
  std::vector<std::pair<const UOp*, size_t>> stack;
  for (const UOp* r : roots) {
    if (done.count(r)) continue;
    stack.push_back({r, 0});
    done[r] = false;
    while (!stack.empty()) {
      auto& [u, i] = stack.back();
      if (i < u->src.size()) {
        const UOp* s = u->src[i++];
        if (!done.count(s)) {
          done[s] = false;
          stack.push_back({s, 0});
        }
      } else {
        done[u] = true;
        order.push_back(u);
        stack.pop_back();
      }
    }
  }
  return order;
}

}  // namespace tgc
