// Where a dynamic dim lies in every tensor of a graph, proven from two traces of one model at two
// sizes of that dim: what lets tgc compile a model once and run it at other sizes
// (model/dynamic_dims.h). The nodes of the two traces pair up by position (they must be
// the same graph but for the dim's size); a node's axes of the dim are those where its shapes
// differ, size_a against size_b. Errors name the first node that breaks a rule, or whose
// structure depends on the size (e.g. a constant computed from it).
#pragma once
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "ir/uop.h"

namespace tgc {

// The batch: run once per sample by the program of one sample. The rules keep samples apart:
// elementwise operands share the axis, a reduce, pad, shrink or flip leaves it alone, a reshape
// keeps the dims before it (the batch may merge into a dim as its outermost part: size_a times
// the per-sample extent), a weight never has it, a constant may be broadcast along it.
// Returns each root's batch axis (-1: none).
std::vector<int> batch_axes(const Graph& ga, const std::vector<const UOp*>& roots_a, int64_t size_a, const Graph& gb,
                            const std::vector<const UOp*>& roots_b, int64_t size_b);

// A run-time dim laid out at its upper bound (trace a, the graph compiled, is at the VAR's
// maximum): kernels keep the upper bound's strides and only loops and pad masks change. Per node of
// graph a, per axis, the axis's size at run time: nullptr for a fixed size, an index expression
// over the VAR (the VAR, W + 2p through a pad, (W + 2p - k) / s + 1 through a window view, W - c
// through a slice at a fixed distance from the end), or `broadcast` (expanded from size 1 to the
// dim: every position holds the same value, any extent will do).
// Exact when no value at a position below the run-time size reads one above it, unmasked:
// elementwise operands agree, a reshape keeps the dim's axes whole (and the dims before each), a
// permute or expand moves or adds them, pads mask with the run-time size, a window view
// (Tensor::pool) indexes the same way at every size, a slice has a fixed start and an end at a
// fixed distance from the dim's end, or cuts a weight to the dim (a position table), and nothing
// reverses it. Every extent is checked against trace b's shapes (at size_b). A VAR with a step
// (Graph::var_step) counts steps: the dim itself is step * VAR, and the traces' sizes (the VAR's
// max times the step, and size_b) are dims.
// A float constant of trace a that is 1 / the element count of a reduce over the dim (a mean's
// scale) at both sizes is in `reciprocal_of`, with that count as an index expression: the model
// must compute it at run time (replace_sized_constants).
struct VarExtents {
  std::unordered_map<const UOp*, std::vector<const UOp*>> extent;
  const UOp* broadcast = nullptr;
  std::unordered_map<const UOp*, const UOp*> reciprocal_of;
  // (Shrink or Pad node, axis) -> its start or amount before at run time (Graph::var_offset).
  std::map<std::pair<const UOp*, int64_t>, const UOp*> offset;
  // The VAR's least value at which the traced structure holds: every run-time size at least 1,
  // a slice's fixed part within the data (a reflect pad's head needs the dim past its width).
  // Below it the runtime refuses the size (Graph::var_min).
  int64_t min_value = 1;
};
VarExtents var_extents(Graph& ga, const std::vector<const UOp*>& roots_a, const UOp* var, const Graph& gb,
                       const std::vector<const UOp*>& roots_b, int64_t size_b);

}  // namespace tgc
