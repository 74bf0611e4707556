/* main.c — calls the generated saxpy library and checks it against a C loop.
 * usage: kiln_example_saxpy [N] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "saxpy_kernels.h"

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
  KilnRtDevice *dev = NULL;
  saxpy_kernels *lib = NULL;
  float *x = NULL, *y = NULL;
  size_t bytes = (size_t)n * sizeof(float);
  if (n < 1 || kiln_rt_device_create("cpu", &dev) != KILN_RT_OK ||
      saxpy_kernels_create(dev, &lib) != KILN_RT_OK ||
      kiln_rt_malloc(dev, bytes, (void **)&x) != KILN_RT_OK ||
      kiln_rt_malloc(dev, bytes, (void **)&y) != KILN_RT_OK) {
    fprintf(stderr, "setup failed: %s\n", kiln_rt_last_error());
    return 1;
  }
  float *want = malloc(bytes);
  for (int i = 0; i < n && want; i++) {
    x[i] = (float)(i % 1000) * 1e-3f;
    y[i] = (float)(i % 7);
    want[i] = 0.5f * x[i] + y[i]; /* the C reference */
  }
  KilnRtStatus st = saxpy_kernels_saxpy(lib, x, y, 0.5f, n, NULL, NULL, NULL);
  int bad = !want || st != KILN_RT_OK;
  for (int i = 0; i < n && !bad; i++)
    if (fabsf(y[i] - want[i]) > 1e-6f * fmaxf(1.0f, fabsf(want[i]))) {
      fprintf(stderr, "y[%d] = %g, want %g\n", i, y[i], want[i]);
      bad = 1;
    }
  saxpy_kernels_saxpy_config cfg = saxpy_kernels_saxpy_pick(n);
  printf("saxpy n=%d with BLOCK=%lld num_warps=%d: %s\n", n, (long long)cfg.BLOCK, cfg.num_warps,
         bad ? "WRONG" : "matches the C loop");
  free(want);
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, y);
  saxpy_kernels_destroy(lib);
  kiln_rt_device_destroy(dev);
  return bad;
}
