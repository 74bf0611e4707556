/* exlib_test.c — every kernel of dsl/examples called from C through a generated library.
 *
 * The library is made by `kiln lib` over the example files themselves (no cache: every kernel
 * at its default config, compiled three times: promising the `--args` values' multiples of 16
 * and unit strides, promising multiples of 8, and generic; docs/library.md), once for the cpu
 * device (exlib_cpu, EXLIB_CPU defined) and once for emu (exlib_emu). This program calls each
 * kernel through the library's functions at two or three sizes: one that keeps the `%16`
 * promises, one whose sizes are multiples of 8 only, and a ragged one that keeps none, and
 * checks with `_pick` which copy ran (the dispatch by key and promises). Every result is
 * compared with the plain C reference of tests/numeric (reference.c) at the tolerance the
 * numeric tests state for the same kernel (docs/kernels-tests.md gives the reasons). A call
 * that no copy fits (a row longer than the one-tile kernels' BLOCK) must be refused with
 * INVALID_ARGUMENT, touching nothing.
 *
 * Built a third time (EXLIB_TUNED) against exlib_tuned_cpu, the library `kiln tune --emit-lib`
 * makes from a tiny search on this CPU: its winners are specialized on the `%16` promises and
 * each has a generic copy, so the calls of the `%8` tier run the generic copy there, and a long
 * row is refused only when no winner's tile holds it.
 *
 * Usage: exlib_test [KERNEL...]   (default: every kernel). Exit 0 when every check passed. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(EXLIB_TUNED)
#include "exlib_tuned_cpu.h"
#define EX(name)  exlib_tuned_cpu##name
#define EX_DEVICE "cpu"
#elif defined(EXLIB_CPU)
#include "exlib_cpu.h"
#define EX(name)  exlib_cpu##name
#define EX_DEVICE "cpu"
#else
#include "exlib_emu.h"
#define EX(name)  exlib_emu##name
#define EX_DEVICE "emu"
#endif
#include "reference.h"

#define COUNT(a) (sizeof(a) / sizeof *(a))

static KilnRtDevice *g_dev;
static EX() * g_lib;
static int g_failures;

/* ---- buffers ----------------------------------------------------------------------------- */

/* A device copy of bytes of host memory; NULL (and a failure) when the runtime refuses. */
static void *to_device(const void *host, size_t bytes) {
  void *p = NULL;
  if (kiln_rt_malloc(g_dev, bytes, &p) != KILN_RT_OK ||
      kiln_rt_memcpy_htod(g_dev, p, host, bytes, NULL) != KILN_RT_OK) {
    printf("FAIL: device buffer of %zu bytes: %s\n", bytes, kiln_rt_last_error());
    g_failures++;
    return NULL;
  }
  return p;
}

/* An output buffer filled with 0xFF bytes (a NaN as f32 and f16, -1 as i32): what the kernel
 * must not write keeps that pattern. */
static void *output(size_t bytes) {
  void *p = NULL;
  if (kiln_rt_malloc(g_dev, bytes, &p) != KILN_RT_OK ||
      kiln_rt_memset(g_dev, p, 0xFF, bytes, NULL) != KILN_RT_OK) {
    printf("FAIL: device buffer of %zu bytes: %s\n", bytes, kiln_rt_last_error());
    g_failures++;
    return NULL;
  }
  return p;
}

/* The device buffer's bytes, in a new host buffer (NULL when the copy fails). */
static void *fetch(const void *dev, size_t bytes) {
  void *host = malloc(bytes);
  if (host && kiln_rt_memcpy_dtoh(g_dev, host, dev, bytes, NULL) == KILN_RT_OK) return host;
  free(host);
  return NULL;
}

static float *random_f32(KilnRefRng *rng, size_t n, float lo, float hi) {
  float *p = malloc(n * sizeof *p);
  for (size_t i = 0; p && i < n; i++) p[i] = kiln_ref_rng_uniform(rng, lo, hi);
  return p;
}

static uint16_t *random_f16(KilnRefRng *rng, size_t n, float lo, float hi) {
  uint16_t *p = malloc(n * sizeof *p);
  for (size_t i = 0; p && i < n; i++) p[i] = kiln_ref_f32_to_f16(kiln_ref_rng_uniform(rng, lo, hi));
  return p;
}

/* rows x cols f32 values out of rows `stride` apart, densely (NULL in, NULL out). */
static float *dense_f32(const float *buf, size_t rows, size_t cols, size_t stride) {
  float *p = buf ? malloc(rows * cols * sizeof *p) : NULL;
  for (size_t r = 0; p && r < rows; r++) memcpy(p + r * cols, buf + r * stride, cols * sizeof *p);
  return p;
}

static int32_t *dense_i32(const int32_t *buf, size_t rows, size_t cols, size_t stride) {
  int32_t *p = buf ? malloc(rows * cols * sizeof *p) : NULL;
  for (size_t r = 0; p && r < rows; r++) memcpy(p + r * cols, buf + r * stride, cols * sizeof *p);
  return p;
}

static float *dense_f16(const uint16_t *buf, size_t rows, size_t cols, size_t stride) {
  float *p = buf ? malloc(rows * cols * sizeof *p) : NULL;
  for (size_t r = 0; p && r < rows; r++)
    for (size_t c = 0; c < cols; c++) p[r * cols + c] = kiln_ref_f16_to_f32(buf[r * stride + c]);
  return p;
}

/* Whether the elements between each row's cols and its stride still hold the 0xFF pattern. */
static int gaps_untouched(const void *buf, size_t elem, size_t rows, size_t cols, size_t stride) {
  const unsigned char *b = buf;
  for (size_t r = 0; b && r < rows; r++)
    for (size_t i = (r * stride + cols) * elem; i < (r + 1) * stride * elem; i++)
      if (b[i] != 0xFF) return 0;
  return b != NULL;
}

/* ---- one call's verdict ------------------------------------------------------------------ */

/* What one call is checked for: its status, the copy its dispatch chose (tier 16: a signature
 * with `%16` promises, 8: `%8` ones only, 0: the generic copy), and its results. */
typedef struct Verdict {
  const char *kernel;
  char shape[96];
  int bad;
  char why[256];
} Verdict;

