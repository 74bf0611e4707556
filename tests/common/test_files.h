/* test_files.h — reading a whole file, for the test drivers that load precompiled kernels from
 * a bundle (tests/numeric, tests/bert). Header-only: those drivers also build on a GPU machine
 * where nothing but the runtime is compiled. */
#ifndef KILN_TEST_FILES_H
#define KILN_TEST_FILES_H

#include <stdio.h>
#include <stdlib.h>

/* The bytes of path (free() them) and their count in *len; NULL when it cannot be read or is
 * empty. */
static inline void *kiln_test_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  *len = 0;
  if (!f)
    return NULL;
  char *buf = NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
      fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = buf ? (size_t)n : 0;
  return buf;
}

#endif /* KILN_TEST_FILES_H */
