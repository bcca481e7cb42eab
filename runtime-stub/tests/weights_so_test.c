/* weights_so_test SO_DIR: external weights are resolved next to the .so (dladdr), not the exe;
 * the runtime's own symbols stay hidden. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "model.h"

int rt_so_check(const char** err);

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  char path[4096];
  snprintf(path, sizeof path, "%s/rt_so_test.weights", argv[1]);
  int fails = 0;
  const char* err = "";
  unlink(path);
  if (rt_so_check(&err) == 0 || !strstr(err, "rt_so_test.weights") || !strstr(err, argv[1])) {
    fprintf(stderr, "FAIL: missing weights file: '%s'\n", err);
    ++fails;
  } else {
    printf("ok: missing weights file -> %s\n", err);
  }
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(tgc_test_weights, 1, 4004, f) != 4004 || fclose(f) != 0) return 2;
  if (rt_so_check(&err) != 0) {
    fprintf(stderr, "FAIL: weights next to the .so: %s\n", err);
    ++fails;
  } else {
    printf("ok: weights found next to the .so\n");
  }
  unlink(path);
  if (dlsym(RTLD_DEFAULT, "tgc_create") || dlsym(RTLD_DEFAULT, "tgc_main") || dlsym(RTLD_DEFAULT, "tgc_backend_cpu")) {
    fprintf(stderr, "FAIL: the .so exports the runtime's symbols\n");
    ++fails;
  }
  return fails ? 1 : 0;
}
