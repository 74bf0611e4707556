/* numeric_test.c — Kiln kernels compiled for the cpu or emu target, run through libkilnrt,
 * compared with the C references of reference.c.
 *
 * Usage: kiln_numeric_test [--device cpu|emu] [--warps N[,N...]] [--vs-cpu] KERNEL...
 *            run every configuration of the named kernels ("all": all) on the device (default
 *            cpu), once per num_warps value (default 4; the GPU lowering's layouts depend on it,
 *            the cpu target ignores it). --vs-cpu first runs everything on cpu and keeps each
 *            checked output, then also compares the device's outputs with cpu's, at the same
 *            tolerance as the reference check (0 stays bit-exact).
 *        kiln_numeric_test --list      print the kernel names
 *
 * On emu the kernel is compiled with --target emu (the GPU pipeline with nvvm ops replaced by
 * calls into the GPU emulator) and launched with 32 * num_warps threads per program, so the
 * same checks test the GPU lowering: layouts, warp shuffles, shared-memory exchanges, barriers.
 *
 * How one configuration runs: the kernel's source (KILN_EXAMPLES_DIR/NAME.kiln, the documented
 * example itself, when there is one; else the test-only KILN_NUMERIC_KERNEL_DIR/NAME.kiln) is compiled
 * with its const parameters bound (kiln_driver_compile, KILN_EMIT_OBJ, KILN_TARGET_CPU); the object
 * is loaded as a module on the "cpu" device; inputs come from a generator seeded per
 * configuration, so a failure reproduces; every output buffer is larger than the result (row gaps
 * and a tail) and prefilled with a sentinel byte, so a write outside the store masks shows up as
 * a changed sentinel; after the launch the results are compared with the reference by the
 * normalized error of kiln_ref_max_error against a tolerance stated per kernel (the reasons for
 * each tolerance are in docs/kernels-tests.md). A kernel that does not compile is a failure.
 *
 * On a GPU machine, which has no compiler, the kernels come precompiled: `--emit-bundle DIR
 * --arch sm_90` (on the build machine) writes every configuration's cubin and PTX into DIR
 * instead of running it, and `--device cuda --bundle DIR` (built with KILN_TEST_NO_COMPILER in
 * a KILN_RUNTIME_ONLY tree) loads them from there and runs the same checks.
 *
 * Exit status: 0 all passed, 1 a check failed, 2 bad usage.
 */
#include "kernel_run.h"
#include "kiln_driver.h" /* types only when built with KILN_TEST_NO_COMPILER */
#include "reference.h"

#include <kiln/kilnrt.h>

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef KILN_NUMERIC_KERNEL_DIR
#error "KILN_NUMERIC_KERNEL_DIR must name the folder of the test kernels"
#endif
#ifndef KILN_EXAMPLES_DIR
#error "KILN_EXAMPLES_DIR must name dsl/examples, the documented kernels"
#endif

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum {
  TAIL_ELEMS = KILN_TEST_TAIL, /* extra elements after every output (kernel_run.h) */
  MAX_WARP_COUNTS = 4
};

/* The device under test and the num_warps of the current pass over the kernels. */
static KilnTarget g_target = KILN_TARGET_CPU;
static int g_num_warps = 4;
static const char *g_cpu; /* --cpu: the CPU target of host code (NULL: native) */

/* Precompiled kernels: read from g_bundle (device cuda), or written there (g_bundle_write) for
 * g_target instead of running. */
static const char *g_bundle;
static bool g_bundle_write;

/* The runtime parameters the configuration being set up is compiled specialized on (kiln
 * compile's --specialize and --multiple-of); a test sets it around run_begin. */
typedef struct Spec {
  const KilnDefine *eq, *mult;
  size_t neq, nmult;
} Spec;
static Spec g_spec;

/* --vs-cpu: the cpu pass records each checked output under "label|what"; later passes compare
 * with it. */
typedef struct Recording {
  char *key;
  void *data;
  size_t bytes;
  struct Recording *next;
} Recording;
static Recording *g_records;
static bool g_recording, g_compare;

/* ---- one configuration's run (tests/common/kernel_run.h) ------------------------------------ */

/* The file name of a configuration in a bundle: kernel, bound consts and num_warps. */
static void bundle_name(char *buf, size_t cap, const char *kernel, const KilnDefine *defs,
                        size_t ndefs) {
  int len = snprintf(buf, cap, "%s", kernel);
  for (size_t i = 0; i < ndefs && len > 0 && (size_t)len < cap; i++)
    len += snprintf(buf + len, cap - (size_t)len, "-%s=%" PRId64, defs[i].name, defs[i].value);
  for (size_t i = 0; i < g_spec.neq && len > 0 && (size_t)len < cap; i++)
    len += snprintf(buf + len, cap - (size_t)len, "-s.%s=%" PRId64, g_spec.eq[i].name,
                    g_spec.eq[i].value);
  for (size_t i = 0; i < g_spec.nmult && len > 0 && (size_t)len < cap; i++)
    len += snprintf(buf + len, cap - (size_t)len, "-m.%s=%" PRId64, g_spec.mult[i].name,
                    g_spec.mult[i].value);
  if (len > 0 && (size_t)len < cap) snprintf(buf + len, cap - (size_t)len, "-w%d", g_num_warps);
}

/* Starts a configuration of `kernel` with `defs` bound on dev and loads the kernel (compiled
 * here, from the bundle, or into the bundle with --emit-bundle). The label names the
 * configuration in every message. */
static void run_begin(KilnTestRun *run, KilnRtDevice *dev, const char *kernel,
                      const KilnDefine *defs, size_t ndefs, const char *shape) {
  static KilnCompileOptions extra; /* g_cpu and g_spec, read when the kernel is compiled */
  memset(&extra, 0, sizeof extra);
  extra.cpu = g_cpu;
  extra.specialize = g_spec.eq;
  extra.num_specialize = g_spec.neq;
  extra.multiple_of = g_spec.mult;
  extra.num_multiple_of = g_spec.nmult;
  KilnTestDevice d = {dev, g_target, g_num_warps, &extra, g_bundle, g_bundle_write};
  char label[160];
  int len = snprintf(label, sizeof label, "%s %s", kernel, shape);
  for (size_t i = 0; i < ndefs && len > 0 && (size_t)len < sizeof label; i++)
    len += snprintf(label + len, sizeof label - (size_t)len, " %s=%" PRId64, defs[i].name,
                    defs[i].value);
  kiln_test_begin(run, &d, "%s", label);

  /* the documented example when there is one (the tests run what the docs show), else a
   * kernel that exists for the tests only */
  char path[1280], name[256], dir[1024];
  snprintf(path, sizeof path, "%s/%s.kiln",
           kiln_test_source_dir(dir, sizeof dir, KILN_EXAMPLES_DIR, "dsl/examples"), kernel);
  if (access(path, R_OK) != 0)
    snprintf(
        path, sizeof path, "%s/%s.kiln",
        kiln_test_source_dir(dir, sizeof dir, KILN_NUMERIC_KERNEL_DIR, "tests/numeric/kernels"),
        kernel);
  bundle_name(name, sizeof name, kernel, defs, ndefs);
  kiln_test_kernel(run, path, kernel, defs, ndefs, name);
}

/* The cpu output recorded for (run, what), or NULL. */
static const void *recorded(const KilnTestRun *run, const char *what, size_t bytes) {
  char key[256];
  snprintf(key, sizeof key, "%s|%s", run->key, what);
  for (Recording *r = g_records; r; r = r->next)
    if (strcmp(r->key, key) == 0) return r->bytes == bytes ? r->data : NULL;
  return NULL;
}

static void record(const KilnTestRun *run, const char *what, const void *data, size_t bytes) {
  char key[256];
  snprintf(key, sizeof key, "%s|%s", run->key, what);
  Recording *r = kiln_test_alloc(1, sizeof *r);
  r->key = kiln_test_alloc(strlen(key) + 1, 1);
  memcpy(r->key, key, strlen(key) + 1);
  r->data = kiln_test_alloc(bytes ? bytes : 1, 1);
  memcpy(r->data, data, bytes);
  r->bytes = bytes;
  r->next = g_records;
  g_records = r;
}

static void records_free(void) {
  while (g_records) {
    Recording *r = g_records;
    g_records = r->next;
    free(r->key), free(r->data), free(r);
  }
}

/* Compares got with ref by kiln_ref_max_error and prints the result; with --vs-cpu also with
 * the cpu's output, at the same tolerance. */
static void check_close(KilnTestRun *run, const char *what, const float *got, const float *ref,
                        size_t n, double floor, double tol) {
  if (!run->ok) return;
  kiln_test_check_close(run, what, "ref", got, ref, n, floor, tol);
  if (g_recording) record(run, what, got, n * sizeof *got);
  if (g_compare && run->ok) {
    const float *cpu = recorded(run, what, n * sizeof *got);
    if (!cpu)
      kiln_test_fail(run, "%s: no cpu result to compare with", what);
    else
      kiln_test_check_close(run, what, "cpu", got, cpu, n, floor, tol);
  }
}

/* |got - ref| <= bound element by element (a bound of 0: equal), against the reference and,
 * with --vs-cpu, against the cpu's result (whose own error is within the bound too: the bounds
 * here hold for the reference's order and the device's alike, so twice the error of one). */
static void within(KilnTestRun *run, const char *what, const char *vs, const float *got,
                   const float *ref, const float *bound, size_t n) {
  size_t bad = 0, worst = 0;
  double excess = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - (double)ref[i]);
    if (!(d <= (double)bound[i])) {
      double e = isnan(d) ? INFINITY : d - (double)bound[i];
      if (bad++ == 0 || e > excess) excess = e, worst = i;
    }
  }
  printf("       %s: %-10s vs %s  %zu of %zu beyond their bound\n", run->label, what, vs, bad, n);
  if (bad)
    kiln_test_fail(run,
                   "%s vs %s: %zu elements beyond their bound, worst [%zu] got %.9g want %.9g "
                   "bound %.3g",
                   what, vs, bad, worst, (double)got[worst], (double)ref[worst],
                   (double)bound[worst]);
}

static void check_within(KilnTestRun *run, const char *what, const float *got, const float *ref,
                         const float *bound, size_t n) {
  if (!run->ok || run->d.emit) return;
  within(run, what, "ref", got, ref, bound, n);
  if (g_recording) record(run, what, got, n * sizeof *got);
  if (g_compare && run->ok) {
    const float *cpu = recorded(run, what, n * sizeof *got);
    if (!cpu)
      kiln_test_fail(run, "%s: no cpu result to compare with", what);
    else
      within(run, what, "cpu", got, cpu, bound, n);
  }
}

static void check_equal_i32(KilnTestRun *run, const char *what, const int32_t *got,
                            const int32_t *ref, size_t n) {
  if (!run->ok) return;
  kiln_test_check_equal_i32(run, what, "ref", got, ref, n);
  if (g_recording) record(run, what, got, n * sizeof *got);
  if (g_compare && run->ok) {
    const int32_t *cpu = recorded(run, what, n * sizeof *got);
    if (!cpu)
      kiln_test_fail(run, "%s: no cpu result to compare with", what);
    else
      kiln_test_check_equal_i32(run, what, "cpu", got, cpu, n);
  }
}

/* An output of n elements and its TAIL_ELEMS of sentinel past them: the host copy (fetched) and
 * the device buffer (a kernel argument). */
typedef struct TestOut {
  const char *name;
  void *host, *dev;
  size_t n, elem;
} TestOut;

static TestOut test_out(KilnTestRun *run, const char *name, size_t n, size_t elem) {
  TestOut o = {name, kiln_test_alloc(n + TAIL_ELEMS, elem), NULL, n, elem};
  o.dev = kiln_test_output(run, (n + TAIL_ELEMS) * elem);
  return o;
}

/* Fetches the outputs and checks that nothing past each one's n elements was written. */
static void test_outs_fetch(KilnTestRun *run, TestOut *o, size_t count) {
  for (size_t k = 0; k < count; k++) {
    size_t total = o[k].n + TAIL_ELEMS;
    kiln_test_fetch(run, o[k].host, o[k].dev, total * o[k].elem);
    kiln_test_check_untouched(run, o[k].name, o[k].host, o[k].elem, total, 1, o[k].n, total);
  }
}

static void test_outs_free(TestOut *o, size_t count) {
  for (size_t k = 0; k < count; k++) free(o[k].host);
}

/* ---- data helpers ------------------------------------------------------------------------- */

static uint16_t *random_f16(KilnRefRng *rng, size_t n, float lo, float hi) {
  uint16_t *p = kiln_test_alloc(n, sizeof *p);
  for (size_t i = 0; i < n; i++) p[i] = kiln_ref_f32_to_f16(kiln_ref_rng_uniform(rng, lo, hi));
  return p;
}

/* The columns between `cols` and the row stride of an input get a value far above any real one,
 * so that a kernel reading past its load mask gets a visibly wrong maximum, sum or mean. */
static void poison_row_gaps(float *x, size_t rows, size_t cols, size_t stride) {
  for (size_t r = 0; r < rows; r++)
    for (size_t c = cols; c < stride; c++) x[r * stride + c] = 1000.0f;
}

/* The rows x cols result out of a strided f32 buffer, densely. */
static float *gather_f32(const float *buf, size_t rows, size_t cols, size_t stride) {
  float *p = kiln_test_alloc(rows * cols, sizeof *p);
  for (size_t r = 0; r < rows; r++) memcpy(p + r * cols, buf + r * stride, cols * sizeof *p);
  return p;
}

static float *gather_f16(const uint16_t *buf, size_t rows, size_t cols, size_t stride) {
  float *p = kiln_test_alloc(rows * cols, sizeof *p);
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) p[r * cols + c] = kiln_ref_f16_to_f32(buf[r * stride + c]);
  return p;
}

/* Whether a configuration whose tiles have these dimensions runs on the device under test: the
 * GPU targets need every tile dimension to be a power of two, the cpu target takes any (the
 * configurations past that are the cpu's own). */
static bool tiles_run_here(int64_t a, int64_t b) {
  bool pow2 = a > 0 && b > 0 && (a & (a - 1)) == 0 && (b & (b - 1)) == 0;
  return pow2 || g_target == KILN_TARGET_CPU;
}
/* ---- vector_add --------------------------------------------------------------------------- */

static bool test_vector_add(KilnRtDevice *dev) {
  static const struct {
    int32_t n, block;
  } cfgs[] = {{1000, 256}, {4096, 1024}, {1, 128}, {100003, 512}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, total = n + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "vector_add", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 100 + ci);
    float *x = kiln_test_random_f32(&rng, n, -1.0f, 1.0f),
          *y = kiln_test_random_f32(&rng, n, -1.0f, 1.0f);
    float *out = kiln_test_alloc(total, sizeof *out), *ref = kiln_test_alloc(n, sizeof *ref);
    void *dx = kiln_test_input(&run, x, n * sizeof *x);
    void *dy = kiln_test_input(&run, y, n * sizeof *y);
    void *dout = kiln_test_output(&run, total * sizeof *out);
    int32_t n32 = cfgs[ci].n;
    void *args[] = {&dx, &dy, &dout, &n32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(n, (size_t)cfgs[ci].block), 1, args);
    kiln_test_fetch(&run, out, dout, total * sizeof *out);

    kiln_test_check_untouched(&run, "out", out, sizeof *out, total, 1, n, total);
    kiln_ref_vector_add(x, y, ref, n);
    check_close(&run, "out", out, ref, n, 1.0, 0.0); /* one correctly rounded add: exact */
    all_ok &= kiln_test_end(&run);
    free(x), free(y), free(out), free(ref);
  }
  return all_ok;
}

/* ---- bias_gelu ---------------------------------------------------------------------------- */

static bool test_bias_gelu(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, block;
  } cfgs[] = {{77, 768, 1024}, {3, 100, 128}, {64, 64, 256}, {5, 3072, 4096}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols;
    size_t n = rows * cols, total = n + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zu", rows, cols);
    KilnTestRun run;
    run_begin(&run, dev, "bias_gelu", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 200 + ci);
    /* x + bias spans [-5, 5]: both tails of erf and the region near zero. */
    uint16_t *x = random_f16(&rng, n, -4.0f, 4.0f), *bias = random_f16(&rng, cols, -1.0f, 1.0f);
    uint16_t *y = kiln_test_alloc(total, sizeof *y);
    float *ref = kiln_test_alloc(n, sizeof *ref);
    void *dx = kiln_test_input(&run, x, n * sizeof *x);
    void *db = kiln_test_input(&run, bias, cols * sizeof *bias);
    void *dy = kiln_test_output(&run, total * sizeof *y);
    int32_t n32 = (int32_t)n, cols32 = cfgs[ci].cols;
    void *args[] = {&dx, &db, &dy, &n32, &cols32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(n, (size_t)cfgs[ci].block), 1, args);
    kiln_test_fetch(&run, y, dy, total * sizeof *y);

    kiln_test_check_untouched(&run, "y", y, sizeof *y, total, 1, n, total);
    float *got = gather_f16(y, 1, n, n);
    kiln_ref_bias_gelu(x, bias, ref, n, cols);
    check_close(&run, "y", got, ref, n, 1e-2, 2e-3);
    all_ok &= kiln_test_end(&run);
    free(x), free(bias), free(y), free(ref), free(got);
  }
  return all_ok;
}

/* ---- softmax_rows ------------------------------------------------------------------------- */

static bool test_softmax_rows(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, x_stride, y_stride, block;
  } cfgs[] = {{77, 768, 768, 770, 1024},
              {5, 1000, 1003, 1000, 1024},
              {16, 64, 64, 64, 64},
              {3, 1, 1, 2, 128}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols;
    size_t xs = (size_t)cfgs[ci].x_stride, ys = (size_t)cfgs[ci].y_stride;
    size_t total = rows * ys + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zu strides %zu,%zu", rows, cols, xs, ys);
    KilnTestRun run;
    run_begin(&run, dev, "softmax_rows", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 300 + ci);
    /* Logits over [-8, 8]: probabilities spread over ~7 orders of magnitude. */
    float *x = kiln_test_random_f32(&rng, rows * xs, -8.0f, 8.0f);
    poison_row_gaps(x, rows, cols, xs);
    float *y = kiln_test_alloc(total, sizeof *y), *ref = kiln_test_alloc(rows * cols, sizeof *ref);
    void *dx = kiln_test_input(&run, x, rows * xs * sizeof *x);
    void *dy = kiln_test_output(&run, total * sizeof *y);
    int32_t cols32 = cfgs[ci].cols, xs32 = cfgs[ci].x_stride, ys32 = cfgs[ci].y_stride;
    void *args[] = {&dx, &dy, &cols32, &xs32, &ys32};
    kiln_test_launch(&run, run.fn, (uint32_t)rows, 1, args);
    kiln_test_fetch(&run, y, dy, total * sizeof *y);

    kiln_test_check_untouched(&run, "y", y, sizeof *y, total, rows, cols, ys);
    float *got = gather_f32(y, rows, cols, ys);
    kiln_ref_softmax_rows(x, xs, ref, cols, rows, cols);
    check_close(&run, "y", got, ref, rows * cols, 1e-30, 1e-5);
    all_ok &= kiln_test_end(&run);
    free(x), free(y), free(ref), free(got);
  }
  return all_ok;
}

/* ---- layernorm_fwd ------------------------------------------------------------------------ */

static bool test_layernorm_fwd(KilnRtDevice *dev) {
  /* mult8: compiled with cols, x_stride and y_stride promised multiples of 8 (as BERT's are), so
   * the mask `c < cols` is one value per 128-bit vector and every access of the row is one
   * predicated vector instruction; 200 of 256 columns leave whole vectors masked off, which
   * must touch no memory (the last row's end is the allocation's, under memcheck). */
  static const struct {
    int32_t rows, cols, x_stride, y_stride, block;
    bool mult8;
  } cfgs[] = {{77, 768, 768, 772, 1024, false}, {4, 100, 101, 100, 128, false},
              {8, 256, 256, 256, 256, false},   {2, 1000, 1000, 1001, 1024, false},
              {5, 200, 200, 200, 256, true},    {3, 1016, 1024, 1016, 1024, true}};
  static const KilnDefine mult8[] = {{"cols", 8}, {"x_stride", 8}, {"y_stride", 8}};
  const float eps = 1e-5f;
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols;
    size_t xs = (size_t)cfgs[ci].x_stride, ys = (size_t)cfgs[ci].y_stride;
    size_t total = rows * ys + TAIL_ELEMS, stats_total = rows + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zu strides %zu,%zu%s", rows, cols, xs, ys,
             cfgs[ci].mult8 ? " multiples of 8" : "");
    if (cfgs[ci].mult8) g_spec = (Spec){NULL, mult8, 0, COUNT(mult8)};
    KilnTestRun run;
    run_begin(&run, dev, "layernorm_fwd", defs, COUNT(defs), shape);
    g_spec = (Spec){0};

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 400 + ci);
    /* Each row gets its own offset in [-1, 1] so the mean is not ~0 and the subtraction counts. */
    float *x = kiln_test_random_f32(&rng, rows * xs, -2.0f, 2.0f);
    for (size_t r = 0; r < rows; r++) {
      float off = kiln_ref_rng_uniform(&rng, -1.0f, 1.0f);
      for (size_t c = 0; c < xs; c++) x[r * xs + c] += off;
    }
    /* Row 1 with a variance of eps / 2 and row 2 constant (0.625: its sums are exact in f32, so
     * x - mean is exactly 0): there eps is half or all of what rstd depends on. */
    for (size_t r = 0; r < rows; r++) {
      KilnRefLnRow kind = kiln_ref_layernorm_row_kind(r, rows);
      if (kind != KILN_REF_LN_ROW_NORMAL)
        kiln_ref_layernorm_fill_row(x + r * xs, cols, kind, &rng, eps, 1, 0.625f);
    }
    poison_row_gaps(x, rows, cols, xs);
    float *gamma = kiln_test_random_f32(&rng, cols, 0.5f, 1.5f),
          *beta = kiln_test_random_f32(&rng, cols, -1.0f, 1.0f);
    float *y = kiln_test_alloc(total, sizeof *y),
          *mean = kiln_test_alloc(stats_total, sizeof *mean);
    float *rstd = kiln_test_alloc(stats_total, sizeof *rstd);
    float *ref_y = kiln_test_alloc(rows * cols, sizeof *ref_y),
          *ref_mean = kiln_test_alloc(rows, sizeof *ref_mean);
    float *ref_rstd = kiln_test_alloc(rows, sizeof *ref_rstd);
    void *dx = kiln_test_input(&run, x, rows * xs * sizeof *x);
    void *dg = kiln_test_input(&run, gamma, cols * sizeof *gamma);
    void *db = kiln_test_input(&run, beta, cols * sizeof *beta);
    void *dy = kiln_test_output(&run, total * sizeof *y);
    void *dmean = kiln_test_output(&run, stats_total * sizeof *mean);
    void *drstd = kiln_test_output(&run, stats_total * sizeof *rstd);
    int32_t cols32 = cfgs[ci].cols, xs32 = cfgs[ci].x_stride, ys32 = cfgs[ci].y_stride;
    float eps_arg = eps;
    void *args[] = {&dx, &dg, &db, &dy, &dmean, &drstd, &cols32, &xs32, &ys32, &eps_arg};
    kiln_test_launch(&run, run.fn, (uint32_t)rows, 1, args);
    kiln_test_fetch(&run, y, dy, total * sizeof *y);
    kiln_test_fetch(&run, mean, dmean, stats_total * sizeof *mean);
    kiln_test_fetch(&run, rstd, drstd, stats_total * sizeof *rstd);

    kiln_test_check_untouched(&run, "y", y, sizeof *y, total, rows, cols, ys);
    kiln_test_check_untouched(&run, "mean", mean, sizeof *mean, stats_total, 1, rows, stats_total);
    kiln_test_check_untouched(&run, "rstd", rstd, sizeof *rstd, stats_total, 1, rows, stats_total);
    float *got = gather_f32(y, rows, cols, ys);
    kiln_ref_layernorm_fwd(x, xs, gamma, beta, ref_y, cols, ref_mean, ref_rstd, rows, cols, eps);
    check_close(&run, "y", got, ref_y, rows * cols, 1.0, 1e-5);
    check_close(&run, "mean", mean, ref_mean, rows, 1.0, 1e-5);
    check_close(&run, "rstd", rstd, ref_rstd, rows, 1e-30, 1e-5);
    double *var = kiln_test_alloc(rows, sizeof *var);
    for (size_t r = 0; r < rows; r++) var[r] = kiln_ref_variance(x + r * xs, cols);
    kiln_test_check_eps(&run, rstd, var, rows, eps);
    all_ok &= kiln_test_end(&run);
    free(x), free(gamma), free(beta), free(y), free(mean), free(rstd), free(var);
    free(ref_y), free(ref_mean), free(ref_rstd), free(got);
  }
  return all_ok;
}

/* ---- layernorm_bwd ------------------------------------------------------------------------ */

/* dx against the double reference at layernorm_fwd's 1e-5 (floor 1): each row's two sums are
 * f32 over at most 1000 terms of |xhat g| <= ~3, whose mean errs by < 2e-7, amplified by rstd
 * ~ 0.9 (these rows' variance is about 4/3; the tiny-variance rows of the forward's test would
 * make rstd ~300 and are left to the forward). dgamma and dbeta are sums over the rows by atomic
 * adds in any order: each element within its own bound, (rows + 4) 2^-24 times the sum of its
 * terms' magnitudes (kiln_ref_layernorm_bwd). The gradient buffers start at 0 and their tails
 * must keep the sentinel. */
static bool test_layernorm_bwd(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, stride, block;
  } cfgs[] = {{77, 768, 770, 1024}, {4, 100, 101, 128}, {8, 256, 256, 256}, {2, 1000, 1000, 1024}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols;
    size_t st = (size_t)cfgs[ci].stride, n = rows * st;
    size_t total = n + TAIL_ELEMS, gtotal = cols + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zu stride %zu", rows, cols, st);
    KilnTestRun run;
    run_begin(&run, dev, "layernorm_bwd", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 450 + ci);
    float *x = kiln_test_random_f32(&rng, n, -2.0f, 2.0f);
    float *dy = kiln_test_random_f32(&rng, n, -1.0f, 1.0f);
    poison_row_gaps(x, rows, cols, st);
    poison_row_gaps(dy, rows, cols, st);
    float *gamma = kiln_test_random_f32(&rng, cols, 0.5f, 1.5f);
    float *beta = kiln_test_alloc(cols, sizeof *beta), *y = kiln_test_alloc(n, sizeof *y);
    float *mean = kiln_test_alloc(rows, sizeof *mean), *rstd = kiln_test_alloc(rows, sizeof *rstd);
    kiln_ref_layernorm_fwd(x, st, gamma, beta, y, st, mean, rstd, rows, cols, 1e-5f);
    float *zeroed = kiln_test_alloc(gtotal, sizeof *zeroed);
    memset(zeroed, KILN_TEST_SENTINEL, gtotal * sizeof *zeroed);
    memset(zeroed, 0, cols * sizeof *zeroed);
    void *dxin = kiln_test_input(&run, x, n * sizeof *x);
    void *ddy = kiln_test_input(&run, dy, n * sizeof *dy);
    void *dg = kiln_test_input(&run, gamma, cols * sizeof *gamma);
    void *dmean = kiln_test_input(&run, mean, rows * sizeof *mean);
    void *drstd = kiln_test_input(&run, rstd, rows * sizeof *rstd);
    void *ddx = kiln_test_output(&run, total * sizeof(float));
    void *ddg = kiln_test_input(&run, zeroed, gtotal * sizeof *zeroed);
    void *ddb = kiln_test_input(&run, zeroed, gtotal * sizeof *zeroed);
    int32_t cols32 = cfgs[ci].cols, st32 = cfgs[ci].stride;
    void *args[] = {&dxin, &ddy, &dg, &dmean, &drstd, &ddx, &ddg, &ddb, &cols32, &st32};
    kiln_test_launch(&run, run.fn, (uint32_t)rows, 1, args);
    float *dx = kiln_test_alloc(total, sizeof *dx), *dgam = kiln_test_alloc(gtotal, sizeof *dgam);
    float *dbet = kiln_test_alloc(gtotal, sizeof *dbet);
    kiln_test_fetch(&run, dx, ddx, total * sizeof *dx);
    kiln_test_fetch(&run, dgam, ddg, gtotal * sizeof *dgam);
    kiln_test_fetch(&run, dbet, ddb, gtotal * sizeof *dbet);

    kiln_test_check_untouched(&run, "dx", dx, sizeof *dx, total, rows, cols, st);
    kiln_test_check_untouched(&run, "dgamma", dgam, sizeof *dgam, gtotal, 1, cols, gtotal);
    kiln_test_check_untouched(&run, "dbeta", dbet, sizeof *dbet, gtotal, 1, cols, gtotal);
    float *ref_dx = kiln_test_alloc(n, sizeof *ref_dx), *ref_g = kiln_test_alloc(cols, 4);
    float *ref_b = kiln_test_alloc(cols, 4), *bound_g = kiln_test_alloc(cols, 4);
    float *bound_b = kiln_test_alloc(cols, 4);
    kiln_ref_layernorm_bwd(x, dy, st, gamma, mean, rstd, ref_dx, ref_g, ref_b, bound_g, bound_b,
                           rows, cols);
    float *got = gather_f32(dx, rows, cols, st), *want = gather_f32(ref_dx, rows, cols, st);
    check_close(&run, "dx", got, want, rows * cols, 1.0, 1e-5);
    if (run.ok) kiln_test_check_bound(&run, "dgamma", dgam, ref_g, bound_g, cols);
    if (run.ok) kiln_test_check_bound(&run, "dbeta", dbet, ref_b, bound_b, cols);
    all_ok &= kiln_test_end(&run);
    free(x), free(dy), free(gamma), free(beta), free(y), free(mean), free(rstd), free(zeroed);
    free(dx), free(dgam), free(dbet), free(ref_dx), free(ref_g), free(ref_b), free(bound_g);
    free(bound_b), free(got), free(want);
  }
  return all_ok;
}

/* ---- matmul_f16 --------------------------------------------------------------------------- */

static bool test_matmul_f16(KilnRtDevice *dev) {
  /* a_colmajor / b_colmajor store A (M x K) / B (K x N) column-major, i.e. transposed in
   * memory: the kernel sees that only through its stride parameters.  `unit` configurations
   * (row-major, K and N multiples of 8) are compiled specialized on the unit strides and on the
   * row strides being multiples of 8 elements, so their loads are 128-bit vectors and, on the
   * GPU targets, the K loop is software-pipelined with cp.async over `stages` buffers (0: the
   * default): those cover the pipeline's prologue, steady state, K tails (vectors half inside
   * the mask), fewer iterations than stages, a 4-stage ring of exactly 48 KiB (the largest
   * static arena) and 4-stage rings of 64 KiB in dynamic shared memory (the arena is
   * `.extern`, its size passed by the device at launch), with tails in M, N and K.  `sizes`
   * configurations also promise M, N and K multiples of 8: the copies' masks are then one value
   * per 16-byte vector, and a vector past a tail is a zero-filling cp.async (src-size 0) instead
   * of element-by-element loads; their tails are whole vectors, so the zeros must land. */
  static const struct {
    int32_t M, N, K, bm, bn, bk;
    bool a_colmajor, b_colmajor, unit;
    int stages;
    int min_blocks; /* 0: not set; else the .minnctapersm ptxas gets (the emulator ignores it) */
    bool sizes;
    int warps;  /* 0: the run's (--warps); else these warps whatever --warps says */
    bool wgmma; /* the config asks for wgmma (sm_90 and emu; the cpu target ignores it) */
  } cfgs[] = {
      {100, 72, 88, 32, 32, 32, false, false, false, 0, 0, false, 0, false},
      {64, 64, 64, 32, 32, 32, false, false, false, 0, 0, false, 0, false},
      {33, 65, 17, 16, 64, 16, true, true, false, 0, 0, false, 0, false},
      {128, 96, 256, 64, 32, 64, false, true, false, 0, 0, false, 0, false},
      {1, 1, 1, 16, 16, 16, false, false, false, 0, 0, false, 0, false},
      {100, 72, 88, 32, 32, 32, false, false, true, 3, 0, false, 0, false},
      {128, 96, 256, 64, 32, 64, false, false, true, 4, 0, false, 0, false},
      {64, 64, 16, 32, 32, 32, false, false, true, 3, 0, false, 0, false},
      {64, 48, 200, 32, 16, 16, false, false, true, 2, 0, false, 0, false},
      {96, 80, 200, 64, 64, 64, false, false, true, 4, 0, false, 0, false},
      {64, 64, 64, 64, 64, 64, false, false, true, 4, 0, false, 0, false},
      {96, 80, 200, 64, 64, 64, false, false, true, 3, 2, false, 0, false},
      /* Column-major unit-stride operands are staged transposed (k-major B: y = x W^T of a
       * linear layer; m-major A: dW = X^T dY) and read with ldmatrix (.trans for A): B alone,
       * A alone, both with tails in every dim, and a 64x8 tile whose lone B column block
       * takes ldmatrix .x2. */
      {96, 80, 200, 64, 64, 32, false, true, true, 3, 2, false, 0, false},
      {128, 96, 72, 64, 32, 32, true, false, true, 4, 0, false, 0, false},
      {72, 64, 40, 32, 64, 16, true, true, true, 2, 0, false, 0, false},
      {64, 24, 48, 64, 8, 16, false, true, true, 3, 0, false, 0, false},
      /* sizes promised: tails of whole vectors in K (88 = 2 x 32 + 24), N and M, row-major and
       * both operands column-major (staged transposed); K shorter than the ring */
      {104, 72, 88, 32, 32, 32, false, false, true, 3, 0, true, 0, false},
      {72, 64, 40, 32, 64, 16, true, true, true, 2, 0, true, 0, false},
      {96, 40, 24, 64, 32, 32, false, true, true, 4, 0, true, 0, false},
      /* wgmma (docs/gpu-lowering.md, "wgmma"): each operand k-major (A row-major, B
       * column-major: staged transposed) or m/n-major (128-byte panels), K steps in the 32-,
       * 64- and 128-byte swizzles (BK 16, 32, 64), one and two warpgroups, two m64 blocks a
       * warpgroup (BM 128 on 4 warps), 256 columns in one instruction, tails in M, N and K */
      {128, 128, 96, 64, 128, 32, false, false, true, 3, 0, false, 4, true},
      {150, 200, 200, 64, 64, 64, false, true, true, 4, 0, false, 4, true},
      {128, 256, 48, 64, 256, 16, true, false, true, 2, 0, false, 4, true},
      {256, 128, 104, 128, 128, 32, true, true, true, 3, 0, false, 8, true},
      {200, 136, 72, 128, 64, 64, false, false, true, 3, 0, true, 4, true},
      /* wgmma asked for where the operands are not pipelined (generic strides): mma.sync with
       * wgmma's warps-along-rows layout */
      {100, 130, 72, 64, 64, 32, false, false, false, 0, 0, false, 4, true},
  };
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t M = (size_t)cfgs[ci].M, N = (size_t)cfgs[ci].N, K = (size_t)cfgs[ci].K;
    size_t sam = cfgs[ci].a_colmajor ? 1 : K, sak = cfgs[ci].a_colmajor ? M : 1;
    size_t sbk = cfgs[ci].b_colmajor ? 1 : N, sbn = cfgs[ci].b_colmajor ? K : 1;
    size_t scm = N + 8, scn = 1; /* 8 sentinel columns between rows of C */
    size_t total = M * scm + TAIL_ELEMS;
    KilnDefine defs[7] = {{"BM", cfgs[ci].bm}, {"BN", cfgs[ci].bn}, {"BK", cfgs[ci].bk}};
    size_t ndefs = 3;
    if (cfgs[ci].stages) defs[ndefs++] = (KilnDefine){"num_stages", cfgs[ci].stages};
    if (cfgs[ci].min_blocks) defs[ndefs++] = (KilnDefine){"min_blocks", cfgs[ci].min_blocks};
    if (cfgs[ci].wgmma) defs[ndefs++] = (KilnDefine){"wgmma", 1};
    char shape[112];
    snprintf(shape, sizeof shape, "%zux%zux%zu A %s B %s%s%s%s", M, N, K,
             cfgs[ci].a_colmajor ? "col" : "row", cfgs[ci].b_colmajor ? "col" : "row",
             cfgs[ci].unit ? " unit-stride" : "", cfgs[ci].sizes ? " sizes%8" : "",
             cfgs[ci].wgmma ? " wgmma" : "");
    /* The unit stride of each operand is the one along its contiguous dim; the other stride is
     * a multiple of 8 elements (16 bytes) in every unit configuration. */
    KilnDefine unit_eq[] = {{cfgs[ci].a_colmajor ? "sam" : "sak", 1},
                            {cfgs[ci].b_colmajor ? "sbk" : "sbn", 1}};
    KilnDefine unit_mult[] = {{cfgs[ci].a_colmajor ? "sak" : "sam", 8},
                              {cfgs[ci].b_colmajor ? "sbn" : "sbk", 8},
                              {"M", 8},
                              {"N", 8},
                              {"K", 8}};
    size_t nmult = cfgs[ci].sizes ? COUNT(unit_mult) : 2;
    if (cfgs[ci].unit) g_spec = (Spec){unit_eq, unit_mult, COUNT(unit_eq), nmult};
    KilnTestRun run;
    int keep_warps = g_num_warps;
    if (cfgs[ci].warps) g_num_warps = cfgs[ci].warps; /* wgmma: whole warpgroups */
    run_begin(&run, dev, "matmul_f16", defs, ndefs, shape);
    g_num_warps = keep_warps;
    g_spec = (Spec){0};

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 500 + ci);
    uint16_t *a = random_f16(&rng, M * K, -1.0f, 1.0f), *b = random_f16(&rng, K * N, -1.0f, 1.0f);
    uint16_t *c = kiln_test_alloc(total, sizeof *c);
    float *ref = kiln_test_alloc(M * N, sizeof *ref);
    void *da = kiln_test_input(&run, a, M * K * sizeof *a);
    void *db = kiln_test_input(&run, b, K * N * sizeof *b);
    void *dc = kiln_test_output(&run, total * sizeof *c);
    int32_t m32 = cfgs[ci].M, n32 = cfgs[ci].N, k32 = cfgs[ci].K;
    int32_t sam32 = (int32_t)sam, sak32 = (int32_t)sak, sbk32 = (int32_t)sbk, sbn32 = (int32_t)sbn;
    int32_t scm32 = (int32_t)scm, scn32 = (int32_t)scn;
    void *args[] = {&da,    &db,    &dc,    &m32,   &n32,   &k32,
                    &sam32, &sak32, &sbk32, &sbn32, &scm32, &scn32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(M, (size_t)cfgs[ci].bm),
                     kiln_test_cdiv(N, (size_t)cfgs[ci].bn), args);
    kiln_test_fetch(&run, c, dc, total * sizeof *c);

    kiln_test_check_untouched(&run, "c", c, sizeof *c, total, M, N, scm);
    float *got = gather_f16(c, M, N, scm);
    kiln_ref_matmul_f16(a, sam, sak, b, sbk, sbn, ref, M, N, K);
    check_close(&run, "c", got, ref, M * N, 1.0, 2e-3);
    all_ok &= kiln_test_end(&run);
    free(a), free(b), free(c), free(ref), free(got);
  }
  return all_ok;
}

