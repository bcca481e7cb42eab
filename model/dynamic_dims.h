// Dynamic input dims, two ways, each proven on traces of the model at two sizes (model/dim_axes):
// - The batch: when the only input dims without a size are one leading dim that the inputs share,
//   and no node mixes the samples of a batch, the model is compiled as the program of one sample;
//   the runtime binds the batch size from the input shapes and runs that program once per sample.
// - Run-time dims (--dynamic NAME=MAX, e.g. a sequence length): the model is compiled at the upper
//   bound MAX with a VAR for the dim (second trace at MAX/2+1); tensors keep the upper bound's
//   layout, loops over the dim and what pads and windows make of it stop at its run-time size, and the runtime copies
//   inputs and outputs between that layout and dense tensors of the bound size.
// Any frontend can provide the traces: it gives a ModelSource.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/model.h"

namespace tgc {

// Batch sizes of the two traces: unlike 1, 2 or 3, rarely the size of another dim.
inline constexpr int64_t kBatchTraceA = 13, kBatchTraceB = 17;

// A model file as a frontend sees it, before its dims are settled.
struct ModelSource {
  std::string path;                        // for messages
  std::vector<UnknownDim> unknown;         // input dims the user's options leave without a size
  std::map<std::string, int64_t> dynamic;  // --dynamic NAME=MAX: dims to keep as VARs
  // Builds the model with these sizes for symbolic dims (by UnknownDim::key) on top of the
  // user's options, with the `dynamic` dims' VARs declared in the graph. Throws tgc::Error,
  // listing the dims still without a size.
  std::function<Model(const std::map<std::string, int64_t>& dim_sizes)> build;
  // Those of `dynamic` that no input carries: bound by the runtime itself (a KV cache's length
  // after a run, which it tracks across runs).
  std::vector<std::string> internal;
  // --dynamic NAME=MAX/STEP: the dims that take multiples of STEP only (their VARs count steps).
  std::map<std::string, int64_t> dynamic_step;
};

// The model for compiling. With src.dynamic: those dims become VARs (the model's
// input_dim_vars/output_dim_vars say where they are). Otherwise every input dim sized, or one
// leading dim left to run time as the batch (Model::batch_dim set, the graph traced at batch 1).
// Errors name the dims that need --input-shape and why a dim cannot stay dynamic (the node that
// breaks the rules).
Model build_dynamic_model(const ModelSource& src);

}  // namespace tgc
