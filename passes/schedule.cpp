#include "passes/schedule.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "ir/print.h"
#include "ir/symbolic.h"
#include "ir/tensor.h"
#include "passes/half_math.h"
#include "passes/serial_launches.h"

namespace tgc {

namespace {
constexpr double kMemCost = 4;     // one element written and read back, in op units
constexpr double kSlowOpCost = 8;  // transcendental ops
// GPUs: the elements one thread may read in reduces nested in one another (about a launch's cost).
constexpr double kGpuNestedReduceWork = 2048;
// GPUs: a reduce this short reads padding through masks (no pad kernel), whatever it runs over.
constexpr int64_t kGpuMaskedPadReduce = 32;

// Elements a reduce reads per output.
double reduce_length(const UOp* u) {
  return double(numel(u->src[0]->shape)) / double(std::max<int64_t>(1, numel(u->shape)));
}

// Collects the RANGE nodes an index or mask expression depends on.
void ranges_of(const UOp* u, std::set<const UOp*>& out, std::unordered_set<const UOp*>& seen) {
  if (!u || !seen.insert(u).second) return;
  if (u->op == Op::Range) out.insert(u);
  for (const UOp* s : u->src) ranges_of(s, out, seen);
}

// Builds one kernel's scalar expression by walking from its root through inlined nodes, mapping
// output indices to source indices through every movement op.
// Thrown while building a kernel when inlining `node` has become more expensive than realizing it.
struct RealizeNeeded {
  const UOp* node;
};

double inline_cost(const UOp* u, const std::unordered_map<const UOp*, int64_t>& realized,
                   std::unordered_map<const UOp*, double>& memo, bool once);
bool should_realize(const UOp* u, double evals, double cost_per_eval, double launch_cost);

class KernelBuilder {
 public:
  // `others`: evaluation counts of the kernels already built; this kernel's are added in evals().
  KernelBuilder(Graph& g, const std::unordered_map<const UOp*, int64_t>& realized,
                const std::unordered_map<const UOp*, double>& others, const ScheduleOptions& o)
      : g_(g),
        sym_{g},
        rw_(g, symbolic_rules()),
        realized_(realized),
        others_(others),
        parallel_(o.parallel_outputs),
        redundant_work_(o.redundant_work),
        serial_group_(o.serial_group) {}

  const std::unordered_map<const UOp*, double>& evals() const { return evals_; }

  Kernel build(const UOp* root, int64_t out_buf) {
    Kernel k;
    // An ASSIGN stores its value's elements into the state buffer, shifted by the offset along
    // its axis: the kernel's ranges are the value's.
    const bool assign = root->op == Op::Assign;
    const UOp* over = assign ? root->src[1] : root;
    std::vector<const UOp*> idx;
    for (int64_t d : over->shape) {
      if (d == 1) {
        idx.push_back(sym_.c(0));
      } else {
        idx.push_back(new_range(d, RangeKind::Global, g_.var_axis(over, int64_t(idx.size()))));
        k.global_ranges.push_back(idx.back());
      }
    }
    globals_ = k.global_ranges;
    const UOp* value = assign ? render(over, idx, nullptr) : render(root, idx, nullptr, /*is_root=*/true);
    std::vector<const UOp*> at = idx;
    if (assign) at[size_t(root->ival())] = sym_.add(at[size_t(root->ival())], root->src[2]);
    const UOp* out = g_.make(Op::Buffer, root->dtype, {}, out_buf);
    k.ast = promote_half_math(g_, g_.make(Op::Store, root->dtype, {out, rw_.rewrite(linear(root->shape, at)), value}));
    k.output = out_buf;
    k.inputs = inputs_;
    list_vars_buffer(g_, k);
    k.fused = fused_;
    k.num_reduces = num_reduces_;
    return k;
  }

 private:
  // A range over a run-time dim (laid out at its upper bound `size`) stops at its run-time
  // size, an expression over VARs whose upper bound is `size`.
  const UOp* new_range(int64_t size, RangeKind kind, const UOp* end = nullptr) {
    if (end && end->vmax != size)
      throw Error("schedule: a run-time size with upper bound " + std::to_string(end->vmax) + " on an axis of " +
                  std::to_string(size));
    return g_.make(Op::Range, DType::Index, {end ? end : sym_.c(size)}, RangeArg{next_range_++, kind});
  }

  const UOp* linear(const Shape& shape, const std::vector<const UOp*>& idx) {
    const UOp* lin = sym_.c(0);
    for (size_t i = 0; i < shape.size(); ++i) lin = sym_.add(sym_.mul(lin, shape[i]), idx[i]);
    return lin;
  }

