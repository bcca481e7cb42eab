/* Parser of the OpenCL candidate payload (cl_candidate.h). Kept free of OpenCL so the unit
 * tests can check it against what tgc writes. */
#include "cl_candidate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgc_model.h"

/* The next line of [*p, end) without its '\n' into buf; 0 at the end or for an overlong line. */
static int next_line(const char** p, const char* end, char* buf, size_t cap) {
  if (*p >= end) return 0;
  const char* nl = memchr(*p, '\n', (size_t)(end - *p));
  if (!nl) return 0; /* the header lines all end with '\n'; "source" is followed by the source */
  size_t len = (size_t)(nl - *p);
  if (len >= cap) return 0;
  memcpy(buf, *p, len);
  buf[len] = 0;
  *p = nl + 1;
  return 1;
}

/* A non-negative decimal integer filling all of s. */
static int parse_count(const char* s, int64_t* v) {
  char* end = NULL;
  if (*s < '0' || *s > '9') return 0;
  long long x = strtoll(s, &end, 10);
  if (*end != 0 || x < 0) return 0;
  *v = x;
  return 1;
}

static int is_identifier(const char* s) {
  if (!*s || (*s >= '0' && *s <= '9')) return 0;
  for (; *s; ++s)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))) return 0;
  return 1;
}

/* The candidates differ only in their first line, the line before the code and what a local
 * size may be: 0 (OpenCL: the driver chooses) unless `needs_local`, a divisor of the global size
 * unless `ragged` (Vulkan: padding threads return at once). */
static int parse(const char* payload, size_t n, const char* first, const char* code, const char* kind, int needs_local,
                 int ragged, tgc_cl_candidate* c, char* err, size_t err_cap) {
  const char *p = payload, *end = payload + n;
  char line[512];
  memset(c, 0, sizeof *c);
  c->global_size = -1, c->local_size = -1;
#define FAIL(...) return snprintf(err, err_cap, __VA_ARGS__), -1
  line[0] = 0;
  if (!next_line(&p, end, line, sizeof line) || strcmp(line, first) != 0)
    FAIL("not an %s candidate of version %d (first line '%.60s')", kind, TGC_CL_CANDIDATE_VERSION, line);
  for (;;) {
    if (!next_line(&p, end, line, sizeof line)) FAIL("the candidate ends before its '%s' line", code);
    if (!strcmp(line, code)) break;
    char* value = strchr(line, ' ');
    if (!value) FAIL("bad candidate line '%.60s'", line);
    *value++ = 0;
    if (!strcmp(line, "kernel")) {
      if (!is_identifier(value) || strlen(value) >= sizeof c->kernel) FAIL("bad kernel name '%.60s'", value);
      strcpy(c->kernel, value);
    } else if (!strcmp(line, "global") || !strcmp(line, "local")) {
      int64_t* v = line[0] == 'g' ? &c->global_size : &c->local_size;
      if (!parse_count(value, v)) FAIL("bad %s size '%.60s'", line, value);
    } else if (!strcmp(line, "buffer")) {
      char* dtype = strchr(value, ' ');
      int64_t bytes, dt;
      if (!dtype) FAIL("bad buffer line 'buffer %.60s' (want: buffer BYTES DTYPE)", value);
      *dtype++ = 0;
      if (!parse_count(value, &bytes) || !parse_count(dtype, &dt) || dt > TGC_F64)
        FAIL("bad buffer line 'buffer %.30s %.30s' (want: buffer BYTES DTYPE)", value, dtype);
      if (c->num_buffers == TGC_CL_CANDIDATE_MAX_BUFFERS) FAIL("more than %d buffers", TGC_CL_CANDIDATE_MAX_BUFFERS);
      c->buffer_bytes[c->num_buffers] = bytes;
      c->buffer_dtypes[c->num_buffers++] = (int32_t)dt;
    } else {
      FAIL("unknown candidate line '%.60s'", line);
    }
  }
  if (!c->kernel[0]) FAIL("the candidate names no kernel");
  if (c->global_size < 1) FAIL("the candidate has no global size");
  if (c->local_size < 0) FAIL("the candidate has no local size");
  if (needs_local && c->local_size < 1) FAIL("a %s candidate needs a work-group size", kind);
  if (!ragged && c->local_size > 0 && c->global_size % c->local_size != 0)
    FAIL("global size %lld is not a multiple of local size %lld", (long long)c->global_size, (long long)c->local_size);
  if (c->num_buffers < 1) FAIL("the candidate has no buffers");
  if (p >= end) FAIL("the candidate has no %s", code);
  c->source = p, c->source_len = (size_t)(end - p);
  return 0;
#undef FAIL
}

int tgc_cl_candidate_parse(const char* payload, size_t n, tgc_cl_candidate* c, char* err, size_t err_cap) {
  return parse(payload, n, "tgc-cl 1", "source", "OpenCL", 0, 0, c, err, err_cap);
}

int tgc_vk_candidate_parse(const char* payload, size_t n, tgc_cl_candidate* c, char* err, size_t err_cap) {
  return parse(payload, n, "tgc-vk 1", "spirv", "Vulkan", 1, 1, c, err, err_cap);
}

int tgc_cuda_candidate_parse(const char* payload, size_t n, tgc_cl_candidate* c, char* err, size_t err_cap) {
  return parse(payload, n, "tgc-cuda 1", "ptx", "CUDA", 1, 0, c, err, err_cap);
}
