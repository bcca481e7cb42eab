#include "ir/interpret.h"

#include <cmath>
#include <limits>
#include <unordered_map>

#include "ir/error.h"
#include "ir/scalar.h"

namespace tgc {

namespace {
constexpr int kMaxRank = 32;

Num reduce_identity(Op op, DType t) {
  switch (op) {
    case Op::Add: return Num::of(t, 0);
    case Op::Mul: return Num::of(t, 1);
    default:  // Max
      if (is_float(t)) return {-std::numeric_limits<double>::infinity(), 0};
      return {0, is_unsigned(t) ? 0 : std::numeric_limits<int64_t>::min()};
  }
}

int64_t linear_index(const Shape& s, const int64_t* idx) {
  int64_t lin = 0;
  for (size_t i = 0; i < s.size(); ++i) lin = lin * s[i] + idx[i];
  return lin;
}

class Interpreter {
 public:
  Interpreter(const Graph& g, const std::map<int64_t, HostTensor>& inputs) : g_(g), inputs_(inputs) {}

  std::vector<HostTensor> run(const std::vector<const UOp*>& outputs) {
    std::vector<const UOp*> order = toposort(outputs);
    std::unordered_map<const UOp*, int> uses;
    for (const UOp* u : order)
      for (const UOp* s : u->src) uses[s]++;
    for (const UOp* r : outputs) uses[r] += 2;
    // Materialize reduces and shared compute nodes, in dependency order so that computing one
    // element never needs to materialize another node on the way.
    for (const UOp* u : order) {
      if (u->shape.size() > kMaxRank) throw Error("interpret: rank above " + std::to_string(kMaxRank));
      if (is_compute(u->op) && (u->op == Op::Reduce || uses[u] != 1)) materialize(u);
    }
    std::vector<HostTensor> result;
    for (const UOp* r : outputs) {
      HostTensor h(r->dtype, r->shape);
      int64_t idx[kMaxRank] = {};
      for (int64_t i = 0; i < h.numel(); ++i) {
        unravel(r->shape, i, idx);
        store_num(r->dtype, &h.bytes[size_t(i * dtype_size(r->dtype))], at(r, idx));
      }
      result.push_back(std::move(h));
    }
    return result;
  }

 private:
  static void unravel(const Shape& s, int64_t lin, int64_t* idx) {
    for (size_t i = s.size(); i-- > 0;) {
      idx[i] = lin % s[i];
      lin /= s[i];
    }
  }

  void materialize(const UOp* u) {
    std::vector<Num> data(static_cast<size_t>(numel(u->shape)));
    int64_t idx[kMaxRank] = {};
    for (size_t i = 0; i < data.size(); ++i) {
      unravel(u->shape, int64_t(i), idx);
      data[i] = compute(u, idx);
    }
    realized_[u] = std::move(data);
  }

  const HostTensor& buffer_data(int64_t id) {
    const BufferInfo& b = g_.buffer(id);
    if (auto it = inputs_.find(id); it != inputs_.end()) {
      if (it->second.shape != b.shape || it->second.dtype != b.dtype)
        throw Error("interpret: input '" + b.name + "' expects " + std::string(dtype_name(b.dtype)) +
                    shape_str(b.shape) + ", got " + std::string(dtype_name(it->second.dtype)) +
                    shape_str(it->second.shape));
      return it->second;
    }
    if (!b.data && b.kind != BufferKind::State) throw Error("interpret: no data for buffer '" + b.name + "'");
    auto [it, _] = weights_.try_emplace(id);
    if (it->second.bytes.empty()) {
      it->second = HostTensor(b.dtype, b.shape);
      if (b.data) it->second.bytes = b.data->to_vector();  // a state buffer starts at zero
    }
    return it->second;
  }

  Num at(const UOp* u, const int64_t* idx) {
    if (auto it = realized_.find(u); it != realized_.end()) return it->second[size_t(linear_index(u->shape, idx))];
    return compute(u, idx);
  }

