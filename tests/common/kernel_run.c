/* kernel_run.c — one configuration of a kernel test (kernel_run.h), for the numeric and the BERT
 * kernel tests alike.
 *
 * A run keeps its modules and device buffers in fixed tables and frees them all at the end, so
 * a test never frees device memory itself; once a step fails the later ones do nothing, so the
 * first failure is the one reported. Kernels come from one of three places: compiled here
 * (kiln/bundle.h: the runtime's reader picks a cubin for the GPU's arch, else PTX the driver
 * JIT-compiles; host objects on emu), or, in emit mode, compiled into the bundle for a GPU
 * machine that has no compiler. Images in a bundle are named <name>.<arch>.<ext>
 * (kiln_rt_bundle_image_name), `name` chosen by the test (kernel, consts, warps...). */
#include "kernel_run.h"

#include <kiln/bundle.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *kiln_test_source_dir(char *buf, size_t cap, const char *configured, const char *rel) {
  const char *root = getenv("KILN_TEST_SOURCE_ROOT");
  if (root && *root)
    snprintf(buf, cap, "%s/%s", root, rel);
  else
    snprintf(buf, cap, "%s", configured);
  return buf;
}

void *kiln_test_alloc(size_t n, size_t size) {
  void *p = n <= ((size_t)1 << 32) / size ? calloc(n ? n : 1, size) : NULL;
  if (!p) {
    fprintf(stderr, "kernel test: out of memory\n");
    exit(2);
  }
  return p;
}

float *kiln_test_random_f32(KilnRefRng *rng, size_t n, float lo, float hi) {
  float *p = kiln_test_alloc(n, sizeof *p);
  for (size_t i = 0; i < n; i++) p[i] = kiln_ref_rng_uniform(rng, lo, hi);
  return p;
}

uint32_t kiln_test_cdiv(size_t a, size_t b) { return (uint32_t)((a + b - 1) / b); }

const char *kiln_test_target_label(KilnTarget t) { return kiln_target_name(t); }

double kiln_test_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- failures ------------------------------------------------------------------------------- */

static void vfail(KilnTestRun *run, const char *fmt, va_list ap) {
  fprintf(stderr, "  %s: ", run->label);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  run->ok = false;
}

void kiln_test_vfail(KilnTestRun *run, const char *fmt, va_list ap) {
  if (!run->d.emit) /* in emit mode nothing ran: the checks of zeros mean nothing */
    vfail(run, fmt, ap);
}

void kiln_test_fail(KilnTestRun *run, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_test_vfail(run, fmt, ap);
  va_end(ap);
}

/* A failure of the harness itself (also while emitting a bundle). */
__attribute__((format(printf, 2, 3))) static void fail_always(KilnTestRun *run, const char *fmt,
                                                              ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(run, fmt, ap);
  va_end(ap);
}

void kiln_test_fail_rt(KilnTestRun *run, const char *what, KilnRtStatus st) {
  kiln_test_fail(run, "%s failed: %s: %s", what, kiln_rt_status_name(st), kiln_rt_last_error());
}

/* ---- begin and end -------------------------------------------------------------------------- */

void kiln_test_vbegin(KilnTestRun *run, const KilnTestDevice *d, const char *fmt, va_list ap) {
  memset(run, 0, sizeof *run);
  run->d = *d;
  run->dev = d->rt;
  run->ok = true;
  run->start = kiln_test_now();
  /* a GPU run from a bundle says "cuda": the arch is the GPU's, whatever the bundle holds */
  const char *where = d->bundle && !d->emit && d->target != KILN_TARGET_EMU
                          ? "cuda"
                          : kiln_test_target_label(d->target);
  int pre = snprintf(run->label, sizeof run->label, "[%s w%d] ", where, d->num_warps);
  run->key = run->label + pre;
  vsnprintf(run->label + pre, sizeof run->label - (size_t)pre, fmt, ap);
}

void kiln_test_begin(KilnTestRun *run, const KilnTestDevice *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_test_vbegin(run, d, fmt, ap);
  va_end(ap);
}

bool kiln_test_end(KilnTestRun *run) {
  for (int i = 0; i < run->nbufs; i++) kiln_rt_free(run->dev, run->bufs[i]);
  for (int i = 0; i < run->nmods; i++) kiln_rt_module_destroy(run->mods[i]);
  if (run->d.emit)
    printf("  %-4s %s: %d image(s) written\n", run->ok ? "ok" : "FAIL", run->label, run->emitted);
  else
    printf("  %-4s %s (%.1f s)\n", run->ok ? "ok" : "FAIL", run->label,
           kiln_test_now() - run->start);
  fflush(stdout);
  return run->ok;
}

