// Control flow. tgc compiles one static graph, so If is resolved at import: folded when its
// condition is a compile-time constant, otherwise both branches are in the graph and the outputs
// selected elementwise (which needs the branches to agree on each output's shape and type); the
// CPU runtime then runs only the side taken (passes/branch_guards).
#include <algorithm>
#include <optional>

#include "frontend/onnx/onnx_ops.h"
#include "ir/symbolic.h"

namespace tgc {

namespace {

// A branch of an If on a run-time condition that cannot be built for the inputs at the bound of
// their run-time dim (Silero VAD's 8 kHz branch, 256 samples, at 512): built for the inputs cut
// to the largest size where it builds (found by halving, then bisecting), the cut's extent being
// the run-time size up to there (model/dim_axes). `runs` says when the side may be taken.
struct CutBranch {
  Outs outs;
  Tensor runs;  // bool scalar: the run-time size is at most the cut
  std::string why;
};
std::optional<CutBranch> branch_on_cut_inputs(Ctx& c, const onnx::GraphProto& g, const std::string& attr) {
  if (!c.runtime_inputs || c.runtime_inputs->empty() || !c.options) return std::nullopt;
  std::string key;
  for (const auto& [name, in] : *c.runtime_inputs)
    for (const auto& [axis, k] : in.axes) {
      if (!key.empty() && k != key) return std::nullopt;  // one run-time dim at most
      key = k;
    }
  const auto& first = c.runtime_inputs->begin()->second;
  int64_t n = first.tensor.dim(first.axes[0].first);
  int64_t step = c.options->dynamic_step.count(key) ? c.options->dynamic_step.at(key) : 1;
  auto build = [&](int64_t size) -> std::optional<Outs> {
    std::map<std::string, Tensor> outer;
    for (const auto& [name, in] : *c.runtime_inputs) {
      std::vector<std::pair<int64_t, int64_t>> b;
      for (int64_t d : in.tensor.shape()) b.push_back({0, d});
      for (const auto& [axis, k] : in.axes) b[size_t(axis)].second = size;
      outer[name] = in.tensor.shrink(b);
    }
    try {
      return c.run_subgraph(g, attr, {}, outer);
    } catch (const Error&) {
      return std::nullopt;
    }
  };
  int64_t good = n / 2 / step * step;
  std::optional<Outs> outs;
  for (; good >= step && !(outs = build(good)); good = good / 2 / step * step) {
  }
  if (!outs) return std::nullopt;
  for (int64_t bad = n; bad - good > step;) {
    int64_t mid = (good + bad) / 2 / step * step;
    if (mid <= good) break;
    if (std::optional<Outs> o = build(mid))
      good = mid, outs = std::move(o);
    else
      bad = mid;
  }
  const UOp* var = c.g.find_var(key);
  if (!var) return std::nullopt;
  Tensor size = Tensor::index_value(c.g, Sym(c.g).mul(var, step), DType::I64);
  return CutBranch{std::move(*outs), size.le(Tensor::full(c.g, {}, double(good), DType::I64)),
                   "If '" + c.node.name() + "' runs " + attr + " only for " + key + " up to " + std::to_string(good)};
}

Outs if_op(Ctx& c) {
  const onnx::GraphProto* then_g = c.attr_graph("then_branch");
  const onnx::GraphProto* else_g = c.attr_graph("else_branch");
  if (!then_g || !else_g) c.fail("If needs then_branch and else_branch graphs");
  const Tensor& cond = c.in(0);
  if (cond.numel() != 1) c.fail("condition has shape " + shape_str(cond.shape()) + ", expected one element");
  if (c.is_constant(0)) {
    bool taken = c.floats(0).at(0) != 0;
    return taken ? c.run_subgraph(*then_g, "then_branch", {}, {}) : c.run_subgraph(*else_g, "else_branch", {}, {});
  }
  // Both branches are computed; one that cannot even be built for these shapes (it would fail
  // at run time too) is an error that names the inputs to fix, unless it builds on the inputs
  // cut shorter along their run-time dim.
  std::string inputs;
  for (const UOp* u : toposort({cond.uop()}))
    if (u->op == Op::Buffer && !c.g.buffer(u->ival()).data)
      inputs += (inputs.empty() ? "'" : ", '") + c.g.buffer(u->ival()).name + "'";
  Graph::BranchSelect sel;
  auto branch = [&](const onnx::GraphProto& g, const std::string& attr, int side) {
    try {
      return c.run_subgraph(g, attr, {}, {});
    } catch (const Error& e) {
      if (std::optional<CutBranch> cut = branch_on_cut_inputs(c, g, attr)) {
        sel.runs[side] = cut->runs.uop(), sel.why[side] = cut->why;
        return cut->outs;
      }
      c.fail("the condition depends on model input " + inputs + ", so both branches are compiled, but " + attr +
             " cannot be built for these input shapes (" + e.what() + "); fix the input with --input-value NAME=VALUE");
    }
  };
  Outs a = branch(*then_g, "then_branch", 1);
  Outs b = branch(*else_g, "else_branch", 0);
  if (a.size() != b.size())
    c.fail("branches have " + std::to_string(a.size()) + " and " + std::to_string(b.size()) + " outputs");
  Tensor pick = cond.reshape({});
  Outs r;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].shape() != b[i].shape() || a[i].dtype() != b[i].dtype())
      c.fail("the condition depends on a model input, and output " + std::to_string(i) + " is " +
             std::string(dtype_name(a[i].dtype())) + shape_str(a[i].shape()) + " in then_branch but " +
             std::string(dtype_name(b[i].dtype())) + shape_str(b[i].shape()) +
             " in else_branch; tgc can only select between branches whose outputs agree in shape and type"
             " (fix input " +
             inputs + " with --input-value NAME=VALUE)");
    r.push_back(Tensor::where(pick, a[i], b[i]));
    if (r.back().uop()->op != Op::Where) continue;
    sel.select = r.back().uop();
    c.g.add_branch_select(sel);
  }
  return r;
}

