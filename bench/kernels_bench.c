/* kernels_bench.c — compiles a few Kiln kernels for a device and times them.
 *
 * For each case: the compile time of the variant (source to object), then the kernel run
 * `--reps` times after a warm-up; the table reports the median and the spread (min..max) with
 * the bandwidth or FLOP rate they imply. Numbers are measured, never asserted: correctness is
 * the numeric tests' job. `--json` prints one JSON object per case instead of the table. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kiln/kilnrt.h>

#include "kiln_driver.h"

#ifndef KILN_BENCH_KERNEL_DIR
#error "KILN_BENCH_KERNEL_DIR must name the folder of the kernels (dsl/examples)"
#endif

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct Case {
  const char *name; /* label in the table */
  const char *file; /* kernel file under KILN_BENCH_KERNEL_DIR */
  const char *kernel;
  KilnDefine defines[4];
  size_t ndefines;
  uint32_t grid[3];
  size_t nbufs;
  size_t buf_bytes[4];
  int nints;
  int32_t ints[12]; /* scalar args, after the buffers */
  double bytes_moved;
  double flops;
} Case;

static Case make_cases(int which, int scale) {
  Case c = {0};
  int n = (1 << 20) * scale, rows = 256 * scale, cols = 768, mm = 128 * scale;
  switch (which) {
  case 0:
    c = (Case){.name = "vector_add f32",
               .file = "vector_add.kiln",
               .kernel = "vector_add",
               .defines = {{"BLOCK", 1024}},
               .ndefines = 1,
               .grid = {(uint32_t)((n + 1023) / 1024), 1, 1},
               .nbufs = 3,
               .buf_bytes = {(size_t)n * 4, (size_t)n * 4, (size_t)n * 4},
               .nints = 1,
               .ints = {n},
               .bytes_moved = 12.0 * n};
    break;
  case 1:
    c = (Case){.name = "softmax_rows f32",
               .file = "softmax_rows.kiln",
               .kernel = "softmax_rows",
               .defines = {{"BLOCK", 1024}},
               .ndefines = 1,
               .grid = {(uint32_t)rows, 1, 1},
               .nbufs = 2,
               .buf_bytes = {(size_t)rows * cols * 4, (size_t)rows * cols * 4},
               .nints = 3,
               .ints = {cols, cols, cols},
               .bytes_moved = 8.0 * rows * cols};
    break;
  default:
    c = (Case){.name = "matmul f16 (f32 acc)",
               .file = "matmul_f16.kiln",
               .kernel = "matmul_f16",
               .defines = {{"BM", 32}, {"BN", 32}, {"BK", 32}},
               .ndefines = 3,
               .grid = {(uint32_t)(mm / 32), (uint32_t)(mm / 32), 1},
               .nbufs = 3,
               .buf_bytes = {(size_t)mm * mm * 2, (size_t)mm * mm * 2, (size_t)mm * mm * 2},
               .nints = 9,
               .ints = {mm, mm, mm, mm, 1, mm, 1, mm, 1},
               .flops = 2.0 * mm * mm * mm};
    break;
  }
  return c;
}

typedef struct Result {
  double compile_ms, median_ms, min_ms, max_ms;
  int ok;
} Result;

