/* Chat templates recognised and rendered as llama.cpp does (chat_template.h): the checks below run
 * in llama.cpp's order, so a template another family's check catches first is that family's too. */
#include "llm/chat_template.h"

#include <string.h>

static const char* const names[TGC_CHAT_COUNT] = {"chatml",
                                                  "llama2",
                                                  "llama2-sys",
                                                  "llama2-sys-bos",
                                                  "llama2-sys-strip",
                                                  "mistral-v1",
                                                  "mistral-v3",
                                                  "mistral-v3-tekken",
                                                  "mistral-v7",
                                                  "mistral-v7-tekken",
                                                  "phi3",
                                                  "phi4",
                                                  "gemma",
                                                  "llama3"};

const char* tgc_chat_name(int tmpl) { return tmpl >= 0 && tmpl < TGC_CHAT_COUNT ? names[tmpl] : "unknown"; }

static int has(const char* s, const char* sub) { return strstr(s, sub) != NULL; }

/* llama.cpp's llm_chat_detect_template, up to its llama3 check (every later check is a family tgc
 * does not render). Returns a template, or UNKNOWN with *other naming llama.cpp's. */
static int detect(const char* t, const char** other) {
  if (has(t, "<|im_start|>"))
    return has(t, "<|im_sep|>")           ? TGC_CHAT_PHI4
           : has(t, "<end_of_utterance>") ? (*other = "smolvlm", -1)
                                          : TGC_CHAT_CHATML;
  if (strncmp(t, "mistral", 7) == 0 || has(t, "[INST]")) {
    if (has(t, "[SYSTEM_PROMPT]")) return TGC_CHAT_MISTRAL_V7;
    if (has(t, "' [INST] ' + system_message") || has(t, "[AVAILABLE_TOOLS]")) /* Mistral's v1, v3, v3-tekken */
      return has(t, " [INST]")      ? TGC_CHAT_MISTRAL_V1
             : has(t, "\"[INST]\"") ? TGC_CHAT_MISTRAL_V3_TEKKEN
                                    : TGC_CHAT_MISTRAL_V3;
    if (has(t, "content.strip()")) return TGC_CHAT_LLAMA2_SYS_STRIP;
    if (has(t, "bos_token + '[INST]")) return TGC_CHAT_LLAMA2_SYS_BOS;
    return has(t, "<<SYS>>") ? TGC_CHAT_LLAMA2_SYS : TGC_CHAT_LLAMA2;
  }
  if (has(t, "<|assistant|>") && has(t, "<|end|>")) return TGC_CHAT_PHI3;
  if (has(t, "[gMASK]<sop>")) return *other = "chatglm4", -1;
  if (has(t, "<|assistant|>") && has(t, "<|user|>"))
    return *other = has(t, "<|tool_declare|>") ? "exaone-moe" : has(t, "</s>") ? "falcon3" : "glmedge", -1;
  if (has(t, "<|{{ item['role'] }}|>") && has(t, "<|begin_of_image|>")) return *other = "glmedge", -1;
  if (has(t, "<|user|>") && has(t, "<|endoftext|>")) return *other = "zephyr", -1;
  if (has(t, "bos_token + message['role']")) return *other = "monarch", -1;
  if (has(t, "<start_of_turn>")) return TGC_CHAT_GEMMA;
  if (has(t, "'\\n\\nAssistant: ' + eos_token")) return *other = "orion", -1;
  if (has(t, "GPT4 Correct ")) return *other = "openchat", -1;
  if (has(t, "USER: ") && has(t, "ASSISTANT: ")) return *other = has(t, "SYSTEM: ") ? "vicuna-orca" : "vicuna", -1;
  if (has(t, "### Instruction:") && has(t, "<|EOT|>")) return *other = "deepseek", -1;
  if (has(t, "<|START_OF_TURN_TOKEN|>") && has(t, "<|USER_TOKEN|>")) return *other = "command-r", -1;
  if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>")) return TGC_CHAT_LLAMA3;
  return TGC_CHAT_UNKNOWN;
}

