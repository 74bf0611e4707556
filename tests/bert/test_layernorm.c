/* test_layernorm.c — residual add + LayerNorm forward, backward and the dgamma/dbeta reduction
 * (kernels-bert/layernorm.kiln), with f32, f16 and bf16 activations (the kernels' T).
 * docs/kernels/layernorm.md gives the tolerances' reasons. */
#include "bert_ref.h"
#include "harness.h"
#include "tests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct LnCfg {
  int32_t rows, cols, fwd_block, bwd_block, bwd_programs;
  bool fd;                        /* finite differences too (f32 only, no dropout) */
  KilnScalarKind t;               /* x, res, gamma, beta, s, y, dy, dx */
  float p;                        /* dropout of x (0: none) */
  int32_t red_block, red_block_p; /* layernorm_bwd_reduce's tile (0: BLOCK 64, BLOCK_P 1) */
} LnCfg;

/* The dropout stream of the configurations with p > 0: an offset that is a multiple of 4, as
 * the trainer's sites are (model.c kiln_bert_dropout_stream), but not of 16. */
enum { DROP_SEED = 90210, DROP_OFFSET = 12 };

/* Whether element i of x is kept by the kernels' dropout (dropout_fwd's mask over x). */
static bool ln_keep(const LnCfg *c, size_t i) {
  return kiln_ref_rand(DROP_SEED, DROP_OFFSET + (int32_t)i) > c->p;
}

/* n random values in [lo, hi) rounded to t, and their device copy. */
static float *input_t(KilnBertRun *run, KilnRefRng *rng, size_t n, float lo, float hi,
                      KilnScalarKind t, void **dev) {
  float *x = kiln_bert_random_t(rng, n, lo, hi, t);
  *dev = kiln_bert_input_t(run, x, n, t);
  return x;
}

static const float EPS = 1e-5f;

/* The f32 statistics of one row as the kernels compute them, with bounds on their errors (for
 * the f16 / bf16 bounds of y and dx, kiln_bert_check_rounded): the f32 sum of n values errs by
 * at most (n - 1) 2^-24 sum |s|, so the mean by dmu = (n + 1) 2^-24 mean |s| with the division;
 * the sum of n squared deviations (positive terms) relatively by (n + 2) 2^-24, plus dmu^2 /
 * (var + eps) from the mean's error (its first-order effect, -2 dmu mean(s - mu), is 0); rstd
 * takes half of that, plus 4 2^-24 for + eps, the division and rsqrt (a few ulps; rsqrt.approx
 * on a GPU 2^-22.9). */
typedef struct LnRowStats {
  double mean, rstd, dmean, rstd_rel, n;
} LnRowStats;

static LnRowStats ln_row_stats(const float *s, size_t cols) {
  LnRowStats st = {0.0, 0.0, 0.0, 0.0, (double)cols};
  double mabs = 0.0, var = 0.0;
  for (size_t k = 0; k < cols; k++) st.mean += s[k], mabs += fabs((double)s[k]);
  st.mean /= st.n, mabs /= st.n;
  for (size_t k = 0; k < cols; k++) var += ((double)s[k] - st.mean) * ((double)s[k] - st.mean);
  var /= st.n;
  st.rstd = 1.0 / sqrt(var + (double)EPS);
  st.dmean = (st.n + 1) * 0x1p-24 * mabs;
  st.rstd_rel =
      0.5 * ((st.n + 2) * 0x1p-24 + st.dmean * st.dmean / (var + (double)EPS)) + 4 * 0x1p-24;
  return st;
}

/* The f32 error of y = (s - mean) rstd g + b: (s - mean) carries dmean plus its own rounding,
 * the product rstd's error and two roundings, the sum one more (2^-24 |y|). */
