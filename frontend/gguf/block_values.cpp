#include "frontend/gguf/block_values.h"

#include <cstring>

namespace tgc {

bool k_quant(GgmlType t) { return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K; }

bool has_min(GgmlType t) {
  return t == GgmlType::Q4_1 || t == GgmlType::Q5_1 || t == GgmlType::Q4_K || t == GgmlType::Q5_K;
}

int64_t top_bits(GgmlType t) {
  switch (t) {
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q5_K: return 1;
    case GgmlType::Q6_K: return 2;
    default: return 0;
  }
}

void legacy_values(GgmlType t, const uint8_t* blk, uint8_t* u) {
  const bool five = top_bits(t) == 1, min = has_min(t);
  const uint8_t* qh = blk + (min ? 4 : 2);
  const uint8_t* qs = qh + (five ? 4 : 0);
  for (int e = 0; e < kBlock; ++e) {
    u[e] = uint8_t(qs[e % 16] >> (4 * (e / 16)) & 15);
    if (five) u[e] |= uint8_t((qh[e / 8] >> (e % 8) & 1) << 4);
  }
}

// q6_K: element e's low nibble is in ql (byte 64*(e/128) + e%32 + 32*(e/32%2), high half for
// e/64%2), its top two bits in qh (byte 32*(e/128) + e%32, shifted by 2*(e/32%4)).
// q4_K/q5_K: sub-block s's nibbles are in qs (byte 32*(s/2) + e%32, high half for odd s); q5_K's
// fifth bit is bit s of qh byte e%32.
void k_values(GgmlType t, const uint8_t* blk, uint8_t* u, uint8_t* scales) {
  if (t == GgmlType::Q6_K) {
    const uint8_t *ql = blk, *qh = blk + 128;
    for (int e = 0; e < kSuper; ++e) {
      int half = e / 128, quarter = e % 128 / 32, l = e % 32;
      uint8_t lo = ql[64 * half + l + 32 * (quarter % 2)] >> (4 * (quarter / 2)) & 15;
      uint8_t hi = qh[32 * half + l] >> (2 * quarter) & 3;
      u[e] = uint8_t(lo | hi << 4);
    }
    std::memcpy(scales, blk + 192, 16);
    return;
  }
  const uint8_t *sm = blk + 4, *qs = blk + (t == GgmlType::Q5_K ? 48 : 16), *qh = blk + 16;
  for (int e = 0; e < kSuper; ++e) {
    int s = e / 32, l = e % 32;
    u[e] = uint8_t(qs[32 * (s / 2) + l] >> (4 * (s % 2)) & 15);
    if (t == GgmlType::Q5_K) u[e] |= uint8_t((qh[l] >> s & 1) << 4);
  }
  for (int s = 0; s < 8; ++s) {  // llama.cpp's get_scale_min_k4
    scales[2 * s] = s < 4 ? sm[s] & 63 : uint8_t((sm[s + 4] & 15) | (sm[s - 4] >> 6) << 4);
    scales[2 * s + 1] = s < 4 ? sm[s + 4] & 63 : uint8_t((sm[s + 4] >> 4) | (sm[s] >> 6) << 4);
  }
}

}  // namespace tgc
