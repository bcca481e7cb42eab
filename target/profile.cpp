#include "target/profile.h"

namespace tgc {

TargetProfile cpu_profile(const std::function<bool(const std::string&)>& has, bool aarch64) {
  TargetProfile t;
  if (aarch64) {
    t.vector_lanes = 4, t.vector_registers = 32;
  } else if (has("avx512f")) {
    t.vector_lanes = 16, t.vector_registers = 32;
  } else if (has("avx2") || has("avx")) {
    t.vector_lanes = 8, t.vector_registers = 16;
  } else {
    t.vector_lanes = 4, t.vector_registers = 16;
  }
  return t;
}

TargetProfile opencl_profile() {
  TargetProfile t;
  t.gpu = true;
  t.vector_lanes = 1;
  t.max_local = 256;
  t.local_bytes = 16 << 10;
  return t;
}

}  // namespace tgc
