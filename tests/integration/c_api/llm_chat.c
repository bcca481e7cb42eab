/* The chat prompt through the C API of a GGUF model compiled --shared as libllm.so
 * (tests/integration/gguf/gguf_chat.sh): llm_chat_apply_template with the file's template (and
 * by name), then llm_tokenize with BOS and special tokens, gives the tokens --chat runs for the
 * same turn; a template tgc does not know fails with a message.
 * usage: llm_chat SYSTEM USER CHAT.npy REPLY_TOKENS (CHAT.npy: --chat --tokens-out after that one
 *   turn, i32 [p + REPLY_TOKENS]) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm.h"
#include "npy_payload.h"

int main(int argc, char** argv) {
  if (argc != 5) return fprintf(stderr, "usage: llm_chat SYSTEM USER CHAT.npy REPLY_TOKENS\n"), 2;
  size_t bytes = 0;
  int32_t* chat = read_npy_payload(argv[3], &bytes);
  int64_t want = chat ? (int64_t)(bytes / sizeof *chat) - atoll(argv[4]) : -1;
  llm_model* m = llm_create(0);
  if (!chat || !m) return fprintf(stderr, "FAIL llm_chat: %s\n", chat ? llm_last_error() : "cannot read CHAT.npy"), 1;
  llm_chat_message msgs[2] = {{"system", argv[1]}, {"user", argv[2]}};
  int fail = 0;
  for (int by_name = 0; by_name < 2; ++by_name) {
    const char* tmpl = by_name ? "llama3" : NULL;
    char small[8];
    int64_t len = llm_chat_apply_template(m, tmpl, msgs, 2, 1, small, sizeof small); /* too small: the length */
    char* text = len > 0 ? malloc((size_t)len + 1) : NULL;
    int32_t ids[512];
    int64_t n = text && llm_chat_apply_template(m, tmpl, msgs, 2, 1, text, len + 1) == len
                    ? llm_tokenize(m, text, (size_t)len, 3, ids, 512)
                    : -1;
    int ok = n == want && memcmp(ids, chat, (size_t)n * sizeof *ids) == 0 && text[len] == 0;
    printf("%s llm_chat_apply_template(%s) then llm_tokenize(.., 3): %lld tokens, %s --chat's prompt\n",
           ok ? "ok  " : "FAIL", tmpl ? "\"llama3\"" : "NULL: the file's", (long long)n, ok ? "those of" : "not");
    fail |= !ok;
    free(text);
  }
  int64_t bad = llm_chat_apply_template(m, "{{ not a template }}", msgs, 2, 1, NULL, 0);
  int ok = bad == -1 && strstr(llm_last_error(), "not one tgc recognises") != NULL;
  printf("%s an unknown template: -1, \"%s\"\n", ok ? "ok  " : "FAIL", llm_last_error());
  llm_destroy(m);
  free(chat);
  return fail || !ok;
}
