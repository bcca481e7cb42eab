#include "frontend/frontend.h"

#include <fstream>

#include "frontend/gguf/gguf_import.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/error.h"

namespace tgc {
bool is_gguf_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

ModelSource open_model(const std::string& path, const ImportOptions& options) {
  if (is_gguf_file(path)) return gguf_model_source(path, options);
  return onnx_model_source(path, options);
}

Model import_model(const std::string& path, const ImportOptions& options) {
  if (is_gguf_file(path)) return import_gguf(path, options);
  Model m = import_onnx(path, options);
  // Sizes the model computes from data: traced at two sizes to find the axes they lay along.
  return !m.computes_sizes() ? std::move(m) : build_dynamic_model(onnx_model_source(path, options));
}

}  // namespace tgc