static void verdict_fail(Verdict *v, const char *what) {
  if (!v->bad) snprintf(v->why, sizeof v->why, "%s", what);
  v->bad = 1;
}

/* A call's copy may be any: a row longer than an untuned library's tile, which a tuned library
 * whose winner has a larger BLOCK runs. */
#define TIER_ANY (-2)

/* The tier a call must run: a library of tuned winners (EXLIB_TUNED) has no `%8` copies, so
 * the calls that would take one run the generic copy. */
static int wanted_tier(int tier) {
#ifdef EXLIB_TUNED
  if (tier == 8) return 0;
#endif
  return tier;
}

/* Whether a call of tier -1 (no copy of the untuned library fits it) must be refused: always
 * untuned; tuned, only when _pick finds no copy either (num_warps 0). */
static int must_refuse(int tier, int pick_warps) {
#ifdef EXLIB_TUNED
  return tier < 0 && pick_warps == 0;
#else
  (void)pick_warps;
  return tier < 0;
#endif
}

static int tier_of(const char *signature) {
  if (!signature || !*signature) return 0;
  return strstr(signature, "%16") ? 16 : strstr(signature, "%8") ? 8 : -1;
}

static void check_call(Verdict *v, KilnRtStatus st, const char *signature, int want_tier) {
  if (st != KILN_RT_OK) {
    char msg[256];
    snprintf(msg, sizeof msg, "status %s: %s", kiln_rt_status_name(st), kiln_rt_last_error());
    verdict_fail(v, msg);
  }
  int tier = tier_of(signature);
  printf("  %s %s: copy '%s'\n", v->kernel, v->shape, signature ? signature : "(none)");
  want_tier = want_tier < 0 ? TIER_ANY : wanted_tier(want_tier);
  if (want_tier != TIER_ANY && tier != want_tier) {
    char msg[160];
    snprintf(msg, sizeof msg, "ran the copy '%s', want a %s copy", signature ? signature : "",
             want_tier ? (want_tier == 16 ? "%16" : "%8") : "generic");
    verdict_fail(v, msg);
  }
}

/* got against ref by kiln_ref_max_error (normalized by max(|ref|, floor)) within tol. */
static void check_close(Verdict *v, const char *what, const float *got, const float *ref, size_t n,
                        double floor, double tol) {
  if (!got || !ref) return verdict_fail(v, "out of memory or a failed copy");
  size_t worst = 0;
  double err = kiln_ref_max_error(got, ref, n, floor, &worst);
  printf("  %s %s: %s max error %.3g (tol %.3g)\n", v->kernel, v->shape, what, err, tol);
  if (!(err <= tol)) {
    char msg[200];
    snprintf(msg, sizeof msg, "%s[%zu] = %.9g, want %.9g (error %.3g > %.3g)", what, worst,
             (double)got[worst], (double)ref[worst], err, tol);
    verdict_fail(v, msg);
  }
}

static void check_equal_i32(Verdict *v, const char *what, const int32_t *got, const int32_t *ref,
                            size_t n) {
  if (!got || !ref) return verdict_fail(v, "out of memory or a failed copy");
  for (size_t i = 0; i < n; i++)
    if (got[i] != ref[i]) {
      char msg[160];
      snprintf(msg, sizeof msg, "%s[%zu] = %d, want %d", what, i, got[i], ref[i]);
      return verdict_fail(v, msg);
    }
}

static void check_gaps(Verdict *v, const char *what, const void *buf, size_t elem, size_t rows,
                       size_t cols, size_t stride) {
  if (!gaps_untouched(buf, elem, rows, cols, stride)) {
    char msg[120];
    snprintf(msg, sizeof msg, "%s: written between its rows (past cols, before the stride)", what);
    verdict_fail(v, msg);
  }
}

static void verdict_end(Verdict *v) {
  printf("%s " EX_DEVICE " %s %s%s%s\n", v->bad ? "FAIL" : "ok", v->kernel, v->shape,
         v->bad ? ": " : "", v->bad ? v->why : "");
  g_failures += v->bad;
}

/* A refused call: INVALID_ARGUMENT, and _pick's config says no copy fits (num_warps 0). */
static void check_refused(Verdict *v, KilnRtStatus st, int pick_warps) {
  printf("  %s %s: %s (%s)\n", v->kernel, v->shape, kiln_rt_status_name(st), kiln_rt_last_error());
  if (st != KILN_RT_ERROR_INVALID_ARGUMENT) verdict_fail(v, "the call that no copy fits ran");
  if (pick_warps != 0) verdict_fail(v, "_pick gave a config for a call that no copy fits");
}

/* The grid of the one-program-per-row kernels and of attention: what `user` points to. */
static void grid_rows(uint32_t rows, uint32_t grid[3]) {
  grid[0] = rows;
  grid[1] = grid[2] = 1;
}
static void softmax_grid(const EX(_softmax_rows_config) * cfg, void *user, uint32_t grid[3]) {
  (void)cfg;
  grid_rows(*(const uint32_t *)user, grid);
}
static void layernorm_grid(const EX(_layernorm_fwd_config) * cfg, void *user, uint32_t grid[3]) {
  (void)cfg;
  grid_rows(*(const uint32_t *)user, grid);
}

static void layernorm_bwd_grid(const EX(_layernorm_bwd_config) * cfg, void *user,
                               uint32_t grid[3]) {
  (void)cfg;
  grid_rows(*(const uint32_t *)user, grid);
}

typedef struct AttnGrid {
  uint32_t S, bh;
} AttnGrid;
static void attention_grid(const EX(_flash_attention_config) * cfg, void *user, uint32_t grid[3]) {
  const AttnGrid *g = user;
  grid[0] = (uint32_t)((g->S + cfg->BM - 1) / cfg->BM);
  grid[1] = g->bh;
  grid[2] = 1;
}

/* ---- the kernels ------------------------------------------------------------------------- */

