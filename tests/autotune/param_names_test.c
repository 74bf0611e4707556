/* param_names_test.c — a generated library of a kernel whose parameters carry the names of the
 * generated functions' own locals (kernels/names.kiln): it compiles (which it did not while
 * those locals were called v, g, cfg, fn, st, ...) and passes every argument through, checked
 * against a C loop; the call condition on `fn` still refuses a call no variant fits. */
#include <math.h>
#include <stdio.h>

#include "nameslib.h"

int main(void) {
  KilnRtDevice *dev;
  nameslib *lib;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK ||
      nameslib_create(dev, &lib) != KILN_RT_OK) {
    printf("FAIL: %s\n", kiln_rt_last_error());
    return 1;
  }
  enum { N = 1000 };
  float *v, *g;
  if (kiln_rt_malloc(dev, N * sizeof *v, (void **)&v) ||
      kiln_rt_malloc(dev, N * sizeof *g, (void **)&g)) {
    printf("FAIL malloc\n");
    return 1;
  }
  for (int i = 0; i < N; i++) v[i] = (float)i * 0.5f;
  int failures = 0;
  KilnRtStatus st =
      nameslib_clash(lib, v, g, N, 3, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, NULL, NULL, NULL);
  if (st != KILN_RT_OK) {
    printf("FAIL launch: %s\n", kiln_rt_last_error());
    failures++;
  }
  for (int i = 0; i < N && !failures; i++)
    if (fabsf(g[i] - ((float)i * 0.5f + 66.0f)) > 1e-3f) {
      printf("FAIL g[%d] = %g, want %g\n", i, g[i], (float)i * 0.5f + 66.0f);
      failures++;
    }
  /* the condition BLOCK >= fn: no variant has BLOCK 1000 */
  st = nameslib_clash(lib, v, g, N, 1000, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, NULL, NULL, NULL);
  if (st != KILN_RT_ERROR_INVALID_ARGUMENT) {
    printf("FAIL a call no variant fits ran: %s\n", kiln_rt_status_name(st));
    failures++;
  }
  kiln_rt_free(dev, v);
  kiln_rt_free(dev, g);
  nameslib_destroy(lib);
  kiln_rt_device_destroy(dev);
  if (!failures) printf("ok\n");
  return failures != 0;
}