/* ---- kernels -------------------------------------------------------------------------------- */

/* The kernel's image from the bundle (kiln/bundle.h): the runtime picks among the builds it
 * holds (on a GPU the cubin of its arch, else PTX; on emu the emu host object). */
static KilnRtModule *bundle_load(KilnTestRun *run, const char *name) {
  KilnRtModule *mod = NULL;
  KilnRtStatus st = kiln_rt_bundle_load(run->dev, run->d.bundle, name, &mod);
  if (st != KILN_RT_OK) {
    fail_always(run, "%s (bench/gpu/prepare.sh makes the bundle)", kiln_rt_last_error());
    return NULL;
  }
  return mod;
}

#ifndef KILN_TEST_NO_COMPILER
static bool compile(KilnTestRun *run, const char *path, const char *kernel, const KilnDefine *defs,
                    size_t ndefs, KilnEmit emit, KilnBuffer *out) {
  KilnCompileOptions opts;
  memset(&opts, 0, sizeof opts);
  if (run->d.extra) opts = *run->d.extra;
  opts.path = path;
  opts.kernel = kernel;
  opts.defines = defs;
  opts.num_defines = ndefs;
  opts.target = run->d.target;
  opts.num_warps = run->d.num_warps;
  opts.diag = stderr;
  KilnDriverStatus ds = kiln_driver_compile(&opts, emit, out);
  if (ds != KILN_DRIVER_OK) {
    fail_always(run, "%s: compile failed (%s, driver status %d; diagnostics above)", kernel,
                kiln_emit_name(emit), (int)ds);
    kiln_buffer_free(out);
    return false;
  }
  return true;
}

/* Emit mode: the kernel's images for the bundle, each written whole or not at all, and once
 * (tests ask for some kernels twice). */
static void bundle_write(KilnTestRun *run, const char *path, const char *kernel,
                         const KilnDefine *defs, size_t ndefs, const char *name) {
  static const struct {
    KilnRtModuleFormat format;
    KilnEmit emit;
  } gpu[] = {{KILN_RT_MODULE_PTX, KILN_EMIT_PTX}, {KILN_RT_MODULE_CUBIN, KILN_EMIT_CUBIN}},
    host[] = {{KILN_RT_MODULE_HOST_OBJECT, KILN_EMIT_OBJ}};
  bool is_emu = run->d.target == KILN_TARGET_EMU;
  for (size_t i = 0; i < (is_emu ? 1 : 2) && run->ok; i++) {
    char image[600], file[1400];
    if (kiln_rt_bundle_image_name(image, sizeof image, name, kiln_test_target_label(run->d.target),
                                  is_emu ? host[i].format : gpu[i].format) != 0) {
      fail_always(run, "%s: no bundle image name for it", name);
      return;
    }
    snprintf(file, sizeof file, "%s/%s", run->d.bundle, image);
    FILE *probe = fopen(file, "rb");
    if (probe) {
      fclose(probe);
      continue;
    }
    KilnBuffer out = {0};
    if (!compile(run, path, kernel, defs, ndefs, is_emu ? host[i].emit : gpu[i].emit, &out)) return;
    bool ok = kiln_file_write_atomic(file, out.data, out.size) == 0;
    kiln_buffer_free(&out);
    if (!ok)
      fail_always(run, "cannot write %s", file);
    else
      run->emitted++;
  }
}

static KilnRtModule *compile_and_load(KilnTestRun *run, const char *path, const char *kernel,
                                      const KilnDefine *defs, size_t ndefs) {
  KilnBuffer obj = {0};
  if (!compile(run, path, kernel, defs, ndefs, KILN_EMIT_OBJ, &obj)) return NULL;
  KilnRtModule *mod = NULL;
  KilnRtStatus st =
      kiln_rt_module_load(run->dev, KILN_RT_MODULE_HOST_OBJECT, obj.data, obj.size, &mod);
  kiln_buffer_free(&obj);
  if (st != KILN_RT_OK) kiln_test_fail_rt(run, "kiln_rt_module_load", st);
  return st == KILN_RT_OK ? mod : NULL;
}
#endif