/* ---- matmul_desc -------------------------------------------------------------------------- */

/* The descriptor matmul (dsl/examples/matmul_desc.kiln) against the f16 reference: row strides
 * padded to multiples of 8 elements past each row (the descriptor's 16 bytes), tails in every
 * dim (the blocks overhang A, B and C: zeros added, nothing written), pipelined and not, and on
 * wgmma (sm_90 and emu); C's padding columns must stay untouched. */
static bool test_matmul_desc(KilnRtDevice *dev) {
  static const struct {
    int32_t M, N, K, bm, bn, bk, stages, warps;
    bool wgmma;
  } cfgs[] = {
      {100, 72, 88, 32, 32, 32, 0, 0, false},  {64, 64, 64, 32, 32, 32, 3, 0, false},
      {33, 65, 17, 16, 64, 16, 2, 0, false},   {150, 96, 200, 64, 32, 64, 4, 0, false},
      {1, 1, 1, 16, 16, 16, 0, 0, false},      {150, 200, 200, 64, 64, 64, 4, 4, true},
      {128, 128, 96, 64, 128, 32, 3, 4, true},
  };
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t M = (size_t)cfgs[ci].M, N = (size_t)cfgs[ci].N, K = (size_t)cfgs[ci].K;
    size_t sa = (K + 7) / 8 * 8 + 8, sb = (N + 7) / 8 * 8, sc = (N + 7) / 8 * 8 + 8;
    size_t total = M * sc + TAIL_ELEMS;
    KilnDefine defs[6] = {{"BM", cfgs[ci].bm}, {"BN", cfgs[ci].bn}, {"BK", cfgs[ci].bk}};
    size_t ndefs = 3;
    if (cfgs[ci].stages) defs[ndefs++] = (KilnDefine){"num_stages", cfgs[ci].stages};
    if (cfgs[ci].wgmma) defs[ndefs++] = (KilnDefine){"wgmma", 1};
    char shape[96];
    snprintf(shape, sizeof shape, "%zux%zux%zu sa=%zu sb=%zu sc=%zu%s", M, N, K, sa, sb, sc,
             cfgs[ci].wgmma ? " wgmma" : "");
    KilnTestRun run;
    int keep_warps = g_num_warps;
    if (cfgs[ci].warps) g_num_warps = cfgs[ci].warps; /* wgmma: whole warpgroups */
    run_begin(&run, dev, "matmul_desc", defs, ndefs, shape);
    g_num_warps = keep_warps;

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 4600 + ci);
    uint16_t *a = random_f16(&rng, M * sa, -1.0f, 1.0f), *b = random_f16(&rng, K * sb, -1.0f, 1.0f);
    uint16_t *c = kiln_test_alloc(total, sizeof *c);
    float *ref = kiln_test_alloc(M * N, sizeof *ref);
    void *da = kiln_test_input(&run, a, M * sa * 2), *db = kiln_test_input(&run, b, K * sb * 2);
    void *dc = kiln_test_output(&run, total * sizeof *c);
    int32_t v[6] = {cfgs[ci].M, cfgs[ci].N, cfgs[ci].K, (int32_t)sa, (int32_t)sb, (int32_t)sc};
    void *args[] = {&da, &db, &dc, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(M, (size_t)cfgs[ci].bm),
                     kiln_test_cdiv(N, (size_t)cfgs[ci].bn), args);
    kiln_test_fetch(&run, c, dc, total * sizeof *c);
    kiln_test_check_untouched(&run, "c", c, sizeof *c, total, M, N, sc);
    float *got = gather_f16(c, M, N, sc);
    kiln_ref_matmul_f16(a, sa, 1, b, sb, 1, ref, M, N, K);
    /* exact f16 products, f32 sums in another order, one f16 rounding of the result */
    check_close(&run, "c", got, ref, M * N, 1.0, 2e-3);
    all_ok &= kiln_test_end(&run);
    free(a), free(b), free(c), free(ref), free(got);
  }
  return all_ok;
}

/* ---- argmax_rows -------------------------------------------------------------------------- */

static bool test_argmax_rows(KilnRtDevice *dev) {
  /* ties: values drawn from the 8 integers 0..7, so most rows hold their maximum several
   * times and only the first occurrence is right. */
  static const struct {
    int32_t rows, cols, block_r, block_c;
    bool ties;
  } cfgs[] = {{77, 768, 4, 1024, false},
              {10, 33, 8, 64, true},
              {5, 1, 2, 128, false},
              {64, 256, 1, 256, true},
              {13, 1000, 2, 1024, false}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols, stride = cols + 3;
    size_t total = rows + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK_R", cfgs[ci].block_r}, {"BLOCK_C", cfgs[ci].block_c}};
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zu%s", rows, cols, cfgs[ci].ties ? " ties" : "");
    KilnTestRun run;
    run_begin(&run, dev, "argmax_rows", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 600 + ci);
    float *x = kiln_test_random_f32(&rng, rows * stride, -100.0f, 100.0f);
    if (cfgs[ci].ties)
      for (size_t i = 0; i < rows * stride; i++) x[i] = floorf((x[i] + 100.0f) / 25.0f);
    poison_row_gaps(x, rows, cols, stride);
    int32_t *out = kiln_test_alloc(total, sizeof *out), *ref = kiln_test_alloc(rows, sizeof *ref);
    void *dx = kiln_test_input(&run, x, rows * stride * sizeof *x);
    void *dout = kiln_test_output(&run, total * sizeof *out);
    int32_t rows32 = cfgs[ci].rows, cols32 = cfgs[ci].cols, stride32 = (int32_t)stride;
    void *args[] = {&dx, &dout, &rows32, &cols32, &stride32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(rows, (size_t)cfgs[ci].block_r), 1, args);
    kiln_test_fetch(&run, out, dout, total * sizeof *out);

    kiln_test_check_untouched(&run, "out", out, sizeof *out, total, 1, rows, total);
    kiln_ref_argmax_rows(x, stride, ref, rows, cols);
    check_equal_i32(&run, "out", out, ref, rows);
    all_ok &= kiln_test_end(&run);
    free(x), free(out), free(ref);
  }
  return all_ok;
}

/* ---- flash_attention ---------------------------------------------------------------------- */

static bool test_flash_attention(KilnRtDevice *dev) {
  /* S not a multiple of the blocks (ragged last query and key blocks), a block wider than the
   * sequence, BN < BM (several key blocks per diagonal) and BN = BM. */
  static const struct {
    int32_t bh, S, bm, bn, d;
  } cfgs[] = {{3, 100, 32, 32, 64}, {2, 64, 64, 32, 64}, {2, 40, 64, 64, 32}, {1, 130, 32, 16, 16}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t bh = (size_t)cfgs[ci].bh, S = (size_t)cfgs[ci].S, D = (size_t)cfgs[ci].d;
    size_t n = bh * S * D, total = n + TAIL_ELEMS;
    float scale = 1.0f / sqrtf((float)D);
    KilnDefine defs[] = {{"BM", cfgs[ci].bm}, {"BN", cfgs[ci].bn}, {"D", cfgs[ci].d}};
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zux%zu", bh, S, D);
    KilnTestRun run;
    run_begin(&run, dev, "flash_attention", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 650 + ci);
    /* scores up to |q.k| scale = 2 sqrt(D): softmax weights spread over many keys and peaked */
    uint16_t *q = random_f16(&rng, n, -2.0f, 2.0f), *k = random_f16(&rng, n, -1.0f, 1.0f);
    uint16_t *v = random_f16(&rng, n, -1.0f, 1.0f), *o = kiln_test_alloc(total, sizeof *o);
    float *ref = kiln_test_alloc(n, sizeof *ref);
    void *dq = kiln_test_input(&run, q, n * sizeof *q),
         *dk = kiln_test_input(&run, k, n * sizeof *k);
    void *dv = kiln_test_input(&run, v, n * sizeof *v);
    void *dout = kiln_test_output(&run, total * sizeof *o);
    int32_t s32 = cfgs[ci].S;
    void *args[] = {&dq, &dk, &dv, &dout, &s32, &scale};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(S, (size_t)cfgs[ci].bm), bh, args);
    kiln_test_fetch(&run, o, dout, total * sizeof *o);

    kiln_test_check_untouched(&run, "o", o, sizeof *o, total, 1, n, total);
    float *got = gather_f16(o, 1, n, n);
    kiln_ref_flash_attention(q, k, v, ref, bh, S, D, scale);
    /* |o| <= max |v| = 1: P's and O's f16 roundings (2^-11 each, relative) and the f32 sums give
     * at most ~1.2e-3 absolute (docs/kernels-tests.md) */
    check_close(&run, "o", got, ref, n, 1.0, 2e-3);
    all_ok &= kiln_test_end(&run);
    free(q), free(k), free(v), free(o), free(ref), free(got);
  }
  return all_ok;
}

/* ---- matmul_grouped ----------------------------------------------------------------------- */

static bool test_matmul_grouped(KilnRtDevice *dev) {
  /* Block rows that do not divide into whole groups (the last group is shorter), a grid of
   * one group, one block, and tails in every dim; an output block written twice or never
   * fails the comparison or the sentinels. */
  static const struct {
    int32_t M, N, K, bm, bn, bk, group;
  } cfgs[] = {{200, 136, 72, 32, 32, 32, 4},
              {64, 256, 64, 32, 64, 32, 8},
              {30, 20, 10, 32, 32, 16, 8},
              {160, 96, 48, 16, 32, 16, 3}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t M = (size_t)cfgs[ci].M, N = (size_t)cfgs[ci].N, K = (size_t)cfgs[ci].K;
    size_t scm = N + 8, total = M * scm + TAIL_ELEMS;
    KilnDefine defs[] = {
        {"BM", cfgs[ci].bm}, {"BN", cfgs[ci].bn}, {"BK", cfgs[ci].bk}, {"GROUP_M", cfgs[ci].group}};
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zux%zu", M, N, K);
    KilnTestRun run;
    run_begin(&run, dev, "matmul_grouped", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 670 + ci);
    uint16_t *a = random_f16(&rng, M * K, -1.0f, 1.0f), *b = random_f16(&rng, K * N, -1.0f, 1.0f);
    uint16_t *c = kiln_test_alloc(total, sizeof *c);
    float *ref = kiln_test_alloc(M * N, sizeof *ref);
    void *da = kiln_test_input(&run, a, M * K * sizeof *a);
    void *db = kiln_test_input(&run, b, K * N * sizeof *b);
    void *dc = kiln_test_output(&run, total * sizeof *c);
    int32_t m32 = cfgs[ci].M, n32 = cfgs[ci].N, k32 = cfgs[ci].K, one = 1;
    int32_t scm32 = (int32_t)scm;
    void *args[] = {&da, &db, &dc, &m32, &n32, &k32, &k32, &one, &n32, &one, &scm32, &one};
    size_t programs =
        kiln_test_cdiv(M, (size_t)cfgs[ci].bm) * kiln_test_cdiv(N, (size_t)cfgs[ci].bn);
    kiln_test_launch(&run, run.fn, programs, 1, args);
    kiln_test_fetch(&run, c, dc, total * sizeof *c);

    kiln_test_check_untouched(&run, "c", c, sizeof *c, total, M, N, scm);
    float *got = gather_f16(c, M, N, scm);
    kiln_ref_matmul_f16(a, K, 1, b, N, 1, ref, M, N, K);
    for (size_t i = 0; i < M * N; i++) ref[i] = ref[i] >= 0.0f ? ref[i] : 0.01f * ref[i];
    /* as matmul_f16: f16 rounding of the result and f32 sums in another order */
    check_close(&run, "c", got, ref, M * N, 1.0, 2e-3);
    all_ok &= kiln_test_end(&run);
    free(a), free(b), free(c), free(ref), free(got);
  }
  return all_ok;
}

/* ---- transpose ---------------------------------------------------------------------------- */

static bool test_transpose(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, block;
  } cfgs[] = {{100, 70, 32}, {64, 64, 64}, {1, 33, 16}, {130, 5, 32}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols;
    size_t xs = cols + 3, os = rows + 5, total = cols * os + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zu", rows, cols);
    KilnTestRun run;
    run_begin(&run, dev, "transpose", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 690 + ci);
    float *x = kiln_test_random_f32(&rng, rows * xs, -10.0f, 10.0f);
    poison_row_gaps(x, rows, cols, xs);
    float *out = kiln_test_alloc(total, sizeof *out),
          *ref = kiln_test_alloc(cols * os, sizeof *ref);
    void *dx = kiln_test_input(&run, x, rows * xs * sizeof *x);
    void *dout = kiln_test_output(&run, total * sizeof *out);
    int32_t r32 = cfgs[ci].rows, c32 = cfgs[ci].cols, xs32 = (int32_t)xs, os32 = (int32_t)os;
    void *args[] = {&dx, &dout, &r32, &c32, &xs32, &os32};
    size_t bl = (size_t)cfgs[ci].block;
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(rows, bl), kiln_test_cdiv(cols, bl), args);
    kiln_test_fetch(&run, out, dout, total * sizeof *out);

    kiln_test_check_untouched(&run, "out", out, sizeof *out, total, cols, rows, os);
    kiln_ref_transpose(x, xs, ref, os, rows, cols);
    float *got = gather_f32(out, cols, rows, os), *want = gather_f32(ref, cols, rows, os);
    check_close(&run, "out", got, want, rows * cols, 1.0, 0.0); /* a copy: exact */
    all_ok &= kiln_test_end(&run);
    free(x), free(out), free(ref), free(got), free(want);
  }
  return all_ok;
}

/* ---- rope ----------------------------------------------------------------------------------- */

/* RoPE against the double reference.  The kernel's angle is pos * freq in f32 (freq from exp2
 * of an f32 product, within a few ulp of 10000^(-2i/d)): at positions up to 63 the angle errs by
 * up to about 63 * 2^-22 (1.5e-5 rad), sin and cos add theirs (the GPU targets' approximations
 * about 2^-21 absolute), and x is within [-2, 2]: 1e-4 absolute (floor 1) bounds the rotated
 * values with room, while a pair's halves swapped or a frequency off by one pair errs by O(1). */
static bool test_rope(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, seq, heads, d, block_r;
  } cfgs[] = {{64, 16, 4, 64, 4}, {100, 64, 1, 128, 8}, {37, 7, 3, 64, 16}, {1, 1, 1, 64, 4}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t rows = (size_t)cfgs[ci].rows, d = (size_t)cfgs[ci].d, stride = d + 6;
    size_t total = rows * stride + TAIL_ELEMS;
    KilnDefine defs[] = {{"D", cfgs[ci].d}, {"BLOCK_R", cfgs[ci].block_r}};
    char shape[64];
    snprintf(shape, sizeof shape, "rows=%zu seq=%d heads=%d", rows, cfgs[ci].seq, cfgs[ci].heads);
    KilnTestRun run;
    run_begin(&run, dev, "rope", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 4500 + ci);
    float *x = kiln_test_random_f32(&rng, rows * stride, -2.0f, 2.0f);
    poison_row_gaps(x, rows, d, stride);
    float *out = kiln_test_alloc(total, sizeof *out), *ref = kiln_test_alloc(rows * stride, 4);
    void *dx = kiln_test_input(&run, x, rows * stride * sizeof *x);
    void *dout = kiln_test_output(&run, total * sizeof *out);
    int32_t r32 = cfgs[ci].rows, seq = cfgs[ci].seq, heads = cfgs[ci].heads, s32 = (int32_t)stride;
    void *args[] = {&dx, &dout, &r32, &seq, &heads, &s32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(rows, (size_t)cfgs[ci].block_r), 1, args);
    kiln_test_fetch(&run, out, dout, total * sizeof *out);
    kiln_test_check_untouched(&run, "out", out, sizeof *out, total, rows, d, stride);
    kiln_ref_rope(x, ref, rows, (size_t)cfgs[ci].seq, (size_t)cfgs[ci].heads, stride, d);
    float *got = gather_f32(out, rows, d, stride), *want = gather_f32(ref, rows, d, stride);
    check_close(&run, "out", got, want, rows * d, 1.0, 1e-4);
    all_ok &= kiln_test_end(&run);
    free(x), free(out), free(ref), free(got), free(want);
  }
  return all_ok;
}

/* ---- matmul_i8, dot_i8_forms ----------------------------------------------------------------- */

/* n i8 values: uniform over [-128, 127], or (extreme) -128 and 127 only, where the products
 * reach 2^14 and a lowering that zero-extends or wraps an operand to 8 bits errs by thousands. */
static int8_t *random_i8(KilnRefRng *rng, size_t n, bool extreme) {
  int8_t *p = kiln_test_alloc(n, 1);
  for (size_t i = 0; i < n; i++) {
    uint64_t r = kiln_ref_rng_next(rng) >> 24;
    p[i] = extreme ? (r & 1 ? 127 : -128) : (int8_t)((int)(r & 0xFF) - 128);
  }
  return p;
}

/* i8 x i8 summed in i32: exact, so every result must equal the reference bit for bit. Ragged M,
 * N and K; K = 200 of extremes reaches |sum| = 200 * 2^14 = 3.3e6. On the GPU targets K tiles
 * of 32 and 64 run on mma.sync m16n8k32 (BK = 16 on the FMA path); with num_stages and strides
 * promised multiples of 16 the operands are pipelined through cp.async (A read by ldmatrix, the
 * row-major B by byte gathers), tails in M, N and K. */
static bool test_matmul_i8(KilnRtDevice *dev) {
  static const struct {
    int32_t M, N, K, bm, bn, bk;
    bool extreme;
    int stages; /* 0: not set; else num_stages and the strides promised multiples of 16 */
    int warps;  /* 0: the tune block's 4 */
  } cfgs[] = {{64, 64, 64, 32, 32, 32, false, 0, 0},   {100, 70, 200, 32, 64, 64, true, 0, 0},
              {33, 17, 5, 32, 32, 32, false, 0, 0},    {128, 96, 96, 64, 32, 32, false, 0, 0},
              {64, 48, 40, 32, 16, 16, false, 0, 0},   {100, 70, 200, 32, 64, 64, true, 3, 0},
              {128, 96, 96, 64, 32, 32, false, 2, 0},  {72, 40, 136, 32, 32, 32, false, 4, 0},
              {130, 70, 100, 64, 64, 64, false, 0, 8}, {130, 70, 100, 128, 64, 32, true, 3, 8}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t M = (size_t)cfgs[ci].M, N = (size_t)cfgs[ci].N, K = (size_t)cfgs[ci].K;
    size_t sam = K + 3, sbk = N + 5, scm = N + 8, total = M * scm + TAIL_ELEMS;
    if (cfgs[ci].stages) sam = (K + 15) / 16 * 16 + 16, sbk = (N + 15) / 16 * 16 + 16;
    KilnDefine defs[5] = {{"BM", cfgs[ci].bm}, {"BN", cfgs[ci].bn}, {"BK", cfgs[ci].bk}};
    size_t ndefs = 3;
    if (cfgs[ci].stages) defs[ndefs++] = (KilnDefine){"num_stages", cfgs[ci].stages};
    if (cfgs[ci].warps) defs[ndefs++] = (KilnDefine){"num_warps", cfgs[ci].warps};
    static const KilnDefine mult16[] = {{"sam", 16}, {"sbk", 16}};
    if (cfgs[ci].stages) g_spec = (Spec){NULL, mult16, 0, COUNT(mult16)};
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zux%zu%s%s", M, N, K, cfgs[ci].extreme ? " extremes" : "",
             cfgs[ci].stages ? " pipelined" : "");
    KilnTestRun run;
    run_begin(&run, dev, "matmul_i8", defs, ndefs, shape);
    g_spec = (Spec){0};

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 720 + ci);
    int8_t *a = random_i8(&rng, M * sam, cfgs[ci].extreme);
    int8_t *b = random_i8(&rng, K * sbk, cfgs[ci].extreme);
    int32_t *c = kiln_test_alloc(total, sizeof *c), *ref = kiln_test_alloc(M * N, sizeof *ref);
    void *da = kiln_test_input(&run, a, M * sam), *db = kiln_test_input(&run, b, K * sbk);
    void *dc = kiln_test_output(&run, total * sizeof *c);
    int32_t m32 = cfgs[ci].M, n32 = cfgs[ci].N, k32 = cfgs[ci].K;
    int32_t sam32 = (int32_t)sam, sbk32 = (int32_t)sbk, scm32 = (int32_t)scm;
    void *args[] = {&da, &db, &dc, &m32, &n32, &k32, &sam32, &sbk32, &scm32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(M, (size_t)cfgs[ci].bm),
                     kiln_test_cdiv(N, (size_t)cfgs[ci].bn), args);
    kiln_test_fetch(&run, c, dc, total * sizeof *c);

    kiln_test_check_untouched(&run, "c", c, sizeof *c, total, M, N, scm);
    int32_t *got = kiln_test_alloc(M * N, sizeof *got);
    for (size_t r = 0; r < M; r++) memcpy(got + r * N, c + r * scm, N * sizeof *got);
    kiln_ref_matmul_i8(a, sam, 1, b, sbk, 1, ref, M, N, K);
    check_equal_i32(&run, "c", got, ref, M * N);
    all_ok &= kiln_test_end(&run);
    free(a), free(b), free(c), free(ref), free(got);
  }
  return all_ok;
}

/* matmul_i8_strided: column-major operands (a unit stride along m or n), specialized on it as a
 * library's layout would be, with the other stride promised a multiple of 16 bytes: pipelined
 * (a column-major A staged transposed and read by byte loads, a column-major B staged
 * transposed and read by ldmatrix) and not (generic strides), tails in every dim. */
static bool test_matmul_i8_strided(KilnRtDevice *dev) {
  static const struct {
    int32_t M, N, K, bm, bn, bk;
    bool a_col, b_col;
    int stages; /* 0: generic strides, no pipelining */
  } cfgs[] = {{100, 70, 200, 32, 64, 64, true, false, 3},
              {72, 40, 136, 32, 32, 32, false, true, 2},
              {96, 80, 120, 64, 32, 32, true, true, 4},
              {64, 64, 96, 32, 32, 64, true, true, 0},
              {33, 17, 45, 32, 32, 32, false, true, 0}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t M = (size_t)cfgs[ci].M, N = (size_t)cfgs[ci].N, K = (size_t)cfgs[ci].K;
    size_t mp = (M + 15) / 16 * 16 + 16, np = (N + 15) / 16 * 16 + 16, kp = (K + 15) / 16 * 16 + 16;
    size_t sam = cfgs[ci].a_col ? 1 : kp, sak = cfgs[ci].a_col ? mp : 1;
    size_t sbk = cfgs[ci].b_col ? 1 : np, sbn = cfgs[ci].b_col ? kp : 1;
    size_t scm = N + 8, total = M * scm + TAIL_ELEMS;
    size_t asize = cfgs[ci].a_col ? K * mp : M * kp, bsize = cfgs[ci].b_col ? N * kp : K * np;
    KilnDefine defs[4] = {{"BM", cfgs[ci].bm}, {"BN", cfgs[ci].bn}, {"BK", cfgs[ci].bk}};
    size_t ndefs = 3;
    KilnDefine unit_eq[] = {{cfgs[ci].a_col ? "sam" : "sak", 1},
                            {cfgs[ci].b_col ? "sbk" : "sbn", 1}};
    KilnDefine mult[] = {{cfgs[ci].a_col ? "sak" : "sam", 16},
                         {cfgs[ci].b_col ? "sbn" : "sbk", 16}};
    if (cfgs[ci].stages) {
      defs[ndefs++] = (KilnDefine){"num_stages", cfgs[ci].stages};
      g_spec = (Spec){unit_eq, mult, COUNT(unit_eq), COUNT(mult)};
    }
    char shape[80];
    snprintf(shape, sizeof shape, "%zux%zux%zu A %s B %s%s", M, N, K,
             cfgs[ci].a_col ? "col" : "row", cfgs[ci].b_col ? "col" : "row",
             cfgs[ci].stages ? " pipelined" : "");
    KilnTestRun run;
    run_begin(&run, dev, "matmul_i8_strided", defs, ndefs, shape);
    g_spec = (Spec){0};

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 740 + ci);
    int8_t *a = random_i8(&rng, asize, ci == 0), *b = random_i8(&rng, bsize, ci == 0);
    int32_t *c = kiln_test_alloc(total, sizeof *c), *ref = kiln_test_alloc(M * N, sizeof *ref);
    void *da = kiln_test_input(&run, a, asize), *db = kiln_test_input(&run, b, bsize);
    void *dc = kiln_test_output(&run, total * sizeof *c);
    int32_t m32 = cfgs[ci].M, n32 = cfgs[ci].N, k32 = cfgs[ci].K;
    int32_t sam32 = (int32_t)sam, sak32 = (int32_t)sak, sbk32 = (int32_t)sbk, sbn32 = (int32_t)sbn;
    int32_t scm32 = (int32_t)scm;
    void *args[] = {&da, &db, &dc, &m32, &n32, &k32, &sam32, &sak32, &sbk32, &sbn32, &scm32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(M, (size_t)cfgs[ci].bm),
                     kiln_test_cdiv(N, (size_t)cfgs[ci].bn), args);
    kiln_test_fetch(&run, c, dc, total * sizeof *c);

    kiln_test_check_untouched(&run, "c", c, sizeof *c, total, M, N, scm);
    int32_t *got = kiln_test_alloc(M * N, sizeof *got);
    for (size_t r = 0; r < M; r++) memcpy(got + r * N, c + r * scm, N * sizeof *got);
    kiln_ref_matmul_i8(a, sam, sak, b, sbk, sbn, ref, M, N, K);
    check_equal_i32(&run, "c", got, ref, M * N);
    all_ok &= kiln_test_end(&run);
    free(a), free(b), free(c), free(ref), free(got);
  }
  return all_ok;
}

/* The three forms of dot_i8_forms on one block (K <= BK = 32): dot(a, b); dot(a, b, init) with
 * init[i][j] = 1000 i + j; and dot(b^T, a^T) = (a b)^T. Exact. */
static bool test_dot_i8_forms(KilnRtDevice *dev) {
  static const struct {
    int32_t M, N, K;
    bool extreme;
  } cfgs[] = {{32, 32, 32, false}, {20, 9, 29, true}, {1, 32, 1, false}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t M = (size_t)cfgs[ci].M, N = (size_t)cfgs[ci].N, K = (size_t)cfgs[ci].K;
    size_t n = 3 * M * N, total = n + TAIL_ELEMS;
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zux%zu%s", M, N, K, cfgs[ci].extreme ? " extremes" : "");
    KilnTestRun run;
    run_begin(&run, dev, "dot_i8_forms", NULL, 0, shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 740 + ci);
    int8_t *a = random_i8(&rng, M * K, cfgs[ci].extreme);
    int8_t *bt = random_i8(&rng, N * K, cfgs[ci].extreme); /* B^T: N rows of K */
    int32_t *out = kiln_test_alloc(total, sizeof *out), *ref = kiln_test_alloc(n, sizeof *ref);
    void *da = kiln_test_input(&run, a, M * K), *db = kiln_test_input(&run, bt, N * K);
    void *dout = kiln_test_output(&run, total * sizeof *out);
    int32_t m32 = cfgs[ci].M, n32 = cfgs[ci].N, k32 = cfgs[ci].K;
    void *args[] = {&da, &db, &dout, &m32, &n32, &k32};
    kiln_test_launch(&run, run.fn, 1, 1, args);
    kiln_test_fetch(&run, out, dout, total * sizeof *out);

    kiln_test_check_untouched(&run, "out", out, sizeof *out, total, 1, n, total);
    kiln_ref_matmul_i8(a, K, 1, bt, 1, K, ref, M, N, K); /* b[k][j] = bt[j][k] */
    for (size_t i = 0; i < M; i++)
      for (size_t j = 0; j < N; j++) {
        ref[M * N + i * N + j] = ref[i * N + j] + (int32_t)(1000 * i + j);
        ref[2 * M * N + j * M + i] = ref[i * N + j];
      }
    check_equal_i32(&run, "dot(a, b)", out, ref, M * N);
    check_equal_i32(&run, "dot(a, b, init)", out + M * N, ref + M * N, M * N);
    check_equal_i32(&run, "dot(b^T, a^T)", out + 2 * M * N, ref + 2 * M * N, M * N);
    all_ok &= kiln_test_end(&run);
    free(a), free(bt), free(out), free(ref);
  }
  return all_ok;
}

/* ---- int_semantics -------------------------------------------------------------------------- */

/* Exact: every plane is integer arithmetic. Half the values are small (|a| <= 40, b in -9..9,
 * not 0: the signs of / and %, shifts of negatives), half span i32 (wrapping products, the low
 * byte, cdiv's wrapping sum near 2^31); a = -2^31 never meets b = -1. */
static bool test_int_semantics(KilnRtDevice *dev) {
  static const struct {
    int32_t n, block;
  } cfgs[] = {{1000, 256}, {4096, 1024}, {77, 1024}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, total = 6 * n + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[32];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "int_semantics", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 780 + ci);
    int32_t *x = kiln_test_alloc(n, 4), *y = kiln_test_alloc(n, 4);
    for (size_t i = 0; i < n; i++) {
      uint64_t r = kiln_ref_rng_next(&rng);
      bool small = i % 2 == 0;
      x[i] = small ? (int32_t)(r % 81) - 40 : (int32_t)(uint32_t)r;
      int32_t b = small ? (int32_t)((r >> 32) % 19) - 9 : (int32_t)(r >> 32);
      y[i] = b == 0 || (b == -1 && x[i] == INT32_MIN) ? 3 : b;
    }
    int32_t *out = kiln_test_alloc(total, 4), *ref = kiln_test_alloc(6 * n, 4);
    void *dx = kiln_test_input(&run, x, n * 4), *dy = kiln_test_input(&run, y, n * 4);
    void *dout = kiln_test_output(&run, total * 4);
    int32_t n32 = cfgs[ci].n;
    void *args[] = {&dx, &dy, &dout, &n32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(n, (size_t)cfgs[ci].block), 1, args);
    kiln_test_fetch(&run, out, dout, total * 4);
    kiln_test_check_untouched(&run, "out", out, 4, total, 1, 6 * n, total);
    kiln_ref_int_semantics(x, y, ref, n);
    static const char *const planes[] = {"a / b",     "a % b",   "a >> 3",
                                         "a * 65537", "a as i8", "cdiv(a, 7)"};
    for (size_t p = 0; p < 6; p++) check_equal_i32(&run, planes[p], out + p * n, ref + p * n, n);
    all_ok &= kiln_test_end(&run);
    free(x), free(y), free(out), free(ref);
  }
  return all_ok;
}

/* ---- small_dots --------------------------------------------------------------------------- */

/* Each dot is one program's whole problem (a grid of 1), at 1 and 4 warps on emu. The f16 dot's
 * products are exact in f32 and its 16 additions, in whatever order the lowering takes, each
 * round once relative to at most sum |a_ik b_kj| <= 16: 16 * 16 * 2^-24 < 2e-5 absolute, the
 * tolerance with floor 1; the f32 dot's two products and one addition round at most 3 times,
 * 3 * 2^-24 * sum |terms| <= 2e-6 of values in [-1, 1): 1e-6 relative, floor 1, leaves that to
 * the rounding; the i8 dot is exact. */
static bool test_small_dots(KilnRtDevice *dev) {
  KilnTestRun run;
  run_begin(&run, dev, "small_dots", NULL, 0, "16x16x16 f16, 4x8x2 f32, 16x8x4 i8");
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, 760);
  uint16_t *a = random_f16(&rng, 256, -1.0f, 1.0f), *b = random_f16(&rng, 256, -1.0f, 1.0f);
  float *x = kiln_test_random_f32(&rng, 8, -1.0f, 1.0f), *y = kiln_test_random_f32(&rng, 16, -1, 1);
  int8_t *p = random_i8(&rng, 64, false), *q = random_i8(&rng, 32, true);
  size_t t1 = 256 + TAIL_ELEMS, t2 = 32 + TAIL_ELEMS, t3 = 128 + TAIL_ELEMS;
  void *da = kiln_test_input(&run, a, 512), *db = kiln_test_input(&run, b, 512);
  void *dx = kiln_test_input(&run, x, 32), *dy = kiln_test_input(&run, y, 64);
  void *dp = kiln_test_input(&run, p, 64), *dq = kiln_test_input(&run, q, 32);
  void *d1 = kiln_test_output(&run, t1 * 4), *d2 = kiln_test_output(&run, t2 * 4);
  void *d3 = kiln_test_output(&run, t3 * 4);
  void *args[] = {&da, &db, &dx, &dy, &dp, &dq, &d1, &d2, &d3};
  kiln_test_launch(&run, run.fn, 1, 1, args);
  float *o1 = kiln_test_alloc(t1, 4), *o2 = kiln_test_alloc(t2, 4);
  int32_t *o3 = kiln_test_alloc(t3, 4);
  kiln_test_fetch(&run, o1, d1, t1 * 4);
  kiln_test_fetch(&run, o2, d2, t2 * 4);
  kiln_test_fetch(&run, o3, d3, t3 * 4);
  kiln_test_check_untouched(&run, "o1", o1, 4, t1, 1, 256, t1);
  kiln_test_check_untouched(&run, "o2", o2, 4, t2, 1, 32, t2);
  kiln_test_check_untouched(&run, "o3", o3, 4, t3, 1, 128, t3);
  float *r1 = kiln_test_alloc(256, 4), *r2 = kiln_test_alloc(32, 4);
  int32_t *r3 = kiln_test_alloc(128, 4);
  kiln_ref_matmul_f16(a, 16, 1, b, 16, 1, r1, 16, 16, 16);
  kiln_ref_matmul_f32(x, y, r2, 4, 8, 2);
  kiln_ref_matmul_i8(p, 4, 1, q, 8, 1, r3, 16, 8, 4);
  check_close(&run, "f16 16x16x16", o1, r1, 256, 1.0, 2e-5);
  check_close(&run, "f32 4x8x2", o2, r2, 32, 1.0, 1e-6);
  check_equal_i32(&run, "i8 16x8x4", o3, r3, 128);
  bool ok = kiln_test_end(&run);
  free(a), free(b), free(x), free(y), free(p), free(q), free(o1), free(o2), free(o3);
  free(r1), free(r2), free(r3);
  return ok;
}

/* ---- dropout_rand ------------------------------------------------------------------------- */

/* The GPU lowering compares rand with p as integers (the word's top 24 bits against a bound
 * from p, docs/gpu-lowering.md "Random numbers"), so the configurations also put p where an
 * off-by-one bound shows: exactly at one element's number (`at`: p = that element's r, which
 * must not be kept, while the next representable r above it is), at 0 (r = 0 not kept), below
 * 0 (all kept), at 1 - 2^-24 and 1 (none) and NaN (none). */
