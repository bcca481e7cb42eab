// A model as every frontend delivers it and every later stage takes it: a graph with named inputs
// and outputs, and which of their dims are left to run time. Frontend-neutral: ONNX and GGUF
// build one, codegen and the tools read it.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "model/vocab.h"

namespace tgc {

struct NamedTensor {
  std::string name;  // the model's value name
  Tensor tensor;
};

// An input dim that neither the model nor the options give a size.
struct UnknownDim {
  std::string input;  // input name
  int axis;
  std::string param;  // the model's name for the dim (ONNX dim_param; "" when unnamed)
  std::string key;    // param, or "input:axis" for an unnamed dim
};

struct Model {
  std::unique_ptr<Graph> graph;
  std::vector<NamedTensor> inputs;  // each an input BUFFER
  std::vector<NamedTensor> outputs;
  std::string path;
  // A run-time batch dim (model/dynamic_dims.h): its name, and per input and output whether its
  // axis 0 is that dim. The graph is then the program of one sample (batch 1).
  std::string batch_dim;
  std::vector<bool> batched_inputs, batched_outputs;
  // Run-time dims (VARs, declared in graph->vars()): per input and output, per dim, the slot of
  // the VAR it is or -1; empty for a tensor without one. The graph is traced at their maxima.
  std::vector<std::vector<int32_t>> input_dim_vars, output_dim_vars;
  // Per output: the tables of its dims that follow a run-time dim through pads or windows
  // (output_dim_vars -2 - j: the table at j is the VAR's slot, then the size at each value 1..max).
  std::vector<std::vector<int64_t>> output_dim_sizes;
  // A KV cache: state that each run extends by its tokens. kv_length_var is the VAR of the
  // state's length after a run (bound by the runtime: the length before plus dim 0 of input
  // kv_count_input); empty without one.
  std::string kv_length_var;
  int kv_count_input = 0;
  // With a KV cache: the VAR of output 0's row count (a language model's logits), bound by the
  // runtime to the token count (every row) or 1 (the last row: a prefill skips the head for the
  // others); empty without one.
  std::string logit_rows_var;
  // The tokenizer the artifact carries (GGUF files with a SentencePiece-style vocabulary).
  std::optional<Vocab> vocab;

  std::vector<const UOp*> output_roots() const {
    std::vector<const UOp*> r;
    for (const NamedTensor& o : outputs) r.push_back(o.tensor.uop());
    return r;
  }
  // Whether some VAR's value is computed by the model from data (Graph::var_value).
  bool computes_sizes() const {
    for (const UOp* v : graph->vars())
      if (graph->var_value(v)) return true;
    return false;
  }
  // What a schedule computes: the outputs, then the nodes computing data-dependent VARs in VAR
  // order, each stored in a buffer the runtime reads once its kernel has run.
  std::vector<const UOp*> schedule_roots() const {
    std::vector<const UOp*> r = output_roots();
    for (const UOp* v : graph->vars())
      if (const UOp* x = graph->var_value(v)) r.push_back(x);
    return r;
  }
};

}  // namespace tgc