// Per-iteration outputs stacked along a new axis (in reverse order when `reverse`).
Tensor stack(std::vector<Tensor> steps, int64_t axis, bool reverse) {
  if (reverse) std::reverse(steps.begin(), steps.end());
  int64_t rank = steps[0].ndim() + 1;
  if (axis < 0) axis += rank;
  for (Tensor& s : steps) s = s.unsqueeze({axis});
  return Tensor::cat(steps, axis);
}

// One Scan over inputs without a batch dim: the body runs once per step along the scan axes.
Outs scan_unrolled(Ctx& c, const onnx::GraphProto& body, Outs states, const Outs& scans) {
  size_t n = states.size(), m = scans.size();
  std::vector<int64_t> in_axes = c.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  std::vector<int64_t> in_dirs = c.attr_ints("scan_input_directions", std::vector<int64_t>(m, 0));
  size_t k = size_t(body.output_size()) - n;
  std::vector<int64_t> out_axes = c.attr_ints("scan_output_axes", std::vector<int64_t>(k, 0));
  std::vector<int64_t> out_dirs = c.attr_ints("scan_output_directions", std::vector<int64_t>(k, 0));
  if (in_axes.size() != m || in_dirs.size() != m || out_axes.size() != k || out_dirs.size() != k)
    c.fail("scan axes/directions do not match the number of scan inputs and outputs");
  if (m == 0) c.fail("Scan without scan inputs");
  int64_t steps = scans[0].dim(in_axes[0]);
  for (size_t j = 0; j < m; ++j)
    if (scans[j].dim(in_axes[j]) != steps) c.fail("scan inputs differ in length along their scan axes");
  std::vector<std::vector<Tensor>> ys(k);
  for (int64_t t = 0; t < steps; ++t) {
    Outs args = states;
    for (size_t j = 0; j < m; ++j) {
      int64_t ax = scans[j].norm_axis(in_axes[j]), at = in_dirs[j] ? steps - 1 - t : t;
      args.push_back(scans[j].slice({at}, {at + 1}, {ax}, {1}).squeeze({ax}));
    }
    Outs outs = c.run_subgraph(body, "body", args, {});
    std::copy(outs.begin(), outs.begin() + long(n), states.begin());
    for (size_t i = 0; i < k; ++i) ys[i].push_back(outs[n + i]);
  }
  Outs r = states;
  for (size_t i = 0; i < k; ++i) {
    if (ys[i].empty()) c.fail("scan output " + std::to_string(i) + " of a zero-length scan has no known shape");
    r.push_back(stack(ys[i], out_axes[i], out_dirs[i] != 0));
  }
  return r;
}

Outs scan(Ctx& c) {
  const onnx::GraphProto* body = c.attr_graph("body");
  if (!body) c.fail("Scan needs a body graph");
  int64_t m = c.attr_int("num_scan_inputs", 0);
  if (c.opset >= 9) {
    size_t n = c.num_inputs() - size_t(m);
    Outs ins = c.all_inputs();
    return scan_unrolled(c, *body, Outs(ins.begin(), ins.begin() + long(n)), Outs(ins.begin() + long(n), ins.end()));
  }
  // Scan-8: every input has a batch dim first and the scan axis second; the body runs per batch
  // element. sequence_lens (input 0) must cover the whole scan axis.
  size_t n = c.num_inputs() - 1 - size_t(m);
  std::vector<Tensor> ins;
  for (size_t i = 1; i < c.num_inputs(); ++i) ins.push_back(c.in(i));
  int64_t batch = ins[0].dim(0);
  if (c.has(0)) {
    std::vector<int64_t> lens = c.ints(0);
    for (int64_t l : lens)
      if (l != ins[n].dim(1)) c.fail("sequence_lens shorter than the scan axis are not supported");
  }
  std::vector<Outs> per_batch;
  for (int64_t b = 0; b < batch; ++b) {
    Outs states, scans;
    for (size_t i = 0; i < ins.size(); ++i)
      (i < n ? states : scans).push_back(ins[i].slice({b}, {b + 1}, {0}, {1}).squeeze({0}));
    per_batch.push_back(scan_unrolled(c, *body, states, scans));
  }
  Outs r;
  for (size_t i = 0; i < per_batch[0].size(); ++i) {
    std::vector<Tensor> parts;
    for (const Outs& o : per_batch) parts.push_back(o[i]);
    r.push_back(stack(parts, 0, false));
  }
  return r;
}