  // Records how many times `u` runs at this index: once per value of the ranges it depends on
  // (the lowering hoists every expression out of the loops it does not depend on).
  // A reduce range's loop runs inside the scope of its reduce, so whatever depends on the range
  // also runs once per value of the ranges that the reduce itself depends on.
  std::set<const UOp*> position_deps(const std::vector<const UOp*>& idx, const UOp* gate) {
    std::set<const UOp*> deps;
    std::unordered_set<const UOp*> seen;
    for (const UOp* i : idx) ranges_of(i, deps, seen);
    ranges_of(gate, deps, seen);
    std::vector<const UOp*> work(deps.begin(), deps.end());
    while (!work.empty()) {
      const UOp* r = work.back();
      work.pop_back();
      if (auto it = range_context_.find(r); it != range_context_.end())
        for (const UOp* c : it->second)
          if (deps.insert(c).second) work.push_back(c);
    }
    return deps;
  }

  void count_evals(const UOp* u, const std::vector<const UOp*>& idx, const UOp* gate) {
    std::set<const UOp*> deps = position_deps(idx, gate);
    double n = 1;
    for (const UOp* r : deps) n *= double(range_extent(r));  // a VAR bound counts at its maximum
    double total = (evals_[u] += n);
    if (auto it = others_.find(u); it != others_.end()) total += it->second;
    // Decide as soon as the count crosses the line: inlining further would only multiply work.
    // An elementwise function of weights alone (dequantized GGUF block fields, int8 weights
    // cast to f32) stays inline: realizing it would hold a copy of the weights, usually expanded,
    // in the arena at run time; it is recomputed in each kernel that reads it instead.
    if (u->op != Op::Reduce && weight_only(u)) return;
    // Realized, an elementwise function of realized results is a launch of its own.
    double launch_cost = serial_group_ > 0 && !reads_a_reduce(u) ? kMemCost * redundant_work_ : 0;
    if (should_realize(u, total, inline_cost(u, realized_, cost_memo_, serial_group_ > 0), launch_cost))
      throw RealizeNeeded{u};
    if (parallel_ && u->op == Op::Reduce) {
      double threads = 1;
      for (const UOp* r : globals_) threads *= deps.count(r) ? 1 : double(range_extent(r));
      if (threads > 1 && joins_serial_launch(u)) throw RealizeNeeded{u};
      if ((threads - 1) * n * reduce_length(u) > redundant_work_) throw RealizeNeeded{u};
    }
  }

  // Whether `u` inlines a reduce that is not realized (realizing `u` would store it too).
  bool reads_a_reduce(const UOp* u) {
    if (auto it = reads_reduce_memo_.find(u); it != reads_reduce_memo_.end()) return it->second;
    bool r = false;
    if (u->op == Op::Reduce)
      r = true;
    else if (is_elementwise(u->op) || is_movement(u->op) || u->op == Op::Contiguous)
      for (const UOp* s : u->src) r = r || (!realized_.count(s) && reads_a_reduce(s));
    return reads_reduce_memo_[u] = r;
  }

  // Whether reduce `u`, realized, would be a serial stage computed from serial stages' results
  // (passes/serial_launches.h): small, and reading only weights and small realized results.
  bool joins_serial_launch(const UOp* u) {
    double n = double(numel(u->shape));
    if (!fits_serial_stage(numel(u->shape), n * reduce_length(u), serial_group_)) return false;
    std::unordered_set<const UOp*> seen;
    std::vector<const UOp*> work = {u->src[0]};
    while (!work.empty()) {
      const UOp* x = work.back();
      work.pop_back();
      if (!seen.insert(x).second) continue;
      bool small = fits_serial_stage(numel(x->shape), 0, serial_group_);
      if (realized_.count(x)) {
        if (!small) return false;
        continue;
      }
      if (x->op == Op::Buffer && g_.buffer(x->ival()).kind != BufferKind::Weight && !small) return false;
      if (x->op == Op::Reduce) return false;  // not yet realized: its own kernel decides
      work.insert(work.end(), x->src.begin(), x->src.end());
    }
    return true;
  }

  // Whether `u` reads weight buffers and nothing else (no input, realized intermediate, reduce
  // or run-time dim) through elementwise and movement ops.
  bool weight_only(const UOp* u) {
    if (auto it = weight_only_memo_.find(u); it != weight_only_memo_.end()) return it->second;
    bool w = false;
    if (u->op == Op::Buffer) {
      w = g_.buffer(u->ival()).kind == BufferKind::Weight;
    } else if (u->op == Op::Const) {
      w = true;
    } else if ((is_elementwise(u->op) || is_movement(u->op)) && !realized_.count(u)) {
      w = true;
      for (const UOp* s : u->src) w = w && weight_only(s);
    }
    return weight_only_memo_[u] = w;
  }

  const UOp* render(const UOp* u, std::vector<const UOp*> idx, const UOp* gate, bool is_root = false) {
    for (auto& i : idx) i = rw_.rewrite(i);
    if (gate) gate = rw_.rewrite(gate);
    if (gate && gate->is_const(0)) return g_.constant(0, u->dtype);  // never read
    if (gate && gate->is_const(1)) gate = nullptr;
    auto key = std::make_tuple(u, idx, gate);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    const UOp* r = render_uncached(u, idx, gate, is_root);
    memo_[key] = r;
    return r;
  }

