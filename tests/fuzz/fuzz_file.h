// The readers under test take a path, so each input is written to one scratch file per process
// (in $TMPDIR, /dev/shm when it exists: no disk traffic per execution).
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline const char* fuzz_write_file(const uint8_t* data, size_t size, const char* suffix) {
  static char path[512];
  if (!path[0]) {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    snprintf(path, sizeof path, "%s/tgc-fuzz-%ld%s", dir, (long)getpid(), suffix);
  }
  FILE* f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) abort();
  return path;
}
