#include "passes/opt.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "passes/channel_tile.h"
#include "passes/channel_vectors.h"
#include "passes/deinterleave.h"
#include "passes/fold_weights.h"
#include "passes/merge_axes.h"
#include "passes/output_phases.h"
#include "passes/pack.h"
#include "passes/tensor_cores.h"

namespace tgc {

namespace {
constexpr const char* kNames[] = {"UPCAST", "UNROLL", "LOCAL", "GROUP", "GROUPTOP", "PADTO", "LANES", "SWAP", "TC"};

// A range's size in the layout: a run-time dim's upper bound where its loop ends at a VAR.
int64_t size_of(const UOp* r) { return range_extent(r); }

// Replaces `from` by `to` everywhere below `root`, except in a KREDUCE's list of ranges, where
// `from` becomes `in_reduce` (the split's outer and inner ranges).
const UOp* split_substitute(Graph& g, const UOp* root, const UOp* from, const UOp* to,
                            const std::vector<const UOp*>& in_reduce) {
  std::unordered_map<const UOp*, const UOp*> memo;
  std::function<const UOp*(const UOp*)> rec = [&](const UOp* u) -> const UOp* {
    if (u == from) return to;
    if (auto it = memo.find(u); it != memo.end()) return it->second;
    std::vector<const UOp*> src;
    for (size_t i = 0; i < u->src.size(); ++i) {
      if (u->op == Op::KReduce && i > 0 && u->src[i] == from) {
        src.insert(src.end(), in_reduce.begin(), in_reduce.end());
        continue;
      }
      src.push_back(rec(u->src[i]));
    }
    return memo[u] = with_src(g, u, std::move(src));
  };
  return rec(root);
}

// r -> outer * amount + inner, or with `top`, inner * (size / amount) + outer. The outer part
// keeps r's kind and its place among the axes (even at size 1, so axis numbers stay stable along
// a list of actions); the inner part is `kind`. `until`: a run-time size E that r, padded and
// masked past E, covers (not with `top`).
Kernel split_axis(Graph& g, const Kernel& k, const UOp* r, int64_t amount, RangeKind kind, bool top = false,
                  const UOp* until = nullptr) {
  int64_t id = next_range_id(k), rest = size_of(r) / amount;
  Sym s{g};
  // Over a run-time size E the outer loop runs to ceil(E / amount): up to amount - 1 positions
  // past E, inside the layout (amount divides its size), are computed and never read (or, masked,
  // add nothing).
  const UOp* size = until ? until : r->src[0];
  const UOp* end = size->is_const() ? g.cint(rest) : simplify(g, s.idiv(s.add(size, amount - 1), amount));
  const UOp* outer = g.make(Op::Range, DType::Index, {end}, RangeArg{id, r->range().kind});
  const UOp* inner = g.range(amount, id + 1, kind);
  const UOp* value = top ? s.add(s.mul(inner, rest), outer) : s.add(s.mul(outer, amount), inner);
  Kernel out = k;
  out.ast = simplify(g, split_substitute(g, k.ast, r, value, {outer, inner}));
  for (auto& gr : out.global_ranges)
    if (gr == r) gr = outer;
  if (kind == RangeKind::Local || kind == RangeKind::Group) out.local_ranges.push_back(inner);
  return out;
}

}  // namespace

// r (size n) -> a range rounded up to a multiple of `amount`. Past n, the store is skipped, loads
// whose index could leave their buffer read nothing, and reduces over r add their identity. A
// range that ends at a run-time size E becomes one over its bound, masked past E the same way
// (every load that depends on it: what lies past E is no data of this run).
Kernel pad_axis(Graph& g, const Kernel& k, const UOp* r, int64_t amount) {
  int64_t n = size_of(r);
  const UOp* padded = g.range((n + amount - 1) / amount * amount, next_range_id(k), r->range().kind);
  Sym s{g};
  bool run_time = !r->src[0]->is_const();
  const UOp* inside = run_time ? s.lt(padded, r->src[0]) : s.lt(padded, n);
  const UOp* root = substitute(g, k.ast, {{r, padded}});
  std::unordered_map<const UOp*, const UOp*> done;
  for (const UOp* u : toposort({root})) {
    std::vector<const UOp*> src;
    for (const UOp* x : u->src) src.push_back(done.at(x));
    if (u->op == Op::Load && depends_on(src[1], padded)) {
      const UOp* idx = src[1];
      if (run_time || idx->vmin < 0 || idx->vmax >= numel(g.buffer(src[0]->ival()).shape))
        src = {src[0], idx, s.and_(src.size() > 2 ? src[2] : nullptr, inside)};
    } else if (u->op == Op::KReduce && std::count(src.begin() + 1, src.end(), padded)) {
      Op op = u->reduce().op;
      const UOp* identity = g.constant(op == Op::Add ? 0 : op == Op::Mul ? 1 : lowest_value(u->dtype), u->dtype);
      src[0] = g.make(Op::Where, u->dtype, {inside, src[0], identity});
    } else if (u == root && std::count(k.global_ranges.begin(), k.global_ranges.end(), r)) {
      src = {src[0], src[1], src[2], s.and_(src.size() > 3 ? src[3] : nullptr, inside)};
    }
    done[u] = with_src(g, u, std::move(src));
  }
  Kernel out = k;
  out.ast = simplify(g, done.at(root));
  for (auto& gr : out.global_ranges)
    if (gr == r) gr = padded;
  return out;
}

namespace {

// KREDUCE(v, ranges..., inner) -> KREDUCE(KREDUCE(v, ranges...), inner): each copy of `inner`
// accumulates on its own over the other ranges, and the copies are combined after that loop.
const UOp* nest_reduces(Graph& g, const UOp* root, const UOp* inner) {
  std::unordered_map<const UOp*, const UOp*> done;
  for (const UOp* u : toposort({root})) {
    std::vector<const UOp*> src;
    for (const UOp* s : u->src) src.push_back(done.at(s));
    if (u->op == Op::KReduce && std::count(src.begin() + 1, src.end(), inner)) {
      std::vector<const UOp*> rest = {src[0]};
      for (size_t i = 1; i < src.size(); ++i)
        if (src[i] != inner) rest.push_back(src[i]);
      done[u] = g.make(Op::KReduce, u->dtype, {g.make(Op::KReduce, u->dtype, rest, u->arg), inner}, u->arg);
      continue;
    }
    done[u] = with_src(g, u, std::move(src));
  }
  return done.at(root);
}

// The copies of the largest expanded body: the store's (its UPCAST ranges), or a reduce's (the
// UPCAST ranges of its value and its own). Reduces over ranges of their own expand side by side.
int64_t expansion(const Kernel& k) {
  auto copies = [](const std::vector<const UOp*>& roots) {
    int64_t n = 1;
    for (const UOp* u : toposort(roots))
      if (u->op == Op::Range && u->range().kind == RangeKind::Upcast) n *= size_of(u);
    return n;
  };
  int64_t n = copies({k.ast->src[1]});
  for (const UOp* u : toposort({k.ast}))
    if (u->op == Op::KReduce) n = std::max(n, copies(u->src));
  return n;
}

// The change of `idx` when `r` grows by one (0 when it does not depend on r at all).
std::optional<int64_t> stride(Graph& g, const UOp* idx, const UOp* r) {
  if (!depends_on(idx, r)) return 0;
  return stride_along(g, idx, r);
}

// The largest of `candidates` (descending) that divides n, or 0.
int64_t pick_divisor(int64_t n, const std::vector<int64_t>& candidates, int64_t limit) {
  for (int64_t c : candidates)
    if (c > 1 && c <= limit && n % c == 0) return c;
  return 0;
}
}  // namespace

// Loads inside reduces: where register tiles pay off.
std::vector<const UOp*> reduce_loads(const Kernel& k) {
  std::vector<const UOp*> loads;
  std::unordered_set<const UOp*> in_reduce;
  for (const UOp* u : toposort({k.ast})) {
    if (u->op == Op::KReduce) in_reduce.insert(u);
  }
  std::unordered_set<const UOp*> seen;
  for (const UOp* red : in_reduce)
    for (const UOp* u : toposort({red->src[0]}))
      if (u->op == Op::Load && seen.insert(u).second) loads.push_back(u);
  return loads;
}

std::string opt_str(const Opt& o) {
  return std::string(kNames[int(o.op)]) + "(" + std::to_string(o.axis) + "," + std::to_string(o.amount) + ")";
}

std::string opts_str(const std::vector<Opt>& os) {
  std::string s;
  for (const Opt& o : os) s += (s.empty() ? "" : " ") + opt_str(o);
  return s;
}

std::vector<Opt> parse_opts(const std::string& text) {
  std::vector<Opt> out;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    size_t open = tok.find('('), comma = tok.find(','), close = tok.find(')');
    check(open != std::string::npos && comma > open && close == tok.size() - 1, "malformed opt '" + tok + "'");
    auto name = tok.substr(0, open);
    auto it = std::find(std::begin(kNames), std::end(kNames), name);
    check(it != std::end(kNames), "unknown opt '" + name + "'");
    out.push_back({OptOp(it - std::begin(kNames)), std::stoi(tok.substr(open + 1, comma - open - 1)),
                   std::stoll(tok.substr(comma + 1, close - comma - 1))});
  }
  return out;
}