static bool test_dropout_rand(KilnRtDevice *dev) {
  static const struct {
    int32_t n, block;
    float p;
    int32_t seed, at; /* at >= 0: p is the reference's r[at] */
  } cfgs[] = {
      {1000, 256, 0.3f, 1234, -1},      {5000, 1024, 0.5f, -7, -1}, {4096, 512, 0.1f, 0, -1},
      {77, 2048, 0.9f, 2147483647, -1}, {3000, 512, 0.0f, 99, 17},  {3000, 1024, 0.0f, 99, 2048},
      {3000, 256, 0.0f, 5, -1},         {3000, 256, -0.25f, 5, -1}, {3000, 256, 0.99999994f, 5, -1},
      {3000, 256, 1.0f, 5, -1},         {3000, 256, NAN, 5, -1}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, total = n + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 700 + ci);
    float *x = kiln_test_random_f32(&rng, n, -1.0f, 1.0f);
    float *r = kiln_test_alloc(total, sizeof *r), *y = kiln_test_alloc(total, sizeof *y);
    float *ref_r = kiln_test_alloc(n, sizeof *ref_r), *ref_y = kiln_test_alloc(n, sizeof *ref_y);
    int32_t n32 = cfgs[ci].n, seed = cfgs[ci].seed;
    float p = cfgs[ci].p;
    if (cfgs[ci].at >= 0) { /* p on an element's number: the boundary itself */
      kiln_ref_dropout(x, ref_r, ref_y, n, p, seed);
      p = ref_r[cfgs[ci].at];
    }
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu p=%.9g seed=%" PRId32, n, (double)p, cfgs[ci].seed);
    KilnTestRun run;
    run_begin(&run, dev, "dropout_rand", defs, COUNT(defs), shape);

    void *dx = kiln_test_input(&run, x, n * sizeof *x);
    void *dr = kiln_test_output(&run, total * sizeof *r);
    void *dy = kiln_test_output(&run, total * sizeof *y);
    void *args[] = {&dx, &dr, &dy, &n32, &p, &seed};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(n, (size_t)cfgs[ci].block), 1, args);
    kiln_test_fetch(&run, r, dr, total * sizeof *r);
    kiln_test_fetch(&run, y, dy, total * sizeof *y);

    kiln_test_check_untouched(&run, "r", r, sizeof *r, total, 1, n, total);
    kiln_test_check_untouched(&run, "y", y, sizeof *y, total, 1, n, total);
    kiln_ref_dropout(x, ref_r, ref_y, n, p, seed);
    check_close(&run, "r", r, ref_r, n, 1.0, 0.0); /* integer arithmetic: bit-exact */
    check_close(&run, "y", y, ref_y, n, 1.0, 1e-6);
    all_ok &= kiln_test_end(&run);
    free(x), free(r), free(y), free(ref_r), free(ref_y);
  }
  return all_ok;
}

/* ---- atomic_accum ------------------------------------------------------------------------- */

/* Integer-valued data, so every f32 sum is exact in any order: an element updated twice (a
 * replicated layout element issuing its atomic from several threads) changes the result. */
static bool test_atomic_accum(KilnRtDevice *dev) {
  static const struct {
    int32_t n, block;
  } cfgs[] = {{1000, 256}, {300, 128}, {5000, 1024}, {1, 128}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, block = (size_t)cfgs[ci].block;
    size_t grid = kiln_test_cdiv(n, block), npad = grid * block;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "atomic_accum", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 900 + ci);
    float *x = kiln_test_alloc(n, sizeof *x), *slots = kiln_test_alloc(n, sizeof *slots);
    int32_t *bin = kiln_test_alloc(n, sizeof *bin);
    for (size_t i = 0; i < n; i++) {
      x[i] = (float)(int)(kiln_ref_rng_next(&rng) % 17) - 8.0f;
      slots[i] = (float)(int)(kiln_ref_rng_next(&rng) % 1000) + 1.0f;
      bin[i] = (int32_t)(kiln_ref_rng_next(&rng) % 8);
    }
    float zf[16] = {0};
    int32_t zi[1] = {-1};
    void *dx = kiln_test_input(&run, x, n * sizeof *x),
         *dbin = kiln_test_input(&run, bin, n * sizeof *bin);
    void *dslots = kiln_test_input(&run, slots, n * sizeof *slots);
    void *dprev = kiln_test_output(&run, npad * sizeof(float));
    void *dhist = kiln_test_input(&run, zf, 8 * sizeof(float));
    void *dtotal = kiln_test_input(&run, zf, sizeof(float));
    void *dcount = kiln_test_input(&run, zf, sizeof(int32_t));
    void *dpeak = kiln_test_input(&run, zi, sizeof(int32_t));
    void *dsmall = kiln_test_input(&run, zf, 16 * sizeof(float));
    int32_t n32 = cfgs[ci].n, npad32 = (int32_t)npad;
    void *args[] = {&dx,     &dbin,  &dslots, &dprev, &dhist, &dtotal,
                    &dcount, &dpeak, &dsmall, &n32,   &npad32};
    kiln_test_launch(&run, run.fn, (uint32_t)grid, 1, args);
    float *prev = kiln_test_alloc(npad, sizeof *prev),
          *slots_got = kiln_test_alloc(n, sizeof *slots_got);
    float hist[8], total, small[16];
    int32_t count, peak;
    kiln_test_fetch(&run, prev, dprev, npad * sizeof *prev);
    kiln_test_fetch(&run, slots_got, dslots, n * sizeof *slots_got);
    kiln_test_fetch(&run, hist, dhist, sizeof hist);
    kiln_test_fetch(&run, &total, dtotal, sizeof total);
    kiln_test_fetch(&run, &count, dcount, sizeof count);
    kiln_test_fetch(&run, &peak, dpeak, sizeof peak);
    kiln_test_fetch(&run, small, dsmall, sizeof small);

    float rhist[8] = {0}, rtotal = 0, rsmall[16];
    float *rprev = kiln_test_alloc(npad, sizeof *rprev);
    int32_t rcount = (int32_t)n, rpeak = -1;
    for (size_t i = 0; i < n; i++) {
      rhist[bin[i]] += x[i];
      rtotal += x[i];
      rpeak = bin[i] > rpeak ? bin[i] : rpeak;
      rprev[i] = slots[i];
    }
    for (int r = 0; r < 16; r++)
      rsmall[r] = (float)((double)grid * r + (double)grid * (double)(grid - 1) / 2.0);
    check_close(&run, "hist", hist, rhist, 8, 1.0, 0.0);
    check_close(&run, "total", &total, &rtotal, 1, 1.0, 0.0);
    check_equal_i32(&run, "count", &count, &rcount, 1);
    check_equal_i32(&run, "peak", &peak, &rpeak, 1);
    check_close(&run, "small", small, rsmall, 16, 1.0, 0.0);
    check_close(&run, "prev", prev, rprev, npad, 1.0, 0.0);
    check_close(&run, "slots", slots_got, x, n, 1.0, 0.0);
    all_ok &= kiln_test_end(&run);
    free(x), free(slots), free(bin), free(prev), free(slots_got), free(rprev);
  }
  return all_ok;
}

/* ---- float_convert ------------------------------------------------------------------------ */

/* A 16-bit float pattern's NaN-ness: exponent all ones, mantissa not zero (exp_mask: 0x7c00 for
 * f16, 0x7f80 for bf16). */
static bool is_nan16(uint16_t h, uint16_t exp_mask) {
  return (h & exp_mask) == exp_mask && (h & (uint16_t)~(exp_mask | 0x8000u)) != 0;
}

/* Conversions to a 16-bit type: every result the reference's bits, except that where the
 * reference gives a NaN any NaN will do (hardware makes NaNs canonical or quiet in its own way);
 * mismatches are counted and the first one reported. */
static void check_bits16(KilnTestRun *run, const char *what, const uint16_t *got,
                         const uint32_t *in, uint16_t (*ref)(float), uint16_t exp_mask, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    float f;
    memcpy(&f, &in[i], sizeof f);
    uint16_t want = ref(f);
    bool same = got[i] == want || (is_nan16(want, exp_mask) && is_nan16(got[i], exp_mask));
    if (!same && bad++ == 0)
      kiln_test_fail(run, "%s: f32 0x%08" PRIx32 " gave 0x%04x, the reference 0x%04x", what, in[i],
                     got[i], want);
  }
  if (bad > 1)
    kiln_test_fail(run, "%s: %zu of %zu results differ from the reference", what, bad, n);
}

static void check_bits32(KilnTestRun *run, const char *what, const float *got, const uint16_t *in,
                         float (*ref)(uint16_t), size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    float want = ref(in[i]);
    bool same = memcmp(&got[i], &want, sizeof want) == 0 || (isnan(want) && isnan(got[i]));
    if (!same && bad++ == 0)
      kiln_test_fail(run, "%s: 0x%04x gave %a, the reference %a", what, in[i], (double)got[i],
                     (double)want);
  }
  if (bad > 1)
    kiln_test_fail(run, "%s: %zu of %zu results differ from the reference", what, bad, n);
}

/* Every f32 high half with low halves that hit each rounding case of both 16-bit types (exact,
 * just above zero, f16 ties and near-ties at bit 12, bf16 ties and near-ties at bit 15, all
 * ones) and one random low half: normals, subnormals, overflow to inf, inf and NaNs of every
 * payload, with both signs. Every 16-bit pattern is widened. Bit for bit but for NaN payloads. */
static bool test_float_convert(KilnRtDevice *dev) {
  static const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001,
                                  0x3000, 0x7fff, 0x8000, 0x8001, 0xffff};
  static const int32_t blocks[] = {1024, 256};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(blocks); ci++) {
    size_t per = COUNT(lows) + 1, n = 65536 * per, total = n + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", blocks[ci]}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "float_convert", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 900 + ci);
    uint32_t *x = kiln_test_alloc(n, sizeof *x);
    uint16_t *in16 = kiln_test_alloc(n, sizeof *in16);
    for (size_t hi = 0; hi < 65536; hi++)
      for (size_t k = 0; k < per; k++) {
        uint32_t low = k < COUNT(lows) ? lows[k] : kiln_ref_rng_next(&rng) & 0xffffu;
        x[hi * per + k] = (uint32_t)hi << 16 | low;
      }
    for (size_t i = 0; i < n; i++) in16[i] = (uint16_t)(i * 7919u); /* every pattern, shuffled */
    uint16_t *h = kiln_test_alloc(total, sizeof *h), *b = kiln_test_alloc(total, sizeof *b);
    float *hx = kiln_test_alloc(total, sizeof *hx), *bx = kiln_test_alloc(total, sizeof *bx);
    void *dx = kiln_test_input(&run, x, n * sizeof *x);
    void *dhin = kiln_test_input(&run, in16, n * sizeof *in16);
    void *dbin = kiln_test_input(&run, in16, n * sizeof *in16);
    void *dh = kiln_test_output(&run, total * sizeof *h),
         *db = kiln_test_output(&run, total * sizeof *b);
    void *dhx = kiln_test_output(&run, total * sizeof *hx),
         *dbx = kiln_test_output(&run, total * sizeof *bx);
    int32_t n32 = (int32_t)n;
    void *args[] = {&dx, &dh, &db, &dhin, &dbin, &dhx, &dbx, &n32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(n, (size_t)blocks[ci]), 1, args);
    kiln_test_fetch(&run, h, dh, total * sizeof *h);
    kiln_test_fetch(&run, b, db, total * sizeof *b);
    kiln_test_fetch(&run, hx, dhx, total * sizeof *hx);
    kiln_test_fetch(&run, bx, dbx, total * sizeof *bx);
    if (run.ok) {
      kiln_test_check_untouched(&run, "h", h, sizeof *h, total, 1, n, total);
      kiln_test_check_untouched(&run, "bx", bx, sizeof *bx, total, 1, n, total);
      check_bits16(&run, "f32 -> f16", h, x, kiln_ref_f32_to_f16, 0x7c00, n);
      check_bits16(&run, "f32 -> bf16", b, x, kiln_ref_f32_to_bf16, 0x7f80, n);
      check_bits32(&run, "f16 -> f32", hx, in16, kiln_ref_f16_to_f32, n);
      check_bits32(&run, "bf16 -> f32", bx, in16, kiln_ref_bf16_to_f32, n);
    }
    all_ok &= kiln_test_end(&run);
    free(x), free(in16), free(h), free(b), free(hx), free(bx);
  }
  return all_ok;
}

/* ---- small_int_sum ------------------------------------------------------------------------ */

/* Reductions of i1/i8/i16 tiles, which run in i32; everything is integer, so exact. The first
 * configuration is issue 15's: 1000 lanes of which 334 are set (every third) once summed to 6,
 * the count's parity in i1; the second sums 1024 i8 ones (once 0). Flags: every third, random
 * with probability 1/3 (as i8 values, so the != 0 in the kernel sees negatives too), all, none. */
enum { FLAGS_THIRD, FLAGS_RANDOM, FLAGS_ALL, FLAGS_NONE };
enum { FILL_RANDOM = 1000 }; /* a byte/short fill outside both ranges: random values */

static bool test_small_int_sum(KilnRtDevice *dev) {
  static const struct {
    int32_t n, block;
    int flags, bytes, shorts;
  } cfgs[] = {{1000, 1024, FLAGS_THIRD, 1, FILL_RANDOM},
              {1024, 1024, FLAGS_RANDOM, 1, 32767},
              {5000, 256, FLAGS_RANDOM, FILL_RANDOM, FILL_RANDOM},
              {300, 128, FLAGS_ALL, -128, -32768},
              {77, 128, FLAGS_NONE, FILL_RANDOM, FILL_RANDOM}};
  static const char *const flag_names[] = {"every 3rd", "random 1/3", "all", "none"};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, block = (size_t)cfgs[ci].block, grid = kiln_test_cdiv(n, block);
    size_t ncounts = 8 * grid, ctotal = ncounts + TAIL_ELEMS, btotal = n + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu flags %s", n, flag_names[cfgs[ci].flags]);
    KilnTestRun run;
    run_begin(&run, dev, "small_int_sum", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 1000 + ci);
    int8_t *flags = kiln_test_alloc(n, 1), *bytes = kiln_test_alloc(n, 1);
    int16_t *shorts = kiln_test_alloc(n, sizeof *shorts);
    for (size_t i = 0; i < n; i++) {
      uint64_t r = kiln_ref_rng_next(&rng);
      switch (cfgs[ci].flags) {
      case FLAGS_THIRD: flags[i] = i % 3 == 0; break;
      case FLAGS_RANDOM: flags[i] = r % 3 == 0 ? (int8_t)(1 + (r >> 8) % 255) : 0; break;
      case FLAGS_ALL: flags[i] = 1; break;
      default: flags[i] = 0; break;
      }
      bytes[i] =
          (int8_t)(cfgs[ci].bytes == FILL_RANDOM ? (int)((r >> 16) & 0xFF) - 128 : cfgs[ci].bytes);
      shorts[i] = (int16_t)(cfgs[ci].shorts == FILL_RANDOM ? (int)((r >> 24) & 0xFFFF) - 32768
                                                           : cfgs[ci].shorts);
    }
    int32_t *counts = kiln_test_alloc(ctotal, sizeof *counts),
            *bits = kiln_test_alloc(btotal, sizeof *bits);
    int32_t *rcounts = kiln_test_alloc(ncounts, sizeof *rcounts),
            *rbits = kiln_test_alloc(n, sizeof *rbits);
    void *dflags = kiln_test_input(&run, flags, n), *dbytes = kiln_test_input(&run, bytes, n);
    void *dshorts = kiln_test_input(&run, shorts, n * sizeof *shorts);
    void *dcounts = kiln_test_output(&run, ctotal * sizeof *counts);
    void *dbits = kiln_test_output(&run, btotal * sizeof *bits);
    int32_t n32 = cfgs[ci].n;
    void *args[] = {&dflags, &dbytes, &dshorts, &dcounts, &dbits, &n32};
    kiln_test_launch(&run, run.fn, (uint32_t)grid, 1, args);
    kiln_test_fetch(&run, counts, dcounts, ctotal * sizeof *counts);
    kiln_test_fetch(&run, bits, dbits, btotal * sizeof *bits);

    kiln_test_check_untouched(&run, "counts", counts, sizeof *counts, ctotal, 1, ncounts, ctotal);
    kiln_test_check_untouched(&run, "bits", bits, sizeof *bits, btotal, 1, n, btotal);
    kiln_ref_small_int_sum(flags, bytes, shorts, rcounts, rbits, n, block);
    check_equal_i32(&run, "counts", counts, rcounts, ncounts);
    check_equal_i32(&run, "bits", bits, rbits, n);
    all_ok &= kiln_test_end(&run);
    free(flags), free(bytes), free(shorts), free(counts), free(bits), free(rcounts), free(rbits);
  }
  return all_ok;
}

/* ---- accum_loop ---------------------------------------------------------------------------- */

/* Compound assignments in a loop-carried accumulator (issue 15): every lane runs the columns in
 * the reference's order, so the integer hash and counter are exact; the f32 results allow 1e-5
 * of their size, because the GPU lowering may fuse a multiply and an add (one rounding less), and
 * a sum of 37 such terms moves by a few units in the last place. Rows past a program's first
 * block and a ragged last program are covered by the shapes. */
static bool test_accum_loop(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, block;
  } cfgs[] = {{300, 37, 128}, {1, 1, 32}, {1000, 5, 256}, {64, 16, 32}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols;
    size_t nf = 3 * rows, ni = 2 * rows, ftotal = nf + TAIL_ELEMS, itotal = ni + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "rows=%zu cols=%zu", rows, cols);
    KilnTestRun run;
    run_begin(&run, dev, "accum_loop", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 1100 + ci);
    float *x = kiln_test_random_f32(&rng, rows * cols, -4.0f, 4.0f);
    float *sums = kiln_test_alloc(ftotal, sizeof *sums),
          *rsums = kiln_test_alloc(nf, sizeof *rsums);
    int32_t *hashes = kiln_test_alloc(itotal, sizeof *hashes),
            *rhashes = kiln_test_alloc(ni, sizeof *rhashes);
    void *dx = kiln_test_input(&run, x, rows * cols * sizeof *x);
    void *dsums = kiln_test_output(&run, ftotal * sizeof *sums);
    void *dhashes = kiln_test_output(&run, itotal * sizeof *hashes);
    int32_t r32 = cfgs[ci].rows, c32 = cfgs[ci].cols;
    void *args[] = {&dx, &dsums, &dhashes, &r32, &c32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(rows, (size_t)cfgs[ci].block), 1, args);
    kiln_test_fetch(&run, sums, dsums, ftotal * sizeof *sums);
    kiln_test_fetch(&run, hashes, dhashes, itotal * sizeof *hashes);

    kiln_test_check_untouched(&run, "sums", sums, sizeof *sums, ftotal, 1, nf, ftotal);
    kiln_test_check_untouched(&run, "hashes", hashes, sizeof *hashes, itotal, 1, ni, itotal);
    kiln_ref_accum_loop(x, rsums, rhashes, rows, cols);
    check_close(&run, "sums", sums, rsums, nf, 1.0, 1e-5);
    check_equal_i32(&run, "hashes", hashes, rhashes, ni);
    all_ok &= kiln_test_end(&run);
    free(x), free(sums), free(rsums), free(hashes), free(rhashes);
  }
  return all_ok;
}

/* ---- row kernels with an f32 and an i32 output ------------------------------------------------ */

/* The control-flow kernels of issue 15 share one shape: one or two random f32 inputs of
 * rows x cols, an f32 output of nf and an i32 output of ni values per row, scalar arguments
 * rows, cols and (some) an f32 limit. One helper runs a configuration of any of them: the
 * outputs against the kernel's C reference (the integers exactly, the f32 values within 1e-5
 * of their size with a floor of 1, each test saying why that bound holds) and the tails past
 * them untouched, so that programs past the last row, where a test launches some, write nothing. */
typedef void (*RowsRef)(const float *x, const float *y, float *rf, int32_t *ri, size_t rows,
                        size_t cols, float limit);

typedef struct {
  const char *kernel;
  int32_t block; /* the BLOCK define; 0: the kernel has none */
  int32_t rows, cols;
  size_t nf, ni;   /* f32 and i32 outputs per row */
  float lo, hi;    /* the inputs' range */
  bool two_inputs; /* x and y (else x only) */
  bool has_limit;  /* a trailing f32 `limit` argument */
  float limit;
  bool block_of_rows;      /* a program per BLOCK rows (else a program per row) */
  uint32_t extra_programs; /* programs past the last row's, which must write nothing */
  uint64_t seed;
  RowsRef ref;
} RowsCase;

static bool run_rows_case(KilnRtDevice *dev, const RowsCase *c) {
  size_t rows = (size_t)c->rows, cols = (size_t)c->cols;
  size_t nf = c->nf * rows, ni = c->ni * rows, ftotal = nf + TAIL_ELEMS, itotal = ni + TAIL_ELEMS;
  KilnDefine defs[] = {{"BLOCK", c->block}};
  char shape[64];
  if (c->has_limit)
    snprintf(shape, sizeof shape, "rows=%zu cols=%zu limit=%g", rows, cols, (double)c->limit);
  else
    snprintf(shape, sizeof shape, "rows=%zu cols=%zu", rows, cols);
  KilnTestRun run;
  run_begin(&run, dev, c->kernel, c->block ? defs : NULL, c->block ? 1 : 0, shape);

  KilnRefRng rng;
  kiln_ref_rng_init(&rng, c->seed);
  float *x = kiln_test_random_f32(&rng, rows * cols, c->lo, c->hi);
  float *y = c->two_inputs ? kiln_test_random_f32(&rng, rows * cols, c->lo, c->hi) : NULL;
  float *outf = kiln_test_alloc(ftotal, sizeof *outf), *rf = kiln_test_alloc(nf, sizeof *rf);
  int32_t *outi = kiln_test_alloc(itotal, sizeof *outi), *ri = kiln_test_alloc(ni, sizeof *ri);
  void *dx = kiln_test_input(&run, x, rows * cols * sizeof *x);
  void *dy = y ? kiln_test_input(&run, y, rows * cols * sizeof *y) : NULL;
  void *df = kiln_test_output(&run, ftotal * sizeof *outf);
  void *di = kiln_test_output(&run, itotal * sizeof *outi);
  int32_t r32 = c->rows, c32 = c->cols;
  float limit = c->limit;
  void *args[7];
  size_t na = 0;
  args[na++] = &dx;
  if (y) args[na++] = &dy;
  args[na++] = &df;
  args[na++] = &di;
  args[na++] = &r32;
  args[na++] = &c32;
  if (c->has_limit) args[na++] = &limit;
  uint32_t programs = c->block_of_rows ? kiln_test_cdiv(rows, (size_t)c->block) : (uint32_t)rows;
  kiln_test_launch(&run, run.fn, programs + c->extra_programs, 1, args);
  kiln_test_fetch(&run, outf, df, ftotal * sizeof *outf);
  kiln_test_fetch(&run, outi, di, itotal * sizeof *outi);

  kiln_test_check_untouched(&run, "outf", outf, sizeof *outf, ftotal, 1, nf, ftotal);
  kiln_test_check_untouched(&run, "outi", outi, sizeof *outi, itotal, 1, ni, itotal);
  c->ref(x, y, rf, ri, rows, cols, c->limit);
  check_close(&run, "outf", outf, rf, nf, 1.0, 1e-5);
  check_equal_i32(&run, "outi", outi, ri, ni);
  bool ok = kiln_test_end(&run);
  free(x), free(y), free(outf), free(rf), free(outi), free(ri);
  return ok;
}

/* One configuration of a row kernel's test: rows, cols, the limit argument (where the kernel has
 * one) and the BLOCK define (0: the case's own). */
typedef struct {
  int32_t rows, cols;
  float limit;
  int32_t block;
} RowsShape;

/* Runs `base` once per shape, the i-th with seed base.seed + i. */
static bool run_rows_shapes(KilnRtDevice *dev, RowsCase base, const RowsShape *shapes, size_t n) {
  bool all_ok = true;
  for (size_t i = 0; i < n; i++) {
    RowsCase c = base;
    c.rows = shapes[i].rows, c.cols = shapes[i].cols, c.limit = shapes[i].limit;
    if (shapes[i].block) c.block = shapes[i].block;
    c.seed = base.seed + i;
    all_ok &= run_rows_case(dev, &c);
  }
  return all_ok;
}

/* ---- pow_countdown ------------------------------------------------------------------------- */

/* `**`, count-down ranges, i1 order and the i8 literal -128 (issue 15). The integers are exact;
 * the f32 results allow 1e-5 of their size for the same reason as accum_loop (a multiply and an
 * add the GPU lowering may fuse); v^-2 of a first element near 0 is large but finite and compared
 * relatively. cols = 1 makes the count-down loops run once; the -2 step range never runs. */
static void ref_pow_countdown(const float *x, const float *y, float *rf, int32_t *ri, size_t rows,
                              size_t cols, float limit) {
  (void)y, (void)limit;
  kiln_ref_pow_countdown(x, rf, ri, rows, cols);
}

static bool test_pow_countdown(KilnRtDevice *dev) {
  static const RowsShape shapes[] = {{300, 37, 0, 128}, {1, 1, 0, 32}, {200, 8, 0, 32}};
  RowsCase c = {.kernel = "pow_countdown",
                .nf = 4,
                .ni = 4,
                .lo = -4.0f,
                .hi = 4.0f,
                .block_of_rows = true,
                .seed = 1200,
                .ref = ref_pow_countdown};
  return run_rows_shapes(dev, c, shapes, COUNT(shapes));
}

/* ---- builtins_basic ------------------------------------------------------------------------ */

/* fma, pow, the *_like builtins, expand_dims / broadcast_to, reductions over every axis, scalar
 * max / min (issue 15).  The integers are exact; so are fma (one rounding on every target), the
 * product's rounding error (exactly representable, scaled by 2^30: 0 where fma is not fused),
 * the maxima and minima.  pow is exp2(c log2 x) in f32 against the double pow, |c log2 x| <= 9:
 * about 9 * 2^-24 of relative error from the rounded exponent (2^-22 per approximate instruction
 * on the GPU), far below 1e-5; the row sum of four products is in another order on the GPU. */
static size_t g_builtins_block; /* the BLOCK of the configuration the reference is for */

static void ref_builtins_basic(const float *x, const float *y, float *rf, int32_t *ri, size_t rows,
                               size_t cols, float limit) {
  (void)limit;
  kiln_ref_builtins_basic(x, y, rf, ri, rows, cols, g_builtins_block);
}

static bool test_builtins_basic(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, block;
  } cfgs[] = {{300, 37, 128}, {1, 2, 32}, {200, 3, 32}, {77, 5, 128}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    g_builtins_block = (size_t)cfgs[ci].block;
    RowsCase c = {.kernel = "builtins_basic",
                  .block = cfgs[ci].block,
                  .rows = cfgs[ci].rows,
                  .cols = cfgs[ci].cols,
                  .nf = 9,
                  .ni = 6,
                  .lo = -4.0f,
                  .hi = 4.0f,
                  .two_inputs = true,
                  .block_of_rows = true,
                  .seed = 2000 + ci,
                  .ref = ref_builtins_basic};
    all_ok &= run_rows_case(dev, &c);
  }
  return all_ok;
}

/* ---- cas_lock ------------------------------------------------------------------------------ */

/* atomic_cas as a spin lock, a CAS counter and element-wise (issue 15); all integers, so exact.
 * The programs run concurrently on the cpu device's thread pool, so a lock that let two of them
 * in at once would lose a row from the column sums; the tickets of the CAS loop are compared
 * sorted (which program drew which depends on the schedule), and must be 0 .. rows-1.  BLOCK is
 * 128 in every configuration: at 1 and 4 warps no two threads hold one column, which the
 * read-modify-write of the sums needs on the GPU (dsl/reference.md, "Memory semantics"). */
static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static bool test_cas_lock(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, block;
  } cfgs[] = {{300, 100, 128}, {1, 1, 128}, {64, 32, 128}, {1000, 7, 128}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols,
           block = (size_t)cfgs[ci].block;
    size_t n = rows * cols, nolds = rows * block;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "rows=%zu cols=%zu", rows, cols);
    KilnTestRun run;
    run_begin(&run, dev, "cas_lock", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 2100 + ci);
    int32_t *x = kiln_test_alloc(n, sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = (int32_t)(kiln_ref_rng_next(&rng) % 2001) - 1000;
    int32_t zeros[3] = {0, 0, 0}; /* owners, lock, ticket */
    int32_t *sums = kiln_test_alloc(cols + TAIL_ELEMS, sizeof *sums);
    int32_t *olds = kiln_test_alloc(nolds + TAIL_ELEMS, sizeof *olds);
    int32_t *tickets = kiln_test_alloc(rows + TAIL_ELEMS, sizeof *tickets);
    int32_t *cells = kiln_test_alloc(n, sizeof *cells), counters[3];
    int32_t *rsums = kiln_test_alloc(cols, sizeof *rsums),
            *rolds = kiln_test_alloc(nolds, sizeof *rolds);
    int32_t *rcells = kiln_test_alloc(n, sizeof *rcells),
            *rtickets = kiln_test_alloc(rows, sizeof *rtickets);
    memcpy(rcells, x, n * sizeof *x);
    void *dx = kiln_test_input(&run, x, n * sizeof *x);
    void *dcells = kiln_test_input(&run, x, n * sizeof *x);
    void *dsums = kiln_test_output(&run, (cols + TAIL_ELEMS) * sizeof *sums);
    void *downers = kiln_test_input(&run, zeros, sizeof zeros[0]);
    void *dlock = kiln_test_input(&run, zeros + 1, sizeof zeros[0]);
    void *dticket = kiln_test_input(&run, zeros + 2, sizeof zeros[0]);
    void *dtickets = kiln_test_output(&run, (rows + TAIL_ELEMS) * sizeof *tickets);
    void *dolds = kiln_test_output(&run, (nolds + TAIL_ELEMS) * sizeof *olds);
    int32_t c32 = cfgs[ci].cols;
    void *args[] = {&dx, &dcells, &dsums, &downers, &dlock, &dticket, &dtickets, &dolds, &c32};
    kiln_test_launch(&run, run.fn, (uint32_t)rows, 1, args);
    kiln_test_fetch(&run, sums, dsums, (cols + TAIL_ELEMS) * sizeof *sums);
    kiln_test_fetch(&run, olds, dolds, (nolds + TAIL_ELEMS) * sizeof *olds);
    kiln_test_fetch(&run, tickets, dtickets, (rows + TAIL_ELEMS) * sizeof *tickets);
    kiln_test_fetch(&run, cells, dcells, n * sizeof *cells);
    kiln_test_fetch(&run, counters, downers, sizeof counters[0]);
    kiln_test_fetch(&run, counters + 1, dlock, sizeof counters[0]);
    kiln_test_fetch(&run, counters + 2, dticket, sizeof counters[0]);

    kiln_test_check_untouched(&run, "sums", sums, sizeof *sums, cols + TAIL_ELEMS, 1, cols,
                              cols + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "olds", olds, sizeof *olds, nolds + TAIL_ELEMS, 1, nolds,
                              nolds + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "tickets", tickets, sizeof *tickets, rows + TAIL_ELEMS, 1, rows,
                              rows + TAIL_ELEMS);
    kiln_ref_cas_lock(x, rsums, rolds, rcells, rows, cols, block);
    int32_t rcounters[3] = {(int32_t)rows, 0, (int32_t)rows};
    for (size_t r = 0; r < rows; r++) rtickets[r] = (int32_t)r;
    qsort(tickets, rows, sizeof *tickets, cmp_i32);
    check_equal_i32(&run, "sums", sums, rsums, cols);
    check_equal_i32(&run, "olds", olds, rolds, nolds);
    check_equal_i32(&run, "cells", cells, rcells, n);
    check_equal_i32(&run, "owners, lock, ticket", counters, rcounters, 3);
    check_equal_i32(&run, "tickets (sorted)", tickets, rtickets, rows);
    all_ok &= kiln_test_end(&run);
    free(x), free(sums), free(olds), free(tickets), free(cells), free(rsums), free(rolds),
        free(rcells), free(rtickets);
  }
  return all_ok;
}

/* ---- scan_flip ----------------------------------------------------------------------------- */

/* flip, cumsum and cumprod (issue 15): the cpu target scans in order along the axis as the
 * reference does; the GPU targets regroup the sums and products (in the thread, a shuffle tree
 * over lanes, warps), so each f32 scan result is checked against the bound both orders keep
 * (kiln_ref_scan_flip_bound: any grouping of i + 1 terms is a tree of depth <= i), the flips and
 * pair sums bit for bit; the integers wrap as the reference's, exactly. */
static bool test_scan_flip(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, br, bc;
  } cfgs[] = {{100, 50, 16, 64},
              {1, 1, 4, 32},
              {37, 32, 4, 32},
              {64, 20, 16, 32},
              {23, 50, 5, 50}}; /* the last: cumsum/cumprod along 5 and 50 (cpu) */
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    if (!tiles_run_here(cfgs[ci].br, cfgs[ci].bc)) continue;
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols, bc = (size_t)cfgs[ci].bc;
    size_t plane = rows * bc, nf = 5 * plane, ni = 4 * plane;
    KilnDefine defs[] = {{"BR", cfgs[ci].br}, {"BC", cfgs[ci].bc}};
    char shape[64];
    snprintf(shape, sizeof shape, "rows=%zu cols=%zu", rows, cols);
    KilnTestRun run;
    run_begin(&run, dev, "scan_flip", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 2200 + ci);
    float *x = kiln_test_random_f32(&rng, rows * cols, -4.0f, 4.0f);
    float *outf = kiln_test_alloc(nf + TAIL_ELEMS, sizeof *outf),
          *rf = kiln_test_alloc(nf, sizeof *rf);
    int32_t *outi = kiln_test_alloc(ni + TAIL_ELEMS, sizeof *outi),
            *ri = kiln_test_alloc(ni, sizeof *ri);
    void *dx = kiln_test_input(&run, x, rows * cols * sizeof *x);
    void *df = kiln_test_output(&run, (nf + TAIL_ELEMS) * sizeof *outf);
    void *di = kiln_test_output(&run, (ni + TAIL_ELEMS) * sizeof *outi);
    int32_t r32 = cfgs[ci].rows, c32 = cfgs[ci].cols;
    void *args[] = {&dx, &df, &di, &r32, &c32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(rows, (size_t)cfgs[ci].br), 1, args);
    kiln_test_fetch(&run, outf, df, (nf + TAIL_ELEMS) * sizeof *outf);
    kiln_test_fetch(&run, outi, di, (ni + TAIL_ELEMS) * sizeof *outi);

    kiln_test_check_untouched(&run, "outf", outf, sizeof *outf, nf + TAIL_ELEMS, 1, nf,
                              nf + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "outi", outi, sizeof *outi, ni + TAIL_ELEMS, 1, ni,
                              ni + TAIL_ELEMS);
    kiln_ref_scan_flip(x, rf, ri, rows, cols, (size_t)cfgs[ci].br, bc);
    float *bound = kiln_test_alloc(nf, sizeof *bound);
    kiln_ref_scan_flip_bound(x, bound, rows, cols, (size_t)cfgs[ci].br, bc);
    check_within(&run, "outf", outf, rf, bound, nf);
    check_equal_i32(&run, "outi", outi, ri, ni);
    all_ok &= kiln_test_end(&run);
    free(x), free(outf), free(rf), free(outi), free(ri), free(bound);
  }
  return all_ok;
}

/* ---- scan_axes, scan_line ------------------------------------------------------------------ */

/* The element types scan_axes and scan_line are compiled for (the T parameter's numbers). */
typedef enum ScanType { SCAN_I32, SCAN_I64, SCAN_F16, SCAN_BF16, SCAN_F32, SCAN_F64 } ScanType;
static const struct {
  const char *name;
  int64_t number; /* the type parameter's value (dsl/reference.md) */
  size_t bytes;
} scan_types[] = {{"i32", 3, 4},  {"i64", 4, 8}, {"f16", 5, 2},
                  {"bf16", 6, 2}, {"f32", 7, 4}, {"f64", 8, 8}};

static void scan_put(ScanType t, void *buf, size_t i, double v, int64_t iv) {
  switch (t) {
  case SCAN_I32: ((int32_t *)buf)[i] = (int32_t)iv; break;
  case SCAN_I64: ((int64_t *)buf)[i] = iv; break;
  case SCAN_F16: ((uint16_t *)buf)[i] = kiln_ref_f32_to_f16((float)v); break;
  case SCAN_BF16: ((uint16_t *)buf)[i] = kiln_ref_f32_to_bf16((float)v); break;
  case SCAN_F32: ((float *)buf)[i] = (float)v; break;
  case SCAN_F64: ((double *)buf)[i] = v; break;
  }
}

