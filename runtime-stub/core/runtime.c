/* tgc runtime: what every backend shares: validation of the description, host buffers, external
 * weights, batch binding, and tgc_run driving the backend through its ops table. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/runtime_internal.h"
#include "tgc_timing.h"

/* ---------------------------------------------------------------- errors */

static _Thread_local char g_error[1024];

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0: a stray continuation byte, a
 * truncated sequence, an overlong form, a surrogate, a code point past U+10FFFF. */
static int utf8_length(const unsigned char* s) {
  unsigned char b = s[0], b1 = s[1];
  int n = b < 0x80 ? 1 : b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
  if ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 >= 0xA0) || (b == 0xF0 && b1 < 0x90) || (b == 0xF4 && b1 >= 0x90))
    return 0;
  for (int k = 1; k < n; ++k)
    if ((s[k] & 0xC0) != 0x80) return 0;
  return n;
}

/* Names in messages come from model files: control bytes and bytes that are not UTF-8 are
 * written as \n, \r, \t or \xNN (as the compiler's printable() does), so every error stays one
 * line. */
static void escape_into(char* out, size_t cap, const char* in) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  for (const unsigned char* s = (const unsigned char*)in; *s && o + 5 < cap;) {
    int n = utf8_length(s);
    if (*s == '\n' || *s == '\r' || *s == '\t') {
      out[o++] = '\\', out[o++] = *s == '\n' ? 'n' : *s == '\r' ? 'r' : 't', ++s;
    } else if (n == 0 || *s < 0x20 || *s == 0x7F || (*s == 0xC2 && s[1] < 0xA0)) {
      for (int k = 0; k < (n ? n : 1) && o + 5 < cap; ++k, ++s)
        out[o++] = '\\', out[o++] = 'x', out[o++] = hex[*s >> 4], out[o++] = hex[*s & 15];
    } else {
      for (int k = 0; k < n && o + 1 < cap; ++k) out[o++] = (char)*s++;
    }
  }
  out[o] = '\0';
}

void tgc_set_error(const char* fmt, ...) {
  char raw[sizeof g_error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  escape_into(g_error, sizeof g_error, raw);
}

void tgc_clear_error(void) { g_error[0] = '\0'; }

const char* tgc_last_error(void) { return g_error; }

int tgc_mkdirs(const char* path) {
  size_t n = strlen(path);
  char* p = malloc(n + 1);
  if (!p) return errno = ENOMEM, -1;
  memcpy(p, path, n + 1);
  int r = 0;
  for (char* c = p + 1; *c && r == 0; ++c) {
    if (*c != '/') continue;
    *c = '\0';
    if (mkdir(p, 0755) != 0 && errno != EEXIST) r = -1;
    *c = '/';
  }
  if (r == 0 && mkdir(p, 0755) != 0) {
    struct stat st;
    if (errno != EEXIST || stat(p, &st) != 0)
      r = -1;
    else if (!S_ISDIR(st.st_mode))
      r = -1, errno = ENOTDIR;
  }
  free(p);
  return r;
}

/* ---------------------------------------------------------------- dtypes */

int tgc_dtype_size(int32_t dtype) {
  switch (dtype) {
    case TGC_BOOL:
    case TGC_I8:
    case TGC_U8: return 1;
    case TGC_I16:
    case TGC_U16:
    case TGC_F16:
    case TGC_BF16: return 2;
    case TGC_I32:
    case TGC_U32:
    case TGC_F32: return 4;
    case TGC_I64:
    case TGC_U64:
    case TGC_F64: return 8;
    default: return 0;
  }
}

const char* tgc_dtype_name(int32_t dtype) {
  static const char* const names[] = {"bool", "i8",  "i16", "i32",  "i64", "u8", "u16",
                                      "u32",  "u64", "f16", "bf16", "f32", "f64"};
  return dtype >= 0 && dtype <= TGC_F64 ? names[dtype] : "?";
}

int64_t tgc_buffer_numel(const tgc_buffer* b) {
  int64_t n = 1;
  for (int32_t i = 0; i < b->rank; ++i) n *= b->shape[i];
  return n;
}

double tgc_half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, f = h & 0x3ff;
  double v;
  if (e == 0)
    v = (double)f / 1024.0 / 16384.0; /* subnormal: f * 2^-24 */
  else if (e == 31)
    v = f ? (double)NAN : (double)INFINITY;
  else {
    v = 1.0 + f / 1024.0;
    for (int i = e - 15; i > 0; --i) v *= 2;
    for (int i = e - 15; i < 0; ++i) v /= 2;
  }
  return (h & 0x8000) ? -v : v;
}

uint16_t tgc_float_to_half(float f) { /* round to nearest even; enough for test data */
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  uint32_t m = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return sign | 0x7c00 | (m ? 0x200 : 0);
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    m |= 0x800000;
    int shift = 14 - e;
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return sign | (uint16_t)r;
  }
  uint32_t r = ((uint32_t)e << 10) | (m >> 13), rem = m & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r; /* may carry into the exponent: correct */
  return sign | (uint16_t)r;
}

