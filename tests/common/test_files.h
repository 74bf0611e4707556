/* test_files.h — reading a whole file, for the test drivers that load precompiled kernels from
 * a bundle (tests/numeric, tests/bert), through the shared reader (runtime/base, built on a GPU
 * machine where nothing but the runtime is compiled, too). */
#ifndef KILN_TEST_FILES_H
#define KILN_TEST_FILES_H

#include <stdio.h>
#include <stdlib.h>

#include "kiln_base.h"

/* The bytes of path (free() them) and their count in *len; NULL when it cannot be read or is
 * empty.  The shared reader (kiln_base.h), which the runtime-only build has too. */
static inline void *kiln_test_read_file(const char *path, size_t *len) {
  char *buf = kiln_file_read(path, len);
  if (buf && *len == 0) {
    free(buf);
    buf = NULL;
  }
  if (!buf)
    *len = 0;
  return buf;
}

#endif /* KILN_TEST_FILES_H */
