/* check.h — what the kilnbert unit tests share: CHECK(cond, fmt, ...) prints the failed
 * condition with its file and line and a printf-style explanation, and counts it in `failures`,
 * which each program returns as its exit status; and scratch paths under the build directory. */
#ifndef KILN_KILNBERT_TEST_CHECK_H
#define KILN_KILNBERT_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                \
      printf(__VA_ARGS__);                                                  \
      printf("\n");                                                         \
      failures++;                                                           \
    }                                                                       \
  } while (0)

#endif
