/* Decode steps on the command line (--decode FILE.npy): after a run over the prompt, one run per
 * token of FILE, each appending to the KV cache, with every output's rows gathered in order (the
 * prompt's rows, then one row per step) as if one run had produced them. */
#include <stdlib.h>
#include <string.h>

#include "llm/llm_internal.h"

int tgc_append_outputs(tgc_model* m, tgc_npy* acc) {
  const tgc_model_desc* d = tgc_desc(m);
  for (int32_t k = 0; k < d->num_outputs; ++k) {
    int64_t dims[16];
    int rank = tgc_output_shape(m, k, dims);
    size_t nbytes = (size_t)tgc_dtype_size(d->buffers[d->outputs[k]].dtype);
    for (int i = 0; i < rank; ++i) nbytes *= (size_t)dims[i];
    if (acc[k].data && (rank != acc[k].rank || rank < 1 ||
                        memcmp(dims + 1, acc[k].shape + 1, (size_t)(rank - 1) * sizeof dims[0]) != 0)) {
      tgc_set_error("output '%s' does not have the token count first", d->buffers[d->outputs[k]].name);
      return -1;
    }
    void* grown = realloc(acc[k].data, acc[k].nbytes + nbytes);
    if (!grown) {
      tgc_set_error("out of memory for the outputs of every step");
      return -1;
    }
    memcpy((uint8_t*)grown + acc[k].nbytes, tgc_output_data(m, k), nbytes);
    if (!acc[k].data) {
      acc[k].dtype = d->buffers[d->outputs[k]].dtype, acc[k].rank = rank;
      memcpy(acc[k].shape, dims, sizeof dims);
    } else {
      acc[k].shape[0] += dims[0];
    }
    acc[k].data = grown, acc[k].nbytes += nbytes;
  }
  return 0;
}

int tgc_decode_steps(tgc_model* m, const tgc_npy* steps, tgc_npy* acc) {
  int32_t in = tgc_token_input(m, "--decode");
  if (in < 0) return -1;
  if (steps->dtype != TGC_I32 || steps->rank != 1)
    return tgc_set_error("--decode: expected the tokens as i32[n], one per step"), -1;
  if (tgc_append_outputs(m, acc) != 0) return -1;
  for (int64_t s = 0; s < steps->shape[0]; ++s)
    if (tgc_llm_eval(m, (const int32_t*)steps->data + s, 1) != 0 || tgc_append_outputs(m, acc) != 0) return -1;
  return 0;
}