/* ---------------------------------------------------------------- helpers */

/* calloc rather than memset: a large block is a fresh mapping whose pages stay out of the
 * resident size until a run writes them, and buffers laid out at their run-time dims' upper bounds
 * are mostly never written (attention scores over a 4096-row cache for a 64-token prompt). The
 * pointer calloc gave is kept in the word before the aligned block. */
void* tgc_alloc64(int64_t nbytes) {
  size_t n = nbytes > 0 ? (size_t)nbytes : 64;
  if (n > SIZE_MAX - 128) return NULL;
  uint8_t* raw = calloc(1, n + 64);
  if (!raw) return NULL;
  uint8_t* p = (uint8_t*)(((uintptr_t)raw + 64) & ~(uintptr_t)63);
  ((void**)p)[-1] = raw;
  return p;
}

void tgc_free64(void* p) {
  if (p) free(((void**)p)[-1]);
}

void tgc_adopt_host_memory(tgc_model* m, int32_t i, void* p) {
  memcpy(p, m->buf[i], (size_t)m->desc->buffers[i].nbytes);
  tgc_free64(m->io_alloc[i]);
  m->io_alloc[i] = NULL;
  m->buf[i] = p;
}

static const char* storage_name(int32_t s) {
  switch (s) {
    case TGC_STORAGE_ARENA: return "arena";
    case TGC_STORAGE_WEIGHT: return "weight";
    case TGC_STORAGE_INPUT: return "input";
    case TGC_STORAGE_OUTPUT: return "output";
    case TGC_STORAGE_STATE: return "state";
    case TGC_STORAGE_IMAGE: return "image";
    default: return "?";
  }
}

static int64_t launch_total(const tgc_launch* l) {
  if (l->global_size[0] <= 0) return 0;
  int64_t n = l->global_size[0];
  for (int d = 1; d < 3; ++d)
    if (l->global_size[d] > 0) n *= l->global_size[d]; /* 0 in dims 1/2 means "unused" */
  return n;
}

/* The description's ABI version, backend table and table sizes. 0, or -1 with the error set. */
static int validate_header(const tgc_model_desc* d) {
  if (d->abi_version != TGC_ABI_VERSION) {
    tgc_set_error("model '%s' was compiled for runtime ABI version %d, but this runtime implements version %d",
                  d->name ? d->name : "?", (int)d->abi_version, TGC_ABI_VERSION);
    return -1;
  }
  if (!d->backend) {
    tgc_set_error("model '%s' names no backend", d->name ? d->name : "?");
    return -1;
  }
  if (!d->backend->name || !d->backend->create || !d->backend->run || !d->backend->destroy) {
    tgc_set_error("model '%s': its backend table lacks a name, create, run or destroy", d->name ? d->name : "?");
    return -1;
  }
  if (d->num_buffers < 0 || (d->num_buffers > 0 && !d->buffers) || d->num_launches < 0 ||
      (d->num_launches > 0 && !d->launches) || d->num_inputs < 0 || (d->num_inputs > 0 && !d->inputs) ||
      d->num_outputs < 0 || (d->num_outputs > 0 && !d->outputs) || d->arena_size < 0 || d->weights_size < 0) {
    tgc_set_error("malformed model description (negative count or missing table)");
    return -1;
  }
  return 0;
}

