/* fallback_test.c — the fallback of calls that break a tuned winner's promises. rowsum (correct
 * only when BLOCK >= cols, a condition on the call) is tuned at cols = 1024 alone, so its one
 * winner (BLOCK = 1024) promises cols%16, and the library is made with --args of cols = 60,
 * whose default config is BLOCK = 64. A call of cols = 1000 breaks the promise: it must run the
 * winner's config compiled without promises, not the default (which fails BLOCK >= cols and
 * left the call refused). Each sum is checked against a C loop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rowsumcopy.h"

enum { ROWS = 3 };

static int check(rowsumcopy *lib, KilnRtDevice *dev, int32_t cols, int64_t want_block,
                 const char *want_sig) {
  float *x, *out;
  size_t n = (size_t)ROWS * (size_t)cols;
  if (kiln_rt_malloc(dev, n * sizeof *x, (void **)&x) ||
      kiln_rt_malloc(dev, ROWS * sizeof *out, (void **)&out))
    return printf("FAIL malloc\n"), 1;
  for (size_t i = 0; i < n; i++) x[i] = (float)(i % 5) - 1.5f;
  KilnRtStatus st = rowsumcopy_rowsum(lib, x, out, cols, NULL, NULL, NULL);
  rowsumcopy_rowsum_config cfg = rowsumcopy_rowsum_pick(cols);
  int bad = st != KILN_RT_OK || cfg.BLOCK != want_block || strcmp(cfg.signature, want_sig);
  for (int r = 0; r < ROWS && st == KILN_RT_OK; r++) {
    double want = 0.0;
    for (int c = 0; c < cols; c++) want += x[(size_t)r * (size_t)cols + (size_t)c];
    /* a few hundred sums of small halves: exact in f32 up to reordering, 1e-4 is ample */
    if (fabs(out[r] - want) > 1e-4 * fmax(1.0, fabs(want))) {
      printf("FAIL cols=%d: row %d sums to %g, want %g\n", cols, r, out[r], want);
      bad = 1;
    }
  }
  printf("%s cols=%d: BLOCK=%lld signature '%s' status %s %s\n", bad ? "FAIL" : "ok", cols,
         (long long)cfg.BLOCK, cfg.signature, kiln_rt_status_name(st),
         st == KILN_RT_OK ? "" : kiln_rt_last_error());
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, out);
  return bad;
}

int main(void) {
  KilnRtDevice *dev;
  rowsumcopy *lib;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK ||
      rowsumcopy_create(dev, &lib) != KILN_RT_OK) {
    printf("FAIL: %s\n", kiln_rt_last_error());
    return 1;
  }
  int failures = check(lib, dev, 1024, 1024, "cols%16"); /* keeps the promise: the winner */
  failures += check(lib, dev, 1000, 1024, "");           /* breaks it: the generic copy */
  failures += check(lib, dev, 3, 1024, "");
  rowsumcopy_destroy(lib);
  kiln_rt_device_destroy(dev);
  return failures ? 1 : 0;
}
