// A run-time batch dim. When the only input dims without a size are one leading dim that the
// inputs share (the batch), and no node mixes the samples of a batch, the model is compiled as the
// program of one sample: the runtime binds the batch size from the input shapes and runs that
// program once per sample. The proof is passes/batch_axis on the model traced at two batch sizes.
#pragma once
#include <string>

#include "frontend/onnx/onnx_import.h"

namespace tgc {

// Batch sizes of the two traces: unlike 1, 2 or 3, rarely the size of another dim.
inline constexpr int64_t kBatchTraceA = 13, kBatchTraceB = 17;

// Imports `path` with every input dim sized by `options`, or with one leading dim left to run time
// (Model::batch_dim set, the graph traced at batch 1). Otherwise the error names the dims that need
// --input-shape and, for a leading dim, why it cannot stay dynamic.
Model import_onnx_dynamic(const std::string& path, const ImportOptions& options);

}  // namespace tgc