static void test_vector_add(void) {
  static const struct {
    int32_t n;
    int tier;
  } cases[] = {{4096, 16}, {1000, 8}, {100003, 0}};
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    size_t n = (size_t)cases[ci].n;
    Verdict v = {.kernel = "vector_add"};
    snprintf(v.shape, sizeof v.shape, "n=%zu", n);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 100 + ci);
    float *x = random_f32(&rng, n, -1, 1), *y = random_f32(&rng, n, -1, 1);
    float *ref = malloc(n * sizeof *ref);
    float *dx = to_device(x, n * 4), *dy = to_device(y, n * 4), *dout = output(n * 4);
    KilnRtStatus st = EX(_vector_add)(g_lib, dx, dy, dout, cases[ci].n, NULL, NULL, NULL);
    check_call(&v, st, EX(_vector_add_pick)(cases[ci].n).signature, cases[ci].tier);
    float *out = fetch(dout, n * 4);
    kiln_ref_vector_add(x, y, ref, n);
    check_close(&v, "out", out, ref, n, 1.0, 0.0); /* one correctly rounded add: exact */
    verdict_end(&v);
    kiln_rt_free(g_dev, dx), kiln_rt_free(g_dev, dy), kiln_rt_free(g_dev, dout);
    free(x), free(y), free(ref), free(out);
  }
}

static void test_bias_gelu(void) {
  static const struct {
    int32_t rows, cols;
    int tier;
  } cases[] = {{16, 256, 16}, {5, 1000, 8}, {77, 100, 0}};
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    size_t cols = (size_t)cases[ci].cols, n = (size_t)cases[ci].rows * cols;
    Verdict v = {.kernel = "bias_gelu"};
    snprintf(v.shape, sizeof v.shape, "%dx%zu", cases[ci].rows, cols);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 200 + ci);
    uint16_t *x = random_f16(&rng, n, -4, 4), *bias = random_f16(&rng, cols, -1, 1);
    float *ref = malloc(n * sizeof *ref);
    uint16_t *dx = to_device(x, n * 2), *db = to_device(bias, cols * 2), *dy = output(n * 2);
    int32_t n32 = (int32_t)n;
    KilnRtStatus st = EX(_bias_gelu)(g_lib, dx, db, dy, n32, cases[ci].cols, NULL, NULL, NULL);
    check_call(&v, st, EX(_bias_gelu_pick)(n32, cases[ci].cols).signature, cases[ci].tier);
    uint16_t *y = fetch(dy, n * 2);
    float *got = dense_f16(y, 1, n, n);
    kiln_ref_bias_gelu(x, bias, ref, n, cols);
    check_close(&v, "y", got, ref, n, 1e-2, 2e-3); /* one f16 rounding, erf's polynomial */
    verdict_end(&v);
    kiln_rt_free(g_dev, dx), kiln_rt_free(g_dev, db), kiln_rt_free(g_dev, dy);
    free(x), free(bias), free(ref), free(y), free(got);
  }
}

/* The rows x xs input of the row kernels: values in [lo, hi), the gaps past cols at 1000 (a
 * kernel reading past its mask gets a visibly wrong maximum, sum or mean). */
static float *row_input(KilnRefRng *rng, size_t rows, size_t cols, size_t xs, float lo, float hi) {
  float *x = random_f32(rng, rows * xs, lo, hi);
  for (size_t r = 0; x && r < rows; r++)
    for (size_t c = cols; c < xs; c++) x[r * xs + c] = 1000.0f;
  return x;
}

typedef struct RowCase {
  int32_t rows, cols, xs, ys;
  int tier; /* -1: no copy fits the call (cols past BLOCK): refused */
} RowCase;

static void test_softmax_rows(void) {
  static const RowCase cases[] = {{32, 1024, 1024, 1024, 16},
                                  {5, 1000, 1000, 1008, 8},
                                  {3, 77, 79, 80, 0},
                                  {2, 1500, 1500, 1500, -1}};
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    const RowCase *c = &cases[ci];
    size_t rows = (size_t)c->rows, cols = (size_t)c->cols, xs = (size_t)c->xs, ys = (size_t)c->ys;
    Verdict v = {.kernel = "softmax_rows"};
    snprintf(v.shape, sizeof v.shape, "%zux%zu strides %zu,%zu", rows, cols, xs, ys);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 300 + ci);
    float *x = row_input(&rng, rows, cols, xs, -8, 8), *ref = malloc(rows * cols * sizeof *ref);
    float *dx = to_device(x, rows * xs * 4), *dy = output(rows * ys * 4);
    uint32_t nrows = (uint32_t)rows;
    KilnRtStatus st =
        EX(_softmax_rows)(g_lib, dx, dy, c->cols, c->xs, c->ys, softmax_grid, &nrows, NULL);
    EX(_softmax_rows_config) cfg = EX(_softmax_rows_pick)(c->cols, c->xs, c->ys);
    float *y = fetch(dy, rows * ys * 4);
    if (must_refuse(c->tier, cfg.num_warps)) {
      check_refused(&v, st, cfg.num_warps);
      check_gaps(&v, "y", y, 4, rows, 0, ys);
    } else {
      check_call(&v, st, cfg.signature, c->tier);
      float *got = dense_f32(y, rows, cols, ys);
      kiln_ref_softmax_rows(x, xs, ref, cols, rows, cols);
      check_close(&v, "y", got, ref, rows * cols, 1e-30, 1e-5);
      check_gaps(&v, "y", y, 4, rows, cols, ys);
      free(got);
    }
    verdict_end(&v);
    kiln_rt_free(g_dev, dx), kiln_rt_free(g_dev, dy);
    free(x), free(ref), free(y);
  }
}

