// The meaning of every elementwise op on one element. The interpreter and the constant folder
// both call this, so the two can never disagree on semantics.
#pragma once
#include <cstdint>

#include "ir/dtype.h"
#include "ir/uop.h"

namespace tgc {

// One element: float dtypes use `f`, every other dtype uses `i` (u64 as two's-complement bits).
struct Num {
  double f = 0;
  int64_t i = 0;
  static Num of(DType t, double v) { return is_float(t) ? Num{v, 0} : Num{0, int64_t(v)}; }
  double as_double(DType t) const;
};

// Applies elementwise `op` to operands of dtype `in` (for WHERE: of the branches), giving `out`.
// Integer division and modulo follow C (truncation); division by zero gives 0, not a trap.
Num eval_elementwise(Op op, DType out, DType in, const Num* args);

// Reads / writes one element of raw little-endian storage.
Num load_num(DType t, const void* p);
void store_num(DType t, void* p, Num v);

}  // namespace tgc
