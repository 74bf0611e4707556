/* libcall_util.h — what the generated-library call tests (speclib, tierlib, layoutlib) share:
 * their f16 inputs and the copy of a host array to the device. Header-only (static inline), as
 * each test is one program that uses what it needs. Needs reference.h (tests/numeric) and the
 * runtime's header, which the generated library's header includes. */
#ifndef KILN_TESTS_AUTOTUNE_LIBCALL_UTIL_H
#define KILN_TESTS_AUTOTUNE_LIBCALL_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Element i of an input in [-1, 1], rounded to f16, different per salt. */
static inline float libcall_input(size_t i, unsigned salt) {
  return kiln_ref_round_f16((float)((i * 2654435761u + salt) % 2001u) / 1000.0f - 1.0f);
}

/* n 16-bit elements copied to a new device buffer (16 bytes over, for vector reads at the end);
 * NULL on failure. */
static inline void *libcall_to_device(KilnRtDevice *dev, const uint16_t *host, size_t n) {
  void *p = NULL;
  if (kiln_rt_malloc(dev, n * sizeof *host + 16, &p) != KILN_RT_OK ||
      kiln_rt_memcpy_htod(dev, p, host, n * sizeof *host, NULL) != KILN_RT_OK)
    return NULL;
  return p;
}

#endif
