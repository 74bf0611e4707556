/* scratch_dir.h — the command line of the kilnbert tests that write files: `PROGRAM SCRATCH_DIR`,
 * the folder made when missing (ctest hands each test its own under the build tree). */
#ifndef KILN_TEST_SCRATCH_DIR_H
#define KILN_TEST_SCRATCH_DIR_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* 0 when argv is `PROGRAM DIR` and DIR exists or was made; else the exit status to end with
 * (2: usage, 1: the folder cannot be made), after a message. */
static inline int kb_test_scratch_dir(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  if (mkdir(argv[1], 0777) != 0 && errno != EEXIST) {
    printf("FAIL: cannot make %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  return 0;
}

#endif /* KILN_TEST_SCRATCH_DIR_H */