std::vector<const UOp*> kernel_axes(const Kernel& k) {
  std::vector<const UOp*> axes = k.global_ranges;
  for (const UOp* u : toposort({k.ast}))
    if (u->op == Op::KReduce)
      for (size_t i = 1; i < u->src.size(); ++i)
        if (u->src[i]->range().kind == RangeKind::Reduce &&
            std::find(axes.begin(), axes.end(), u->src[i]) == axes.end())
          axes.push_back(u->src[i]);
  return axes;
}

// Whether range r is one of an ordered sum's (ReduceArg::ordered): its order is the result's.
static bool orders_a_sum(const Kernel& k, const UOp* r) {
  for (const UOp* u : toposort({k.ast}))
    if (u->op == Op::KReduce && u->reduce().ordered && std::find(u->src.begin() + 1, u->src.end(), r) != u->src.end())
      return true;
  return false;
}

Kernel apply_opts(Graph& g, const Kernel& k, const std::vector<Opt>& opts, const TargetProfile& t) {
  Kernel cur = k;
  for (const Opt& o : opts) {
    auto fail = [&](const std::string& why) { throw Error("kernel " + k.name + ": " + opt_str(o) + ": " + why); };
    std::vector<const UOp*> axes = kernel_axes(cur);
    if (o.axis < 0 || size_t(o.axis) >= axes.size()) fail("no axis " + std::to_string(o.axis));
    const UOp* r = axes[size_t(o.axis)];
    bool global = size_t(o.axis) < cur.global_ranges.size();
    // A loop that ends at a run-time size may be split along an output axis (positions past the
    // size go to memory nothing reads) of a kernel that writes its own buffer, or, a reduce's, over
    // a work-group (GROUP: at its bound, the positions past the size masked).
    bool masked_group = !global && o.op == OptOp::Group;
    if (!r->src[0]->is_const() && !masked_group) {
      if (!global || o.op == OptOp::Padto)
        fail("the axis is a run-time dim (its loop ends at a VAR) and not an output axis");
      BufferKind kind = g.buffer(cur.output).kind;
      if (kind != BufferKind::Intermediate && kind != BufferKind::Output)
        fail("the axis is a run-time dim of a buffer the kernel updates");
    }
    if ((o.op == OptOp::Lanes || o.op == OptOp::Group || o.op == OptOp::GroupTop || o.op == OptOp::Tc) &&
        (o.op == OptOp::Tc ? std::any_of(axes.begin(), axes.end(), [&](const UOp* a) { return orders_a_sum(cur, a); })
                           : orders_a_sum(cur, r)))
      fail("would regroup an ordered sum");
    if (o.op == OptOp::Tc) {
      std::string why;
      if (!has_tensor_cores(t)) fail("the target has no tensor cores (CUDA sm_70 or later)");
      if (opts.size() != 1) fail("TC is the kernel's only action");
      if (o.amount != 0 && o.amount != 1) fail("TC(0,0) runs on tensor cores, TC(0,1) on CUDA cores");
      cur.cuda_cores = o.amount == 1;
      if (cur.cuda_cores && (!t.gpu || t.gpu_arch.rfind("sm_", 0) != 0)) fail("TC(0,1) needs a CUDA target");
      std::optional<TensorCorePlan> plan = tensor_core_plan(g, cur, &why);
      if (!plan) fail(why);
      if (!cur.cuda_cores && !has_tensor_cores(t, plan->type))
        fail(plan->type == DType::F32
                 ? "f32 operands run on tensor cores only as tf32 (--precision=tf32, sm_80 or later)"
                 : "bf16 tensor cores need sm_80 or later");
      cur.tensor_cores = true;
      continue;
    }
    if (o.op == OptOp::Swap) {
      size_t other = size_t(o.amount);
      if (!global || o.amount < 0 || other >= cur.global_ranges.size() || other == size_t(o.axis))
        fail("SWAP needs two global axes");
      std::swap(cur.global_ranges[size_t(o.axis)], cur.global_ranges[other]);
      continue;
    }
    int64_t n = size_of(r);
    if (o.op == OptOp::Padto) {
      if (o.amount < 2 || n % o.amount == 0) fail("the axis size " + std::to_string(n) + " is already a multiple");
      if ((n + o.amount - 1) / o.amount * o.amount >= 2 * n)
        fail("would double the axis size " + std::to_string(n) + " or more");
      cur = pad_axis(g, cur, r, o.amount);
      continue;
    }
    if (o.amount < 1 || n % o.amount != 0) fail("amount does not divide the axis size " + std::to_string(n));
    // Threads per work-group once this action adds its part.
    auto check_group_size = [&] {
      int64_t threads = o.amount;
      for (const UOp* l : cur.local_ranges) threads *= size_of(l);
      if (threads > t.max_local) fail("work-group larger than " + std::to_string(t.max_local));
      return threads;
    };
    switch (o.op) {
      case OptOp::Upcast:
      case OptOp::Unroll:
        if (global != (o.op == OptOp::Upcast))
          fail(global ? "UNROLL needs a reduce axis" : "UPCAST needs a global axis");
        cur = split_axis(g, cur, r, o.amount, RangeKind::Upcast);
        if (expansion(cur) > t.max_expand)
          fail("expands the kernel body more than " + std::to_string(t.max_expand) + " times");
        break;
      case OptOp::Local: {
        if (!t.gpu) fail("LOCAL needs a GPU target");
        if (!global) fail("LOCAL needs a global axis");
        check_group_size();
        cur = split_axis(g, cur, r, o.amount, RangeKind::Local);
        break;
      }
      case OptOp::Group:
      case OptOp::GroupTop: {
        if (!t.gpu) fail("GROUP needs a GPU target");
        if (global) fail("GROUP needs a reduce axis");
        int64_t threads = check_group_size();
        int64_t shared = 0;
        for (const UOp* u : toposort({cur.ast}))
          if (u->op == Op::KReduce) shared += threads * int64_t(dtype_size(u->dtype));
        if (shared > t.local_bytes)
          fail("needs more than " + std::to_string(t.local_bytes) + " bytes of shared memory");
        const UOp* run_time_end = r->src[0]->is_const() ? nullptr : r->src[0];
        if (run_time_end) {  // a run-time length: split at its bound, masked past it
          cur = pad_axis(g, cur, r, o.amount);
          r = kernel_axes(cur)[size_t(o.axis)];
        }
        // Each thread's loop then stops at the run's size, not at the bound's (a decode step
        // early in a long context reads the cache it has, not all of it).
        bool top = o.op == OptOp::GroupTop;
        cur = split_axis(g, cur, r, o.amount, RangeKind::Group, top, top ? nullptr : run_time_end);
        break;
      }
      case OptOp::Lanes: {
        if (t.gpu) fail("LANES needs a CPU target");
        if (global) fail("LANES needs a reduce axis");
        int64_t inner_id = next_range_id(cur) + 1;  // split_axis' inner range
        cur = split_axis(g, cur, r, o.amount, RangeKind::Upcast);
        for (const UOp* u : toposort({cur.ast}))
          if (u->op == Op::Range && u->range().id == inner_id) {
            cur.ast = nest_reduces(g, cur.ast, u);
            break;
          }
        if (expansion(cur) > t.max_expand)
          fail("expands the kernel body more than " + std::to_string(t.max_expand) + " times");
        break;
      }
      case OptOp::Swap:
      case OptOp::Tc:
      case OptOp::Padto: break;  // handled above
    }
  }
  return cur;
}