/* Buffer i: dtype, size, where its bytes lie, batch and run-time dims. 0, or -1 with the error set. */
static int validate_buffer(const tgc_model_desc* d, int32_t i) {
  const tgc_buffer* b = &d->buffers[i];
  const char* bn = b->name ? b->name : "?";
  if (!tgc_dtype_size(b->dtype) || b->rank < 0 || b->rank > 16 || (b->rank > 0 && !b->shape) || b->nbytes < 0) {
    tgc_set_error("buffer %d '%s': bad dtype, rank or size", (int)i, bn);
    return -1;
  }
  if (tgc_buffer_numel(b) * tgc_dtype_size(b->dtype) > b->nbytes) {
    tgc_set_error("buffer %d '%s': %s shape needs %lld bytes, nbytes is %lld", (int)i, bn, tgc_dtype_name(b->dtype),
                  (long long)(tgc_buffer_numel(b) * tgc_dtype_size(b->dtype)), (long long)b->nbytes);
    return -1;
  }
  switch (b->storage) {
    case TGC_STORAGE_ARENA:
      if (b->offset < 0 || b->offset + b->nbytes > d->arena_size) {
        tgc_set_error("buffer %d '%s': bytes [%lld, %lld) lie outside the arena (%lld bytes)", (int)i, bn,
                      (long long)b->offset, (long long)(b->offset + b->nbytes), (long long)d->arena_size);
        return -1;
      }
      break;
    case TGC_STORAGE_IMAGE:
    case TGC_STORAGE_WEIGHT:
      if (b->storage == TGC_STORAGE_IMAGE &&
          (!(d->backend->caps & TGC_BACKEND_IMAGES) || (b->dtype != TGC_F32 && b->dtype != TGC_F16) ||
           b->nbytes % (b->dtype == TGC_F16 ? 8 : 16) != 0)) {
        tgc_set_error(
            "buffer %d '%s': an image weight must be f32 or f16, a whole number of 4-element texels, on the OpenCL "
            "backend",
            (int)i, bn);
        return -1;
      }
      if (b->offset < 0 || b->offset + b->nbytes > d->weights_size) {
        tgc_set_error("buffer %d '%s': bytes [%lld, %lld) lie outside the weights (%lld bytes)", (int)i, bn,
                      (long long)b->offset, (long long)(b->offset + b->nbytes), (long long)d->weights_size);
        return -1;
      }
      break;
    case TGC_STORAGE_INPUT:
    case TGC_STORAGE_OUTPUT: break;
    case TGC_STORAGE_STATE:
      if (b->dim_vars) { /* nobody outside the kernels sees it, so it keeps the upper bounds' layout */
        tgc_set_error("buffer %d '%s': a state buffer has no run-time dims", (int)i, bn);
        return -1;
      }
      break;
    default: tgc_set_error("buffer %d '%s': unknown storage %d", (int)i, bn, (int)b->storage); return -1;
  }
  if (b->batched && (!d->batch_dim || b->rank < 1 || b->shape[0] != 1 ||
                     (b->storage != TGC_STORAGE_INPUT && b->storage != TGC_STORAGE_OUTPUT))) {
    tgc_set_error("buffer %d '%s': batched, but not a batch-1 input or output of a model with a batch dim", (int)i, bn);
    return -1;
  }
  for (int32_t k = 0; b->dim_vars && k < b->rank; ++k) {
    int32_t v = b->dim_vars[k];
    const int64_t* t = v <= -2 && b->dim_sizes ? b->dim_sizes + (-2 - v) : NULL;
    if (v <= -2 && (b->storage != TGC_STORAGE_OUTPUT || !t || t[0] < 0 || t[0] >= d->num_vars ||
                    t[d->var_max[t[0]]] != b->shape[k])) {
      tgc_set_error("buffer %d '%s': dim %d is not a derived run-time size with its upper bound last", (int)i, bn,
                    (int)k);
      return -1;
    }
    if (v >= d->num_vars || (v >= 0 && b->shape[k] != d->var_max[v] * tgc_var_step(d, v))) {
      tgc_set_error("buffer %d '%s': dim %d is not a run-time dim at its upper bound", (int)i, bn, (int)k);
      return -1;
    }
  }
  return 0;
}

/* The run-time dims, where their values come from, and the KV position. 0, or -1 with the error set. */
static int validate_vars(const tgc_model_desc* d) {
  if (d->num_vars < 0 || (d->num_vars > 0 && (!d->var_names || !d->var_max || d->batch_dim)) ||
      d->vars_buffer >= d->num_buffers ||
      (d->vars_buffer >= 0 && d->buffers[d->vars_buffer].nbytes < 8 * (int64_t)d->num_vars)) {
    tgc_set_error("malformed run-time dims (VARs need a name and upper bound each, no batch dim and a vars buffer)");
    return -1;
  }
  for (int32_t v = 0; v < d->num_vars; ++v)
    if (!d->var_names[v] || d->var_max[v] < 1 || tgc_var_step(d, v) < 1 || tgc_var_min(d, v) < 0 ||
        tgc_var_min(d, v) > d->var_max[v]) {
      tgc_set_error("run-time dim %d: no name, an upper bound or step below 1, or a least value outside 0..bound",
                    (int)v);
      return -1;
    }
  for (int32_t v = 0; d->var_source && v < d->num_vars; ++v) {
    int32_t b = d->var_source[v];
    if (b < -1 || b >= d->num_buffers ||
        (b >= 0 &&
         (d->buffers[b].dtype != TGC_I64 || d->buffers[b].nbytes < 8 || d->buffers[b].storage != TGC_STORAGE_OUTPUT))) {
      tgc_set_error("run-time dim %d: its value's buffer %d is not an i64 output-storage buffer", (int)v, (int)b);
      return -1;
    }
  }
  if (d->kv_position &&
      (d->kv_position[0] < 0 || d->kv_position[0] >= d->num_vars || d->vars_buffer < 0 || d->kv_position[1] < 0 ||
       d->kv_position[1] >= d->num_inputs || d->kv_position[2] < -1 || d->kv_position[2] >= d->num_vars)) {
    tgc_set_error("malformed KV position (a run-time dim and an input)");
    return -1;
  }
  return 0;
}

