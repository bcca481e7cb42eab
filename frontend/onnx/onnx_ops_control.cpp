// Control flow. tgc compiles one static graph, so If is resolved at import: folded when its
// condition is a compile-time constant, otherwise both branches are computed and the outputs
// selected elementwise (which needs the branches to agree on each output's shape and type).
#include "frontend/onnx/onnx_ops.h"

namespace tgc {

namespace {
Outs if_op(Ctx& c) {
  const onnx::GraphProto* then_g = c.attr_graph("then_branch");
  const onnx::GraphProto* else_g = c.attr_graph("else_branch");
  if (!then_g || !else_g) c.fail("If needs then_branch and else_branch graphs");
  const Tensor& cond = c.in(0);
  if (cond.numel() != 1) c.fail("condition has shape " + shape_str(cond.shape()) + ", expected one element");
  if (c.is_constant(0)) {
    bool taken = c.floats(0).at(0) != 0;
    return taken ? c.run_subgraph(*then_g, "then_branch") : c.run_subgraph(*else_g, "else_branch");
  }
  // Both branches are computed; one that cannot even be built for these shapes (it would fail
  // at run time too) is an error that names the inputs to fix.
  std::string inputs;
  for (const UOp* u : toposort({cond.uop()}))
    if (u->op == Op::Buffer && !c.g.buffer(u->ival()).data) inputs += (inputs.empty() ? "'" : ", '") + c.g.buffer(u->ival()).name + "'";
  auto branch = [&](const onnx::GraphProto& g, const std::string& attr) {
    try {
      return c.run_subgraph(g, attr);
    } catch (const Error& e) {
      c.fail("the condition depends on model input " + inputs + ", so both branches are compiled, but " + attr +
             " cannot be built for these input shapes (" + e.what() + "); fix the input with --input-value NAME=VALUE");
    }
  };
  Outs a = branch(*then_g, "then_branch");
  Outs b = branch(*else_g, "else_branch");
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
             " (fix input " + inputs + " with --input-value NAME=VALUE)");
    r.push_back(Tensor::where(pick, a[i], b[i]));
  }
  return r;
}
}  // namespace

void add_control_ops(OpTable& t) { t["If"] = if_op; }

}  // namespace tgc