namespace {
// GPU kernels by their outputs: below kFewOutputs a reduce is split across a work-group, from
// kManyOutputs on each thread computes a register tile; up to kMidOutputs, split_mid_reduce.
constexpr int64_t kFewOutputs = 4096, kMidOutputs = 16384, kManyOutputs = 1 << 16;

// GPU kernels want every thread busy and few bytes per result:
// - few outputs over a long reduce (global pools, the last FC layers, a softmax's row sums): the
//   reduce is split across a work-group (GROUP: neighbouring threads read neighbouring elements)
//   so more than one thread per output works;
// - many outputs over a reduce (convs, matmuls): each thread computes a register tile of copies
//   along an axis that some load does not depend on (a conv's output channels), so that load
//   serves every copy;
// - work-groups along the innermost output axis: neighbouring threads read neighbouring data.
// The reduce axes (indices into `axes`) of each KREDUCE, those sharing an axis merged: reduces
// over axes of their own (a gate and an up projection, an STFT's real and imaginary sums) apart.
std::vector<std::set<size_t>> reduce_chains(const Kernel& k, const std::vector<const UOp*>& axes) {
  std::vector<std::set<size_t>> chains;
  for (const UOp* u : toposort({k.ast})) {
    if (u->op != Op::KReduce) continue;
    std::set<size_t> mine;
    for (size_t i = 1; i < u->src.size(); ++i)
      if (auto it = std::find(axes.begin(), axes.end(), u->src[i]); it != axes.end())
        mine.insert(size_t(it - axes.begin()));
    auto shared = std::find_if(chains.begin(), chains.end(), [&](const std::set<size_t>& c) {
      return std::any_of(mine.begin(), mine.end(), [&](size_t a) { return c.count(a); });
    });
    if (shared != chains.end())
      shared->insert(mine.begin(), mine.end());
    else if (!mine.empty())
      chains.push_back(mine);
  }
  return chains;
}

// Does a load of the kernel's reduces that varies along its innermost reduce axis run contiguously
// along its innermost output axis (attention's V rows)?
bool outputs_contiguous(Graph& g, const Kernel& k) {
  std::vector<const UOp*> axes = kernel_axes(k);
  if (k.global_ranges.empty() || axes.size() == k.global_ranges.size()) return false;
  std::vector<const UOp*> loads = reduce_loads(k);
  return std::any_of(loads.begin(), loads.end(), [&](const UOp* l) {
    return depends_on(l->src[1], axes.back()) && stride(g, l->src[1], k.global_ranges.back()) == 1;
  });
}

// How many steps of `r` one element of the load at `idx` spans: 1 where the load moves with r,
// 2 for a byte of two nibbles (idx = r / 2); 0 when no step up to 64 moves it by a constant.
int64_t steps_per_element(Graph& g, const UOp* idx, const UOp* r) {
  Sym s{g};
  for (int64_t e = 1; e <= 64; e *= 2)
    if (std::optional<int64_t> d = constant_difference(g, substitute(g, idx, {{r, s.add(r, e)}}), idx); d && *d)
      return e;
  return 0;
}

// Consecutive steps of reduce axis `r` a thread takes so that it reads 16 bytes of the weight
// that most bytes per step come from (8 steps of f16, 16 of q8_0's bytes, 32 of nibbles two to a
// byte): whole vectors instead of a load per element. 1 without such a weight.
int64_t vector_steps(Graph& g, const Kernel& k, const UOp* r) {
  double most = 0;
  int64_t steps = 1;
  for (const UOp* l : reduce_loads(k)) {
    const BufferInfo& b = g.buffer(l->src[0]->ival());
    if (b.kind != BufferKind::Weight || l->src.size() != 2 || !depends_on(l->src[1], r)) continue;
    int64_t e = steps_per_element(g, l->src[1], r), size = dtype_size(b.dtype);
    if (e && double(size) / double(e) > most)
      most = double(size) / double(e), steps = std::max<int64_t>(1, 16 / size * e);
  }
  return steps;
}

// Outputs of the innermost output axis a thread takes: 4 where a weight moves along it and other
// data the reduce reads (the activations of a matrix-vector product) does not, so that each
// activation loaded serves four rows (read in f32 per element, the activations would otherwise
// pass through the caches at eight times the bytes of q4_0 weights); 8 where groups of 8 rows
// still give every SM (t.fill_threads / 2048) four work-groups. On an H200 (TGC_PROFILE, q4_0)
// 8 rows took the FFN products of an 8B model (14336 x 4096) from 24.7 to 21.7 us, of a 1B one
// (8192 x 2048) from 11.3 to 10.5, the 8B's 4096-row ones from 11.8 to 10.5; 512 to 2048 rows
// ran 10-30% slower so (too few work-groups).
int64_t rows_per_thread(Graph& g, const Kernel& k, const TargetProfile& t) {
  if (k.global_ranges.empty()) return 1;
  const UOp* out = k.global_ranges.back();
  if (!out->src[0]->is_const() || size_of(out) % 4 != 0) return 1;
  const int64_t sms = std::max<int64_t>(1, t.fill_threads / 2048), n = size_of(out);
  bool weight_rows = false, shared = false;
  for (const UOp* l : reduce_loads(k)) {
    bool weight = g.buffer(l->src[0]->ival()).kind == BufferKind::Weight, moves = depends_on(l->src[1], out);
    weight_rows = weight_rows || (weight && moves);
    shared = shared || (!weight && !moves);
  }
  if (!weight_rows || !shared) return 1;
  return n % 8 == 0 && n / 8 >= 4 * sms ? 8 : 4;
}

// Matrix-vector products and attention over a cache at a few tokens (an LLM's decode step: each
// weight read once, a few thousand outputs or tens of thousands) leave most of a GPU idle with a
// thread per output, and read rows far apart in each warp. Each reduce's innermost axis is split
// over the threads of a work-group, as many as fill the GPU (t.fill_threads in flight), a warp at
// least and 256 at most; consecutive threads take consecutive 16-byte vectors of the weight
// (UNROLL then GROUP, not GROUPTOP: `vector_steps`), so a warp reads a row's bytes side by side,
// and four rows each (`rows_per_thread`). An axis that ends at a run-time size (the cache's
// length) is split at its bound, the positions past its end masked. Two reduces over axes of
// their own (a SwiGLU's gate and up) take 16 threads each, a thread per pair. Where the outputs
// are what lies contiguous in memory (attention's weighted sum of V rows), they keep their LOCAL
// (`local` threads) and the reduce takes the rest of the work-group. Returns the group's threads
// (1: not split).
int64_t fill_with_reduce(Graph& g, const Kernel& k, const TargetProfile& t, int64_t outputs, int64_t local,
                         std::vector<Opt>& opts) {
  std::vector<const UOp*> axes = kernel_axes(k);
  std::vector<std::set<size_t>> chains = reduce_chains(k, axes);
  if (chains.empty() || chains.size() > 2 || outputs >= t.fill_threads) return 1;
  const int64_t rows = local == 1 ? rows_per_thread(g, k, t) : 1;
  outputs /= rows;
  int64_t want = 32;
  while (want < 256 && want < t.max_local && outputs * want < t.fill_threads) want *= 2;
  if (chains.size() == 2) want = 16;
  // Outputs side by side (attention's weighted sum of V rows, a work-group per head at one
  // token) take the largest group there is: their few groups leave most of the GPU idle.
  if (local > 1) want = std::max<int64_t>(1, t.max_local / local);
  if (want * rows * int64_t(chains.size()) * 8 * std::max(1, k.num_reduces) > t.local_bytes) return 1;
  std::vector<Opt> split;
  if (rows > 1) split.push_back({OptOp::Upcast, int(k.global_ranges.size()) - 1, rows});
  int64_t group = 1;
  for (const std::set<size_t>& chain : chains) {
    size_t inner = *chain.rbegin();
    int64_t n = size_of(axes[inner]);  // a run-time size's bound
    if (n < 256) return 1;
    int64_t steps = axes[inner]->src[0]->is_const() ? vector_steps(g, k, axes[inner]) : 1;
    while (steps > 1 && (n % steps || n / steps < 32)) steps /= 2;
    int64_t amount = pick_divisor(n / steps, {256, 128, 64, 32, 16, 8, 4, 2}, want);
    if (!amount || (local == 1 && amount < 16)) return 1;
    if (steps > 1) split.push_back({OptOp::Unroll, int(inner), steps});
    split.push_back({OptOp::Group, int(inner), amount});
    group *= amount;
  }
  opts.insert(opts.end(), split.begin(), split.end());
  return group;
}

// Output axes that end at a run-time size count as about a thousand outputs, those that end at
// `few` (a token count at a few tokens: an LLM's decode step) as one.
// `tile_runtime`: register tiles along output axes that end at a run-time size too (a prefill's
// tokens, where a few-token variant takes the small sizes).
std::vector<Opt> gpu_heuristic_opts(Graph& g, const Kernel& k, const TargetProfile& t, const UOp* few = nullptr,
                                    bool tile_runtime = false) {
  bool few_tokens = few != nullptr;
  // A matrix product runs on tensor cores where the target has them for its operands (not at a
  // few tokens: a block's 32 or more rows would be mostly padding).
  if (has_tensor_cores(t) && !few_tokens)
    if (std::optional<TensorCorePlan> p = tensor_core_plan(g, k); p && has_tensor_cores(t, p->type))
      return {{OptOp::Tc, 0, 0}};
  // A large one of f32 on the CUDA cores, from shared memory (smaller ones fill too few blocks).
  if (t.gpu && t.gpu_arch.rfind("sm_", 0) == 0) {
    Kernel c = k;
    c.cuda_cores = true;
    if (std::optional<TensorCorePlan> p = tensor_core_plan(g, c))
      if (range_extent(p->m) * range_extent(p->n) * range_extent(p->k) >= kCudaCoreTilesWork)
        return {{OptOp::Tc, 0, 1}};
  }
  std::vector<Opt> opts;
  const std::vector<const UOp*>& globals = k.global_ranges;
  std::vector<const UOp*> axes = kernel_axes(k);
  int64_t outputs = 1;
  for (const UOp* r : globals) outputs *= r->src[0]->is_const() ? size_of(r) : r->src[0] == few ? 1 : 1 << 10;
  // Up to 256 threads per output over the reduce axes, innermost (contiguous) first; an axis
  // without a fitting divisor is padded where that wastes at most an eighth. Two reduces over axes
  // of their own (the real and imaginary sums of an STFT) share the threads, 16 each.
  int64_t group = 1, reduce_total = 1;
  for (size_t a = globals.size(); a < axes.size(); ++a)
    reduce_total *= axes[a]->src[0]->is_const() ? size_of(axes[a]) : 1;
  int64_t want = std::min<int64_t>(256, t.max_local);
  // Under 256 outputs most of the GPU idles, so shorter reduces are split too (a squeeze-excite
  // block's channel means and FC layers, a classifier head; BEAM on an H200 split cls's 200-channel
  // mean over 192 values, 21.9 -> 2.9 us, and its FC layers, 4.5-7.7 -> 2.7-3.1 us).
  bool long_reduce = reduce_total >= 256 || (outputs < 256 && reduce_total >= 16);
  // At a few tokens, matrix-vector products take fill_with_reduce's schedule whatever their size.
  bool contiguous = few_tokens && outputs_contiguous(g, k);
  if (few_tokens && !contiguous) group = fill_with_reduce(g, k, t, outputs, 1, opts);
  if (group == 1 && outputs < kFewOutputs && long_reduce && want * 8 * std::max(1, k.num_reduces) <= t.local_bytes) {
    std::vector<std::set<size_t>> chains = reduce_chains(k, axes);
    // Two chains split the threads evenly; with more, each chain's split would be a few threads
    // and every thread would repeat the others' partial sums (silero's LSTM cells, six reduces:
    // 0.21 -> 0.45 ms on an H200), so only the longest chain is split.
    auto length = [&](const std::set<size_t>& c) {
      int64_t n = 1;
      for (size_t a : c) n *= axes[a]->src[0]->is_const() ? size_of(axes[a]) : 1;
      return n;
    };
    if (chains.size() > 2)
      chains = {*std::max_element(chains.begin(), chains.end(),
                                  [&](const auto& x, const auto& y) { return length(x) < length(y); })};
    int64_t per_chain = chains.size() == 2 ? int64_t(std::sqrt(double(want))) : want;
    for (const std::set<size_t>& chain : chains) {
      int64_t mine = 1;
      for (auto a = chain.rbegin(); a != chain.rend() && mine < per_chain; ++a) {
        if (!axes[*a]->src[0]->is_const()) continue;
        int64_t n = size_of(axes[*a]), limit = std::min(per_chain / mine, want / group);
        int64_t amount = pick_divisor(n, {256, 128, 64, 32, 16, 8, 4, 2}, std::min(limit, n));
        for (int64_t c : {256, 128, 64, 32, 16})
          if (!amount && c <= limit && c < n && (c - n % c) % c <= n / 8)
            opts.push_back({OptOp::Padto, int(*a), c}), amount = c;
        if (amount) opts.push_back({OptOp::Group, int(*a), amount}), group *= amount, mine *= amount;
      }
    }
  }
  // Elementwise kernels: four neighbouring elements per thread (128-bit loads and stores) and
  // 256 threads per group; on an H200 a 16M-element add went from 0.166 ms (64 threads, one
  // element each) to 0.054 ms (3.75 TB/s, 90% of a device copy).
  bool elementwise = k.num_reduces == 0;
  // Split reduces already give a group its threads and neighbouring reads; work-groups along an
  // output axis on top would leave few, huge groups (silero_legacy: 4 groups of 1024 threads,
  // 0.21 -> 0.59 ms on an H200).
  int local_axis = -1;
  if (group == 1 && !globals.empty() && globals.back()->src[0]->is_const()) {
    local_axis = int(globals.size()) - 1;
    int64_t n = size_of(globals.back()), limit = t.max_local;
    if (elementwise && n % 4 == 0 && outputs >= kManyOutputs) opts.push_back({OptOp::Upcast, local_axis, 4}), n /= 4;
    std::vector<int64_t> sizes =
        elementwise ? std::vector<int64_t>{256, 128, 64, 32, 16} : std::vector<int64_t>{64, 32, 16};
    int64_t v = pick_divisor(n, sizes, limit);
    // Few outputs side by side over a long reduce (attention's weighted V rows at one token):
    // narrower groups along them leave room for the reduce's split and make more work-groups
    // (on an H200, 32 heads x 64: 32 groups of 64 x 16 threads took 10.7 us).
    while (contiguous && v > 16 && n % (v / 2) == 0 && outputs * (t.max_local / v) < t.fill_threads) v /= 2;
    // Odd sizes (primes, 6625) are rounded up where that wastes at most an eighth.
    for (int64_t c : sizes)
      if (!v && c <= limit && (c - n % c) % c <= n / 8) opts.push_back({OptOp::Padto, local_axis, c}), v = c;
    if (v)
      opts.push_back({OptOp::Local, local_axis, v});
    else
      local_axis = -1;
    if (v && contiguous) fill_with_reduce(g, k, t, outputs, v, opts);
  }
  if (k.num_reduces == 0 || outputs < kManyOutputs) return opts;
  std::vector<const UOp*> loads = reduce_loads(k);
  // Not the innermost axis: its copies would sit in one thread, and neighbouring threads would
  // no longer read neighbouring data.
  for (int a = int(globals.size()) - 2; a >= 0; --a) {
    const UOp* r = globals[size_t(a)];
    if (a == local_axis || (!r->src[0]->is_const() && !tile_runtime)) continue;
    bool reused = std::any_of(loads.begin(), loads.end(), [&](const UOp* l) { return !depends_on(l->src[1], r); });
    bool varies = std::any_of(loads.begin(), loads.end(), [&](const UOp* l) { return depends_on(l->src[1], r); });
    if (!reused || !varies) continue;
    if (int64_t v = pick_divisor(size_of(r), {4, 2}, t.max_expand)) {
      opts.push_back({OptOp::Upcast, a, v});
      break;
    }
  }
  return opts;
}

// Targets with image weights (qcom): a reduce axis along which a weight is contiguous is unrolled
// by 4, so that the weight's loads come in fours, which the GPU lowering reads as one texel of an
// image, through the texture cache (codegen/gpu/image_weights.h). Not with GROUP ranges: their
// threads take every amount-th element of the axis.
void unroll_along_weights(Graph& g, const Kernel& k, const TargetProfile& t, std::vector<Opt>& opts) {
  if (k.num_reduces == 0) return;
  for (const Opt& o : opts)
    if (o.op == OptOp::Group || o.op == OptOp::GroupTop || o.op == OptOp::Tc) return;
  Kernel cur = apply_opts(g, k, opts, t);
  std::vector<const UOp*> axes = kernel_axes(cur), loads = reduce_loads(cur);
  for (size_t a = cur.global_ranges.size(); a < axes.size(); ++a) {
    if (!axes[a]->src[0]->is_const() || size_of(axes[a]) % 4 != 0) continue;
    bool along_weight = std::any_of(loads.begin(), loads.end(), [&](const UOp* l) {
      const BufferInfo& b = g.buffer(l->src[0]->ival());
      bool texels = b.dtype == DType::F32 || b.dtype == DType::F16;
      return b.kind == BufferKind::Weight && texels && l->src.size() == 2 && stride(g, l->src[1], axes[a]) == 1;
    });
    if (!along_weight) continue;
    Opt unroll{OptOp::Unroll, int(a), 4};
    try {
      apply_opts(g, cur, {unroll}, t);  // (axis a is cur's: the actions apply in turn)
      opts.push_back(unroll);
    } catch (const Error&) {  // past the body's expansion limit
    }
    return;
  }
}

// Mid-sized kernels (4096 to 16383 outputs: a late 1x1 conv over a few channels and positions)
// leave a large GPU with few threads, each running a long reduce alone. Where their work-groups
// already span 32 or more outputs, the first reduce axis, as the other actions left it, is split
// over 4 or 8 threads of the group (GROUPTOP: each thread keeps a contiguous run, so texel reads
// stay whole). BEAM on an H200 (qcom) split cls's 1x1 convs over 40-200 channels so:
// 15-20 -> 11-15 us each, cls 0.27-0.34 -> 0.25-0.31 ms. Kernels with narrower groups (16
// outputs, or none) ran slower split: det 0.675 -> 0.71 ms, rec and embedding 2-7% slower.
void split_mid_reduce(Graph& g, const Kernel& k, const TargetProfile& t, std::vector<Opt>& opts) {
  if (k.num_reduces != 1) return;
  int64_t outputs = 1, local = 1;
  for (const UOp* r : k.global_ranges) {
    if (!r->src[0]->is_const()) return;
    outputs *= size_of(r);
  }
  if (outputs < kFewOutputs || outputs >= kMidOutputs) return;
  for (const Opt& o : opts) {
    if (o.op == OptOp::Group || o.op == OptOp::GroupTop || o.op == OptOp::Tc) return;
    if (o.op == OptOp::Local) local *= o.amount;
  }
  Kernel cur = apply_opts(g, k, opts, t);
  std::vector<const UOp*> axes = kernel_axes(cur);
  size_t a = cur.global_ranges.size();
  if (a >= axes.size() || !axes[a]->src[0]->is_const()) return;
  int64_t n = size_of(axes[a]), split = n >= 20 ? 8 : n >= 10 ? 4 : 1;
  if (split == 1 || local < 32 || local * split > t.max_local || (split - n % split) % split > n / 4) return;
  std::vector<Opt> more;
  if (n % split) more.push_back({OptOp::Padto, int(a), split});
  more.push_back({OptOp::GroupTop, int(a), split});
  try {
    apply_opts(g, cur, more, t);
    opts.insert(opts.end(), more.begin(), more.end());
  } catch (const Error&) {  // past the body's expansion limit
  }
}
}  // namespace