static Result run_case(KilnRtDevice *dev, const Case *c, int reps) {
  Result r = {0};
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", KILN_BENCH_KERNEL_DIR, c->file);
  KilnCompileOptions o = {.path = path,
                          .kernel = c->kernel,
                          .defines = c->defines,
                          .num_defines = c->ndefines,
                          .target = KILN_TARGET_CPU};
  KilnBuffer obj = {0};
  double t0 = now_ms();
  if (kiln_driver_compile(&o, KILN_EMIT_OBJ, &obj) != KILN_DRIVER_OK) return r;
  r.compile_ms = now_ms() - t0;
  KilnRtModule *mod = NULL;
  KilnRtFunction *fn = NULL;
  void *bufs[4] = {0};
  void *args[16];
  double *times = calloc((size_t)reps, sizeof *times);
  int ok = times &&
           kiln_rt_module_load(dev, KILN_RT_MODULE_HOST_OBJECT, obj.data, obj.size, &mod) ==
               KILN_RT_OK &&
           kiln_rt_module_get_function(mod, c->kernel, &fn) == KILN_RT_OK;
  for (size_t i = 0; ok && i < c->nbufs; i++) {
    ok = kiln_rt_malloc(dev, c->buf_bytes[i], &bufs[i]) == KILN_RT_OK &&
         kiln_rt_memset(dev, bufs[i], 0, c->buf_bytes[i], NULL) == KILN_RT_OK;
    args[i] = &bufs[i];
  }
  int32_t ints[12];
  memcpy(ints, c->ints, sizeof ints);
  for (int i = 0; i < c->nints; i++) args[c->nbufs + (size_t)i] = &ints[i];
  KilnRtLaunchConfig lc = {.grid = {c->grid[0], c->grid[1], c->grid[2]}, .block_threads = 128};
  for (int rep = -1; ok && rep < reps; rep++) { /* rep -1 is the warm-up */
    double s = now_ms();
    ok = kiln_rt_launch(fn, &lc, args, NULL) == KILN_RT_OK &&
         kiln_rt_device_synchronize(dev) == KILN_RT_OK;
    if (rep >= 0) times[rep] = now_ms() - s;
  }
  if (ok) {
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    r.median_ms = times[reps / 2];
    r.min_ms = times[0];
    r.max_ms = times[reps - 1];
    r.ok = 1;
  } else {
    fprintf(stderr, "kernels-bench: %s failed: %s\n", c->name, kiln_rt_last_error());
  }
  for (size_t i = 0; i < c->nbufs; i++)
    if (bufs[i]) kiln_rt_free(dev, bufs[i]);
  kiln_rt_module_destroy(mod);
  kiln_buffer_free(&obj);
  free(times);
  return r;
}

static void usage(FILE *f) {
  fputs("usage: kernels-bench [--device cpu] [--reps N] [--scale N] [--json]\n"
        "Compiles a few Kiln kernels and times them on the device; prints a table (or JSON\n"
        "lines with --json). Exit code 0 when every case ran, 1 otherwise, 64 on bad usage.\n",
        f);
}

int main(int argc, char **argv) {
  const char *device = "cpu";
  int reps = 10, scale = 1, json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--scale") && i + 1 < argc)
      scale = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 64;
    }
  }
  if (reps < 1 || reps > 10000 || scale < 1 || scale > 64) {
    usage(stderr);
    return 64;
  }
  KilnRtDevice *dev = NULL;
  if (kiln_rt_device_create(device, &dev) != KILN_RT_OK) {
    fprintf(stderr, "kernels-bench: device '%s': %s\n", device, kiln_rt_last_error());
    return 1;
  }
  KilnRtDeviceInfo info;
  kiln_rt_device_info(dev, &info);
  if (!json) {
    printf("device: %s (%d threads)\n\n", info.name, info.num_threads);
    printf("%-22s %12s %12s %20s %14s\n", "kernel", "compile ms", "median ms", "min..max ms",
           "rate");
  }
  int failures = 0;
  for (int w = 0; w < 3; w++) {
    Case c = make_cases(w, scale);
    Result r = run_case(dev, &c, reps);
    if (!r.ok) failures++;
    double rate = c.flops > 0 ? c.flops / (r.median_ms * 1e6) : c.bytes_moved / (r.median_ms * 1e6);
    const char *unit = c.flops > 0 ? "GFLOP/s" : "GB/s";
    if (json) {
      printf(
          "{\"kernel\":\"%s\",\"device\":\"%s\",\"ok\":%s,\"compile_ms\":%.3f,\"median_ms\":%.4f,"
          "\"min_ms\":%.4f,\"max_ms\":%.4f,\"rate\":%.4f,\"rate_unit\":\"%s\",\"reps\":%d}\n",
          c.kernel, device, r.ok ? "true" : "false", r.compile_ms, r.median_ms, r.min_ms, r.max_ms,
          r.ok ? rate : 0.0, unit, reps);
    } else if (r.ok) {
      char spread[64];
      snprintf(spread, sizeof spread, "%.3f..%.3f", r.min_ms, r.max_ms);
      printf("%-22s %12.1f %12.3f %20s %9.2f %s\n", c.name, r.compile_ms, r.median_ms, spread, rate,
             unit);
    } else {
      printf("%-22s %12s\n", c.name, "FAILED");
    }
  }
  kiln_rt_device_destroy(dev);
  return failures ? 1 : 0;
}
