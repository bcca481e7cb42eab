#include "model/dynamic_dims.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <unordered_map>

#include "ir/error.h"
#include "ir/print.h"
#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "model/dim_axes.h"

namespace tgc {
namespace {

std::vector<const UOp*> roots(const std::vector<NamedTensor>& v) {
  std::vector<const UOp*> r;
  for (const NamedTensor& t : v) r.push_back(t.tensor.uop());
  return r;
}

Model traced(const ModelSource& src, std::map<std::string, int64_t> sizes, const std::string& key, int64_t size) {
  sizes[key] = size;
  return src.build(sizes);
}

// --dynamic: the dims named become VARs, the graph is traced at their maxima (see the header).
// Whether an error of the dim rules names the step at which dim `name` can be bound
// (dim_axes.cpp, step_hint: "...: --dynamic NAME=MAX/STEP").
bool names_step(const std::string& msg, const std::string& name) {
  return msg.find(": --dynamic " + printable(name) + "=") != std::string::npos;
}

// The model does not build with VAR's dim at `other` (an Add of a branch upsampled from a strided
// one to the full-size one: sizes that agree at multiples of 4 only, 17 being none). Traced at a
// size that is a multiple of a power of two dividing the bound instead, the rules may name the
// step that makes the sizes agree (dim_axes.cpp); the model's own error stays first in the
// message. Rethrows `e` where there is no such step.
[[noreturn]] void fail_with_step_hint(const Error& e, const ModelSource& src,
                                      const std::map<std::string, int64_t>& at_max, Graph& g,
                                      const std::vector<const UOp*>& roots_m, const UOp* var, int64_t other) {
  const std::string& name = var->var().name;
  const int64_t step = g.var_step(var), max = var->var().max * step;
  int64_t q = std::min<int64_t>(max & -max, 64);
  while (q > 1 && max / 2 / q < 1) q /= 2;
  int64_t again = (max / 2) / q * q;
  std::string why = e.what(), path = printable(src.path);
  if (why.rfind(path + ": ", 0) == 0) why = why.substr(path.size() + 2);
  if (g.var_value(var) || q < 2 || again % step != 0 || again == other) throw e;
  try {
    Model b2 = traced(src, at_max, name, again);
    var_extents(g, roots_m, var, *b2.graph, roots(b2.outputs), again);
  } catch (const Error& e2) {
    if (names_step(e2.what(), name))
      throw Error("the model does not build at " + name + "=" + std::to_string(other) + " (" + why + "); " + e2.what());
  }
  throw e;
}

Model import_with_vars(const ModelSource& src) {
  const std::string& path = src.path;
  const std::vector<UnknownDim>& unknown = src.unknown;
  std::map<std::string, int64_t> at_max;
  for (const auto& [name, max] : src.dynamic) {
    bool found = std::find(src.internal.begin(), src.internal.end(), name) != src.internal.end();
    for (const UnknownDim& d : unknown) found = found || d.key == name;
    if (!found) throw Error(path + ": --dynamic " + name + ": no input has a symbolic dim of that name without a size");
    int64_t step = src.dynamic_step.count(name) ? src.dynamic_step.at(name) : 1;
    if (max < 2 * step)
      throw Error(path + ": --dynamic " + name + "=" + std::to_string(max) + ": the upper bound must be at least 2" +
                  (step > 1 ? " steps" : ""));
    at_max[name] = max;
  }
  Model m = src.build(at_max);  // an error lists the dims still without a size
  Graph& g = *m.graph;
  std::vector<const UOp*> roots_m = roots(m.outputs);
  for (const NamedTensor& t : m.inputs) m.input_dim_vars.push_back(std::vector<int32_t>(t.tensor.shape().size(), -1));
  for (const NamedTensor& t : m.outputs) m.output_dim_vars.push_back(std::vector<int32_t>(t.tensor.shape().size(), -1));
  m.output_dim_sizes.resize(m.outputs.size());
  std::vector<std::tuple<const UOp*, int64_t, const UOp*>> axes;     // (node, axis, run-time size)
  std::vector<std::tuple<const UOp*, int64_t, const UOp*>> offsets;  // (slice or pad, axis, run-time start)
  std::unordered_map<const UOp*, const UOp*> counts;                 // a mean's 1/count constant -> the count
  for (const UOp* var : g.vars()) {
    const std::string& name = var->var().name;
    // The dim is step * the VAR (--dynamic NAME=MAX/STEP), max its largest size.
    const int64_t step = g.var_step(var), max = var->var().max * step;
    const UOp* dim = simplify(g, Sym(g).mul(var, step));
    // A size the model computes from data (onnx_ops_data.cpp) is traced the same way.
    const bool data = g.var_value(var) != nullptr;
    const std::string what = data ? "the size '" + name + "' that the model computes from data" : "dim '" + name + "'";
    const std::string fix = data ? "" : "; give it a size with --input-shape";
    VarExtents ext;
    try {
      // The second trace about halfway: sizes derived through strided windows and means over
      // them differ from the bound's there (at max - 1 a stride-2 size often does not). A bound
      // with a power-of-two factor p >= 8 (320 = 5 * 64: an image size a detector wants in
      // multiples of 32) is traced at a multiple of p, which such models need.
      int64_t p = max & -max, other = max / 2 + 1 < max ? max / 2 + 1 : max - 1;
      if (p >= 8 && (max / 2 + 1) / p * p >= p) other = (max / 2 + 1) / p * p;
      if (step > 1) other = std::max(other / step, int64_t(1)) * step;
      // A size computed from data is laid out two past its largest value n (onnx_ops_data.cpp):
      // at n + 1 no axis of its consumers has the size of the one it was taken from.
      if (data) other = max - 1;
      Model b;
      try {
        b = traced(src, at_max, name, other);
      } catch (const Error& e) {
        fail_with_step_hint(e, src, at_max, g, roots_m, var, other);
      }
      ext = var_extents(g, roots_m, var, *b.graph, roots(b.outputs), other);
    } catch (const Error& e) {
      // The rules may name the step at which the dim can be bound (dim_axes.cpp, step_hint).
      std::string msg = e.what();
      throw Error(path + ": " + what + " cannot be bound at run time: " + msg +
                  (names_step(msg, name) && !data ? "; or give it a size with --input-shape" : fix));
    }
    // Loops over the dim's axes (kernel outputs, reduces) stop at their run-time size, and pads
    // over them mask with it.
    for (const auto& [u, extents] : ext.extent)
      for (size_t ax = 0; ax < extents.size(); ++ax)
        if (extents[ax] && !extents[ax]->is_const()) axes.emplace_back(u, int64_t(ax), extents[ax]);  // not a marker
    for (const auto& [node_axis, start] : ext.offset) offsets.emplace_back(node_axis.first, node_axis.second, start);
    if (!data) g.set_var_min(var, std::max(g.var_min(var), ext.min_value));  // (a count from data may be 0)
    // A mean's 1 / count becomes 1 / the count computed from the VAR.
    // A mean over several run-time dims: each analysis counts the others' axes at their bounds,
    // so the counts multiply, over the count at the bounds once for each extra dim.
    for (const auto& [c, count] : ext.reciprocal_of) {
      auto [it, fresh] = counts.try_emplace(c, count);
      if (!fresh) it->second = simplify(g, Sym(g).idiv(Sym(g).mul(it->second, count), std::llround(1.0 / c->fval())));
    }
    // The runtime binds inputs' dims to the VAR itself; an output's dim is the VAR or a size
    // derived from it, which the artifact looks up in a table of its values (1..max).
    auto mark = [&](const std::vector<NamedTensor>& ts, std::vector<std::vector<int32_t>>& slots, bool outputs) {
      for (size_t i = 0; i < ts.size(); ++i)
        for (size_t k = 0; k < slots[i].size(); ++k) {
          const UOp* e = ext.extent.at(ts[i].tensor.uop())[k];
          if (!e) continue;
          if (outputs && e != dim && e != ext.broadcast && !e->is_const()) {
            if (data)
              throw Error(path + ": output '" + ts[i].name + "' dim " + std::to_string(k) + " is " + print_expr(g, e) +
                          ", derived from " + what + " (not supported yet)");
            if (slots[i][k] != -1)
              throw Error(path + ": '" + ts[i].name + "' dim " + std::to_string(k) + " follows two run-time dims");
            std::vector<int64_t>& table = m.output_dim_sizes[i];
            slots[i][k] = -2 - int32_t(table.size());
            table.push_back(g.var_slot(var));
            for (int64_t v = 1; v <= var->var().max; ++v)
              table.push_back(std::max<int64_t>(0, eval_index(e, {{var, v}})));
            continue;
          }
          if (e != dim)
            throw Error(path + ": " + what + " cannot be bound at run time: '" + ts[i].name + "' dim " +
                        std::to_string(k) + " has run-time size " +
                        (e == ext.broadcast ? std::string("of a broadcast") : print_expr(g, e)) +
                        ", not the dim itself (not supported yet)" + fix);
          if (slots[i][k] != -1)
            throw Error(path + ": '" + ts[i].name + "' dim " + std::to_string(k) + " follows two run-time dims");
          slots[i][k] = int32_t(g.var_slot(var));
        }
    };
    mark(m.inputs, m.input_dim_vars, false);
    mark(m.outputs, m.output_dim_vars, true);
  }
  // The graph with those constants replaced: every node that reads one is rebuilt.
  std::unordered_map<const UOp*, const UOp*> sized;  // constant -> its run-time value
  for (const auto& [c, count] : counts) sized[c] = g.make(Op::Recip, c->dtype, {g.make(Op::Cast, c->dtype, {count})});
  std::unordered_map<const UOp*, const UOp*> now(sized);
  if (!sized.empty()) {
    for (const UOp* u : toposort(roots_m)) {
      if (now.count(u)) continue;
      std::vector<const UOp*> s;
      for (const UOp* x : u->src) s.push_back(now.at(x));
      const UOp* r = with_src(g, u, std::move(s));
      if (const std::string* o = g.origin(u); o && r != u) g.set_origin(r, *o);
      now[u] = r;
    }
    for (NamedTensor& o : m.outputs) o.tensor = Tensor(g, now.at(o.tensor.uop()));
    for (const UOp* v : g.vars())
      if (const UOp* x = g.var_value(v); x && now.count(x)) g.set_var_value(v, now.at(x));
    for (Graph::BranchSelect& b : g.branch_selects())
      if (now.count(b.select)) b.select = now.at(b.select);
  }
  for (const auto& [u, ax, extent] : axes) g.set_var_axis(now.count(u) ? now.at(u) : u, ax, extent);
  for (const auto& [u, ax, start] : offsets) g.set_var_offset(now.count(u) ? now.at(u) : u, ax, start);
  return m;
}

}  // namespace

Model build_dynamic_model(const ModelSource& src) {
  const std::string& path = src.path;
  const std::vector<UnknownDim>& unknown = src.unknown;
  if (!src.dynamic.empty()) return import_with_vars(src);
  if (unknown.empty() || unknown[0].axis != 0) {
    Model m = src.build({});  // sized, or an error listing the dims
    // Sizes computed from data are VARs the model binds itself.
    return !m.computes_sizes() ? std::move(m) : import_with_vars(src);
  }
  const UnknownDim& batch = unknown[0];
  std::string name = batch.param.empty() ? "batch" : batch.param;
  std::string inputs;
  bool others = false;
  for (const UnknownDim& d : unknown) {
    if (d.axis == 0 && d.key == batch.key)
      inputs += (inputs.empty() ? "'" : ", '") + d.input + "'";
    else
      others = true;
  }
  std::string what = "dim '" + name + "' (axis 0 of " + inputs + ")";
  if (others) {
    try {
      src.build({});
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (" + what + " can stay dynamic: write it as ?)");
    }
  }
  std::vector<int> axes;
  Model a = traced(src, {}, batch.key, kBatchTraceA);
  try {
    Model b = traced(src, {}, batch.key, kBatchTraceB);
    axes = batch_axes(*a.graph, roots(a.outputs), kBatchTraceA, *b.graph, roots(b.outputs), kBatchTraceB);
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] > 0)
        throw Error("output '" + a.outputs[i].name + "' has the batch at axis " + std::to_string(axes[i]) +
                    ", not first");
  } catch (const Error& e) {
    throw Error(path + ": " + what + " cannot be bound at run time: " + e.what() +
                "; give it a size with --input-shape");
  }
  Model m = traced(src, {}, batch.key, 1);
  if (m.computes_sizes())
    throw Error(path + ": " + what +
                " cannot be bound at run time: the model computes sizes from data too (not supported together yet); "
                "give it a size with --input-shape");
  m.batch_dim = name;
  for (const NamedTensor& in : m.inputs) {
    bool batched = false;
    for (const UnknownDim& d : unknown) batched = batched || d.input == in.name;
    m.batched_inputs.push_back(batched);
  }
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    // The runtime reports outputs as the traces have them, with the batch size first.
    Shape want = a.outputs[i].tensor.shape();
    if (axes[i] == 0) want[0] = 1;
    if (m.outputs[i].tensor.shape() != want)
      throw Error(path + ": " + what + " cannot be bound at run time: output '" + m.outputs[i].name + "' has shape " +
                  shape_str(m.outputs[i].tensor.shape()) + " at batch size 1, not " + shape_str(want) +
                  "; give it a size with --input-shape");
    m.batched_outputs.push_back(axes[i] == 0);
  }
  return m;
}

}  // namespace tgc