int tgc_chat_detect(const char* tmpl, const char** other) {
  const char* unused;
  if (!other) other = &unused;
  *other = NULL;
  if (!tmpl) return TGC_CHAT_UNKNOWN;
  for (int k = 0; k < TGC_CHAT_COUNT; ++k)
    if (strcmp(tmpl, names[k]) == 0) return k;
  return detect(tmpl, other);
}

const char* tgc_chat_end_of_turn(int tmpl) {
  switch (tmpl) {
    case TGC_CHAT_CHATML:
    case TGC_CHAT_PHI4: return "<|im_end|>";
    case TGC_CHAT_PHI3: return "<|end|>";
    case TGC_CHAT_GEMMA: return "<end_of_turn>";
    case TGC_CHAT_LLAMA3: return "<|eot_id|>";
    default: return "</s>"; /* the [INST] templates end a turn with EOS */
  }
}

/* ---- rendering ---- */
typedef struct {
  char* out;
  int64_t cap, n;
} text;

static void put_n(text* t, const char* s, size_t len) {
  for (size_t i = 0; i < len; ++i, ++t->n)
    if (t->n < t->cap) t->out[t->n] = s[i];
}
static void put(text* t, const char* s) { put_n(t, s, strlen(s)); }

static int space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); } /* C's isspace, any locale */

/* s without its leading and trailing white space (llama.cpp's trim): s[*b, *e) */
static void trim(const char* s, size_t* b, size_t* e) {
  *b = 0, *e = strlen(s);
  while (*b < *e && space(s[*b])) ++*b;
  while (*e > *b && space(s[*e - 1])) --*e;
}
static void put_trimmed(text* t, const char* s) {
  size_t b, e;
  trim(s, &b, &e);
  put_n(t, s + b, e - b);
}

static int is(const char* role, const char* name) { return strcmp(role, name) == 0; }

static void mistral(text* t, int tmpl, const tgc_chat_message* m, size_t n) {
  if (tmpl == TGC_CHAT_MISTRAL_V7 || tmpl == TGC_CHAT_MISTRAL_V7_TEKKEN) {
    const char* sp = tmpl == TGC_CHAT_MISTRAL_V7 ? " " : "";
    for (size_t i = 0; i < n; ++i) {
      if (is(m[i].role, "system"))
        put(t, "[SYSTEM_PROMPT]"), put(t, sp), put(t, m[i].content), put(t, "[/SYSTEM_PROMPT]");
      else if (is(m[i].role, "user"))
        put(t, "[INST]"), put(t, sp), put(t, m[i].content), put(t, "[/INST]");
      else
        put(t, sp), put(t, m[i].content), put(t, "</s>");
    }
    return;
  }
  const char* lead = tmpl == TGC_CHAT_MISTRAL_V1 ? " " : "";
  const char* trail = tmpl == TGC_CHAT_MISTRAL_V3_TEKKEN ? "" : " ";
  int inside = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!inside) put(t, lead), put(t, "[INST]"), put(t, trail), inside = 1;
    if (is(m[i].role, "system")) {
      put(t, m[i].content), put(t, "\n\n");
    } else if (is(m[i].role, "user")) {
      put(t, m[i].content), put(t, lead), put(t, "[/INST]");
    } else {
      put(t, trail);
      if (tmpl == TGC_CHAT_MISTRAL_V3)
        put_trimmed(t, m[i].content);
      else
        put(t, m[i].content);
      put(t, "</s>");
      inside = 0;
    }
  }
}

static void llama2(text* t, int tmpl, const tgc_chat_message* m, size_t n) {
  int inside = 1; /* the first [INST] goes without <s>: the tokenizer adds BOS */
  put(t, "[INST] ");
  for (size_t i = 0; i < n; ++i) {
    if (!inside) put(t, tmpl == TGC_CHAT_LLAMA2_SYS_BOS ? "<s>[INST] " : "[INST] "), inside = 1;
    void (*content)(text*, const char*) = tmpl == TGC_CHAT_LLAMA2_SYS_STRIP ? put_trimmed : put;
    if (is(m[i].role, "system")) {
      if (tmpl == TGC_CHAT_LLAMA2) /* no system message: its text opens the first turn */
        content(t, m[i].content), put(t, "\n");
      else
        put(t, "<<SYS>>\n"), content(t, m[i].content), put(t, "\n<</SYS>>\n\n");
    } else if (is(m[i].role, "user")) {
      content(t, m[i].content), put(t, " [/INST]");
    } else {
      content(t, m[i].content), put(t, "</s>");
      inside = 0;
    }
  }
}