/* Inputs and outputs name buffers of INPUT and OUTPUT storage. 0, or -1 with the error set. */
static int validate_io(const tgc_model_desc* d) {
  for (int io = 0; io < 2; ++io) {
    int32_t n = io ? d->num_outputs : d->num_inputs;
    const int32_t* idx = io ? d->outputs : d->inputs;
    int32_t want = io ? TGC_STORAGE_OUTPUT : TGC_STORAGE_INPUT;
    for (int32_t i = 0; i < n; ++i) {
      if (idx[i] < 0 || idx[i] >= d->num_buffers) {
        tgc_set_error("%s %d: buffer index %d out of range", io ? "output" : "input", (int)i, (int)idx[i]);
        return -1;
      }
      if (d->buffers[idx[i]].storage != want) {
        tgc_set_error("%s %d '%s': buffer has %s storage, expected %s", io ? "output" : "input", (int)i,
                      d->buffers[idx[i]].name ? d->buffers[idx[i]].name : "?", storage_name(d->buffers[idx[i]].storage),
                      storage_name(want));
        return -1;
      }
    }
  }
  return 0;
}

/* Launch l: its arguments and the run-time dims it loops over, sets or runs under. 0, or -1. */
static int validate_launch(const tgc_model_desc* d, int32_t l) {
  const tgc_launch* L = &d->launches[l];
  const char* ln = L->name ? L->name : "?";
  if (L->num_buffers < 0 || (L->num_buffers > 0 && !L->buffers)) {
    tgc_set_error("launch %d '%s': bad buffer list", (int)l, ln);
    return -1;
  }
  for (int32_t i = 0; i < L->num_buffers; ++i)
    if (L->buffers[i] < 0 || L->buffers[i] >= d->num_buffers) {
      tgc_set_error("launch %d '%s': argument %d: buffer index %d out of range", (int)l, ln, (int)i,
                    (int)L->buffers[i]);
      return -1;
    }
  int64_t step = L->outer_step > 1 ? L->outer_step : 1;
  if (d->num_vars && (L->outer_var >= d->num_vars || L->outer_step < 0 ||
                      (L->outer_var >= 0 &&
                       (d->var_max[L->outer_var] % step || launch_total(L) % (d->var_max[L->outer_var] / step))))) {
    tgc_set_error("launch %d '%s': bad outer run-time dim %d (step %d)", (int)l, ln, (int)L->outer_var,
                  (int)L->outer_step);
    return -1;
  }
  if (L->sets_var != 0 &&
      (L->sets_var < 0 || L->sets_var > d->num_vars || !d->var_source || d->var_source[L->sets_var - 1] < 0)) {
    tgc_set_error("launch %d '%s': sets run-time dim %d, which is not computed by the model", (int)l, ln,
                  (int)L->sets_var - 1);
    return -1;
  }
  if (L->runs_if_var < 0 || L->runs_if_var > d->num_vars) {
    tgc_set_error("launch %d '%s': runs_if_var %d out of range", (int)l, ln, (int)L->runs_if_var);
    return -1;
  }
  if ((L->runs_from || L->runs_until) &&
      (L->runs_var < 0 || L->runs_var >= d->num_vars || L->runs_from < 0 || L->runs_until < 0)) {
    tgc_set_error("launch %d '%s': run-time size range [%lld, %lld] of bad run-time dim %d", (int)l, ln,
                  (long long)L->runs_from, (long long)L->runs_until, (int)L->runs_var);
    return -1;
  }
  return 0;
}

static int validate(const tgc_model_desc* d) {
  if (validate_header(d) != 0) return -1;
  for (int32_t i = 0; i < d->num_buffers; ++i)
    if (validate_buffer(d, i) != 0) return -1;
  if (validate_vars(d) != 0 || validate_io(d) != 0) return -1;
  for (int32_t l = 0; l < d->num_launches; ++l)
    if (validate_launch(d, l) != 0) return -1;
  return tgc_check_cpu(d); /* before any of its kernels runs */
}

/* ---------------------------------------------------------------- external weights */

static int dir_of(const char* path, char* out, size_t cap) {
  const char* slash = strrchr(path, '/');
  if (!slash) return snprintf(out, cap, ".") < (int)cap ? 0 : -1;
  size_t n = (size_t)(slash - path);
  if (n == 0) n = 1; /* "/file" */
  if (n >= cap) return -1;
  memcpy(out, path, n);
  out[n] = '\0';
  return 0;
}

