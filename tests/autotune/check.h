/* check.h — what the autotune test programs share for their checks: CHECK(cond, fmt, ...) prints
 * the failed condition with its file, line and a printf-style explanation, and counts it in
 * `failures`, which each program turns into its exit status. */
#ifndef KILN_AUTOTUNE_TEST_CHECK_H
#define KILN_AUTOTUNE_TEST_CHECK_H

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
