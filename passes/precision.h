// --precision=fp16|bf16: the model's f32 weights and intermediates are stored in 16 bits. Kernels
// still compute in f32 (loads widen, stores narrow, reduces accumulate in f32), so what changes
// is memory: half the bytes for every weight and every tensor between kernels, where a GPU's
// small models and a CPU's large ones spend their time. The model's inputs, outputs and state
// (KV caches) keep their types, so the artifact's interface does not change.
#pragma once
#include "passes/schedule.h"
#include "target/profile.h"

namespace tgc {

// What --precision asks for: fp32 (nothing changes), fp16 and bf16 (storage, below), tf32 (f32
// matrix products on CUDA tensor cores, whose tf32 operands keep f32's range and 10 bits of its
// mantissa: TargetProfile::tf32).
struct Precision {
  DType storage = DType::F32;  // of weights and intermediates
  bool tf32 = false;
};
Precision parse_precision(const std::string& name);

// Stores s's f32 weights and intermediates as `half` (F16 or BF16), rewriting the loads and
// stores of every kernel. A buffer stays f32 where a kernel reads it as another type, or (f16)
// where a weight holds finite values past f16's range, which would become infinities.
void store_in_half(Graph& g, Schedule& s, DType half);

// GPU kernel languages with f16 arithmetic (TargetProfile::half_math) under --precision=fp16:
// arithmetic whose operands are all f16 values (widened loads, earlier f16 results, constants
// within f16's range) runs in f16 -- add, multiply, max, negate, fused multiply-add, select and
// compare; Adreno runs f16 at twice f32's rate. Reduces still accumulate in f32 (a product may
// be f16, the sum of products is not), exp2, log2, sin, sqrt and division stay f32, where f16's
// 11-bit mantissa would lose most, and so do squares (a norm's overflow f16 past 256). Runs
// after store_in_half.
void compute_in_half(Graph& g, Schedule& s);

// CPUs compute 16-bit floats in f32 (passes/half_math.h), and widening costs an instruction on
// the vector units that the multiply-adds need: an f16 conv ran 1.4x its f32 twin's time (x86,
// vcvtph2ps; aarch64 has fcvtl). A 16-bit weight or intermediate that some kernel reads for at
// least kReuseToWiden output positions (a conv's filter, read at every pixel; its input, read for
// every output channel) is widened once instead: a weight gets an f32 twin made at compile time,
// an intermediate becomes an f32 buffer (its values are no longer rounded to 16 bits: more
// precise, never less, and the rounding cost two more conversions), as does every intermediate
// that fits in the L2 cache in f32, where conversions cost more than bytes. Data read once per output (an LLM's decode
// matvec weights, bound by memory, where 16 bits are the point) stays as it is, and so does a weight whose f32 twin
// would not fit in the L2 cache (streamed from memory, its 16 bits save more than the conversion costs).
constexpr int64_t kReuseToWiden = 16;
void widen_reused_halves(Graph& g, Schedule& s, const TargetProfile& t);

}  // namespace tgc
