// The frontends behind one door: a model file is opened by the frontend its format names (ONNX or
// GGUF), and the tools see only a ModelSource (model/dynamic_dims.h) or a Model.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "model/dynamic_dims.h"

namespace tgc {

// What the user fixed about a model's inputs (--input-shape, --input-value, -i shapes, --dynamic).
struct ImportOptions {
  // Shapes for inputs whose dims are symbolic ("batch", "N", ...) or to override them. A dim
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
  // The frontend declares their VARs in the graph (traced at the sizes dim_sizes gives).
  std::map<std::string, int64_t> dynamic;
  // GGUF: rows of the KV cache (--ctx N), the positions a sequence can reach; 0: the model's
  // context length, at most kDefaultContext (frontend/gguf/gguf_import.h).
  int64_t context = 0;
  // GGUF: the KV cache's element type (--kv-type): F32, or F16 (half the memory, as llama.cpp's
  // default; the attention still computes in f32).
  DType kv_type = DType::F32;
  // GGUF: > 0 computes quantized matmuls (int8_matmul.h) as int8 dot products over activations quantized to
  // q8_0, as llama.cpp does, with the weights repacked in tiles of this many rows (the CPU's i32
  // vector lanes); 0 dequantizes the weights to f32 instead (GPU targets, the interpreter).
  int64_t int8_rows = 0;
  // ONNX: > 0 (x86 CPU targets: MLAS's NCHWc block, 16 with AVX-512, else 8) sums the float
  // convs whose outputs a quantizer reads as onnxruntime's MLAS does, and the linear resizes after
  // them as its NCHWc upsample does, so that the quantized values equal onnxruntime's
  // (frontend/onnx/onnx_mlas_order.h); 0: tgc's own order.
  int64_t mlas_block = 0;
  // --max-trips N: a Loop whose trip count or condition is known only at run time is unrolled N
  // times, the iterations past its end masked (its scan outputs as long as the iterations run);
  // 0: such a loop is an error.
  int64_t max_loop_trips = 0;
  // --dynamic NAME=MAX/STEP: NAME takes multiples of STEP only (MAX one of them); its VAR counts
  // steps (model/dynamic_dims.h). Absent: 1.
  std::map<std::string, int64_t> dynamic_step;
};

// Whether the file starts with GGUF's magic (ONNX files are protobuf, which has none).
bool is_gguf_file(const std::string& path);

// `path` as a source of traces, by its format. Throws tgc::Error naming the file when no
// frontend reads it.
ModelSource open_model(const std::string& path, const ImportOptions& options);
// The model with every dim sized by `options` (no dynamic dims): for the reference interpreter.
Model import_model(const std::string& path, const ImportOptions& options);

}  // namespace tgc