void rewrite_kernels(Graph& g, Schedule& s, const TargetProfile& t) {
  merge_axes(g, s, t);
  // Before the rewrites below, which then see the int8 words a quantized conv's weights become
  // as weights (channel_vectors transposes them at compile time) and make no kernel that reads
  // weights alone (they copy weights at compile time and leave buffers with data alone).
  fold_weight_kernels(g, s);
  channel_vectors(g, s, t);
  deinterleave_strided(g, s, t);
  pack_panels(g, s, t);
}

bool narrow_rows(int64_t n, const TargetProfile& t) {
  int64_t v = vector_width(n, t);
  return v == 0 || v % t.vector_lanes != 0;
}

bool quarter_rows(int64_t n, const TargetProfile& t) { return vector_width(n, t) * 4 <= t.vector_lanes; }

bool lanes_along_channels(const Kernel& k, const UOp* c, const TargetProfile& t) {
  int64_t n = range_extent(k.global_ranges.back());
  return narrow_rows(n, t) && (quarter_rows(n, t) || channel_tile(k, c, t, 4 * t.vector_lanes));
}

int64_t vector_width(int64_t n, const TargetProfile& t) {
  int64_t lanes = t.vector_lanes;
  if (int64_t v = pick_divisor(n, {2 * lanes, lanes, lanes / 2, 4}, n)) return v;
  // Sizes without a power-of-two factor (6625 = 5^3 * 53): the largest divisor near the
  // vector width still gives full vectors plus a short tail. (lanes_along_outputs pads rows to
  // whole vectors where that wastes at most a seventh; more padding is left to BEAM: gated
  // loads whose gates are not constants per lane became gathers, 3x slower on rec.)
  for (int64_t d = 2 * lanes; d > lanes / 2; --d)
    if (n % d == 0) return d;
  // A short axis (the 2-wide rows of a late conv layer) is taken whole: few lanes, but it
  // opens the register tiles below, which give the multiply-adds independent chains.
  return n > 1 && n <= lanes / 2 ? n : 0;
}