static void test_layernorm_fwd(void) {
  static const RowCase cases[] = {{32, 1024, 1024, 1040, 16},
                                  {4, 1000, 1000, 1000, 8},
                                  {4, 100, 101, 100, 0},
                                  {2, 2000, 2000, 2000, -1}};
  const float eps = 1e-5f;
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    const RowCase *c = &cases[ci];
    size_t rows = (size_t)c->rows, cols = (size_t)c->cols, xs = (size_t)c->xs, ys = (size_t)c->ys;
    Verdict v = {.kernel = "layernorm_fwd"};
    snprintf(v.shape, sizeof v.shape, "%zux%zu strides %zu,%zu", rows, cols, xs, ys);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 400 + ci);
    float *x = row_input(&rng, rows, cols, xs, -2, 2);
    /* rows whose variance is about eps / 2 and exactly 0: there eps is what rstd depends on */
    for (size_t r = 0; x && r < rows; r++) {
      KilnRefLnRow kind = kiln_ref_layernorm_row_kind(r, rows);
      if (kind != KILN_REF_LN_ROW_NORMAL)
        kiln_ref_layernorm_fill_row(x + r * xs, cols, kind, &rng, eps, 1, 0.625f);
    }
    float *gamma = random_f32(&rng, cols, 0.5f, 1.5f), *beta = random_f32(&rng, cols, -1, 1);
    float *ref_y = malloc(rows * cols * 4), *ref_mean = malloc(rows * 4),
          *ref_rstd = malloc(rows * 4);
    float *dx = to_device(x, rows * xs * 4), *dg = to_device(gamma, cols * 4);
    float *db = to_device(beta, cols * 4), *dy = output(rows * ys * 4);
    float *dmean = output(rows * 4), *drstd = output(rows * 4);
    uint32_t nrows = (uint32_t)rows;
    KilnRtStatus st = EX(_layernorm_fwd)(g_lib, dx, dg, db, dy, dmean, drstd, c->cols, c->xs, c->ys,
                                         eps, layernorm_grid, &nrows, NULL);
    EX(_layernorm_fwd_config) cfg = EX(_layernorm_fwd_pick)(c->cols, c->xs, c->ys);
    float *y = fetch(dy, rows * ys * 4), *mean = fetch(dmean, rows * 4);
    float *rstd = fetch(drstd, rows * 4);
    if (must_refuse(c->tier, cfg.num_warps)) {
      check_refused(&v, st, cfg.num_warps);
      check_gaps(&v, "y", y, 4, rows, 0, ys);
      check_gaps(&v, "mean", mean, 4, 1, 0, rows);
    } else {
      check_call(&v, st, cfg.signature, c->tier);
      float *got = dense_f32(y, rows, cols, ys);
      kiln_ref_layernorm_fwd(x, xs, gamma, beta, ref_y, cols, ref_mean, ref_rstd, rows, cols, eps);
      check_close(&v, "y", got, ref_y, rows * cols, 1.0, 1e-5);
      check_close(&v, "mean", mean, ref_mean, rows, 1.0, 1e-5);
      check_close(&v, "rstd", rstd, ref_rstd, rows, 1e-30, 1e-5);
      check_gaps(&v, "y", y, 4, rows, cols, ys);
      free(got);
    }
    verdict_end(&v);
    kiln_rt_free(g_dev, dx), kiln_rt_free(g_dev, dg), kiln_rt_free(g_dev, db);
    kiln_rt_free(g_dev, dy), kiln_rt_free(g_dev, dmean), kiln_rt_free(g_dev, drstd);
    free(x), free(gamma), free(beta), free(ref_y), free(ref_mean), free(ref_rstd);
    free(y), free(mean), free(rstd);
  }
}

typedef struct MatCase {
  int32_t M, N, K;
  int a_colmajor; /* A stored K x M (sam = 1): breaks the sak = 1 promise */
  int tier;
} MatCase;

static const MatCase MAT_CASES[] = {
    {128, 128, 64, 0, 16}, {96, 80, 200, 0, 8}, {50, 40, 33, 0, 0}, {64, 64, 64, 1, 0}};

/* One matmul call (grouped: matmul_grouped with its leaky_relu) against the f16 reference:
 * C rows padded by 16 columns, which must stay untouched. */
static void run_matmul(const MatCase *c, size_t ci, int grouped) {
  size_t M = (size_t)c->M, N = (size_t)c->N, K = (size_t)c->K;
  int32_t sam = c->a_colmajor ? 1 : c->K, sak = c->a_colmajor ? c->M : 1;
  int32_t sbk = c->N, sbn = 1, scm = c->N + 16, scn = 1;
  Verdict v = {.kernel = grouped ? "matmul_grouped" : "matmul_f16"};
  snprintf(v.shape, sizeof v.shape, "%zux%zux%zu A %s, C rows %d apart", M, N, K,
           c->a_colmajor ? "col-major" : "row-major", scm);
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, (grouped ? 670 : 500) + ci);
  uint16_t *a = random_f16(&rng, M * K, -1, 1), *b = random_f16(&rng, K * N, -1, 1);
  float *ref = malloc(M * N * sizeof *ref);
  uint16_t *da = to_device(a, M * K * 2), *db = to_device(b, K * N * 2);
  uint16_t *dc = output(M * (size_t)scm * 2);
  KilnRtStatus st;
  const char *sig;
  if (grouped) {
    st = EX(_matmul_grouped)(g_lib, da, db, dc, c->M, c->N, c->K, sam, sak, sbk, sbn, scm, scn,
                             NULL, NULL, NULL);
    sig = EX(_matmul_grouped_pick)(c->M, c->N, c->K, sam, sak, sbk, sbn, scm, scn).signature;
  } else {
    st = EX(_matmul_f16)(g_lib, da, db, dc, c->M, c->N, c->K, sam, sak, sbk, sbn, scm, scn, NULL,
                         NULL, NULL);
    sig = EX(_matmul_f16_pick)(c->M, c->N, c->K, sam, sak, sbk, sbn, scm, scn).signature;
  }
  check_call(&v, st, sig, c->tier);
  uint16_t *out = fetch(dc, M * (size_t)scm * 2);
  float *got = dense_f16(out, M, N, (size_t)scm);
  kiln_ref_matmul_f16(a, (size_t)sam, (size_t)sak, b, (size_t)sbk, (size_t)sbn, ref, M, N, K);
  for (size_t i = 0; grouped && ref && i < M * N; i++)
    ref[i] = ref[i] >= 0.0f ? ref[i] : 0.01f * ref[i];
  /* exact f16 products, f32 sums in another order, one f16 rounding of the result */
  check_close(&v, "c", got, ref, M * N, 1.0, 2e-3);
  check_gaps(&v, "c", out, 2, M, N, (size_t)scm);
  verdict_end(&v);
  kiln_rt_free(g_dev, da), kiln_rt_free(g_dev, db), kiln_rt_free(g_dev, dc);
  free(a), free(b), free(ref), free(out), free(got);
}

static void test_matmul_f16(void) {
  for (size_t ci = 0; ci < COUNT(MAT_CASES); ci++) run_matmul(&MAT_CASES[ci], ci, 0);
}

