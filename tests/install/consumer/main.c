/* main.c — a program of the installed-Kiln consumer project: one call of a generated saxpy
 * library on one device, checked against a C loop. KERNELS names the library (its header and
 * symbol prefix), DEVICE the device it was generated for; both come from the compiler's
 * command line (consumer/CMakeLists.txt, install_test.sh).
 * usage: consumer [N]   exit 0 when every element matches */
#include <stdio.h>
#include <stdlib.h>

#define STR_(x)    #x
#define STR(x)     STR_(x)
#define CAT_(a, b) a##b
#define CAT(a, b)  CAT_(a, b)
#define K(name)    CAT(KERNELS, name)

#include STR(KERNELS.h)

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10007;
  KilnRtDevice *dev = NULL;
  KERNELS *lib = NULL;
  float *x = NULL, *y = NULL;
  size_t bytes = (size_t)n * sizeof(float);
  float *want = n > 0 ? malloc(bytes) : NULL;
  if (!want || kiln_rt_device_create(DEVICE, &dev) != KILN_RT_OK ||
      K(_create)(dev, &lib) != KILN_RT_OK ||
      kiln_rt_malloc(dev, bytes, (void **)&x) != KILN_RT_OK ||
      kiln_rt_malloc(dev, bytes, (void **)&y) != KILN_RT_OK) {
    fprintf(stderr, "%s: setup failed: %s\n", DEVICE, kiln_rt_last_error());
    return 1;
  }
  for (int i = 0; i < n; i++) {
    x[i] = (float)(i % 1000) * 1e-3f;
    y[i] = (float)(i % 7);
    /* 0.5 * x is exact in f32 (a power of two), so the sum is rounded once whether or not the
     * kernel fuses the multiply-add: the result must match exactly. */
    want[i] = 0.5f * x[i] + y[i];
  }
  KilnRtStatus st = K(_saxpy)(lib, x, y, 0.5f, n, NULL, NULL, NULL);
  int bad = st != KILN_RT_OK;
  if (bad) fprintf(stderr, "%s: saxpy failed: %s\n", DEVICE, kiln_rt_last_error());
  for (int i = 0; i < n && !bad; i++)
    if (y[i] != want[i]) {
      fprintf(stderr, "%s: y[%d] = %.9g, want %.9g\n", DEVICE, i, y[i], want[i]);
      bad = 1;
    }
  printf("%s: saxpy n=%d %s\n", DEVICE, n, bad ? "WRONG" : "matches the C loop");
  free(want);
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, y);
  K(_destroy)(lib);
  kiln_rt_device_destroy(dev);
  return bad;
}
