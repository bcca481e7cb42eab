/* Greedy generation on the command line (-n N): after the prompt's run, each step runs the argmax
 * of the last logits row as one token on the KV cache. With a tokenizer the new tokens' text
 * streams to stdout as it comes, whole UTF-8 characters at a time, and EOS ends the text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

/* The argmax of the last row of output 0 (logits [n, n_vocab]). */
static int32_t last_argmax(const tgc_model* m) {
  int64_t dims[16];
  int rank = tgc_output_shape(m, 0, dims);
  int64_t vocab = dims[rank - 1], rows = 1;
  for (int i = 0; i + 1 < rank; ++i) rows *= dims[i];
  const float* row = (const float*)tgc_output_data(m, 0) + (rows - 1) * vocab;
  int32_t best = 0;
  for (int64_t j = 1; j < vocab; ++j)
    if (row[j] > row[best]) best = (int32_t)j;
  return best;
}

/* Appends token id's text (tgc_token_piece) to buf at *n; the caller leaves room for the token's
 * text, which a piece never exceeds. */
static void piece(const struct tgc_vocab* v, int32_t id, char* buf, size_t* n) {
  *n += tgc_token_piece(v, id, buf + *n, (size_t)(v->offsets[id + 1] - v->offsets[id]));
}

/* The bytes of buf[0, n) that form whole UTF-8 characters (a character cut by a byte token waits). */
static size_t whole_utf8(const char* buf, size_t n) {
  size_t i = n;
  while (i > 0 && i > n - 4 && ((unsigned char)buf[i - 1] & 0xC0) == 0x80) --i;
  if (i == 0) return n;
  unsigned char lead = (unsigned char)buf[i - 1];
  size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return n - (i - 1) >= want ? n : i - 1;
}

int64_t tgc_generate(tgc_model* m, int64_t n_new, tgc_npy* tokens, double* decode_ms) {
  const tgc_model_desc* d = tgc_desc(m);
  const struct tgc_vocab* v = d->vocab;
  int32_t in = d->kv_position ? d->kv_position[1] : -1;
  if (in < 0 || !d->buffers[d->inputs[in]].dim_vars || d->buffers[d->inputs[in]].dim_vars[0] < 0) {
    tgc_set_error("-n: model '%s' keeps no KV cache with a run-time token count", d->name ? d->name : "?");
    return -1;
  }
  int32_t* ids = realloc(tokens->data, (tokens->nbytes + (size_t)n_new * sizeof(int32_t)));
  if (!ids) return tgc_set_error("out of memory"), -1;
  tokens->data = ids;
  char pending[4096];
  size_t np = 0;
  int64_t runs = 0;
  *decode_ms = 0;
  for (int64_t s = 0; s < n_new; ++s) {
    int32_t next = last_argmax(m);
    ids[tokens->shape[0]++] = next;
    tokens->nbytes += sizeof(int32_t);
    if (v && next == v->eos) break;
    if (v) { /* stream the text, whole characters only */
      if (np + (size_t)(v->offsets[next + 1] - v->offsets[next]) + 8 > sizeof pending) fwrite(pending, 1, np, stdout), np = 0;
      piece(v, next, pending, &np);
      size_t ready = whole_utf8(pending, np);
      fwrite(pending, 1, ready, stdout);
      fflush(stdout);
      memmove(pending, pending + ready, np - ready);
      np -= ready;
    }
    if (s + 1 == n_new) break; /* the last token needs no run */
    int64_t one = 1;
    double t0 = tgc_now_ms();
    if (tgc_set_input_shape(m, in, 1, &one) != 0 || tgc_set_input(m, in, &next, sizeof next) != 0 || tgc_run(m) != 0) return -1;
    *decode_ms += tgc_now_ms() - t0;
    ++runs;
  }
  if (v) fwrite(pending, 1, np, stdout), fputc('\n', stdout);
  return runs;
}