static double scan_get(ScanType t, const void *buf, size_t i) {
  switch (t) {
  case SCAN_I32: return ((const int32_t *)buf)[i];
  case SCAN_I64: return (double)((const int64_t *)buf)[i];
  case SCAN_F16: return kiln_ref_f16_to_f32(((const uint16_t *)buf)[i]);
  case SCAN_BF16: return kiln_ref_bf16_to_f32(((const uint16_t *)buf)[i]);
  case SCAN_F32: return ((const float *)buf)[i];
  case SCAN_F64: return ((const double *)buf)[i];
  }
  return NAN;
}

/* One configuration of scan_axes ([br, bc] tiles of a rows x cols matrix, scanned along axis)
 * or, with br 0, of scan_line (bc elements a program, a vector of cols).  Inputs: x in quarters
 * of [-4, 4] (f16/bf16: -1, 0 or 1; integers: [-1000, 1000]) for the sums, y in
 * {-1, 1, 1, 2, 0.5, 1} (f16/bf16: {-1, 1}; integers: {-1, 1, 2, 3}, wrapping) for the products.
 * Every grouping of these is exact: sums of quarters stay far below 2^24 (f32), the f16/bf16
 * sums of +-1 are integers that stay below 256 in magnitude over every run of a line (a random
 * walk of 1024 steps), products are powers of two within range, integers wrap alike in every
 * order.  So the cpu target's in-order scan and the GPU targets' tree (in the thread, lanes,
 * warps, repetitions) must both equal the exact reference, element for element. */
static bool scan_axes_run(KilnRtDevice *dev, ScanType t, int32_t rows, int32_t cols, int32_t br,
                          int32_t bc, int axis) {
  bool line = br == 0;
  size_t n = line ? (size_t)cols : (size_t)rows * (size_t)cols, eb = scan_types[t].bytes;
  KilnDefine defs2[] = {{"T", scan_types[t].number}, {"BR", br}, {"BC", bc}, {"AXIS", axis}};
  KilnDefine defs1[] = {{"T", scan_types[t].number}, {"BN", bc}};
  char shape[96];
  snprintf(shape, sizeof shape, "T=%s rows=%d cols=%d", scan_types[t].name, line ? 1 : rows, cols);
  KilnTestRun run;
  if (line)
    run_begin(&run, dev, "scan_line", defs1, COUNT(defs1), shape);
  else
    run_begin(&run, dev, "scan_axes", defs2, COUNT(defs2), shape);
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, 4100 + (uint64_t)t * 97 + (uint64_t)bc * 3 + (uint64_t)axis);
  double *x = kiln_test_alloc(n, sizeof *x), *y = kiln_test_alloc(n, sizeof *y);
  int64_t *xi = kiln_test_alloc(n, sizeof *xi), *yi = kiln_test_alloc(n, sizeof *yi);
  static const double factors[6] = {-1.0, 1.0, 1.0, 2.0, 0.5, 1.0};
  static const int64_t ifactors[4] = {-1, 1, 2, 3};
  bool half = t == SCAN_F16 || t == SCAN_BF16;
  void *hx = kiln_test_alloc(n, eb), *hy = kiln_test_alloc(n, eb);
  for (size_t i = 0; i < n; i++) {
    uint64_t r = kiln_ref_rng_next(&rng);
    x[i] = half ? (double)((int64_t)(r % 3) - 1) : (double)((int64_t)(r % 33) - 16) * 0.25;
    y[i] = half ? factors[(r >> 8) % 2] : factors[(r >> 8) % 6];
    xi[i] = (int64_t)((r >> 16) % 2001) - 1000;
    yi[i] = ifactors[(r >> 40) % 4];
    bool is_int = t == SCAN_I32 || t == SCAN_I64;
    scan_put(t, hx, i, x[i], xi[i]);
    scan_put(t, hy, i, y[i], yi[i]);
    if (is_int) x[i] = (double)xi[i], y[i] = (double)yi[i];
  }
  double *sum = kiln_test_alloc(n, sizeof *sum), *prod = kiln_test_alloc(n, sizeof *prod);
  int64_t *isum = kiln_test_alloc(n, sizeof *isum), *iprod = kiln_test_alloc(n, sizeof *iprod);
  int bits = t == SCAN_I32 ? 32 : 64;
  if (line) {
    for (size_t s = 0; s < n; s += (size_t)bc)
      kiln_ref_scan_line(x, y, xi, yi, s, 1, n - s < (size_t)bc ? n - s : (size_t)bc, bits, sum,
                         prod, isum, iprod);
  } else if (axis == 1) {
    for (size_t r = 0; r < (size_t)rows; r++)
      kiln_ref_scan_line(x, y, xi, yi, r * (size_t)cols, 1, (size_t)cols, bits, sum, prod, isum,
                         iprod);
  } else {
    for (size_t r0 = 0; r0 < (size_t)rows; r0 += (size_t)br)
      for (size_t c = 0; c < (size_t)cols; c++) {
        size_t len = (size_t)rows - r0 < (size_t)br ? (size_t)rows - r0 : (size_t)br;
        kiln_ref_scan_line(x, y, xi, yi, r0 * (size_t)cols + c, (size_t)cols, len, bits, sum, prod,
                           isum, iprod);
      }
  }
  void *out = kiln_test_alloc(2 * n + TAIL_ELEMS, eb);
  void *dx = kiln_test_input(&run, hx, n * eb), *dy = kiln_test_input(&run, hy, n * eb);
  void *dout = kiln_test_output(&run, (2 * n + TAIL_ELEMS) * eb);
  int32_t r32 = rows, c32 = cols;
  void *args2[] = {&dx, &dy, &dout, &r32, &c32};
  void *args1[] = {&dx, &dy, &dout, &c32};
  size_t grid = line ? kiln_test_cdiv(n, (size_t)bc) : kiln_test_cdiv((size_t)rows, (size_t)br);
  kiln_test_launch(&run, run.fn, grid, 1, line ? args1 : args2);
  kiln_test_fetch(&run, out, dout, (2 * n + TAIL_ELEMS) * eb);
  kiln_test_check_untouched(&run, "out", out, eb, 2 * n + TAIL_ELEMS, 1, 2 * n, 2 * n + TAIL_ELEMS);
  if (run.ok && !run.d.emit) {
    size_t bad = 0, worst = 0;
    for (size_t i = 0; i < 2 * n; i++) {
      bool is_prod = i >= n;
      size_t k = is_prod ? i - n : i;
      double got = scan_get(t, out, i);
      if (t == SCAN_I32 || t == SCAN_I64) {
        int64_t g = t == SCAN_I32 ? ((const int32_t *)out)[i] : ((const int64_t *)out)[i];
        if (g != (is_prod ? iprod[k] : isum[k])) bad++, worst = i;
      } else if (!(got == (is_prod ? prod[k] : sum[k]))) {
        bad++, worst = i;
      }
    }
    printf("       %s: out vs ref  %zu of %zu differ\n", run.label, bad, 2 * n);
    if (bad)
      kiln_test_fail(&run, "%zu of %zu scan results wrong, e.g. [%zu] got %.9g", bad, 2 * n, worst,
                     scan_get(t, out, worst));
  }
  bool ok = kiln_test_end(&run);
  free(x), free(y), free(xi), free(yi), free(hx), free(hy), free(sum), free(prod);
  free(isum), free(iprod), free(out);
  return ok;
}

/* cumsum and cumprod along either axis of 2-D tiles and along 1-D tiles, lengths 32 to 1024
 * along the axis (on the GPU targets: runs in the thread, lanes, warps and repetitions), every
 * element type in the longest shapes, f32 and i32 in all. */
static bool test_scan_axes(KilnRtDevice *dev) {
  static const struct {
    int32_t br, bc, axis;
    bool all_types;
  } cfgs[] = {{64, 128, 0, true}, {32, 128, 1, true},  {0, 1024, 0, true}, {1, 1024, 1, false},
              {1, 32, 1, false},  {16, 256, 1, false}, {32, 32, 0, false}, {1024, 1, 0, false},
              {256, 4, 0, false}, {0, 32, 0, false}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++)
    for (int t = 0; t <= SCAN_F64; t++) {
      if (!cfgs[ci].all_types && t != SCAN_F32 && !(t == SCAN_I32 && ci % 2)) continue;
      int32_t br = cfgs[ci].br, bc = cfgs[ci].bc;
      /* partial tiles: a row or column short of the tile, a program past the last */
      int32_t rows = br ? br + 1 : 1, cols = br ? (bc > 1 ? bc - 3 : 1) : 2 * bc - 5;
      if (cfgs[ci].axis == 0 && br) rows = 2 * br - 3, cols = bc;
      if (rows < 1) rows = 1;
      all_ok &= scan_axes_run(dev, (ScanType)t, rows, cols, br, bc, cfgs[ci].axis);
    }
  return all_ok;
}

/* cumsum of a dot's result (mma layout on the GPU targets) along both axes and of a row sum (a
 * slice layout), B = 64: a and b hold integers in [-2, 2] as f16, so the products, their sums
 * (|c| <= 256) and the running sums (<= 2^14) are exact in f32 in every order: equal to the
 * double-precision reference. */
static bool test_scan_layouts(KilnRtDevice *dev) {
  enum { B = 64 };
  size_t nn = (size_t)B * B, nout = 2 * nn + B;
  KilnDefine defs[] = {{"B", B}};
  KilnTestRun run;
  run_begin(&run, dev, "scan_layouts", defs, COUNT(defs), "64x64");
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, 4700);
  uint16_t *a = kiln_test_alloc(nn, sizeof *a), *b = kiln_test_alloc(nn, sizeof *b);
  double *av = kiln_test_alloc(nn, sizeof *av), *bv = kiln_test_alloc(nn, sizeof *bv);
  for (size_t i = 0; i < nn; i++) {
    uint64_t r = kiln_ref_rng_next(&rng);
    av[i] = (double)((int)(r % 5) - 2), bv[i] = (double)((int)((r >> 8) % 5) - 2);
    a[i] = kiln_ref_f32_to_f16((float)av[i]), b[i] = kiln_ref_f32_to_f16((float)bv[i]);
  }
  double *c = kiln_test_alloc(nn, sizeof *c);
  float *want = kiln_test_alloc(nout, sizeof *want), *got = kiln_test_alloc(nout + TAIL_ELEMS, 4);
  for (size_t i = 0; i < B; i++)
    for (size_t j = 0; j < B; j++) {
      double acc = 0.0;
      for (size_t k = 0; k < B; k++) acc += av[i * B + k] * bv[k * B + j];
      c[i * B + j] = acc;
    }
  double down[B] = {0}, rows = 0.0;
  for (size_t i = 0; i < B; i++) {
    double along = 0.0, rsum = 0.0;
    for (size_t j = 0; j < B; j++) {
      along += c[i * B + j], down[j] += c[i * B + j], rsum += av[i * B + j];
      want[i * B + j] = (float)along;
      want[nn + i * B + j] = (float)down[j];
    }
    rows += rsum;
    want[2 * nn + i] = (float)rows;
  }
  void *da = kiln_test_input(&run, a, nn * 2), *db = kiln_test_input(&run, b, nn * 2);
  void *dout = kiln_test_output(&run, (nout + TAIL_ELEMS) * 4);
  int32_t n32 = B;
  void *args[] = {&da, &db, &dout, &n32};
  kiln_test_launch(&run, run.fn, 1, 1, args);
  kiln_test_fetch(&run, got, dout, (nout + TAIL_ELEMS) * 4);
  kiln_test_check_untouched(&run, "out", got, 4, nout + TAIL_ELEMS, 1, nout, nout + TAIL_ELEMS);
  check_close(&run, "out", got, want, nout, 1.0, 0.0);
  bool ok = kiln_test_end(&run);
  free(a), free(b), free(av), free(bv), free(c), free(want), free(got);
  return ok;
}

/* ---- scan_combine, scan_reverse ------------------------------------------------------------ */

/* The tiles both run (rows x cols / BR x BC, a program per BR rows): tiles of 1 and 2 columns, a
 * single row and rows and columns past the matrix's edge; the last three on the cpu target only
 * (lengths that are not powers of two). */
static const struct {
  int32_t rows, cols, br, bc;
} scan_tiles[] = {{100, 50, 4, 64}, {1, 1, 1, 1},    {37, 2, 4, 2}, {64, 32, 16, 32},
                  {9, 7, 2, 8},     {23, 50, 5, 50}, {9, 7, 3, 7},  {40, 13, 6, 12}};

/* Starts the run of kernel at scan_tiles[ci]; false when the tile does not run on this device. */
static bool scan_tile_begin(KilnTestRun *run, KilnRtDevice *dev, const char *kernel, size_t ci) {
  if (!tiles_run_here(scan_tiles[ci].br, scan_tiles[ci].bc)) return false;
  KilnDefine defs[] = {{"BR", scan_tiles[ci].br}, {"BC", scan_tiles[ci].bc}};
  char shape[64];
  snprintf(shape, sizeof shape, "rows=%d cols=%d", (int)scan_tiles[ci].rows,
           (int)scan_tiles[ci].cols);
  run_begin(run, dev, kernel, defs, COUNT(defs), shape);
  return true;
}

/* scan and reduce with a combine function (issue 15): the network's order is not the
 * reference's, so only results every order gives exactly are compared for equality (maxima,
 * sums of sixteenths, the forward fill, wrapping integer sums and products, the composition of
 * integer maps, the first max's column); the f32 row sum is checked
 * against the bound of a tree of log2(bc) levels of additions (the reference's bound array).
 * Tiles of 1 and 2 columns, a single row and rows and columns past the matrix's edge; on the cpu
 * target also tiles of 50, 7, 13 and 12 columns and 5, 3 and 6 rows (lengths that are not powers
 * of two: the network runs over the next one with the extra lanes kept out). */
static bool test_scan_combine(KilnRtDevice *dev) {
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(scan_tiles); ci++) {
    KilnTestRun run;
    if (!scan_tile_begin(&run, dev, "scan_combine", ci)) continue;
    size_t rows = (size_t)scan_tiles[ci].rows, cols = (size_t)scan_tiles[ci].cols,
           bc = (size_t)scan_tiles[ci].bc;
    size_t plane = rows * bc, nf = 3 * plane, ni = 4 * plane, nr = 3 * rows;

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 2900 + ci);
    float *x = kiln_test_random_f32(&rng, rows * cols, -4.0f, 4.0f);
    float *rf = kiln_test_alloc(nf, sizeof *rf), *rr = kiln_test_alloc(nr, sizeof *rr),
          *bound = kiln_test_alloc(nr, sizeof *bound);
    int32_t *ri = kiln_test_alloc(ni, sizeof *ri), *rri = kiln_test_alloc(nr, sizeof *rri);
    TestOut o[] = {
        test_out(&run, "outf", nf, sizeof(float)), test_out(&run, "outi", ni, sizeof(int32_t)),
        test_out(&run, "outr", nr, sizeof(float)), test_out(&run, "outri", nr, sizeof(int32_t))};
    void *dx = kiln_test_input(&run, x, rows * cols * sizeof *x);
    int32_t r32 = scan_tiles[ci].rows, c32 = scan_tiles[ci].cols;
    void *args[] = {&dx, &o[0].dev, &o[1].dev, &o[2].dev, &o[3].dev, &r32, &c32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(rows, (size_t)scan_tiles[ci].br), 1, args);
    test_outs_fetch(&run, o, COUNT(o));
    kiln_ref_scan_combine(x, rf, ri, rr, bound, rri, rows, cols, (size_t)scan_tiles[ci].br, bc);
    check_close(&run, "outf", o[0].host, rf, nf, 1.0, 0.0);
    check_equal_i32(&run, "outi", o[1].host, ri, ni);
    kiln_test_check_bound(&run, "outr", o[2].host, rr, bound, nr);
    check_equal_i32(&run, "outri", o[3].host, rri, nr);
    all_ok &= kiln_test_end(&run);
    free(x), free(rf), free(ri), free(rr), free(bound), free(rri);
    test_outs_free(o, COUNT(o));
  }
  return all_ok;
}

/* ---- scan_reverse -------------------------------------------------------------------------- */

/* Reversed scans (cumsum, cumprod and scan with reverse), reduce with keep_dims and reduce
 * without an axis: every output is one that any order gives exactly (sums of sixteenths, maxima,
 * the backward fill, wrapping integer products and maps, the first max's index), so each must
 * equal the reference's; the backward fill, the maps and the whole tile's last nonzero and first
 * max are not commutative, so a scan that ran forwards, or a whole-tile reduce that took the
 * columns before the rows, fails.  The whole tile's sums are also taken of q as a [BR, BC, 1]
 * tile (sum, and reduce with plus): on the GPU targets a reduce of an earlier reduce's slice,
 * which their layouts could not lower before (a located error), and whose results, in a kernel
 * this large, once took blocked defaults that read the wrong elements (160 for 125 on emu).  The
 * same tiles as scan_combine. */
static bool test_scan_reverse(KilnRtDevice *dev) {
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(scan_tiles); ci++) {
    KilnTestRun run;
    if (!scan_tile_begin(&run, dev, "scan_reverse", ci)) continue;
    size_t rows = (size_t)scan_tiles[ci].rows, cols = (size_t)scan_tiles[ci].cols,
           bc = (size_t)scan_tiles[ci].bc;
    size_t progs = kiln_test_cdiv(rows, (size_t)scan_tiles[ci].br);
    size_t plane = rows * bc, nf = 4 * plane, ni = 4 * plane, np = 5 * progs, npi = 2 * progs;

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 3100 + ci);
    float *x = kiln_test_random_f32(&rng, rows * cols, -4.0f, 4.0f);
    float *rf = kiln_test_alloc(nf, sizeof *rf), *rr = kiln_test_alloc(rows, sizeof *rr),
          *rp = kiln_test_alloc(np, sizeof *rp);
    int32_t *ri = kiln_test_alloc(ni, sizeof *ri), *rpi = kiln_test_alloc(npi, sizeof *rpi);
    TestOut o[] = {
        test_out(&run, "outf", nf, sizeof(float)), test_out(&run, "outi", ni, sizeof(int32_t)),
        test_out(&run, "outr", rows, sizeof(float)), test_out(&run, "outp", np, sizeof(float)),
        test_out(&run, "outpi", npi, sizeof(int32_t))};
    void *dx = kiln_test_input(&run, x, rows * cols * sizeof *x);
    int32_t r32 = scan_tiles[ci].rows, c32 = scan_tiles[ci].cols;
    void *args[] = {&dx, &o[0].dev, &o[1].dev, &o[2].dev, &o[3].dev, &o[4].dev, &r32, &c32};
    kiln_test_launch(&run, run.fn, progs, 1, args);
    test_outs_fetch(&run, o, COUNT(o));
    kiln_ref_scan_reverse(x, rf, ri, rr, rp, rpi, rows, cols, (size_t)scan_tiles[ci].br, bc);
    check_close(&run, "outf", o[0].host, rf, nf, 1.0, 0.0);
    check_equal_i32(&run, "outi", o[1].host, ri, ni);
    check_close(&run, "outr", o[2].host, rr, rows, 1.0, 0.0);
    check_close(&run, "outp", o[3].host, rp, np, 1.0, 0.0);
    check_equal_i32(&run, "outpi", o[4].host, rpi, npi);
    all_ok &= kiln_test_end(&run);
    free(x), free(rf), free(ri), free(rr), free(rp), free(rpi);
    test_outs_free(o, COUNT(o));
  }
  return all_ok;
}

/* ---- argmax_all ---------------------------------------------------------------------------- */

/* argmax/argmin over every axis and keep_dims without an axis (issue 15): indices are exact, so
 * every output must equal the reference's; the inputs are halves in [-4, 4], so every tile holds
 * ties and only the first index in row-major order is right. */
static bool test_argmax_all(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, br, bc;
  } cfgs[] = {{100, 50, 8, 64}, {1, 1, 2, 32}, {37, 32, 2, 32}, {64, 20, 8, 32}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols, br = (size_t)cfgs[ci].br;
    size_t progs = kiln_test_cdiv(rows, br), n = 8 * progs, total = n + TAIL_ELEMS;
    KilnDefine defs[] = {{"BR", cfgs[ci].br}, {"BC", cfgs[ci].bc}};
    char shape[64];
    snprintf(shape, sizeof shape, "rows=%zu cols=%zu", rows, cols);
    KilnTestRun run;
    run_begin(&run, dev, "argmax_all", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 2400 + ci);
    float *x = kiln_test_random_f32(&rng, rows * cols, -4.0f, 4.0f);
    for (size_t i = 0; i < rows * cols; i++) x[i] = floorf(x[i] * 2.0f) * 0.5f;
    int32_t *out = kiln_test_alloc(total, sizeof *out), *ref = kiln_test_alloc(n, sizeof *ref);
    void *dx = kiln_test_input(&run, x, rows * cols * sizeof *x);
    void *dout = kiln_test_output(&run, total * sizeof *out);
    int32_t r32 = cfgs[ci].rows, c32 = cfgs[ci].cols;
    void *args[] = {&dx, &dout, &r32, &c32};
    kiln_test_launch(&run, run.fn, progs, 1, args);
    kiln_test_fetch(&run, out, dout, total * sizeof *out);

    kiln_test_check_untouched(&run, "out", out, sizeof *out, total, 1, n, total);
    kiln_ref_argmax_all(x, ref, rows, cols, br, (size_t)cfgs[ci].bc);
    check_equal_i32(&run, "out", out, ref, n);
    all_ok &= kiln_test_end(&run);
    free(x), free(out), free(ref);
  }
  return all_ok;
}

/* ---- sort_rows ----------------------------------------------------------------------------- */

/* sort (issue 15): a sort moves values without arithmetic, so every output is exact; the i32
 * rows hold many ties and the mask only 0s and 1s.  On the cpu target also rows of 50 and 10
 * (half-rows of 25 and 5): lengths that are not powers of two. */
static bool test_sort_rows(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, br, bc;
  } cfgs[] = {{100, 50, 4, 64}, {37, 64, 1, 64}, {3, 200, 1, 256},
              {9, 2, 4, 2},     {20, 50, 3, 50}, {7, 9, 2, 10}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    if (!tiles_run_here(cfgs[ci].br, cfgs[ci].bc)) continue;
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols, bc = (size_t)cfgs[ci].bc;
    size_t plane = rows * bc, nf = 2 * plane, ni = 2 * plane;
    KilnDefine defs[] = {{"BR", cfgs[ci].br}, {"BC", cfgs[ci].bc}};
    char shape[64];
    snprintf(shape, sizeof shape, "rows=%zu cols=%zu", rows, cols);
    KilnTestRun run;
    run_begin(&run, dev, "sort_rows", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 2500 + ci);
    float *x = kiln_test_random_f32(&rng, rows * cols, -4.0f, 4.0f);
    float *outf = kiln_test_alloc(nf + TAIL_ELEMS, sizeof *outf),
          *rf = kiln_test_alloc(nf, sizeof *rf);
    int32_t *outi = kiln_test_alloc(ni + TAIL_ELEMS, sizeof *outi),
            *ri = kiln_test_alloc(ni, sizeof *ri);
    void *dx = kiln_test_input(&run, x, rows * cols * sizeof *x);
    void *df = kiln_test_output(&run, (nf + TAIL_ELEMS) * sizeof *outf);
    void *di = kiln_test_output(&run, (ni + TAIL_ELEMS) * sizeof *outi);
    int32_t r32 = cfgs[ci].rows, c32 = cfgs[ci].cols;
    void *args[] = {&dx, &df, &di, &r32, &c32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(rows, (size_t)cfgs[ci].br), 1, args);
    kiln_test_fetch(&run, outf, df, (nf + TAIL_ELEMS) * sizeof *outf);
    kiln_test_fetch(&run, outi, di, (ni + TAIL_ELEMS) * sizeof *outi);

    kiln_test_check_untouched(&run, "outf", outf, sizeof *outf, nf + TAIL_ELEMS, 1, nf,
                              nf + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "outi", outi, sizeof *outi, ni + TAIL_ELEMS, 1, ni,
                              ni + TAIL_ELEMS);
    kiln_ref_sort_rows(x, rf, ri, rows, cols, bc);
    check_close(&run, "outf", outf, rf, nf, 1.0, 0.0);
    check_equal_i32(&run, "outi", outi, ri, ni);
    all_ok &= kiln_test_end(&run);
    free(x), free(outf), free(rf), free(outi), free(ri);
  }
  return all_ok;
}

/* ---- sort_axes ----------------------------------------------------------------------------- */

/* sort along other axes than the last (issue 15): axis 0 of the program's tile, both ways, and
 * the middle axis of a [BR, BC / Q, Q] view; exact, as sort_rows.  Powers of two on every
 * target; on the cpu target also 5, 3, 15 and 7 rows or middle lengths. */
/* A total order of f32 bit patterns: by value, ties (0 and -0) and NaNs (last) by their bits;
 * sorting two lines with it compares them as multisets. */
static int total_order_f32(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  uint32_t xb, yb;
  memcpy(&xb, &x, sizeof xb);
  memcpy(&yb, &y, sizeof yb);
  if (isnan(x) != isnan(y)) return isnan(x) ? 1 : -1;
  if (!isnan(x) && x != y) return x < y ? -1 : 1;
  return (xb > yb) - (xb < yb);
}

/* Whether the n values at got[first + i * step] are the values at want[...] in some order. */
static bool same_values(const float *got, const float *want, size_t first, size_t step, size_t n) {
  float a[64], b[64];
  if (n > 64) return false;
  for (size_t i = 0; i < n; i++) a[i] = got[first + i * step], b[i] = want[first + i * step];
  qsort(a, n, sizeof *a, total_order_f32);
  qsort(b, n, sizeof *b, total_order_f32);
  return memcmp(a, b, n * sizeof *a) == 0;
}

/* sort of lengths that are not powers of two with NaNs among the values (cpu only): NaN compares
 * false, so its place is not specified, but each line must still be a permutation of x's (the
 * extra lanes never take a value's place).  9 x 30 with NaN at every fifth element, BR = 3 (each
 * program's rows inside the matrix), Q = 2: lines of 3 (columns) and 15 (the middle axis). */
static bool sort_axes_nan(KilnRtDevice *dev) {
  enum { ROWS = 9, COLS = 30, BR = 3, Q = 2, MID = COLS / Q };
  size_t plane = ROWS * COLS, nf = 3 * plane, ni = plane;
  KilnDefine defs[] = {{"BR", BR}, {"BC", COLS}, {"Q", Q}};
  KilnTestRun run;
  run_begin(&run, dev, "sort_axes", defs, COUNT(defs), "rows=9 cols=30 NaN");
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, 3200);
  float *x = kiln_test_random_f32(&rng, plane, -4.0f, 4.0f);
  for (size_t i = 0; i < plane; i += 5) x[i] = NAN;
  float *outf = kiln_test_alloc(nf + TAIL_ELEMS, sizeof *outf);
  int32_t *outi = kiln_test_alloc(ni + TAIL_ELEMS, sizeof *outi);
  void *dx = kiln_test_input(&run, x, plane * sizeof *x);
  void *df = kiln_test_output(&run, (nf + TAIL_ELEMS) * sizeof *outf);
  void *di = kiln_test_output(&run, (ni + TAIL_ELEMS) * sizeof *outi);
  int32_t r32 = ROWS, c32 = COLS;
  void *args[] = {&dx, &df, &di, &r32, &c32};
  kiln_test_launch(&run, run.fn, ROWS / BR, 1, args);
  kiln_test_fetch(&run, outf, df, (nf + TAIL_ELEMS) * sizeof *outf);
  kiln_test_check_untouched(&run, "outf", outf, sizeof *outf, nf + TAIL_ELEMS, 1, nf,
                            nf + TAIL_ELEMS);
  size_t bad = 0;
  for (size_t p = 0; p < ROWS / BR; p++) /* the columns of each program's tile, both ways */
    for (size_t c = 0; c < COLS; c++)
      for (size_t k = 0; k < 2; k++)
        bad += !same_values(outf + k * plane, x, p * BR * COLS + c, COLS, BR);
  for (size_t r = 0; r < ROWS; r++) /* the middle axis */
    for (size_t j = 0; j < Q; j++) bad += !same_values(outf + 2 * plane, x, r * COLS + j, Q, MID);
  if (bad) kiln_test_fail(&run, "%zu lines are not a permutation of x's", bad);
  bool ok = kiln_test_end(&run);
  free(x), free(outf), free(outi);
  return ok;
}

static bool test_sort_axes(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, br, bc, q;
  } cfgs[] = {{100, 50, 4, 64, 4}, {37, 64, 8, 64, 8}, {16, 16, 16, 16, 4}, {9, 2, 4, 2, 2},
              {23, 12, 5, 12, 4},  {10, 30, 3, 30, 2}, {7, 7, 7, 21, 3}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    if (!tiles_run_here(cfgs[ci].br, cfgs[ci].bc) ||
        !tiles_run_here(cfgs[ci].bc / cfgs[ci].q, cfgs[ci].q))
      continue;
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols, bc = (size_t)cfgs[ci].bc;
    size_t plane = rows * bc, nf = 3 * plane, ni = plane;
    KilnDefine defs[] = {{"BR", cfgs[ci].br}, {"BC", cfgs[ci].bc}, {"Q", cfgs[ci].q}};
    char shape[64];
    snprintf(shape, sizeof shape, "rows=%zu cols=%zu", rows, cols);
    KilnTestRun run;
    run_begin(&run, dev, "sort_axes", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 3100 + ci);
    float *x = kiln_test_random_f32(&rng, rows * cols, -4.0f, 4.0f);
    float *outf = kiln_test_alloc(nf + TAIL_ELEMS, sizeof *outf),
          *rf = kiln_test_alloc(nf, sizeof *rf);
    int32_t *outi = kiln_test_alloc(ni + TAIL_ELEMS, sizeof *outi),
            *ri = kiln_test_alloc(ni, sizeof *ri);
    void *dx = kiln_test_input(&run, x, rows * cols * sizeof *x);
    void *df = kiln_test_output(&run, (nf + TAIL_ELEMS) * sizeof *outf);
    void *di = kiln_test_output(&run, (ni + TAIL_ELEMS) * sizeof *outi);
    int32_t r32 = cfgs[ci].rows, c32 = cfgs[ci].cols;
    void *args[] = {&dx, &df, &di, &r32, &c32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(rows, (size_t)cfgs[ci].br), 1, args);
    kiln_test_fetch(&run, outf, df, (nf + TAIL_ELEMS) * sizeof *outf);
    kiln_test_fetch(&run, outi, di, (ni + TAIL_ELEMS) * sizeof *outi);

    kiln_test_check_untouched(&run, "outf", outf, sizeof *outf, nf + TAIL_ELEMS, 1, nf,
                              nf + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "outi", outi, sizeof *outi, ni + TAIL_ELEMS, 1, ni,
                              ni + TAIL_ELEMS);
    kiln_ref_sort_axes(x, rf, ri, rows, cols, (size_t)cfgs[ci].br, bc, (size_t)cfgs[ci].q);
    check_close(&run, "outf", outf, rf, nf, 1.0, 0.0);
    check_equal_i32(&run, "outi", outi, ri, ni);
    all_ok &= kiln_test_end(&run);
    free(x), free(outf), free(rf), free(outi), free(ri);
  }
  if (g_target == KILN_TARGET_CPU) all_ok &= sort_axes_nan(dev);
  return all_ok;
}

/* ---- trans3d ------------------------------------------------------------------------------- */

/* trans with a permutation (issue 15): values only move (the odd permutations through a masked
 * max, which returns one of its inputs unchanged), so every output is exact.  The 2-D plane is
 * only a * b values of each block's n; the rest of it stays as the fill. */
static bool test_trans3d(KilnRtDevice *dev) {
  static const struct {
    int32_t progs, a, b, c;
  } cfgs[] = {{3, 2, 4, 8}, {2, 4, 8, 4}, {1, 8, 2, 16}, {2, 1, 4, 2}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t progs = (size_t)cfgs[ci].progs, a = (size_t)cfgs[ci].a, b = (size_t)cfgs[ci].b,
           c = (size_t)cfgs[ci].c;
    size_t n = a * b * c, plane = progs * n, nf = 7 * plane, ni = plane;
    KilnDefine defs[] = {{"A", cfgs[ci].a}, {"B", cfgs[ci].b}, {"C", cfgs[ci].c}};
    char shape[64];
    snprintf(shape, sizeof shape, "progs=%zu", progs);
    KilnTestRun run;
    run_begin(&run, dev, "trans3d", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 2700 + ci);
    float *x = kiln_test_random_f32(&rng, plane, -20.0f, 20.0f);
    float *outf = kiln_test_alloc(nf + TAIL_ELEMS, sizeof *outf),
          *rf = kiln_test_alloc(nf, sizeof *rf);
    int32_t *outi = kiln_test_alloc(ni + TAIL_ELEMS, sizeof *outi),
            *ri = kiln_test_alloc(ni, sizeof *ri);
    void *dx = kiln_test_input(&run, x, plane * sizeof *x);
    void *df = kiln_test_output(&run, (nf + TAIL_ELEMS) * sizeof *outf);
    void *di = kiln_test_output(&run, (ni + TAIL_ELEMS) * sizeof *outi);
    void *args[] = {&dx, &df, &di};
    kiln_test_launch(&run, run.fn, (uint32_t)progs, 1, args);
    kiln_test_fetch(&run, outf, df, (nf + TAIL_ELEMS) * sizeof *outf);
    kiln_test_fetch(&run, outi, di, (ni + TAIL_ELEMS) * sizeof *outi);

    kiln_test_check_untouched(&run, "outi", outi, sizeof *outi, ni + TAIL_ELEMS, 1, ni,
                              ni + TAIL_ELEMS);
    kiln_ref_trans3d(x, rf, ri, progs, a, b, c);
    check_close(&run, "outf", outf, rf, 6 * plane, 1.0, 0.0);
    float *got2 = kiln_test_alloc(progs * a * b, sizeof *got2),
          *ref2 = kiln_test_alloc(progs * a * b, sizeof *ref2);
    for (size_t p = 0; p < progs; p++) /* plane 6: the a * b transposed values of each block */
      for (size_t i = 0; i < a * b; i++)
        got2[p * a * b + i] = outf[6 * plane + p * n + i],
                         ref2[p * a * b + i] = rf[6 * plane + p * n + i];
    check_close(&run, "outf 2-D", got2, ref2, progs * a * b, 1.0, 0.0);
    free(got2), free(ref2);
    check_equal_i32(&run, "outi", outi, ri, ni);
    all_ok &= kiln_test_end(&run);
    free(x), free(outf), free(rf), free(outi), free(ri);
  }
  return all_ok;
}

/* ---- cas_f32, cas_i64 ----------------------------------------------------------------------- */

/* atomic_cas on f32 cells compares bits: lanes 0 mod 8 hold NaN (equal bits: swapped, though
 * NaN != NaN), lanes 2 mod 8 hold -0.0 and compare with +0.0 (equal floats, other bits: kept),
 * other even lanes match and odd lanes do not.  Every value only moves: exact. */
static bool test_cas_f32(KilnRtDevice *dev) {
  static const struct {
    int32_t n, block;
  } cfgs[] = {{1000, 256}, {77, 64}, {1, 256}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, total = n + TAIL_ELEMS;
    KilnDefine defs[] = {{"B", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "cas_f32", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 2800 + ci);
    float *cells = kiln_test_random_f32(&rng, n, -100.0f, 100.0f),
          *x = kiln_test_random_f32(&rng, n, -100.0f, 100.0f);
    for (size_t i = 0; i < n; i++) cells[i] = i % 8 == 0 ? NAN : i % 8 == 2 ? -0.0f : cells[i];
    float *rc = kiln_test_alloc(n, sizeof *rc), *gc = kiln_test_alloc(total, sizeof *gc);
    float *olds = kiln_test_alloc(total, sizeof *olds);
    for (size_t i = 0; i < n; i++) rc[i] = i % 2 == 0 && i % 8 != 2 ? x[i] : cells[i];
    void *dc = kiln_test_input(&run, cells, n * sizeof *cells),
         *dx = kiln_test_input(&run, x, n * sizeof *x);
    void *dold = kiln_test_output(&run, total * sizeof *olds);
    int32_t n32 = cfgs[ci].n;
    void *args[] = {&dc, &dx, &dold, &n32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(n, (size_t)cfgs[ci].block), 1, args);
    kiln_test_fetch(&run, gc, dc, n * sizeof *gc);
    kiln_test_fetch(&run, olds, dold, total * sizeof *olds);
    kiln_test_check_untouched(&run, "olds", olds, sizeof *olds, total, 1, n, total);
    size_t bad = 0; /* bit for bit: NaN and -0.0 must come back as they went in */
    for (size_t i = 0; i < n; i++)
      bad += memcmp(&gc[i], &rc[i], 4) != 0 || memcmp(&olds[i], &cells[i], 4) != 0;
    if (run.ok && !run.d.emit) { /* nothing ran when the kernel is only written to a bundle */
      printf("       cas_f32 %s: %zu of %zu cells or old values differ in their bits\n", shape, bad,
             n);
      if (bad) kiln_test_fail(&run, "atomic_cas on f32 cells: %zu lanes differ", bad);
    }
    all_ok &= kiln_test_end(&run);
    free(cells), free(x), free(rc), free(gc), free(olds);
  }
  return all_ok;
}

/* atomic_cas on i64 cells (every target: atom.cas.b64 on the GPU): odd lanes compare with the
 * cell + 2^32, which a 32-bit compare would take for a match. */
static bool test_cas_i64(KilnRtDevice *dev) {
  static const size_t sizes[] = {1000, 1};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(sizes); ci++) {
    size_t n = sizes[ci], total = n + TAIL_ELEMS;
    KilnDefine defs[] = {{"B", 256}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "cas_i64", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 2900 + ci);
    int64_t *cells = kiln_test_alloc(n, sizeof *cells), *x = kiln_test_alloc(n, sizeof *x);
    int64_t *rc = kiln_test_alloc(n, sizeof *rc), *gc = kiln_test_alloc(n, sizeof *gc);
    int64_t *olds = kiln_test_alloc(total, sizeof *olds);
    for (size_t i = 0; i < n; i++) {
      cells[i] = (int64_t)kiln_ref_rng_next(&rng) >> 2; /* room for + 2^32 without overflow */
      x[i] = (int64_t)kiln_ref_rng_next(&rng);
      rc[i] = i % 2 == 0 ? x[i] : cells[i];
    }
    void *dc = kiln_test_input(&run, cells, n * sizeof *cells),
         *dx = kiln_test_input(&run, x, n * sizeof *x);
    void *dold = kiln_test_output(&run, total * sizeof *olds);
    int32_t n32 = (int32_t)n;
    void *args[] = {&dc, &dx, &dold, &n32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(n, 256), 1, args);
    kiln_test_fetch(&run, gc, dc, n * sizeof *gc);
    kiln_test_fetch(&run, olds, dold, total * sizeof *olds);
    kiln_test_check_untouched(&run, "olds", olds, sizeof *olds, total, 1, n, total);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += gc[i] != rc[i] || olds[i] != cells[i];
    if (run.ok && !run.d.emit) {
      printf("       cas_i64 %s: %zu of %zu cells or old values differ\n", shape, bad, n);
      if (bad) kiln_test_fail(&run, "atomic_cas on i64 cells: %zu lanes differ", bad);
    }
    all_ok &= kiln_test_end(&run);
    free(cells), free(x), free(rc), free(gc), free(olds);
  }
  return all_ok;
}