static void test_matmul_grouped(void) {
  for (size_t ci = 0; ci < COUNT(MAT_CASES); ci++) run_matmul(&MAT_CASES[ci], ci, 1);
}

/* The descriptor matmul: row strides multiples of 8 elements (the descriptor's 16 bytes), padded
 * past the rows where K or N is not one; C's padding must stay untouched. A row stride that is
 * not a multiple of 8 fails the call (cpu and emu name the descriptor's check). */
static void test_matmul_desc(void) {
  static const struct {
    int32_t M, N, K, sa, sb, sc;
    int tier;
    bool bad_stride;
  } cases[] = {{128, 128, 64, 64, 128, 144, 16, false},
               {96, 80, 200, 200, 80, 96, 8, false},
               {50, 40, 33, 40, 48, 56, 0, false},
               {50, 40, 33, 33, 48, 56, 0, true}};
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    size_t M = (size_t)cases[ci].M, N = (size_t)cases[ci].N, K = (size_t)cases[ci].K;
    size_t sa = (size_t)cases[ci].sa, sb = (size_t)cases[ci].sb, sc = (size_t)cases[ci].sc;
    Verdict v = {.kernel = "matmul_desc"};
    snprintf(v.shape, sizeof v.shape, "%zux%zux%zu strides %zu, %zu, %zu", M, N, K, sa, sb, sc);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 690 + ci);
    uint16_t *a = random_f16(&rng, M * sa, -1, 1), *b = random_f16(&rng, K * sb, -1, 1);
    float *ref = malloc(M * N * sizeof *ref);
    uint16_t *da = to_device(a, M * sa * 2), *db = to_device(b, K * sb * 2);
    uint16_t *dc = output(M * sc * 2);
    KilnRtStatus st = EX(_matmul_desc)(g_lib, da, db, dc, cases[ci].M, cases[ci].N, cases[ci].K,
                                       cases[ci].sa, cases[ci].sb, cases[ci].sc, NULL, NULL, NULL);
    const char *sig = EX(_matmul_desc_pick)(cases[ci].M, cases[ci].N, cases[ci].K, cases[ci].sa,
                                            cases[ci].sb, cases[ci].sc)
                          .signature;
    uint16_t *out = fetch(dc, M * sc * 2);
    if (cases[ci].bad_stride) { /* the descriptor's stride check fails the launch */
      const char *msg = st == KILN_RT_OK ? "" : kiln_rt_last_error();
      printf("  %s %s: %s: %s\n", v.kernel, v.shape, kiln_rt_status_name(st), msg);
      if (st != KILN_RT_ERROR_LAUNCH || !strstr(msg, "not a multiple of 16 bytes"))
        verdict_fail(&v, "a row stride of 33 f16: expected KILN_RT_ERROR_LAUNCH naming the "
                         "descriptor's check");
      kiln_rt_free(g_dev, da), kiln_rt_free(g_dev, db), kiln_rt_free(g_dev, dc);
      verdict_end(&v);
      free(a), free(b), free(ref), free(out);
      continue;
    }
    check_call(&v, st, sig, cases[ci].tier);
    float *got = dense_f16(out, M, N, sc);
    kiln_ref_matmul_f16(a, sa, 1, b, sb, 1, ref, M, N, K);
    /* exact f16 products, f32 sums in another order, one f16 rounding of the result */
    check_close(&v, "c", got, ref, M * N, 1.0, 2e-3);
    check_gaps(&v, "c", out, 2, M, N, sc);
    verdict_end(&v);
    kiln_rt_free(g_dev, da), kiln_rt_free(g_dev, db), kiln_rt_free(g_dev, dc);
    free(a), free(b), free(ref), free(out), free(got);
  }
}

static void test_argmax_rows(void) {
  static const struct {
    int32_t rows, cols, stride;
    int ties, tier;
  } cases[] = {
      {64, 512, 512, 0, 16}, {8, 504, 504, 1, 8}, {13, 333, 336, 1, 0}, {4, 600, 600, 0, -1}};
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    size_t rows = (size_t)cases[ci].rows, cols = (size_t)cases[ci].cols;
    size_t stride = (size_t)cases[ci].stride;
    Verdict v = {.kernel = "argmax_rows"};
    snprintf(v.shape, sizeof v.shape, "%zux%zu stride %zu%s", rows, cols, stride,
             cases[ci].ties ? " ties" : "");
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 600 + ci);
    float *x = row_input(&rng, rows, cols, stride, -100, 100);
    /* ties: values from the 8 integers 0..7, so only the first maximum of a row is right */
    for (size_t i = 0; x && cases[ci].ties && i < rows * stride; i++)
      if (i % stride < cols) x[i] = floorf((x[i] + 100.0f) / 25.0f);
    int32_t *ref = malloc(rows * sizeof *ref);
    float *dx = to_device(x, rows * stride * 4);
    int32_t *dout = output(rows * 4);
    KilnRtStatus st = EX(_argmax_rows)(g_lib, dx, dout, cases[ci].rows, cases[ci].cols,
                                       cases[ci].stride, NULL, NULL, NULL);
    EX(_argmax_rows_config)
    cfg = EX(_argmax_rows_pick)(cases[ci].rows, cases[ci].cols, cases[ci].stride);
    int32_t *out = fetch(dout, rows * 4);
    if (must_refuse(cases[ci].tier, cfg.num_warps)) {
      check_refused(&v, st, cfg.num_warps);
      check_gaps(&v, "out", out, 4, 1, 0, rows);
    } else {
      check_call(&v, st, cfg.signature, cases[ci].tier);
      kiln_ref_argmax_rows(x, stride, ref, rows, cols);
      check_equal_i32(&v, "out", out, ref, rows);
    }
    verdict_end(&v);
    kiln_rt_free(g_dev, dx), kiln_rt_free(g_dev, dout);
    free(x), free(ref), free(out);
  }
}

