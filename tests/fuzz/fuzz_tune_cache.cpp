// The tuning cache (tune/tune_cache.cpp) opened on any bytes: an entry, nothing, or a tgc::Error
// (which the tuner turns into a warning and a search without the cache). Any other exception or a
// sanitizer report is a crash. A lookup and a store both run, as a compile does.
#include "ir/error.h"
#include "tests/fuzz/fuzz_file.h"
#include "tune/tune_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* path = fuzz_write_file(data, size, ".sqlite");
  try {
    tgc::TuneCache c(path);
    (void)c.find("cpu", "x86_64 test", "k0 key");
    c.store("cpu", "x86_64 test", "k1 key", {"UPCAST 0 4", 1.5, 2.5}, "k1");
    (void)c.find("cpu", "x86_64 test", "k1 key");
  } catch (const tgc::Error&) {
  }
  return 0;
}
