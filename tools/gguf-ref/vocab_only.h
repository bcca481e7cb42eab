// The reference tools' model loading: llama.cpp's backends from BACKEND_DIR, its log silenced,
// the file's vocabulary only (no weights). NULL, having said so on stderr, where the load fails.
#pragma once
#include <cstdio>

#include "ggml-backend.h"
#include "llama.h"

inline llama_model* load_vocab_only(const char* path, const char* backend_dir) {
  ggml_backend_load_all_from_path(backend_dir);
  llama_log_set([](enum ggml_log_level, const char*, void*) {}, nullptr);
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(path, mp);
  if (!model) fprintf(stderr, "%s: load failed\n", path);
  return model;
}