static int map_weights(tgc_model* m) {
  const tgc_model_desc* d = m->desc;
  const char* file = d->weights_file;
  char cand[3][PATH_MAX + 256];
  int nc = 0;
  char dir[PATH_MAX];
  if (file[0] == '/') {
    snprintf(cand[nc++], sizeof cand[0], "%s", file);
  } else {
    Dl_info info;
    if (dladdr((const void*)d, &info) && info.dli_fname && info.dli_fname[0] &&
        dir_of(info.dli_fname, dir, sizeof dir) == 0)
      snprintf(cand[nc++], sizeof cand[0], "%s/%s", dir, file);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = '\0';
      if (dir_of(exe, dir, sizeof dir) == 0) {
        snprintf(cand[nc], sizeof cand[0], "%s/%s", dir, file);
        if (nc == 0 || strcmp(cand[nc], cand[0]) != 0) ++nc;
      }
    }
    if (nc == 0) snprintf(cand[nc++], sizeof cand[0], "%s", file);
  }
  int fd = -1, which = -1, err = 0;
  for (int i = 0; i < nc && fd < 0; ++i) {
    fd = open(cand[i], O_RDONLY | O_CLOEXEC);
    if (fd >= 0)
      which = i;
    else if (errno != ENOENT || !err)
      err = errno;
  }
  if (fd < 0) {
    tgc_set_error("cannot open weights file '%s' (%s; looked for %s%s%s)", file, strerror(err), cand[0],
                  nc > 1 ? " and " : "", nc > 1 ? cand[1] : "");
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    tgc_set_error("weights file %s: %s", cand[which], strerror(errno));
    close(fd);
    return -1;
  }
  if ((int64_t)st.st_size < d->weights_size) {
    tgc_set_error("weights file %s is %lld bytes, the model needs %lld", cand[which], (long long)st.st_size,
                  (long long)d->weights_size);
    close(fd);
    return -1;
  }
  if (d->weights_size > 0) {
    void* p = mmap(NULL, (size_t)d->weights_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      tgc_set_error("cannot map weights file %s: %s", cand[which], strerror(errno));
      close(fd);
      return -1;
    }
    m->weights_map = p;
    m->weights_map_size = (size_t)d->weights_size;
  }
  close(fd);
  return 0;
}

/* ---------------------------------------------------------------- API */

void tgc_point_at_sample(const tgc_model* m, void* arena, void** cur, void*** args, int64_t s) {
  const tgc_model_desc* d = m->desc;
  for (int32_t i = 0; i < d->num_buffers; ++i) {
    const tgc_buffer* b = &d->buffers[i];
    cur[i] = b->storage == TGC_STORAGE_ARENA ? (arena ? (uint8_t*)arena + b->offset : NULL)
             : b->batched                    ? (uint8_t*)m->buf[i] + s * b->nbytes
                                             : m->buf[i];
  }
  for (int32_t l = 0; l < d->num_launches; ++l)
    for (int32_t i = 0; i < d->launches[l].num_buffers; ++i) args[l][i] = cur[d->launches[l].buffers[i]];
}

void tgc_at_sample(tgc_model* m, int64_t s) { tgc_point_at_sample(m, m->arena, m->cur, m->launch_args, s); }

int64_t tgc_launch_items(const tgc_model* m, int32_t l) {
  const tgc_model_desc* d = m->desc;
  int64_t total = launch_total(&d->launches[l]);
  const tgc_launch* L = &d->launches[l];
  if (L->runs_from || L->runs_until) { /* one of the kernel's variants: runs for some sizes only */
    int64_t size = m->var_value[L->runs_var];
    if (size < L->runs_from || (L->runs_until && size > L->runs_until)) return 0;
  }
  if (L->runs_if_var && m->var_value[L->runs_if_var - 1] != L->runs_if_value) return 0; /* the If took the other side */
  int32_t v = d->num_vars ? L->outer_var : -1;
  if (v < 0) return total;
  int64_t step = L->outer_step > 1 ? L->outer_step : 1;
  return total / (d->var_max[v] / step) * ((m->var_value[v] + step - 1) / step);
}