// An elementwise kernel that reads a load `s` apart along its contiguous output axis j (a copy
// split by phase, passes/deinterleave) leaves that load to gathers (vgatherqps: 0.16 ms for det's
// 311K-element input, 0.06 with this). Copies along the axis that load reads contiguously, of its extent s, make
// the s loads of an iteration neighbours: the loop vectorizer reads them as one interleaved group
// (wide loads and vpermt2ps), each copy storing a contiguous stream.
// A transposing copy (s beyond 4, a transposed operand's copy) takes a vector's worth of such
// copies: each iteration reads one vector of a row and writes one element of each of the copies.
static std::vector<Opt> phase_opts(Graph& g, const Kernel& k, const TargetProfile& t) {
  const std::vector<const UOp*>& globals = k.global_ranges;
  if (globals.size() < 2 || stride(g, k.ast->src[1], globals.back()) != 1) return {};
  for (const UOp* l : toposort({k.ast})) {
    if (l->op != Op::Load) continue;
    std::optional<int64_t> s = stride_along(g, l->src[1], globals.back());
    if (!s || *s < 2) continue;
    int64_t copies = *s <= 4 ? *s : t.vector_lanes;
    for (size_t a = 0; a + 1 < globals.size(); ++a)
      if (globals[a]->src[0]->is_const() && range_extent(globals[a]) == *s && *s % copies == 0 &&
          stride(g, l->src[1], globals[a]) == 1)
        return {{OptOp::Upcast, int(a), copies}};
  }
  return {};
}

// An elementwise kernel whose element is a long chain of special functions (two or more tanh or
// sigmoid in a row: 4+ of exp2, log2, sin, sqrt, recip) is bound by that chain's latency, and
// LLVM's loop vectorizer, seeing a large body, runs one vector per iteration. Copies along the
// contiguous innermost axis give it independent chains, one vector each, a quarter of the
// vector registers' worth (a chain holds its value and the temporaries of an exp2): 8 on
// AVX-512, where eltwise16_1M (5 tanh) ran 4.4 ms at one thread with one vector per iteration,
// 3.77 with two, 3.51 with four, 3.43 with eight, and spilled past that (3.39-3.73 with 16).
// A single sigmoid (SiLU over 1M floats) did not gain, so shorter chains keep the loop
// vectorizer's choice.
static std::vector<Opt> chain_opts(Graph& g, const Kernel& k, const TargetProfile& t) {
  const std::vector<const UOp*>& globals = k.global_ranges;
  if (globals.empty() || stride(g, k.ast->src[1], globals.back()) != 1) return {};
  int special = 0;
  for (const UOp* u : toposort({k.ast}))
    special += u->op == Op::Exp2 || u->op == Op::Log2 || u->op == Op::Sin || u->op == Op::Sqrt || u->op == Op::Recip;
  if (special < 4) return {};
  for (int64_t chains = std::max(2, t.vector_registers / 4); chains >= 2; chains /= 2)
    if (size_of(globals.back()) % (chains * t.vector_lanes) == 0)
      return {{OptOp::Upcast, int(globals.size()) - 1, chains * t.vector_lanes}};
  return {};
}

namespace {
// The CPU heuristic's choices for a kernel with reduces so far: the opts, the copies of the body
// they make, and the output axis the vector lanes run along (-1: none).
struct CpuChoice {
  std::vector<Opt> opts;
  int64_t expand = 1;
  int vec_axis = -1;
  bool tiled = false;  // the register tile chosen with the lanes (passes/channel_tile.h)
};
}  // namespace

// Vector lanes: the innermost output axis along which the store and some load are contiguous.
static void lanes_along_outputs(Graph& g, const Kernel& k, const TargetProfile& t, const std::vector<const UOp*>& loads,
                                CpuChoice& c) {
  const std::vector<const UOp*>& globals = k.global_ranges;
  const UOp* store_idx = k.ast->src[1];
  bool floats = std::all_of(loads.begin(), loads.end(), [](const UOp* l) { return is_float(l->dtype); });
  for (int a = int(globals.size()) - 1; a >= 0 && c.vec_axis < 0; --a) {
    if (stride(g, store_idx, globals[size_t(a)]) != 1) continue;
    bool contiguous_load = std::any_of(loads.begin(), loads.end(),
                                       [&](const UOp* l) { return stride(g, l->src[1], globals[size_t(a)]) == 1; });
    if (!contiguous_load) break;
    int64_t n = size_of(globals[size_t(a)]), lanes = t.vector_lanes, up = (n + lanes - 1) / lanes * lanes;
    // Rows that fill no whole vector (28 columns: 4-lane vectors on AVX-512) are padded to whole
    // vectors where that wastes at most a seventh (28 -> 32, 14 -> 16); the lanes past the row
    // read nothing and store nothing (their gates are constants once the lanes are copies).
    // Depthwise 5x5 convs at 56x56 and 28x28, stride 1 and 2: 0.31 -> 0.23 and 0.35 -> 0.20 ms on
    // Zen 5. Not for integer products (an int8 conv's packed words: MobileNetV2's int8 twin ran
    // 12.3 -> 18.4 ms so).
    if (floats && narrow_rows(n, t) && n > lanes / 2 && (up - n) * 7 <= n && globals[size_t(a)]->src[0]->is_const())
      c.opts.push_back({OptOp::Padto, a, lanes}), n = up;
    if (int64_t v = vector_width(n, t)) c.opts.push_back({OptOp::Upcast, a, v}), c.expand *= v, c.vec_axis = a;
  }
}

// Whether every load of the reduce reads `lanes` neighbours along output axis r (split so) as
// one vector or as one value for all (no gathers), and some load as a vector. A grouped conv's
// input moves with the channels' group (c / 64), the same for lanes inside one group; a
// depthwise conv's moves with every channel. Weights in blocks of channels
// (passes/channel_vectors) are contiguous within a block.
static bool lanes_read_whole(Graph& g, const Kernel& k, const std::vector<const UOp*>& loads, const UOp* r,
                             int64_t lanes) {
  int64_t id = next_range_id(k);
  const UOp* outer = g.range(size_of(r) / lanes, id, RangeKind::Global);
  const UOp* inner = g.range(lanes, id + 1, RangeKind::Upcast);
  Sym sym{g};
  std::unordered_map<const UOp*, const UOp*> split{{r, sym.add(sym.mul(outer, lanes), inner)}};
  bool vector = false;
  for (const UOp* l : loads) {
    std::optional<int64_t> s = stride(g, simplify(g, substitute(g, l->src[1], split)), inner);
    if (!s || (*s != 0 && *s != 1)) return false;
    vector = vector || *s == 1;
  }
  return vector;
}