static void ln_y_error(const float *s, const float *gamma, const float *y, size_t rows, size_t cols,
                       double *e) {
  for (size_t r = 0; r < rows; r++) {
    LnRowStats st = ln_row_stats(s + r * cols, cols);
    for (size_t k = 0; k < cols; k++) {
      double d = fabs((double)s[r * cols + k] - st.mean), g = fabs((double)gamma[k]);
      e[r * cols + k] = g * st.rstd * (st.dmean + d * (st.rstd_rel + 3 * 0x1p-24)) +
                        0x1p-24 * fabs((double)y[r * cols + k]);
    }
  }
}

/* The f32 error of dx = rstd (wdy - xhat c1 - c2) from the kernel's mean and rstd (errors as in
 * LnRowStats) and its stored s_t: xhat = (s_t - mean) rstd errs by rstd dmean + |xhat| (rstd_rel
 * + 2 2^-24); wdy = g dy by 2^-24 |wdy|; the row means c1 = mean(xhat wdy) and c2 = mean(wdy)
 * by the propagated errors plus their f32 sums' (n + 2) 2^-24 of the mean magnitudes; the
 * bracket by those plus three roundings; dx by rstd times that plus rstd's error. */
static void ln_dx_error(const float *s, const float *s_t, const float *dy, const float *gamma,
                        const float *dx, size_t rows, size_t cols, double *e) {
  for (size_t r = 0; r < rows; r++) {
    LnRowStats st = ln_row_stats(s + r * cols, cols);
    double c1 = 0, c2 = 0, e_c1 = 0, m_xw = 0, m_w = 0;
    for (size_t k = 0; k < cols; k++) {
      size_t i = r * cols + k;
      double xhat = ((double)s_t[i] - st.mean) * st.rstd, w = (double)gamma[k] * dy[i];
      double e_xhat = st.rstd * st.dmean + fabs(xhat) * (st.rstd_rel + 2 * 0x1p-24);
      c1 += xhat * w, c2 += w;
      e_c1 += e_xhat * fabs(w) + fabs(xhat * w) * 0x1p-24;
      m_xw += fabs(xhat * w), m_w += fabs(w);
    }
    c1 /= st.n, c2 /= st.n, e_c1 /= st.n, m_xw /= st.n, m_w /= st.n;
    e_c1 += (st.n + 2) * 0x1p-24 * m_xw;
    double e_c2 = (st.n + 2) * 0x1p-24 * m_w;
    for (size_t k = 0; k < cols; k++) {
      size_t i = r * cols + k;
      double xhat = ((double)s_t[i] - st.mean) * st.rstd, w = fabs((double)gamma[k] * dy[i]);
      double e_xhat = st.rstd * st.dmean + fabs(xhat) * (st.rstd_rel + 2 * 0x1p-24);
      double e_b = 0x1p-24 * w + e_xhat * fabs(c1) + fabs(xhat) * e_c1 + e_c2 +
                   3 * 0x1p-24 * (w + fabs(xhat * c1) + fabs(c2));
      e[i] = st.rstd * e_b + fabs((double)dx[i]) * (st.rstd_rel + 0x1p-24);
    }
  }
}

/* Rows 1 and 2 (kiln_ref_layernorm_row_kind) of x and res: s = x + res with a variance of about
 * eps / 2, and a constant s (0.75 - 0.125 = 0.625, exact in every T, and its sums exact in f32,
 * so s - mean is exactly 0), where eps is half or all of what rstd depends on. */
static void shape_eps_rows(float *x, float *res, size_t rows, size_t cols, KilnScalarKind t,
                           KilnRefRng *rng) {
  for (size_t r = 0; r < rows; r++) {
    KilnRefLnRow kind = kiln_ref_layernorm_row_kind(r, rows);
    if (kind == KILN_REF_LN_ROW_NORMAL) continue;
    kiln_ref_layernorm_fill_row(x + r * cols, cols, kind, rng, EPS, 2, 0.75f);
    kiln_ref_layernorm_fill_row(res + r * cols, cols, kind, rng, EPS, 2, -0.125f);
    for (size_t k = 0; k < cols; k++)
      x[r * cols + k] = kiln_bert_round(x[r * cols + k], t),
                   res[r * cols + k] = kiln_bert_round(res[r * cols + k], t);
  }
}