  // Whether `mask` depends on every range of the reduce being rendered.
  bool window_is_whole_reduce(const UOp* mask) const {
    if (!reduce_ranges_) return false;
    std::unordered_set<const UOp*> in_mask;
    for (const UOp* x : toposort({mask})) in_mask.insert(x);
    return std::all_of(reduce_ranges_->begin(), reduce_ranges_->end(),
                       [&](const UOp* r) { return in_mask.count(r) > 0; });
  }

  // Whether the reduce being rendered reads at most `n` elements per output.
  bool reduce_at_most(int64_t n) const {
    if (!reduce_ranges_) return false;
    int64_t total = 1;
    for (const UOp* r : *reduce_ranges_) total *= range_extent(r);
    return total <= n;
  }

  static bool depends_on_reduce(const UOp* u) {
    for (const UOp* x : toposort({u}))
      if (x->op == Op::Range && x->range().kind == RangeKind::Reduce) return true;
    return false;
  }

  const UOp* load(int64_t buf, DType t, const Shape& shape, const std::vector<const UOp*>& idx, const UOp* gate) {
    if (std::find(inputs_.begin(), inputs_.end(), buf) == inputs_.end()) inputs_.push_back(buf);
    // A gated load's index only matters where the gate holds: its bounds drop the pad clamps.
    const UOp* index = rw_.rewrite(linear(shape, idx));
    if (gate) index = simplify_given(g_, index, gate);
    // An index in bounds everywhere needs no gate: the pad's WHERE already zeroes the value.
    if (gate && index->vmin >= 0 && index->vmax < numel(shape)) gate = nullptr;
    std::vector<const UOp*> src = {g_.make(Op::Buffer, t, {}, buf), index};
    if (gate) src.push_back(gate);
    return g_.make(Op::Load, t, src);
  }

  const UOp* render_uncached(const UOp* u, const std::vector<const UOp*>& idx, const UOp* gate, bool is_root) {
    if (const std::string* o = g_.origin(u); o && std::find(fused_.begin(), fused_.end(), *o) == fused_.end())
      if (!realized_.count(u) || is_root) fused_.push_back(*o);
    if (u->op == Op::Buffer) return load(u->ival(), u->dtype, u->shape, idx, gate);
    if (!is_root)
      if (auto it = realized_.find(u); it != realized_.end()) return load(it->second, u->dtype, u->shape, idx, gate);
    if (is_compute(u->op)) count_evals(u, idx, gate);
    if (is_elementwise(u->op)) {
      std::vector<const UOp*> src;
      for (const UOp* s : u->src) src.push_back(render(s, idx, gate));
      return g_.make(u->op, u->dtype, src, u->arg);
    }
    switch (u->op) {
      case Op::Const: return u;
      case Op::Var: return u;  // a run-time size in a value (a mean's count over a run-time dim)
      case Op::Contiguous: return render(u->src[0], idx, gate);
      case Op::Reduce: return render_reduce(u, idx, gate);
      case Op::Reshape: return render(u->src[0], reshape_index(u, idx), gate);
      case Op::Permute:
      case Op::Expand:
      case Op::Shrink:
      case Op::Flip: return render(u->src[0], moved_index(u, idx), gate);
      case Op::Pad: return render_pad(u, idx, gate, is_root);
      default: throw Error("schedule: cannot place " + std::string(op_name(u->op)) + " in a kernel");
    }
  }

  const UOp* render_reduce(const UOp* u, const std::vector<const UOp*>& idx, const UOp* gate) {
    if (const UOp* picked = one_hot_gather(u, idx, gate)) return picked;
    // A reduce inside another reduce's loop (conv feeding a pool) is stored first: fused,
    // its outputs would be produced one at a time in the outer reduce's serial order. On
    // GPUs a short one is not (a 2x2 pool feeding a global mean, a conv feeding a 2x2
    // pool): a thread's loops over both cost less than a launch.
    double length = reduce_length(u);
    bool short_nest = parallel_ && reduce_work_ * length <= kGpuNestedReduceWork;
    // An ordered sum of ordered sums (blocks of a sum, each summed from zero: Tensor::sum_in_order)
    // stays one kernel: each inner sum is used once, by the outer one, in the order it must have.
    bool ordered_nest = inside_ordered_ && u->reduce().ordered;
    for (const UOp* i : idx)
      if (depends_on_reduce(i) && !short_nest && !ordered_nest) throw RealizeNeeded{u};
    ++num_reduces_;
    std::vector<const UOp*> src = {nullptr};
    std::vector<const UOp*> sidx = idx;
    std::set<const UOp*> context = position_deps(idx, gate);
    for (int64_t a : u->reduce().axes) {
      sidx[size_t(a)] = new_range(u->src[0]->shape[size_t(a)], RangeKind::Reduce, g_.var_axis(u->src[0], a));
      src.push_back(sidx[size_t(a)]);
      range_context_[sidx[size_t(a)]] = context;
    }
    const std::vector<const UOp*>* outer = reduce_ranges_;
    std::vector<const UOp*> mine(src.begin() + 1, src.end());
    reduce_ranges_ = &mine;
    double outer_work = reduce_work_;
    bool outer_ordered = inside_ordered_;
    reduce_work_ *= length;
    inside_ordered_ = u->reduce().ordered;
    src[0] = render(u->src[0], sidx, gate);
    inside_ordered_ = outer_ordered;
    reduce_ranges_ = outer;
    reduce_work_ = outer_work;
    return g_.make(Op::KReduce, u->dtype, src, ReduceArg{u->reduce().op, {}, u->reduce().ordered});
  }