static void test_dropout_rand(void) {
  static const struct {
    int32_t n;
    float p;
    int32_t seed;
    int tier;
  } cases[] = {{4096, 0.3f, 1234, 16}, {1000, 0.5f, -7, 8}, {77, 0.9f, 2147483647, 0}};
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    size_t n = (size_t)cases[ci].n;
    Verdict v = {.kernel = "dropout_rand"};
    snprintf(v.shape, sizeof v.shape, "n=%zu p=%g seed=%d", n, (double)cases[ci].p, cases[ci].seed);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 700 + ci);
    float *x = random_f32(&rng, n, -1, 1);
    float *ref_r = malloc(n * 4), *ref_y = malloc(n * 4);
    float *dx = to_device(x, n * 4), *dr = output(n * 4), *dy = output(n * 4);
    KilnRtStatus st = EX(_dropout_rand)(g_lib, dx, dr, dy, cases[ci].n, cases[ci].p, cases[ci].seed,
                                        NULL, NULL, NULL);
    check_call(&v, st, EX(_dropout_rand_pick)(cases[ci].n, cases[ci].seed).signature,
               cases[ci].tier);
    float *r = fetch(dr, n * 4), *y = fetch(dy, n * 4);
    kiln_ref_dropout(x, ref_r, ref_y, n, cases[ci].p, cases[ci].seed);
    check_close(&v, "r", r, ref_r, n, 1.0, 0.0); /* integer arithmetic: bit-exact */
    check_close(&v, "y", y, ref_y, n, 1.0, 1e-6);
    verdict_end(&v);
    kiln_rt_free(g_dev, dx), kiln_rt_free(g_dev, dr), kiln_rt_free(g_dev, dy);
    free(x), free(ref_r), free(ref_y), free(r), free(y);
  }
}

static void test_flash_attention(void) {
  /* D is the library's const (64, the tune block's only value) */
  static const struct {
    int32_t bh, S;
    int tier;
  } cases[] = {{2, 128, 16}, {2, 40, 8}, {3, 100, 0}};
  const size_t D = 64;
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    size_t bh = (size_t)cases[ci].bh, S = (size_t)cases[ci].S, n = bh * S * D;
    float scale = 1.0f / sqrtf((float)D);
    Verdict v = {.kernel = "flash_attention"};
    snprintf(v.shape, sizeof v.shape, "%zux%zux%zu", bh, S, D);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 650 + ci);
    uint16_t *q = random_f16(&rng, n, -2, 2), *k = random_f16(&rng, n, -1, 1);
    uint16_t *vv = random_f16(&rng, n, -1, 1);
    float *ref = malloc(n * sizeof *ref);
    uint16_t *dq = to_device(q, n * 2), *dk = to_device(k, n * 2), *dv = to_device(vv, n * 2);
    uint16_t *dout = output(n * 2);
    AttnGrid grid = {(uint32_t)S, (uint32_t)bh};
    KilnRtStatus st = EX(_flash_attention)(g_lib, dq, dk, dv, dout, cases[ci].S, scale,
                                           attention_grid, &grid, NULL);
    check_call(&v, st, EX(_flash_attention_pick)(cases[ci].S).signature, cases[ci].tier);
    uint16_t *o = fetch(dout, n * 2);
    float *got = dense_f16(o, 1, n, n);
    kiln_ref_flash_attention(q, k, vv, ref, bh, S, D, scale);
    /* P's and O's f16 roundings and the f32 sums: ~1.2e-3 absolute at most, |o| <= 1 */
    check_close(&v, "o", got, ref, n, 1.0, 2e-3);
    verdict_end(&v);
    kiln_rt_free(g_dev, dq), kiln_rt_free(g_dev, dk), kiln_rt_free(g_dev, dv);
    kiln_rt_free(g_dev, dout);
    free(q), free(k), free(vv), free(ref), free(o), free(got);
  }
}

static void test_transpose(void) {
  static const struct {
    int32_t rows, cols, xs, os;
    int tier;
  } cases[] = {{64, 128, 128, 64, 16}, {40, 24, 24, 40, 8}, {100, 70, 73, 105, 0}};
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    size_t rows = (size_t)cases[ci].rows, cols = (size_t)cases[ci].cols;
    size_t xs = (size_t)cases[ci].xs, os = (size_t)cases[ci].os;
    Verdict v = {.kernel = "transpose"};
    snprintf(v.shape, sizeof v.shape, "%zux%zu strides %zu,%zu", rows, cols, xs, os);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 690 + ci);
    float *x = row_input(&rng, rows, cols, xs, -10, 10), *ref = malloc(cols * os * 4);
    float *dx = to_device(x, rows * xs * 4), *dout = output(cols * os * 4);
    KilnRtStatus st = EX(_transpose)(g_lib, dx, dout, cases[ci].rows, cases[ci].cols, cases[ci].xs,
                                     cases[ci].os, NULL, NULL, NULL);
    check_call(
        &v, st,
        EX(_transpose_pick)(cases[ci].rows, cases[ci].cols, cases[ci].xs, cases[ci].os).signature,
        cases[ci].tier);
    float *out = fetch(dout, cols * os * 4);
    kiln_ref_transpose(x, xs, ref, os, rows, cols);
    float *got = dense_f32(out, cols, rows, os), *want = dense_f32(ref, cols, rows, os);
    check_close(&v, "out", got, want, rows * cols, 1.0, 0.0); /* a copy: exact */
    check_gaps(&v, "out", out, 4, cols, rows, os);
    verdict_end(&v);
    kiln_rt_free(g_dev, dx), kiln_rt_free(g_dev, dout);
    free(x), free(ref), free(out), free(got), free(want);
  }
}

/* RoPE at D 64 (the library's pinned head dimension): the row stride and the counts promised
 * %16, %8, or nothing; the numeric test's tolerance (1e-4 absolute, floor 1). */
