#include "frontend/frontend.h"

#include <fstream>

#include "frontend/onnx/onnx_import.h"
#include "ir/error.h"

namespace tgc {
namespace {
// GGUF files start with their magic; ONNX files are protobuf, which has none.
bool is_gguf(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

void check_format(const std::string& path) {
  if (is_gguf(path)) throw Error(path + ": a GGUF model; tgc reads ONNX models only so far");
}
}  // namespace

ModelSource open_model(const std::string& path, const ImportOptions& options) {
  check_format(path);
  return onnx_model_source(path, options);
}

Model import_model(const std::string& path, const ImportOptions& options) {
  check_format(path);
  return import_onnx(path, options);
}

}  // namespace tgc
