// ONNX import: protobuf parsing (initializers, attributes, opsets, external data) and the
// mapping of each ONNX op onto Tensor API calls.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace tgc {

struct ImportOptions {
  // Shapes for inputs whose ONNX dims are symbolic ("batch", "N", ...) or to override them.
  std::map<std::string, Shape> input_shapes;
  // Shapes of the data at hand (e.g. -i files): used only for dims the model leaves dynamic.
  std::map<std::string, Shape> shape_hints;
  // Inputs fixed to these values at compile time: the model is specialised for them (an If on
  // such an input folds) and they are no longer inputs. One value fills the whole input.
  std::map<std::string, std::vector<double>> input_values;
};

struct NamedTensor {
  std::string name;  // the ONNX value name
  Tensor tensor;
};

struct Model {
  std::unique_ptr<Graph> graph;
  std::vector<NamedTensor> inputs;   // each an input BUFFER
  std::vector<NamedTensor> outputs;
  std::string path;
};

Model import_onnx(const std::string& path, const ImportOptions& options = {});

// Reads a serialized onnx.TensorProto (.pb), as in the ONNX test data sets.
HostTensor read_onnx_tensor(const std::string& path);

}  // namespace tgc