static void test_rope(void) {
  static const struct {
    int32_t rows, seq, heads, stride;
    int tier;
  } cases[] = {{256, 64, 4, 64, 16}, {40, 16, 2, 72, 8}, {37, 7, 3, 70, 0}};
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    size_t rows = (size_t)cases[ci].rows, xs = (size_t)cases[ci].stride, d = 64;
    Verdict v = {.kernel = "rope"};
    snprintf(v.shape, sizeof v.shape, "%zux%zu stride %zu, seq %d heads %d", rows, d, xs,
             cases[ci].seq, cases[ci].heads);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 4500 + ci);
    float *x = row_input(&rng, rows, d, xs, -2, 2), *ref = malloc(rows * xs * 4);
    float *dx = to_device(x, rows * xs * 4), *dout = output(rows * xs * 4);
    KilnRtStatus st = EX(_rope)(g_lib, dx, dout, cases[ci].rows, cases[ci].seq, cases[ci].heads,
                                cases[ci].stride, NULL, NULL, NULL);
    check_call(
        &v, st,
        EX(_rope_pick)(cases[ci].rows, cases[ci].seq, cases[ci].heads, cases[ci].stride).signature,
        cases[ci].tier);
    float *out = fetch(dout, rows * xs * 4);
    kiln_ref_rope(x, ref, rows, (size_t)cases[ci].seq, (size_t)cases[ci].heads, xs, d);
    float *got = dense_f32(out, rows, d, xs), *want = dense_f32(ref, rows, d, xs);
    check_close(&v, "out", got, want, rows * d, 1.0, 1e-4);
    check_gaps(&v, "out", out, 4, rows, d, xs);
    verdict_end(&v);
    kiln_rt_free(g_dev, dx), kiln_rt_free(g_dev, dout);
    free(x), free(ref), free(out), free(got), free(want);
  }
}

static void test_matmul_i8(void) {
  static const struct {
    int32_t M, N, K, pad;
    int tier;
  } cases[] = {{128, 128, 64, 16, 16}, {96, 80, 200, 8, 8}, {50, 40, 33, 5, 0}};
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    size_t M = (size_t)cases[ci].M, N = (size_t)cases[ci].N, K = (size_t)cases[ci].K;
    int32_t sam = cases[ci].K, sbk = cases[ci].N, scm = cases[ci].N + cases[ci].pad;
    Verdict v = {.kernel = "matmul_i8"};
    snprintf(v.shape, sizeof v.shape, "%zux%zux%zu, C rows %d apart", M, N, K, scm);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 720 + ci);
    int8_t *a = malloc(M * K), *b = malloc(K * N);
    for (size_t i = 0; a && i < M * K; i++) a[i] = (int8_t)(kiln_ref_rng_next(&rng) >> 56);
    for (size_t i = 0; b && i < K * N; i++) b[i] = (int8_t)(kiln_ref_rng_next(&rng) >> 56);
    int32_t *ref = malloc(M * N * sizeof *ref);
    int8_t *da = to_device(a, M * K), *db = to_device(b, K * N);
    int32_t *dc = output(M * (size_t)scm * 4);
    KilnRtStatus st = EX(_matmul_i8)(g_lib, da, db, dc, cases[ci].M, cases[ci].N, cases[ci].K, sam,
                                     sbk, scm, NULL, NULL, NULL);
    check_call(&v, st,
               EX(_matmul_i8_pick)(cases[ci].M, cases[ci].N, cases[ci].K, sam, sbk, scm).signature,
               cases[ci].tier);
    int32_t *out = fetch(dc, M * (size_t)scm * 4);
    int32_t *got = dense_i32(out, M, N, (size_t)scm);
    kiln_ref_matmul_i8(a, (size_t)sam, 1, b, (size_t)sbk, 1, ref, M, N, K);
    check_equal_i32(&v, "c", got, ref, M * N); /* integer products and sums: exact */
    check_gaps(&v, "c", out, 4, M, N, (size_t)scm);
    verdict_end(&v);
    kiln_rt_free(g_dev, da), kiln_rt_free(g_dev, db), kiln_rt_free(g_dev, dc);
    free(a), free(b), free(ref), free(out), free(got);
  }
}

/* Per-element bounds (kiln_ref_layernorm_bwd's, for sums over rows in any order): whether
 * |got - ref| <= bound everywhere. */
static void check_bound(Verdict *v, const char *what, const float *got, const float *ref,
                        const float *bound, size_t n) {
  if (!got || !ref || !bound) return verdict_fail(v, "out of memory or a failed copy");
  for (size_t i = 0; i < n; i++)
    if (!(fabsf(got[i] - ref[i]) <= bound[i])) {
      char msg[200];
      snprintf(msg, sizeof msg, "%s[%zu] = %.9g, want %.9g within %.3g", what, i, (double)got[i],
               (double)ref[i], (double)bound[i]);
      return verdict_fail(v, msg);
    }
}

/* layernorm_bwd from the forward reference's mean and rstd; dgamma and dbeta start at zero
 * (the kernel adds into them). Tolerances as numeric.*.layernorm_bwd: dx 1e-5 (floor 1), the
 * parameter gradients within their per-element bounds. */
