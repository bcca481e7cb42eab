// tgc's chat prompt for a conversation, as tools/gguf-ref/llama_chat_template.cpp prints llama.cpp's:
// the model file's tokenizer.chat_template recognised and rendered by the runtime
// (runtime-stub/llm/chat_template.c), tokenized by its tokenizer (BOS where the model adds one,
// special tokens parsed); one line of ids on stdout, the template's name on stderr. Exit 3 when tgc
// does not recognise the template.
// usage: gguf_chat_render MODEL.gguf ADD_ASSISTANT(0|1) ROLE CONTENT [ROLE CONTENT ...]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "codegen/vocab_view.h"
#include "frontend/gguf/gguf_vocab.h"
#include "ir/error.h"
#include "runtime-stub/llm/chat_template.h"

int main(int argc, char** argv) {
  if (argc < 5 || argc % 2 == 0)
    return std::fprintf(stderr, "usage: gguf_chat_render MODEL.gguf ADD_ASSISTANT ROLE CONTENT [ROLE CONTENT ...]\n"),
           2;
  try {
    tgc::Vocab v = tgc::gguf_vocab(tgc::GgufFile::open(argv[1]));
    tgc_vocab view = vocab_view(v);
    const char* other = nullptr;
    int t = tgc_chat_detect(view.chat_template, &other);
    std::fprintf(stderr, "%s\n", t >= 0 ? tgc_chat_name(t) : other ? other : "unknown");
    if (t < 0) return 3;
    std::vector<tgc_chat_message> msgs;
    for (int i = 3; i + 1 < argc; i += 2) msgs.push_back({argv[i], argv[i + 1]});
    int add = std::atoi(argv[2]);
    int64_t n = tgc_chat_render(t, msgs.data(), msgs.size(), add, nullptr, 0);
    std::string text(size_t(n) + 1, '\0');
    tgc_chat_render(t, msgs.data(), msgs.size(), add, text.data(), n + 1);
    text.resize(size_t(n));
    tgc_tokenizer* tok = tgc_tokenizer_create(&view);
    std::vector<int32_t> ids(text.size() * 4 + 8);
    int flags = TGC_TOKENIZE_SPECIAL | (v.add_bos ? TGC_TOKENIZE_BOS : 0);
    int64_t k = tok ? tgc_tokenize(tok, text.data(), text.size(), flags, ids.data(), int64_t(ids.size())) : -1;
    tgc_tokenizer_destroy(tok);
    if (k < 0) throw tgc::Error("the prompt cannot be tokenized");
    for (int64_t i = 0; i < k; ++i) std::printf(i ? " %d" : "%d", ids[size_t(i)]);
    std::printf("\n");
    return 0;
  } catch (const tgc::Error& e) {
    std::fprintf(stderr, "gguf_chat_render: %s\n", e.what());
    return 1;
  }
}
