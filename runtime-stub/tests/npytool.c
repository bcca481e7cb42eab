/* Test helper (host only): writes the test model's input files and expected outputs, and compares
 * .npy files. Its writer is independent of the runtime's (other header layouts on purpose); the
 * comparison reads both files with the runtime's reader and compares dtype, shape and bytes.
 *   npytool gen DIR        DIR/{a,b,a_f64,a_flat,trunc,garbage}.npy, DIR/expect/{out,pos_count_0}.npy
 *   npytool cmp GOT WANT   exit 0 if equal, else 1 with a message */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/runtime_internal.h"
#include "model.h"

static void die(const char* what) {
  fprintf(stderr, "npytool: %s\n", what);
  exit(2);
}

/* version 1 or 2 header around `dict`, padded to 64 bytes; truncate: drop that many data bytes */
static void write_raw(const char* dir, const char* name, int version, const char* dict, const void* data, size_t nbytes,
                      size_t truncate) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "wb");
  if (!f) die(path);
  size_t pre = version == 1 ? 10 : 12, n = strlen(dict);
  size_t pad = (64 - (pre + n + 1) % 64) % 64, hlen = n + pad + 1;
  unsigned char h[12] = {0x93,
                         'N',
                         'U',
                         'M',
                         'P',
                         'Y',
                         (unsigned char)version,
                         0,
                         (unsigned char)(hlen & 0xff),
                         (unsigned char)(hlen >> 8),
                         0,
                         0};
  fwrite(h, 1, pre, f);
  fwrite(dict, 1, n, f);
  for (size_t i = 0; i < pad; ++i) fputc(' ', f);
  fputc('\n', f);
  fwrite(data, 1, nbytes - truncate, f);
  if (fclose(f) != 0) die(path);
}

static int gen(const char* dir) {
  float a[TEST_N], b[TEST_N], out[TEST_N];
  double a64[TEST_N];
  int64_t cnt[TEST_ROWS];
  char sub[4096];
  tgc_test_inputs(a, b, 0);
  tgc_test_reference(a, b, out, cnt);
  for (int i = 0; i < TEST_N; ++i) a64[i] = a[i];
  mkdir(dir, 0755);
  write_raw(dir, "a.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 100), }", a, sizeof a, 0);
  write_raw(dir, "b.npy", 2, "{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(1000,)}", b, sizeof b, 0);
  write_raw(dir, "a_f64.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (10, 100), }", a64, sizeof a64, 0);
  write_raw(dir, "a_flat.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }", a, sizeof a, 0);
  write_raw(dir, "trunc.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 100), }", a, sizeof a, 4);
  write_raw(dir, "fortran.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (10, 100), }", a, sizeof a, 0);
  write_raw(dir, "bigend.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (10, 100), }", a, sizeof a, 0);
  snprintf(sub, sizeof sub, "%s/garbage.npy", dir);
  FILE* f = fopen(sub, "wb");
  if (!f) die(sub);
  fputs("this is not a numpy file\n", f);
  fclose(f);
  snprintf(sub, sizeof sub, "%s/expect", dir);
  mkdir(sub, 0755);
  write_raw(sub, "out.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 100), }", out, sizeof out, 0);
  write_raw(sub, "pos_count_0.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (10,), }", cnt, sizeof cnt,
            0);
  return 0;
}

static int cmp(const char* got_path, const char* want_path) {
  tgc_npy got, want;
  if (tgc_npy_read(got_path, &got) != 0 || tgc_npy_read(want_path, &want) != 0) {
    fprintf(stderr, "npytool: %s\n", tgc_last_error());
    return 1;
  }
  int ok = got.dtype == want.dtype && got.rank == want.rank && got.nbytes == want.nbytes;
  for (int i = 0; ok && i < got.rank; ++i) ok = got.shape[i] == want.shape[i];
  if (!ok) {
    fprintf(stderr, "npytool: %s: dtype/shape differ from %s\n", got_path, want_path);
    return 1;
  }
  if (memcmp(got.data, want.data, got.nbytes) != 0) {
    size_t i = 0;
    while (((unsigned char*)got.data)[i] == ((unsigned char*)want.data)[i]) ++i;
    fprintf(stderr, "npytool: %s: data differs from %s (first at byte %zu)\n", got_path, want_path, i);
    return 1;
  }
  free(got.data);
  free(want.data);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "gen") == 0) return gen(argv[2]);
  if (argc == 4 && strcmp(argv[1], "cmp") == 0) return cmp(argv[2], argv[3]);
  die("usage: npytool gen DIR | npytool cmp GOT.npy WANT.npy");
  return 2;
}
