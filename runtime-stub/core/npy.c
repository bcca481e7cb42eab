/* .npy reading and writing: format versions 1.0/2.0/3.0, little-endian, C order. f16 is carried as
 * raw 16-bit values; bf16 (which has no numpy descr) is written and read as raw '<u2'. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/runtime_internal.h"

const char* tgc_npy_descr(int32_t dtype) {
  switch (dtype) {
    case TGC_BOOL: return "|b1";
    case TGC_I8: return "|i1";
    case TGC_I16: return "<i2";
    case TGC_I32: return "<i4";
    case TGC_I64: return "<i8";
    case TGC_U8: return "|u1";
    case TGC_U16: return "<u2";
    case TGC_U32: return "<u4";
    case TGC_U64: return "<u8";
    case TGC_F16: return "<f2";
    case TGC_BF16: return "<u2";
    case TGC_F32: return "<f4";
    case TGC_F64: return "<f8";
    default: return NULL;
  }
}

static int32_t dtype_from_descr(const char* s) {
  /* byte order, kind, size; '>' only for single bytes, where it means nothing */
  if (strlen(s) != 3 || !strchr("<|=>", s[0])) return -1;
  int size = s[2] - '0';
  if (s[0] == '>' && size != 1) return -2;
  switch (s[1]) {
    case 'b': return size == 1 ? TGC_BOOL : -1;
    case 'i': return size == 1 ? TGC_I8 : size == 2 ? TGC_I16 : size == 4 ? TGC_I32 : size == 8 ? TGC_I64 : -1;
    case 'u': return size == 1 ? TGC_U8 : size == 2 ? TGC_U16 : size == 4 ? TGC_U32 : size == 8 ? TGC_U64 : -1;
    case 'f': return size == 2 ? TGC_F16 : size == 4 ? TGC_F32 : size == 8 ? TGC_F64 : -1;
    default: return -1;
  }
}

/* Points just after `'key':` (either quote style) in the header dict, or NULL. */
static const char* find_key(const char* h, const char* key) {
  size_t kl = strlen(key);
  for (const char* p = h; (p = strstr(p, key)) != NULL; p += kl) {
    if (p == h || (p[-1] != '\'' && p[-1] != '"') || p[kl] != p[-1]) continue;
    const char* q = p + kl + 1;
    while (*q == ' ') ++q;
    if (*q != ':') continue;
    ++q;
    while (*q == ' ') ++q;
    return q;
  }
  return NULL;
}

