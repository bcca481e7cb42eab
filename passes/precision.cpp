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
  for (size_t i = 0; i + 4 <= data.size(); i += 4) store_num(half, out.data() + i / 2, load_num(DType::F32, data.data() + i));
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

DType storage_type(const std::string& precision) {
  if (precision == "fp32") return DType::F32;
  if (precision == "fp16") return DType::F16;
  if (precision == "bf16") return DType::BF16;
  throw Error("--precision " + precision + ": fp32, fp16 or bf16");
}

void store_in_half(Graph& g, Schedule& s, DType half) {
  if (half == DType::F32) return;
  std::set<int64_t> ids = narrowable(g, s, half);
  for (int64_t b : ids) {
    BufferInfo& info = g.buffer(b);
    if (info.data) info.data = narrowed(half, *info.data);
    info.dtype = half;
  }
  auto narrow = [&](const UOp* u) { return u->op == Op::Buffer && ids.count(u->ival()) ? g.make(Op::Buffer, half, {}, u->ival()) : nullptr; };
  for (Kernel& k : s.kernels) {
    std::unordered_map<const UOp*, const UOp*> done;
    for (const UOp* u : toposort({k.ast})) {
      std::vector<const UOp*> src;
      for (const UOp* x : u->src) src.push_back(done.at(x));
      const UOp* out = with_src(g, u, src);
      if (const UOp* buffer = u->op == Op::Load || u->op == Op::Store ? narrow(u->src[0]) : nullptr) {
        src[0] = buffer;
        if (u->op == Op::Load) {
          out = g.make(Op::Cast, DType::F32, {g.make(Op::Load, half, src, u->arg)});
        } else {
          src[2] = g.make(Op::Cast, half, {src[2]});
          out = g.make(Op::Store, half, src, u->arg);
        }
      }
      done[u] = out;
    }
    k.ast = done.at(k.ast);
  }
}

}  // namespace tgc