/* The device side of one configuration: inputs, outputs, the forward kernel and its args. */
typedef struct LnDev {
  KilnRtFunction *fwd;
  void *x, *res, *gamma, *beta, *s, *y, *mean, *rstd;
  int32_t rows, cols, seed, offset;
  float eps, p;
} LnDev;

static void launch_fwd(KilnBertRun *run, LnDev *d) {
  void *args[] = {&d->x,    &d->res,  &d->gamma, &d->beta, &d->s,    &d->y,     &d->mean,
                  &d->rstd, &d->cols, &d->eps,   &d->p,    &d->seed, &d->offset};
  kiln_bert_launch(run, d->fwd, (uint32_t)d->rows, 1, args);
}

/* sum over row r of w * y, in double, from the forward kernel's output. */
static double row_loss(const float *y, const float *w, size_t r, size_t cols) {
  double l = 0.0;
  for (size_t c = 0; c < cols; c++) l += (double)w[r * cols + c] * y[r * cols + c];
  return l;
}

/* Central differences of L = sum w * y through the forward kernel, for every x element (column c
 * of every row at once: rows do not interact, so each row's own loss gives its element's
 * difference) and every gamma element of the columns kiln_bert_fd_column picks with `step`. x and
 * gamma are the host copies; the device copies are restored afterwards. */
static void finite_differences(KilnBertRun *run, LnDev *d, float *x, float *gamma, const float *w,
                               size_t step, float *fd_dx, float *fd_dgamma) {
  const float h = 1e-2f;
  size_t rows = (size_t)d->rows, cols = (size_t)d->cols, n = rows * cols;
  float *yp = kiln_bert_alloc(n, 4), *ym = kiln_bert_alloc(n, 4);
  for (size_t c = 0; c < cols && run->ok; c++) {
    if (!kiln_bert_fd_column(c, cols, step)) continue;
    float *vals[2] = {x, gamma};
    for (int which = 0; which < 2; which++) {
      float *v = vals[which];
      size_t stride = which == 0 ? cols : 0, count = which == 0 ? rows : 1;
      float keep[1024];
      for (size_t r = 0; r < count; r++)
        keep[r] = v[r * stride + c], v[r * stride + c] = keep[r] + h;
      kiln_bert_upload(run, which == 0 ? d->x : d->gamma, v, (which == 0 ? n : cols) * 4);
      launch_fwd(run, d);
      kiln_bert_fetch(run, yp, d->y, n * 4);
      for (size_t r = 0; r < count; r++) v[r * stride + c] = keep[r] - h;
      kiln_bert_upload(run, which == 0 ? d->x : d->gamma, v, (which == 0 ? n : cols) * 4);
      launch_fwd(run, d);
      kiln_bert_fetch(run, ym, d->y, n * 4);
      double total = 0.0;
      for (size_t r = 0; r < rows; r++) {
        double diff = row_loss(yp, w, r, cols) - row_loss(ym, w, r, cols);
        double span =
            (double)(keep[which == 0 ? r : 0] + h) - (double)(keep[which == 0 ? r : 0] - h);
        if (which == 0) fd_dx[r * cols + c] = (float)(diff / span);
        total += diff / span;
      }
      if (which == 1) fd_dgamma[c] = (float)total;
      for (size_t r = 0; r < count; r++) v[r * stride + c] = keep[r];
      kiln_bert_upload(run, which == 0 ? d->x : d->gamma, v, (which == 0 ? n : cols) * 4);
    }
  }
  free(yp), free(ym);
}