static void test_layernorm_bwd(void) {
  static const RowCase cases[] = {{32, 1024, 1024, 1024, 16},
                                  {5, 1000, 1000, 1000, 8},
                                  {4, 100, 101, 101, 0},
                                  {2, 2000, 2000, 2000, -1}};
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    const RowCase *c = &cases[ci];
    size_t rows = (size_t)c->rows, cols = (size_t)c->cols, st = (size_t)c->xs, n = rows * st;
    Verdict v = {.kernel = "layernorm_bwd"};
    snprintf(v.shape, sizeof v.shape, "%zux%zu stride %zu", rows, cols, st);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 450 + ci);
    float *x = row_input(&rng, rows, cols, st, -2, 2), *dy = row_input(&rng, rows, cols, st, -1, 1);
    float *gamma = random_f32(&rng, cols, 0.5f, 1.5f), *beta = calloc(cols, 4);
    float *y = malloc(n * 4), *mean = malloc(rows * 4), *rstd = malloc(rows * 4);
    float *ref_dx = calloc(n, 4), *ref_g = malloc(cols * 4), *ref_b = malloc(cols * 4);
    float *bound_g = malloc(cols * 4), *bound_b = malloc(cols * 4), *zeros = calloc(cols, 4);
    if (x && dy && gamma && beta && y && mean && rstd)
      kiln_ref_layernorm_fwd(x, st, gamma, beta, y, st, mean, rstd, rows, cols, 1e-5f);
    float *dx_in = to_device(x, n * 4), *ddy = to_device(dy, n * 4),
          *dg = to_device(gamma, cols * 4);
    float *dmean = to_device(mean, rows * 4), *drstd = to_device(rstd, rows * 4);
    float *ddx = output(n * 4), *ddg = to_device(zeros, cols * 4),
          *ddb = to_device(zeros, cols * 4);
    uint32_t nrows = (uint32_t)rows;
    KilnRtStatus status = EX(_layernorm_bwd)(g_lib, dx_in, ddy, dg, dmean, drstd, ddx, ddg, ddb,
                                             c->cols, c->xs, layernorm_bwd_grid, &nrows, NULL);
    EX(_layernorm_bwd_config) cfg = EX(_layernorm_bwd_pick)(c->cols, c->xs);
    float *dx = fetch(ddx, n * 4), *dgam = fetch(ddg, cols * 4), *dbet = fetch(ddb, cols * 4);
    if (must_refuse(c->tier, cfg.num_warps)) {
      check_refused(&v, status, cfg.num_warps);
      check_gaps(&v, "dx", dx, 4, rows, 0, st);
    } else {
      check_call(&v, status, cfg.signature, c->tier);
      kiln_ref_layernorm_bwd(x, dy, st, gamma, mean, rstd, ref_dx, ref_g, ref_b, bound_g, bound_b,
                             rows, cols);
      float *got = dense_f32(dx, rows, cols, st), *want = dense_f32(ref_dx, rows, cols, st);
      check_close(&v, "dx", got, want, rows * cols, 1.0, 1e-5);
      check_bound(&v, "dgamma", dgam, ref_g, bound_g, cols);
      check_bound(&v, "dbeta", dbet, ref_b, bound_b, cols);
      check_gaps(&v, "dx", dx, 4, rows, cols, st);
      free(got), free(want);
    }
    verdict_end(&v);
    kiln_rt_free(g_dev, dx_in), kiln_rt_free(g_dev, ddy), kiln_rt_free(g_dev, dg);
    kiln_rt_free(g_dev, dmean), kiln_rt_free(g_dev, drstd), kiln_rt_free(g_dev, ddx);
    kiln_rt_free(g_dev, ddg), kiln_rt_free(g_dev, ddb);
    free(x), free(dy), free(gamma), free(beta), free(y), free(mean), free(rstd), free(ref_dx);
    free(ref_g), free(ref_b), free(bound_g), free(bound_b), free(zeros), free(dx), free(dgam);
    free(dbet);
  }
}

/* int_semantics: small values (the signs of / and %, shifts of negatives) and values over all
 * of i32 (wrapping); b never 0, and never -1 against -2^31. Exact. */
static void test_int_semantics(void) {
  static const struct {
    int32_t n;
    int tier;
  } cases[] = {{4096, 16}, {1000, 8}, {77, 0}};
  for (size_t ci = 0; ci < COUNT(cases); ci++) {
    size_t n = (size_t)cases[ci].n;
    Verdict v = {.kernel = "int_semantics"};
    snprintf(v.shape, sizeof v.shape, "n=%zu", n);
    KilnRefRng rng;
    kiln_ref_rng_init(&rng, 780 + ci);
    int32_t *x = malloc(n * 4), *y = malloc(n * 4), *ref = malloc(6 * n * 4);
    for (size_t i = 0; x && y && i < n; i++) {
      uint64_t r = kiln_ref_rng_next(&rng);
      int small = i % 2 == 0;
      x[i] = small ? (int32_t)(r % 81) - 40 : (int32_t)(uint32_t)r;
      int32_t b = small ? (int32_t)((r >> 32) % 19) - 9 : (int32_t)(r >> 32);
      y[i] = b == 0 || (b == -1 && x[i] == INT32_MIN) ? 3 : b;
    }
    int32_t *dx = to_device(x, n * 4), *dy = to_device(y, n * 4), *dout = output(6 * n * 4);
    KilnRtStatus st = EX(_int_semantics)(g_lib, dx, dy, dout, cases[ci].n, NULL, NULL, NULL);
    check_call(&v, st, EX(_int_semantics_pick)(cases[ci].n).signature, cases[ci].tier);
    int32_t *out = fetch(dout, 6 * n * 4);
    kiln_ref_int_semantics(x, y, ref, n);
    check_equal_i32(&v, "out", out, ref, 6 * n);
    verdict_end(&v);
    kiln_rt_free(g_dev, dx), kiln_rt_free(g_dev, dy), kiln_rt_free(g_dev, dout);
    free(x), free(y), free(ref), free(out);
  }
}

/* ---- main -------------------------------------------------------------------------------- */

static const struct {
  const char *name;
  void (*run)(void);
} TESTS[] = {
    {"vector_add", test_vector_add},         {"bias_gelu", test_bias_gelu},
    {"softmax_rows", test_softmax_rows},     {"layernorm_fwd", test_layernorm_fwd},
    {"matmul_f16", test_matmul_f16},         {"argmax_rows", test_argmax_rows},
    {"dropout_rand", test_dropout_rand},     {"flash_attention", test_flash_attention},
    {"matmul_grouped", test_matmul_grouped}, {"transpose", test_transpose},
    {"matmul_i8", test_matmul_i8},           {"layernorm_bwd", test_layernorm_bwd},
    {"int_semantics", test_int_semantics},   {"rope", test_rope},
    {"matmul_desc", test_matmul_desc},
};

static int run_named(const char *name) {
  for (size_t i = 0; i < COUNT(TESTS); i++)
    if (!strcmp(TESTS[i].name, name)) return TESTS[i].run(), 0;
  fprintf(stderr, "exlib_test: no kernel '%s'\n", name);
  return 2;
}

int main(int argc, char **argv) {
  if (kiln_rt_device_create(EX_DEVICE, &g_dev) != KILN_RT_OK ||
      EX(_create)(g_dev, &g_lib) != KILN_RT_OK) {
    printf("FAIL: %s\n", kiln_rt_last_error());
    return 1;
  }
  int rc = 0;
  for (int i = 1; i < argc && rc == 0; i++) rc = run_named(argv[i]);
  for (size_t i = 0; argc == 1 && i < COUNT(TESTS); i++) TESTS[i].run();
  EX(_destroy)(g_lib);
  kiln_rt_device_destroy(g_dev);
  if (rc) return rc;
  printf("%s\n", g_failures ? "FAILED" : "all ok");
  return g_failures != 0;
}
