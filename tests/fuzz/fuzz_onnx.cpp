// ONNX import up to a scheduled graph (what `tgc inspect --stage=kernels` does): any bytes are a
// schedule or a tgc::Error. Any other exception escapes and is reported as a crash.
#include "frontend/frontend.h"
#include "ir/error.h"
#include "model/dynamic_dims.h"
#include "passes/schedule.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* path = fuzz_write_file(data, size, ".onnx");
  // ONNX has no magic: a GGUF-looking input belongs to fuzz_gguf.
  if (size >= 4 && data[0] == 'G' && data[1] == 'G' && data[2] == 'U' && data[3] == 'F') return -1;
  try {
    tgc::Model m = tgc::build_dynamic_model(tgc::open_model(path, {}));
    tgc::schedule(*m.graph, m.output_roots());
  } catch (const tgc::Error&) {
  }
  return 0;
}
