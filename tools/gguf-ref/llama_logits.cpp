// llama_logits: evaluate a GGUF model with llama.cpp's C API and dump logits of every position.
// usage: llama_logits MODEL.gguf BACKEND_DIR OUT.npy (--text "..." | --tokens 1,2,3) [--threads N] [--iters N]
// [--f32-kv]
#include "llama.h"
#include "ggml-backend.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <algorithm>

static void write_npy(const char* path, const float* data, int rows, int cols) {
  FILE* f = fopen(path, "wb");
  char hdr[128];
  int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols);
  int total = 10 + n + 1;
  int pad = (64 - total % 64) % 64;
  std::string h(hdr);
  h.append(pad, ' ');
  h.push_back('\n');
  unsigned short hl = (unsigned short)h.size();
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fwrite(&hl, 2, 1, f);
  fwrite(h.data(), 1, h.size(), f);
  fwrite(data, sizeof(float), (size_t)rows * cols, f);
  fclose(f);
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s MODEL BACKEND_DIR OUT.npy --text T | --tokens a,b,c [--threads N] [--iters N]\n",
            argv[0]);
    return 2;
  }
  const char* model_path = argv[1];
  const char* bdir = argv[2];
  const char* out = argv[3];
  std::string text;
  std::vector<llama_token> toks;
  int threads = 1, iters = 3;
  bool f32_kv = false;
  for (int i = 4; i < argc; i++) {
    if (!strcmp(argv[i], "--text") && i + 1 < argc)
      text = argv[++i];
    else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) {
      char* s = argv[++i];
      for (char* p = strtok(s, ","); p; p = strtok(nullptr, ",")) toks.push_back(atoi(p));
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--f32-kv"))
      f32_kv = true;
  }
  ggml_backend_load_all_from_path(bdir);
  llama_log_set([](enum ggml_log_level, const char*, void*) {}, nullptr);
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(model_path, mp);
  if (!model) {
    fprintf(stderr, "load failed\n");
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  if (toks.empty()) {
    toks.resize(text.size() + 16);
    int n = llama_tokenize(vocab, text.c_str(), (int)text.size(), toks.data(), (int)toks.size(), true, false);
    toks.resize(n);
  }
  const int n_vocab = llama_vocab_n_tokens(vocab);
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = std::max<int>(64, (int)toks.size() + 8);
  cp.n_batch = cp.n_ctx;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  // --f32-kv: f32 K/V cache and no flash attention, so attention runs in f32 (llama.cpp's default
  // rounds K, V and the attention weights to f16): tgc's exact f32 attention is compared with this.
  if (f32_kv) {
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  }
  std::vector<float> logits((size_t)toks.size() * n_vocab);
  std::vector<double> ms;
  for (int it = 0; it < iters; it++) {
    llama_context* ctx = llama_init_from_model(model, cp);
    llama_batch b = llama_batch_init((int)toks.size(), 0, 1);
    for (size_t i = 0; i < toks.size(); i++) {
      b.token[i] = toks[i];
      b.pos[i] = (llama_pos)i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = 1;
    }
    b.n_tokens = (int)toks.size();
    auto t0 = std::chrono::steady_clock::now();
    if (llama_decode(ctx, b) != 0) {
      fprintf(stderr, "decode failed\n");
      return 1;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    for (size_t i = 0; i < toks.size(); i++)
      memcpy(&logits[i * n_vocab], llama_get_logits_ith(ctx, (int)i), n_vocab * sizeof(float));
    llama_batch_free(b);
    llama_free(ctx);
  }
  write_npy(out, logits.data(), (int)toks.size(), n_vocab);
  std::sort(ms.begin(), ms.end());
  printf("{\"n_tokens\":%zu,\"n_vocab\":%d,\"median_ms\":%.3f,\"tokens\":[", toks.size(), n_vocab, ms[ms.size() / 2]);
  for (size_t i = 0; i < toks.size(); i++) printf("%s%d", i ? "," : "", toks[i]);
  printf("]}\n");
  llama_model_free(model);
  return 0;
}
