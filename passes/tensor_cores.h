// Tensor cores (CUDA): a kernel that is a matrix product -- an f32 sum over one reduce range of
// products of two loads of one type, each an affine walk of a matrix whose tiles WMMA can load --
// runs as 16x16 output tiles, one warp each, through WMMA with f32 accumulation, each warp a block
// of such tiles. f16 operands (sm_70+) and bf16 (sm_80+) multiply in steps of 16 along the reduce
// (m16n16k16: the products are exact in f32 and only the order of the sum differs from the CUDA
// cores'); f32 operands (sm_80+, only with --precision=tf32) in steps of 8 as tf32 (m16n16k8: the
// tensor cores read 10 of the mantissa's 23 bits, truncating). Whatever the kernel does with the sum
// (bias, activation, a cast) runs per element after it. The TC action (passes/opt.h) selects it;
// codegen/cuda/render_ptx.cpp renders it.
//
// Converted operands: where one factor is computed from 16-bit or integer values only (a GGUF
// weight dequantized in the kernel: scales times nibbles) and the other is any f32 expression (the
// activations), a block computes its tiles of both factors element by element, rounds them to f16
// into shared memory, and multiplies those (f16 keeps the activations to 11 bits, finer than the
// 8-bit blocks llama.cpp quantizes them to; values beyond f16's 65504 would not survive). The row
// range may end at a run-time size (an LLM's token count): the grid covers its bound, blocks past
// the size leave, rows past it are not stored.
#pragma once
#include <optional>

#include "passes/schedule.h"
#include "target/profile.h"

namespace tgc {

// How a kernel's output tiles map onto warps: each warp computes wm x wn fragments of 16x16
// (loading wm fragments of A and wn of B per step of 16 along the reduce, for wm * wn products),
// and a block holds `warps` warps.
struct TensorCoreTiles {
  int64_t wm = 0, wn = 0, warps = 0;
  // staged > 0: a block of 2 x 2 warps stages its rows of A and columns of B in shared memory,
  // this many along the reduce at a time (row-major A and B whose block tiles divide the output).
  int64_t staged = 0;
  // On CUDA cores (Kernel::cuda_cores, f32): each of a block's 8 warps' threads computes wm x wn
  // outputs (4 x 4 or 8 x 8), the block 16 wm x 16 wn, staged `staged` along the reduce (16 or 8:
  // a 4-vector of A and one of B per thread).
  bool cuda_cores = false;
  bool operator==(const TensorCoreTiles&) const = default;
};

struct TensorCorePlan {
  const UOp* reduce;  // the KREDUCE
  const UOp* m;       // the output ranges along the tile's rows and columns, and the reduce range
  const UOp* n;
  const UOp* k;
  const UOp* a;  // LOAD of A (m x k) and of B (k x n), both of `type` (convert: f32 expressions)
  const UOp* b;
  DType type;         // F16, BF16, or F32 (tf32)
  bool a_row, b_row;  // A row-major (k contiguous) or column-major; B row-major (n contiguous) or not
  int64_t lda, ldb;   // elements between rows (row-major) or columns
  TensorCoreTiles tiles;
  // a and b are the factors' f32 expressions, computed per element and rounded to f16 (staged:
  // A's rows and B's columns along the reduce in shared memory; lda and ldb unused).
  bool convert = false;
};

constexpr int64_t kTensorCoreTile = 16;
// The CUDA heuristic puts an f32 matrix product of at least this many multiply-adds on CUDA-core
// tiles (TC(0,1)).
constexpr int64_t kCudaCoreTilesWork = int64_t(1) << 27;
// The reduce step of one multiply for operands of `type`: 16 (f16, bf16) or 8 (tf32).
inline int64_t tensor_core_k(DType type) { return type == DType::F32 ? 8 : 16; }

// Whether the target has tensor cores for operands of `type`: CUDA sm_70 and later for f16,
// sm_80 for bf16 and for f32 as tf32, which TargetProfile::tf32 must allow.
bool has_tensor_cores(const TargetProfile& t, DType type = DType::F16);
// The plan for kernel k, or nullopt (with the reason in *why, where given).
std::optional<TensorCorePlan> tensor_core_plan(Graph& g, const Kernel& k, std::string* why = nullptr);

}  // namespace tgc
