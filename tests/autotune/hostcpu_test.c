/* hostcpu_test.c — generated cpu libraries on machines other than the one that built them.
 *
 * - No C compiler where a program runs: PATH is pointed at an empty folder and KILN_CC removed
 *   before anything loads; the libraries (native and generic, emu too) must still run and
 *   compute a * x + y, while loading a bare host object, which needs the compiler, must fail.
 * - A CPU without a feature the host code was built for: with KILN_RT_HOST_CPU_FEATURES playing
 *   an x86-64-v3 CPU, the x86-64-v4 library's call fails with UNSUPPORTED and a message naming
 *   avx512bw; with this machine's own features minus one, the native library's call fails naming
 *   that one; the generic library runs wherever. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hostgen.h"
#include "hostnative.h"
#ifdef __x86_64__
#include "hostv4.h"
#endif

enum { N = 3001 };

/* Runs `launch` over fresh buffers on dev; returns its status, checks the result when OK. */
typedef KilnRtStatus (*LaunchFn)(void *lib, float *x, float *y, float *out, float a, int32_t n);

static KilnRtStatus run(KilnRtDevice *dev, void *lib, LaunchFn launch, const char *what) {
  float *x, *y, *out;
  size_t bytes = N * sizeof(float);
  if (kiln_rt_malloc(dev, bytes, (void **)&x) || kiln_rt_malloc(dev, bytes, (void **)&y) ||
      kiln_rt_malloc(dev, bytes, (void **)&out)) {
    CHECK(0, "malloc: %s", kiln_rt_last_error());
    return KILN_RT_ERROR_OUT_OF_MEMORY;
  }
  for (int i = 0; i < N; i++) {
    x[i] = (float)(i % 89) * 0.5f;
    y[i] = (float)(i % 7) - 3.0f;
    out[i] = -1.0f;
  }
  KilnRtStatus st = launch(lib, x, y, out, 1.5f, N);
  int bad = 0;
  for (int i = 0; i < N && st == KILN_RT_OK; i++)
    if (fabsf(out[i] - (1.5f * x[i] + y[i])) > 1e-5f * fmaxf(1.0f, fabsf(out[i]))) bad++;
  CHECK(bad == 0, "%s: %d wrong results", what, bad);
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, y);
  kiln_rt_free(dev, out);
  return st;
}

#define LAUNCHER(L)                                                                                \
  static KilnRtStatus launch_##L(void *lib, float *x, float *y, float *out, float a, int32_t n) {  \
    return L##_scale_add(lib, x, y, out, a, n, NULL, NULL, NULL);                                  \
  }
LAUNCHER(hostgen)
LAUNCHER(hostnative)
#ifdef __x86_64__
LAUNCHER(hostv4)
#endif

/* Without a compiler: a bare host object cannot be loaded, the libraries' images can. */
static void check_no_compiler(KilnRtDevice *dev) {
  static const unsigned char not_an_object[] = {0x7f, 'E', 'L', 'F'};
  KilnRtModule *m = NULL;
  KilnRtStatus st =
      kiln_rt_module_load(dev, KILN_RT_MODULE_HOST_OBJECT, not_an_object, sizeof not_an_object, &m);
  CHECK(st == KILN_RT_ERROR_LOAD && strstr(kiln_rt_last_error(), "cannot run the C compiler"),
        "with no compiler on PATH a host object must fail to link, got %s: %s",
        kiln_rt_status_name(st), kiln_rt_last_error());
  kiln_rt_module_destroy(m);
  hostgen *g;
  CHECK(hostgen_create(dev, &g) == KILN_RT_OK, "hostgen_create");
  KilnRtStatus gs = run(dev, g, launch_hostgen, "generic library without a compiler");
  CHECK(gs == KILN_RT_OK, "generic library: %s: %s", kiln_rt_status_name(gs), kiln_rt_last_error());
  hostgen_destroy(g);
}

/* A CPU that lacks the last feature this machine has: the native library must refuse. */
static void check_native_refused(KilnRtDevice *dev) {
  char features[1024];
  CHECK(kiln_rt_host_cpu_target("native", NULL, 0, features, sizeof features) == KILN_RT_OK,
        "native features: %s", kiln_rt_last_error());
  char *last = strrchr(features, ',');
  if (!features[0]) {
    printf("skip: this CPU reports no optional features; the native check has nothing to drop\n");
    return;
  }
  char missing[1024];
  snprintf(missing, sizeof missing, "%s", last ? last + 1 : features);
  if (last)
    *last = '\0';
  else
    features[0] = '\0';
  setenv("KILN_RT_HOST_CPU_FEATURES", features, 1);
  hostnative *lib;
  CHECK(hostnative_create(dev, &lib) == KILN_RT_OK, "hostnative_create");
  KilnRtStatus st = run(dev, lib, launch_hostnative, "native library on a lesser CPU");
  char want[1100];
  snprintf(want, sizeof want, "lacks '%s'", missing);
  CHECK(st == KILN_RT_ERROR_UNSUPPORTED && strstr(kiln_rt_last_error(), want),
        "native library without %s: %s: %s", missing, kiln_rt_status_name(st),
        kiln_rt_last_error());
  hostnative_destroy(lib);
  unsetenv("KILN_RT_HOST_CPU_FEATURES");
  CHECK(hostnative_create(dev, &lib) == KILN_RT_OK, "hostnative_create");
  st = run(dev, lib, launch_hostnative, "native library on its own CPU");
  CHECK(st == KILN_RT_OK, "native library: %s: %s", kiln_rt_status_name(st), kiln_rt_last_error());
  hostnative_destroy(lib);
}

#ifdef __x86_64__
static void check_v4_refused(KilnRtDevice *dev) {
  setenv("KILN_RT_HOST_CPU_FEATURES",
         "cx16,popcnt,sse3,sse4.1,sse4.2,ssse3,avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe", 1);
  hostv4 *lib;
  CHECK(hostv4_create(dev, &lib) == KILN_RT_OK, "hostv4_create");
  KilnRtStatus st = run(dev, lib, launch_hostv4, "x86-64-v4 library on an x86-64-v3 CPU");
  CHECK(st == KILN_RT_ERROR_UNSUPPORTED && strstr(kiln_rt_last_error(), "lacks 'avx512bw'") &&
            strstr(kiln_rt_last_error(), "x86-64-v4"),
        "x86-64-v4 library on x86-64-v3: %s: %s", kiln_rt_status_name(st), kiln_rt_last_error());
  hostv4_destroy(lib);
  hostgen *g;
  CHECK(hostgen_create(dev, &g) == KILN_RT_OK, "hostgen_create");
  st = run(dev, g, launch_hostgen, "generic library on an x86-64-v3 CPU");
  CHECK(st == KILN_RT_OK, "generic library: %s: %s", kiln_rt_status_name(st), kiln_rt_last_error());
  hostgen_destroy(g);
  unsetenv("KILN_RT_HOST_CPU_FEATURES");
}
#endif

int main(void) {
  unsetenv("KILN_CC");
  setenv("PATH", "/nonexistent-kiln-test-path", 1);
  KilnRtDevice *dev;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK) {
    printf("FAIL: %s\n", kiln_rt_last_error());
    return 1;
  }
  check_no_compiler(dev);
  check_native_refused(dev);
#ifdef __x86_64__
  check_v4_refused(dev);
#endif
  kiln_rt_device_destroy(dev);
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
