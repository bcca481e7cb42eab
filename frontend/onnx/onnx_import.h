// ONNX import: protobuf parsing (initializers, attributes, opsets, external data) and the
// mapping of each ONNX op onto Tensor API calls.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "model/dynamic_dims.h"
#include "model/model.h"

namespace tgc {

struct ImportOptions {
  // Shapes for inputs whose ONNX dims are symbolic ("batch", "N", ...) or to override them. A dim
  // of -1 (`?` on the command line) keeps the model's own dim (dynamic if it is symbolic).
  std::map<std::string, Shape> input_shapes;
  // Shapes of the data at hand (e.g. -i files): used only for dims the model leaves dynamic.
  std::map<std::string, Shape> shape_hints;
  // Inputs fixed to these values at compile time: the model is specialised for them (an If on
  // such an input folds) and they are no longer inputs. One value fills the whole input.
  std::map<std::string, std::vector<double>> input_values;
  // Sizes of symbolic dims by key (see UnknownDim::key): how a run-time batch dim is traced.
  std::map<std::string, int64_t> dim_sizes;
  // --dynamic NAME=MAX: symbolic dims kept as run-time dims up to MAX (model/dynamic_dims.h).
  // import_onnx declares their VARs in the graph (traced at the sizes dim_sizes gives).
  std::map<std::string, int64_t> dynamic;
};

Model import_onnx(const std::string& path, const ImportOptions& options = {});

// `path` as a source of traces for model/dynamic_dims.h: its dims without a size, and an import
// with extra dim sizes (and the --dynamic VARs declared).
ModelSource onnx_model_source(const std::string& path, const ImportOptions& options);

// The input dims that `options` leave without a size (input and axis order).
std::vector<UnknownDim> unknown_input_dims(const std::string& path, const ImportOptions& options = {});

// Reads a serialized onnx.TensorProto (.pb), as in the ONNX test data sets.
HostTensor read_onnx_tensor(const std::string& path);

}  // namespace tgc
