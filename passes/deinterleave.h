// Strided convolutions on CPUs. A stride-2 convolution reads its input two elements apart along
// the output's contiguous axis, so the CPU heuristic finds no load to put vector lanes along and
// leaves the kernel scalar (PP-OCRv4 det's first conv: 26 GFLOP/s, against ~100 for the
// stride-1 ones). This pass gives such a kernel a copy of that input split by phase,
// P[p][q] = B[q * s + p] (s: the stride), in which the elements the output's neighbours read
// are neighbours, and so the heuristic's lanes and register tiles apply. The copy is a kernel of
// its own before its first reader (intermediates and inputs; weights are never read so), which
// the heuristic gives one copy per phase (passes/opt phase_opts) so that it reads the input
// once, in wide loads, and writes every phase as a contiguous stream.
#pragma once
#include "passes/schedule.h"
#include "target/profile.h"

namespace tgc {

void deinterleave_strided(Graph& g, Schedule& s, const TargetProfile& t);

// Whether index x (of a load in k's reduce) runs along one of k's reduce ranges with stride 1 and
// is the same for at least 8 positions of k's output axes other than j (of fixed size: an LLM's
// tokens may be one): a row of B in a product A B^T, read again for every row of A. Its
// transpose gives the product lanes along j.
bool reused_row(Graph& g, const Kernel& k, const UOp* x, const UOp* j);

}  // namespace tgc