/* ---- unsigned_ops, f64_ops ---------------------------------------------------------------- */

/* Counts the elements of got that differ from ref (n of `elem` bytes each) and fails the run
 * naming the first; exact, since every unsigned result is an exact integer. */
static void check_bytes(KilnTestRun *run, const char *what, const void *got, const void *ref,
                        size_t n, size_t elem) {
  if (!run->ok || run->d.emit) return;
  size_t bad = 0, first = n;
  for (size_t i = 0; i < n; i++)
    if (memcmp((const char *)got + i * elem, (const char *)ref + i * elem, elem) != 0) {
      if (!bad) first = i;
      bad++;
    }
  printf("       %s: %zu of %zu differ\n", what, bad, n);
  if (bad)
    kiln_test_fail(run, "%s: %zu of %zu elements differ (first at %zu)", what, bad, n, first);
}

/* ---- join_split, int_helpers --------------------------------------------------------------- */

/* join, split, interleave and cat: values only move (split through a masked max, which returns
 * one of its inputs unchanged), so every output is exact, bit for bit.  Plane 5 holds 6 c + 2
 * written values of each block's 2 r c; they are compared on their own. */
static bool test_join_split(KilnRtDevice *dev) {
  static const struct {
    int32_t progs, r, c;
  } cfgs[] = {{3, 8, 16}, {2, 4, 32}, {1, 16, 4}, {2, 4, 2}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t progs = (size_t)cfgs[ci].progs, r = (size_t)cfgs[ci].r, c = (size_t)cfgs[ci].c;
    size_t n2 = 2 * r * c, plane = progs * n2, nf = 8 * plane, ni = 2 * plane;
    KilnDefine defs[] = {{"R", cfgs[ci].r}, {"C", cfgs[ci].c}};
    char shape[64];
    snprintf(shape, sizeof shape, "progs=%zu", progs);
    KilnTestRun run;
    run_begin(&run, dev, "join_split", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 4100 + ci);
    float *x = kiln_test_random_f32(&rng, plane, -20.0f, 20.0f);
    float *y = kiln_test_random_f32(&rng, plane, -20.0f, 20.0f);
    float *outf = kiln_test_alloc(nf + TAIL_ELEMS, sizeof *outf),
          *rf = kiln_test_alloc(nf, sizeof *rf);
    int32_t *outi = kiln_test_alloc(ni + TAIL_ELEMS, sizeof *outi),
            *ri = kiln_test_alloc(ni, sizeof *ri);
    void *dx = kiln_test_input(&run, x, plane * sizeof *x);
    void *dy = kiln_test_input(&run, y, plane * sizeof *y);
    void *df = kiln_test_output(&run, (nf + TAIL_ELEMS) * sizeof *outf);
    void *di = kiln_test_output(&run, (ni + TAIL_ELEMS) * sizeof *outi);
    void *args[] = {&dx, &dy, &df, &di};
    kiln_test_launch(&run, run.fn, (uint32_t)progs, 1, args);
    kiln_test_fetch(&run, outf, df, (nf + TAIL_ELEMS) * sizeof *outf);
    kiln_test_fetch(&run, outi, di, (ni + TAIL_ELEMS) * sizeof *outi);

    kiln_test_check_untouched(&run, "outf", outf, sizeof *outf, nf + TAIL_ELEMS, 1, nf,
                              nf + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "outi", outi, sizeof *outi, ni + TAIL_ELEMS, 1, ni,
                              ni + TAIL_ELEMS);
    kiln_ref_join_split(x, y, rf, ri, progs, r, c);
    check_bytes(&run, "outf planes 0-4", outf, rf, 5 * plane, sizeof *outf);
    check_bytes(&run, "outf planes 6-7", outf + 6 * plane, rf + 6 * plane, 2 * plane, sizeof *outf);
    size_t w = 6 * c + 2;
    for (size_t p = 0; p < progs; p++) {
      char what[64];
      snprintf(what, sizeof what, "outf plane 5, block %zu", p);
      check_bytes(&run, what, outf + 5 * plane + p * n2, rf + 5 * plane + p * n2, w, sizeof *outf);
    }
    check_bytes(&run, "outi", outi, ri, ni, sizeof *outi);
    all_ok &= kiln_test_end(&run);
    free(x), free(y), free(outf), free(rf), free(outi), free(ri);
  }
  return all_ok;
}

/* umulhi, clamp and swizzle2d: integer results and clamped floats are exact.  The grids' cells
 * number below n, at n and above it (the cells past n are not stored). */
static bool test_int_helpers(KilnRtDevice *dev) {
  static const struct {
    int32_t n, b, si, sj, sg;
  } cfgs[] = {{1000, 64, 30, 20, 8}, {77, 64, 7, 11, 3}, {200, 64, 9, 40, 4}, {5, 64, 2, 2, 5}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, bs = (size_t)cfgs[ci].b, np = (n + bs - 1) / bs;
    size_t ni = 4 * n + 2 * np, nu = 2 * n, nf = 2 * n;
    KilnDefine defs[] = {{"B", cfgs[ci].b}};
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu grid=%dx%d group=%d", n, cfgs[ci].si, cfgs[ci].sj,
             cfgs[ci].sg);
    KilnTestRun run;
    run_begin(&run, dev, "int_helpers", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 4200 + ci);
    int32_t *a = kiln_test_alloc(n, sizeof *a), *b = kiln_test_alloc(n, sizeof *b);
    for (size_t i = 0; i < n; i++) {
      uint64_t v = kiln_ref_rng_next(&rng);
      a[i] = (int32_t)(uint32_t)v; /* every magnitude and sign: shifted right by 0 to 31 */
      b[i] = (int32_t)((uint32_t)(v >> 32) >> (v % 32));
      if (i % 3 == 0) b[i] = -b[i];
    }
    float *f = kiln_test_random_f32(&rng, n, -4.0f, 4.0f);
    int32_t *gi = kiln_test_alloc(ni + TAIL_ELEMS, 4), *rfi = kiln_test_alloc(ni, 4);
    uint32_t *gu = kiln_test_alloc(nu + TAIL_ELEMS, 4), *rfu = kiln_test_alloc(nu, 4);
    float *gf = kiln_test_alloc(nf + TAIL_ELEMS, 4), *rff = kiln_test_alloc(nf, 4);
    void *da = kiln_test_input(&run, a, n * 4), *db = kiln_test_input(&run, b, n * 4),
         *dfl = kiln_test_input(&run, f, n * 4);
    void *di = kiln_test_output(&run, (ni + TAIL_ELEMS) * 4),
         *du = kiln_test_output(&run, (nu + TAIL_ELEMS) * 4),
         *df = kiln_test_output(&run, (nf + TAIL_ELEMS) * 4);
    int32_t nn = (int32_t)n, si = cfgs[ci].si, sj = cfgs[ci].sj, sg = cfgs[ci].sg;
    void *args[] = {&da, &db, &dfl, &di, &du, &df, &nn, &si, &sj, &sg};
    kiln_test_launch(&run, run.fn, (uint32_t)np, 1, args);
    kiln_test_fetch(&run, gi, di, (ni + TAIL_ELEMS) * 4);
    kiln_test_fetch(&run, gu, du, (nu + TAIL_ELEMS) * 4);
    kiln_test_fetch(&run, gf, df, (nf + TAIL_ELEMS) * 4);
    kiln_test_check_untouched(&run, "outi", gi, 4, ni + TAIL_ELEMS, 1, ni, ni + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "outu", gu, 4, nu + TAIL_ELEMS, 1, nu, nu + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "outf", gf, 4, nf + TAIL_ELEMS, 1, nf, nf + TAIL_ELEMS);
    kiln_ref_int_helpers(a, b, f, n, np, (size_t)si, (size_t)sj, (size_t)sg, rfi, rfu, rff);
    size_t cells = (size_t)(si * sj) < n ? (size_t)(si * sj) : n;
    check_bytes(&run, "umulhi i32, clamp i32", gi, rfi, 2 * n, 4);
    check_bytes(&run, "swizzle2d i", gi + 2 * n, rfi + 2 * n, cells, 4);
    check_bytes(&run, "swizzle2d j", gi + 3 * n, rfi + 3 * n, cells, 4);
    check_bytes(&run, "swizzle2d of scalars", gi + 4 * n, rfi + 4 * n, 2 * np, 4);
    check_bytes(&run, "umulhi u32", gu, rfu, nu, 4);
    check_bytes(&run, "clamp f32, f16", gf, rff, nf, 4);
    all_ok &= kiln_test_end(&run);
    free(a), free(b), free(f), free(gi), free(rfi), free(gu), free(rfu), free(gf), free(rff);
  }
  return all_ok;
}

/* ---- gather_hist ------------------------------------------------------------------------- */

/* gather and histogram: gathered values only move (a masked max keeps one of its inputs), an
 * index outside its axis gives the lowest value, and the counts are integers: all exact. */
static bool test_gather_hist(KilnRtDevice *dev) {
  static const struct {
    int32_t r, c, bins, nlab, n;
  } cfgs[] = {{8, 16, 16, 64, 50}, {4, 8, 8, 128, 128}, {2, 32, 32, 32, 1}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t r = (size_t)cfgs[ci].r, c = (size_t)cfgs[ci].c, rc = r * c;
    size_t bins = (size_t)cfgs[ci].bins, nlab = (size_t)cfgs[ci].nlab;
    size_t nf = 5 * rc + c, ni = 6 * rc + 2 * bins, nidx = 4 * rc + c + rc;
    KilnDefine defs[] = {
        {"R", cfgs[ci].r}, {"C", cfgs[ci].c}, {"BINS", cfgs[ci].bins}, {"N", cfgs[ci].nlab}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%d", cfgs[ci].n);
    KilnTestRun run;
    run_begin(&run, dev, "gather_hist", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 4400 + ci);
    float *x = kiln_test_random_f32(&rng, rc, -4.0f, 4.0f);
    int32_t *idx = kiln_test_alloc(nidx, 4), *lab = kiln_test_alloc(nlab, 4);
    /* each index from -1 to its axis's length (both ends outside it) */
    size_t lens[5] = {r, c, c, r / 2, 0}, ends[5] = {2 * rc, 4 * rc, 4 * rc + c, nidx, 0};
    for (size_t i = 0, part = 0; i < nidx; i++) {
      while (i >= ends[part]) part++;
      idx[i] = (int32_t)(kiln_ref_rng_next(&rng) % (lens[part] + 2)) - 1;
    }
    for (size_t i = 0; i < nlab; i++) lab[i] = (int32_t)(kiln_ref_rng_next(&rng) % (bins + 4)) - 2;
    float *gf = kiln_test_alloc(nf + TAIL_ELEMS, 4), *rf = kiln_test_alloc(nf, 4);
    int32_t *gi = kiln_test_alloc(ni + TAIL_ELEMS, 4), *ri = kiln_test_alloc(ni, 4);
    void *dx = kiln_test_input(&run, x, rc * 4), *didx = kiln_test_input(&run, idx, nidx * 4),
         *dlab = kiln_test_input(&run, lab, nlab * 4);
    void *df = kiln_test_output(&run, (nf + TAIL_ELEMS) * 4),
         *di = kiln_test_output(&run, (ni + TAIL_ELEMS) * 4);
    int32_t nn = cfgs[ci].n;
    void *args[] = {&dx, &didx, &dlab, &df, &di, &nn};
    kiln_test_launch(&run, run.fn, 1, 1, args);
    kiln_test_fetch(&run, gf, df, (nf + TAIL_ELEMS) * 4);
    kiln_test_fetch(&run, gi, di, (ni + TAIL_ELEMS) * 4);
    kiln_test_check_untouched(&run, "outf", gf, 4, nf + TAIL_ELEMS, 1, nf, nf + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "outi", gi, 4, ni + TAIL_ELEMS, 1, ni, ni + TAIL_ELEMS);
    kiln_ref_gather_hist(x, idx, lab, rf, ri, r, c, bins, nlab, (size_t)cfgs[ci].n);
    check_bytes(&run, "gather f32", gf, rf, nf, 4);
    check_bytes(&run, "gather i8, u8, u32", gi, ri, 6 * rc, 4);
    check_bytes(&run, "histograms", gi + 6 * rc, ri + 6 * rc, 2 * bins, 4);
    all_ok &= kiln_test_end(&run);
    free(x), free(idx), free(lab), free(gf), free(rf), free(gi), free(ri);
  }
  return all_ok;
}

/* ---- device_assert ------------------------------------------------------------------------- */

/* A launch that must fail with a device_assert: KILN_RT_ERROR_LAUNCH whose message holds every
 * string of want (the call's place and message; on the cpu target the program and element). */
static void launch_expect_assert(KilnTestRun *run, uint32_t gx, void **args,
                                 const char *const *want, size_t nwant) {
  if (!run->ok || run->d.emit) return;
  KilnRtLaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.grid[0] = gx;
  cfg.grid[1] = cfg.grid[2] = 1;
  cfg.block_threads = 32 * (uint32_t)run->d.num_warps;
  KilnRtStatus st = kiln_rt_launch(run->fn, &cfg, args, NULL);
  if (st == KILN_RT_OK) st = kiln_rt_device_synchronize(run->dev);
  const char *msg = st == KILN_RT_OK ? "" : kiln_rt_last_error();
  printf("       launch: %s: %s\n", kiln_rt_status_name(st), msg);
  if (st != KILN_RT_ERROR_LAUNCH) {
    kiln_test_fail(run, "expected KILN_RT_ERROR_LAUNCH from a failed device_assert, got %s",
                   kiln_rt_status_name(st));
    return;
  }
  for (size_t i = 0; i < nwant; i++)
    if (!strstr(msg, want[i])) kiln_test_fail(run, "the launch's error lacks '%s'", want[i]);
}

/* device_assert: a launch whose assertions hold runs as any other (out = 2 x, the tail
 * untouched); one x above the limit fails the launch naming the tile assertion's place and
 * message (and, on the cpu target, its program and element: one failing element makes the
 * report deterministic); an odd n fails the scalar assertion in every program.  The failing
 * launches do not run on a GPU, where a device-side assertion ends the context. */
static bool test_device_assert(KilnRtDevice *dev) {
  static const struct {
    int32_t n, bad; /* bad: the element above the limit, -1 none */
  } cfgs[] = {{1000, -1}, {1000, 133}, {76, -1}, {7, -1}};
  bool gpu = g_target != KILN_TARGET_CPU && g_target != KILN_TARGET_EMU;
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, bs = 64, np = (n + bs - 1) / bs;
    bool fails = cfgs[ci].bad >= 0 || n % 2 != 0;
    if (fails && gpu) continue;
    KilnDefine defs[] = {{"B", 64}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu bad=%d", n, cfgs[ci].bad);
    KilnTestRun run;
    run_begin(&run, dev, "device_assert", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 4300 + ci);
    float *x = kiln_test_random_f32(&rng, n, -1.0f, 1.0f);
    if (cfgs[ci].bad >= 0) x[cfgs[ci].bad] = 3.0f;
    float *out = kiln_test_alloc(n + TAIL_ELEMS, sizeof *out), *ref = kiln_test_alloc(n, 4);
    for (size_t i = 0; i < n; i++) ref[i] = 2.0f * x[i];
    void *dx = kiln_test_input(&run, x, n * 4), *dout = kiln_test_output(&run, (n + 67) * 4);
    int32_t nn = (int32_t)n;
    float limit = 2.0f;
    void *args[] = {&dx, &dout, &nn, &limit};
    if (!fails) {
      kiln_test_launch(&run, run.fn, (uint32_t)np, 1, args);
      kiln_test_fetch(&run, out, dout, (n + TAIL_ELEMS) * 4);
      kiln_test_check_untouched(&run, "out", out, 4, n + TAIL_ELEMS, 1, n, n + TAIL_ELEMS);
      check_bytes(&run, "out", out, ref, n, 4);
    } else if (cfgs[ci].bad >= 0) {
      char elem[64];
      snprintf(elem, sizeof elem, "(program (%d, 0, 0), element %d)", cfgs[ci].bad / 64,
               cfgs[ci].bad % 64);
      const char *want[] = {"device_assert failed at ",
                            "device_assert.kiln:9:5: x within the limit", elem};
      launch_expect_assert(&run, (uint32_t)np, args, want, g_target == KILN_TARGET_CPU ? 3 : 2);
    } else {
      const char *want[] = {"device_assert.kiln:10:5: device_assert"};
      launch_expect_assert(&run, (uint32_t)np, args, want, 1);
    }
    all_ok &= kiln_test_end(&run);
    free(x), free(out), free(ref);
  }
  return all_ok;
}

/* ---- static_range ------------------------------------------------------------------------- */

/* static_range: unrolled loops (a carried var, tiles sized by the loop variable counting down, a
 * static loop with a continue inside a run-time one) against the same sums in C: exact (the
 * values make every operation exact). Past n the third plane holds 0 (v is 0 there). */
static bool test_static_range(KilnRtDevice *dev) {
  static const size_t ns[] = {100, 16, 1};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(ns); ci++) {
    size_t n = ns[ci], b = 16, g = (n + b - 1) / b, total = n + 15 * g + g * b;
    KilnDefine defs[] = {{"B", 16}};
    char shape[32];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "static_range", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 4700 + ci);
    /* quarters of small integers: every product and sum is exact, so an fma (the GPU targets
     * contract a * b + c) rounds as the separate operations do */
    float *x = kiln_test_alloc(n, 4);
    for (size_t i = 0; i < n; i++) x[i] = (float)((int)(kiln_ref_rng_next(&rng) % 64) - 32) / 4;
    float *out = kiln_test_alloc(total + TAIL_ELEMS, 4), *ref = kiln_test_alloc(total, 4);
    void *dx = kiln_test_input(&run, x, n * 4),
         *dout = kiln_test_output(&run, (total + TAIL_ELEMS) * 4);
    int32_t nn = (int32_t)n;
    void *args[] = {&dx, &dout, &nn};
    kiln_test_launch(&run, run.fn, (uint32_t)g, 1, args);
    kiln_test_fetch(&run, out, dout, (total + TAIL_ELEMS) * 4);
    kiln_test_check_untouched(&run, "out", out, 4, total + TAIL_ELEMS, 1, total,
                              total + TAIL_ELEMS);
    kiln_ref_static_range(x, ref, n, b);
    check_bytes(&run, "sum over k", out, ref, n, 4);
    check_bytes(&run, "segments sized by j", out + n, ref + n, 15 * g, 4);
    check_bytes(&run, "static loop in a run-time one", out + n + 15 * g, ref + n + 15 * g, g * b,
                4);
    all_ok &= kiln_test_end(&run);
    free(x), free(out), free(ref);
  }
  return all_ok;
}

/* ---- tensor_desc -------------------------------------------------------------------------- */

/* n floats as T's bytes (f32, or f16 rounded to nearest: the tests' values are exact in both). */
static void *as_elems(const float *v, size_t n, bool f16) {
  if (!f16) {
    float *p = kiln_test_alloc(n, 4);
    memcpy(p, v, n * 4);
    return p;
  }
  uint16_t *p = kiln_test_alloc(n, 2);
  for (size_t i = 0; i < n; i++) p[i] = kiln_ref_f32_to_f16(v[i]);
  return p;
}

/* The reference of an output the kernel writes in places: T's bytes where wrote is set, the
 * sentinel elsewhere (the tail included). */
static void *partly_written(const float *v, const uint8_t *wrote, size_t n, size_t total,
                            bool f16) {
  size_t elem = f16 ? 2 : 4;
  uint8_t *p = kiln_test_alloc(total, elem);
  memset(p, KILN_TEST_SENTINEL, total * elem);
  uint8_t *vals = as_elems(v, n, f16);
  for (size_t i = 0; i < n; i++)
    if (wrote[i]) memcpy(p + i * elem, vals + i * elem, elem);
  free(vals);
  return p;
}

/* Tensor descriptors: blocks overhanging their tensors on every side (negative offsets too) in
 * 1, 2 and 3 dims, in f32 and f16. The values are quarters of small integers, so 2 t + 1 and 3 t
 * are exact in both types and every output is compared bit for bit: a block's elements outside
 * its tensor read 0 and are not written (the rows' padding and the tails keep their sentinel).
 * A row stride that is not a multiple of 16 bytes fails the launch (cpu and emu only: on a GPU
 * a device-side assertion ends the context). */
static bool test_tensor_desc(KilnRtDevice *dev) {
  static const struct {
    bool f16;
    int32_t bm, bn, sm, sn, b1;
    KilnRefTensorDesc g;
  } cfgs[] = {
      {false, 16, 32, 3, 5, 16, {37, 45, 48, 52, 16, 32, 3, 5, 0, 0, 50, 16, 7, 4, 9, 48, 12}},
      {true, 8, 64, 1, 7, 32, {20, 70, 72, 80, 8, 64, 1, 7, 0, 0, 150, 32, 9, 3, 6, 64, 16}},
      {false, 32, 16, 0, 0, 16, {64, 48, 48, 48, 32, 16, 0, 0, 0, 0, 96, 16, 12, 5, 11, 60, 12}},
      /* a row stride of 47 f32: the descriptor's device_assert fails */
      {false, 16, 32, 3, 5, 16, {37, 45, 47, 52, 16, 32, 3, 5, 0, 0, 50, 16, 7, 4, 9, 48, 12}},
  };
  bool gpu = g_target != KILN_TARGET_CPU && g_target != KILN_TARGET_EMU;
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    KilnRefTensorDesc g = cfgs[ci].g;
    bool f16 = cfgs[ci].f16, fails = (g.sx * (f16 ? 2 : 4)) % 16 != 0;
    if (fails && gpu) continue;
    g.gp = (g.m + g.sm + g.bm - 1) / g.bm;
    g.gq = (g.n + g.sn + g.bn - 1) / g.bn;
    size_t elem = f16 ? 2 : 4, progs = (size_t)(g.gp * g.gq);
    size_t nx = (size_t)(g.m * g.sx), ny = (size_t)(g.m * g.sy), nz = (size_t)(g.d0 * g.s0);
    size_t nseen = progs * (size_t)(g.bm * g.bn), nseen1 = progs * (size_t)g.b1,
           nseen3 = progs * 64;
    KilnDefine defs[] = {{"T", f16 ? KILN_SCALAR_F16 : KILN_SCALAR_F32},
                         {"BM", cfgs[ci].bm},
                         {"BN", cfgs[ci].bn},
                         {"SM", cfgs[ci].sm},
                         {"SN", cfgs[ci].sn},
                         {"B1", cfgs[ci].b1}};
    char shape[96];
    snprintf(shape, sizeof shape, "%ldx%ld sx=%ld sy=%ld len=%ld z=%ldx%ldx%ld", g.m, g.n, g.sx,
             g.sy, g.len, g.d0, g.d1, g.d2);
    KilnTestRun run;
    run_begin(&run, dev, "tensor_desc", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 4500 + ci);
    float *x = kiln_test_alloc(nx, 4), *u = kiln_test_alloc((size_t)g.len, 4),
          *z = kiln_test_alloc(nz, 4);
    for (size_t i = 0; i < nx; i++) x[i] = (float)((int)(kiln_ref_rng_next(&rng) % 64) - 32) / 4;
    for (long i = 0; i < g.len; i++) u[i] = (float)((int)(kiln_ref_rng_next(&rng) % 64) - 32) / 4;
    for (size_t i = 0; i < nz; i++) z[i] = (float)((int)(kiln_ref_rng_next(&rng) % 64) - 32) / 4;
    float *seen = kiln_test_alloc(nseen, 4), *y = kiln_test_alloc(ny, 4),
          *seen1 = kiln_test_alloc(nseen1, 4), *seen3 = kiln_test_alloc(nseen3, 4),
          *w = kiln_test_alloc(nz, 4);
    uint8_t *ywrote = kiln_test_alloc(ny, 1), *wwrote = kiln_test_alloc(nz, 1);
    kiln_ref_tensor_desc(&g, x, u, z, seen, y, ywrote, seen1, seen3, w, wwrote);
    void *hx = as_elems(x, nx, f16), *hu = as_elems(u, (size_t)g.len, f16),
         *hz = as_elems(z, nz, f16);
    void *dx = kiln_test_input(&run, hx, nx * elem),
         *du = kiln_test_input(&run, hu, (size_t)g.len * elem),
         *dz = kiln_test_input(&run, hz, nz * elem);
    void *dy = kiln_test_output(&run, (ny + TAIL_ELEMS) * elem),
         *dseen = kiln_test_output(&run, (nseen + TAIL_ELEMS) * elem),
         *dseen1 = kiln_test_output(&run, (nseen1 + TAIL_ELEMS) * elem),
         *dw = kiln_test_output(&run, (nz + TAIL_ELEMS) * elem),
         *dseen3 = kiln_test_output(&run, (nseen3 + TAIL_ELEMS) * elem);
    int32_t a[10] = {(int32_t)g.m,  (int32_t)g.n,  (int32_t)g.sx, (int32_t)g.sy, (int32_t)g.len,
                     (int32_t)g.d0, (int32_t)g.d1, (int32_t)g.d2, (int32_t)g.s0, (int32_t)g.s1};
    void *args[] = {&dx,   &dy,   &dseen, &du,   &dseen1, &dz,   &dw,   &dseen3, &a[0],
                    &a[1], &a[2], &a[3],  &a[4], &a[5],   &a[6], &a[7], &a[8],   &a[9]};
    if (fails) {
      const char *want[] = {"tensor_desc.kiln:24:49: a tensor descriptor's stride is not a "
                            "multiple of 16 bytes"};
      launch_expect_assert(&run, (uint32_t)g.gp, args, want, 1);
    } else {
      kiln_test_launch(&run, run.fn, (uint32_t)g.gp, (uint32_t)g.gq, args);
      struct {
        const char *what;
        void *dev;
        const float *ref;
        const uint8_t *wrote;
        size_t n;
      } outs[] = {{"seen (2-D blocks)", dseen, seen, NULL, nseen},
                  {"y (2-D stores)", dy, y, ywrote, ny},
                  {"seen1 (1-D blocks)", dseen1, seen1, NULL, nseen1},
                  {"seen3 (3-D blocks)", dseen3, seen3, NULL, nseen3},
                  {"w (3-D stores)", dw, w, wwrote, nz}};
      for (size_t o = 0; o < COUNT(outs); o++) {
        size_t total = outs[o].n + TAIL_ELEMS;
        void *got = kiln_test_alloc(total, elem);
        kiln_test_fetch(&run, got, outs[o].dev, total * elem);
        void *ref;
        if (outs[o].wrote) {
          ref = partly_written(outs[o].ref, outs[o].wrote, outs[o].n, total, f16);
        } else {
          ref = partly_written(outs[o].ref, NULL, 0, total, f16);
          void *vals = as_elems(outs[o].ref, outs[o].n, f16);
          memcpy(ref, vals, outs[o].n * elem);
          free(vals);
        }
        check_bytes(&run, outs[o].what, got, ref, total, elem);
        free(got), free(ref);
      }
    }
    all_ok &= kiln_test_end(&run);
    free(x), free(u), free(z), free(seen), free(y), free(seen1), free(seen3), free(w);
    free(ywrote), free(wwrote), free(hx), free(hu), free(hz);
  }
  return all_ok;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* ---- atomic64 ----------------------------------------------------------------------------- */

/* The reference of atomic64.kiln's bins, exchanges, tile and total (its comment says what);
 * integers in C's unsigned arithmetic (the i64 sums wrap as the kernel's), fsum in index order
 * with fabs_sum[k] = the sum of |f| over bin k, for the rounding bound. */
typedef struct Atomic64Ref {
  int64_t hi[41];
  uint64_t hu[17];
  uint32_t h32[16];
  double hf[16], fabs_sum[8];
  size_t count[8];
} Atomic64Ref;

static void ref_atomic64(const int64_t *x, const uint64_t *u, const double *f, const int32_t *bin,
                         size_t n, size_t grid, Atomic64Ref *r) {
  memset(r, 0, sizeof *r);
  for (int k = 0; k < 8; k++) {
    r->hi[8 + k] = INT64_MIN, r->hi[16 + k] = INT64_MAX;
    r->hu[8 + k] = UINT64_MAX, r->h32[8 + k] = UINT32_MAX;
    r->hf[8 + k] = -INFINITY;
  }
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    int k = bin[i];
    uint32_t lo = (uint32_t)u[i];
    r->hi[k] = (int64_t)((uint64_t)r->hi[k] + (uint64_t)x[i]);
    r->hi[8 + k] = x[i] > r->hi[8 + k] ? x[i] : r->hi[8 + k];
    r->hi[16 + k] = x[i] < r->hi[16 + k] ? x[i] : r->hi[16 + k];
    r->hu[k] = u[i] > r->hu[k] ? u[i] : r->hu[k];
    r->hu[8 + k] = u[i] < r->hu[8 + k] ? u[i] : r->hu[8 + k];
    r->h32[k] = lo > r->h32[k] ? lo : r->h32[k];
    r->h32[8 + k] = lo < r->h32[8 + k] ? lo : r->h32[8 + k];
    r->hf[k] += f[i];
    r->hf[8 + k] = f[i] > r->hf[8 + k] ? f[i] : r->hf[8 + k];
    r->fabs_sum[k] += fabs(f[i]);
    r->count[k]++;
    total += (uint64_t)x[i];
  }
  for (int j = 0; j < 16; j++)
    r->hi[24 + j] = (int64_t)((grid * (size_t)j + grid * (grid - 1) / 2) << 32);
  r->hi[40] = (int64_t)total;
  r->hu[16] = ((uint64_t)1 << 40) + grid;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The f64 sums: k terms added in any order differ from the exact sum by at most
 * (k - 1) * 2^-53 * sum|f| (each addition rounds once, to a partial sum bounded by sum|f|),
 * and so does the reference's, so the two are within twice that; an add done in f32 (2^-24)
 * or one term lost misses it by far. */
static void check_fsum(KilnTestRun *run, const double *got, const Atomic64Ref *r) {
  if (!run->ok || run->d.emit) return;
  double worst = 0;
  for (int k = 0; k < 8; k++) {
    double k1 = r->count[k] > 1 ? (double)(r->count[k] - 1) : 0.0;
    double tol = 2.0 * k1 * 0x1p-53 * r->fabs_sum[k], err = fabs(got[k] - r->hf[k]);
    if (tol > 0) worst = fmax(worst, err / tol);
    if (!(err <= tol)) {
      kiln_test_fail(run, "fsum[%d] = %.17g, reference %.17g, bound %.3g", k, got[k], r->hf[k],
                     tol);
      return;
    }
  }
  printf("       fsum: worst error %.3f of its bound\n", worst);
}

static bool test_atomic64(KilnRtDevice *dev) {
  static const struct {
    int32_t n, block;
  } cfgs[] = {{1000, 256}, {5000, 128}, {1, 128}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, block = (size_t)cfgs[ci].block;
    size_t grid = kiln_test_cdiv(n, block), npad = grid * block;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "atomic64", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 3100 + ci);
    int64_t *x = kiln_test_alloc(n, sizeof *x), *slots = kiln_test_alloc(n, sizeof *slots);
    uint64_t *u = kiln_test_alloc(n, sizeof *u);
    double *f = kiln_test_alloc(n, sizeof *f), *fslots = kiln_test_alloc(n, sizeof *fslots);
    int32_t *bin = kiln_test_alloc(n, sizeof *bin);
    for (size_t i = 0; i < n; i++) {
      x[i] = (int64_t)kiln_ref_rng_next(&rng);
      u[i] = kiln_ref_rng_next(&rng);
      f[i] = (double)(int64_t)kiln_ref_rng_next(&rng) * 0x1p-63; /* 53 random bits, both signs */
      slots[i] = (int64_t)kiln_ref_rng_next(&rng);
      fslots[i] = (double)(int64_t)kiln_ref_rng_next(&rng) * 0x1p-40;
      bin[i] = (int32_t)(kiln_ref_rng_next(&rng) % 8);
    }
    Atomic64Ref r;
    ref_atomic64(x, u, f, bin, n, grid, &r);
    /* the cells start at each operation's identity (the counter at 2^40) */
    Atomic64Ref init;
    ref_atomic64(x, u, f, bin, 0, 0, &init);
    init.hu[16] = (uint64_t)1 << 40;
    void *dx = kiln_test_input(&run, x, n * sizeof *x),
         *du = kiln_test_input(&run, u, n * sizeof *u);
    void *df = kiln_test_input(&run, f, n * sizeof *f);
    void *dbin = kiln_test_input(&run, bin, n * sizeof *bin);
    void *dhi = kiln_test_input(&run, init.hi, sizeof init.hi);
    void *dhu = kiln_test_input(&run, init.hu, sizeof init.hu);
    void *dh32 = kiln_test_input(&run, init.h32, sizeof init.h32);
    void *dhf = kiln_test_input(&run, init.hf, sizeof init.hf);
    void *dslots = kiln_test_input(&run, slots, n * sizeof *slots);
    void *dfslots = kiln_test_input(&run, fslots, n * sizeof *fslots);
    void *dprev = kiln_test_output(&run, (npad + TAIL_ELEMS) * sizeof(int64_t));
    void *dfprev = kiln_test_output(&run, (npad + TAIL_ELEMS) * sizeof(double));
    void *dfcas = kiln_test_output(&run, (npad + TAIL_ELEMS) * sizeof(double));
    void *dtickets = kiln_test_output(&run, (grid + TAIL_ELEMS) * sizeof(uint64_t));
    int32_t n32 = cfgs[ci].n, npad32 = (int32_t)npad;
    void *args[] = {&dx,     &du,    &df,      &dbin,   &dhi,   &dhu,      &dh32, &dhf,
                    &dslots, &dprev, &dfslots, &dfprev, &dfcas, &dtickets, &n32,  &npad32};
    kiln_test_launch(&run, run.fn, (uint32_t)grid, 1, args);

    Atomic64Ref got;
    int64_t *prev = kiln_test_alloc(npad + TAIL_ELEMS, sizeof *prev),
            *rprev = kiln_test_alloc(npad, sizeof *rprev),
            *slots_got = kiln_test_alloc(n, sizeof *slots_got);
    double *fprev = kiln_test_alloc(npad + TAIL_ELEMS, sizeof *fprev),
           *rfprev = kiln_test_alloc(npad, sizeof *rfprev),
           *fslots_got = kiln_test_alloc(n, sizeof *fslots_got),
           *fcas = kiln_test_alloc(npad + TAIL_ELEMS, sizeof *fcas),
           *rfcas = kiln_test_alloc(npad, sizeof *rfcas),
           *rfslots = kiln_test_alloc(n, sizeof *rfslots);
    uint64_t *tickets = kiln_test_alloc(grid + TAIL_ELEMS, sizeof *tickets),
             *rtickets = kiln_test_alloc(grid, sizeof *rtickets);
    kiln_test_fetch(&run, got.hi, dhi, sizeof got.hi);
    kiln_test_fetch(&run, got.hu, dhu, sizeof got.hu);
    kiln_test_fetch(&run, got.h32, dh32, sizeof got.h32);
    kiln_test_fetch(&run, got.hf, dhf, sizeof got.hf);
    kiln_test_fetch(&run, prev, dprev, (npad + TAIL_ELEMS) * sizeof *prev);
    kiln_test_fetch(&run, fprev, dfprev, (npad + TAIL_ELEMS) * sizeof *fprev);
    kiln_test_fetch(&run, fcas, dfcas, (npad + TAIL_ELEMS) * sizeof *fcas);
    kiln_test_fetch(&run, slots_got, dslots, n * sizeof *slots_got);
    kiln_test_fetch(&run, fslots_got, dfslots, n * sizeof *fslots_got);
    kiln_test_fetch(&run, tickets, dtickets, (grid + TAIL_ELEMS) * sizeof *tickets);
    kiln_test_check_untouched(&run, "prev", prev, sizeof *prev, npad + TAIL_ELEMS, 1, npad,
                              npad + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "fprev", fprev, sizeof *fprev, npad + TAIL_ELEMS, 1, npad,
                              npad + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "fcas", fcas, sizeof *fcas, npad + TAIL_ELEMS, 1, npad,
                              npad + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "tickets", tickets, sizeof *tickets, grid + TAIL_ELEMS, 1, grid,
                              grid + TAIL_ELEMS);
    for (size_t i = 0; i < npad; i++) {
      rprev[i] = i < n ? slots[i] : 0;
      rfprev[i] = i < n ? fslots[i] : 0.0;
      rfcas[i] = i < n ? f[i] : 0.0; /* the CAS's old values: the exchanged f */
    }
    /* the CAS after the exchange: even cells compared with their own bits (swapped to -f) */
    for (size_t i = 0; i < n; i++) rfslots[i] = i % 2 == 0 ? -f[i] : f[i];
    for (size_t p = 0; p < grid; p++) rtickets[p] = ((uint64_t)1 << 40) + p;
    qsort(tickets, grid, sizeof *tickets, cmp_u64);
    check_bytes(&run, "i64 add/max/min, tile, total", got.hi, r.hi, 41, sizeof *r.hi);
    check_bytes(&run, "u64 max/min, counter", got.hu, r.hu, 17, sizeof *r.hu);
    check_bytes(&run, "u32 max/min", got.h32, r.h32, 16, sizeof *r.h32);
    check_bytes(&run, "f64 max", got.hf + 8, r.hf + 8, 8, sizeof *r.hf);
    check_fsum(&run, got.hf, &r);
    check_bytes(&run, "i64 xchg old", prev, rprev, npad, sizeof *prev);
    check_bytes(&run, "f64 xchg old", fprev, rfprev, npad, sizeof *fprev);
    check_bytes(&run, "i64 slots", slots_got, x, n, sizeof *x);
    check_bytes(&run, "f64 cas old", fcas, rfcas, npad, sizeof *fcas);
    check_bytes(&run, "f64 slots after cas", fslots_got, rfslots, n, sizeof *rfslots);
    check_bytes(&run, "tickets (sorted)", tickets, rtickets, grid, sizeof *tickets);
    all_ok &= kiln_test_end(&run);
    free(x), free(slots), free(u), free(f), free(fslots), free(bin), free(prev), free(rprev),
        free(slots_got), free(fprev), free(rfprev), free(fslots_got), free(fcas), free(rfcas),
        free(rfslots), free(tickets), free(rtickets);
  }
  return all_ok;
}