static bool run_cfg(const KilnBertDevice *dev, const LnCfg *c, uint64_t seed) {
  KilnBertRun run;
  char red_note[48] = "";
  if (c->red_block)
    snprintf(red_note, sizeof red_note, ", reduce %d columns x %d parts", c->red_block,
             c->red_block_p);
  kiln_bert_begin(&run, dev, "%s %dx%d fwd BLOCK %d, bwd BLOCK %d on %d programs, dropout %g%s",
                  kiln_bert_type_name(c->t), c->rows, c->cols, c->fwd_block, c->bwd_block,
                  c->bwd_programs, (double)c->p, red_note);
  KilnDefine fdef[] = {{"T", c->t}, {"BLOCK", c->fwd_block}},
             bdef[] = {{"T", c->t}, {"BLOCK", c->bwd_block}};
  int32_t red_block = c->red_block ? c->red_block : 64;
  KilnDefine rdef[] = {{"BLOCK", red_block}, {"BLOCK_P", c->red_block_p ? c->red_block_p : 1}};
  LnDev d = {0};
  d.fwd = kiln_bert_kernel(&run, "layernorm", "layernorm_fwd", fdef, 2);
  KilnRtFunction *bwd = kiln_bert_kernel(&run, "layernorm", "layernorm_bwd", bdef, 2);
  KilnRtFunction *red = kiln_bert_kernel(&run, "layernorm", "layernorm_bwd_reduce", rdef, 2);
  size_t rows = (size_t)c->rows, cols = (size_t)c->cols, n = rows * cols,
         G = (size_t)c->bwd_programs;
  size_t esz = kiln_bert_elem_size(c->t);
  size_t total = n + KILN_BERT_TAIL, stotal = rows + KILN_BERT_TAIL, ctotal = cols + KILN_BERT_TAIL;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  /* A per-row offset keeps the mean away from zero, so forgetting to subtract it shows. */
  float *x = kiln_bert_random_f32(&rng, n, -2.0f, 2.0f);
  for (size_t r = 0; r < rows; r++) {
    float off = kiln_ref_rng_uniform(&rng, -1.0f, 1.0f);
    for (size_t k = 0; k < cols; k++)
      x[r * cols + k] = kiln_bert_round(x[r * cols + k] + off, c->t);
  }
  float *res = kiln_bert_random_t(&rng, n, -1.0f, 1.0f, c->t);
  shape_eps_rows(x, res, rows, cols, c->t, &rng);
  d.x = kiln_bert_input_t(&run, x, n, c->t);
  d.res = kiln_bert_input_t(&run, res, n, c->t);
  float *gamma = input_t(&run, &rng, cols, 0.5f, 1.5f, c->t, &d.gamma);
  float *beta = input_t(&run, &rng, cols, -1.0f, 1.0f, c->t, &d.beta);
  void *ddy;
  float *dy = input_t(&run, &rng, n, -1.0f, 1.0f, c->t, &ddy);
  d.rows = c->rows, d.cols = c->cols, d.eps = EPS, d.p = c->p;
  d.seed = DROP_SEED, d.offset = DROP_OFFSET;
  /* the x the normalization sees: x kept and scaled (the f32 product, not rounded to T) or 0 */
  float scale = 1.0f / (1.0f - c->p);
  float *xd = kiln_bert_alloc(n, 4);
  for (size_t i = 0; i < n; i++) xd[i] = c->p <= 0 ? x[i] : ln_keep(c, i) ? x[i] * scale : 0.0f;
  d.s = kiln_bert_output(&run, total * esz), d.y = kiln_bert_output(&run, total * esz);
  d.mean = kiln_bert_output(&run, stotal * 4), d.rstd = kiln_bert_output(&run, stotal * 4);
  launch_fwd(&run, &d);
  float *s = kiln_bert_fetch_t(&run, "s", d.s, n, c->t),
        *y = kiln_bert_fetch_t(&run, "y", d.y, n, c->t);
  float *mean = kiln_bert_alloc(stotal, 4), *rstd = kiln_bert_alloc(stotal, 4);
  kiln_bert_fetch(&run, mean, d.mean, stotal * 4), kiln_bert_fetch(&run, rstd, d.rstd, stotal * 4);
  kiln_bert_check_untouched(&run, "mean", mean, 4, stotal, 1, rows, stotal);
  kiln_bert_check_untouched(&run, "rstd", rstd, 4, stotal, 1, rows, stotal);

  float *ref_s = kiln_bert_alloc(n, 4), *ref_y = kiln_bert_alloc(n, 4);
  float *ref_mean = kiln_bert_alloc(rows, 4), *ref_rstd = kiln_bert_alloc(rows, 4);
  for (size_t i = 0; i < n; i++) ref_s[i] = xd[i] + res[i];
  kiln_bert_ref_layernorm_fwd(xd, res, gamma, beta, ref_y, ref_mean, ref_rstd, rows, cols, EPS);
  if (c->t == KILN_SCALAR_F32) {
    kiln_bert_check_close(&run, "s", s, ref_s, n, 1.0, 0.0);
    kiln_bert_check_close(&run, "y", y, ref_y, n, 1.0, 1e-5);
  } else {
    /* s: the f32 sum the reference forms too (no error before the rounding to T: e stays 0,
     * as allocated); y: ln_y_error */
    double *e = kiln_bert_alloc(n, sizeof *e);
    kiln_bert_check_rounded(&run, "s", s, ref_s, e, n, c->t);
    ln_y_error(ref_s, gamma, ref_y, rows, cols, e);
    kiln_bert_check_rounded(&run, "y", y, ref_y, e, n, c->t);
    free(e);
  }
  kiln_bert_check_close(&run, "mean", mean, ref_mean, rows, 1.0, 1e-5);
  kiln_bert_check_close(&run, "rstd", rstd, ref_rstd, rows, 1e-30, 1e-5);
  double *var = kiln_bert_alloc(rows, sizeof *var);
  for (size_t r = 0; r < rows; r++) var[r] = kiln_ref_variance(ref_s + r * cols, cols);
  kiln_test_check_eps(&run, rstd, var, rows, EPS);
  free(var);

  /* Backward from the kernel's own s, mean and rstd; the reference computes its own (in double,
   * from x + res): an error in the forward's statistics shows here too. */
  void *ddx = kiln_bert_output(&run, total * esz), *ddxd = kiln_bert_output(&run, total * esz);
  void *dgp = kiln_bert_output(&run, G * cols * 4), *dbp = kiln_bert_output(&run, G * cols * 4);
  void *ddg = kiln_bert_output(&run, ctotal * 4), *ddb = kiln_bert_output(&run, ctotal * 4);
  int32_t parts = (int32_t)G;
  void *bargs[] = {&d.s, &ddy, &d.gamma, &d.mean, &d.rstd, &ddx,    &ddxd,
                   &dgp, &dbp, &d.rows,  &d.cols, &d.p,    &d.seed, &d.offset};
  kiln_bert_launch(&run, bwd, (uint32_t)G, 1, bargs);
  void *rg[] = {&dgp, &ddg, &parts, &d.cols}, *rb[] = {&dbp, &ddb, &parts, &d.cols};
  kiln_bert_launch(&run, red, kiln_bert_cdiv(cols, (size_t)red_block), 1, rg);
  kiln_bert_launch(&run, red, kiln_bert_cdiv(cols, (size_t)red_block), 1, rb);
  float *dx = kiln_bert_fetch_t(&run, "dx", ddx, n, c->t);
  /* the gradient of x before its dropout; without dropout the kernel leaves it alone */
  float *dxd = NULL;
  if (c->p > 0) {
    dxd = kiln_bert_fetch_t(&run, "dx_drop", ddxd, n, c->t);
  } else {
    unsigned char *raw = kiln_bert_alloc(total, esz);
    kiln_bert_fetch(&run, raw, ddxd, total * esz);
    kiln_bert_check_untouched(&run, "dx_drop", raw, esz, total, 0, cols, cols);
    free(raw);
  }
  float *dg = kiln_bert_alloc(ctotal, 4), *db = kiln_bert_alloc(ctotal, 4);
  kiln_bert_fetch(&run, dg, ddg, ctotal * 4), kiln_bert_fetch(&run, db, ddb, ctotal * 4);
  kiln_bert_check_untouched(&run, "dgamma", dg, 4, ctotal, 1, cols, ctotal);
  kiln_bert_check_untouched(&run, "dbeta", db, 4, ctotal, 1, cols, ctotal);
  float *ref_dx = kiln_bert_alloc(n, 4), *ref_dg = kiln_bert_alloc(cols, 4),
        *ref_db = kiln_bert_alloc(cols, 4);
  float *ref_s_t = kiln_bert_alloc(n, 4);
  for (size_t i = 0; i < n; i++) ref_s_t[i] = kiln_bert_round(ref_s[i], c->t);
  kiln_bert_ref_layernorm_bwd(ref_s, ref_s_t, dy, gamma, EPS, ref_dx, ref_dg, ref_db, rows, cols);
  free(ref_s_t);
  if (c->t == KILN_SCALAR_F32) {
    /* dx = rstd (wdy - xhat c1 - c2), compared in units of the row's rstd (the bracket is O(1)
     * and its f32 error ~1e-7; rstd is ~260 in the tiny-variance row, where a dx that cancels to
     * ~1 would otherwise be judged against its own size). */
    float *dx_n = kiln_bert_alloc(n, 4), *ref_dx_n = kiln_bert_alloc(n, 4);
    for (size_t i = 0; i < n; i++)
      dx_n[i] = dx[i] / ref_rstd[i / cols], ref_dx_n[i] = ref_dx[i] / ref_rstd[i / cols];
    kiln_bert_check_close(&run, "dx / rstd", dx_n, ref_dx_n, n, 1.0, 1e-5);
    /* dx_drop: the kernel's f32 dx kept and scaled, or 0, in the same units */
    for (size_t i = 0; i < n && dxd; i++)
      dx_n[i] = dxd[i] / ref_rstd[i / cols],
      ref_dx_n[i] = ln_keep(c, i) ? ref_dx[i] * scale / ref_rstd[i / cols] : 0.0f;
    if (dxd) kiln_bert_check_close(&run, "dx_drop / rstd", dx_n, ref_dx_n, n, 1.0, 1e-5 * scale);
    free(dx_n), free(ref_dx_n);
  } else {
    double *e = kiln_bert_alloc(n, sizeof *e);
    ln_dx_error(ref_s, s, dy, gamma, ref_dx, rows, cols, e);
    kiln_bert_check_rounded(&run, "dx", dx, ref_dx, e, n, c->t);
    if (dxd) {
      /* dx_drop = dx's f32 value times the scale (one more f32 rounding) or 0, then rounded */
      float *ref_dxd = kiln_bert_alloc(n, 4);
      for (size_t i = 0; i < n; i++) {
        bool keep = ln_keep(c, i);
        ref_dxd[i] = keep ? ref_dx[i] * scale : 0.0f;
        e[i] = keep ? e[i] * scale + 0x1p-24 * fabs(ref_dxd[i]) : 0.0;
      }
      kiln_bert_check_rounded(&run, "dx_drop", dxd, ref_dxd, e, n, c->t);
      free(ref_dxd);
    }
    free(e);
  }
  kiln_bert_check_close(&run, "dgamma", dg, ref_dg, cols, 1.0, 1e-5);
  kiln_bert_check_close(&run, "dbeta", db, ref_db, cols, 1.0, 1e-5);
  if (c->fd && c->t == KILN_SCALAR_F32 && c->p <= 0 && run.ok) {
    float *fd_dx = kiln_bert_alloc(n, 4), *fd_dg = kiln_bert_alloc(cols, 4);
    size_t step = kiln_bert_on_emu(dev) ? 8 : 1; /* four launches per column */
    finite_differences(&run, &d, x, gamma, dy, step, fd_dx, fd_dg);
    /* dx against the differences on the normal rows only: h is 3 standard deviations of the
     * tiny-variance row, and shifting one element of the constant row gives it a variance of
     * ~h^2 / cols, near eps: there the loss is far from linear over +-h (the reference checks
     * dx there). */
    size_t nn = 0;
    for (size_t r = 0; r < rows; r++)
      if (kiln_ref_layernorm_row_kind(r, rows) == KILN_REF_LN_ROW_NORMAL) {
        memmove(fd_dx + nn * cols, fd_dx + r * cols, cols * 4);
        memmove(dx + nn * cols, dx + r * cols, cols * 4);
        nn++;
      }
    kiln_bert_check_close_columns(&run, "dx vs fd", dx, fd_dx, nn, cols, step, 1.0, 2e-3);
    kiln_bert_check_close_columns(&run, "dgamma fd", dg, fd_dg, 1, cols, step, 1.0, 2e-3);
    free(fd_dx), free(fd_dg);
  }
  free(x), free(xd), free(dxd), free(res), free(gamma), free(beta), free(dy), free(s), free(y);
  free(mean), free(rstd);
  free(ref_s), free(ref_y), free(ref_mean), free(ref_rstd), free(dx), free(dg), free(db);
  free(ref_dx), free(ref_dg), free(ref_db);
  return kiln_bert_end(&run);
}

