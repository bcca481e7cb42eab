/* f32/f64 -> bf16 rounding for CPU kernels: LLVM lowers bf16 arithmetic and casts into calls of
 * __truncsfbf2/__truncdfbf2 on CPUs without native bf16 conversion (x86 without AVX512-BF16), and
 * Debian 12's libgcc does not have them. A bf16 is returned in the low 16 bits of the float
 * return register (xmm0 on x86-64, s0/h0 on aarch64), so these return a float holding those bits. */
#include <stdint.h>
#include <string.h>

static float bf16_in_float(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  uint32_t top = f != f ? 0x7fc0u : (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16; /* nearest even */
  float r;
  memcpy(&r, &top, sizeof r);
  return r;
}

float __truncsfbf2(float f);
float __truncdfbf2(double d);
float __truncsfbf2(float f) { return bf16_in_float(f); }
/* Through f32: rounding twice is off by one bf16 ulp only where the f32 rounding lands on a tie. */
float __truncdfbf2(double d) { return bf16_in_float((float)d); }
