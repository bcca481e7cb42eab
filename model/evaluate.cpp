#include "model/evaluate.h"

#include "ir/interpret.h"

namespace tgc {

std::vector<HostTensor> evaluate(const Model& m, const std::map<int64_t, HostTensor>& feeds) {
  const Graph& g = *m.graph;
  std::vector<HostTensor> all = interpret(g, m.schedule_roots(), feeds);
  std::vector<int64_t> value(g.vars().size(), -1);  // per VAR slot: the value the model computed
  for (size_t v = 0, k = m.outputs.size(); v < g.vars().size(); ++v)
    if (g.var_value(g.vars()[v])) value[v] = int64_t(all[k++].get(0));
  std::vector<HostTensor> outs(all.begin(), all.begin() + int64_t(m.outputs.size()));
  for (size_t i = 0; i < outs.size() && i < m.output_dim_vars.size(); ++i) {
    const std::vector<int32_t>& dims = m.output_dim_vars[i];
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] < 0 || value[size_t(dims[k])] < 0) continue;
      // The leading `value` positions along axis k, as a dense tensor.
      HostTensor& t = outs[i];
      Shape s = t.shape;
      s[k] = value[size_t(dims[k])];
      HostTensor cut(t.dtype, s);
      int64_t inner = 1, outer = 1;
      for (size_t j = k + 1; j < s.size(); ++j) inner *= s[j];
      for (size_t j = 0; j < k; ++j) outer *= s[j];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t p = 0; p < s[k]; ++p)
          for (int64_t x = 0; x < inner; ++x)
            cut.set((o * s[k] + p) * inner + x, t.get((o * t.shape[k] + p) * inner + x));
      t = std::move(cut);
    }
  }
  return outs;
}

}  // namespace tgc
