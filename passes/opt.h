// Kernel optimization actions, as in tinygrad: each one splits a loop range of a scheduled
// kernel and gives the new inner part a role. The kernel stays a STORE over ranges; the lowering
// then expands UPCAST ranges into copies (register tiles, which LLVM's SLP vectorizer turns into
// vector code) and keeps LOCAL/GROUP ranges as work-group thread ids. PADTO instead rounds a range
// up so that the splits above divide it, masking what lies past the end.
//
// Axes of a kernel: its global ranges (outermost first), then its reduce ranges in order of first
// use. An action names an axis by that index, so a list of actions is meaningful for any kernel
// with the same structure (the tuning cache stores them by kernel hash).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "passes/schedule.h"
#include "target/profile.h"

namespace tgc {

enum class OptOp : uint8_t {
  Upcast,    // split a global axis; the inner part becomes a register tile / vector lanes
  Unroll,    // split a reduce axis; the inner part is unrolled into the loop body
  Local,     // GPU: split a global axis; the inner part becomes the work-group's local id
  Group,     // GPU: split a reduce axis across the work-group, combined in shared memory; each
             // thread takes every amount-th element (neighbouring threads read neighbours)
  GroupTop,  // GROUP with the thread id as the outer part: each thread reduces one contiguous run
  Padto,     // round an axis up to a multiple of amount; the positions past its end are masked
  Lanes,     // CPU: split a reduce axis; each copy of the inner part keeps its own partial sum over the
             // outer part (vector lanes of the accumulator), combined once after the loop
  Swap,      // exchange global axes `axis` and `amount`: the order work items visit them (CPU: the
             // innermost runs as a loop inside each item; GPU: a run-time axis outermost launches
             // only its share of work-groups)
  Tc,        // CUDA: the kernel's matrix product as whole tiles (passes/tensor_cores.h), alone:
             // TC(0,0) on tensor cores (WMMA), TC(0,1) on CUDA cores from shared memory (f32)
};

struct Opt {
  OptOp op;
  int axis;
  int64_t amount;
  bool operator==(const Opt&) const = default;
};

std::string opt_str(const Opt& o);                 // "UPCAST(1,16)"
std::string opts_str(const std::vector<Opt>& os);  // "UPCAST(1,16) UNROLL(2,4)"
// Parses opts_str's format back (the tuning cache stores it); throws on malformed text.
std::vector<Opt> parse_opts(const std::string& s);

std::vector<const UOp*> kernel_axes(const Kernel& k);

// Applies actions in order; throws tgc::Error naming the action when one is not legal.
Kernel apply_opts(Graph& g, const Kernel& k, const std::vector<Opt>& opts, const TargetProfile& t);

// Kernel rewrites that come before the choice of actions. On CPU targets: the two innermost
// output axes merged where they are one run in memory (passes/merge_axes.h), weights transposed
// for vector lanes along output channels where rows are narrow (passes/channel_vectors.h), the
// inputs of strided convs split by phase (passes/deinterleave.h), and large matmul operands
// packed in panels (passes/pack.h); on every target, weight-only integer
// kernels folded at compile time (passes/fold_weights.h).
void rewrite_kernels(Graph& g, Schedule& s, const TargetProfile& t);

// The CPU heuristic's vector tile along a contiguous output axis of size n: two vectors where
// they divide it, else the divisor nearest that width; 0 where none suits.
int64_t vector_width(int64_t n, const TargetProfile& t);
// Rows of n positions that the heuristic's vector tile along them would not fill with whole
// vectors (56 columns on AVX-512: 8 lanes of 16; 14; 7), and of those, rows of a quarter vector
// or less (4 columns on AVX-512).
bool narrow_rows(int64_t n, const TargetProfile& t);
bool quarter_rows(int64_t n, const TargetProfile& t);
// Whether the heuristic's lanes run along output axis c of k (its rows narrow, and a register
// tile of channel vectors and positions that pays, passes/channel_tile.h; or rows of a quarter
// vector): passes/channel_vectors then makes the weights contiguous along c.
bool lanes_along_channels(const Kernel& k, const UOp* c, const TargetProfile& t);
// Range r (size n) rounded up to a multiple of `amount`: past n the store is skipped, loads whose
// index could leave their buffer are gated, and reduces over r add their identity (PADTO).
Kernel pad_axis(Graph& g, const Kernel& k, const UOp* r, int64_t amount);
// The loads inside a kernel's reduces.
std::vector<const UOp*> reduce_loads(const Kernel& k);

// The hand-coded default for a target, without search: register tiles along axes where a load
// is reused (stride 0) and vector lanes along the contiguous output axis on CPUs.
// `tile_runtime_axes`: register tiles along axes that end at a run-time size too (see below).
std::vector<Opt> heuristic_opts(Graph& g, const Kernel& k, const TargetProfile& t, bool tile_runtime_axes = false);

// A second schedule for a kernel whose outermost output axis is a run-time size (an LLM run's
// tokens), used when that size is at least `from`: `small`, the heuristic's choice, tiles nothing
// along the axis (a one-token decode step computes no padding rows), which leaves every weight
// re-read per token at large sizes (a prefill); this one tiles the axis so each weight load serves
// several tokens. Where the axis ends at a size derived from a VAR (a recogniser's W/8 columns),
// the variant is the heuristic's with its register tile along the axis, from the VAR's first
// value at which the size fills a tile. Empty opts: no such variant.
struct SizeVariant {
  std::vector<Opt> opts;
  const UOp* var = nullptr;      // the run-time size (a VAR)
  int64_t from = 0;              // runs for values from `from` ...
  int64_t until = 0;             // ... to `until` (0: no bound)
  std::optional<Kernel> kernel;  // the kernel the opts apply to, where the variant rewrites it
};
SizeVariant large_size_variant(Graph& g, const Kernel& k, const TargetProfile& t, const std::vector<Opt>& small);

// GPU: a schedule for a kernel over a run-time token count at a few tokens (up to kFewTokens: an
// LLM's decode step, a short prompt), where `many`, the heuristic's for about a thousand, leaves
// most of the GPU idle: its reduces split over work-groups (the heuristic counting the run-time
// axes as 1). Empty opts: no such variant.
inline constexpr int64_t kFewTokens = 8;
SizeVariant few_tokens_variant(Graph& g, const Kernel& k, const TargetProfile& t, const std::vector<Opt>& many);

// A kernel whose loops over a run-time size are short (an audio encoder's last frames, at most
// 4 at the bound), at its one VAR's largest value: the sizes known, as a static compile of the
// bound has them. LLVM unrolls and interleaves such loops only where it knows their trip
// counts. `var` is nullptr where the kernel does not qualify (other VARs, long loops).
struct BoundVariant {
  Kernel kernel;
  const UOp* var = nullptr;
};
BoundVariant bound_variant(Graph& g, const Kernel& k);

}  // namespace tgc