/* ---- atomic16 ----------------------------------------------------------------------------- */

enum { A16_BINS = 64, A16_TICKET0 = 65530 };

/* The reference of atomic16.kiln's bins (its comment says what): integers in C's wrapping
 * arithmetic, f16/bf16 as bits; the signed sums of the values as each type holds them in double
 * (exact: multiples of 2^-10 far from 2^53), with the sums of their |x| and the count per bin,
 * for the rounding bound. */
typedef struct Atomic16Ref {
  uint16_t hf[3 * A16_BINS], hb[3 * A16_BINS];
  int16_t hi[3 * A16_BINS];
  uint16_t hu[2 * A16_BINS + 1];
  int8_t h8[A16_BINS];
  uint8_t hu8[A16_BINS];
  double xsum[2][A16_BINS], xabs[2][A16_BINS], qsum[A16_BINS]; /* [0] f16, [1] bf16 */
  size_t count[A16_BINS];
} Atomic16Ref;

static void ref_atomic16_init(Atomic16Ref *r) {
  memset(r, 0, sizeof *r);
  for (int k = 0; k < A16_BINS; k++) {
    r->hf[2 * A16_BINS + k] = 0xfc00; /* f16 -inf: max's identity */
    r->hb[2 * A16_BINS + k] = 0x7f80; /* bf16 +inf: min's identity */
    r->hi[A16_BINS + k] = INT16_MIN, r->hi[2 * A16_BINS + k] = INT16_MAX;
    r->hu[A16_BINS + k] = UINT16_MAX;
  }
  r->hu[2 * A16_BINS] = A16_TICKET0;
}

static void ref_atomic16(const float *x, const float *q, const int32_t *xi, const int32_t *bin,
                         size_t n, size_t grid, Atomic16Ref *r) {
  ref_atomic16_init(r);
  for (size_t i = 0; i < n; i++) {
    int k = bin[i];
    int16_t s = (int16_t)xi[i];
    uint16_t u = (uint16_t)xi[i];
    float hx = kiln_ref_round_f16(x[i]), bx = kiln_ref_round_bf16(x[i]);
    r->xsum[0][k] += hx, r->xabs[0][k] += fabs(hx), r->xsum[1][k] += bx, r->xabs[1][k] += fabs(bx);
    r->qsum[k] += q[i], r->count[k]++;
    uint16_t *fmax = &r->hf[2 * A16_BINS + k], *bmin = &r->hb[2 * A16_BINS + k];
    if (hx > kiln_ref_f16_to_f32(*fmax)) *fmax = kiln_ref_f32_to_f16(hx);
    if (bx < kiln_ref_bf16_to_f32(*bmin)) *bmin = kiln_ref_f32_to_bf16(bx);
    r->hi[k] = (int16_t)(uint16_t)((uint16_t)r->hi[k] + u);
    r->hi[A16_BINS + k] = s > r->hi[A16_BINS + k] ? s : r->hi[A16_BINS + k];
    r->hi[2 * A16_BINS + k] = s < r->hi[2 * A16_BINS + k] ? s : r->hi[2 * A16_BINS + k];
    r->hu[k] = u > r->hu[k] ? u : r->hu[k];
    r->hu[A16_BINS + k] = u < r->hu[A16_BINS + k] ? u : r->hu[A16_BINS + k];
    r->h8[k] = (int8_t)(uint8_t)((uint8_t)r->h8[k] + (uint8_t)xi[i]);
    r->hu8[k] = (uint8_t)xi[i] > r->hu8[k] ? (uint8_t)xi[i] : r->hu8[k];
  }
  for (int k = 0; k < A16_BINS; k++) { /* the quarters' sums are exact in both types */
    r->hf[A16_BINS + k] = kiln_ref_f32_to_f16((float)r->qsum[k]);
    r->hb[A16_BINS + k] = kiln_ref_f32_to_bf16((float)r->qsum[k]);
  }
  r->hu[2 * A16_BINS] = (uint16_t)(A16_TICKET0 + grid);
}

/* The signed sums: c terms added one at a time, in any order, each add rounded once to the
 * cell's type (unit roundoff u: 2^-11 for f16, 2^-9 for bf16; every GPU and CPU path rounds the
 * exact sum once: the f32 add that some take first is exact for two multiples of 2^-10 below
 * 2^13), are within gamma(c - 1) * sum|x| of the exact sum, gamma(k) = k u / (1 - k
 * u) (recursive summation's bound; the first add, to the cell's 0, is exact). With about 16
 * terms a bin (n = 1000) the f16 bound is ~0.12 and a lost term (|x| ~1) misses it; the
 * quarters, summed exactly, catch any lost or doubled update at every size. */
static void check_sum16(KilnTestRun *run, const char *what, const uint16_t *got, bool bf,
                        const Atomic16Ref *r) {
  if (!run->ok || run->d.emit) return;
  double u = bf ? 0x1p-9 : 0x1p-11, worst = 0;
  for (int k = 0; k < A16_BINS; k++) {
    double c1 = r->count[k] > 1 ? (double)(r->count[k] - 1) : 0.0;
    double tol = c1 * u / (1 - c1 * u) * r->xabs[bf][k];
    double g = bf ? kiln_ref_bf16_to_f32(got[k]) : kiln_ref_f16_to_f32(got[k]);
    double err = fabs(g - r->xsum[bf][k]);
    if (tol > 0) worst = fmax(worst, err / tol);
    if (!(err <= tol)) {
      kiln_test_fail(run, "%s[%d] = %.9g, exact %.9g, bound %.3g (%zu terms)", what, k, g,
                     r->xsum[bf][k], tol, r->count[k]);
      return;
    }
  }
  printf("       %s: worst error %.3f of its bound\n", what, worst);
}

static int cmp_u16(const void *a, const void *b) {
  uint16_t x = *(const uint16_t *)a, y = *(const uint16_t *)b;
  return (x > y) - (x < y);
}

static bool test_atomic16(KilnRtDevice *dev) {
  static const struct {
    int32_t n, block;
  } cfgs[] = {{1000, 256}, {3000, 128}, {1, 128}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, block = (size_t)cfgs[ci].block;
    size_t grid = kiln_test_cdiv(n, block), npad = grid * block;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "atomic16", defs, COUNT(defs), shape);

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 3600 + ci);
    float *x = kiln_test_alloc(n, sizeof *x), *q = kiln_test_alloc(n, sizeof *q);
    int32_t *xi = kiln_test_alloc(n, sizeof *xi), *bin = kiln_test_alloc(n, sizeof *bin);
    int16_t *slots = kiln_test_alloc(n, sizeof *slots);
    uint16_t *fslots = kiln_test_alloc(n, sizeof *fslots),
             *bslots = kiln_test_alloc(n, sizeof *bslots);
    for (size_t i = 0; i < n; i++) {
      /* x: multiples of 2^-10 in (-2, 2), exact in f16, rounded to 8 bits in bf16 */
      x[i] = (float)((int)(kiln_ref_rng_next(&rng) % 4095) - 2047) * 0x1p-10f;
      q[i] = (float)(kiln_ref_rng_next(&rng) % 5) * 0.25f;
      xi[i] = (int32_t)(uint32_t)kiln_ref_rng_next(&rng); /* every bit pattern */
      bin[i] = (int32_t)(kiln_ref_rng_next(&rng) % A16_BINS);
      slots[i] = (int16_t)kiln_ref_rng_next(&rng);
      fslots[i] = kiln_ref_f32_to_f16((float)((int)(kiln_ref_rng_next(&rng) % 2001) - 1000));
      bslots[i] =
          kiln_ref_f32_to_bf16((float)((int)(kiln_ref_rng_next(&rng) % 511) - 255) * 0x1p-7f);
    }
    Atomic16Ref r, init;
    ref_atomic16(x, q, xi, bin, n, grid, &r);
    ref_atomic16_init(&init);
    for (int k = 0; k < A16_BINS; k++) /* bf16 holds a quarter's sum exactly below 64 */
      if (r.qsum[k] >= 64) kiln_test_fail(&run, "inputs: quarters' sum %g is not exact", r.qsum[k]);
    void *dx = kiln_test_input(&run, x, n * sizeof *x), *dq = kiln_test_input(&run, q, n * 4);
    void *dxi = kiln_test_input(&run, xi, n * sizeof *xi);
    void *dbin = kiln_test_input(&run, bin, n * sizeof *bin);
    void *dhf = kiln_test_input(&run, init.hf, sizeof init.hf);
    void *dhb = kiln_test_input(&run, init.hb, sizeof init.hb);
    void *dhi = kiln_test_input(&run, init.hi, sizeof init.hi);
    void *dhu = kiln_test_input(&run, init.hu, sizeof init.hu);
    void *dh8 = kiln_test_input(&run, init.h8, sizeof init.h8);
    void *dhu8 = kiln_test_input(&run, init.hu8, sizeof init.hu8);
    void *dslots = kiln_test_input(&run, slots, n * sizeof *slots);
    void *dfslots = kiln_test_input(&run, fslots, n * sizeof *fslots);
    void *dbslots = kiln_test_input(&run, bslots, n * sizeof *bslots);
    size_t out_n = npad + TAIL_ELEMS;
    void *dprev = kiln_test_output(&run, out_n * 2), *dcprev = kiln_test_output(&run, out_n * 2);
    void *dfprev = kiln_test_output(&run, out_n * 2), *dfcas = kiln_test_output(&run, out_n * 2);
    void *dbcas = kiln_test_output(&run, out_n * 2);
    void *dtickets = kiln_test_output(&run, (grid + TAIL_ELEMS) * 2);
    int32_t n32 = cfgs[ci].n, npad32 = (int32_t)npad;
    void *args[] = {&dx,     &dq,    &dxi,     &dbin,   &dhf,      &dhb,    &dhi,
                    &dhu,    &dh8,   &dhu8,    &dslots, &dprev,    &dcprev, &dfslots,
                    &dfprev, &dfcas, &dbslots, &dbcas,  &dtickets, &n32,    &npad32};
    kiln_test_launch(&run, run.fn, (uint32_t)grid, 1, args);

    Atomic16Ref got;
    memset(&got, 0, sizeof got);
    kiln_test_fetch(&run, got.hf, dhf, sizeof got.hf);
    kiln_test_fetch(&run, got.hb, dhb, sizeof got.hb);
    kiln_test_fetch(&run, got.hi, dhi, sizeof got.hi);
    kiln_test_fetch(&run, got.hu, dhu, sizeof got.hu);
    kiln_test_fetch(&run, got.h8, dh8, sizeof got.h8);
    kiln_test_fetch(&run, got.hu8, dhu8, sizeof got.hu8);
    /* outputs and their references: 16-bit cells each */
    enum { PREV, CPREV, FPREV, FCAS, BCAS, SLOTS, FSLOTS, BSLOTS, NOUT };
    static const char *const names[NOUT] = {
        "i16 xchg old", "i16 cas old",         "f16 xchg old",        "f16 cas old",
        "bf16 cas old", "i16 slots after cas", "f16 slots after cas", "bf16 slots after cas"};
    void *dev_of[NOUT] = {dprev, dcprev, dfprev, dfcas, dbcas, dslots, dfslots, dbslots};
    uint16_t *out[NOUT], *ref[NOUT];
    for (int o = 0; o < NOUT; o++) {
      size_t cells = o < SLOTS ? out_n : n;
      out[o] = kiln_test_alloc(cells, 2);
      ref[o] = kiln_test_alloc(cells, 2);
      kiln_test_fetch(&run, out[o], dev_of[o], cells * 2);
      if (o < SLOTS) kiln_test_check_untouched(&run, names[o], out[o], 2, out_n, 1, npad, out_n);
    }
    for (size_t i = 0; i < n; i++) {
      uint16_t s16 = (uint16_t)xi[i], f16 = kiln_ref_f32_to_f16(x[i]);
      bool even = i % 2 == 0;
      ref[PREV][i] = (uint16_t)slots[i];
      ref[CPREV][i] = s16; /* the CAS after the exchange finds what the exchange wrote */
      ref[FPREV][i] = fslots[i];
      ref[FCAS][i] = f16;
      ref[BCAS][i] = bslots[i];
      ref[SLOTS][i] = even ? (uint16_t)~s16 : s16;
      ref[FSLOTS][i] = even ? kiln_ref_f32_to_f16(-x[i]) : f16;
      ref[BSLOTS][i] =
          even ? kiln_ref_f32_to_bf16(2.0f * kiln_ref_bf16_to_f32(bslots[i])) : bslots[i];
    } /* masked-off elements (n <= i < npad) return 0: the buffers were zeroed */
    uint16_t *tickets = kiln_test_alloc(grid + TAIL_ELEMS, 2), *rtickets = kiln_test_alloc(grid, 2);
    kiln_test_fetch(&run, tickets, dtickets, (grid + TAIL_ELEMS) * 2);
    kiln_test_check_untouched(&run, "tickets", tickets, 2, grid + TAIL_ELEMS, 1, grid,
                              grid + TAIL_ELEMS);
    for (size_t p = 0; p < grid; p++) rtickets[p] = (uint16_t)(A16_TICKET0 + p);
    qsort(tickets, grid, 2, cmp_u16);
    qsort(rtickets, grid, 2, cmp_u16);
    check_sum16(&run, "f16 add", got.hf, false, &r);
    check_sum16(&run, "bf16 add", got.hb, true, &r);
    check_bytes(&run, "f16 add of quarters, max", got.hf + A16_BINS, r.hf + A16_BINS, 2 * A16_BINS,
                2);
    check_bytes(&run, "bf16 add of quarters, min", got.hb + A16_BINS, r.hb + A16_BINS, 2 * A16_BINS,
                2);
    check_bytes(&run, "i16 add/max/min", got.hi, r.hi, 3 * A16_BINS, 2);
    check_bytes(&run, "u16 max/min, counter", got.hu, r.hu, 2 * A16_BINS + 1, 2);
    check_bytes(&run, "i8 add", got.h8, r.h8, A16_BINS, 1);
    check_bytes(&run, "u8 max", got.hu8, r.hu8, A16_BINS, 1);
    for (int o = 0; o < NOUT; o++)
      check_bytes(&run, names[o], out[o], ref[o], o < SLOTS ? npad : n, 2);
    check_bytes(&run, "tickets (sorted)", tickets, rtickets, grid, 2);
    all_ok &= kiln_test_end(&run);
    for (int o = 0; o < NOUT; o++) free(out[o]), free(ref[o]);
    free(x), free(q), free(xi), free(bin), free(slots), free(fslots), free(bslots), free(tickets),
        free(rtickets);
  }
  return all_ok;
}

/* ---- bool_store --------------------------------------------------------------------------- */

/* i1 in memory: bytes in, bytes out (bool_store.kiln's comment says what). The flags are drawn
 * from 0, 1, 2, 0x80 and 0xff: every nonzero one must read as true on every target. */
static bool test_bool_store(KilnRtDevice *dev) {
  static const struct {
    int32_t n, block;
  } cfgs[] = {{4096, 1024}, {1000, 1024}, {777, 64}, {1, 64}};
  static const uint8_t flag_bytes[] = {0, 1, 2, 0x80, 0xff};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, block = (size_t)cfgs[ci].block;
    size_t grid = kiln_test_cdiv(n, block), out_n = grid * block + TAIL_ELEMS;
    int32_t n32 = cfgs[ci].n, half = n32 / 2;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "bool_store", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 3700 + ci);
    float *x = kiln_test_random_f32(&rng, n, -1.0f, 1.0f);
    size_t npad = grid * block; /* flags covers whole blocks: prog's loads read them all */
    uint8_t *flags = kiln_test_alloc(npad, 1), *rout = kiln_test_alloc(n, 1),
            *rboth = kiln_test_alloc(n, 1), *rprog = kiln_test_alloc(n, 1);
    int32_t *rint = kiln_test_alloc(n, sizeof *rint);
    for (size_t i = 0; i < npad; i++)
      flags[i] = flag_bytes[kiln_ref_rng_next(&rng) % COUNT(flag_bytes)];
    for (size_t i = 0; i < n; i++) {
      bool f = flags[i] != 0;
      rout[i] = (uint8_t)((x[i] > 0.0f) != f);
      rboth[i] = (uint8_t)((int32_t)i < half ? f : 1);
      rint[i] = f;
      rprog[i] = (uint8_t)((i / block) % 2 == 0 ? f : 1);
    }
    void *dx = kiln_test_input(&run, x, n * sizeof *x),
         *dflags = kiln_test_input(&run, flags, npad);
    void *dout = kiln_test_output(&run, out_n), *dboth = kiln_test_output(&run, out_n);
    void *dint = kiln_test_output(&run, out_n * sizeof(int32_t)),
         *dprog = kiln_test_output(&run, out_n);
    void *args[] = {&dx, &dflags, &dout, &dboth, &dint, &dprog, &n32, &half};
    kiln_test_launch(&run, run.fn, (uint32_t)grid, 1, args);
    uint8_t *out = kiln_test_alloc(out_n, 1), *both = kiln_test_alloc(out_n, 1);
    int32_t *as_int = kiln_test_alloc(out_n, sizeof *as_int);
    uint8_t *prog = kiln_test_alloc(out_n, 1);
    kiln_test_fetch(&run, prog, dprog, out_n);
    kiln_test_check_untouched(&run, "prog", prog, 1, out_n, 1, n, out_n);
    kiln_test_fetch(&run, out, dout, out_n);
    kiln_test_fetch(&run, both, dboth, out_n);
    kiln_test_fetch(&run, as_int, dint, out_n * sizeof *as_int);
    kiln_test_check_untouched(&run, "out", out, 1, out_n, 1, n, out_n);
    kiln_test_check_untouched(&run, "both", both, 1, out_n, 1, n, out_n);
    kiln_test_check_untouched(&run, "as_int", as_int, sizeof *as_int, out_n, 1, n, out_n);
    check_bytes(&run, "(x > 0) != flag, as bytes", out, rout, n, 1);
    check_bytes(&run, "flag, other true past half", both, rboth, n, 1);
    kiln_test_check_equal_i32(&run, "flag as i32", "ref", as_int, rint, n);
    check_bytes(&run, "flag in even programs, other true in odd ones", prog, rprog, n, 1);
    all_ok &= kiln_test_end(&run);
    free(x), free(flags), free(rout), free(rboth), free(rint), free(out), free(both), free(as_int),
        free(rprog), free(prog);
  }
  return all_ok;
}

/* What unsigned_ops.kiln computes, in C's unsigned arithmetic (the kernel's comment says what). */
static void ref_unsigned_ops(const uint32_t *a, const uint32_t *b, const uint8_t *c,
                             const uint64_t *d, size_t n, uint32_t s, size_t bs, uint32_t *o32,
                             uint8_t *o8, uint64_t *o64, int32_t *oi, float *of) {
  size_t np = (n + bs - 1) / bs;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = a[i], y = b[i];
    o32[i] = x / y;
    o32[n + i] = x % y;
    o32[2 * n + i] = x >> 7;
    o32[3 * n + i] = (x > y ? x : y) - (x < y ? x : y);
    o32[4 * n + i] = (uint32_t)c[i] * 16777216u + s;
    oi[i] = (x < y) + 2 * (x >= 2147483648u) + 4 * (x / 2 > y / 2);
    oi[n + i] = (int32_t)c[i] - (int32_t)(int8_t)c[i];
    of[i] = (float)x + (float)c[i];
    o8[i] = (uint8_t)((uint8_t)x / 3 + c[i] % 7);
    o64[i] = d[i] / 1000003u + (d[i] >> 40);
    o64[n + i] = (uint64_t)(int64_t)(int32_t)x ^ (uint64_t)x;
  }
  for (size_t p = 0; p < np; p++) {
    uint32_t mx = 0, mn = UINT32_MAX, sum = 0, run = 0;
    uint64_t mx64 = 0, mn64 = UINT64_MAX;
    int32_t amx = 0, amn = 0;
    uint32_t *sorted = o32 + 6 * n + 3 * np + p * bs;
    for (size_t j = 0; j < bs; j++) {
      size_t i = p * bs + j;
      uint32_t x = i < n ? a[i] : 0, xm = i < n ? a[i] : UINT32_MAX;
      if (x > mx) mx = x, amx = (int32_t)j;
      if (xm < mn) mn = xm, amn = (int32_t)j;
      sum += i < n ? c[i] : 0;
      if (i < n && d[i] > mx64) mx64 = d[i];
      if (i < n && d[i] < mn64) mn64 = d[i];
      run += i < n ? c[i] : 0;
      if (i < n) o32[5 * n + i] = run;
      sorted[j] = x;
    }
    qsort(sorted, bs, sizeof *sorted, cmp_u32);
    o32[6 * n + 3 * p] = mx;
    o32[6 * n + 3 * p + 1] = mn;
    o32[6 * n + 3 * p + 2] = sum;
    o64[2 * n + 2 * p] = mx64;
    o64[2 * n + 2 * p + 1] = mn64;
    oi[2 * n + 2 * p] = amx;
    oi[2 * n + 2 * p + 1] = amn;
  }
}

/* Unsigned integers: every result is an exact integer (the f32 sums of an integer below 2^32
 * and one below 256 round once, as C's do), so all must equal the reference bit for bit. */
static bool test_unsigned_ops(KilnRtDevice *dev) {
  static const struct {
    int32_t n, b;
  } cfgs[] = {{1000, 128}, {1, 32}, {97, 32}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, bs = (size_t)cfgs[ci].b, np = (n + bs - 1) / bs;
    size_t n32 = 6 * n + 3 * np + np * bs, n8 = n, n64 = 2 * n + 2 * np, ni = 2 * n + 2 * np;
    size_t nf = n;
    KilnDefine defs[] = {{"B", cfgs[ci].b}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "unsigned_ops", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 3100 + ci);
    uint32_t *a = kiln_test_alloc(n, sizeof *a), *b = kiln_test_alloc(n, sizeof *b);
    uint8_t *c = kiln_test_alloc(n, sizeof *c);
    uint64_t *d = kiln_test_alloc(n, sizeof *d);
    for (size_t i = 0; i < n; i++) {
      uint64_t r = kiln_ref_rng_next(&rng);
      a[i] = (uint32_t)r;
      b[i] = ((uint32_t)(r >> 32) >> (r % 31)) | 1u; /* nonzero, of every magnitude */
      if (i % 5 == 0) b[i] |= 0x80000000u;           /* and above 2^31 */
      c[i] = (uint8_t)(r >> 20);
      d[i] = kiln_ref_rng_next(&rng);
    }
    uint32_t s = 0xC0000001u;
    uint32_t *g32 = kiln_test_alloc(n32 + TAIL_ELEMS, 4), *r32 = kiln_test_alloc(n32, 4);
    uint8_t *g8 = kiln_test_alloc(n8 + TAIL_ELEMS, 1), *r8 = kiln_test_alloc(n8, 1);
    uint64_t *g64 = kiln_test_alloc(n64 + TAIL_ELEMS, 8), *r64 = kiln_test_alloc(n64, 8);
    int32_t *gi = kiln_test_alloc(ni + TAIL_ELEMS, 4), *ri = kiln_test_alloc(ni, 4);
    float *gf = kiln_test_alloc(nf + TAIL_ELEMS, 4), *rf = kiln_test_alloc(nf, 4);
    void *da = kiln_test_input(&run, a, n * 4), *db = kiln_test_input(&run, b, n * 4),
         *dc = kiln_test_input(&run, c, n), *dd = kiln_test_input(&run, d, n * 8);
    void *d32 = kiln_test_output(&run, (n32 + TAIL_ELEMS) * 4),
         *d8 = kiln_test_output(&run, n8 + TAIL_ELEMS),
         *d64 = kiln_test_output(&run, (n64 + TAIL_ELEMS) * 8),
         *di = kiln_test_output(&run, (ni + TAIL_ELEMS) * 4),
         *df = kiln_test_output(&run, (nf + TAIL_ELEMS) * 4);
    int32_t nn = (int32_t)n;
    void *args[] = {&da, &db, &dc, &dd, &d32, &d8, &d64, &di, &df, &nn, &s};
    kiln_test_launch(&run, run.fn, (uint32_t)np, 1, args);
    kiln_test_fetch(&run, g32, d32, (n32 + TAIL_ELEMS) * 4);
    kiln_test_fetch(&run, g8, d8, n8 + TAIL_ELEMS);
    kiln_test_fetch(&run, g64, d64, (n64 + TAIL_ELEMS) * 8);
    kiln_test_fetch(&run, gi, di, (ni + TAIL_ELEMS) * 4);
    kiln_test_fetch(&run, gf, df, (nf + TAIL_ELEMS) * 4);
    kiln_test_check_untouched(&run, "o32", g32, 4, n32 + TAIL_ELEMS, 1, n32, n32 + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "o8", g8, 1, n8 + TAIL_ELEMS, 1, n8, n8 + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "o64", g64, 8, n64 + TAIL_ELEMS, 1, n64, n64 + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "oi", gi, 4, ni + TAIL_ELEMS, 1, ni, ni + TAIL_ELEMS);
    ref_unsigned_ops(a, b, c, d, n, s, bs, r32, r8, r64, ri, rf);
    check_bytes(&run, "o32", g32, r32, n32, 4);
    check_bytes(&run, "o8", g8, r8, n8, 1);
    check_bytes(&run, "o64", g64, r64, n64, 8);
    check_bytes(&run, "oi", gi, ri, ni, 4);
    check_bytes(&run, "of", gf, rf, nf, 4);
    all_ok &= kiln_test_end(&run);
    free(a), free(b), free(c), free(d), free(g32), free(r32), free(g8), free(r8), free(g64);
    free(r64), free(gi), free(ri), free(gf), free(rf);
  }
  return all_ok;
}

/* |got - ref| <= rel (1 + |ref|) for n doubles, or fails the run naming the worst element. */
static void check_f64(KilnTestRun *run, const char *what, const double *got, const double *ref,
                      size_t n, double rel) {
  if (!run->ok || run->d.emit) return;
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs(got[i] - ref[i]) / (1.0 + fabs(ref[i]));
    if (!(e <= worst)) worst = e, at = i; /* a NaN is the worst */
  }
  printf("       %s: max error %.3g (at %zu), tolerance %.3g\n", what, worst, at, rel);
  if (!(worst <= rel))
    kiln_test_fail(run, "%s[%zu] = %.17g, reference %.17g", what, at, got[at], ref[at]);
}

/* What f64_ops.kiln computes, in C doubles (libm's exp, log, tanh, sin, cos, pow, fma). */
static void ref_f64_ops(const double *x, const double *y, size_t n, double s, size_t bs,
                        double *out, int64_t *oi, float *of, double *acc) {
  size_t np = (n + bs - 1) / bs;
  for (size_t i = 0; i < n; i++) {
    double a = x[i], b = y[i];
    out[i] = a * b + s;
    out[n + i] = a / b;
    out[2 * n + i] = sqrt(fabs(a)) + floor(a * 3.0);
    out[3 * n + i] = exp(a) - log(fabs(b) + 1.0);
    out[4 * n + i] = tanh(a) + sin(b) * cos(a);
    out[5 * n + i] = pow(fabs(a), 1.5) + fma(a, b, s);
    out[6 * n + i] = (double)(float)a - a;
    oi[i] = (int64_t)(a * 1.0e9) + (a < b);
    of[i] = (float)a;
  }
  *acc = 0.0;
  for (size_t p = 0; p < np; p++) {
    double sum = 0.0, mx = -1.0e300, mn = 1.0e300;
    size_t amn = 0;
    for (size_t j = 0; j < bs; j++) {
      size_t i = p * bs + j;
      if (i >= n) continue;
      sum += x[i];
      out[7 * n + i] = sum;
      if (x[i] > mx) mx = x[i];
      if (y[i] < mn) mn = y[i], amn = j;
    }
    out[8 * n + 3 * p] = sum;
    out[8 * n + 3 * p + 1] = mx;
    out[8 * n + 3 * p + 2] = (double)amn;
    *acc += sum;
  }
}

/* f64 on every target. Each result is a few rounded double operations (for the math builtins
 * libm's on the cpu target, the GPU targets' own within 1 to 4 ulp: f64_math), within a few ulps (2^-52 = 2.2e-16) of the
 * reference relative to 1 + |ref|: 1e-13 leaves room for another libm and for sums in another
 * order (at most 128 terms of |x| <= 4: 128 * 4 * 2^-52 = 1.1e-13 of the largest partial sum;
 * the atomic total over 1000 terms: 1e-12), and any f32 step (2^-24 = 6e-8) fails it by
 * 5 orders of magnitude. The f32 rounding (a as f32) and the i64 conversion are exact. */
static bool test_f64_ops(KilnRtDevice *dev) {
  static const struct {
    int32_t n, b;
  } cfgs[] = {{1000, 128}, {1, 32}, {97, 32}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, bs = (size_t)cfgs[ci].b, np = (n + bs - 1) / bs;
    size_t nd = 8 * n + 3 * np;
    KilnDefine defs[] = {{"B", cfgs[ci].b}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "f64_ops", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 3200 + ci);
    double *x = kiln_test_alloc(n, sizeof *x), *y = kiln_test_alloc(n, sizeof *y);
    for (size_t i = 0; i < n; i++) { /* 53-bit values in [-4, 4): every bit of a double used */
      x[i] = ((double)(kiln_ref_rng_next(&rng) >> 11) * 0x1p-53 - 0.5) * 8.0;
      y[i] = ((double)(kiln_ref_rng_next(&rng) >> 11) * 0x1p-53 - 0.5) * 8.0;
    }
    double s = 0.1, racc, gacc = 0.0;
    double *gd = kiln_test_alloc(nd + TAIL_ELEMS, 8), *rd = kiln_test_alloc(nd, 8);
    int64_t *gi = kiln_test_alloc(n + TAIL_ELEMS, 8), *ri = kiln_test_alloc(n, 8);
    float *gf = kiln_test_alloc(n + TAIL_ELEMS, 4), *rf = kiln_test_alloc(n, 4);
    void *dx = kiln_test_input(&run, x, n * 8), *dy = kiln_test_input(&run, y, n * 8);
    void *dd = kiln_test_output(&run, (nd + TAIL_ELEMS) * 8),
         *di = kiln_test_output(&run, (n + TAIL_ELEMS) * 8),
         *df = kiln_test_output(&run, (n + TAIL_ELEMS) * 4), *da = kiln_test_input(&run, &gacc, 8);
    int32_t nn = (int32_t)n;
    void *args[] = {&dx, &dy, &dd, &di, &df, &da, &nn, &s};
    kiln_test_launch(&run, run.fn, (uint32_t)np, 1, args);
    kiln_test_fetch(&run, gd, dd, (nd + TAIL_ELEMS) * 8);
    kiln_test_fetch(&run, gi, di, (n + TAIL_ELEMS) * 8);
    kiln_test_fetch(&run, gf, df, (n + TAIL_ELEMS) * 4);
    kiln_test_fetch(&run, &gacc, da, 8);
    kiln_test_check_untouched(&run, "out", gd, 8, nd + TAIL_ELEMS, 1, nd, nd + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "oi", gi, 8, n + TAIL_ELEMS, 1, n, n + TAIL_ELEMS);
    ref_f64_ops(x, y, n, s, bs, rd, ri, rf, &racc);
    check_f64(&run, "out", gd, rd, nd, 1e-13);
    check_f64(&run, "acc", &gacc, &racc, 1, 1e-12);
    check_bytes(&run, "oi", gi, ri, n, 8);
    check_bytes(&run, "of", gf, rf, n, 4);
    all_ok &= kiln_test_end(&run);
    free(x), free(y), free(gd), free(rd), free(gi), free(ri), free(gf), free(rf);
  }
  return all_ok;
}

/* ---- f64_math ------------------------------------------------------------------------------ */

/* The functions of f64_math.kiln in its plane order, with their bounds in ulp of the result
 * (dsl/reference.md; the last, pow in f32, in ulp of the f32 result: libm's powf on the cpu
 * target is within 1, the GPU targets' within 0.51). */
enum { F64_MATH_FNS = 12, F64_MATH_POW = 9, F64_MATH_POWF = 11 };
static const struct {
  const char *name;
  double ulps;
} F64_MATH[F64_MATH_FNS] = {{"exp", 1},   {"exp2", 1}, {"log", 2},     {"log2", 2},
                            {"rsqrt", 2}, {"tanh", 3}, {"erf", 4},     {"sin", 2},
                            {"cos", 2},   {"pow", 2},  {"sigmoid", 3}, {"pow_f32", 1}};

/* Function f of f64_math.kiln at (x, y) in long double (64 bits: the reference is within
 * 2^-11 ulp of the exact value); pow's x is the z input, pow_f32's inputs are already rounded to
 * f32.  powl has C's special cases (pow(x, 0) = 1, x < 0 with an integer y, ...), as pow has. */
static long double ref_f64_math(int f, double x, double y) {
  long double a = x;
  switch (f) {
  case 0: return expl(a);
  case 1: return exp2l(a);
  case 2: return logl(a);
  case 3: return log2l(a);
  case 4: return 1.0L / sqrtl(a);
  case 5: return tanhl(a);
  case 6: return erfl(a);
  case 7: return sinl(a);
  case 8: return cosl(a);
  case 9:
  case 11: return powl(a, y);
  default: return 1.0L / (1.0L + expl(-a));
  }
}

/* |got - ref| in units of the last place of ref rounded to a double (the subnormals' one below
 * 2^-1022); 0 when both are the same NaN-ness or infinity, +inf when only one is. */
static double ulp_error(double got, long double ref) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got) ? 0.0 : INFINITY;
  double rd = (double)ref;
  if (isinf(rd) || isinf(got)) return got == rd ? 0.0 : INFINITY;
  if (rd == 0.0 && got == 0.0 && !signbit(rd) != !signbit(got)) return INFINITY; /* pow's -0 */
  int e = rd == 0.0 ? -1022 : ilogb(rd);
  if (e < -1022) e = -1022;
  return (double)(fabsl((long double)got - ref) / ldexpl(1.0L, e - 52));
}