// Output rows that vectors along them would not fill (56 columns: half vectors on AVX-512; 14,
// 7: one partial vector), or rows no load reads contiguously: the lanes run along an output axis
// that some load reads contiguously instead (the channels of a weight that passes/channel_vectors
// transposed), with the positions as register tiles (passes/channel_tile.h: resnet18 at 1 thread
// on Zen 5, 58 -> 20.7 ms). Where no such tile has enough accumulators (17 columns of 3 rows:
// primes), rows of more than a quarter vector keep their
// partial vectors; narrower ones take one vector of channels and register_tiles' tile (an audio
// embedding's 12x4 convolution: 0.158 -> 0.047 ms). Not where a load of the reduce moves along
// the channels but not contiguously (a depthwise conv's input: the lanes would gather it).
static void lanes_across_narrow_rows(Graph& g, const Kernel& k, const TargetProfile& t,
                                     const std::vector<const UOp*>& loads, CpuChoice& c) {
  const std::vector<const UOp*>& globals = k.global_ranges;
  // Also rows that no load reads contiguously (a strided conv's, a matmul's stored transposed:
  // ConvNeXt's second Linear, [768, 7, 7] out of rows of 3072, ran at 0.4 GFLOP/s with its lanes
  // along the reduce and the weight gathered).
  if (!narrow_rows(size_of(globals.back()), t) && c.vec_axis >= 0) return;
  for (int a = 0; a < int(globals.size()); ++a) {
    const UOp* r = globals[size_t(a)];
    int64_t n = size_of(r), v = n % t.vector_lanes == 0 ? t.vector_lanes : vector_width(n, t);
    if (a == c.vec_axis || !r->src[0]->is_const() || v < t.vector_lanes) continue;
    if (!lanes_read_whole(g, k, loads, r, v)) continue;
    int64_t most = 4 * t.vector_lanes;
    while (most > v && (n % most || !lanes_read_whole(g, k, loads, r, most))) most /= 2;
    std::optional<ChannelTile> tile = channel_tile(k, r, t, most);
    if (!tile && c.vec_axis >= 0 && !quarter_rows(size_of(globals.back()), t)) continue;
    c.opts.clear();
    c.opts.push_back({OptOp::Upcast, a, tile ? tile->lanes : v}), c.expand = tile ? tile->lanes : v, c.vec_axis = a;
    if (tile) {
      for (auto [axis, copies] : tile->positions) {
        int i = int(std::find(globals.begin(), globals.end(), axis) - globals.begin());
        c.opts.push_back({OptOp::Upcast, i, copies}), c.expand *= copies;
      }
      c.tiled = true;
    }
    break;
  }
}

// The split ranges of the last action of the opts that made `split` (outer, inner): the two
// newest ranges.
static std::pair<const UOp*, const UOp*> last_split(const Kernel& split) {
  std::vector<const UOp*> rs;
  for (const UOp* u : toposort({split.ast}))
    if (u->op == Op::Range) rs.push_back(u);
  std::sort(rs.begin(), rs.end(), [](const UOp* a, const UOp* b) { return a->range().id < b->range().id; });
  return std::make_pair(rs[rs.size() - 2], rs.back());
}

// Whether LANES(axis, lanes) after `with` has some load read its lanes contiguously (a block
// of a quantized row, the rows of one head: contiguous only within the block).
static bool contiguous_lanes(Graph& g, const Kernel& k, const TargetProfile& t, std::vector<Opt> with, int axis,
                             int64_t lanes) {
  with.push_back({OptOp::Lanes, axis, lanes});
  Kernel split;
  try {
    split = apply_opts(g, k, with, t);
  } catch (const Error&) {  // expands the body too far along with the other reduces' lanes
    return false;
  }
  const UOp* inner = last_split(split).second;
  std::vector<const UOp*> split_loads = reduce_loads(split);
  return std::any_of(split_loads.begin(), split_loads.end(),
                     [&](const UOp* l) { return stride(g, l->src[1], inner) == 1; });
}

// Whether every index (of a load, of a comparison) is affine along the outer part of `with`'s
// last split: a quantized super-block's unpacking is then the same in every iteration.
static bool affine_outer(Graph& g, const Kernel& k, const TargetProfile& t, const std::vector<Opt>& with) {
  Kernel split;
  try {
    split = apply_opts(g, k, with, t);
  } catch (const Error&) {
    return false;
  }
  const UOp* outer = last_split(split).first;
  for (const UOp* u : toposort({split.ast}))
    for (const UOp* x : u->src)
      if (x->dtype == DType::Index && u->dtype != DType::Index && u->op != Op::KReduce && depends_on(x, outer) &&
          !stride_along(g, x, outer))
        return false;
  return true;
}

// Without vector lanes along an output axis (a matmul against a transposed or a quantized
// weight matrix: the reduce axis is the contiguous one), the lanes run along each reduce axis
// that some load reads contiguously, each lane its own partial sum: four vectors' worth, so
// that four multiply-add chains hide each other's latency (and one iteration covers a 32-element
// quantized block, whose unpacking then has constant shifts). LLVM's loop vectorizer would
// do that by itself for plain loads, but not through a quantized block's index arithmetic.
// No register tiles on top: the SLP vectorizer would then bundle the tile's copies instead.
static void lanes_along_reduces(Graph& g, const Kernel& k, const TargetProfile& t, std::vector<Opt>& opts) {
  std::vector<const UOp*> lane_axes;
  std::vector<const UOp*> axes = kernel_axes(k);
  for (size_t a = k.global_ranges.size(); a < axes.size() && t.vector_lanes >= 4; ++a)
    if (axes[a]->src[0]->is_const() && size_of(axes[a]) % t.vector_lanes == 0 &&
        contiguous_lanes(g, k, t, {}, int(a), t.vector_lanes))
      lane_axes.push_back(axes[a]);
  for (const UOp* r : lane_axes) {
    // Splits move the axes after them: find this one's place in the kernel split so far.
    std::vector<const UOp*> now = kernel_axes(apply_opts(g, k, opts, t));
    int axis = int(std::find(now.begin(), now.end(), r) - now.begin());
    for (int64_t lanes : {4 * t.vector_lanes, 2 * t.vector_lanes, t.vector_lanes}) {
      if (lanes > t.max_expand || size_of(r) % lanes != 0 || !contiguous_lanes(g, k, t, opts, axis, lanes)) continue;
      opts.push_back({OptOp::Lanes, axis, lanes});
      // A super-block of 256 (K-quants) spans several iterations, each unpacking its part with
      // other shifts and scales: unroll the loop over it (the outer part keeps r's place).
      if (!affine_outer(g, k, t, opts))
        for (int64_t unroll : {2, 4, 8}) {
          if (lanes * unroll > t.max_expand || size_of(r) % (lanes * unroll) != 0) continue;
          std::vector<Opt> with = opts;
          with.push_back({OptOp::Unroll, axis, unroll});
          if (affine_outer(g, k, t, with)) {
            opts = with;
            break;
          }
        }
      break;
    }
  }
}

// Register tiles: axes along which some load stays the same, so one load serves every copy.
// Not along a run-time size that may be 1: a one-token decode step would compute the tile's
// padding rows (large_size_variant tiles it where the size is large). A size of at least 2
// (an image's rows in multiples of 32) is tiled as at its bound.
static void register_tiles(const Kernel& k, const std::vector<const UOp*>& loads, int64_t budget,
                           bool tile_runtime_axes, CpuChoice& c) {
  const std::vector<const UOp*>& globals = k.global_ranges;
  std::vector<size_t> tiles;  // their places in opts
  bool pad = true;
  auto tile_axes = [&](const std::vector<int64_t>& sizes) {
    for (int a = int(globals.size()) - 1; a >= 0; --a) {
      if (a == c.vec_axis) continue;
      const UOp* r = globals[size_t(a)];
      if (!r->src[0]->is_const() && r->src[0]->vmin < 2 && !tile_runtime_axes) continue;
      bool reused = std::any_of(loads.begin(), loads.end(), [&](const UOp* l) { return !depends_on(l->src[1], r); });
      bool varies = std::any_of(loads.begin(), loads.end(), [&](const UOp* l) { return depends_on(l->src[1], r); });
      if (!reused || !varies) continue;
      int64_t n = size_of(r), v = pick_divisor(n, sizes, budget / c.expand);
      // An axis that no small tile divides (ViT's 197 tokens) is padded to a multiple of 4 where
      // that wastes at most an eighth: without a tile along it, each weight load serves one row
      // (ViT-B/16 at 1 thread 620 -> 190 ms). Not where 5 or 7 divides it: a 7x7 map's tile of 7
      // or 8 channels beats a padded one of 4 x 4 (ResNet-50 8% slower, DenseNet-121 20%).
      auto untileable = [](int64_t m) { return m % 2 && m % 3 && m % 5 && m % 7; };
      if (!v && pad && r->src[0]->is_const() && untileable(n) && 4 - n % 4 <= n / 8 && 4 <= budget / c.expand)
        c.opts.push_back({OptOp::Padto, a, 4}), v = 4;
      if (v) c.opts.push_back({OptOp::Upcast, a, v}), c.expand *= v, tiles.push_back(c.opts.size() - 1);
    }
  };
  tile_axes({4, 3, 2});
  pad = false;
  // 7 or 5 only where no axis took 4, 3 or 2: lanes along channels over a late layer's 7x7
  // positions would otherwise get no tile at all (ConvNeXt's last Linears: 1.6x faster).
  if (tiles.empty()) tile_axes({7, 5});
  // A tile along one axis alone (a 1x1 conv's output channels) leaves half the budget unused:
  // grow it, so that each load along the vector axis feeds twice the multiply-adds (rec's 480x480
  // 1x1 convs at 1 thread: 4 -> 8 channels, 1.75 -> 1.26 ms). Two tile axes already fill it.
  if (tiles.size() == 1) {
    Opt& o = c.opts[tiles[0]];
    int64_t rest = c.expand / o.amount;
    if (int64_t v = pick_divisor(size_of(globals[size_t(o.axis)]), {8, 6}, budget / rest); v > o.amount) o.amount = v;
  }
}

