#include "passes/precision.h"

#include <cmath>
#include <set>
#include <unordered_map>

#include "ir/error.h"
#include "ir/rewrite.h"
#include "ir/scalar.h"

namespace tgc {
namespace {

// f16's largest finite value: a weight past it would become an infinity.
constexpr double kHalfMax = 65504;

bool fits(DType half, const Bytes& data) {
  if (half != DType::F16) return true;
  for (size_t i = 0; i + 4 <= data.size(); i += 4) {
    double v = load_num(DType::F32, data.data() + i).f;
    if (std::isfinite(v) && std::abs(v) > kHalfMax) return false;
  }
  return true;
}

std::shared_ptr<const Bytes> narrowed(DType half, const Bytes& data) {
  std::vector<uint8_t> out(data.size() / 2);
  for (size_t i = 0; i + 4 <= data.size(); i += 4)
    store_num(half, out.data() + i / 2, load_num(DType::F32, data.data() + i));
  return Bytes::own(std::move(out));
}

// The f32 weights and intermediates that every kernel loads and stores as f32.
std::set<int64_t> narrowable(const Graph& g, const Schedule& s, DType half) {
  std::set<int64_t> ids, refused;
  for (size_t b = 0; b < g.num_buffers(); ++b) {
    const BufferInfo& info = g.buffer(int64_t(b));
    bool kind = info.kind == BufferKind::Intermediate || (info.kind == BufferKind::Weight && fits(half, *info.data));
    if (info.dtype == DType::F32 && kind) ids.insert(int64_t(b));
  }
  for (const Kernel& k : s.kernels)
    for (const UOp* u : toposort({k.ast})) {
      if (u->op == Op::Load && u->dtype != DType::F32) refused.insert(u->src[0]->ival());
      if (u->op == Op::Store && u->src[2]->dtype != DType::F32) refused.insert(u->src[0]->ival());
    }
  for (int64_t b : refused) ids.erase(b);
  return ids;
}

}  // namespace

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return {};
  if (name == "fp16") return {DType::F16};
  if (name == "bf16") return {DType::BF16};
  if (name == "tf32") return {DType::F32, true};
  throw Error("--precision " + name + ": fp32, fp16, bf16 or tf32");
}

void store_in_half(Graph& g, Schedule& s, DType half) {
  if (half == DType::F32) return;
  std::set<int64_t> ids = narrowable(g, s, half);
  for (int64_t b : ids) {
    BufferInfo& info = g.buffer(b);
    if (info.data) info.data = narrowed(half, *info.data);
    info.dtype = half;
  }
  for (Kernel& k : s.kernels)
    k.ast = rebuild(g, k.ast, [&](const UOp* u, std::vector<const UOp*>& src) -> const UOp* {
      if ((u->op != Op::Load && u->op != Op::Store) || !ids.count(u->src[0]->ival())) return nullptr;
      src[0] = g.make(Op::Buffer, half, {}, u->src[0]->ival());
      if (u->op == Op::Load) return g.make(Op::Cast, DType::F32, {g.make(Op::Load, half, src, u->arg)});
      src[2] = g.make(Op::Cast, half, {src[2]});
      return g.make(Op::Store, half, src, u->arg);
    });
}

namespace {
// The f16 form of an f32 value: a widened f16 value, or a constant f16 can hold (rounded).
const UOp* half_form(Graph& g, const UOp* u) {
  if (u->op == Op::Cast && u->src[0]->dtype == DType::F16) return u->src[0];
  if (u->op == Op::Const && (!std::isfinite(u->fval()) || std::abs(u->fval()) <= kHalfMax))
    return g.cfloat(round_float(DType::F16, u->fval()), DType::F16);
  return nullptr;
}

bool computes_in_half(Op op) {
  switch (op) {
    case Op::Add:
    case Op::Mul:
    case Op::Max:
    case Op::Neg:
    case Op::MulAcc:
    case Op::Where:
    case Op::CmpLt:
    case Op::CmpNe: return true;
    default: return false;
  }
}
}  // namespace

void compute_in_half(Graph& g, Schedule& s) {
  for (Kernel& k : s.kernels)
    k.ast = rebuild(g, k.ast, [&](const UOp* u, std::vector<const UOp*>& src) -> const UOp* {
      // A narrowing of a widened f16 value is that value (the store of an f16 result).
      if (u->op == Op::Cast && u->dtype == DType::F16 && src[0]->op == Op::Cast && src[0]->src[0]->dtype == DType::F16)
        return src[0]->src[0];
      if (!computes_in_half(u->op) || (u->dtype != DType::F32 && u->dtype != DType::Bool)) return nullptr;
      // A square stays f32: a norm's squares overflow f16 past 256.
      if (u->op == Op::Mul && src[0] == src[1]) return nullptr;
      std::vector<const UOp*> half = src;
      bool widened = false;  // an operand that is not a constant (those fold elsewhere)
      for (size_t i = 0; i < src.size(); ++i) {
        if (src[i]->dtype != DType::F32) continue;  // WHERE's condition
        half[i] = half_form(g, src[i]);
        if (!half[i]) return nullptr;
        widened |= src[i]->op == Op::Cast;
      }
      if (!widened) return nullptr;
      if (u->dtype == DType::Bool) return g.make(u->op, DType::Bool, half, u->arg);
      return g.make(Op::Cast, DType::F32, {g.make(u->op, DType::F16, half, u->arg)});
    });
}

