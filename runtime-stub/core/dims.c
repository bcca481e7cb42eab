/* Run-time dims (VARs): the kernels lay a tensor out at its dims' upper bounds and read the
 * bound values from the vars buffer; callers see dense tensors of the bound sizes, copied in
 * before a run and out after it. */
#include <stdlib.h>
#include <string.h>

#include "core/runtime_internal.h"

static int has_vars(const tgc_buffer* b) { return b->dim_vars != NULL; }

int64_t tgc_dim_size(const tgc_model* m, const tgc_buffer* b, int32_t k) {
  if (k == 0 && b->batched) return m->batch;
  if (b->dim_vars && b->dim_vars[k] >= 0) return m->var_value[b->dim_vars[k]] * tgc_var_step(m->desc, b->dim_vars[k]);
  if (b->dim_vars && b->dim_vars[k] <= -2) { /* a size the run-time dim went through pads or windows to */
    const int64_t* t = b->dim_sizes + (-2 - b->dim_vars[k]);
    return t[m->var_value[t[0]]];
  }
  return b->shape[k];
}

int64_t tgc_bound_nbytes(const tgc_model* m, int32_t i) {
  const tgc_buffer* b = &m->desc->buffers[i];
  if (!b->batched && !has_vars(b)) return b->nbytes;
  int64_t n = tgc_dtype_size(b->dtype);
  for (int32_t k = 0; k < b->rank; ++k) n *= tgc_dim_size(m, b, k);
  return n;
}

/* The bytes of buffer i's layout at the bounds from its start through its last element at this
 * run's sizes: all a run reads of an input or writes of an output (a decode step's one row of
 * logits out of a bound of 512). */
int64_t tgc_run_nbytes(const tgc_model* m, int32_t i) {
  const tgc_buffer* b = &m->desc->buffers[i];
  if (b->batched || !has_vars(b)) return b->nbytes;
  int64_t last = 0, stride = 1;
  for (int32_t k = b->rank - 1; k >= 0; --k) {
    int64_t n = tgc_dim_size(m, b, k);
    if (n <= 0) return 0;
    last += (n - 1) * stride;
    stride *= b->shape[k];
  }
  return (last + 1) * tgc_dtype_size(b->dtype);
}

/* Dense storage of every input/output with run-time dims at the current sizes (zeroed where the
 * size changed; the rest, inputs already written among them, is kept). */
static int alloc_dense(tgc_model* m) {
  const tgc_model_desc* d = m->desc;
  for (int32_t i = 0; i < d->num_buffers; ++i) {
    if (!has_vars(&d->buffers[i])) continue;
    int64_t n = tgc_bound_nbytes(m, i);
    if (m->dense[i] && m->dense_nbytes[i] == n) continue;
    void* p = calloc(1, (size_t)(n > 0 ? n : 1));
    if (!p) {
      tgc_set_error("out of memory for input/output '%s' (%lld bytes)", d->buffers[i].name, (long long)n);
      return -1;
    }
    free(m->dense[i]);
    m->dense[i] = p;
    m->dense_nbytes[i] = n;
  }
  return 0;
}

int tgc_dims_init(tgc_model* m) {
  const tgc_model_desc* d = m->desc;
  if (d->num_vars == 0) return 0;
  if (!(m->var_value = calloc((size_t)d->num_vars, sizeof(int64_t))) ||
      !(m->dense = calloc((size_t)d->num_buffers + 1, sizeof(void*))) ||
      !(m->dense_nbytes = calloc((size_t)d->num_buffers + 1, sizeof(int64_t)))) {
    tgc_set_error("out of memory");
    return -1;
  }
  return tgc_bind_vars(m, d->var_max);
}

void tgc_dims_free(tgc_model* m) {
  for (int32_t i = 0; m->dense && i < m->desc->num_buffers; ++i) free(m->dense[i]);
  free(m->dense);
  free(m->dense_nbytes);
  free(m->var_value);
}

