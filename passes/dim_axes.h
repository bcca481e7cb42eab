// Where a dynamic dim lies in every tensor of a graph, proven from two traces of one model at two
// sizes of that dim: what lets tgc compile a model once and run it at other sizes
// (model/dynamic_dims.h). The nodes of the two traces pair up by position (they must be
// the same graph but for the dim's size); a node's axes of the dim are those where its shapes
// differ, size_a against size_b. Errors name the first node that breaks a rule, or whose
// structure depends on the size (e.g. a constant computed from it).
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ir/uop.h"

namespace tgc {

// The batch: run once per sample by the program of one sample. The rules keep samples apart:
// elementwise operands share the axis, a reduce, pad, shrink or flip leaves it alone, a reshape
// keeps the dims before it (the batch may merge into a dim as its outermost part: size_a times
// the per-sample extent), a weight never has it, a constant may be broadcast along it.
// Returns each root's batch axis (-1: none).
std::vector<int> batch_axes(const Graph& ga, const std::vector<const UOp*>& roots_a, int64_t size_a,
                            const Graph& gb, const std::vector<const UOp*>& roots_b, int64_t size_b);

// A run-time dim laid out at its upper bound size_a (trace a is the graph compiled): kernels keep
// the upper bound's strides, and only a reduce over the dim stops at its run-time size. That is
// exact when no value at a position below the run-time size reads one above it: elementwise
// operands share the dim's axes, a reshape keeps them (and the dims before each), a permute or
// expand moves or adds them, a slice may cut a weight to the dim (a position table), and no pad
// or flip touches them. Returns, per node of graph a, the bit mask of its axes that are the dim.
std::unordered_map<const UOp*, uint64_t> var_axes(const Graph& ga, const std::vector<const UOp*>& roots_a, int64_t size_a,
                                                 const Graph& gb, const std::vector<const UOp*>& roots_b, int64_t size_b);

}  // namespace tgc