KilnRtFunction *kiln_test_kernel(KilnTestRun *run, const char *path, const char *kernel,
                                 const KilnDefine *defs, size_t ndefs, const char *name) {
  run->fn = NULL;
  if (!run->ok) return NULL;
  if (run->nmods == KILN_TEST_MAX_MODS) {
    fail_always(run, "more than %d modules", KILN_TEST_MAX_MODS);
    return NULL;
  }
  KilnRtModule *mod = NULL;
  if (run->d.bundle && !run->d.emit) {
    mod = bundle_load(run, name);
  } else {
#ifdef KILN_TEST_NO_COMPILER
    (void)path, (void)defs, (void)ndefs;
    fail_always(run, "%s: this build has no compiler: give --bundle DIR", kernel);
#else
    if (run->d.emit) {
      bundle_write(run, path, kernel, defs, ndefs, name);
      return NULL; /* nothing runs */
    }
    mod = compile_and_load(run, path, kernel, defs, ndefs);
#endif
  }
  if (!mod) return NULL;
  run->mods[run->nmods++] = mod;
  KilnRtStatus st = kiln_rt_module_get_function(mod, kernel, &run->fn);
  if (st != KILN_RT_OK) {
    kiln_test_fail_rt(run, "kiln_rt_module_get_function", st);
    run->fn = NULL;
  }
  return run->fn;
}

/* ---- buffers and launches ------------------------------------------------------------------- */

static void *alloc_dev(KilnTestRun *run, size_t bytes) {
  if (!run->ok) return NULL;
  if (run->nbufs == KILN_TEST_MAX_BUFS) {
    fail_always(run, "more than %d buffers", KILN_TEST_MAX_BUFS);
    return NULL;
  }
  void *d = NULL;
  KilnRtStatus st = kiln_rt_malloc(run->dev, bytes ? bytes : 1, &d);
  if (st != KILN_RT_OK) {
    kiln_test_fail_rt(run, "kiln_rt_malloc", st);
    return NULL;
  }
  run->bufs[run->nbufs++] = d;
  return d;
}

void kiln_test_upload(KilnTestRun *run, void *d, const void *host, size_t bytes) {
  if (!run->ok) return;
  KilnRtStatus st = kiln_rt_memcpy_htod(run->dev, d, host, bytes, NULL);
  if (st != KILN_RT_OK) kiln_test_fail_rt(run, "kiln_rt_memcpy_htod", st);
}

void *kiln_test_input(KilnTestRun *run, const void *host, size_t bytes) {
  void *d = alloc_dev(run, bytes);
  if (d) kiln_test_upload(run, d, host, bytes);
  return d;
}

void *kiln_test_output(KilnTestRun *run, size_t bytes) {
  void *d = alloc_dev(run, bytes);
  if (!d) return NULL;
  KilnRtStatus st = kiln_rt_memset(run->dev, d, KILN_TEST_SENTINEL, bytes, NULL);
  if (st != KILN_RT_OK) kiln_test_fail_rt(run, "kiln_rt_memset", st);
  return d;
}

void kiln_test_launch(KilnTestRun *run, KilnRtFunction *fn, uint32_t gx, uint32_t gy, void **args) {
  kiln_test_launch3(run, fn, gx, gy, 1, args);
}

void kiln_test_launch3(KilnTestRun *run, KilnRtFunction *fn, uint32_t gx, uint32_t gy, uint32_t gz,
                       void **args) {
  if (!run->ok || run->d.emit) return;
  KilnRtLaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.grid[0] = gx;
  cfg.grid[1] = gy;
  cfg.grid[2] = gz;
  cfg.block_threads = 32 * (uint32_t)run->d.num_warps;
  KilnRtStatus st = kiln_rt_launch(fn, &cfg, args, NULL);
  if (st != KILN_RT_OK) {
    kiln_test_fail_rt(run, "kiln_rt_launch", st);
    return;
  }
  st = kiln_rt_device_synchronize(run->dev);
  if (st != KILN_RT_OK) kiln_test_fail_rt(run, "kiln_rt_device_synchronize", st);
}

void kiln_test_fetch(KilnTestRun *run, void *host, const void *d, size_t bytes) {
  if (!run->ok || run->d.emit) return;
  KilnRtStatus st = kiln_rt_memcpy_dtoh(run->dev, host, d, bytes, NULL);
  if (st != KILN_RT_OK) kiln_test_fail_rt(run, "kiln_rt_memcpy_dtoh", st);
}

