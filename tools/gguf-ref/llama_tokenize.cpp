// llama_tokenize: llama.cpp's token ids for each text of a test-vector file, in llama.cpp's own
// .inp/.out format (texts separated by "\n__ggml_vocab_test__\n"; one line of ids per text; no BOS,
// special tokens not parsed), so that tgc's tokenizer can be compared on any text.
// usage: llama_tokenize VOCAB.gguf BACKEND_DIR TEXTS.inp IDS.out
#include "vocab_only.h"
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s VOCAB.gguf BACKEND_DIR TEXTS.inp IDS.out\n", argv[0]);
    return 2;
  }
  llama_model* model = load_vocab_only(argv[1], argv[2]);
  if (!model) return 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::ifstream in(argv[3], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string raw = ss.str(), sep = "\n__ggml_vocab_test__\n";
  FILE* out = fopen(argv[4], "w");
  if (!in || !out) {
    fprintf(stderr, "cannot read %s or write %s\n", argv[3], argv[4]);
    return 1;
  }
  for (size_t pos = 0;;) {
    size_t next = raw.find(sep, pos);
    std::string text = raw.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    std::vector<llama_token> ids(text.size() * 4 + 8);
    int n = llama_tokenize(vocab, text.data(), (int)text.size(), ids.data(), (int)ids.size(), false, false);
    if (n < 0) {
      fprintf(stderr, "llama_tokenize failed\n");
      return 1;
    }
    for (int i = 0; i < n; ++i) fprintf(out, i ? " %d" : "%d", ids[i]);
    fprintf(out, "\n");
    if (next == std::string::npos) break;
    pos = next + sep.size();
  }
  fclose(out);
  llama_model_free(model);
  return 0;
}
