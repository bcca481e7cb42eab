// f16 and bf16 are storage types: kernels compute on them in f32. A kernel's loads of 16-bit
// floats are widened, its arithmetic and accumulators run in f32, and its store narrows once.
// CPUs without native f16 arithmetic would otherwise round after every operation (LLVM widens
// and narrows each one: a conv in f16 ran 30x slower than in f32 on x86), and a reduce
// accumulating in f16 loses precision in long sums (an f16 segmentation net drifted by 4% of
// its output range). An explicit Cast to a 16-bit float still rounds there.
#pragma once
#include "ir/uop.h"

namespace tgc {

// The kernel `store` (a STORE and its expression) with 16-bit float math promoted to f32.
const UOp* promote_half_math(Graph& g, const UOp* store);

}  // namespace tgc
