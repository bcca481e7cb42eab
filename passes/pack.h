// Panel packing for CPU matmuls, as BLAS libraries do it. A reduce that reads an operand B a row
// at a time (its output's contiguous axis j along B's rows, the reduce axis k across them) reads
// a strip of W columns of every row for each output tile. Where B is larger than a core's L2,
// those strips (rows a power-of-two stride apart, all in one cache set) are fetched from L3 again
// for every tile: a 2048^3 matmul ran at 7% of OpenBLAS. This pass gives such a kernel a copy of B
// in panels, P[j / W][k][j % W] (W: the heuristic's vector tile along j), so a strip is one
// contiguous run, and puts the panel axis outermost, so each work item keeps its panel in L2
// while it passes the rows of the output.
// The copy is a kernel of its own placed before its first reader, or, for weights, made at
// compile time.
#pragma once
#include "passes/schedule.h"
#include "target/profile.h"

namespace tgc {

void pack_panels(Graph& g, Schedule& s, const TargetProfile& t);

}  // namespace tgc