int tgc_npy_read(const char* path, tgc_npy* out) {
  memset(out, 0, sizeof *out);
  FILE* f = fopen(path, "rb");
  if (!f) {
    tgc_set_error("%s: cannot open (%s)", path, strerror(errno));
    return -1;
  }
  char* h = NULL;
  unsigned char pre[12];
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0 || pre[6] < 1 || pre[6] > 3) {
    tgc_set_error("%s: not a .npy file", path);
    goto fail;
  }
  uint32_t hlen = pre[8] | (uint32_t)pre[9] << 8;
  if (pre[6] >= 2) {
    if (fread(pre + 10, 1, 2, f) != 2) {
      tgc_set_error("%s: truncated header", path);
      goto fail;
    }
    hlen |= (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
  }
  if (hlen > (1u << 24) || !(h = malloc(hlen + 1)) || fread(h, 1, hlen, f) != hlen) {
    tgc_set_error("%s: truncated or oversized header", path);
    goto fail;
  }
  h[hlen] = '\0';
  const char* d = find_key(h, "descr");
  const char* fo = find_key(h, "fortran_order");
  const char* sh = find_key(h, "shape");
  if (!d || (*d != '\'' && *d != '"') || !fo || !sh || *sh != '(') {
    tgc_set_error("%s: malformed .npy header", path);
    goto fail;
  }
  if (strncmp(fo, "True", 4) == 0) {
    tgc_set_error("%s: Fortran-order arrays are not supported", path);
    goto fail;
  }
  char descr[16];
  const char* de = strchr(d + 1, *d);
  if (!de || de - d - 1 >= (long)sizeof descr) {
    tgc_set_error("%s: malformed dtype in .npy header", path);
    goto fail;
  }
  memcpy(descr, d + 1, (size_t)(de - d - 1));
  descr[de - d - 1] = '\0';
  out->dtype = dtype_from_descr(descr);
  if (out->dtype < 0) {
    tgc_set_error("%s: unsupported dtype '%s'%s", path, descr, out->dtype == -2 ? " (big-endian)" : "");
    goto fail;
  }
  int64_t numel = 1;
  for (const char* p = sh + 1;;) {
    while (*p == ' ' || *p == ',') ++p;
    if (*p == ')') break;
    char* end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || out->rank >= 16) {
      tgc_set_error("%s: malformed shape in .npy header", path);
      goto fail;
    }
    out->shape[out->rank++] = v;
    if (v && numel > INT64_MAX / v) {
      tgc_set_error("%s: shape too large", path);
      goto fail;
    }
    numel *= v;
    p = end;
    while (*p == 'L') ++p;
  }
  int esize = tgc_dtype_size(out->dtype);
  if (numel > INT64_MAX / esize) {
    tgc_set_error("%s: shape too large", path);
    goto fail;
  }
  out->nbytes = (size_t)(numel * esize);
  /* checked against what a (seekable) file holds before allocating: a lying header costs no memory */
  long here = ftell(f), end = -1;
  if (here >= 0 && fseek(f, 0, SEEK_END) == 0) end = ftell(f);
  if (here >= 0 && end >= 0 && fseek(f, here, SEEK_SET) != 0) end = -1, here = -1;
  if (here >= 0 && end >= here && (uint64_t)(end - here) < (uint64_t)out->nbytes) {
    tgc_set_error("%s: truncated data (expected %zu bytes)", path, out->nbytes);
    goto fail;
  }
  out->data = malloc(out->nbytes ? out->nbytes : 1);
  if (!out->data) {
    tgc_set_error("%s: out of memory (%zu bytes)", path, out->nbytes);
    goto fail;
  }
  if (fread(out->data, 1, out->nbytes, f) != out->nbytes) {
    tgc_set_error("%s: truncated data (expected %zu bytes)", path, out->nbytes);
    goto fail;
  }
  free(h);
  fclose(f);
  return 0;
fail:
  free(h);
  free(out->data);
  out->data = NULL;
  fclose(f);
  return -1;
}

int tgc_npy_write(const char* path, int32_t dtype, int32_t rank, const int64_t* shape, const void* data,
                  size_t nbytes) {
  const char* descr = tgc_npy_descr(dtype);
  if (!descr) {
    tgc_set_error("%s: cannot write dtype %s to .npy", path, tgc_dtype_name(dtype));
    return -1;
  }
  char dict[1024];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int32_t i = 0; i < rank && n < (int)sizeof dict - 64; ++i)
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", i ? ", " : "", (long long)shape[i]);
  n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", rank == 1 ? "," : "");
  /* pad with spaces so that magic + length + header ends on a 64-byte boundary, then '\n' */
  char hdr[1200];
  memcpy(hdr, "\x93NUMPY\x01\x00", 8);
  size_t total = 10 + (size_t)n + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = (size_t)n + pad + 1;
  hdr[8] = (char)(hlen & 0xff);
  hdr[9] = (char)(hlen >> 8);
  memcpy(hdr + 10, dict, (size_t)n);
  memset(hdr + 10 + n, ' ', pad);
  hdr[10 + hlen - 1] = '\n';

  size_t plen = strlen(path);
  char* tmp = malloc(plen + 32);
  if (!tmp) {
    tgc_set_error("%s: out of memory", path);
    return -1;
  }
  snprintf(tmp, plen + 32, "%s.tmp%ld", path, (long)getpid());
  FILE* f = fopen(tmp, "wb");
  if (!f) {
    tgc_set_error("%s: cannot write (%s)", path, strerror(errno));
    free(tmp);
    return -1;
  }
  int ok = fwrite(hdr, 1, 10 + hlen, f) == 10 + hlen && (nbytes == 0 || fwrite(data, 1, nbytes, f) == nbytes);
  int err = errno;
  if (fclose(f) != 0 && ok) ok = 0, err = errno;
  if (!ok) {
    tgc_set_error("%s: write failed (%s)", path, strerror(err));
    unlink(tmp);
    free(tmp);
    return -1;
  }
  if (rename(tmp, path) != 0) {
    tgc_set_error("%s: cannot rename into place (%s)", path, strerror(errno));
    unlink(tmp);
    free(tmp);
    return -1;
  }
  free(tmp);
  return 0;
}
