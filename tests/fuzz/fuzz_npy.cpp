// The compiler's .npy reader (frontend/npy.cpp): any bytes are a tensor or a tgc::Error. Any
// other exception escapes and is reported as a crash: tgc would print it as an internal error.
#include "frontend/npy.h"
#include "ir/error.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* path = fuzz_write_file(data, size, ".npy");
  try {
    tgc::HostTensor t = tgc::read_npy(path);
    if (int64_t(t.bytes.size()) != tgc::numel(t.shape) * tgc::dtype_size(t.dtype)) abort();
  } catch (const tgc::Error&) {
  }
  return 0;
}
