/* Language-model calls over a model with a KV cache (desc->kv_position): feed tokens at the
 * cache's position, read the logits of what was fed, draw the next token, a token's text, a chat
 * prompt. The C API of a --shared GGUF build forwards to these (NAME_eval, NAME_logits,
 * NAME_sample, NAME_detokenize, NAME_chat_apply_template); -n and --bench P,N run on them too. */
#include <stdlib.h>
#include <string.h>

#include "llm/chat_template.h"
#include "llm/llm_internal.h"

int tgc_llm_eval(tgc_model* m, const int32_t* tokens, int64_t n) {
  if (!m) return tgc_set_error("tgc_llm_eval: no model"), -1;
  int32_t in = tgc_token_input(m, "tgc_llm_eval");
  if (in < 0) return -1;
  if (n < 1 || !tokens) return tgc_set_error("tgc_llm_eval: no tokens (n = %lld)", (long long)n), -1;
  if (tgc_set_input_shape(m, in, 1, &n) != 0 || tgc_set_input(m, in, tokens, (size_t)n * sizeof *tokens) != 0)
    return -1;
  return tgc_run(m);
}

const float* tgc_llm_logits(const tgc_model* m, int64_t* n_rows, int64_t* n_vocab) {
  const tgc_model_desc* d = m ? tgc_desc(m) : NULL;
  int64_t dims[16];
  int rank = d && d->num_outputs > 0 ? tgc_output_shape(m, 0, dims) : -1;
  if (rank != 2 || d->buffers[d->outputs[0]].dtype != TGC_F32) {
    tgc_set_error("tgc_llm_logits: the model's first output is not f32 logits [n_tokens, n_vocab]");
    return NULL;
  }
  if (n_rows) *n_rows = dims[0];
  if (n_vocab) *n_vocab = dims[1];
  return tgc_output_data(m, 0);
}

int tgc_llm_all_logits(tgc_model* m, int all) {
  if (!m) return tgc_set_error("tgc_llm_all_logits: no model"), -1;
  m->last_logits_only = !all;
  return m->desc->num_vars > 0 ? tgc_bind_vars(m, m->var_value) : 0;
}

const float* tgc_llm_last_logits(const tgc_model* m) {
  int64_t rows, vocab;
  const float* logits = tgc_llm_logits(m, &rows, &vocab);
  return logits ? logits + (rows - 1) * vocab : NULL;
}

int32_t tgc_llm_sample(const tgc_model* m, const struct tgc_sampling* p, uint64_t* rng) {
  int64_t vocab;
  const float* last = tgc_llm_logits(m, NULL, &vocab) ? tgc_llm_last_logits(m) : NULL;
  if (!last) return -1;
  if (!p || !rng) return tgc_set_error("tgc_llm_sample: no sampling parameters or random state"), -1;
  int32_t id = tgc_sample(last, vocab, p, rng);
  if (id < 0) tgc_set_error("out of memory for sampling");
  return id;
}

int64_t tgc_detokenize(const tgc_model* m, int32_t token, char* out, int64_t cap) {
  const struct tgc_vocab* v = m ? tgc_desc(m)->vocab : NULL;
  if (!v) return tgc_set_error("tgc_detokenize: the model carries no tokenizer"), -1;
  if (token < 0 || token >= v->n_tokens) {
    tgc_set_error("tgc_detokenize: token %d is not in the vocabulary (0 to %d)", (int)token, (int)v->n_tokens - 1);
    return -1;
  }
  int64_t n = tgc_token_piece(v, token, out, cap < 0 ? 0 : cap);
  if (n < 0) tgc_set_error("out of memory for a token's text");
  return n;
}

int64_t tgc_tokenize_text(tgc_model* m, const char* text, size_t len, int add_bos, int32_t* out, int64_t cap) {
  if (!m || !m->desc->vocab) {
    tgc_set_error("tgc_tokenize_text: the model carries no tokenizer");
    return -1;
  }
  if (!m->tokenizer && !(m->tokenizer = tgc_tokenizer_create(m->desc->vocab))) {
    tgc_set_error("out of memory for the tokenizer");
    return -1;
  }
  m->free_tokenizer = tgc_tokenizer_destroy; /* core frees it without linking the tokenizer */
  int64_t n = tgc_tokenize(m->tokenizer, text, len, add_bos, out, cap);
  if (n < 0) tgc_set_error("tgc_tokenize_text: the text has a byte the vocabulary cannot spell, or out of memory");
  return n;
}

int64_t tgc_chat_apply_template(const tgc_model* m, const char* tmpl, const tgc_chat_message* msgs, size_t n,
                                int add_assistant, char* out, int64_t cap) {
  const struct tgc_vocab* v = m ? tgc_desc(m)->vocab : NULL;
  if (!v) return tgc_set_error("tgc_chat_apply_template: the model carries no tokenizer"), -1;
  if (!tmpl && !(tmpl = v->chat_template))
    return tgc_set_error("tgc_chat_apply_template: the model file has no tokenizer.chat_template (pass a name)"), -1;
  const char* other = NULL;
  int t = tgc_chat_detect(tmpl, &other);
  if (t < 0 && other)
    return tgc_set_error("chat template '%s' (as llama.cpp names it) is not one tgc renders", other), -1;
  if (t < 0)
    return tgc_set_error("the chat template is not one tgc recognises (%.40s%s)", tmpl, strlen(tmpl) > 40 ? "..." : ""),
           -1;
  for (size_t i = 0; i < n; ++i)
    if (!msgs[i].role || !msgs[i].content)
      return tgc_set_error("tgc_chat_apply_template: message %zu has no role or content", i), -1;
  return tgc_chat_render(t, msgs, n, add_assistant, out, cap < 0 ? 0 : cap);
}
