#include "passes/fold_weights.h"

#include <algorithm>

#include "passes/kernel_eval.h"

namespace tgc {

namespace {
// Scalar evaluations a fold may take (the reference backend runs about 10^7 a second).
constexpr int64_t kMaxWork = int64_t(1) << 24;

// The kernel's scalar evaluations, or the elements of its inputs (which the reference backend
// holds as values), whichever is more.
int64_t work(const Graph& g, const Kernel& k) {
  int64_t n = 1, in = 0;
  for (const UOp* u : toposort({k.ast}))
    if (u->op == Op::Range) n *= std::max<int64_t>(1, range_extent(u));
  for (int64_t b : k.inputs) in += numel(g.buffer(b).shape);
  return std::max(n, in);
}
}  // namespace

void fold_weight_kernels(Graph& g, Schedule& s) {
  KernelEvaluator eval(g, {});
  std::vector<Kernel> kept;
  for (Kernel& k : s.kernels) {
    BufferInfo& out = g.buffer(k.output);
    bool weights_only = std::all_of(k.inputs.begin(), k.inputs.end(),
                                    [&](int64_t b) { return g.buffer(b).kind == BufferKind::Weight; });
    bool requested = std::count(s.outputs.begin(), s.outputs.end(), k.output) > 0;
    if (!weights_only || requested || out.kind != BufferKind::Intermediate || is_float(out.dtype) ||
        dtype_size(out.dtype) > 4 || work(g, k) > kMaxWork || !eval.run(k).empty()) {
      kept.push_back(std::move(k));
      continue;
    }
    HostTensor value(out.dtype, out.shape);
    std::vector<double> v = eval.result(k.output);
    for (size_t i = 0; i < v.size(); ++i) value.set(int64_t(i), v[i]);
    out.kind = BufferKind::Weight;
    out.data = Bytes::own(std::move(value.bytes));
  }
  s.kernels = std::move(kept);
  renumber_kernels(s);
}

}  // namespace tgc
