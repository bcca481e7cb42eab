// llama_chat_template: llama.cpp's chat prompt for a conversation, with the model file's
// tokenizer.chat_template (llama_chat_apply_template: its built-in templates, recognised by
// substrings), as token ids (BOS where the model adds one, special tokens parsed, as its chat
// tools tokenize a prompt): one line of ids on stdout. Exit 3 when llama.cpp does not recognise the template.
// usage: llama_chat_template MODEL.gguf BACKEND_DIR ADD_ASSISTANT(0|1) ROLE CONTENT [ROLE CONTENT ...]
#include "vocab_only.h"
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 6 || argc % 2) {
    fprintf(stderr, "usage: %s MODEL.gguf BACKEND_DIR ADD_ASSISTANT ROLE CONTENT [ROLE CONTENT ...]\n", argv[0]);
    return 2;
  }
  llama_model* model = load_vocab_only(argv[1], argv[2]);
  if (!model) return 1;
  std::vector<llama_chat_message> msgs;
  for (int i = 4; i + 1 < argc; i += 2) msgs.push_back({argv[i], argv[i + 1]});
  const char* tmpl = llama_model_chat_template(model, nullptr);
  bool add_ass = atoi(argv[3]) != 0;
  int n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), add_ass, nullptr, 0);
  if (n < 0) {
    fprintf(stderr, "llama.cpp does not recognise the chat template\n");
    return 3;
  }
  std::string text(size_t(n) + 1, '\0');
  llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), add_ass, &text[0], n + 1);
  text.resize(size_t(n));
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::vector<llama_token> ids(text.size() * 4 + 8);
  int k = llama_tokenize(vocab, text.data(), (int)text.size(), ids.data(), (int)ids.size(), true, true);
  if (k < 0) {
    fprintf(stderr, "llama_tokenize failed\n");
    return 1;
  }
  for (int i = 0; i < k; ++i) printf(i ? " %d" : "%d", ids[i]);
  printf("\n");
  llama_model_free(model);
  return 0;
}