/* The same for an f32 result (got holds an f32 value): ulps of ref rounded to f32 (the
 * subnormals' one below 2^-126). */
static double ulp_error_f32(double got, long double ref) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got) ? 0.0 : INFINITY;
  float rf = (float)ref;
  if (isinf(rf) || isinf(got)) return got == rf ? 0.0 : INFINITY;
  if (rf == 0.0f && got == 0.0 && !signbit(rf) != !signbit(got)) return INFINITY;
  int e = rf == 0.0f ? -126 : ilogbf(rf);
  if (e < -126) e = -126;
  return (double)(fabsl((long double)got - ref) / ldexpl(1.0L, e - 23));
}

/* pow's base (z) for input i: kind i % 8 (every finite double; 1 +- 2^-k u; (0, 4); (-4, 0);
 * subnormal; 1..2^64; negative integers; special values). */
static double pow_base_input(KilnRefRng *rng, size_t i) {
  static const double special[] = {0.0,
                                   -0.0,
                                   INFINITY,
                                   -INFINITY,
                                   NAN,
                                   1.0,
                                   -1.0,
                                   2.0,
                                   -2.0,
                                   0.5,
                                   -0.5,
                                   0x1p-1074,
                                   -0x1p-1074,
                                   0x1p-1022,
                                   0x1.fffffffffffffp+1023,
                                   -0x1.fffffffffffffp+1023,
                                   10.0};
  uint64_t r = kiln_ref_rng_next(rng);
  double u = (double)(r >> 11) * 0x1p-53, sgn = (r & 1) ? -1.0 : 1.0;
  switch (i % 8) {
  case 0: {
    uint64_t bits = kiln_ref_rng_next(rng) & 0x7FEFFFFFFFFFFFFFull;
    double d;
    memcpy(&d, &bits, 8);
    return sgn * d;
  }
  case 1: return 1.0 + (u - 0.5) * ldexp(1.0, -1 - (int)(r % 52)); /* near 1 */
  case 2: return u * 4.0;
  case 3: return -u * 4.0;
  case 4: return sgn * u * 0x1p-1022;
  case 5: return ldexp(1.0 + u, (int)(r >> 58));
  case 6: return -(double)(1 + r % 1000);
  default: return special[(i / 8) % (sizeof special / sizeof *special)];
  }
}

/* pow's exponent for base z at input i: kind (i / 8) % 8 (y log2 |z| spread over
 * [-1100, 1100], over the edges of overflow and underflow, and over f32's [-160, 140]; random
 * integers; small integers; [-8, 8); special values; big integers, odd and even). */
static double pow_exponent_input(KilnRefRng *rng, size_t i, double z) {
  static const double special[] = {0.0,    -0.0,       INFINITY, -INFINITY, NAN,       0.5,
                                   -0.5,   1.0,        -1.0,     2.0,       3.0,       -3.0,
                                   0x1p53, 0x1p53 - 1, 1e300,    -1e300,    0x1p-1074, 1023.5};
  uint64_t r = kiln_ref_rng_next(rng);
  double u = (double)(r >> 11) * 0x1p-53, lz = log2(fabs(z)), t;
  bool spread = isfinite(lz) && lz != 0.0;
  switch ((i / 8) % 8) {
  case 0: t = (u - 0.5) * 2200.0; break;
  case 1: t = (r & 1) ? 1020.0 + 5.0 * u : -1078.0 + 58.0 * u; break;
  case 2: t = -160.0 + 300.0 * u; break;
  case 3: return (double)(int64_t)(r % 2001) - 1000.0;
  case 4: return (double)(int)(r % 7) - 3.0;
  case 5: return (u - 0.5) * 16.0;
  case 6: return special[(i / 64) % (sizeof special / sizeof *special)];
  default: return (double)((int64_t)(r >> 11) | 1) * ((r & 2) ? 1.0 : 2.0); /* beyond 2^53 too */
  }
  return spread ? t / lz : (u - 0.5) * 16.0;
}

/* One input of f64_math: kind i % 8 picks a family (every magnitude; exp's range; moderate;
 * small; tiny; next to multiples of pi/2 up to 2^31 of them; up to 2^64; special values). */
static double f64_math_input(KilnRefRng *rng, size_t i) {
  static const double special[] = {
      0.0,
      -0.0,
      INFINITY,
      -INFINITY,
      NAN,
      0x1p-1074,
      -0x1p-1074,
      0x1p-1022,
      0x1.fffffffffffffp+1023,
      1.0,
      -1.0,
      0.75,
      -0.75,
      6.0,
      5.99,
      22.0,
      709.78,
      709.79,
      -745.13,
      -745.2,
      -708.5,
      1024.0,
      1023.99,
      -1074.0,
      -1075.5,
      0x1p32,
      -0x1p32,
      0x1.fffffffffffffp31,
      0.5,
      0x1p-27,
      0x1p-28,
      1.4142135623730951,
      0.7071067811865476,
      3.141592653589793,
      1.5707963267948966,
      2.0,
      0.25,
      1e-300,
      1e300,
      0x1p-1030,
      0x1.6ac5b262ca1ffp+849 /* the double nearest a multiple of pi/2 */};
  uint64_t r = kiln_ref_rng_next(rng);
  double u = (double)(r >> 11) * 0x1p-53, sgn = (r & 1) ? -1.0 : 1.0; /* u in [0, 1) */
  switch (i % 8) {
  case 0: { /* any finite double: random sign, exponent and fraction */
    uint64_t bits = kiln_ref_rng_next(rng) & 0x7FEFFFFFFFFFFFFFull;
    double d;
    memcpy(&d, &bits, 8);
    return sgn * d;
  }
  case 1: return (u - 0.5) * 1500.0;
  case 2: return (u - 0.5) * 80.0;
  case 3: return (u - 0.5) * 8.0;
  case 4: return sgn * u * ldexp(1.0, -(int)(r >> 58)); /* 2^-63 .. 1 */
  case 5: { /* the double nearest to k pi/2 for k up to 2^31 */
    long double k = floorl(ldexpl(1.0L, (int)(r >> 59)) * (1.0L + (long double)u));
    return sgn * (double)(k * 1.5707963267948966192313216916397514L);
  }
  case 6: return sgn * ldexp(1.0 + u, (int)(r >> 58)); /* 1 .. 2^64 */
  default: return special[(i / 8) % (sizeof special / sizeof *special)];
  }
}

/* The inputs of function f at element i: pow's are (z, y), pow_f32's the same rounded to f32
 * (as the kernel's `as f32`), the others' x (and y). */
static void f64_math_args(int f, const double *x, const double *y, const double *z, size_t i,
                          double *a, double *b) {
  *a = f == F64_MATH_POW ? z[i] : x[i], *b = y[i];
  if (f == F64_MATH_POWF) *a = (float)z[i], *b = (float)y[i];
}

/* The f64 math builtins against long double libm over every kind of input, each within its
 * ulp bound (the cpu target calls the host's libm, the GPU targets their own functions). */
static bool test_f64_math(KilnRtDevice *dev) {
  static const struct {
    int32_t n, b;
  } cfgs[] = {{200000, 128}, {97, 32}};
  bool all_ok = true, gpu = g_target != KILN_TARGET_CPU;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, bs = (size_t)cfgs[ci].b, np = (n + bs - 1) / bs;
    size_t nd = F64_MATH_FNS * n;
    KilnDefine defs[] = {{"B", cfgs[ci].b}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "f64_math", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 3300 + ci);
    double *x = kiln_test_alloc(n, sizeof *x), *y = kiln_test_alloc(n, sizeof *y),
           *z = kiln_test_alloc(n, sizeof *z);
    for (size_t i = 0; i < n; i++) x[i] = f64_math_input(&rng, i);
    kiln_ref_rng_init(&rng, 3400 + ci); /* pow's inputs from a stream of their own */
    for (size_t i = 0; i < n; i++) {
      z[i] = pow_base_input(&rng, i);
      y[i] = pow_exponent_input(&rng, i, z[i]);
    }
    double *got = kiln_test_alloc(nd + TAIL_ELEMS, 8);
    void *dx = kiln_test_input(&run, x, n * 8), *dy = kiln_test_input(&run, y, n * 8);
    void *dz = kiln_test_input(&run, z, n * 8);
    void *dout = kiln_test_output(&run, (nd + TAIL_ELEMS) * 8);
    int32_t nn = (int32_t)n;
    void *args[] = {&dx, &dy, &dz, &dout, &nn};
    kiln_test_launch(&run, run.fn, (uint32_t)np, 1, args);
    kiln_test_fetch(&run, got, dout, (nd + TAIL_ELEMS) * 8);
    kiln_test_check_untouched(&run, "out", got, 8, nd + TAIL_ELEMS, 1, nd, nd + TAIL_ELEMS);
    for (int f = 0; f < F64_MATH_FNS && run.ok && !run.d.emit; f++) {
      double worst = 0.0, excess = 0.0;
      size_t at = 0;
      double bound = F64_MATH[f].ulps;
      if (gpu && f == F64_MATH_POWF) bound = 0.51; /* computed in f64, rounded once */
      for (size_t i = 0; i < n; i++) {
        double a, b;
        f64_math_args(f, x, y, z, i, &a, &b);
        long double ref = ref_f64_math(f, a, b);
        double g = got[(size_t)f * n + i];
        double e = f == F64_MATH_POWF ? ulp_error_f32(g, ref) : ulp_error(g, ref), bi = bound;
        if (!gpu && (f == 7 || f == 8) && !(fabs(x[i]) < 0x1p32))
          bi = 8; /* glibc's own reduction: 6.95 ulp at the double nearest a multiple of pi/2 */
        if (f == 10 && g == 0.0 && ref < 0x1p-1022L)
          e = 0.0; /* sigmoid below -709.78: 1 / (1 + inf), documented */
        if (!(e <= worst)) worst = e;
        if (!(e - bi <= excess)) excess = e - bi, at = i; /* a NaN is the worst */
      }
      printf("       %s: max error %.3g ulp, bound %.3g\n", F64_MATH[f].name, worst, bound);
      if (excess > 0.0) {
        double a, b;
        f64_math_args(f, x, y, z, at, &a, &b);
        kiln_test_fail(
            &run, "%s(%.17g) = %.17g (y %.17g), reference %.20Lg: %.3g ulp over its bound",
            F64_MATH[f].name, a, got[(size_t)f * n + at], b, ref_f64_math(f, a, b), excess);
      }
    }
    all_ok &= kiln_test_end(&run);
    free(x), free(y), free(z), free(got);
  }
  return all_ok;
}

/* What f64_basic.kiln computes, in C doubles: the [rows, bc] planes with the columns past cols
 * holding what the kernel makes of its masked-off values (a = 0, b = 1, u = 0). */
static void ref_f64_basic(const double *x, const double *y, const uint32_t *u, size_t rows,
                          size_t cols, double s, size_t br, size_t bc, double *out, int64_t *oi,
                          float *of) {
  size_t plane = rows * bc;
  double *red = out + 7 * plane;
  for (size_t p = 0; p < (rows + br - 1) / br; p++) red[3 * rows + p] = 0.0;
  for (size_t r = 0; r < rows; r++) {
    double run = 0.0, mx = -INFINITY, mn = INFINITY;
    size_t amn = 0;
    for (size_t c = 0; c < bc; c++) {
      size_t at = r * bc + c, fc = bc - 1 - c;
      double a = c < cols ? x[r * cols + c] : 0.0, b = c < cols ? y[r * cols + c] : 1.0;
      double af = fc < cols ? x[r * cols + fc] : 0.0;
      uint32_t w = c < cols ? u[r * cols + c] : 0;
      run += a;
      out[at] = a * b + s / b;
      out[plane + at] = sqrt(fabs(a)) + floor(a * 3.0) - ceil(b * 0.5);
      out[2 * plane + at] = fma(a, b, s) - (a > b ? a : b) * (a < s ? a : s);
      out[3 * plane + at] = a > b ? a - b : (double)(float)b;
      out[4 * plane + at] = (double)w * 0.25 + (double)r - (double)c;
      out[5 * plane + at] = af;
      out[6 * plane + at] = run;
      oi[at] = (int64_t)(a * 1.0e12);
      oi[plane + at] = (a < b) + 2 * (a == 0.0) + 4 * (b != 1.0);
      of[at] = (float)(a + b);
      if (a > mx) mx = a;
      if (b < mn) mn = b, amn = c;
    }
    red[3 * r] = run;
    red[3 * r + 1] = mx;
    red[3 * r + 2] = (double)amn;
    red[3 * rows + r / br] += run;
  }
}

/* f64 where the GPU lowering runs it (cpu and emu). The conversions, compares, flips and
 * selects are exact: bit for bit. The arithmetic is a few correctly rounded double operations,
 * but the GPU lowering contracts a * b + c into one fma (one rounding fewer), which moves the
 * result by at most half an ulp of the product (|a b| < 16: 2^-49 = 1.8e-15) and half an ulp of
 * the result. So 4e-15 of 1 + |ref| (the emulator's worst measured: 6.7e-16), and any f32 step
 * (2^-24 = 6e-8) fails it by 7 orders of magnitude. */
static bool test_f64_basic(KilnRtDevice *dev) {
  static const struct {
    int32_t rows, cols, br, bc;
  } cfgs[] = {{100, 50, 16, 64}, {1, 1, 4, 32}, {37, 32, 4, 32}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t rows = (size_t)cfgs[ci].rows, cols = (size_t)cfgs[ci].cols, bc = (size_t)cfgs[ci].bc;
    size_t br = (size_t)cfgs[ci].br, np = (rows + br - 1) / br;
    size_t plane = rows * bc, nd = 7 * plane + 3 * rows + np, ni = 2 * plane, nf = plane;
    KilnDefine defs[] = {{"BR", cfgs[ci].br}, {"BC", cfgs[ci].bc}};
    char shape[64];
    snprintf(shape, sizeof shape, "rows=%zu cols=%zu", rows, cols);
    KilnTestRun run;
    run_begin(&run, dev, "f64_basic", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 3300 + ci);
    size_t n = rows * cols;
    double *x = kiln_test_alloc(n, sizeof *x), *y = kiln_test_alloc(n, sizeof *y);
    uint32_t *u = kiln_test_alloc(n, sizeof *u);
    for (size_t i = 0; i < n; i++) {
      x[i] = i % 17 == 0 ? 0.0 : ((double)(kiln_ref_rng_next(&rng) >> 11) * 0x1p-53 - 0.5) * 8.0;
      y[i] = ((double)(kiln_ref_rng_next(&rng) >> 11) * 0x1p-53 - 0.5) * 8.0;
      u[i] = (uint32_t)kiln_ref_rng_next(&rng);
    }
    double s = 1.0 / 3.0;
    double *gd = kiln_test_alloc(nd + TAIL_ELEMS, 8), *rd = kiln_test_alloc(nd, 8);
    int64_t *gi = kiln_test_alloc(ni + TAIL_ELEMS, 8), *ri = kiln_test_alloc(ni, 8);
    float *gf = kiln_test_alloc(nf + TAIL_ELEMS, 4), *rf = kiln_test_alloc(nf, 4);
    void *dx = kiln_test_input(&run, x, n * 8), *dy = kiln_test_input(&run, y, n * 8),
         *du = kiln_test_input(&run, u, n * 4);
    void *dd = kiln_test_output(&run, (nd + TAIL_ELEMS) * 8),
         *di = kiln_test_output(&run, (ni + TAIL_ELEMS) * 8),
         *df = kiln_test_output(&run, (nf + TAIL_ELEMS) * 4);
    int32_t r32 = cfgs[ci].rows, c32 = cfgs[ci].cols;
    void *args[] = {&dx, &dy, &du, &dd, &di, &df, &r32, &c32, &s};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(rows, (size_t)cfgs[ci].br), 1, args);
    kiln_test_fetch(&run, gd, dd, (nd + TAIL_ELEMS) * 8);
    kiln_test_fetch(&run, gi, di, (ni + TAIL_ELEMS) * 8);
    kiln_test_fetch(&run, gf, df, (nf + TAIL_ELEMS) * 4);
    kiln_test_check_untouched(&run, "out", gd, 8, nd + TAIL_ELEMS, 1, nd, nd + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "oi", gi, 8, ni + TAIL_ELEMS, 1, ni, ni + TAIL_ELEMS);
    kiln_test_check_untouched(&run, "of", gf, 4, nf + TAIL_ELEMS, 1, nf, nf + TAIL_ELEMS);
    ref_f64_basic(x, y, u, rows, cols, s, br, bc, rd, ri, rf);
    check_f64(&run, "out (arithmetic)", gd, rd, 3 * plane, 4e-15);
    check_bytes(&run, "out (select, conversions, flip)", gd + 3 * plane, rd + 3 * plane, 3 * plane,
                8);
    /* the GPU targets' cumsum groups its sums as a tree (lanes, warps): the row reductions'
     * bound below */
    check_f64(&run, "out (cumsum)", gd + 6 * plane, rd + 6 * plane, plane, 2e-12);
    /* sums in another order (a tree over lanes and warps): n - 1 additions each within
     * 2^-53 of a partial sum at most n * 4, so n^2 * 4 * 2^-53 of 1 + |ref|: 2e-12 for a row
     * of 64, 5e-10 for a program's 1024 elements (max and argmin are exact: any error there
     * is at least 1 / 64) */
    check_f64(&run, "out (row reductions)", gd + 7 * plane, rd + 7 * plane, 3 * rows, 2e-12);
    check_f64(&run, "out (program sums)", gd + 7 * plane + 3 * rows, rd + 7 * plane + 3 * rows, np,
              5e-10);
    check_bytes(&run, "oi", gi, ri, ni, 8);
    check_bytes(&run, "of", gf, rf, nf, 4);
    all_ok &= kiln_test_end(&run);
    free(x), free(y), free(u), free(gd), free(rd), free(gi), free(ri), free(gf), free(rf);
  }
  return all_ok;
}

/* ---- f32_math ------------------------------------------------------------------------------ */

/* The f32 functions of f32_math.kiln in its plane order.  The cpu target computes exp, exp2,
 * erf and tanh as arithmetic (mlir-dialect/cpu/cpu_math.c) within `ulps` of the result (sigmoid
 * is 1 / (1 + exp(-x)), two roundings more).  The GPU targets use PTX's approximate
 * instructions, within their documented bounds (runtime/emu/approx.c): the error allowed there
 * is rel |ref| + rel_x |x| |ref| + abs.  exp(x) is ex2.approx (2^-22 relative) of x log2 e rounded
 * to f32, whose relative error (2^-24, and 2^-25 from log2 e in f32) moves the result by up to
 * |x| 1.5 2^-24 relative; results below
 * 2^-126 flush to zero; tanh.approx errs by 2^-10.987; erf is a polynomial within 1.5e-7 whose
 * rcp.approx and ex2.approx add up to 4.1e-7 and 2.4e-7 (mlir-dialect/gpu/lower_math.c).  Each
 * bound has room for the roundings of the arithmetic around the instructions. */
enum { F32_MATH_FNS = 5 };
static const struct {
  const char *name;
  double ulps, rel, rel_x, abs;
} F32_MATH[F32_MATH_FNS] = {
    {"exp", 1, 0x1p-22 + 0x1p-22, 0x1p-23, 0x1p-126},
    {"exp2", 1.5, 0x1p-22 + 0x1p-22, 0, 0x1p-126},
    {"erf", 2.5, 0x1p-22, 0, 9e-7},
    {"tanh", 1.5, 0x1.03p-11 + 0x1p-21, 0, 0x1p-126},
    {"sigmoid", 2.5, 0x1p-21 + 0x1p-22, 0x1p-23, 0x1p-126},
};

static long double ref_f32_math(int f, float x) {
  long double a = x;
  switch (f) {
  case 0: return expl(a);
  case 1: return exp2l(a);
  case 2: return erfl(a);
  case 3: return tanhl(a);
  default: return 1.0L / (1.0L + expl(-a));
  }
}

/* One input: kind i % 6 picks a family (exp's whole range; moderate; around erf's and tanh's
 * branch points; small and tiny of every exponent; up to 2^8; special values and the edges of
 * overflow, underflow and the branches). */
static float f32_math_input(KilnRefRng *rng, size_t i) {
  static const float special[] = {0.0f,      -0.0f,  INFINITY,     -INFINITY,  NAN,      88.72283f,
                                  88.72284f, 88.8f,  -87.33654f,   -87.34f,    -103.97f, -104.0f,
                                  -150.0f,   128.0f, 127.99f,      -126.0f,    -149.0f,  1.0f,
                                  -1.0f,     0.625f, -0.625f,      0.62499f,   3.92f,    4.0f,
                                  9.01f,     1e-30f, 1e-45f,       0x1p-126f,  0.5f,     2.5f,
                                  -149.5f,   129.0f, -0.99999994f, 1.0000001f, 15.9f,    -88.0f};
  uint64_t r = kiln_ref_rng_next(rng);
  double u = (double)(r >> 11) * 0x1p-53, sgn = (r & 1) ? -1.0 : 1.0; /* u in [0, 1) */
  switch (i % 6) {
  case 0: return (float)(-110.0 + 210.0 * u);
  case 1: return (float)((u - 0.5) * 20.0);
  case 2: return (float)((u - 0.5) * 3.0);
  case 3: return (float)(sgn * ldexp(1.0 + u, -(int)((r >> 58) % 64) - (int)((r >> 52) & 63)));
  case 4: return (float)(sgn * ldexp(1.0 + u, (int)(r >> 61)));
  default: return special[(i / 6) % (sizeof special / sizeof *special)];
  }
}

/* The GPU targets' error at x against their bound, as a fraction of it (<= 1 passes). */
static double gpu_error_f32(int f, float x, float got, long double ref) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got) ? 0.0 : INFINITY;
  float rf = (float)ref;
  if (isinf(rf) || isinf(got)) return got == rf ? 0.0 : INFINITY;
  long double allowed = (long double)F32_MATH[f].rel * fabsl(ref) +
                        (long double)F32_MATH[f].rel_x * fabs(x) * fabsl(ref) + F32_MATH[f].abs;
  return (double)(fabsl((long double)got - ref) / allowed);
}

/* The f32 math builtins against long double libm over every kind of input: on the cpu target
 * within their ulp bounds, on the GPU targets within the instructions' documented errors. */
static bool test_f32_math(KilnRtDevice *dev) {
  static const struct {
    int32_t n, b;
  } cfgs[] = {{300000, 128}, {97, 32}};
  bool all_ok = true, gpu = g_target != KILN_TARGET_CPU;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, bs = (size_t)cfgs[ci].b, np = (n + bs - 1) / bs;
    size_t nd = F32_MATH_FNS * n;
    KilnDefine defs[] = {{"B", cfgs[ci].b}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "f32_math", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 3500 + ci);
    float *x = kiln_test_alloc(n, sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = f32_math_input(&rng, i);
    float *got = kiln_test_alloc(nd + TAIL_ELEMS, 4);
    void *dx = kiln_test_input(&run, x, n * 4);
    void *dout = kiln_test_output(&run, (nd + TAIL_ELEMS) * 4);
    int32_t nn = (int32_t)n;
    void *args[] = {&dx, &dout, &nn};
    kiln_test_launch(&run, run.fn, (uint32_t)np, 1, args);
    kiln_test_fetch(&run, got, dout, (nd + TAIL_ELEMS) * 4);
    kiln_test_check_untouched(&run, "out", got, 4, nd + TAIL_ELEMS, 1, nd, nd + TAIL_ELEMS);
    for (int f = 0; f < F32_MATH_FNS && run.ok && !run.d.emit; f++) {
      double worst = 0.0;
      size_t at = 0;
      for (size_t i = 0; i < n; i++) {
        long double ref = ref_f32_math(f, x[i]);
        float g = got[(size_t)f * n + i];
        double e = gpu ? gpu_error_f32(f, x[i], g, ref) : ulp_error_f32(g, ref) / F32_MATH[f].ulps;
        if (f == 4 && g == 0.0f && ref < 0x1p-126L)
          e = 0.0; /* sigmoid below -88.72: 1 / (1 + inf), as in f64 (dsl/reference.md) */
        if (!(e <= worst)) worst = e, at = i; /* a NaN is the worst */
      }
      if (gpu)
        printf("       %s: max error %.3g of the bound\n", F32_MATH[f].name, worst);
      else
        printf("       %s: max error %.3g ulp, bound %.3g\n", F32_MATH[f].name,
               worst * F32_MATH[f].ulps, F32_MATH[f].ulps);
      if (!(worst <= 1.0))
        kiln_test_fail(&run, "%s(%.9g) = %.9g, reference %.12Lg: %.3g times its bound",
                       F32_MATH[f].name, x[at], got[(size_t)f * n + at], ref_f32_math(f, x[at]),
                       worst);
    }
    all_ok &= kiln_test_end(&run);
    free(x), free(got);
  }
  return all_ok;
}

/* ---- matmul_f64 ----------------------------------------------------------------------------- */

/* What matmul_f64.kiln computes, c = c0 + a b (strided rows, dense M x N results), in long
 * double, and for each element the bound its f64 evaluation must meet: any order of K products
 * added to c0 in doubles, each product and each sum rounded once (the cpu target's multiply and
 * add) or a product and its sum rounded together (the GPU targets' fma), stays within
 * (K + 1) 2^-53 (|c0| + sum |a_k b_k|) of the exact value, to first order (Higham, recursive
 * summation; K 2^-53 is far below 1 here, so the second-order term is below 2^-53 of the
 * first); the long double reference itself is within K 2^-64 of that sum. */
static void ref_matmul_f64(const double *a, size_t sam, const double *b, size_t sbk,
                           const double *c0, size_t scm, size_t M, size_t N, size_t K, double *ref,
                           double *bound) {
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      long double sum = c0[i * scm + j], mag = fabsl(sum);
      for (size_t k = 0; k < K; k++) {
        long double p = (long double)a[i * sam + k] * b[k * sbk + j];
        sum += p;
        mag += fabsl(p);
      }
      ref[i * N + j] = (double)sum;
      bound[i * N + j] =
          (double)(mag * ((long double)(K + 1) * 0x1p-53L + (long double)K * 0x1p-64L));
    }
}

/* |got - ref| <= bound + half an ulp of ref (the reference's own rounding to double) for each of
 * n doubles, or fails the run naming the worst element (by its share of the bound). */
static void check_f64_bounded(KilnTestRun *run, const char *what, const double *got,
                              const double *ref, const double *bound, size_t n) {
  if (!run->ok || run->d.emit) return;
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    double allowed = bound[i] + fabs(ref[i]) * 0x1p-53;
    double share = fabs(got[i] - ref[i]) / (allowed > 0 ? allowed : 0x1p-1074);
    if (!(share <= worst)) worst = share, at = i; /* a NaN is the worst */
  }
  printf("       %s: worst error %.3g of its bound (at %zu)\n", what, worst, at);
  if (!(worst <= 1.0))
    kiln_test_fail(run, "%s[%zu] = %.17g, reference %.17g, bound %.3g", what, at, got[at], ref[at],
                   bound[at]);
}

/* n doubles uniform over [-1, 1) (53 random bits each), every 13th an exact small integer, so
 * that sums cancel and products of exact values appear. */
static double *random_f64(KilnRefRng *rng, size_t n) {
  double *p = kiln_test_alloc(n, sizeof *p);
  for (size_t i = 0; i < n; i++)
    p[i] = i % 13 == 5 ? (double)((int)(kiln_ref_rng_next(rng) >> 60) - 8)
                       : (double)(kiln_ref_rng_next(rng) >> 11) * 0x1p-52 - 1.0;
  return p;
}

/* f64 dot on every target: ragged M, N and K (masked tails in each), an accumulator loaded from
 * c0, K up to 200. Each element within the bound ref_matmul_f64 derives from K and 2^-53 (the
 * measured worst is printed as its share); one f32 rounding anywhere (2^-24) is 2^29 times
 * bigger than the f64 steps the bound allows, so a lowering that computed in f32 fails by far. */
static bool test_matmul_f64(KilnRtDevice *dev) {
  static const struct {
    int32_t M, N, K, bm, bn, bk;
  } cfgs[] = {{64, 64, 64, 16, 16, 16},
              {33, 17, 5, 16, 16, 8},
              {100, 70, 200, 32, 32, 16},
              {1, 1, 1, 16, 16, 8},
              {40, 48, 37, 32, 16, 8}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t M = (size_t)cfgs[ci].M, N = (size_t)cfgs[ci].N, K = (size_t)cfgs[ci].K;
    size_t sam = K + 3, sbk = N + 5, scm = N + 8, total = M * scm + TAIL_ELEMS;
    KilnDefine defs[] = {{"BM", cfgs[ci].bm}, {"BN", cfgs[ci].bn}, {"BK", cfgs[ci].bk}};
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zux%zu", M, N, K);
    KilnTestRun run;
    run_begin(&run, dev, "matmul_f64", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 5100 + ci);
    double *a = random_f64(&rng, M * sam), *b = random_f64(&rng, K * sbk);
    double *c0 = random_f64(&rng, M * scm), *c = kiln_test_alloc(total, sizeof *c);
    double *ref = kiln_test_alloc(M * N, sizeof *ref), *bound = kiln_test_alloc(M * N, 8);
    void *da = kiln_test_input(&run, a, M * sam * 8), *db = kiln_test_input(&run, b, K * sbk * 8);
    void *dc0 = kiln_test_input(&run, c0, M * scm * 8);
    void *dc = kiln_test_output(&run, total * sizeof *c);
    int32_t m32 = cfgs[ci].M, n32 = cfgs[ci].N, k32 = cfgs[ci].K;
    int32_t sam32 = (int32_t)sam, sbk32 = (int32_t)sbk, scm32 = (int32_t)scm;
    void *args[] = {&da, &db, &dc0, &dc, &m32, &n32, &k32, &sam32, &sbk32, &scm32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(M, (size_t)cfgs[ci].bm),
                     kiln_test_cdiv(N, (size_t)cfgs[ci].bn), args);
    kiln_test_fetch(&run, c, dc, total * sizeof *c);
    kiln_test_check_untouched(&run, "c", c, sizeof *c, total, M, N, scm);
    double *got = kiln_test_alloc(M * N, sizeof *got);
    for (size_t r = 0; r < M; r++) memcpy(got + r * N, c + r * scm, N * sizeof *got);
    ref_matmul_f64(a, sam, b, sbk, c0, scm, M, N, K, ref, bound);
    check_f64_bounded(&run, "c", got, ref, bound, M * N);
    all_ok &= kiln_test_end(&run);
    free(a), free(b), free(c0), free(c), free(ref), free(bound), free(got);
  }
  return all_ok;
}

/* ---- matmul_tf32 ----------------------------------------------------------------------------- */

/* x rounded to TF32 as cvt.rna.tf32.f32 does, written from its definition: the nearest value
 * with 10 mantissa bits, ties away from zero (NaN and infinities kept).  Independent of the
 * bit trick the lowerings use: the kept part is x truncated toward zero to 10 bits, the dropped
 * part decides whether one unit of the last kept place is added to the magnitude. */
static float round_tf32_ref(float x) {
  if (!isfinite(x) || x == 0.0f) return x;
  int e;
  frexpf(fabsf(x), &e);                       /* |x| in [2^(e-1), 2^e) */
  float ulp = ldexpf(1.0f, e - 11);           /* a 10-bit mantissa's last place */
  if (e - 1 < -126) ulp = ldexpf(1.0f, -136); /* subnormals: the same place as 2^-126's */
  float mag = fabsf(x), kept = floorf(mag / ulp) * ulp;
  float r = mag - kept >= ulp / 2 ? kept + ulp : kept;
  return copysignf(r, x);
}

/* n f32 values: uniform over [-1, 1) with all 24 bits random, and every 7th one a tie for TF32
 * (1 + j 2^-10 + 2^-11 times a power of two, signed), where rounding to nearest even and ties away
 * differ for odd j. */
static float *random_f32_full(KilnRefRng *rng, size_t n) {
  float *p = kiln_test_alloc(n, sizeof *p);
  for (size_t i = 0; i < n; i++) {
    uint64_t r = kiln_ref_rng_next(rng);
    if (i % 7 == 3) {
      float tie = 1.0f + (float)((r >> 20) & 1023) * 0x1p-10f + 0x1p-11f;
      p[i] = ldexpf(r & 1 ? -tie : tie, (int)((r >> 40) & 3) - 2);
    } else {
      p[i] = (float)(r >> 40) * 0x1p-23f - 1.0f;
    }
  }
  return p;
}

/* x as a tensor core reads an f32 word it was not given rounded (sm_90's wgmma .tf32 from
 * shared memory): toward zero to 10 mantissa bits, the 13 low bits ignored. */
static float truncate_tf32_ref(float x) {
  if (!isfinite(x) || x == 0.0f) return x;
  int e;
  frexpf(fabsf(x), &e);
  float ulp = ldexpf(1.0f, e - 1 < -126 ? -136 : e - 11); /* as round_tf32_ref */
  return copysignf(floorf(fabsf(x) / ulp) * ulp, x);
}

/* How a matmul_tf32 reference takes its inputs: as they are (IEEE f32), rounded to TF32 as
 * cvt.rna does (mma.sync's path, the cpu target), or truncated to TF32 (wgmma's). */
typedef enum { TF32_NONE, TF32_ROUNDED, TF32_TRUNCATED } Tf32Inputs;

/* ref[i][j] = sum_k A'[i][k] B'[k][j] in double with A', B' the inputs taken as `inputs` says,
 * and the bound every f32 summation order meets: K 2^-24 sum_k |A'B'| (the products are exact in
 * f32 for TF32 inputs; an IEEE f32 product adds 2^-24 |AB| each, within the same K 2^-24 for K
 * >= 2) plus the f32 rounding of the result itself. */
static void ref_matmul_tf32(const float *a, size_t sam, size_t sak, const float *b, size_t sbk,
                            size_t sbn, size_t M, size_t N, size_t K, Tf32Inputs inputs, float *ref,
                            float *bound) {
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double sum = 0, mag = 0;
      for (size_t k = 0; k < K; k++) {
        float x = a[i * sam + k * sak], y = b[k * sbk + j * sbn];
        if (inputs == TF32_ROUNDED) x = round_tf32_ref(x), y = round_tf32_ref(y);
        if (inputs == TF32_TRUNCATED) x = truncate_tf32_ref(x), y = truncate_tf32_ref(y);
        sum += (double)x * y;
        mag += fabs((double)x * y);
      }
      ref[i * N + j] = (float)sum;
      bound[i * N + j] = (float)((double)(K + 1) * 0x1p-24 * mag + fabs(sum) * 0x1p-24);
    }
}

/* matmul_tf32: an f32 dot with tf32 = true against a reference that rounds the inputs to TF32
 * the same way, every element within the bound every f32 summation order meets (the cpu and emu
 * targets both sum in k order; a GPU's tensor cores need not).  Ragged M,
 * N and K; the GPU targets' mma path on 4 and 8 warps (BERT's 128x128x32 on 8), pipelined and
 * not, both orientations of each operand (k contiguous: ldmatrix; m or n contiguous: 32-bit
 * loads), and a tile too small for mma.sync (BM = 8: the FMA path on rounded operands).  The same
 * inputs with TF32 = 0 must give the IEEE product, and the TF32 results must be off the IEEE
 * reference by many bounds: the inputs' low mantissa bits matter, so the flag is not a no-op.
 * With wgmma = 1 (docs/gpu-lowering.md, "wgmma"), where both operands are K-major and pipelined
 * (A row-major, B column-major, promised) the GPU targets that lower wgmma (emu, sm_90) run
 * wgmma .tf32, which truncates the inputs: the reference truncates too, and the rounded one must
 * be far (the path was taken); BK 32, 16 and 8 (the 128-, 64- and 32-byte swizzles), one and two
 * warpgroups, 4 stages (a group in flight), tails.  The m- or n-major layouts of dW and dX stay
 * on mma.sync with wgmma asked for: rounded, as without it; so does the forward layout left
 * unpipelined (1 stage: no ring for descriptors to read). */
