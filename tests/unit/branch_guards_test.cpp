// passes/branch_guards: which nodes one side of a run-time If alone needs, and the condition's
// VAR (1 false, 2 true, -1 where the side taken was built for other sizes).
#include <gtest/gtest.h>

#include "ir/interpret.h"
#include "ir/tensor.h"
#include "passes/branch_guards.h"

namespace tgc {
namespace {

TEST(BranchGuards, EachSideAloneGuardsWhatOnlyItNeeds) {
  Graph g;
  Tensor x = Tensor::input(g, "x", DType::F32, {4});
  Tensor c = Tensor::input(g, "c", DType::Bool, {});
  Tensor shared = x.exp();                          // both sides read it
  Tensor then_side = (shared + 1.0).relu().sqrt();  // one chain per side
  Tensor else_side = (shared * 2.0).exp();
  Tensor out = Tensor::where(c.expand({4}), then_side, else_side);
  Graph::BranchSelect sel;
  sel.select = out.uop();
  g.add_branch_select(sel);
  Tensor other = shared.sum({0});  // a second output reads the shared part
  BranchGuards gs = guard_branches(g, {out.uop(), other.uop()});
  ASSERT_EQ(gs.vars.size(), 1u);
  const UOp* var = gs.vars[0];
  auto side = [&](const Tensor& t) { return gs.of.count(t.uop()) ? gs.of.at(t.uop()).value : 0; };
  EXPECT_EQ(side(then_side), 2);
  EXPECT_EQ(side(else_side), 1);
  EXPECT_EQ(gs.of.at(then_side.uop()).var, var);
  EXPECT_EQ(side(shared), 0);
  EXPECT_EQ(side(out), 0);
  EXPECT_EQ(side(x), 0);
  // The VAR's value: 2 where the condition holds, else 1.
  const UOp* value = g.var_value(var);
  ASSERT_TRUE(value);
  HostTensor yes(DType::Bool, {}), no(DType::Bool, {}), xs(DType::F32, {4});
  yes.set(0, 1), no.set(0, 0);
  int64_t xb = x.uop()->ival(), cb = c.uop()->ival();
  EXPECT_EQ(interpret(g, {value}, {{xb, xs}, {cb, yes}})[0].get(0), 2);
  EXPECT_EQ(interpret(g, {value}, {{xb, xs}, {cb, no}})[0].get(0), 1);
}

TEST(BranchGuards, ASideBuiltForOtherSizesMakesTheValueNegative) {
  Graph g;
  Tensor c = Tensor::input(g, "c", DType::Bool, {});
  Tensor fits = Tensor::input(g, "fits", DType::Bool, {});  // stands for "the run-time size is within the cut"
  Tensor a = Tensor::input(g, "a", DType::F32, {2}), b = Tensor::input(g, "b", DType::F32, {2});
  Tensor out = Tensor::where(c.expand({2}), a.exp(), b.exp());
  Graph::BranchSelect sel;
  sel.select = out.uop();
  sel.runs[0] = fits.uop(), sel.why[0] = "If 'x' runs else_branch only for n up to 3";
  g.add_branch_select(sel);
  BranchGuards gs = guard_branches(g, {out.uop()});
  ASSERT_EQ(gs.vars.size(), 1u);
  EXPECT_EQ(gs.vars[0]->var().name, "If 'x' runs else_branch only for n up to 3");
  auto value = [&](bool cv, bool fv) {
    HostTensor ct(DType::Bool, {}), ft(DType::Bool, {});
    ct.set(0, cv), ft.set(0, fv);
    return interpret(g, {g.var_value(gs.vars[0])}, {{c.uop()->ival(), ct}, {fits.uop()->ival(), ft}})[0].get(0);
  };
  EXPECT_EQ(value(true, false), 2);  // the then side runs at any size
  EXPECT_EQ(value(false, true), 1);
  EXPECT_EQ(value(false, false), -1);  // the runtime's error
}

}  // namespace
}  // namespace tgc
