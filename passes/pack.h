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

// The panel layout of an operand B of rows * stride elements, each row cut into panels of
// `width`: element x = q * stride + p * width + u of B is at P[p][q][u]. Width 1 splits B by
// phase, P[x % stride][x / stride] (passes/deinterleave.h).
const UOp* panel_index(Graph& g, const UOp* x, int64_t stride, int64_t rows, int64_t width);
// The kernel that copies B (buffer `from`) into P (buffer `to`): ranges p, q and (width > 1) u.
// `padded_rows` (width 1 only) gives P more rows than B has, zeros past B's.
Kernel pack_kernel(Graph& g, int64_t from, int64_t to, int64_t stride, int64_t width, int64_t padded_rows = 0);

}  // namespace tgc
