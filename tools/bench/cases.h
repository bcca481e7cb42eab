// What the benchmark runs: the models found in the model directories and the generated
// microbenchmarks, each with a fixed input set (shapes from tools/bench/inputs.txt where the
// model leaves dims dynamic, values from a seeded generator).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/uop.h"

namespace tgc::bench {

struct InputSpec {
  std::string name;  // the ONNX input name
  DType dtype = DType::F32;
  Shape shape;                 // -1 where the model leaves a dim dynamic and inputs.txt is silent
  bool shape_fixed = false;    // some dim was dynamic in the model: tgc needs --input-shape
  std::optional<double> fill;  // a constant value (e.g. a sample rate) instead of random data
  double scale = 1;            // random inputs: standard normal times this
  bool compiled = false;       // NAME:compiled=V: fill V, fixed in the artifact by --input-value
  bool symbolic_dim0 = false;  // the model leaves dim 0 symbolic (a batch dim, maybe)
  bool batched = false;        // with_batch: dim 0 is the batch, left to run time in tgc (`?`)
};

struct Case {
  std::string name;   // the table's label: the model's file stem, or the micro name
  std::string model;  // .onnx path
  bool micro = false;
  std::string metric = "flops";  // what the throughput column shows: "flops" or "bytes"
  int64_t sgemm_n = 0;           // a matmul microbenchmark is held against sgemm of this size
  std::vector<InputSpec> inputs;
  std::string error;  // why no input set can be made (the case is then reported, not run)
  double tol = 0;     // output agreement for this case when above --tol (fp16 twins)

  std::string shape_summary() const;                  // "x=1x3x48x320"
  std::vector<std::string> input_shape_args() const;  // tgc compile --input-shape/--input-value ...
};

// inputs.txt: per model file name, the tokens that fix shapes and values (format in the file).
using InputTable = std::map<std::string, std::vector<std::string>>;
InputTable read_input_table(const std::string& path);

// The *.onnx files of `dir`, sorted by name.
std::vector<std::string> onnx_files(const std::string& dir);

// Reads the model's inputs and applies `tokens`; a micro model carries its metric in metadata.
Case load_case(const std::string& model_path, const std::vector<std::string>& tokens, bool micro);

// The case at batch size n: inputs whose dim 0 is symbolic get n there, and tgc compiles with
// that dim left dynamic (--input-shape NAME=?,...). A model with no such input gets an error.
Case with_batch(Case c, int64_t n);

// Writes one .npy per input under `dir` (same values on every call) and returns the
// -i NAME=FILE arguments: every input for onnxruntime; for tgc, all but those the artifact has
// fixed (NAME:compiled=V).
struct InputArgs {
  std::vector<std::string> ort, tgc;
};
InputArgs write_inputs(const Case& c, const std::string& dir);

}  // namespace tgc::bench
