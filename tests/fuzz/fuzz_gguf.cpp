// The GGUF reader and the llama graph built from it: any bytes are a model or a tgc::Error. The
// model is built at 4 tokens and 16 cache rows (an -i file of 4 tokens would do the same). Any
// other exception escapes and is reported as a crash.
#include "frontend/frontend.h"
#include "frontend/gguf/gguf_file.h"
#include "ir/error.h"
#include "model/dynamic_dims.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* path = fuzz_write_file(data, size, ".gguf");
  try {
    tgc::GgufFile f = tgc::GgufFile::open(path);
    (void)tgc::describe_gguf(f);
    tgc::ImportOptions o;
    o.input_shapes["tokens"] = {4};
    // 16 cache rows, not the model's context length: the rope tables and caches scale with it,
    // the code paths do not (4096 rows made each input 3-4x slower).
    o.context = 16;
    tgc::Model m = tgc::build_dynamic_model(tgc::open_model(path, o));
    (void)m.output_roots();
  } catch (const tgc::Error&) {
  }
  return 0;
}