  // The source index of a reshape's output index `idx`.
  std::vector<const UOp*> reshape_index(const UOp* u, const std::vector<const UOp*>& idx) {
    const Shape& in = u->src[0]->shape;
    const Shape& out = u->shape;
    std::vector<const UOp*> sidx(in.size());
    // Adding or dropping size-1 dims maps indices one to one: no linearize-and-split, which
    // keeps padded (possibly negative) indices free of // and %.
    std::vector<size_t> in_dims, out_dims;
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] != 1) in_dims.push_back(i);
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i] != 1) out_dims.push_back(i);
    bool squeeze_only = in_dims.size() == out_dims.size();
    for (size_t i = 0; squeeze_only && i < in_dims.size(); ++i) squeeze_only = in[in_dims[i]] == out[out_dims[i]];
    if (squeeze_only) {
      for (auto& x : sidx) x = sym_.c(0);
      for (size_t i = 0; i < in_dims.size(); ++i) sidx[in_dims[i]] = idx[out_dims[i]];
      return sidx;
    }
    const UOp* lin = linear(out, idx);
    int64_t stride = 1;
    for (size_t j = in.size(); j-- > 0;) {
      sidx[j] = in[j] == 1 ? sym_.c(0) : sym_.mod(sym_.idiv(lin, stride), in[j]);
      stride *= in[j];
    }
    return sidx;
  }

  // The source index of a permute's, an expand's, a shrink's or a flip's output index `idx`.
  std::vector<const UOp*> moved_index(const UOp* u, const std::vector<const UOp*>& idx) {
    const Shape& out = u->shape;
    std::vector<const UOp*> sidx(u->src[0]->shape.size());
    if (u->op == Op::Permute) {
      const auto& p = u->ints();
      for (size_t i = 0; i < p.size(); ++i) sidx[size_t(p[i])] = idx[i];
    } else if (u->op == Op::Expand) {
      const Shape& in = u->src[0]->shape;
      for (size_t i = 0; i < in.size(); ++i) sidx[i] = in[i] == 1 ? sym_.c(0) : idx[i];
    } else if (u->op == Op::Shrink) {
      const auto& p = u->ints();
      for (size_t i = 0; i < out.size(); ++i) {
        const UOp* start = g_.var_offset(u, int64_t(i));
        sidx[i] = start ? sym_.add(idx[i], start) : sym_.add(idx[i], p[2 * i]);
      }
    } else {
      const auto& f = u->ints();
      for (size_t i = 0; i < out.size(); ++i) sidx[i] = f[i] ? sym_.add(sym_.mul(idx[i], -1), out[i] - 1) : idx[i];
    }
    return sidx;
  }

  // A pad reads its source at `index` where `valid` holds (null: everywhere).
  struct PadRead {
    std::vector<const UOp*> index;
    const UOp* valid;
  };

  PadRead pad_read(const UOp* u, const std::vector<const UOp*>& idx) {
    const auto& p = u->ints();
    const Shape& in = u->src[0]->shape;
    std::vector<const UOp*> sidx(in.size());
    const UOp* valid = nullptr;
    for (size_t i = 0; i < in.size(); ++i) {
      const UOp* before = g_.var_offset(u, int64_t(i));
      sidx[i] = before ? sym_.add(idx[i], sym_.mul(before, -1)) : sym_.add(idx[i], -p[2 * i]);
      if (p[2 * i] > 0) valid = sym_.and_(valid, sym_.ge(sidx[i], 0));
      // Over a run-time dim the data ends at its run-time size, not at the layout's.
      const UOp* end = g_.var_axis(u->src[0], int64_t(i));
      if (p[2 * i + 1] > 0) valid = sym_.and_(valid, end ? sym_.lt(sidx[i], end) : sym_.lt(sidx[i], in[i]));
    }
    // Under the mask the source index stays in [0, in): clamping it says so to the
    // simplifier, which can then cancel the divisions and modulos of reshapes below.
    for (size_t i = 0; i < in.size(); ++i) {
      const UOp* x = rw_.rewrite(sidx[i]);
      if (x->vmin < 0) x = g_.make(Op::Max, DType::Index, {x, sym_.c(0)});
      if (x->vmax > in[i] - 1)
        x = g_.make(Op::Neg, DType::Index,
                    {g_.make(Op::Max, DType::Index, {g_.make(Op::Neg, DType::Index, {x}), sym_.c(1 - in[i])})});
      sidx[i] = x;
    }
    return {std::move(sidx), valid};
  }

  const UOp* render_pad(const UOp* u, const std::vector<const UOp*>& idx, const UOp* gate, bool is_root) {
    auto [sidx, valid] = pad_read(u, idx);
    if (!valid) return render(u->src[0], sidx, gate);
    valid = rw_.rewrite(valid);
    // Padding read inside a reduce (a conv's window) is stored once instead: the reduce
    // then reads without masks, so its loads stay contiguous and vectorize.
    // On GPUs a window that is the whole reduce (a depthwise conv, a pool) reads the padding
    // through its masks: a kernel more would cost a launch and a round trip through memory.
    // Where the reduce also runs over channels the masks would gate every channel's loads:
    // H200 cuda, all pads inline: det 0.77 -> 0.85 ms; window-only: det 0.73, cls 0.19 -> 0.17.
    // A short reduce (a first conv over 3 channels: 27 products) reads through masks too.
    // Padding of weights alone (GGUF bit planes concatenated) stays inline, as their
    // elementwise functions do: stored, it would be a dequantized copy of the weights.
    if (depends_on_reduce(valid) && !is_root &&
        !(parallel_ && (window_is_whole_reduce(valid) || reduce_at_most(kGpuMaskedPadReduce))) && !weight_only(u))
      throw RealizeNeeded{u};
    const UOp* v = render(u->src[0], sidx, sym_.and_(gate, valid));
    if (valid->is_const(1)) return v;
    return g_.make(Op::Where, u->dtype, {valid, v, g_.constant(0, u->dtype)});
  }

  // Whether `u`, reached through movement ops, is the constant v everywhere.
  static bool is_constant(const UOp* u, double v) {
    while (u->op == Op::Expand || u->op == Op::Reshape) u = u->src[0];
    return u->is_const(v);
  }

  // Whether buffer b is a weight holding 0, 1, ..., n-1 (Tensor::arange).
  bool is_iota(int64_t b) {
    if (auto it = iota_memo_.find(b); it != iota_memo_.end()) return it->second;
    const BufferInfo& info = g_.buffer(b);
    bool ok = info.kind == BufferKind::Weight && info.data && info.shape.size() == 1 &&
              (info.dtype == DType::I64 || info.dtype == DType::I32);
    for (int64_t i = 0; ok && i < info.shape[0]; ++i) {
      int64_t v = 0;
      if (info.dtype == DType::I64)
        std::memcpy(&v, info.data->data() + i * 8, 8);
      else {
        int32_t w;
        std::memcpy(&w, info.data->data() + i * 4, 4);
        v = w;
      }
      ok = v == i;
    }
    return iota_memo_[b] = ok;
  }

  // A gather written as a one-hot reduce, sum_a where(index == a, x[.., a, ..], 0) (Tensor::gather
  // and its kin), becomes a load of x at the index: one row read instead of the whole table
  // (the one-hot over a vocabulary was half of an LLM's decode step). Out-of-range indices read
  // nothing and give 0, as the one-hot did. Null when `u` is not that pattern.
  const UOp* one_hot_gather(const UOp* u, const std::vector<const UOp*>& idx, const UOp* gate) {
    if (u->reduce().op != Op::Add || u->reduce().axes.size() != 1) return nullptr;
    int64_t a = u->reduce().axes[0];
    const UOp* s = u->src[0];
    if (s->op != Op::Where || !is_constant(s->src[2], 0) || g_.var_axis(s, a)) return nullptr;
    const UOp* eq = s->src[0];
    while (eq->op == Op::Expand || eq->op == Op::Reshape) eq = eq->src[0];
    if (eq->op != Op::Xor || !is_constant(eq->src[1], 1) || eq->src[0]->op != Op::CmpNe) return nullptr;
    // The condition at a range of its own along the axis (not a loop inside the reduce, so its
    // work is counted once per position of the one-hot, which it is where the pattern holds).
    int64_t n = s->shape[size_t(a)];
    std::vector<const UOp*> sidx = idx;
    const UOp* r = new_range(n, RangeKind::Reduce);
    sidx[size_t(a)] = r;
    size_t known = inputs_.size();
    const UOp* c = render(s->src[0], sidx, gate);
    if (c->op != Op::Xor || !c->src[1]->is_const(1) || c->src[0]->op != Op::CmpNe) return nullptr;
    for (int side = 0; side < 2; ++side) {
      // One operand is the positions 0..n-1 along the axis (arange's load at the range), the
      // other the index, the same all along the axis.
      const UOp* p = c->src[0]->src[size_t(side)];
      const UOp* at = c->src[0]->src[size_t(1 - side)];
      if (p->op != Op::Load || p->src.size() != 2 || p->src[1] != r || !is_iota(p->src[0]->ival())) continue;
      std::set<const UOp*> deps;
      std::unordered_set<const UOp*> seen;
      ranges_of(at, deps, seen);
      if (deps.count(r) || at->dtype == DType::Bool || is_float(at->dtype)) return nullptr;
      // Only the index is read: not the positions, nor the one-hot.
      std::vector<int64_t> used;
      for (const UOp* x : toposort({at}))
        if (x->op == Op::Load && std::find(used.begin(), used.end(), x->src[0]->ival()) == used.end())
          used.push_back(x->src[0]->ival());
      std::vector<int64_t> keep(inputs_.begin(), inputs_.begin() + long(known));
      for (int64_t b : used)
        if (std::find(keep.begin(), keep.end(), b) == keep.end()) keep.push_back(b);
      inputs_ = keep;
      const UOp* i = g_.make(Op::Cast, DType::Index, {at});
      const UOp* valid = rw_.rewrite(sym_.and_(sym_.ge(i, 0), sym_.lt(i, n)));
      // Clamped as pads clamp: exact where valid, and bounds the simplifier can use.
      const UOp* clamped = g_.make(Op::Max, DType::Index, {i, sym_.c(0)});
      clamped = g_.make(Op::Neg, DType::Index,
                        {g_.make(Op::Max, DType::Index, {g_.make(Op::Neg, DType::Index, {clamped}), sym_.c(1 - n)})});
      sidx[size_t(a)] = clamped;
      const UOp* v = render(s->src[1], sidx, sym_.and_(gate, valid));
      return g_.make(Op::Where, u->dtype, {valid, v, g_.constant(0, u->dtype)});
    }
    return nullptr;
  }

  Graph& g_;
  Sym sym_;
  Rewriter rw_;
  std::unordered_map<int64_t, bool> iota_memo_;
  const std::unordered_map<const UOp*, int64_t>& realized_;
  const std::unordered_map<const UOp*, double>& others_;
  std::unordered_map<const UOp*, double> evals_, cost_memo_;
  std::unordered_map<const UOp*, bool> weight_only_memo_, reads_reduce_memo_;
  std::map<std::tuple<const UOp*, std::vector<const UOp*>, const UOp*>, const UOp*> memo_;
  std::vector<int64_t> inputs_;
  std::unordered_map<const UOp*, std::set<const UOp*>> range_context_;  // reduce range -> ranges of its reduce
  std::vector<std::string> fused_;
  int64_t next_range_ = 0;
  int num_reduces_ = 0;
  const std::vector<const UOp*>* reduce_ranges_ = nullptr;  // of the reduce being rendered
  double reduce_work_ = 1;       // elements per output of the reduces being rendered, nested ones multiplied
  bool inside_ordered_ = false;  // rendering an ordered sum's body
  bool parallel_;
  double redundant_work_;
  int64_t serial_group_;
  std::vector<const UOp*> globals_;  // the kernel's output ranges
};

