/* conditions_test.c — a library whose kernel (rowsum) is only correct when BLOCK >= cols, a
 * condition on the call in its tune block. The cache holds BLOCK = 64 tuned for cols = 60 (and
 * for cols = 64, promising cols%16) and BLOCK = 1024 for cols = 1000; cols = 100 is nearest to the first one's bucket, which does not
 * fit it, so the library must take the other. Every sum is checked against a C loop, and a call
 * no variant fits (cols = 5000) must be refused, not run, with kiln_rt_last_error() naming the
 * condition or promise each variant broke and the sizes the library has variants for. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rowsumlib.h"

enum { ROWS = 5 };

static int check(rowsumlib *lib, KilnRtDevice *dev, int32_t cols) {
  float *x, *out;
  size_t n = (size_t)ROWS * (size_t)cols;
  if (kiln_rt_malloc(dev, n * sizeof *x, (void **)&x) ||
      kiln_rt_malloc(dev, ROWS * sizeof *out, (void **)&out))
    return printf("FAIL malloc\n"), 1;
  for (size_t i = 0; i < n; i++) x[i] = (float)(i % 7) - 2.5f;
  KilnRtStatus st = rowsumlib_rowsum(lib, x, out, cols, NULL, NULL, NULL);
  rowsumlib_rowsum_config cfg = rowsumlib_rowsum_pick(cols);
  int bad = st != KILN_RT_OK || cfg.BLOCK < cols;
  for (int r = 0; r < ROWS && !bad; r++) {
    double want = 0.0;
    for (int c = 0; c < cols; c++) want += x[(size_t)r * (size_t)cols + (size_t)c];
    if (fabs(out[r] - want) > 1e-4 * fmax(1.0, fabs(want))) {
      printf("FAIL cols=%d: row %d sums to %g, want %g\n", cols, r, out[r], want);
      bad = 1;
    }
  }
  printf("%s cols=%d: BLOCK=%lld status %s\n", bad ? "FAIL" : "ok", cols, (long long)cfg.BLOCK,
         kiln_rt_status_name(st));
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, out);
  return bad;
}

int main(void) {
  KilnRtDevice *dev;
  rowsumlib *lib;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK ||
      rowsumlib_create(dev, &lib) != KILN_RT_OK) {
    printf("FAIL: %s\n", kiln_rt_last_error());
    return 1;
  }
  int failures = 0;
  int32_t fits[] = {60, 100, 1000, 700, 3, 1024};
  for (int i = 0; i < 6; i++) failures += check(lib, dev, fits[i]);
  /* cols = 64 runs the BLOCK = 64 variant (the nearest that fits), cols = 100 cannot */
  failures += rowsumlib_rowsum_pick(64).BLOCK != 64;
  failures += rowsumlib_rowsum_pick(100).BLOCK != 1024;
  /* no variant fits cols = 5000: refused, and _pick says so with num_warps 0 */
  float *x = NULL, *out = NULL;
  kiln_rt_malloc(dev, 4, (void **)&x);
  kiln_rt_malloc(dev, 4, (void **)&out);
  KilnRtStatus st = rowsumlib_rowsum(lib, x, out, 5000, NULL, NULL, NULL);
  int refused = st == KILN_RT_ERROR_INVALID_ARGUMENT && rowsumlib_rowsum_pick(5000).num_warps == 0;
  printf("%s cols=5000: status %s\n", refused ? "ok" : "FAIL", kiln_rt_status_name(st));
  failures += !refused;
  /* the refusal says why: the call, each variant's sizes and the condition or promise it broke
   * (5000 is no multiple of 16, so the variant tuned for cols = 64 fails its promise) */
  const char *why = kiln_rt_last_error();
  const char *want[] = {"rowsumlib_rowsum: no variant fits the call (cols=5000)",
                        "cols=64, BLOCK=64", "cols=1024, BLOCK=1024", "where BLOCK >= cols fails",
                        "promise cols%16 not kept"};
  for (int i = 0; i < 5; i++)
    if (!strstr(why, want[i])) {
      printf("FAIL: the last error '%s' lacks '%s'\n", why, want[i]);
      failures++;
    }
  printf("last error: %s\n", why);
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, out);
  rowsumlib_destroy(lib);
  kiln_rt_device_destroy(dev);
  return failures ? 1 : 0;
}