static bool test_matmul_tf32(KilnRtDevice *dev) {
  static const struct {
    int32_t M, N, K, bm, bn, bk;
    bool a_col, b_col, promise;
    int stages, warps, tf32;
    bool wgmma;
  } cfgs[] = {{64, 64, 64, 32, 32, 32, false, false, false, 1, 4, 1, false},
              {100, 70, 200, 32, 64, 32, false, false, true, 3, 4, 1, false},
              {72, 40, 136, 32, 32, 32, true, true, true, 2, 4, 1, false},
              {96, 80, 120, 64, 32, 32, false, true, true, 1, 4, 1, false},
              {130, 70, 100, 64, 64, 32, false, false, false, 2, 8, 1, false},
              {130, 140, 100, 128, 128, 32, false, false, true, 3, 8, 1, false},
              {33, 17, 45, 32, 32, 32, true, false, false, 1, 4, 1, false},
              {33, 17, 45, 8, 16, 16, false, false, false, 1, 4, 1, false},
              {64, 64, 64, 32, 32, 32, false, false, true, 2, 4, 0, false},
              {150, 136, 200, 128, 128, 32, false, true, true, 3, 8, 1, true},
              {100, 70, 72, 64, 64, 16, false, true, true, 4, 4, 1, true},
              {64, 130, 40, 64, 64, 8, false, true, true, 2, 4, 1, true},
              {72, 64, 40, 64, 64, 32, true, true, true, 3, 4, 1, true},
              {96, 64, 64, 64, 64, 32, false, false, true, 3, 4, 1, true},
              {96, 80, 72, 64, 64, 32, false, true, true, 1, 4, 1, true}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t M = (size_t)cfgs[ci].M, N = (size_t)cfgs[ci].N, K = (size_t)cfgs[ci].K;
    size_t mp = (M + 15) / 16 * 16 + 16, np = (N + 15) / 16 * 16 + 16, kp = (K + 15) / 16 * 16 + 16;
    size_t sam = cfgs[ci].a_col ? 1 : kp, sak = cfgs[ci].a_col ? mp : 1;
    size_t sbk = cfgs[ci].b_col ? 1 : np, sbn = cfgs[ci].b_col ? kp : 1;
    size_t scm = N + 8, total = M * scm + TAIL_ELEMS;
    size_t asize = cfgs[ci].a_col ? K * mp : M * kp, bsize = cfgs[ci].b_col ? N * kp : K * np;
    KilnDefine defs[7] = {{"BM", cfgs[ci].bm},
                          {"BN", cfgs[ci].bn},
                          {"BK", cfgs[ci].bk},
                          {"TF32", cfgs[ci].tf32},
                          {"num_stages", cfgs[ci].stages},
                          {"num_warps", cfgs[ci].warps},
                          {"wgmma", 1}};
    size_t ndefs = cfgs[ci].wgmma ? 7 : 6;
    /* wgmma .tf32 runs (and truncates) where the target lowers wgmma and both operands are
     * K-major and staged (pipelined: 2 stages or more) */
    bool truncated = cfgs[ci].wgmma && cfgs[ci].promise && !cfgs[ci].a_col && cfgs[ci].b_col &&
                     cfgs[ci].stages >= 2 &&
                     (g_target == KILN_TARGET_EMU || g_target == KILN_TARGET_SM90);
    Tf32Inputs want = !cfgs[ci].tf32 ? TF32_NONE : truncated ? TF32_TRUNCATED : TF32_ROUNDED;
    KilnDefine unit_eq[] = {{cfgs[ci].a_col ? "sam" : "sak", 1},
                            {cfgs[ci].b_col ? "sbk" : "sbn", 1}};
    KilnDefine mult[] = {{cfgs[ci].a_col ? "sak" : "sam", 16},
                         {cfgs[ci].b_col ? "sbn" : "sbk", 16}};
    if (cfgs[ci].promise) g_spec = (Spec){unit_eq, mult, COUNT(unit_eq), COUNT(mult)};
    char shape[96];
    snprintf(shape, sizeof shape, "%zux%zux%zu A %s B %s%s%s%s", M, N, K,
             cfgs[ci].a_col ? "col" : "row", cfgs[ci].b_col ? "col" : "row",
             cfgs[ci].promise ? " promised" : "", cfgs[ci].tf32 ? "" : " IEEE",
             cfgs[ci].wgmma ? " wgmma" : "");
    KilnTestRun run;
    int keep_warps = g_num_warps;
    if (cfgs[ci].wgmma) g_num_warps = cfgs[ci].warps; /* whole warpgroups, whatever --warps */
    run_begin(&run, dev, "matmul_tf32", defs, ndefs, shape);
    g_num_warps = keep_warps;
    g_spec = (Spec){0};

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 7700 + ci);
    float *a = random_f32_full(&rng, asize), *b = random_f32_full(&rng, bsize);
    float *c = kiln_test_alloc(total, sizeof *c);
    float *ref = kiln_test_alloc(M * N, sizeof *ref), *bound = kiln_test_alloc(M * N, 4);
    float *ieee = kiln_test_alloc(M * N, sizeof *ieee), *ibound = kiln_test_alloc(M * N, 4);
    void *da = kiln_test_input(&run, a, asize * 4), *db = kiln_test_input(&run, b, bsize * 4);
    void *dc = kiln_test_output(&run, total * sizeof *c);
    int32_t m32 = cfgs[ci].M, n32 = cfgs[ci].N, k32 = cfgs[ci].K;
    int32_t sam32 = (int32_t)sam, sak32 = (int32_t)sak, sbk32 = (int32_t)sbk, sbn32 = (int32_t)sbn;
    int32_t scm32 = (int32_t)scm;
    void *args[] = {&da, &db, &dc, &m32, &n32, &k32, &sam32, &sak32, &sbk32, &sbn32, &scm32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(M, (size_t)cfgs[ci].bm),
                     kiln_test_cdiv(N, (size_t)cfgs[ci].bn), args);
    kiln_test_fetch(&run, c, dc, total * sizeof *c);

    kiln_test_check_untouched(&run, "c", c, sizeof *c, total, M, N, scm);
    float *got = kiln_test_alloc(M * N, sizeof *got);
    for (size_t r = 0; r < M; r++) memcpy(got + r * N, c + r * scm, N * sizeof *got);
    /* ref: the inputs as this run takes them; ieee: another way (IEEE for TF32 runs, rounded
     * TF32 for IEEE and truncated runs), which must be far from the result */
    Tf32Inputs other_way = want == TF32_ROUNDED ? TF32_NONE : TF32_ROUNDED;
    ref_matmul_tf32(a, sam, sak, b, sbk, sbn, M, N, K, want, ref, bound);
    ref_matmul_tf32(a, sam, sak, b, sbk, sbn, M, N, K, other_way, ieee, ibound);
    kiln_test_check_bound(&run, "c", got, ref, bound, M * N);
    static const char *const way[3] = {"IEEE", "rounded TF32", "truncated TF32"};
    double far = 0;
    for (size_t i = 0; i < M * N; i++) {
      double d = fabs((double)got[i] - ieee[i]) / ibound[i];
      if (d > far) far = d;
    }
    printf("       c: %.3g bounds off the %s reference\n", far, way[other_way]);
    if (run.ok && !run.d.emit && !(far > 10))
      kiln_test_fail(&run,
                     "c is within %.3g bounds of the %s reference: the inputs' low bits did "
                     "not matter",
                     far, way[other_way]);
    all_ok &= kiln_test_end(&run);
    free(a), free(b), free(c), free(ref), free(bound), free(ieee), free(ibound), free(got);
  }
  return all_ok;
}

/* matmul_tf32_trans: C = X^T B + A Y^T, both dots with tf32 = true and one operand of each a
 * trans of a loaded tile (x rows k feeding A, y rows n feeding B), against the rounded inputs'
 * double sum within (2K + 1) 2^-24 sum |a'b'| + 2^-24 |c| (the bound of matmul_tf32 over the 2K
 * products of both dots).  Unpipelined (the dot's convert: trans(y) staged as y is) and
 * pipelined with the row strides promised (trans(x) read by 32-bit loads, trans(y) by
 * ldmatrix), 4 and 8 warps, ragged tails. */
static bool test_matmul_tf32_trans(KilnRtDevice *dev) {
  static const struct {
    int32_t M, N, K, bm, bn, bk;
    int stages, warps;
  } cfgs[] = {{64, 64, 64, 32, 32, 32, 1, 4},
              {100, 70, 136, 32, 32, 32, 3, 4},
              {130, 72, 100, 64, 64, 32, 2, 8},
              {33, 17, 45, 32, 32, 16, 1, 4}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t M = (size_t)cfgs[ci].M, N = (size_t)cfgs[ci].N, K = (size_t)cfgs[ci].K;
    size_t mp = (M + 15) / 16 * 16 + 16, np = (N + 15) / 16 * 16 + 16, kp = (K + 15) / 16 * 16 + 16;
    size_t scm = N + 8, total = M * scm + TAIL_ELEMS;
    KilnDefine defs[5] = {{"BM", cfgs[ci].bm},
                          {"BN", cfgs[ci].bn},
                          {"BK", cfgs[ci].bk},
                          {"num_stages", cfgs[ci].stages},
                          {"num_warps", cfgs[ci].warps}};
    static const KilnDefine mult[] = {{"sx", 16}, {"sb", 16}, {"sa", 16}, {"sy", 16}};
    if (cfgs[ci].stages > 1) g_spec = (Spec){NULL, mult, 0, COUNT(mult)};
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zux%zu%s", M, N, K,
             cfgs[ci].stages > 1 ? " pipelined" : "");
    KilnTestRun run;
    run_begin(&run, dev, "matmul_tf32_trans", defs, COUNT(defs), shape);
    g_spec = (Spec){0};

    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 7800 + ci);
    float *x = random_f32_full(&rng, K * mp), *b = random_f32_full(&rng, K * np);
    float *a = random_f32_full(&rng, M * kp), *y = random_f32_full(&rng, N * kp);
    float *c = kiln_test_alloc(total, sizeof *c), *got = kiln_test_alloc(M * N, sizeof *got);
    float *r1 = kiln_test_alloc(M * N, 4), *b1 = kiln_test_alloc(M * N, 4);
    float *r2 = kiln_test_alloc(M * N, 4), *b2 = kiln_test_alloc(M * N, 4);
    void *dx = kiln_test_input(&run, x, K * mp * 4), *db = kiln_test_input(&run, b, K * np * 4);
    void *da = kiln_test_input(&run, a, M * kp * 4), *dy = kiln_test_input(&run, y, N * kp * 4);
    void *dc = kiln_test_output(&run, total * sizeof *c);
    int32_t m32 = cfgs[ci].M, n32 = cfgs[ci].N, k32 = cfgs[ci].K;
    int32_t sx = (int32_t)mp, sb = (int32_t)np, sa = (int32_t)kp, sy = (int32_t)kp;
    int32_t scm32 = (int32_t)scm;
    void *args[] = {&dx, &db, &da, &dy, &dc, &m32, &n32, &k32, &sx, &sb, &sa, &sy, &scm32};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(M, (size_t)cfgs[ci].bm),
                     kiln_test_cdiv(N, (size_t)cfgs[ci].bn), args);
    kiln_test_fetch(&run, c, dc, total * sizeof *c);
    kiln_test_check_untouched(&run, "c", c, sizeof *c, total, M, N, scm);
    for (size_t r = 0; r < M; r++) memcpy(got + r * N, c + r * scm, N * sizeof *got);
    /* X^T B: a[i][k] = x[k][i] (strides 1, mp); A Y^T: b[k][j] = y[j][k] (strides 1, kp) */
    ref_matmul_tf32(x, 1, mp, b, np, 1, M, N, K, TF32_ROUNDED, r1, b1);
    ref_matmul_tf32(a, kp, 1, y, 1, kp, M, N, K, TF32_ROUNDED, r2, b2);
    for (size_t i = 0; i < M * N; i++) {
      double sum = (double)r1[i] + r2[i];
      r1[i] = (float)sum;
      b1[i] = (float)((double)b1[i] + b2[i] + fabs(sum) * 0x1p-24); /* K + 1 twice: >= 2K + 1 */
    }
    kiln_test_check_bound(&run, "c", got, r1, b1, M * N);
    all_ok &= kiln_test_end(&run);
    free(x), free(b), free(a), free(y), free(c), free(got), free(r1), free(b1), free(r2), free(b2);
  }
  return all_ok;
}

/* ---- device_print --------------------------------------------------------------------------- */

static int compare_lines(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Splits text into its lines (in place), sorted; returns how many. */
static size_t sorted_lines(char *text, char ***out) {
  size_t n = 0, cap = 64;
  char **l = kiln_test_alloc(cap, sizeof *l);
  for (char *s = strtok(text, "\n"); s; s = strtok(NULL, "\n")) {
    if (n == cap) {
      char **m = kiln_test_alloc(cap * 2, sizeof *m);
      memcpy(m, l, cap * sizeof *l);
      free(l);
      l = m, cap *= 2;
    }
    l[n++] = s;
  }
  qsort(l, n, sizeof *l, compare_lines);
  *out = l;
  return n;
}

/* The lines the device_print kernel must print for x (n values, b per program), in any order
 * (programs may run on several threads): one per element of each print, "%.9g" for f32. */
static char *expected_prints(const float *x, size_t n, size_t b) {
  size_t progs = (n + b - 1) / b, cap = progs * (b * 2 + 5) * 64 + 1, len = 0;
  char *t = kiln_test_alloc(cap, 1);
  for (size_t p = 0; p < progs; p++) {
    for (size_t i = 0; i < b; i++) {
      float v = p * b + i < n ? x[p * b + i] : 0.0f;
      len += (size_t)snprintf(t + len, cap - len, "pid (%zu, 0, 0) idx (%zu) v: %.9g\n", p, i,
                              (double)v);
      len += (size_t)snprintf(t + len, cap - len, "pid (%zu, 0, 0) idx (%zu) pos: %d\n", p, i,
                              v > 0.0f);
    }
    len += (size_t)snprintf(t + len, cap - len, "pid (%zu, 0, 0) n%%: %zu\n", p, n);
    for (size_t i = 0; i < 2; i++)
      for (size_t j = 0; j < 2; j++)
        len += (size_t)snprintf(t + len, cap - len, "pid (%zu, 0, 0) idx (%zu, %zu) ij: %zu\n", p,
                                i, j, 10 * i + j + 100 * p);
  }
  return t;
}

/* device_print on every target (the cpu's printf, the GPU's vprintf, on emu kiln_emu_vprintf):
 * stdout is sent to a file around the launch, and its lines, sorted (threads and programs print
 * in any order), must be exactly the expected ones, sorted (the values exact: %.9g of an f32 is
 * the text C prints for it; each element once, however many threads hold it). */
static bool test_device_print(KilnRtDevice *dev) {
  static const size_t sizes[] = {40, 1, 16};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(sizes); ci++) {
    size_t n = sizes[ci], b = 16, total = n + TAIL_ELEMS;
    KilnDefine defs[] = {{"B", (int64_t)b}};
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu", n);
    KilnTestRun run;
    run_begin(&run, dev, "device_print", defs, COUNT(defs), shape);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 2600 + ci);
    float *x = kiln_test_random_f32(&rng, n, -4.0f, 4.0f);
    float *out = kiln_test_alloc(total, sizeof *out), *ref = kiln_test_alloc(n, sizeof *ref);
    for (size_t i = 0; i < n; i++) ref[i] = 2.0f * x[i];
    void *dx = kiln_test_input(&run, x, n * sizeof *x);
    void *dout = kiln_test_output(&run, total * sizeof *out);
    int32_t n32 = (int32_t)n;
    void *args[] = {&dx, &dout, &n32};

    char path[1024];
    const char *tmpdir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/kiln_print_XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemp(path), saved = -1;
    if (fd >= 0) {
      fflush(stdout);
      saved = dup(1);
      dup2(fd, 1);
    }
    kiln_test_launch(&run, run.fn, (uint32_t)kiln_test_cdiv(n, b), 1, args);
    fflush(stdout);
    if (fd >= 0) {
      dup2(saved, 1);
      close(saved);
    }
    kiln_test_fetch(&run, out, dout, total * sizeof *out);
    kiln_test_check_untouched(&run, "out", out, sizeof *out, total, 1, n, total);
    check_close(&run, "out", out, ref, n, 1.0, 0.0);

    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    char *got = kiln_test_alloc(1 << 20, 1), *want = expected_prints(x, n, b);
    size_t glen = 0;
    if (f) {
      rewind(f);
      glen = fread(got, 1, (1 << 20) - 1, f);
      fclose(f);
    }
    unlink(path);
    got[glen] = '\0';
    char **gl, **wl;
    size_t ng = sorted_lines(got, &gl), nw = sorted_lines(want, &wl);
    size_t bad = ng == nw ? 0 : 1;
    for (size_t i = 0; i < ng && i < nw; i++)
      if (strcmp(gl[i], wl[i]) != 0) {
        if (bad++ == 0)
          printf("       first difference: printed '%s', expected '%s'\n", gl[i], wl[i]);
      }
    if (run.ok && !run.d.emit) {
      printf("       device_print %s: %zu lines printed, %zu expected, %zu differ\n", shape, ng, nw,
             bad);
      if (!f || bad) kiln_test_fail(&run, "device_print printed other lines than expected");
    }
    all_ok &= kiln_test_end(&run);
    free(gl), free(wl), free(got), free(want), free(x), free(out), free(ref);
  }
  return all_ok;
}

/* ---- rand_normal --------------------------------------------------------------------------- */

/* randint exactly (the Philox word); randn within 5e-4 absolute (floor 1): on the GPU the log is
 * lg2.approx, whose absolute error 2^-22.6 near u1 = 1 becomes up to 2^-22.6 / sqrt(2 ln(1/u1))
 * in sqrt(-2 ln u1), 4.6e-4 at the largest u1 = 1 - 2^-24; cos.approx adds ~2^-20.9 times
 * |r| <= 5.8 (3e-6).  Measured: 1.3e-6 on cpu and emu, 1.1e-5 under the emulator's pessimistic
 * math.  The moments of the
 * whole draw say it is normal: |mean| < 5 / sqrt(n) and |variance - 1| < 5 sqrt(2 / n). */
static bool test_rand_normal(KilnRtDevice *dev) {
  /* offsets start * align + i: aligned runs of 4 (align 4) and 2 (align 2, from a negative
   * start), unproven ones that do and do not cross a block boundary, across 0 and across 2^31 */
  static const struct {
    int32_t n, block, seed, align, start;
  } cfgs[] = {{65536, 1024, 12345, 4, 0},     {1000, 128, -7, 1, 3}, {1, 128, 0, 1, 0},
              {1000, 256, 99, 1, -6},         {1000, 256, 5, 2, -3}, {1000, 1024, 77, 4, 5},
              {1000, 1024, 1, 1, 2147483000}, {999, 256, 3, 1, 0}};
  bool all_ok = true;
  for (size_t ci = 0; ci < COUNT(cfgs); ci++) {
    size_t n = (size_t)cfgs[ci].n, total = n + TAIL_ELEMS;
    KilnDefine defs[] = {{"BLOCK", cfgs[ci].block}, {"ALIGN", cfgs[ci].align}};
    char shape[96];
    snprintf(shape, sizeof shape, "n=%zu seed=%d start=%d", n, (int)cfgs[ci].seed,
             (int)cfgs[ci].start);
    KilnTestRun run;
    run_begin(&run, dev, "rand_normal", defs, COUNT(defs), shape);
    int32_t *bits = kiln_test_alloc(total, sizeof *bits),
            *rbits = kiln_test_alloc(n, sizeof *rbits);
    float *normal = kiln_test_alloc(total, sizeof *normal),
          *rnormal = kiln_test_alloc(n, sizeof *rnormal);
    void *dbits = kiln_test_output(&run, total * sizeof *bits);
    void *dnormal = kiln_test_output(&run, total * sizeof *normal);
    int32_t n32 = cfgs[ci].n, seed = cfgs[ci].seed, start = cfgs[ci].start;
    void *args[] = {&dbits, &dnormal, &n32, &seed, &start};
    kiln_test_launch(&run, run.fn, kiln_test_cdiv(n, (size_t)cfgs[ci].block), 1, args);
    kiln_test_fetch(&run, bits, dbits, total * sizeof *bits);
    kiln_test_fetch(&run, normal, dnormal, total * sizeof *normal);

    kiln_test_check_untouched(&run, "bits", bits, sizeof *bits, total, 1, n, total);
    kiln_test_check_untouched(&run, "normal", normal, sizeof *normal, total, 1, n, total);
    int32_t first = (int32_t)((uint32_t)cfgs[ci].start * (uint32_t)cfgs[ci].align);
    kiln_ref_rand_normal(rbits, rnormal, n, cfgs[ci].seed, first);
    check_equal_i32(&run, "bits", bits, rbits, n);
    check_close(&run, "normal", normal, rnormal, n, 1.0, 5e-4);
    if (run.ok && n >= 1000) {
      double mean = 0.0, var = 0.0;
      for (size_t i = 0; i < n; i++) mean += normal[i];
      mean /= (double)n;
      for (size_t i = 0; i < n; i++) var += (normal[i] - mean) * (normal[i] - mean);
      var /= (double)n;
      if (fabs(mean) > 5.0 / sqrt((double)n) || fabs(var - 1.0) > 5.0 * sqrt(2.0 / (double)n))
        kiln_test_fail(&run, "normal: mean %g, variance %g of %zu draws", mean, var, n);
    }
    all_ok &= kiln_test_end(&run);
    free(bits), free(rbits), free(normal), free(rnormal);
  }
  return all_ok;
}

/* The shapes of the kernels with a limit (early_exit, while_loops): the limits make some rows
 * end early, one none (1e30); and of those with a BLOCK of columns (inline_fns, multi_return):
 * a row shorter than the block, one row, a row of exactly the block. */
static const RowsShape LIMIT_SHAPES[] = {
    {300, 37, 20.0f, 0}, {1, 1, 0.0f, 0}, {64, 16, 1e30f, 0}, {100, 5, 2.0f, 0}};
static const RowsShape BLOCK_SHAPES[] = {{300, 37, 0, 0}, {1, 1, 0, 0}, {50, 64, 0, 0}};

/* ---- early_exit ---------------------------------------------------------------------------- */

/* break, continue and early return (issue 15), lowered to flags: the counters and columns are
 * exact; the row sum is in the reference's order (exact) and the 16-lane sum of t is a tree on
 * the GPU, so f32 results allow 1e-5 of their size (16 positive terms). Three programs more than
 * rows must return before writing (the tails stay sentinel); the limits make some rows break
 * early, some never (1e30), and inputs up to 3.6 make some return from inside the loop. */
static void ref_early_exit(const float *x, const float *y, float *rf, int32_t *ri, size_t rows,
                           size_t cols, float limit) {
  (void)y;
  kiln_ref_early_exit(x, rf, ri, rows, cols, limit);
}

static bool test_early_exit(KilnRtDevice *dev) {
  RowsCase c = {.kernel = "early_exit",
                .nf = 2,
                .ni = 4,
                .lo = -4.0f,
                .hi = 3.6f,
                .has_limit = true,
                .extra_programs = 3,
                .seed = 1300,
                .ref = ref_early_exit};
  return run_rows_shapes(dev, c, LIMIT_SHAPES, COUNT(LIMIT_SHAPES));
}

/* ---- inline_fns ---------------------------------------------------------------------------- */

/* Functions inlined per call, keyword arguments and defaults (issue 15). The integers are exact;
 * the f32 results allow 1e-5 of their size: the dot product and 2 v^3 + clamp(v) are a multiply
 * and an add the GPU lowering may fuse (the maximum itself is exact). */
static void ref_inline_fns(const float *x, const float *y, float *rf, int32_t *ri, size_t rows,
                           size_t cols, float limit) {
  (void)limit;
  kiln_ref_inline_fns(x, y, rf, ri, rows, cols);
}

static bool test_inline_fns(KilnRtDevice *dev) {
  RowsCase c = {.kernel = "inline_fns",
                .block = 64,
                .nf = 4,
                .ni = 4,
                .lo = -2.0f,
                .hi = 2.0f,
                .two_inputs = true,
                .seed = 1400,
                .ref = ref_inline_fns};
  return run_rows_shapes(dev, c, BLOCK_SHAPES, COUNT(BLOCK_SHAPES));
}

/* ---- while_loops --------------------------------------------------------------------------- */

/* while loops and loops that end at their break (issue 15). The counters are exact; the row sum
 * is in the reference's order (exact) and the 16-lane sum of t is a tree on the GPU, so the f32
 * results allow 1e-5 of their size (16 positive terms), as in early_exit. The search's loops
 * run to 2^31 - 1 and the last loop is `while true`: the test finishing at all is the measure
 * that a break or return ends its loop (ran empty to its end, the search alone would take 2^62
 * iterations per program); the counts say how many iterations did run, against the reference. */
static void ref_while_loops(const float *x, const float *y, float *rf, int32_t *ri, size_t rows,
                            size_t cols, float limit) {
  (void)y;
  kiln_ref_while_loops(x, rf, ri, rows, cols, limit);
}

static bool test_while_loops(KilnRtDevice *dev) {
  RowsCase c = {.kernel = "while_loops",
                .nf = 2,
                .ni = 5,
                .lo = -4.0f,
                .hi = 3.6f,
                .has_limit = true,
                .seed = 1500,
                .ref = ref_while_loops};
  return run_rows_shapes(dev, c, LIMIT_SHAPES, COUNT(LIMIT_SHAPES));
}

/* ---- range_steps --------------------------------------------------------------------------- */

/* range() with run-time steps of either sign and zero (issue 15): every result is an integer,
 * compared exactly. Random triples cover small ranges both ways and steps in [-7, 7]; the fixed
 * ones the ends of i32, where a trip count computed in signed i32 would overflow. */
static bool test_range_steps(KilnRtDevice *dev) {
  static const int32_t fixed[][3] = {
      {0, 10, 3},
      {10, 0, -3},
      {5, 5, 1},
      {5, 5, -1},
      {0, 10, 0},
      {10, 0, 0},
      {0, 10, -1},
      {10, 0, 1},
      {INT32_MIN, INT32_MAX, INT32_MAX},
      {INT32_MAX, INT32_MIN, INT32_MIN},
      {INT32_MAX - 10, INT32_MIN + 10, -INT32_MAX},
      {-3, 3, INT32_MAX},
      {INT32_MAX - 2, INT32_MAX, 1},
      {INT32_MIN + 2, INT32_MIN, -1},
  };
  enum { NRANDOM = 200 };
  size_t n = COUNT(fixed) + NRANDOM, no = 6 * n, total = no + TAIL_ELEMS;
  KilnTestRun run;
  run_begin(&run, dev, "range_steps", NULL, 0, "triples=214");
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, 1600);
  int32_t *params = kiln_test_alloc(3 * n, sizeof *params);
  memcpy(params, fixed, sizeof fixed);
  for (size_t i = COUNT(fixed); i < n; i++) {
    params[3 * i] = (int32_t)(kiln_ref_rng_next(&rng) % 101) - 50;
    params[3 * i + 1] = (int32_t)(kiln_ref_rng_next(&rng) % 101) - 50;
    params[3 * i + 2] = (int32_t)(kiln_ref_rng_next(&rng) % 15) - 7;
  }
  int32_t *out = kiln_test_alloc(total, sizeof *out), *rout = kiln_test_alloc(no, sizeof *rout);
  void *dp = kiln_test_input(&run, params, 3 * n * sizeof *params);
  void *dout = kiln_test_output(&run, total * sizeof *out);
  int32_t n32 = (int32_t)n;
  void *args[] = {&dp, &dout, &n32};
  kiln_test_launch(&run, run.fn, (uint32_t)n + 3, 1, args);
  kiln_test_fetch(&run, out, dout, total * sizeof *out);
  kiln_test_check_untouched(&run, "out", out, sizeof *out, total, 1, no, total);
  kiln_ref_range_steps(params, rout, n);
  check_equal_i32(&run, "out", out, rout, no);
  bool ok = kiln_test_end(&run);
  free(params), free(out), free(rout);
  return ok;
}

/* ---- multi_return -------------------------------------------------------------------------- */

/* Functions returning several values (issue 15). The integers and the minimum/maximum are exact;
 * the row sum is a tree on the GPU and in double in the reference, up to 64 terms in [-2, 2]:
 * 1e-5 of its size with a floor of 1. */
static void ref_multi_return(const float *x, const float *y, float *rf, int32_t *ri, size_t rows,
                             size_t cols, float limit) {
  (void)y, (void)limit;
  kiln_ref_multi_return(x, rf, ri, rows, cols);
}

static bool test_multi_return(KilnRtDevice *dev) {
  RowsCase c = {.kernel = "multi_return",
                .block = 64,
                .nf = 4,
                .ni = 3,
                .lo = -2.0f,
                .hi = 2.0f,
                .seed = 1700,
                .ref = ref_multi_return};
  return run_rows_shapes(dev, c, BLOCK_SHAPES, COUNT(BLOCK_SHAPES));
}

/* ---- main --------------------------------------------------------------------------------- */

static const struct {
  const char *name;
  bool (*run)(KilnRtDevice *dev);
} TESTS[] = {
    {"vector_add", test_vector_add},
    {"bias_gelu", test_bias_gelu},
    {"softmax_rows", test_softmax_rows},
    {"layernorm_fwd", test_layernorm_fwd},
    {"matmul_f16", test_matmul_f16},
    {"argmax_rows", test_argmax_rows},
    {"dropout_rand", test_dropout_rand},
    {"atomic_accum", test_atomic_accum},
    {"flash_attention", test_flash_attention},
    {"matmul_grouped", test_matmul_grouped},
    {"transpose", test_transpose},
    {"float_convert", test_float_convert},
    {"small_int_sum", test_small_int_sum},
    {"matmul_i8", test_matmul_i8},
    {"matmul_i8_strided", test_matmul_i8_strided},
    {"matmul_tf32", test_matmul_tf32},
    {"matmul_tf32_trans", test_matmul_tf32_trans},
    {"layernorm_bwd", test_layernorm_bwd},
    {"small_dots", test_small_dots},
    {"int_semantics", test_int_semantics},
    {"dot_i8_forms", test_dot_i8_forms},
    {"accum_loop", test_accum_loop},
    {"pow_countdown", test_pow_countdown},
    {"builtins_basic", test_builtins_basic},
    {"cas_lock", test_cas_lock},
    {"scan_flip", test_scan_flip},
    {"scan_combine", test_scan_combine},
    {"scan_reverse", test_scan_reverse},
    {"scan_axes", test_scan_axes},
    {"scan_layouts", test_scan_layouts},
    {"rand_normal", test_rand_normal},
    {"argmax_all", test_argmax_all},
    {"sort_rows", test_sort_rows},
    {"sort_axes", test_sort_axes},
    {"trans3d", test_trans3d},
    {"join_split", test_join_split},
    {"int_helpers", test_int_helpers},
    {"device_assert", test_device_assert},
    {"gather_hist", test_gather_hist},
    {"tensor_desc", test_tensor_desc},
    {"static_range", test_static_range},
    {"matmul_desc", test_matmul_desc},
    {"rope", test_rope},
    {"device_print", test_device_print},
    {"cas_f32", test_cas_f32},
    {"cas_i64", test_cas_i64},
    {"atomic64", test_atomic64},
    {"atomic16", test_atomic16},
    {"bool_store", test_bool_store},
    {"unsigned_ops", test_unsigned_ops},
    {"f64_ops", test_f64_ops},
    {"f64_math", test_f64_math},
    {"f32_math", test_f32_math},
    {"f64_basic", test_f64_basic},
    {"matmul_f64", test_matmul_f64},
    {"early_exit", test_early_exit},
    {"inline_fns", test_inline_fns},
    {"while_loops", test_while_loops},
    {"range_steps", test_range_steps},
    {"multi_return", test_multi_return},
};

static int find_test(const char *name) {
  for (size_t i = 0; i < COUNT(TESTS); i++)
    if (strcmp(TESTS[i].name, name) == 0) return (int)i;
  return -1;
}

static void usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [--device cpu|emu|cuda[:N]] [--bundle DIR] [--warps N[,N...]] [--vs-cpu]\n"
          "          [--cpu native|generic|x86-64-v2|...]\n"
          "          KERNEL... | all | --list\n"
          "       %s --emit-bundle DIR --arch sm_80|sm_90 [--warps N[,N...]] KERNEL... | all\n",
          argv0, argv0);
}

/* Runs the selected tests on `spec` once per num_warps value; returns the number that failed. */
static int run_selected(const char *spec, KilnTarget target, const int *warps, int nwarps,
                        const bool *selected) {
  KilnRtDevice *dev = NULL;
  KilnRtStatus st = kiln_rt_device_create(spec, &dev);
  if (st != KILN_RT_OK) {
    fprintf(stderr, "kiln_rt_device_create(\"%s\") failed: %s: %s\n", spec, kiln_rt_status_name(st),
            kiln_rt_last_error());
    return 1;
  }
  /* on a GPU, the arch whose modules the bundle gives this device: sm_90's lowering (wgmma,
   * which some references depend on: TF32 read truncated) from compute capability 9 on */
  KilnRtDeviceInfo info;
  if (target == KILN_TARGET_SM90 && kiln_rt_device_info(dev, &info) == KILN_RT_OK &&
      info.kind == KILN_RT_DEVICE_CUDA && info.cc_major < 9)
    target = KILN_TARGET_SM80;
  int failed = 0;
  g_target = target;
  for (int w = 0; w < nwarps; w++) {
    g_num_warps = warps[w];
    for (size_t i = 0; i < COUNT(TESTS); i++) {
      if (!selected[i]) continue;
      printf("%s on %s, num_warps %d\n", TESTS[i].name, spec, g_num_warps);
      if (!TESTS[i].run(dev)) {
        failed++;
        printf("%s on %s, num_warps %d: FAILED\n", TESTS[i].name, spec, g_num_warps);
      }
    }
  }
  kiln_rt_device_destroy(dev);
  return failed;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(argv[0]);
    return 2;
  }
  if (strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < COUNT(TESTS); i++) printf("%s\n", TESTS[i].name);
    return 0;
  }
  bool selected[COUNT(TESTS)] = {false}, any = false, vs_cpu = false;
  const char *device = "cpu", *arch = NULL;
  int warps[MAX_WARP_COUNTS] = {4}, nwarps = 1;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--device") == 0 && a + 1 < argc) {
      device = argv[++a];
      if (strcmp(device, "cpu") != 0 && strcmp(device, "emu") != 0 &&
          strncmp(device, "cuda", 4) != 0) {
        fprintf(stderr, "%s: --device must be cpu, emu or cuda[:N], not '%s'\n", argv[0], device);
        return 2;
      }
      continue;
    }
    if ((strcmp(argv[a], "--bundle") == 0 || strcmp(argv[a], "--emit-bundle") == 0) &&
        a + 1 < argc) {
      g_bundle_write = strcmp(argv[a], "--emit-bundle") == 0;
      g_bundle = argv[++a];
      continue;
    }
    if (strcmp(argv[a], "--arch") == 0 && a + 1 < argc) {
      arch = argv[++a];
      if (strcmp(arch, "sm_80") != 0 && strcmp(arch, "sm_90") != 0) {
        fprintf(stderr, "%s: --arch must be sm_80 or sm_90, not '%s'\n", argv[0], arch);
        return 2;
      }
      continue;
    }
    if (strcmp(argv[a], "--warps") == 0 && a + 1 < argc) {
      nwarps = 0;
      for (char *p = argv[++a]; *p;) {
        char *end;
        long w = strtol(p, &end, 10);
        if (end == p || w < 1 || w > 32 || (w & (w - 1)) || nwarps == MAX_WARP_COUNTS ||
            (*end && *end != ',')) {
          fprintf(stderr, "%s: --warps takes up to %d powers of two in 1..32, e.g. 1,4\n", argv[0],
                  MAX_WARP_COUNTS);
          return 2;
        }
        warps[nwarps++] = (int)w;
        p = *end ? end + 1 : end;
      }
      continue;
    }
    if (strcmp(argv[a], "--cpu") == 0 && a + 1 < argc) {
      g_cpu = argv[++a];
      continue;
    }
    if (strcmp(argv[a], "--vs-cpu") == 0) {
      vs_cpu = true;
      continue;
    }
    if (strcmp(argv[a], "all") == 0) {
      for (size_t i = 0; i < COUNT(TESTS); i++) selected[i] = true;
      any = true;
      continue;
    }
    int t = find_test(argv[a]);
    if (t < 0) {
      fprintf(stderr, "%s: no numeric test named '%s' (--list shows them)\n", argv[0], argv[a]);
      return 2;
    }
    selected[t] = any = true;
  }
  if (!any || nwarps == 0) {
    usage(argv[0]);
    return 2;
  }
  KilnTarget target = strcmp(device, "emu") == 0 ? KILN_TARGET_EMU : KILN_TARGET_CPU;
  if (g_bundle_write) { /* compile only: the cpu device stands in, nothing is launched */
    if (!arch || vs_cpu) {
      usage(argv[0]);
      return 2;
    }
    target = strcmp(arch, "sm_80") == 0 ? KILN_TARGET_SM80 : KILN_TARGET_SM90;
    device = "cpu";
  } else if (strncmp(device, "cuda", 4) == 0) {
    if (!g_bundle) {
      fprintf(stderr, "%s: --device cuda runs precompiled kernels: give --bundle DIR\n", argv[0]);
      return 2;
    }
    target = KILN_TARGET_SM90; /* sm_80 below compute capability 9: run_selected */
  }
  int failed = 0;
  if (vs_cpu) {
    static const int cpu_warps[1] = {4};
    g_recording = true;
    failed += run_selected("cpu", KILN_TARGET_CPU, cpu_warps, 1, selected);
    g_recording = false;
    g_compare = true;
  }
  failed += run_selected(device, target, warps, nwarps, selected);
  records_free();
  return failed ? 1 : 0;
}