// Work per element of `u` when inlined: its own op plus the inlined elementwise work of its
// sources. Reduces and realized buffers count as a load: reduces are decided separately.
// `once`: a value that several of its sources share counts once, as a kernel computes it.
double inline_cost(const UOp* u, const std::unordered_map<const UOp*, int64_t>& realized,
                   std::unordered_map<const UOp*, double>& memo, bool once) {
  if (auto it = memo.find(u); it != memo.end()) return it->second;
  auto own = [](const UOp* x) {
    if (x->op == Op::Exp2 || x->op == Op::Log2 || x->op == Op::Sin || x->op == Op::Sqrt || x->op == Op::Recip)
      return kSlowOpCost;
    return is_elementwise(x->op) ? 1.0 : 0.0;
  };
  auto inlined = [](const UOp* x) { return is_elementwise(x->op) || is_movement(x->op) || x->op == Op::Contiguous; };
  double c = 0;
  if (u->op == Op::Buffer || u->op == Op::Reduce) {
    c = kMemCost;
  } else if (once && inlined(u)) {
    std::unordered_set<const UOp*> seen = {u};
    std::vector<const UOp*> work = {u};
    while (!work.empty()) {
      const UOp* x = work.back();
      work.pop_back();
      c += own(x);
      for (const UOp* s : x->src) {
        if (!seen.insert(s).second) continue;
        if (realized.count(s) || s->op == Op::Buffer || s->op == Op::Reduce)
          c += kMemCost;
        else if (inlined(s))
          work.push_back(s);
      }
    }
  } else if (inlined(u)) {
    for (const UOp* s : u->src) c += realized.count(s) ? kMemCost : inline_cost(s, realized, memo, once);
    c += own(u);
  }
  return memo[u] = c;
}

