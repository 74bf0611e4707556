/* rt_test.h — the runtime tests' checks of runtime calls, on top of the one CHECK
 * (tests/common/check.h): each failing check prints where and why (with the runtime's last error)
 * and counts in `failures`; main returns kiln_check_result(). */
#ifndef KILN_TESTS_RT_TEST_H
#define KILN_TESTS_RT_TEST_H

#include "../common/check.h"
#include "kiln/kilnrt.h"
#include "kiln_base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Expects a specific status from a runtime call (on the one CHECK). */
#define CHECK_STATUS(call, want)                                                                   \
  do {                                                                                             \
    KilnRtStatus got_ = (call);                                                                    \
    CHECK(got_ == (want), "%s returned %s, expected %s (last error: %s)", #call,                   \
          kiln_rt_status_name(got_), kiln_rt_status_name(want), kiln_rt_last_error());             \
  } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, KILN_RT_OK)

/* The message contains `needle`. */
#define CHECK_CONTAINS(haystack, needle)                                                           \
  do {                                                                                             \
    const char *h_ = (haystack);                                                                   \
    CHECK(h_ &&strstr(h_, (needle)), "expected \"%s\" in \"%s\"", (needle), h_ ? h_ : "(null)");   \
  } while (0)

/* Reads a whole file into a malloc'ed buffer; NULL on failure (the shared reader, kiln_base.h). */
static inline unsigned char *rt_test_read_file(const char *path, size_t *size) {
  return (unsigned char *)kiln_file_read(path, size);
}

#endif /* KILN_TESTS_RT_TEST_H */