// Bytes of load `l`'s buffer that one work item reads, `tile[a]` values of each output axis a and
// every value of the reduce axes: per dim of the buffer, the number of values its index takes
// there (their span, or their count where smaller). A dilated conv's taps and its tile's rows
// are rows 18 apart and 1 apart: 3 taps x 4 rows read 12 rows. 0 where an axis moves the index
// by other than a constant.
static double item_window(Graph& g, const Kernel& k, const UOp* l, const std::vector<int64_t>& tile) {
  const BufferInfo& b = g.buffer(l->src[0]->ival());
  const size_t rank = b.shape.size();
  std::vector<int64_t> step(rank, 1), span(rank, 0), count(rank, 1);  // step: the dim's stride
  for (size_t d = rank; d-- > 1;) step[d - 1] = step[d] * b.shape[d];
  std::vector<const UOp*> axes = kernel_axes(k);
  for (size_t a = 0; a < axes.size(); ++a) {
    int64_t e = a < k.global_ranges.size() ? tile[a] : size_of(axes[a]);
    std::optional<int64_t> c = stride(g, l->src[1], axes[a]);
    if (!c) return 0;
    if (e <= 1 || *c == 0) continue;
    size_t d = 0;
    while (d < rank && (step[d] > std::abs(*c) || *c % step[d])) ++d;
    if (d == rank) return 0;
    span[d] += std::abs(*c / step[d]) * (e - 1), count[d] *= e;
  }
  double bytes = dtype_size(b.dtype);
  for (size_t d = 0; d < rank; ++d) bytes *= double(std::min({span[d] + 1, count[d], b.shape[d]}));
  return bytes;
}

// With the channel blocks inside, an item's input window stays in L2 while they pass over it;
// where it does not fit in half of L2 (a dilated conv: DeepLab's ASPP, 320 channels, taps 18 rows
// apart, a tile of 4 rows: 12 rows of each channel, 1 MB), the tile takes more output channels
// instead of rows, which widen the window (1 row: 3 rows of each channel). 4 rows x 32 x 2
// channels -> 1 x 32 x 8 took the three ASPP convs at 1 thread from 24.0, 17.8, 9.7 to 7.5, 6.7,
// 6.0 ms on a Zen 5.
static void rows_into_channels(Graph& g, const Kernel& k, const TargetProfile& t, int vec_axis,
                               const std::vector<const UOp*>& reread, std::vector<Opt>& opts) {
  const std::vector<const UOp*>& globals = k.global_ranges;
  std::vector<int64_t> tile(globals.size(), 1);
  for (const Opt& o : opts)
    if (o.op == OptOp::Upcast && size_t(o.axis) < globals.size()) tile[size_t(o.axis)] *= o.amount;
  auto window = [&] {
    double w = 0;
    for (const UOp* l : reread) w += item_window(g, k, l, tile);
    return w;
  };
  auto channels =
      std::find_if(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::Upcast && o.axis == 0; });
  if (vec_axis == 0 || channels == opts.end() || window() <= double(t.l2_bytes) / 2) return;
  for (Opt& o : opts) {
    if (o.op != OptOp::Upcast || o.axis <= 0 || o.axis == vec_axis || size_t(o.axis) >= globals.size()) continue;
    int64_t more = channels->amount * o.amount;
    if (size_of(globals[0]) % more) continue;
    tile[size_t(o.axis)] /= o.amount, tile[0] = tile[0] / channels->amount * more;
    channels->amount = more, o.amount = 1;
    if (window() <= double(t.l2_bytes) / 2) break;
  }
  opts.erase(
      std::remove_if(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::Upcast && o.amount == 1; }),
      opts.end());
}

// Inputs that a conv reads again for every block of its output channels (axis 0, outermost)
// and that do not fit in L2 (a 3x3 conv over 64 channels at 224x224: 13 MB a pass, 32 passes
// from memory): the channel blocks move innermost, the loop inside each work item, so that an
// item's input rows stay in cache while every channel block passes over them. Where the weights
// do not fit either, each item then reads all of them: the order that moves fewer bytes from
// beyond L2 wins (DeepLab's ASPP 1x1 conv, 1280 -> 256 channels at 32x32: 5.2 MB of inputs
// 128 times, or 1.3 MB of weights 8 times; 20 GFLOP/s on a Xeon whose L3 feeds a core ~20 GB/s).
static void weights_inside(Graph& g, const Kernel& k, const TargetProfile& t, int vec_axis, std::vector<Opt>& opts) {
  const std::vector<const UOp*>& globals = k.global_ranges;
  if (globals.size() < 3 || !globals[0]->src[0]->is_const()) return;
  double reread = 0, kept = 0;
  std::set<int64_t> seen;
  std::vector<const UOp*> reread_loads;
  for (const UOp* l : reduce_loads(k)) {
    const BufferInfo& b = g.buffer(l->src[0]->ival());
    if (!seen.insert(l->src[0]->ival()).second) continue;
    if (!depends_on(l->src[1], globals[0])) reread_loads.push_back(l);
    (depends_on(l->src[1], globals[0]) ? kept : reread) += double(numel(b.shape) * dtype_size(b.dtype));
  }
  double l2 = double(t.l2_bytes);
  if (reread <= l2) return;
  // Work items along each order: channel blocks, and the blocks of the other output axes.
  std::vector<double> blocks(globals.size());
  for (size_t a = 0; a < globals.size(); ++a) blocks[a] = double(size_of(globals[a]));
  for (const Opt& o : opts)
    if (o.op == OptOp::Upcast && size_t(o.axis) < globals.size()) blocks[size_t(o.axis)] /= double(o.amount);
  double items = 1;
  for (size_t a = 1; a < globals.size(); ++a) items *= blocks[a];
  double outer = blocks[0] * reread + kept, inner = reread + (kept * 2 > l2 ? items * kept : kept);
  if (inner >= outer) return;
  rows_into_channels(g, k, t, vec_axis, reread_loads, opts);
  for (int a = 0; a + 1 < int(globals.size()); ++a) opts.push_back({OptOp::Swap, a, a + 1});
}

std::vector<Opt> heuristic_opts(Graph& g, const Kernel& k, const TargetProfile& t, bool tile_runtime_axes) {
  if (t.gpu) {
    std::vector<Opt> opts = gpu_heuristic_opts(g, k, t, nullptr, tile_runtime_axes);
    // Where a few-tokens variant takes the small token counts, this schedule runs for the large
    // ones (a prefill): register tiles along the tokens too, so each weight load serves several.
    // (Not with serial launches: they run no variants.)
    if (!tile_runtime_axes && !t.serial_group && !few_tokens_variant(g, k, t, opts).opts.empty()) {
      std::vector<Opt> tiled = gpu_heuristic_opts(g, k, t, nullptr, true);
      try {
        apply_opts(g, k, tiled, t);  // (not along a run-time dim of a buffer the kernel updates)
        opts = std::move(tiled);
      } catch (const Error&) {
      }
    }
    if (t.image_weights) unroll_along_weights(g, k, t, opts);
    split_mid_reduce(g, k, t, opts);
    return opts;
  }
  if (k.num_reduces == 0) {  // elementwise: LLVM vectorizes the inner loop
    std::vector<Opt> phases = phase_opts(g, k, t);
    return phases.empty() ? chain_opts(g, k, t) : phases;
  }
  std::vector<const UOp*> loads = reduce_loads(k);
  if (k.global_ranges.empty() || loads.empty()) return {};
  // Accumulators in half the vector registers, leaving the rest for loads and broadcasts (BEAM's
  // choices on the real models settle there: 16 of AVX-512's 32 registers).
  int64_t budget = int64_t(t.vector_lanes) * std::max(1, t.vector_registers / 2);
  CpuChoice c;
  lanes_along_outputs(g, k, t, loads, c);
  lanes_across_narrow_rows(g, k, t, loads, c);
  if (c.vec_axis < 0) {
    lanes_along_reduces(g, k, t, c.opts);
    // Nothing fits: axes read as x / s and x % s, split by phase first (passes/output_phases.h),
    // may; the phases' copies take their share of the registers and of the body's expansion.
    // (Only then: an int8 matmul's packed words and attention's heads per KV head read so too,
    // and took their lanes and tiles without: split first, LLM decode ran 40% slower.)
    std::vector<Opt> phases = c.opts.empty() ? output_phases(g, k, t) : std::vector<Opt>{};
    if (phases.empty()) return c.opts;
    int64_t copies = 1;
    for (const Opt& o : phases) copies *= o.amount;
    TargetProfile share = t;
    share.vector_registers = std::max<int>(2, int(t.vector_registers / copies));
    share.max_expand = std::max<int>(1, int(t.max_expand / copies));
    std::vector<Opt> rest = heuristic_opts(g, apply_opts(g, k, phases, t), share, tile_runtime_axes);
    phases.insert(phases.end(), rest.begin(), rest.end());
    return phases;
  }
  if (!c.tiled) register_tiles(k, loads, budget, tile_runtime_axes, c);
  weights_inside(g, k, t, c.vec_axis, c.opts);
  return c.opts;
}