/* Gemma has no system role: the system texts (trimmed) open the next user turn. */
static void gemma(text* t, const tgc_chat_message* m, size_t n, int add_assistant) {
  size_t sys_from = 0, sys_len = 0; /* system texts since message sys_from wait for a user turn */
  for (size_t i = 0; i < n; ++i) {
    if (is(m[i].role, "system")) {
      size_t b, e;
      trim(m[i].content, &b, &e);
      if (sys_len == 0) sys_from = i;
      sys_len += e - b;
      continue;
    }
    int model = is(m[i].role, "assistant");
    put(t, "<start_of_turn>"), put(t, model ? "model" : m[i].role), put(t, "\n");
    if (sys_len > 0 && !model) {
      for (size_t k = sys_from; k < i; ++k)
        if (is(m[k].role, "system")) put_trimmed(t, m[k].content);
      put(t, "\n\n");
      sys_len = 0;
    }
    put_trimmed(t, m[i].content), put(t, "<end_of_turn>\n");
  }
  if (add_assistant) put(t, "<start_of_turn>model\n");
}

/* Templates whose turns are all alike: before the role, after it, the content (trimmed or not),
 * after the content; then the assistant's header. */
typedef struct {
  const char *before, *after_role, *after_content, *assistant;
  int trimmed;
} turn_format;

static void turns(text* t, const turn_format* f, const tgc_chat_message* m, size_t n, int add_assistant) {
  for (size_t i = 0; i < n; ++i) {
    put(t, f->before), put(t, m[i].role), put(t, f->after_role);
    if (f->trimmed)
      put_trimmed(t, m[i].content);
    else
      put(t, m[i].content);
    put(t, f->after_content);
  }
  if (add_assistant) put(t, f->assistant);
}

static const turn_format chatml = {"<|im_start|>", "\n", "<|im_end|>\n", "<|im_start|>assistant\n", 0};
static const turn_format phi3 = {"<|", "|>\n", "<|end|>\n", "<|assistant|>\n", 0};
static const turn_format phi4 = {"<|im_start|>", "<|im_sep|>", "<|im_end|>", "<|im_start|>assistant<|im_sep|>", 0};
static const turn_format llama3 = {"<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>",
                                   "<|start_header_id|>assistant<|end_header_id|>\n\n", 1};

int64_t tgc_chat_render(int tmpl, const tgc_chat_message* m, size_t n, int add_assistant, char* out, int64_t cap) {
  text t = {out, cap, 0};
  switch (tmpl) {
    case TGC_CHAT_CHATML: turns(&t, &chatml, m, n, add_assistant); break;
    case TGC_CHAT_MISTRAL_V1:
    case TGC_CHAT_MISTRAL_V3:
    case TGC_CHAT_MISTRAL_V3_TEKKEN:
    case TGC_CHAT_MISTRAL_V7:
    case TGC_CHAT_MISTRAL_V7_TEKKEN: mistral(&t, tmpl, m, n); break;
    case TGC_CHAT_LLAMA2:
    case TGC_CHAT_LLAMA2_SYS:
    case TGC_CHAT_LLAMA2_SYS_BOS:
    case TGC_CHAT_LLAMA2_SYS_STRIP: llama2(&t, tmpl, m, n); break;
    case TGC_CHAT_PHI3: turns(&t, &phi3, m, n, add_assistant); break;
    case TGC_CHAT_PHI4: turns(&t, &phi4, m, n, add_assistant); break;
    case TGC_CHAT_GEMMA: gemma(&t, m, n, add_assistant); break;
    case TGC_CHAT_LLAMA3: turns(&t, &llama3, m, n, add_assistant); break;
    default: return -1;
  }
  if (t.n < cap) out[t.n] = 0;
  return t.n;
}
