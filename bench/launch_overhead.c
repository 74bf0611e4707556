/* launch_overhead.c — host-side cost of calling a generated kernel library on cpu, and the
 * compile time of one variant.
 *
 * Launch: `bench_noop_lib_noop` (a one-program kernel that stores one int) is called --calls
 * times in batches; per-call time = batch time / batch size, reported as the median and the
 * range over batches, next to raw kiln_rt_launch calls of the same kernel (the difference is
 * the library's dispatch: key bucket search, lazy-load check, argument packing). Compile:
 * kiln_driver_compile of several variants (source to host object), ms each. Measured, never
 * asserted. Prints one JSON object. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kiln/kilnrt.h>

#include "bench_noop_lib.h"
#include "kiln_driver.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct Stat {
  double median, min, max;
} Stat;

static Stat stat_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return (Stat){v[n / 2], v[0], v[n - 1]};
}

enum { BATCHES = 21 };

/* Library calls and raw launches in alternating batches (after a warm-up batch of each, which
 * loads the library's module), so that both see the same machine. */
static void time_calls(bench_noop_lib *lib, KilnRtFunction *fn, int32_t *out, int per_batch,
                       Stat *lib_us, Stat *raw_us) {
  double tl[BATCHES], tr[BATCHES];
  int32_t n = 1;
  void *args[] = {&out, &n};
  KilnRtLaunchConfig lc = {{1, 1, 1}, 32, 0};
  for (int b = -1; b < BATCHES; b++) {
    double s = now_us();
    for (int i = 0; i < per_batch; i++) bench_noop_lib_noop(lib, out, 1, NULL, NULL, NULL);
    if (b >= 0) tl[b] = (now_us() - s) / per_batch;
    if (!fn) continue;
    s = now_us();
    for (int i = 0; i < per_batch; i++) kiln_rt_launch(fn, &lc, args, NULL);
    if (b >= 0) tr[b] = (now_us() - s) / per_batch;
  }
  *lib_us = stat_of(tl, BATCHES);
  if (fn) *raw_us = stat_of(tr, BATCHES);
}

static double compile_ms(const char *path, const char *kernel, const char *cname, int64_t v,
                         KilnBuffer *keep) {
  KilnDefine d = {cname, v};
  KilnCompileOptions o = {
      .path = path, .kernel = kernel, .defines = &d, .num_defines = 1, .target = KILN_TARGET_CPU};
  KilnBuffer obj = {0};
  double s = now_us();
  KilnDriverStatus st = kiln_driver_compile(&o, KILN_EMIT_OBJ, &obj);
  double ms = (now_us() - s) / 1e3;
  if (keep && st == KILN_DRIVER_OK)
    *keep = obj;
  else
    kiln_buffer_free(&obj);
  return st == KILN_DRIVER_OK ? ms : -1;
}

int main(int argc, char **argv) {
  int calls = argc > 1 ? atoi(argv[1]) : 20000,
      per_batch = calls / BATCHES > 0 ? calls / BATCHES : 1;
  KilnRtDevice *dev;
  bench_noop_lib *lib;
  int32_t *out;
  if (kiln_rt_device_create("cpu", &dev) || bench_noop_lib_create(dev, &lib) ||
      kiln_rt_malloc(dev, 64, (void **)&out)) {
    fprintf(stderr, "setup: %s\n", kiln_rt_last_error());
    return 1;
  }
  KilnBuffer obj = {0};
  double noop_ms = compile_ms(KILN_BENCH_NOOP, "noop", "BLOCK", 32, &obj);
  KilnRtModule *mod = NULL;
  KilnRtFunction *fn = NULL;
  Stat lib_us = {0}, raw_us = {0};
  if (!obj.size || kiln_rt_module_load(dev, KILN_RT_MODULE_HOST_OBJECT, obj.data, obj.size, &mod) ||
      kiln_rt_module_get_function(mod, "noop", &fn))
    fn = NULL;
  time_calls(lib, fn, out, per_batch, &lib_us, &raw_us);
  kiln_buffer_free(&obj);
  char va[512], sm[512];
  snprintf(va, sizeof va, "%s/vector_add.kiln", KILN_BENCH_KERNEL_DIR);
  snprintf(sm, sizeof sm, "%s/softmax_rows.kiln", KILN_BENCH_KERNEL_DIR);
  double c[6] = {compile_ms(va, "vector_add", "BLOCK", 256, NULL),
                 compile_ms(va, "vector_add", "BLOCK", 1024, NULL),
                 compile_ms(va, "vector_add", "BLOCK", 2048, NULL),
                 compile_ms(sm, "softmax_rows", "BLOCK", 512, NULL),
                 compile_ms(sm, "softmax_rows", "BLOCK", 1024, NULL),
                 noop_ms};
  double cs[6];
  memcpy(cs, c, sizeof c);
  Stat comp = stat_of(cs, 6);
  printf("{\n  \"device\": \"cpu\",\n  \"calls\": %d,\n  \"batches\": %d,\n", per_batch * BATCHES,
         BATCHES);
  printf("  \"library_call_us\": {\"median\": %.3f, \"min\": %.3f, \"max\": %.3f},\n",
         lib_us.median, lib_us.min, lib_us.max);
  printf("  \"raw_launch_us\": {\"median\": %.3f, \"min\": %.3f, \"max\": %.3f},\n", raw_us.median,
         raw_us.min, raw_us.max);
  printf("  \"compile_ms\": {\"vector_add BLOCK=256\": %.1f, \"vector_add BLOCK=1024\": %.1f, "
         "\"vector_add BLOCK=2048\": %.1f, \"softmax_rows BLOCK=512\": %.1f, "
         "\"softmax_rows BLOCK=1024\": %.1f, \"noop BLOCK=32\": %.1f, \"median\": %.1f}\n}\n",
         c[0], c[1], c[2], c[3], c[4], c[5], comp.median);
  kiln_rt_module_destroy(mod);
  bench_noop_lib_destroy(lib);
  kiln_rt_free(dev, out);
  kiln_rt_device_destroy(dev);
  return 0;
}
