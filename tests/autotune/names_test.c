/* names_test.c — dispatch by keys named d and t (kernels/dispatch_names.kiln: kernel v, buffers
 * g and fn, the names of the generated code's locals). The library holds BLOCK = 64 tuned for
 * d = 60 and BLOCK = 1024 for d = 50001 (t = 2 both); each call must take the variant of the
 * nearest size and compute fn = 2 g + 1 over d * t elements. With the keys shadowed by the
 * dispatch code's locals every call took the first variant. */
#include <math.h>
#include <stdio.h>

#include "dtlib.h"

static int check(dtlib *lib, KilnRtDevice *dev, int32_t d, int32_t t, int64_t want_block) {
  size_t n = (size_t)d * (size_t)t;
  float *g, *fn;
  if (kiln_rt_malloc(dev, n * sizeof *g, (void **)&g) ||
      kiln_rt_malloc(dev, (n + 1) * sizeof *fn, (void **)&fn))
    return printf("FAIL malloc: %s\n", kiln_rt_last_error()), 1;
  for (size_t i = 0; i < n; i++) g[i] = (float)(i % 13) - 6.0f;
  fn[n] = -7.0f; /* sentinel: the grid covers exactly d * t elements */
  KilnRtStatus st = dtlib_v(lib, g, fn, d, t, NULL, NULL, NULL);
  int64_t block = dtlib_v_pick(d, t).BLOCK;
  int bad = st != KILN_RT_OK || block != want_block || fn[n] != -7.0f;
  for (size_t i = 0; i < n && !bad; i++)
    if (fabsf(fn[i] - (2.0f * g[i] + 1.0f)) > 1e-6f) {
      printf("FAIL d=%d t=%d: fn[%zu] = %g, want %g\n", d, t, i, fn[i], 2.0f * g[i] + 1.0f);
      bad = 1;
    }
  printf("%s d=%d t=%d: BLOCK=%lld (want %lld), status %s %s\n", bad ? "FAIL" : "ok", d, t,
         (long long)block, (long long)want_block, kiln_rt_status_name(st),
         st == KILN_RT_OK ? "" : kiln_rt_last_error());
  kiln_rt_free(dev, g);
  kiln_rt_free(dev, fn);
  return bad;
}

int main(void) {
  KilnRtDevice *dev;
  dtlib *lib;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK || dtlib_create(dev, &lib) != KILN_RT_OK) {
    printf("FAIL: %s\n", kiln_rt_last_error());
    return 1;
  }
  int failures = check(lib, dev, 60, 2, 64) + check(lib, dev, 40, 2, 64) +
                 check(lib, dev, 50001, 2, 1024) + check(lib, dev, 30000, 3, 1024) +
                 check(lib, dev, 100, 1, 64);
  dtlib_destroy(lib);
  kiln_rt_device_destroy(dev);
  return failures ? 1 : 0;
}