bool kiln_bert_test_layernorm(const KilnBertDevice *dev) {
  static const LnCfg cfgs[] = {
      {5, 77, 32, 128, 2, true, KILN_SCALAR_F32, 0, 0, 0}, /* three ragged forward chunks; FD */
      {37, 96, 128, 128, 4, true, KILN_SCALAR_F32, 0, 0,
       0}, /* 37 rows over 4 programs: uneven partial sums; one forward chunk; FD */
      {4, 768, 256, 1024, 3, false, KILN_SCALAR_F32, 0, 0,
       0}, /* BERT-base width, three exact chunks */
      {1, 1, 128, 128, 1, false, KILN_SCALAR_F32, 0, 0, 0}, /* degenerate: var 0, xhat 0 */
      {6, 1024, 256, 1024, 4, false, KILN_SCALAR_F16, 0, 0,
       0},                                                   /* BERT-large width, f16 activations */
      {5, 77, 32, 128, 2, false, KILN_SCALAR_BF16, 0, 0, 0}, /* ragged chunks, bf16 activations */
      /* x's dropout (the trainer's attention-output and FFN-output sites): one forward chunk,
       * BERT-large's width in one chunk (the GPU default's), ragged chunks at p 0.5 */
      {8, 96, 128, 128, 3, false, KILN_SCALAR_F32, 0.1f, 0, 0},
      {6, 1024, 1024, 1024, 4, false, KILN_SCALAR_F16, 0.1f, 0, 0},
      {5, 77, 32, 128, 2, false, KILN_SCALAR_BF16, 0.5f, 0, 0},
      /* many parts: the reduction's GPU default (16 columns by 64 parts a step) over 100 parts,
       * a whole step and a masked one, with ragged column blocks */
      {150, 77, 32, 128, 100, false, KILN_SCALAR_F16, 0, 16, 64},
  };
  bool ok = true;
  for (size_t i = 0; i < KILN_BERT_COUNT(cfgs); i++) {
    /* Each finite difference launches the forward over every row; on emu 13 rows instead of 37
     * (still uneven over 4 programs) keep that affordable. */
    LnCfg c = cfgs[i];
    if (kiln_bert_on_emu(dev) && c.fd && c.rows > 13) c.rows = 13;
    ok &= run_cfg(dev, &c, 2000 + i);
  }
  return ok;
}
