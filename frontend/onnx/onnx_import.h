// ONNX import: protobuf parsing (initializers, attributes, opsets, external data) and the
// mapping of each ONNX op onto Tensor API calls.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/frontend.h"
#include "ir/tensor.h"
#include "model/dynamic_dims.h"
#include "model/model.h"

namespace tgc {

Model import_onnx(const std::string& path, const ImportOptions& options = {});

// `path` as a source of traces for model/dynamic_dims.h: its dims without a size, and an import
// with extra dim sizes (and the --dynamic VARs declared).
ModelSource onnx_model_source(const std::string& path, const ImportOptions& options);

// The input dims that `options` leave without a size (input and axis order).
std::vector<UnknownDim> unknown_input_dims(const std::string& path, const ImportOptions& options = {});

// Reads a serialized onnx.TensorProto (.pb), as in the ONNX test data sets.
HostTensor read_onnx_tensor(const std::string& path);

}  // namespace tgc
