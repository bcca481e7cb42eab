// The runtime's tokenizer (runtime-stub/llm/tokenizer.c) on a GGUF vocabulary against llama.cpp's
// test vectors (ggml-vocab-NAME.gguf.inp: texts separated by "\n__ggml_vocab_test__\n"; .out: the
// ids llama.cpp gives each, no BOS, special tokens not parsed), case by case; and detokenizes
// llama.cpp's ids (tgc_token_piece, one token at a time, without SPM's leading space) back to each
// text.
// usage: gguf_tokenize VOCAB.gguf INP OUT   (exit 0 when every case matches both ways)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/gguf/gguf_vocab.h"
#include "codegen/vocab_view.h"
#include "ir/error.h"

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw tgc::Error(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return std::fprintf(stderr, "usage: gguf_tokenize VOCAB.gguf INP OUT\n"), 2;
  try {
    tgc::Vocab v = tgc::gguf_vocab(tgc::GgufFile::open(argv[1]));
    tgc_vocab view = vocab_view(v);
    tgc_tokenizer* t = tgc_tokenizer_create(&view);
    if (!t) throw tgc::Error("out of memory");
    std::string raw = slurp(argv[2]);
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t pos = 0; pos < raw.size();) {
      size_t next = raw.find(sep, pos);
      texts.push_back(raw.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
      if (next == std::string::npos) break;
      pos = next + sep.size();
    }
    std::istringstream outs(slurp(argv[3]));
    std::vector<std::vector<int32_t>> want;
    for (std::string line; std::getline(outs, line);) {
      std::istringstream ls(line);
      want.emplace_back();
      for (int32_t id; ls >> id;) want.back().push_back(id);
    }
    if (texts.size() != want.size())
      throw tgc::Error(std::string(argv[2]) + ": " + std::to_string(texts.size()) + " texts for " +
                       std::to_string(want.size()) + " outputs");
    int failed = 0, returned = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      std::string back;
      for (int32_t id : want[i]) {
        std::string piece(size_t(tgc_token_piece(&view, id, nullptr, 0)), '\0');
        tgc_token_piece(&view, id, piece.data(), int64_t(piece.size()));
        back += piece;
      }
      if (view.model == TGC_VOCAB_SPM && view.add_space_prefix && !back.empty() && back[0] == ' ') back.erase(0, 1);
      returned += back == texts[i];
      std::vector<int32_t> got(texts[i].size() * 2 + 8);
      int64_t n = tgc_tokenize(t, texts[i].data(), texts[i].size(), 0, got.data(), int64_t(got.size()));
      if (n > int64_t(got.size())) {  // more ids than room: again with enough
        got.resize(size_t(n));
        n = tgc_tokenize(t, texts[i].data(), texts[i].size(), 0, got.data(), int64_t(got.size()));
      }
      if (n >= 0) got.resize(size_t(n));
      if (n < 0 || got != want[i]) {
        if (++failed <= 5) {
          std::cout << "FAIL case " << i << " '" << texts[i].substr(0, 60) << "': got";
          for (int32_t id : got) std::cout << " " << id;
          std::cout << ", llama.cpp:";
          for (int32_t id : want[i]) std::cout << " " << id;
          std::cout << "\n";
        }
      }
    }
    tgc_tokenizer_destroy(t);
    bool ok = !failed && size_t(returned) == texts.size();
    std::cout << (ok ? "ok   " : "FAIL ") << argv[1] << " (" << tgc_vocab_kind(&view)
              << "): " << texts.size() - size_t(failed) << " of " << texts.size() << " cases give llama.cpp's ids; "
              << returned << " of " << texts.size() << " detokenize back to the text\n";
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "gguf_tokenize: error: " << e.what() << "\n";
    return 1;
  }
}
