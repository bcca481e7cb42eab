// --precision=fp16|bf16: the model's f32 weights and intermediates are stored in 16 bits. Kernels
// still compute in f32 (loads widen, stores narrow, reduces accumulate in f32), so what changes
// is memory: half the bytes for every weight and every tensor between kernels, where a GPU's
// small models and a CPU's large ones spend their time. The model's inputs, outputs and state
// (KV caches) keep their types, so the artifact's interface does not change.
#pragma once
#include "passes/schedule.h"

namespace tgc {

// The precision names --precision takes: fp32 (nothing changes), fp16, bf16.
DType storage_type(const std::string& precision);

// Stores s's f32 weights and intermediates as `half` (F16 or BF16), rewriting the loads and
// stores of every kernel. A buffer stays f32 where a kernel reads it as another type, or (f16)
// where a weight holds finite values past f16's range, which would become infinities.
void store_in_half(Graph& g, Schedule& s, DType half);

}  // namespace tgc