// The one cost function: realize `u` when computing it once and reading it back is cheaper than
// recomputing it at every place and index where consumers use it, by more than the launch that
// realizing adds (`launch_cost`, in the same op units). A reduce always loses when it is
// recomputed, since its work per element is at least its reduction size.
bool should_realize(const UOp* u, double evals, double cost_per_eval, double launch_cost) {
  double n = double(numel(u->shape));
  if (evals <= n) return false;
  if (u->op == Op::Reduce) return true;
  double inline_total = evals * cost_per_eval;
  double realize_total = n * (cost_per_eval + kMemCost) + evals * kMemCost + launch_cost;
  return realize_total < inline_total;
}

// Where to store a reduce that must be realized: after the elementwise epilogue that follows it
// one-to-one (bias, activation), so that e.g. conv + bias + relu stays one kernel.
const UOp* realize_point(const UOp* u, const std::unordered_map<const UOp*, std::vector<const UOp*>>& consumers,
                         const std::unordered_map<const UOp*, int64_t>& realized) {
  const UOp* best = u;  // the last elementwise node of the chain (reshapes alone are not worth it)
  for (;;) {
    auto it = consumers.find(u);
    if (it == consumers.end() || it->second.size() != 1) return best;
    const UOp* c = it->second[0];
    bool one_to_one = is_elementwise(c->op) || c->op == Op::Reshape || c->op == Op::Permute;
    if (!one_to_one || numel(c->shape) != numel(u->shape) || realized.count(c)) return best;
    u = c;
    if (is_elementwise(c->op)) best = c;
  }
}
}  // namespace

