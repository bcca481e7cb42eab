/* Decode steps on the command line (--decode FILE.npy): after a run over the prompt, one run per
 * token of FILE, each appending to the KV cache, with every output's rows gathered in order (the
 * prompt's rows, then one row per step) as if one run had produced them. */
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

/* Appends the model's current outputs to acc[k] along dim 0 (acc[k].data NULL: starts it). */
static int append_outputs(tgc_model* m, tgc_npy* acc) {
  const tgc_model_desc* d = tgc_desc(m);
  for (int32_t k = 0; k < d->num_outputs; ++k) {
    int64_t dims[16];
    int rank = tgc_output_shape(m, k, dims);
    size_t nbytes = (size_t)tgc_dtype_size(d->buffers[d->outputs[k]].dtype);
    for (int i = 0; i < rank; ++i) nbytes *= (size_t)dims[i];
    if (acc[k].data && (rank != acc[k].rank || rank < 1 || memcmp(dims + 1, acc[k].shape + 1, (size_t)(rank - 1) * sizeof dims[0]) != 0)) {
      tgc_set_error("--decode: output '%s' does not have the token count first", d->buffers[d->outputs[k]].name);
      return -1;
    }
    void* grown = realloc(acc[k].data, acc[k].nbytes + nbytes);
    if (!grown) {
      tgc_set_error("out of memory for the decode steps' outputs");
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
  const tgc_model_desc* d = tgc_desc(m);
  if (!d->kv_position) {
    tgc_set_error("--decode: model '%s' keeps no KV cache between runs", d->name ? d->name : "?");
    return -1;
  }
  int32_t in = d->kv_position[1];
  const tgc_buffer* b = &d->buffers[d->inputs[in]];
  if (!b->dim_vars || b->dim_vars[0] < 0) {
    tgc_set_error("--decode: input '%s' has a fixed token count (%lld); compile with --dynamic for single-token steps", b->name,
                  (long long)b->shape[0]);
    return -1;
  }
  if (steps->dtype != b->dtype || steps->rank != 1 || b->rank != 1) {
    tgc_set_error("--decode: expected the tokens as %s[n], one per step", tgc_dtype_name(b->dtype));
    return -1;
  }
  if (append_outputs(m, acc) != 0) return -1;
  size_t elem = (size_t)tgc_dtype_size(b->dtype);
  for (int64_t s = 0; s < steps->shape[0]; ++s) {
    int64_t one = 1;
    if (tgc_set_input_shape(m, in, 1, &one) != 0 || tgc_set_input(m, in, (const uint8_t*)steps->data + (size_t)s * elem, elem) != 0 ||
        tgc_run(m) != 0 || append_outputs(m, acc) != 0)
      return -1;
  }
  return 0;
}