// Two reduces over single axes of one length whose values read neither each other nor the other's
// axis (a SwiGLU's gate and up projections) as reduces over one axis: split over a work-group,
// each thread then takes the same elements of both (the activations read once), where two split
// axes would give each reduce a few threads and every thread the other's work again.
Kernel share_reduce_axis(Graph& g, const Kernel& k) {
  std::vector<const UOp*> reduces;
  for (const UOp* u : toposort({k.ast}))
    if (u->op == Op::KReduce) reduces.push_back(u);
  if (reduces.size() != 2 || reduces[0]->src.size() != 2 || reduces[1]->src.size() != 2) return k;
  const UOp *a = reduces[0], *b = reduces[1], *ra = a->src[1], *rb = b->src[1];
  if (ra == rb || !ra->src[0]->is_const() || !rb->src[0]->is_const() || size_of(ra) != size_of(rb)) return k;
  if (depends_on(a->src[0], b) || depends_on(b->src[0], a) || depends_on(a->src[0], rb) || depends_on(b->src[0], ra))
    return k;
  Kernel out = k;
  out.ast = substitute(g, k.ast, {{rb, ra}});
  return out;
}

SizeVariant few_tokens_variant(Graph& g, const Kernel& original, const TargetProfile& t, const std::vector<Opt>& many) {
  SizeVariant v;
  Kernel k = share_reduce_axis(g, original);
  auto tokens = std::find_if(k.global_ranges.begin(), k.global_ranges.end(),
                             [](const UOp* r) { return r->src[0]->op == Op::Var; });
  if (!t.gpu || tokens == k.global_ranges.end()) return v;
  // (Kernels without a reduce keep their schedule, and get a variant only for the SWAP below.)
  std::vector<Opt> few = k.num_reduces ? gpu_heuristic_opts(g, k, t, (*tokens)->src[0]) : many;
  int i = int(tokens - k.global_ranges.begin());
  if (few == many && i == 0 && k.ast == original.ast) return v;
  // The token axis outermost: a launch then runs only its tokens' share of work-groups, not one
  // per token of the bound (launch_of: outer_var).
  if (i > 0) {
    for (Opt& o : few) o.axis = o.axis == 0 ? i : o.axis == i ? 0 : o.axis;
    few.insert(few.begin(), {OptOp::Swap, 0, i});
  }
  try {
    apply_opts(g, k, few, t);
  } catch (const Error&) {
    return v;
  }
  v.opts = std::move(few), v.var = (*tokens)->src[0], v.until = kFewTokens;
  if (k.ast != original.ast) v.kernel = k;
  return v;
}

SizeVariant large_size_variant(Graph& g, const Kernel& k, const TargetProfile& t, const std::vector<Opt>& small) {
  SizeVariant v;
  if (t.gpu || k.global_ranges.empty()) return v;
  const UOp* end = k.global_ranges[0]->src[0];
  std::vector<const UOp*> vars;
  for (const UOp* u : toposort({end}))
    if (u->op == Op::Var) vars.push_back(u);
  if (vars.size() == 1 && end != vars[0]) {  // a size derived from one VAR
    std::vector<Opt> with = heuristic_opts(g, k, t, /*tile_runtime_axes=*/true);
    auto tile =
        std::find_if(with.begin(), with.end(), [](const Opt& o) { return o.op == OptOp::Upcast && o.axis == 0; });
    if (tile == with.end() || with == small) return v;
    try {
      apply_opts(g, k, with, t);
    } catch (const Error&) {
      return v;
    }
    // (From 2 on: a variant from the smallest value would leave the other one no sizes.)
    for (int64_t x = 2; x <= vars[0]->var().max; ++x)
      if (eval_index(end, {{vars[0], x}}) >= tile->amount) {
        v.opts = with, v.var = vars[0], v.from = x;
        break;
      }
    return v;
  }
  if (k.global_ranges.size() < 2 || end->op != Op::Var) return v;
  const UOp* tokens = k.global_ranges[0];
  std::vector<const UOp*> loads = reduce_loads(k);
  if (std::all_of(loads.begin(), loads.end(), [&](const UOp* l) { return depends_on(l->src[1], tokens); })) return v;
  const int64_t kTokens = 4;
  if (size_of(tokens) % kTokens) return v;
  bool lanes = std::any_of(small.begin(), small.end(), [](const Opt& o) { return o.op == OptOp::Lanes; });
  if (!lanes) {
    // Vector lanes along the output (int8 matmuls over row-interleaved weights): one vector of
    // rows (`small` without its tile of rows) times a tile of tokens, a quarter of the vector
    // registers, with the token tiles as the loop inside each work item: every unpacked weight
    // vector serves that many tokens, and accumulators and unpacked words stay in registers.
    // (1B-shaped llama, Zen 4, prefill tok/s of q4_0 at 1 thread: 4 tokens x 4 row vectors as in
    // the small tile 640-950 (spilling), 8 x 2 840-1190, 8 x 1 1235, 16 x 1 1130.)
    if (std::any_of(small.begin(), small.end(), [](const Opt& o) { return o.op == OptOp::Upcast && o.axis == 0; }))
      return v;
    const int64_t tile = std::max<int64_t>(kTokens, t.vector_registers / 4);
    if (size_of(tokens) % tile) return v;
    std::vector<Opt> with;
    for (const Opt& o : small)
      if (!(o.op == OptOp::Upcast && o.axis == 1)) with.push_back(o);
    with.push_back({OptOp::Upcast, 0, tile});
    with.push_back({OptOp::Swap, 0, 1});
    try {
      apply_opts(g, k, with, t);
    } catch (const Error&) {
      return v;
    }
    v.opts = with, v.var = tokens->src[0], v.from = tile;
    return v;
  }
  bool tiled =
      std::any_of(small.begin(), small.end(), [](const Opt& o) { return o.op == OptOp::Upcast && o.axis < 2; });
  if (tiled) return v;
  // A tile of 4 tokens x R rows of the output, each lane group one vector wide where the
  // quantized blocks allow (else as wide as `small`): accumulators in half the vector registers,
  // so each weight vector serves 4 tokens and each token's vector R rows; then the token tiles
  // become the loop inside each work item (SWAP), so a tile of weight rows stays in cache while
  // every token tile of the run passes. (1B-shaped llama, AVX-512, f16 prefill: 56 tok/s
  // untiled, 91 with 8 x 1, 127-140 with 4 x 4, 245 with the token tiles inside.)
  auto tile = [&](std::vector<Opt> opts) -> std::vector<Opt> {
    int64_t vectors = 0;
    for (const Opt& o : opts)
      if (o.op == OptOp::Lanes) vectors += std::max<int64_t>(1, o.amount / t.vector_lanes);
    // Fewer rows where the body would expand too far (a K-quant's unrolled super-block).
    for (int64_t rows = std::max<int64_t>(1, t.vector_registers / 2 / (kTokens * vectors)); rows >= 1; --rows) {
      if (size_of(k.global_ranges[1]) % rows) continue;
      std::vector<Opt> with = opts;
      with.push_back({OptOp::Upcast, 0, kTokens});
      if (rows > 1) with.push_back({OptOp::Upcast, 1, rows});
      with.push_back({OptOp::Swap, 0, 1});
      try {
        apply_opts(g, k, with, t);
        return with;
      } catch (const Error&) {
      }
    }
    return {};
  };
  std::vector<Opt> narrow = small;
  for (Opt& o : narrow)
    if (o.op == OptOp::Lanes && o.amount > t.vector_lanes && o.amount % t.vector_lanes == 0) o.amount = t.vector_lanes;
  v.opts = tile(narrow);
  if (v.opts.empty()) v.opts = tile(small);
  v.var = tokens->src[0];
  v.from = kTokens;
  return v;
}

BoundVariant bound_variant(Graph& g, const Kernel& k) {
  BoundVariant v;
  const UOp* var = nullptr;
  bool short_loop = false;
  for (const UOp* u : toposort({k.ast})) {
    if (u->op == Op::Var) {
      if ((var && var != u) || g.var_value(u)) return v;  // one VAR, bound from the inputs
      var = u;
    }
    if (u->op == Op::Range && !u->src[0]->is_const() && u->src[0]->vmax <= 4) short_loop = true;
  }
  if (!var || !short_loop || var->var().max < 2) return v;
  std::unordered_map<const UOp*, const UOp*> at_max{{var, g.cint(var->var().max)}};
  auto bound = [&](const UOp* u) { return simplify(g, substitute(g, u, at_max)); };
  v.kernel = k;
  v.kernel.ast = bound(k.ast);
  for (const UOp*& r : v.kernel.global_ranges) r = bound(r);
  for (const UOp*& r : v.kernel.local_ranges) r = bound(r);
  list_vars_buffer(g, v.kernel);
  v.var = var;
  return v;
}

}  // namespace tgc