int tgc_bind_vars(tgc_model* m, const int64_t* given) {
  const tgc_model_desc* d = m->desc;
  int64_t values[TGC_MAX_VARS];
  if (d->num_vars > TGC_MAX_VARS) return tgc_set_error("the model has more than %d run-time dims", TGC_MAX_VARS), -1;
  memcpy(values, given, (size_t)d->num_vars * sizeof *values);
  int32_t rows = d->kv_position ? d->kv_position[2] : -1;
  if (rows >= 0) { /* the logits' rows follow the token count, or are the last one */
    const tgc_buffer* tokens = &d->buffers[d->inputs[d->kv_position[1]]];
    int64_t count = tokens->dim_vars && tokens->dim_vars[0] >= 0 ? values[tokens->dim_vars[0]] : tokens->shape[0];
    values[rows] = m->last_logits_only ? 1 : count;
  }
  int changed = 0;
  for (int32_t v = 0; v < d->num_vars; ++v) {
    int64_t step = tgc_var_step(d, v);
    if (values[v] < tgc_var_min(d, v) || values[v] > d->var_max[v]) {
      tgc_set_error("run-time dim '%s' must be %lld to %lld, got %lld", d->var_names[v],
                    (long long)(tgc_var_min(d, v) * step), (long long)(d->var_max[v] * step),
                    (long long)(values[v] * step));
      return -1;
    }
    changed |= values[v] != m->var_value[v];
  }
  if (!changed) return 0;
  memcpy(m->var_value, values, (size_t)d->num_vars * sizeof(int64_t));
  if (d->vars_buffer >= 0) memcpy(m->buf[d->vars_buffer], values, (size_t)d->num_vars * sizeof(int64_t));
  return alloc_dense(m);
}

/* Copies between the dense tensor and the kernels' layout at the upper bounds: the innermost
 * dim is one contiguous run in both. */
static void copy_layout(tgc_model* m, int32_t i, int to_kernel) {
  const tgc_buffer* b = &m->desc->buffers[i];
  size_t elem = (size_t)tgc_dtype_size(b->dtype);
  int64_t outer = 1, inner = b->rank ? tgc_dim_size(m, b, b->rank - 1) : 1;
  for (int32_t k = 0; k + 1 < b->rank; ++k) outer *= tgc_dim_size(m, b, k);
  uint8_t *dense = m->dense[i], *laid = m->buf[i];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rest = o, off = 0, stride = b->rank ? b->shape[b->rank - 1] : 1;
    for (int32_t k = b->rank - 2; k >= 0; --k) {
      int64_t n = tgc_dim_size(m, b, k);
      off += (rest % n) * stride;
      rest /= n;
      stride *= b->shape[k];
    }
    uint8_t* l = laid + (size_t)off * elem;
    uint8_t* x = dense + (size_t)(o * inner) * elem;
    if (to_kernel)
      memcpy(l, x, (size_t)inner * elem);
    else
      memcpy(x, l, (size_t)inner * elem);
  }
}

void tgc_dims_before_run(tgc_model* m) {
  for (int32_t k = 0; m->dense && k < m->desc->num_inputs; ++k)
    if (has_vars(&m->desc->buffers[m->desc->inputs[k]])) copy_layout(m, m->desc->inputs[k], 1);
}

int tgc_take_computed_var(tgc_model* m, int32_t l) {
  const tgc_model_desc* d = m->desc;
  int32_t v = d->launches[l].sets_var - 1;
  if (v < 0) return 0;
  int64_t x = *(const int64_t*)m->buf[d->var_source[v]]; /* (sizes from data come clamped) */
  if (x < 0 || x > d->var_max[v]) {
    tgc_set_error("these inputs fail a run-time check: %s", d->var_names[v]);
    return -1;
  }
  m->var_value[v] = x;
  if (d->vars_buffer >= 0) ((int64_t*)m->buf[d->vars_buffer])[v] = x; /* (no kernel reads a branch's condition) */
  return 0;
}

int tgc_dims_after_run(tgc_model* m) {
  if (m->desc->var_source && alloc_dense(m) != 0) return -1; /* outputs as long as the computed sizes */
  for (int32_t k = 0; m->dense && k < m->desc->num_outputs; ++k)
    if (has_vars(&m->desc->buffers[m->desc->outputs[k]])) copy_layout(m, m->desc->outputs[k], 0);
  return 0;
}
