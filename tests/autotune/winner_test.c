/* winner_test.c — the tuned winners of autotune.emu_device and autotune.seed_parameter, run from
 * the libraries `kiln tune --emit-lib` makes of the same tunes, against C references. Those two
 * tests judge each candidate only against the first candidate and grep the tuner's report for a
 * status, so a kernel wrong in every variant alike would pass them; here the variant a call
 * dispatches to must compute the right numbers.
 *
 * WINNER_SCALE_ADD (library winner_emu, device emu): out = a * x + y at the tuned n = 4096 and at
 * n = 1000 (a ragged last program). One multiply and one add, each correctly rounded, or one
 * fused multiply-add: off from the double a * x + y by at most 2^-24 |a x| + 2^-24 |a x + y|
 * <= 2^-23 (|a x| + |y|), the bound of each element (results near 0 come from cancellation, so
 * their error is relative to the operands, not to the result).
 * WINNER_DROPOUT (library winner_seed, device cpu): dropout_fwd with seed 7 (the seed of the
 * tune) and -3, offset 0 and 1000: y = rand(seed, offset + i) > p ? x / (1 - p) : 0 with the
 * independent Philox of tests/numeric/reference.c; every keep decision exact, kept values within
 * 2^-23 relative of x * (1 / (1 - p)) in f32 (one multiply by the f32 reciprocal). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kilnrt.h"
#include "reference.h"
#include WINNER_HEADER

#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#define FN(x)      CAT(WINNER_LIB, x)

static int failures;

static void *dev_copy(KilnRtDevice *dev, const float *host, size_t n) {
  void *p = NULL;
  if (kiln_rt_malloc(dev, n * sizeof *host, &p) != KILN_RT_OK) return NULL;
  if (host) kiln_rt_memcpy_htod(dev, p, host, n * sizeof *host, NULL);
  return p;
}

/* |got - want| <= bound element by element; the first mismatch printed. */
static void compare(const char *what, const float *got, const double *want, const double *bound,
                    size_t n) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (!(fabs(got[i] - want[i]) <= bound[i]) && bad++ == 0) first = i;
  if (bad) {
    printf("FAIL %s: %zu of %zu wrong, first [%zu] got %.9g want %.9g (bound %.3g)\n", what, bad, n,
           first, (double)got[first], want[first], bound[first]);
    failures++;
  } else {
    printf("ok   %s: %zu elements within their bounds\n", what, n);
  }
}

#ifdef WINNER_SCALE_ADD
static void run(WINNER_LIB *lib, KilnRtDevice *dev, int32_t n) {
  float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  float *out = malloc((size_t)n * sizeof *out);
  double *want = malloc((size_t)n * sizeof *want), *bound = malloc((size_t)n * sizeof *bound);
  const float a = 2.5f;
  for (int32_t i = 0; i < n; i++) {
    x[i] = (float)((i * 37) % 101 - 50) / 7.0f, y[i] = (float)((i * 11) % 53 - 26) / 3.0f;
    want[i] = (double)a * x[i] + y[i];
    bound[i] = 0x1p-23 * (fabs((double)a * x[i]) + fabs((double)y[i]));
  }
  void *dx = dev_copy(dev, x, (size_t)n), *dy = dev_copy(dev, y, (size_t)n);
  void *dout = dev_copy(dev, NULL, (size_t)n);
  KilnRtStatus st = FN(_scale_add)(lib, dx, dy, dout, a, n, NULL, NULL, NULL);
  if (st == KILN_RT_OK) st = kiln_rt_device_synchronize(dev);
  if (st == KILN_RT_OK) st = kiln_rt_memcpy_dtoh(dev, out, dout, (size_t)n * sizeof *out, NULL);
  char what[96];
  FN(_scale_add_config) cfg = FN(_scale_add_pick)(n);
  snprintf(what, sizeof what, "scale_add n=%d (BLOCK=%lld num_warps=%d)", (int)n,
           (long long)cfg.BLOCK, cfg.num_warps);
  if (st != KILN_RT_OK) {
    printf("FAIL %s: %s (%s)\n", what, kiln_rt_status_name(st), kiln_rt_last_error());
    failures++;
  } else {
    compare(what, out, want, bound, (size_t)n);
  }
  kiln_rt_free(dev, dx), kiln_rt_free(dev, dy), kiln_rt_free(dev, dout);
  free(x), free(y), free(out), free(want), free(bound);
}

