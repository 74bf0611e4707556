/* check.h — the CHECK macro of the unit-test programs: CHECK(cond, fmt, ...) prints the failed
 * condition with its file and line and a printf-style explanation, and counts it in `failures`,
 * which each program turns into its exit status. Header-only, like test_files.h. */
#ifndef KILN_TEST_CHECK_H
#define KILN_TEST_CHECK_H

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

#endif /* KILN_TEST_CHECK_H */
