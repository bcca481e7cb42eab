/* Chat templates: a GGUF file's tokenizer.chat_template (Jinja) recognised by distinctive substrings,
 * as llama.cpp's llm_chat_detect_template does (src/llama-chat.cpp), and rendered by the same rules
 * as its llm_chat_apply_template, so that a conversation becomes llama.cpp's prompt text. No Jinja
 * is evaluated: a template of another family is named and refused. C11, no dependencies. */
#ifndef TGC_CHAT_TEMPLATE_H
#define TGC_CHAT_TEMPLATE_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One message: role "system", "user" or "assistant" (another role is rendered as its name where
 * the template writes roles), content UTF-8 text. Laid out as llama.cpp's llama_chat_message. */
typedef struct tgc_chat_message {
  const char* role;
  const char* content;
} tgc_chat_message;

/* The templates tgc renders, by llama.cpp's names for them. */
enum tgc_chat_template {
  TGC_CHAT_UNKNOWN = -1,
  TGC_CHAT_CHATML = 0,       /* "chatml": Qwen 2/2.5/3, ... */
  TGC_CHAT_LLAMA2,           /* "llama2": [INST] without a system message */
  TGC_CHAT_LLAMA2_SYS,       /* "llama2-sys": <<SYS>> */
  TGC_CHAT_LLAMA2_SYS_BOS,   /* "llama2-sys-bos": <s> inside the history */
  TGC_CHAT_LLAMA2_SYS_STRIP, /* "llama2-sys-strip": Llama 2 chat's own (content.strip()) */
  TGC_CHAT_MISTRAL_V1,       /* "mistral-v1", "mistral-v3", "mistral-v3-tekken", "mistral-v7", */
  TGC_CHAT_MISTRAL_V3,       /* "mistral-v7-tekken": Mistral's [INST] templates */
  TGC_CHAT_MISTRAL_V3_TEKKEN,
  TGC_CHAT_MISTRAL_V7,
  TGC_CHAT_MISTRAL_V7_TEKKEN,
  TGC_CHAT_PHI3,   /* "phi3": Phi-3, Phi-3.5 */
  TGC_CHAT_PHI4,   /* "phi4": <|im_sep|> */
  TGC_CHAT_GEMMA,  /* "gemma": Gemma 1/2/3 (<start_of_turn>) */
  TGC_CHAT_LLAMA3, /* "llama3": Llama 3.x */
  TGC_CHAT_COUNT
};

/* The template that tmpl (a Jinja string, or one of the names above) is, or TGC_CHAT_UNKNOWN. Where
 * llama.cpp recognises a template tgc does not render, *other is its llama.cpp name ("zephyr"),
 * else NULL (other may be NULL). */
int tgc_chat_detect(const char* tmpl, const char** other);
const char* tgc_chat_name(int tmpl); /* "chatml", ...; "unknown" */

/* The text of the token that ends a turn of the template ("<|im_end|>", "<|eot_id|>", "</s>"...):
 * generation in a chat stops there (and at the vocabulary's EOS). */
const char* tgc_chat_end_of_turn(int tmpl);

/* The prompt text of msgs[0, n) in template tmpl, with the assistant's header after them when
 * add_assistant (templates that have one). Writes up to cap bytes to out, NUL-terminated when
 * there is room, and returns the text's length (cap or more: call again with more room); -1 for
 * an unknown template. */
int64_t tgc_chat_render(int tmpl, const tgc_chat_message* msgs, size_t n, int add_assistant, char* out, int64_t cap);

#ifdef __cplusplus
}
#endif
#endif