void widen_reused_halves(Graph& g, Schedule& s, const TargetProfile& t) {
  bool any = false;  // (most models have no 16-bit buffer: nothing to walk then)
  for (size_t b = 0; b < g.num_buffers() && !any; ++b) any = is_half(g.buffer(int64_t(b)).dtype);
  if (!any) return;
  // CAST(f32, LOAD(16-bit weight or intermediate)) where the load's index stays put along output
  // ranges of kReuseToWiden positions or more (of a fixed size: a run-time dim may be 1).
  auto reused = [&](const Kernel& k, const UOp* u) {
    if (u->op != Op::Cast || u->dtype != DType::F32 || u->src[0]->op != Op::Load || !is_half(u->src[0]->dtype))
      return false;
    const UOp* load = u->src[0];
    const BufferInfo& b = g.buffer(load->src[0]->ival());
    bool small_weight = b.kind == BufferKind::Weight && 2 * int64_t(b.data->size()) <= t.l2_bytes;
    if (!small_weight && b.kind != BufferKind::Intermediate) return false;
    int64_t reuse = 1;
    for (const UOp* r : k.global_ranges)
      if (r->src[0]->is_const() && !depends_on(load->src[1], r)) reuse *= range_extent(r);
    return reuse >= kReuseToWiden;
  };
  // Intermediates reused so, and every one that fits in L2 (where conversions cost more than
  // the bytes they save).
  std::set<int64_t> intermediates;
  for (size_t b = 0; b < g.num_buffers(); ++b) {
    const BufferInfo& info = g.buffer(int64_t(b));
    if (info.kind == BufferKind::Intermediate && is_half(info.dtype) && 4 * numel(info.shape) <= t.l2_bytes)
      intermediates.insert(int64_t(b));
  }
  for (const Kernel& k : s.kernels)
    for (const UOp* u : toposort({k.ast}))
      if (reused(k, u) && g.buffer(u->src[0]->src[0]->ival()).kind == BufferKind::Intermediate)
        intermediates.insert(u->src[0]->src[0]->ival());
  std::unordered_map<int64_t, int64_t> twin;  // 16-bit weight -> its f32 twin
  auto twin_of = [&](int64_t b) {
    if (auto it = twin.find(b); it != twin.end()) return it->second;
    const BufferInfo& info = g.buffer(b);
    std::vector<uint8_t> wide(info.data->size() * 2);
    for (size_t i = 0; i + 2 <= info.data->size(); i += 2)
      store_num(DType::F32, wide.data() + 2 * i, load_num(info.dtype, info.data->data() + i));
    return twin[b] = g.add_buffer(
               {info.name + "_f32", DType::F32, info.shape, BufferKind::Weight, Bytes::own(std::move(wide))});
  };
  for (int64_t b : intermediates) g.buffer(b).dtype = DType::F32;
  auto wide_buffer = [&](int64_t b) { return g.make(Op::Buffer, DType::F32, {}, b); };
  for (Kernel& k : s.kernels) {
    std::vector<int64_t> twins;
    k.ast = rebuild(g, k.ast, [&](const UOp* u, std::vector<const UOp*>& src) -> const UOp* {
      int64_t b = u->op == Op::Load || u->op == Op::Store ? u->src[0]->ival() : -1;
      if (reused(k, u) && g.buffer(u->src[0]->src[0]->ival()).kind == BufferKind::Weight) {
        std::vector<const UOp*> load = src[0]->src;  // (a weight's load is rebuilt unchanged)
        int64_t t = twin_of(u->src[0]->src[0]->ival());
        load[0] = wide_buffer(t);
        twins.push_back(t);
        return g.make(Op::Load, DType::F32, load, u->src[0]->arg);
      }
      if (u->op == Op::Cast && u->dtype == DType::F32 && u->src[0]->op == Op::Load &&
          intermediates.count(u->src[0]->src[0]->ival()))
        return src[0]->src[0];  // the f32 load under the narrowing below
      if (u->op == Op::Load && intermediates.count(b)) {
        src[0] = wide_buffer(b);
        return g.make(Op::Cast, u->dtype, {g.make(Op::Load, DType::F32, src, u->arg)});
      }
      if (u->op == Op::Store && intermediates.count(b)) {
        // The value as computed, in f32: the narrowing to 16 bits goes with the 16-bit buffer.
        const UOp* v = src[2];
        src[0] = wide_buffer(b);
        src[2] = v->op == Op::Cast && v->src[0]->dtype == DType::F32 ? v->src[0] : g.make(Op::Cast, DType::F32, {v});
        return g.make(Op::Store, DType::F32, src, u->arg);
      }
      return nullptr;
    });
    std::vector<int64_t> weights = k.inputs;  // (replace_input edits k.inputs)
    for (int64_t w : weights)
      if (twin.count(w) && std::count(twins.begin(), twins.end(), twin.at(w))) replace_input(k, w, twin.at(w));
  }
}

}  // namespace tgc
