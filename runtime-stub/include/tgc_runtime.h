/* tgc runtime: runs a compiled model description. Used by generated executables (tgc_main)
 * and wrapped by the C API of generated shared libraries. C11. */
#ifndef TGC_RUNTIME_H
#define TGC_RUNTIME_H
#include <stddef.h>
#include <stdint.h>

#include "tgc_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tgc_model tgc_model;

/* num_threads <= 0: one per physical core. Returns NULL on failure (see tgc_last_error). */
tgc_model* tgc_create(const tgc_model_desc* desc, int num_threads);
void tgc_destroy(tgc_model* m);
/* Runs every launch once. Returns 0, or -1 with tgc_last_error set. */
int tgc_run(tgc_model* m);
/* Input/output storage owned by the model: write inputs before tgc_run, read outputs after. */
void* tgc_input_data(tgc_model* m, int index);
const void* tgc_output_data(const tgc_model* m, int index);
/* Copies an input in, checking its size. Returns 0 or -1. */
int tgc_set_input(tgc_model* m, int index, const void* data, size_t nbytes);
/* Models with a run-time batch dim (desc->batch_dim): binds it from the shape of input `index`,
 * checking the other dims. A new batch size reallocates the batched inputs and outputs (zeroed):
 * bind first, then write the inputs. Static models accept their own shape. Returns 0 or -1. */
int tgc_set_input_shape(tgc_model* m, int index, int rank, const int64_t* dims);
/* Current shape of an input/output (the bound batch size first where batched): the rank is
 * returned (-1 for a bad index), dims gets up to 16 values. */
int tgc_input_shape(const tgc_model* m, int index, int64_t* dims);
int tgc_output_shape(const tgc_model* m, int index, int64_t* dims);
/* Zeroes every STATE buffer (host and device), as at create: the next run starts a fresh
 * sequence. Returns 0, or -1 with tgc_last_error set. */
int tgc_reset_state(tgc_model* m);
/* Models with a KV cache (desc->kv_position): positions held, i.e. tokens run since create or
 * the last reset; the next run's tokens go at this position. -1 for a model without one. */
int64_t tgc_kv_length(const tgc_model* m);
/* Forgets the positions from n on (0 <= n <= tgc_kv_length): the next run's tokens go at n.
 * Returns 0, or -1 with tgc_last_error set. */
int tgc_set_kv_length(tgc_model* m, int64_t n);
/* Models with a tokenizer (desc->vocab): the token ids of text[0, len), BOS first when add_bos
 * & 1, special tokens' texts as those tokens when add_bos & 2 (chat prompts); up to cap written to
 * out. Returns how many the text has (call again with more room when that is more than cap), or
 * -1 with tgc_last_error set. */
int64_t tgc_tokenize_text(tgc_model* m, const char* text, size_t len, int add_bos, int32_t* out, int64_t cap);
/* Models with a tokenizer: the prompt text of msgs[0, n) in chat template tmpl (NULL: the model's
 * tokenizer.chat_template; or a name such as "chatml", "llama3"), as llama.cpp's
 * llama_chat_apply_template renders it, the assistant's header last when add_assistant. Writes up to
 * cap bytes to out (NUL-terminated when there is room) and returns the text's length (cap or more:
 * call again with more room), or -1 with tgc_last_error set (no template, or one tgc does not know). */
struct tgc_chat_message; /* chat_template.h: {role, content} */
int64_t tgc_chat_apply_template(const tgc_model* m, const char* tmpl, const struct tgc_chat_message* msgs, size_t n,
                                int add_assistant, char* out, int64_t cap);
/* Models with a tokenizer: the text of one token (up to cap bytes to out). Returns its byte
 * count (more than cap: call again with more room), or -1 with tgc_last_error set. */
int64_t tgc_detokenize(const tgc_model* m, int32_t token, char* out, int64_t cap);

/* Language models (a KV cache and a run-time token count, llm_api.c). */
/* Runs tokens[0, n) at the cache's position (a prompt, or one decode step). 0, or -1 with
 * tgc_last_error set (a full cache, n past the token count's bound, ...). */
int tgc_llm_eval(tgc_model* m, const int32_t* tokens, int64_t n);
/* The logits of the last eval, f32 [*n_rows, *n_vocab] (row i follows the eval's token i);
 * NULL with tgc_last_error set when output 0 is not such logits. */
const float* tgc_llm_logits(const tgc_model* m, int64_t* n_rows, int64_t* n_vocab);
const float* tgc_llm_last_logits(const tgc_model* m); /* its last row */
/* all = 1 (the default): an eval computes the logits of every token it runs; 0: of its last
 * token only, the row sampling reads (a prefill then skips the output projection of the others).
 * Storage of the run-time dims is kept, inputs already written included. 0, or -1 with
 * tgc_last_error set. */
int tgc_llm_all_logits(tgc_model* m, int all);
/* A token drawn from the last logits row (sample.h: the sampler chain and *rng). -1 with
 * tgc_last_error set on failure. */
struct tgc_sampling;
int32_t tgc_llm_sample(const tgc_model* m, const struct tgc_sampling* p, uint64_t* rng);
const tgc_model_desc* tgc_desc(const tgc_model* m);
/* Message of the last failure on this thread ("" if none). */
const char* tgc_last_error(void);

/* The main() of generated executables: --info, -i NAME=FILE.npy, -o DIR, --bench N,
 * --threads N; with no arguments one run on deterministic random inputs. */
int tgc_main(const tgc_model_desc* desc, int argc, char** argv);
/* The same for a model with a KV cache: also -p, -n and sampling, --decode, --bench P,N, ...
 * (the language-model runtime, which tgc_main's artifacts are linked without). */
int tgc_llm_main(const tgc_model_desc* desc, int argc, char** argv);

#ifdef __cplusplus
}
#endif
#endif