tgc_model* tgc_create(const tgc_model_desc* desc, int num_threads) {
  tgc_clear_error();
  if (!desc) {
    tgc_set_error("tgc_create: no model description");
    return NULL;
  }
  if (validate(desc) != 0) return NULL;
  tgc_model* m = calloc(1, sizeof *m);
  if (!m) goto oom;
  m->desc = desc;
  m->backend = desc->backend;
  int32_t nb = desc->num_buffers, nl = desc->num_launches;
  m->batch = 1;
  m->buf = calloc((size_t)nb + 1, sizeof(void*));
  m->cur = calloc((size_t)nb + 1, sizeof(void*));
  m->io_alloc = calloc((size_t)nb + 1, sizeof(void*));
  m->launch_args = calloc((size_t)nl + 1, sizeof(void**));
  m->uploads = calloc((size_t)desc->num_inputs + 2, sizeof(int32_t));
  m->states = calloc((size_t)nb + 1, sizeof(int32_t));
  if (!m->buf || !m->cur || !m->io_alloc || !m->launch_args || !m->uploads || !m->states) goto oom;

  const uint8_t* weights = desc->weights;
  if (desc->weights_file && desc->weights_file[0]) {
    if (map_weights(m) != 0) goto fail;
    weights = m->weights_map;
  }
  for (int32_t i = 0; i < nb; ++i) {
    const tgc_buffer* b = &desc->buffers[i];
    switch (b->storage) {
      case TGC_STORAGE_ARENA: break; /* a host arena is the backend's (CPU) */
      case TGC_STORAGE_WEIGHT:
      case TGC_STORAGE_IMAGE:
        if (!weights && b->nbytes > 0) {
          tgc_set_error("buffer '%s' is a weight, but the model has neither embedded weights nor a weights file",
                        b->name ? b->name : "?");
          goto fail;
        }
        m->buf[i] = weights ? (void*)(weights + b->offset) : NULL;
        break;
      default: /* INPUT, OUTPUT, STATE */
        if (!(m->io_alloc[i] = tgc_alloc64(b->nbytes))) goto oom;
        m->buf[i] = m->io_alloc[i];
        if (b->storage == TGC_STORAGE_STATE) m->states[m->num_states++] = i;
    }
  }
  for (int32_t k = 0; k < desc->num_inputs; ++k) m->uploads[m->num_uploads++] = desc->inputs[k];
  if (desc->num_vars > 0 && desc->vars_buffer >= 0) m->uploads[m->num_uploads++] = desc->vars_buffer;
  for (int32_t l = 0; l < nl; ++l)
    if (!(m->launch_args[l] = calloc((size_t)desc->launches[l].num_buffers + 1, sizeof(void*)))) goto oom;
  if (!(m->be = m->backend->create(m, num_threads))) goto fail;
  for (int32_t i = 0; m->arena && i < nb; ++i) /* a backend running kernels on the host made an arena */
    if (desc->buffers[i].storage == TGC_STORAGE_ARENA) m->buf[i] = (uint8_t*)m->arena + desc->buffers[i].offset;
  tgc_at_sample(m, 0);
  if (tgc_dims_init(m) != 0) goto fail;
  return m;
oom:
  tgc_set_error("out of memory creating model '%s'", desc->name ? desc->name : "?");
fail:
  tgc_destroy(m);
  return NULL;
}

