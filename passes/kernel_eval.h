// The reference backend: runs kernels over host memory one scalar at a time, with the op semantics
// of ir/scalar, either from their scheduled (and optimized) ASTs or from their lowered loop
// programs. Slow and independent of every code generator: the oracle that tests hold the
// scheduler, the optimizer and the lowering to. Where a real backend would silently compute
// garbage it reports a problem instead: a read out of bounds or of a buffer nothing has written,
// an element stored twice or never, a loop program using a value outside the scope it was
// computed in.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/scalar.h"
#include "ir/tensor.h"
#include "passes/lower.h"

namespace tgc {

// Evaluates a scalar kernel expression: RANGEs take their values from `env` (by range id), VARs
// from `var`, LOADs call `load(buffer, index)` (a gated load reads 0 where its gate is false), and
// a KREDUCE loops over its own ranges. No memoization: fine for the small kernels of tests.
struct ScalarEval {
  std::map<int64_t, int64_t> env;
  std::function<Num(int64_t buffer, int64_t index)> load;
  std::function<int64_t(const UOp* var)> var;

  Num eval(const UOp* u);
  int64_t index(const UOp* u) { return eval(u).i; }
  // Runs `f` once per position of `ranges` (the last varies fastest) with `env` set to it. A range
  // over a run-time dim stops at its VAR's value.
  void for_each_position(const std::vector<const UOp*>& ranges, const std::function<void()>& f);
};

class KernelEvaluator {
 public:
  // Weights come from the graph, inputs from `feeds` by buffer id (with run-time dims also the
  // graph's vars buffer: it holds the VARs' values).
  KernelEvaluator(const Graph& g, const std::map<int64_t, HostTensor>& feeds);

  // Runs one kernel over the buffers, from its AST or from its loop program, and returns the
  // problems found (none: it ran cleanly). Elements of the output past a run-time dim's value
  // are left 0.
  std::vector<std::string> run(const Kernel& k);
  std::vector<std::string> run(const LoopProgram& p);

  // Every element of buffer `id`; throws tgc::Error when nothing has fed or written it.
  std::vector<double> result(int64_t id) const;

 private:
  struct Run;  // one kernel's run: its loads, stores and problems
  class ProgramRun;
  // A buffer's elements: what a kernel wrote or `feeds` gave, else its weight data; nullptr
  // for none.
  const std::vector<Num>* memory(int64_t id) const;
  const Graph& g_;
  mutable std::map<int64_t, std::vector<Num>> mem_;
};

}  // namespace tgc