static void run_all(WINNER_LIB *lib, KilnRtDevice *dev) {
  run(lib, dev, 4096);
  run(lib, dev, 1000);
}
#endif

#ifdef WINNER_DROPOUT
static void run(WINNER_LIB *lib, KilnRtDevice *dev, int32_t n, int32_t seed, int32_t offset) {
  const float p = 0.1f;
  float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  double *want = malloc((size_t)n * sizeof *want), *bound = malloc((size_t)n * sizeof *bound);
  for (int32_t i = 0; i < n; i++) {
    x[i] = 0.5f + (float)(i % 97) / 97.0f; /* never 0: 0 means dropped */
    bool keep = kiln_ref_rand(seed, offset + i) > p;
    want[i] = keep ? (double)(x[i] * (1.0f / (1.0f - p))) : 0.0;
    bound[i] = 0x1p-23 * want[i];
  }
  void *dx = dev_copy(dev, x, (size_t)n), *dy = dev_copy(dev, NULL, (size_t)n);
  KilnRtStatus st = FN(_dropout_fwd)(lib, dx, dy, n, p, seed, offset, NULL, NULL, NULL);
  if (st == KILN_RT_OK) st = kiln_rt_device_synchronize(dev);
  if (st == KILN_RT_OK) st = kiln_rt_memcpy_dtoh(dev, y, dy, (size_t)n * sizeof *y, NULL);
  char what[96];
  FN(_dropout_fwd_config) cfg = FN(_dropout_fwd_pick)(n, seed, offset);
  snprintf(what, sizeof what, "dropout_fwd n=%d seed=%d offset=%d (BLOCK=%lld)", (int)n, (int)seed,
           (int)offset, (long long)cfg.BLOCK);
  if (st != KILN_RT_OK) {
    printf("FAIL %s: %s (%s)\n", what, kiln_rt_status_name(st), kiln_rt_last_error());
    failures++;
  } else {
    size_t wrong = 0;
    for (int32_t i = 0; i < n; i++) wrong += (y[i] != 0.0f) != (want[i] != 0.0);
    if (wrong) {
      printf("FAIL %s: %zu keep decisions differ from the reference mask\n", what, wrong);
      failures++;
    }
    compare(what, y, want, bound, (size_t)n);
  }
  kiln_rt_free(dev, dx), kiln_rt_free(dev, dy);
  free(x), free(y), free(want), free(bound);
}

static void run_all(WINNER_LIB *lib, KilnRtDevice *dev) {
  run(lib, dev, 4096, 7, 0);
  run(lib, dev, 4096, -3, 1000);
  run(lib, dev, 1001, 7, 0);
}
#endif

int main(void) {
  KilnRtDevice *dev;
  WINNER_LIB *lib;
  if (kiln_rt_device_create(WINNER_DEVICE, &dev) != KILN_RT_OK) {
    printf("FAIL: device %s: %s\n", WINNER_DEVICE, kiln_rt_last_error());
    return 1;
  }
  if (FN(_create)(dev, &lib) != KILN_RT_OK) {
    printf("FAIL: create: %s\n", kiln_rt_last_error());
    kiln_rt_device_destroy(dev);
    return 1;
  }
  run_all(lib, dev);
  FN(_destroy)(lib);
  kiln_rt_device_destroy(dev);
  printf("%s\n", failures ? "FAILED" : "all ok");
  return failures != 0;
}