Schedule schedule(Graph& g, const std::vector<const UOp*>& requested, const ScheduleOptions& o) {
  // Every requested output gets a buffer of its own, even where two are the same node (the
  // model lists one tensor twice, or hash-consing merged two equal results): a repeat becomes a
  // CONTIGUOUS copy of the previous one, a node of its own and so a copy kernel.
  std::vector<const UOp*> outputs;
  std::unordered_map<const UOp*, const UOp*> latest;  // requested node -> its newest copy
  for (const UOp* o : requested) {
    auto it = latest.find(o);
    const UOp* r = it == latest.end() ? o : Tensor(g, it->second).contiguous().uop();
    latest[o] = r;
    outputs.push_back(r);
  }
  std::vector<const UOp*> order = toposort(outputs);
  std::unordered_map<const UOp*, size_t> position;
  std::unordered_map<const UOp*, std::vector<const UOp*>> consumers;
  for (size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = i;
    for (const UOp* s : order[i]->src) consumers[s].push_back(order[i]);
  }

  std::unordered_map<const UOp*, int64_t> realized;  // node -> buffer it is stored in
  std::unordered_map<const UOp*, int64_t> made;      // node -> its buffer, once it has one
  auto realize = [&](const UOp* u, BufferKind kind, const std::string& name) {
    if (realized.count(u)) return;
    auto it = made.find(u);
    realized[u] = it != made.end() ? it->second : made[u] = g.add_buffer({name, u->dtype, u->shape, kind, nullptr});
  };
  for (size_t i = 0; i < outputs.size(); ++i) realize(outputs[i], BufferKind::Output, "out" + std::to_string(i));
  for (const UOp* u : order)
    if (u->op == Op::Contiguous) realize(u, BufferKind::Intermediate, "t" + std::to_string(position[u]));
  // An ASSIGN is stored into its state buffer, which its consumers then read. Nothing may read
  // the state buffer around it: the kernels' order follows the graph's, not the buffer's.
  std::set<int64_t> assigned;
  for (const UOp* u : order)
    if (u->op == Op::Assign) {
      int64_t target = u->src[0]->ival();
      check(!realized.count(u), "schedule: an ASSIGN is an output of its own; request its consumers instead");
      check(assigned.insert(target).second, "schedule: state buffer '" + g.buffer(target).name + "' is assigned twice");
      check(consumers[u->src[0]].size() == 1,
            "schedule: state buffer '" + g.buffer(target).name + "' is read around its ASSIGN");
      realized[u] = target;
    }
  const std::unordered_map<const UOp*, int64_t> required = realized;

  // Build kernels consumers first. A builder stops as soon as inlining some node costs more than
  // realizing it; that node becomes a kernel of its own and every kernel that inlined it is
  // rebuilt. The realized set only grows, so this terminates.
  auto later_first = [&](const UOp* a, const UOp* b) { return position[a] > position[b]; };
  std::map<const UOp*, std::pair<Kernel, std::unordered_map<const UOp*, double>>> done;
  auto build_all = [&] {
    done.clear();
    std::set<const UOp*, decltype(later_first)> todo(later_first);
    for (auto& [root, _] : realized) todo.insert(root);
    std::unordered_map<const UOp*, double> total;  // evaluation counts over all built kernels
    auto forget = [&](const UOp* root) {
      auto it = done.find(root);
      if (it == done.end()) return;
      for (auto& [u, n] : it->second.second) total[u] -= n;
      done.erase(it);
    };
    while (!todo.empty()) {
      const UOp* root = *todo.begin();
      todo.erase(todo.begin());
      forget(root);
      KernelBuilder kb(g, realized, total, o);
      try {
        Kernel k = kb.build(root, realized.at(root));
        for (auto& [u, n] : kb.evals()) total[u] += n;
        done[root] = {std::move(k), kb.evals()};
      } catch (const RealizeNeeded& r) {
        const UOp* pick = realize_point(r.node, consumers, realized);
        realize(pick, BufferKind::Intermediate, "t" + std::to_string(position[pick]));
        todo.insert(pick);
        todo.insert(root);
        std::vector<const UOp*> stale;
        for (auto& [k, entry] : done)
          if (entry.second.count(r.node) || entry.second.count(pick)) stale.push_back(k);
        for (const UOp* k : stale) forget(k), todo.insert(k);
      }
    }
  };
  build_all();
  // Where realizing costs a launch (serial targets), an elementwise kernel was decided before
  // the reduces it read were (consumers come first), when realizing it still seemed to fold them
  // in (a squeeze-excite block's scaling, decided before its FC layers were realized on their
  // own). Built again from every reduce kernel, each is decided with its sources known.
  if (o.serial_group > 0) {
    std::unordered_map<const UOp*, int64_t> kept = required;
    for (auto& [root, entry] : done)
      if (entry.first.num_reduces > 0) kept.insert({root, realized.at(root)});
    if (kept.size() < realized.size()) {
      realized = kept;
      build_all();
    }
  }
  std::vector<std::pair<const UOp*, Kernel>> built;
  for (auto& [root, entry] : done) built.push_back({root, std::move(entry.first)});

  std::sort(built.begin(), built.end(), [&](auto& a, auto& b) { return position[a.first] < position[b.first]; });
  Schedule s;
  for (auto& [root, k] : built) {
    k.name = "k" + std::to_string(s.kernels.size());
    k.node = root;
    s.kernels.push_back(std::move(k));
  }
  for (const UOp* o : outputs) s.outputs.push_back(realized.at(o));
  return s;
}