void tgc_print_profile(const tgc_model_desc* d, const double* total_ms, int64_t runs, const char* title,
                       const char* suffix) {
  int32_t n = d->num_launches;
  double total = 0;
  for (int32_t l = 0; l < n; ++l) total += total_ms[l];
  fprintf(stderr, "tgc profile: %s, %.4f ms per run%s\n", title, total / (double)(runs > 0 ? runs : 1), suffix);
  const char* env = getenv("TGC_PROFILE");
  int32_t shown = env && strcmp(env, "all") == 0 ? n : 25;
  char* done = calloc((size_t)n + 1, 1);
  for (int32_t k = 0; k < n && k < shown && done; ++k) {
    int32_t best = -1;
    for (int32_t l = 0; l < n; ++l)
      if (!done[l] && (best < 0 || total_ms[l] > total_ms[best])) best = l;
    done[best] = 1;
    fprintf(stderr, "  %8.4f ms %5.1f%%  %s\n", total_ms[best] / (double)(runs > 0 ? runs : 1),
            100.0 * total_ms[best] / (total > 0 ? total : 1), d->launches[best].name);
  }
  free(done);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

double tgc_median(double* v, int64_t n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double tgc_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

void tgc_destroy(tgc_model* m) {
  if (!m) return;
  if (m->be) m->backend->destroy(m->be, m);
  tgc_dims_free(m);
  if (m->launch_args)
    for (int32_t l = 0; l < m->desc->num_launches; ++l) free(m->launch_args[l]);
  free(m->launch_args);
  if (m->io_alloc)
    for (int32_t i = 0; i < m->desc->num_buffers; ++i) tgc_free64(m->io_alloc[i]);
  free(m->io_alloc);
  free(m->buf);
  free(m->cur);
  free(m->uploads);
  free(m->states);
  if (m->tokenizer) m->free_tokenizer(m->tokenizer);
  if (m->weights_map) munmap(m->weights_map, m->weights_map_size);
  free(m);
}

int tgc_run(tgc_model* m) {
  if (!m) {
    tgc_set_error("tgc_run: no model");
    return -1;
  }
  const struct tgc_backend* be = m->backend;
  const tgc_model_desc* d = m->desc;
  int64_t kv_after = 0;
  if (d->kv_position) { /* this run's tokens go after the ones the cache holds */
    int32_t v = d->kv_position[0], in = d->inputs[d->kv_position[1]];
    kv_after = m->kv_length + tgc_dim_size(m, &d->buffers[in], 0);
    if (kv_after > d->var_max[v]) {
      tgc_set_error(
          "the KV cache is full: %lld positions held + %lld tokens > %lld rows (reset it, or compile with a larger "
          "--ctx)",
          (long long)m->kv_length, (long long)tgc_dim_size(m, &d->buffers[in], 0), (long long)d->var_max[v]);
      return -1;
    }
    /* no input or output has this dim: its value changes without touching their storage */
    m->var_value[v] = kv_after;
    ((int64_t*)m->buf[d->vars_buffer])[v] = kv_after;
  }
  tgc_dims_before_run(m);
  for (int64_t sample = 0; sample < m->batch;) {
    if (m->batch > 1) tgc_at_sample(m, sample);
    if (be->upload && be->upload(m->be, m, m->uploads, m->num_uploads) != 0) return -1;
    int64_t ran = be->run(m->be, m, sample);
    if (ran < 1) return -1;
    sample += ran;
  }
  if (tgc_dims_after_run(m) != 0) return -1;
  if (d->kv_position) m->kv_length = kv_after;
  return 0;
}

int32_t tgc_token_input(const tgc_model* m, const char* what) {
  const tgc_model_desc* d = tgc_desc(m);
  int32_t in = d->kv_position ? d->kv_position[1] : -1;
  if (in < 0) {
    tgc_set_error("%s: model '%s' keeps no KV cache between runs", what, d->name ? d->name : "?");
    return -1;
  }
  const tgc_buffer* b = &d->buffers[d->inputs[in]];
  if (!b->dim_vars || b->dim_vars[0] < 0 || b->rank != 1 || b->dtype != TGC_I32) {
    tgc_set_error("%s: input '%s' is not i32[n_tokens] with a run-time count (compile with --dynamic n_tokens=N)", what,
                  b->name);
    return -1;
  }
  return in;
}

int64_t tgc_kv_length(const tgc_model* m) { return m && m->desc->kv_position ? m->kv_length : -1; }

int tgc_set_kv_length(tgc_model* m, int64_t n) {
  if (!m || !m->desc->kv_position) {
    tgc_set_error("tgc_set_kv_length: the model has no KV cache");
    return -1;
  }
  if (n < 0 || n > m->kv_length) {
    tgc_set_error("tgc_set_kv_length: %lld is not between 0 and the %lld positions held", (long long)n,
                  (long long)m->kv_length);
    return -1;
  }
  m->kv_length = n; /* rows from n on are written again before any run reads them */
  return 0;
}

int tgc_reset_state(tgc_model* m) {
  if (!m) {
    tgc_set_error("tgc_reset_state: no model");
    return -1;
  }
  m->kv_length = 0;
  for (int32_t k = 0; k < m->num_states; ++k)
    memset(m->buf[m->states[k]], 0, (size_t)m->desc->buffers[m->states[k]].nbytes);
  /* GPU backends keep STATE on the device: send the zeros there too */
  if (m->num_states > 0 && m->backend->upload) return m->backend->upload(m->be, m, m->states, m->num_states);
  return 0;
}

int tgc_bind_batch(tgc_model* m, int64_t n) {
  const tgc_model_desc* d = m->desc;
  if (n == m->batch) return 0;
  if (!d->batch_dim) {
    tgc_set_error("model '%s' has no run-time batch dim (its batch size is 1)", d->name ? d->name : "?");
    return -1;
  }
  if (n < 1) {
    tgc_set_error("batch size '%s' must be at least 1, got %lld", d->batch_dim, (long long)n);
    return -1;
  }
  void** fresh = calloc((size_t)d->num_buffers + 1, sizeof(void*));
  int ok = fresh != NULL;
  for (int32_t i = 0; ok && i < d->num_buffers; ++i)
    if (d->buffers[i].batched)
      ok = d->buffers[i].nbytes <= INT64_MAX / n && (fresh[i] = tgc_alloc64(d->buffers[i].nbytes * n)) != NULL;
  if (!ok) {
    for (int32_t i = 0; fresh && i < d->num_buffers; ++i) tgc_free64(fresh[i]);
    free(fresh);
    tgc_set_error("out of memory for batch size %s=%lld", d->batch_dim, (long long)n);
    return -1;
  }
  for (int32_t i = 0; i < d->num_buffers; ++i)
    if (d->buffers[i].batched) {
      tgc_free64(m->io_alloc[i]);
      m->io_alloc[i] = m->buf[i] = fresh[i];
    }
  free(fresh);
  m->batch = n;
  tgc_at_sample(m, 0);
  return 0;
}

static int32_t dim_var(const tgc_buffer* b, int32_t k) { return b->dim_vars ? b->dim_vars[k] : -1; }

/* Where callers read and write input/output i: dense storage for one with run-time dims. */
static void* io_data(const tgc_model* m, int32_t i) { return m->dense && m->dense[i] ? m->dense[i] : m->buf[i]; }

/* The buffer of input/output `index`, or -1 with the error set (`what` names the caller). */
static int io_buffer(const tgc_model* m, int is_output, int index, const char* what) {
  int32_t n = !m ? 0 : is_output ? m->desc->num_outputs : m->desc->num_inputs;
  if (index < 0 || index >= n) {
    tgc_set_error("%s: no %s %d", what, is_output ? "output" : "input", index);
    return -1;
  }
  return (is_output ? m->desc->outputs : m->desc->inputs)[index];
}

static int io_shape(const tgc_model* m, int is_output, int index, int64_t* dims) {
  int i = io_buffer(m, is_output, index, is_output ? "tgc_output_shape" : "tgc_input_shape");
  if (i < 0) return -1;
  const tgc_buffer* b = &m->desc->buffers[i];
  for (int32_t k = 0; k < b->rank; ++k) dims[k] = tgc_dim_size(m, b, k);
  return b->rank;
}

int tgc_input_shape(const tgc_model* m, int index, int64_t* dims) { return io_shape(m, 0, index, dims); }
int tgc_output_shape(const tgc_model* m, int index, int64_t* dims) { return io_shape(m, 1, index, dims); }

int tgc_set_input_shape(tgc_model* m, int index, int rank, const int64_t* dims) {
  int i = io_buffer(m, 0, index, "tgc_set_input_shape");
  if (i < 0) return -1;
  const tgc_model_desc* d = m->desc;
  const tgc_buffer* b = &d->buffers[i];
  int ok = rank == b->rank && (rank == 0 || dims);
  for (int32_t k = 0; ok && k < rank; ++k) ok = (k == 0 && b->batched) || dim_var(b, k) >= 0 || dims[k] == b->shape[k];
  if (!ok) {
    char want[512] = "", got[512] = "";
    for (int32_t k = 0, n = 0; k < b->rank && n < 400; ++k)
      n += k == 0 && b->batched ? snprintf(want, sizeof want, "%s", d->batch_dim)
           : dim_var(b, k) >= 0
               ? snprintf(want + n, sizeof want - (size_t)n, "%s%s", k ? "," : "", d->var_names[dim_var(b, k)])
               : snprintf(want + n, sizeof want - (size_t)n, "%s%lld", k ? "," : "", (long long)b->shape[k]);
    for (int k = 0, n = 0; dims && k < rank && n < 400; ++k)
      n += snprintf(got + n, sizeof got - (size_t)n, "%s%lld", k ? "," : "", (long long)dims[k]);
    tgc_set_error("input %d '%s' has shape [%s], got [%s]", index, b->name ? b->name : "?", want, got);
    return -1;
  }
  if (b->batched) return tgc_bind_batch(m, dims[0]);
  if (!b->dim_vars) return 0;
  int64_t values[64];
  if (d->num_vars > 64) return tgc_set_error("more than 64 run-time dims"), -1;
  memcpy(values, m->var_value, (size_t)d->num_vars * sizeof(int64_t));
  for (int32_t k = 0; k < rank; ++k) {
    int32_t v = dim_var(b, k);
    if (v < 0) continue;
    if (dims[k] % tgc_var_step(d, v)) {
      tgc_set_error("input %d '%s': dim %d (%s) is %lld, not a multiple of %lld", index, b->name ? b->name : "?",
                    (int)k, d->var_names[v], (long long)dims[k], (long long)tgc_var_step(d, v));
      return -1;
    }
    values[v] = dims[k] / tgc_var_step(d, v);
  }
  return tgc_bind_vars(m, values);
}

void* tgc_input_data(tgc_model* m, int index) {
  int i = io_buffer(m, 0, index, "tgc_input_data");
  return i < 0 ? NULL : io_data(m, i);
}

const void* tgc_output_data(const tgc_model* m, int index) {
  int i = io_buffer(m, 1, index, "tgc_output_data");
  return i < 0 ? NULL : io_data(m, i);
}

int tgc_set_input(tgc_model* m, int index, const void* data, size_t nbytes) {
  int i = io_buffer(m, 0, index, "tgc_set_input");
  if (i < 0) return -1;
  const tgc_buffer* b = &m->desc->buffers[i];
  int64_t want = tgc_bound_nbytes(m, i);
  if ((int64_t)nbytes != want) {
    tgc_set_error("tgc_set_input: input %d '%s' takes %lld bytes, got %zu", index, b->name ? b->name : "?",
                  (long long)want, nbytes);
    return -1;
  }
  if (nbytes) memcpy(io_data(m, i), data, nbytes);
  return 0;
}

const tgc_model_desc* tgc_desc(const tgc_model* m) { return m ? m->desc : NULL; }

/* Does arena buffer i share any byte with another arena buffer? */
int tgc_arena_overlaps(const tgc_model_desc* d, int32_t i) {
  const tgc_buffer* b = &d->buffers[i];
  for (int32_t j = 0; j < d->num_buffers; ++j) {
    const tgc_buffer* o = &d->buffers[j];
    if (j != i && o->storage == TGC_STORAGE_ARENA && o->offset < b->offset + b->nbytes &&
        b->offset < o->offset + o->nbytes)
      return 1;
  }
  return 0;
}

const char* tgc_device_name(const tgc_model* m) {
  const char* name = m->backend->device_name ? m->backend->device_name(m->be) : NULL;
  return name ? name : "";
}

void tgc_time_launches(tgc_model* m) { m->time_launches = 1; }

double tgc_launch_ms(const tgc_model* m) {
  return m->time_launches && m->backend->launch_ms ? m->backend->launch_ms(m->be) : -1;
}