// Loop, unrolled. A trip count and condition known at compile time (the condition may be
// computed by the body from constants, e.g. a counter) unroll exactly; otherwise up to
// --max-trips iterations, each taking effect only while the loop still runs, and the scan
// outputs are as long as the iterations that ran (a size computed from data).
Outs loop(Ctx& c) {
  const onnx::GraphProto* body = c.attr_graph("body");
  if (!body) c.fail("Loop needs a body graph");
  if (!c.has(0) && !c.has(1)) c.fail("Loop without trip count or condition never ends");
  Outs carried;
  for (size_t i = 2; i < c.num_inputs(); ++i) carried.push_back(c.in(i));
  size_t n = carried.size();
  if (body->output_size() < int(1 + n)) c.fail("the body has fewer outputs than the loop carries values");
  size_t k = size_t(body->output_size()) - 1 - n;
  std::vector<std::vector<Tensor>> ys(k);
  // `running`: whether the iteration about to start runs (a bool scalar, constant where known).
  Tensor trips = c.has(0) ? c.in(0).reshape({}).cast(DType::I64) : Tensor::full(c.g, {}, 0, DType::I64);
  Tensor running = c.has(1) ? c.in(1).reshape({}).cast(DType::Bool) : Tensor::full(c.g, {}, 1, DType::Bool);
  auto more = [&](int64_t i, const Tensor& cond) {
    return c.has(0) ? cond.logical_and(Tensor::full(c.g, {}, double(i), DType::I64).lt(trips)) : cond;
  };
  running = more(0, running);
  bool dynamic = false;
  int64_t limit = 100000;
  Tensor ran_count = Tensor::full(c.g, {}, 0, DType::I64);  // iterations that run
  for (int64_t i = 0;; ++i) {
    if (!dynamic && !c.is_constant(running)) {
      dynamic = true;
      int64_t max = c.options ? c.options->max_loop_trips : 0;
      if (max <= 0) {
        // Named as for any input that must be known at compile time: --input-value fixes it.
        for (size_t in : {size_t(0), size_t(1)})
          if (c.has(in) && !c.is_constant(in))
            c.fail("input " + std::to_string(in) + " ('" + c.node.input(int(in)) +
                   "') must be a compile-time constant, but depends on a model input; or give the most iterations with "
                   "--max-trips N");
        c.fail(
            "the condition the body computes depends on the inputs' values; give the most iterations with --max-trips "
            "N");
      }
      limit = max;
    }
    if (!dynamic && c.constant(running).get(0) == 0) break;
    if (i >= limit) {
      if (!dynamic) c.fail("Loop runs more than " + std::to_string(limit) + " iterations; too many to unroll");
      break;
    }
    Outs args = {Tensor::full(c.g, {}, double(i), DType::I64), Tensor::full(c.g, {}, 1, DType::Bool)};
    args.insert(args.end(), carried.begin(), carried.end());
    Outs outs = c.run_subgraph(*body, "body", args, {});
    ran_count = ran_count + running.cast(DType::I64);
    for (size_t j = 0; j < n; ++j) {
      // (An exactly unrolled loop's values may change shape; a masked iteration keeps the old.)
      const Tensor& now = outs[1 + j];
      if (dynamic && (now.shape() != carried[j].shape() || now.dtype() != carried[j].dtype()))
        c.fail("loop-carried value " + std::to_string(j) + " changes from " + shape_str(carried[j].shape()) + " to " +
               shape_str(now.shape()) + ", which a loop with a run-time trip count cannot do");
      carried[j] = dynamic ? Tensor::where(running.expand(now.shape()), now, carried[j]) : now;
    }
    for (size_t j = 0; j < k; ++j) ys[j].push_back(outs[1 + n + j]);
    // Where the count was known so far, an iteration may still make the condition run-time.
    Tensor next = more(i + 1, outs[0].reshape({}).cast(DType::Bool));
    running = dynamic ? running.logical_and(next) : next;
  }
  Outs r = carried;
  if (k == 0) return r;
  if (ys[0].empty()) c.fail("scan outputs of a loop that runs 0 times have no known shape");
  // The iterations that ran: a count computed from data when the loop's end was.
  std::optional<DataAxis> ran;
  if (dynamic) ran = data_axis(c, int64_t(ys[0].size()), ran_count);
  for (size_t j = 0; j < k; ++j) {
    Tensor y = stack(ys[j], 0, false);
    r.push_back(ran ? masked(y.gather(ran->positions, 0), *ran, 0) : y);
  }
  return r;
}
}  // namespace

void add_control_ops(OpTable& t) {
  t["If"] = if_op;
  t["Scan"] = scan;
  t["Loop"] = loop;
}

}  // namespace tgc