void list_vars_buffer(const Graph& g, Kernel& k) {
  k.inputs.erase(std::remove(k.inputs.begin(), k.inputs.end(), g.vars_buffer()), k.inputs.end());
  std::vector<const UOp*> roots = {k.ast};  // (a loop's end may be a VAR that no index reads)
  roots.insert(roots.end(), k.global_ranges.begin(), k.global_ranges.end());
  roots.insert(roots.end(), k.local_ranges.begin(), k.local_ranges.end());
  std::vector<const UOp*> nodes = toposort(roots);
  if (std::any_of(nodes.begin(), nodes.end(), [](const UOp* u) { return u->op == Op::Var; }))
    k.inputs.push_back(g.vars_buffer());
}

int64_t next_range_id(const Kernel& k) {
  int64_t id = 0;
  for (const UOp* u : toposort({k.ast}))
    if (u->op == Op::Range) id = std::max(id, u->range().id + 1);
  for (const UOp* r : k.global_ranges) id = std::max(id, r->range().id + 1);
  return id;
}

void replace_input(Kernel& k, int64_t from, int64_t to) {
  std::vector<const UOp*> nodes = toposort({k.ast});
  bool still = std::any_of(nodes.begin(), nodes.end(),
                           [&](const UOp* u) { return u->op == Op::Load && u->src[0]->ival() == from; });
  auto at = std::find(k.inputs.begin(), k.inputs.end(), from);
  if (still || at == k.inputs.end())
    k.inputs.push_back(to);
  else
    *at = to;
}

void renumber_kernels(Schedule& s) {
  for (size_t i = 0; i < s.kernels.size(); ++i) s.kernels[i].name = "k" + std::to_string(i);
}

std::string describe(const Graph& g, const Schedule& s) {
  std::ostringstream o;
  for (const Kernel& k : s.kernels) {
    const BufferInfo& out = g.buffer(k.output);
    o << k.name << ": " << out.name << " " << dtype_name(out.dtype) << shape_str(out.shape) << "  global=[";
    // A range over a run-time dim ends at its run-time size: shown as "seq<=64" or "((W+1)/2)<=160".
    for (size_t i = 0; i < k.global_ranges.size(); ++i) {
      const UOp* end = k.global_ranges[i]->src[0];
      o << (i ? "," : "");
      if (end->op == Op::Var)
        o << end->var().name << "<=" << end->var().max;
      else if (!end->is_const())
        o << print_expr(g, end) << "<=" << end->vmax;
      else
        o << end->ival();
    }
    o << "] reduces=" << k.num_reduces << "\n  fuses:";
    for (const std::string& f : k.fused) o << " " << f << ";";
    o << "\n  reads:";
    for (int64_t b : k.inputs) o << " " << g.buffer(b).name;
    o << "\n  " << print_expr(g, k.ast) << "\n";
  }
  return o.str();
}

}  // namespace tgc
