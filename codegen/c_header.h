// The C header written beside a shared-library artifact (NAME.h): the model's C API, with its
// inputs and outputs listed as the runtime presents them.
#pragma once
#include <string>
#include <vector>

#include "model/model.h"

namespace tgc {

// An input's or output's shape with its run-time dims (batch, VARs) shown as -1.
Shape declared_shape(const NamedTensor& t, bool batched, const std::vector<int32_t>& dim_vars);

template <class T>
T at_or(const std::vector<T>& v, size_t i, T fallback) {
  return i < v.size() ? v[i] : fallback;
}

// Does the .so export the language-model calls (NAME_eval, NAME_logits, NAME_sample, ...)? A KV
// cache, and logits f32 [n_tokens, n_vocab] as the first output.
bool has_llm_api(const Model& m);

// NAME.h for the model `m` compiled as libNAME.so.
// cpu_note: empty, or a sentence on the CPU features the kernels need (a comment before the API).
std::string header_text(const std::string& name, const Model& m, const std::string& cpu_note = "");

}  // namespace tgc
