// Where the batch lies in every tensor of a graph, proven from two traces of one model at two batch
// sizes; what lets tgc compile a model once and run it at any batch size (frontend/onnx/dynamic_batch.h).
#pragma once
#include <vector>

#include "ir/uop.h"

namespace tgc {

// The nodes of the two traces pair up by position (they must be the same graph but for the batch
// size); a node's batch axis is the one where its shapes differ, size_a against size_b (or their
// multiples by one factor: the batch merged into a dim as its outermost part). The rules
// keep samples apart: elementwise operands share the axis, a reduce, pad, shrink or flip leaves it
// alone, a reshape keeps the dims before it, a weight never has it, a constant may be broadcast
// along it. When they hold, the program of one sample run once per sample computes the graph.
// Returns each root's batch axis (-1: none); throws tgc::Error naming the first node that mixes
// samples or whose structure depends on the batch size.
std::vector<int> batch_axes(const Graph& ga, const std::vector<const UOp*>& roots_a, int64_t size_a,
                            const Graph& gb, const std::vector<const UOp*>& roots_b, int64_t size_b);

}  // namespace tgc