/* ---- checks --------------------------------------------------------------------------------- */

void kiln_test_check_untouched(KilnTestRun *run, const char *what, const void *buf, size_t elem,
                               size_t total, size_t rows, size_t cols, size_t stride) {
  if (!run->ok || run->d.emit) return;
  const unsigned char *bytes = buf;
  size_t clobbered = 0, first = 0;
  for (size_t i = 0; i < total; i++) {
    if (i / stride < rows && i % stride < cols) continue;
    for (size_t b = 0; b < elem; b++)
      if (bytes[i * elem + b] != KILN_TEST_SENTINEL) {
        if (clobbered++ == 0) first = i;
        break;
      }
  }
  if (clobbered)
    kiln_test_fail(run,
                   "%s: %zu element(s) outside the result were written (first at element "
                   "%zu: row %zu, column %zu)",
                   what, clobbered, first, first / stride, first % stride);
}

void kiln_test_check_close(KilnTestRun *run, const char *what, const char *against,
                           const float *got, const float *ref, size_t n, double floor, double tol) {
  if (!run->ok || run->d.emit) return;
  size_t worst = 0;
  double err = kiln_ref_max_error(got, ref, n, floor, &worst);
  printf("       %s: %-10s vs %-4s max err %.3e (tol %.1e, floor %.0e)", run->label, what, against,
         err, tol, floor);
  if (n) printf(" worst [%zu] got %.9g want %.9g", worst, (double)got[worst], (double)ref[worst]);
  printf("\n");
  if (!(err <= tol))
    kiln_test_fail(run,
                   "%s: max normalized error vs %s %.3e above the tolerance %.1e at element %zu",
                   what, against, err, tol, worst);
}

void kiln_test_check_bound(KilnTestRun *run, const char *what, const float *got, const float *ref,
                           const float *bound, size_t n) {
  if (!run->ok || run->d.emit) return;
  double err = 0.0;
  size_t worst = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - ref[i]) / bound[i];
    if (!(e <= err)) /* NaN too */
      err = isnan(e) ? INFINITY : e, worst = i;
  }
  printf("       %s: %-10s vs ref  max err/bound %.3f (tol 1)", run->label, what, err);
  if (n)
    printf(" worst [%zu] got %.9g want %.9g bound %.3g", worst, (double)got[worst],
           (double)ref[worst], (double)bound[worst]);
  printf("\n");
  if (!(err <= 1.0))
    kiln_test_fail(run, "%s: error %.3g times its bound at element %zu", what, err, worst);
}

void kiln_test_check_eps(KilnTestRun *run, const float *rstd, const double *var, size_t rows,
                         float eps) {
  if (!run->ok || run->d.emit) return;
  size_t checked = 0, worst = 0;
  double err = 0.0, implied_worst = (double)eps;
  for (size_t r = 0; r < rows; r++) {
    if (!(var[r] <= (double)eps)) continue;
    double implied = 1.0 / ((double)rstd[r] * rstd[r]) - var[r];
    double e = fabs(implied - (double)eps) / (double)eps;
    checked++;
    if (!(e <= err)) err = e, worst = r, implied_worst = implied;
  }
  printf(
      "       %s: %-10s vs %-4s max err %.3e (tol 1.0e-03) over %zu row(s) with var <= eps; worst "
      "row %zu implies eps %.6g, passed %.6g\n",
      run->label, "eps", "arg", err, checked, worst, implied_worst, (double)eps);
  if (!checked)
    kiln_test_fail(run, "eps: no row with a variance <= eps, so nothing checks the eps term");
  else if (!(err <= 1e-3))
    kiln_test_fail(run, "eps: row %zu's rstd implies eps %.6g, the kernel was passed %.6g", worst,
                   implied_worst, (double)eps);
}

void kiln_test_check_equal_i32(KilnTestRun *run, const char *what, const char *against,
                               const int32_t *got, const int32_t *ref, size_t n) {
  if (!run->ok || run->d.emit) return;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (got[i] != ref[i] && bad++ == 0) first = i;
  printf("       %s: %-10s vs %-4s %zu of %zu differ (tol 0)\n", run->label, what, against, bad, n);
  if (bad)
    kiln_test_fail(run, "%s: %zu mismatches vs %s, first at %zu: got %d want %d", what, bad,
                   against, first, (int)got[first], (int)ref[first]);
}