  Num compute(const UOp* u, const int64_t* idx) {
    int64_t sidx[kMaxRank];
    const Shape& out = u->shape;
    if (is_elementwise(u->op)) {
      Num args[3];
      for (size_t i = 0; i < u->src.size(); ++i) args[i] = at(u->src[i], idx);
      DType in = u->op == Op::Where ? u->src[1]->dtype : u->src[0]->dtype;
      return eval_elementwise(u->op, u->dtype, in, args);
    }
    switch (u->op) {
      case Op::Buffer: {
        const HostTensor& h = buffer_data(u->ival());
        return load_num(h.dtype, &h.bytes[size_t(linear_index(out, idx) * dtype_size(h.dtype))]);
      }
      case Op::Const: return is_float(u->dtype) ? Num{u->fval(), 0} : Num{0, u->ival()};
      case Op::Contiguous: return at(u->src[0], idx);
      case Op::Var: {  // its value from the vars buffer, given as an input
        auto it = inputs_.find(g_.vars_buffer());
        if (it == inputs_.end()) throw Error("interpret: no value for run-time dim '" + u->var().name + "'");
        return load_num(DType::I64, &it->second.bytes[size_t(g_.var_slot(u) * 8)]);
      }
      case Op::Assign: {  // the state buffer with the value written at the offset along the axis
        const UOp* v = u->src[1];
        int64_t axis = u->ival(), off = at(u->src[2], idx).i;
        std::copy(idx, idx + out.size(), sidx);
        sidx[axis] -= off;
        if (sidx[axis] >= 0 && sidx[axis] < v->shape[size_t(axis)]) return at(v, sidx);
        return at(u->src[0], idx);
      }
      case Op::Reduce: {
        const UOp* s = u->src[0];
        const auto& ax = u->reduce().axes;
        Op rop = u->reduce().op;
        Num acc = reduce_identity(rop, u->dtype);
        std::copy(idx, idx + out.size(), sidx);
        int64_t count = 1;
        for (int64_t a : ax) count *= s->shape[size_t(a)], sidx[a] = 0;
        for (int64_t n = 0; n < count; ++n) {
          Num args[2] = {acc, at(s, sidx)};
          acc = eval_elementwise(rop, u->dtype, u->dtype, args);
          for (size_t k = ax.size(); k-- > 0;) {  // odometer over the reduced axes
            if (++sidx[ax[k]] < s->shape[size_t(ax[k])]) break;
            sidx[ax[k]] = 0;
          }
        }
        return acc;
      }
      case Op::Reshape: {
        unravel(u->src[0]->shape, linear_index(out, idx), sidx);
        return at(u->src[0], sidx);
      }
      case Op::Permute: {
        const auto& p = u->ints();
        for (size_t i = 0; i < p.size(); ++i) sidx[p[i]] = idx[i];
        return at(u->src[0], sidx);
      }
      case Op::Expand: {
        const Shape& in = u->src[0]->shape;
        for (size_t i = 0; i < in.size(); ++i) sidx[i] = in[i] == 1 ? 0 : idx[i];
        return at(u->src[0], sidx);
      }
      case Op::Pad: {
        const auto& p = u->ints();
        const Shape& in = u->src[0]->shape;
        for (size_t i = 0; i < in.size(); ++i) {
          sidx[i] = idx[i] - p[2 * i];
          if (sidx[i] < 0 || sidx[i] >= in[i]) return Num{};
        }
        return at(u->src[0], sidx);
      }
      case Op::Shrink: {
        const auto& p = u->ints();
        for (size_t i = 0; i < out.size(); ++i) sidx[i] = idx[i] + p[2 * i];
        return at(u->src[0], sidx);
      }
      case Op::Flip: {
        const auto& f = u->ints();
        for (size_t i = 0; i < out.size(); ++i) sidx[i] = f[i] ? out[i] - 1 - idx[i] : idx[i];
        return at(u->src[0], sidx);
      }
      default: throw Error("interpret: cannot evaluate " + std::string(op_name(u->op)));
    }
  }

  const Graph& g_;
  const std::map<int64_t, HostTensor>& inputs_;
  std::unordered_map<const UOp*, std::vector<Num>> realized_;
  std::unordered_map<int64_t, HostTensor> weights_;
};
}  // namespace

std::vector<HostTensor> interpret(const Graph& g, const std::vector<const UOp*>& outputs,
                                  const std::map<int64_t, HostTensor>& inputs) {
  return Interpreter(g, inputs).run(outputs);
}

}  // namespace tgc
