/* test_dropout.c — dropout forward, backward and residual-fused forward with Philox masks
 * (kernels-bert/dropout.kiln), in f32, f16 and bf16. docs/kernels/dropout.md gives the tolerances' reasons. */
#include "harness.h"
#include "tests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct DropCfg {
  int32_t n, block;
  float p;
  int32_t seed, offset;
  KilnScalarKind t; /* the kernels' T: every buffer */
} DropCfg;

/* Launches one of the kernels (args: in[, res], out, n, p, seed, offset) and returns its output
 * as f32. */
static float *launch(KilnBertRun *run, KilnRtFunction *fn, const DropCfg *c, const float *in,
                     const float *res, const char *what) {
  size_t n = (size_t)c->n, total = n + KILN_BERT_TAIL, esz = kiln_bert_elem_size(c->t);
  void *din = kiln_bert_input_t(run, in, n, c->t);
  void *dres = res ? kiln_bert_input_t(run, res, n, c->t) : NULL;
  void *dout = kiln_bert_output(run, total * esz);
  int32_t n32 = c->n, seed = c->seed, offset = c->offset;
  float p = c->p;
  void *args2[] = {&din, &dout, &n32, &p, &seed, &offset};
  void *args3[] = {&din, &dres, &dout, &n32, &p, &seed, &offset};
  kiln_bert_launch(run, fn, kiln_bert_cdiv(n, (size_t)c->block), 1, res ? args3 : args2);
  return kiln_bert_fetch_t(run, what, dout, n, c->t);
}

/* got against ref (scaled: the x * scale part of each element; NULL when ref is that part).
 * f32: one multiplication, 1e-6 relative (floor 1). f16 / bf16: a bound per element
 * (kiln_bert_check_rounded): the f32 value x * (1 / (1 - p)) [+ res] errs by the roundings of
 * 1 - p, the reciprocal and the product (3 2^-24 of the scaled value; the reference rounds the
 * same scale once more: 4) plus the sum's 2^-24 |y|; then the rounding to T. */
static void check_t(KilnBertRun *run, const DropCfg *c, const char *what, const float *got,
                    const float *ref, const float *scaled, size_t n) {
  if (c->t == KILN_SCALAR_F32) {
    kiln_bert_check_close(run, what, got, ref, n, 1.0, 1e-6);
    return;
  }
  double *e = kiln_bert_alloc(n, sizeof *e);
  for (size_t i = 0; i < n; i++)
    e[i] = 0x1p-24 *
           (4 * fabs((double)(scaled ? scaled : ref)[i]) + (scaled ? fabs((double)ref[i]) : 0));
  kiln_bert_check_rounded(run, what, got, ref, e, n, c->t);
  free(e);
}

static bool run_cfg(const KilnBertDevice *dev, const DropCfg *c, uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "%s n=%d p=%g seed=%d offset=%d", kiln_bert_type_name(c->t), c->n,
                  (double)c->p, c->seed, c->offset);
  KilnDefine defs[] = {{"T", c->t}, {"BLOCK", c->block}};
  KilnRtFunction *fwd = kiln_bert_kernel(&run, "dropout", "dropout_fwd", defs, 2);
  KilnRtFunction *bwd = kiln_bert_kernel(&run, "dropout", "dropout_bwd", defs, 2);
  KilnRtFunction *add = kiln_bert_kernel(&run, "dropout", "dropout_add_fwd", defs, 2);
  size_t n = (size_t)c->n;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  /* x in [0.5, 1.5): never 0, so a zero output always means a dropped element. */
  float *x = kiln_bert_random_t(&rng, n, 0.5f, 1.5f, c->t),
        *res = kiln_bert_random_t(&rng, n, -1.0f, 1.0f, c->t);
  float *w = kiln_bert_random_t(&rng, n, -1.0f, 1.0f, c->t);
  float *y = launch(&run, fwd, c, x, NULL, "y");
  float *dx_same = launch(&run, bwd, c, x, NULL, "dx");
  float *ya = launch(&run, add, c, x, res, "y (add)");
  float *dx = launch(&run, bwd, c, w, NULL, "dx");

  float *ref = kiln_bert_alloc(n, 4), *ref_add = kiln_bert_alloc(n, 4);
  float scale = 1.0f / (1.0f - c->p);
  /* Each kernel's keep decisions against the reference mask (kiln_ref_rand): x is never 0, so an
   * element is kept exactly where its output is not 0. */
  size_t kept = 0, fwd_wrong = 0, bwd_wrong = 0, first_bwd = 0;
  for (size_t i = 0; i < n; i++) {
    bool keep = kiln_ref_rand(c->seed, c->offset + (int32_t)i) > c->p;
    ref[i] = keep ? x[i] * scale : 0.0f;
    ref_add[i] = res[i] + ref[i];
    kept += y[i] != 0.0f;
    fwd_wrong += (y[i] != 0.0f) != keep;
    if ((dx_same[i] != 0.0f) != keep && bwd_wrong++ == 0) first_bwd = i;
  }
  check_t(&run, c, "y", y, ref, NULL, n);
  check_t(&run, c, "y (add)", ya, ref_add, ref, n);
  /* The backward regenerates the mask from (seed, offset): given dy = x it must keep exactly the
   * reference's elements, and its values are the forward's reference (the same product). */
  printf("       masks      fwd %zu, bwd %zu of %zu keep decisions differ from the reference (tol "
         "0)\n",
         fwd_wrong, bwd_wrong, n);
  if (run.ok && (fwd_wrong || bwd_wrong))
    kiln_bert_fail(&run,
                   "keep decisions differ from the reference mask: forward %zu, backward %zu "
                   "(first at element %zu)",
                   fwd_wrong, bwd_wrong, first_bwd);
  check_t(&run, c, "dx (dy=x)", dx_same, ref, NULL, n);
  /* Keep fraction: binomial, so within 4 standard deviations of 1 - p. */
  double frac = (double)kept / (double)n, sigma = sqrt((double)c->p * (1.0 - c->p) / (double)n);
  printf("       keep frac  %.4f (want %.4f +- %.4f)\n", frac, 1.0 - c->p, 4 * sigma);
  if (run.ok && fabs(frac - (1.0 - c->p)) > 4 * sigma)
    kiln_bert_fail(&run, "keep fraction %.4f is more than 4 sigma from %.4f", frac, 1.0 - c->p);
  /* dx = dropout_bwd(w) against the reference mask in every T; then, in f32, also against finite
   * differences of L = sum w * dropout(x) through the forward (elementwise: all x shift at once). */
  for (size_t i = 0; i < n; i++)
    ref[i] = kiln_ref_rand(c->seed, c->offset + (int32_t)i) > c->p ? w[i] * scale : 0.0f;
  check_t(&run, c, "dx", dx, ref, NULL, n);
  if (c->t != KILN_SCALAR_F32) {
    free(x), free(res), free(w), free(y), free(dx_same), free(ya), free(dx), free(ref),
        free(ref_add);
    return kiln_bert_end(&run);
  }
  const float h = 1e-2f;
  float *xp = kiln_bert_alloc(n, 4), *xm = kiln_bert_alloc(n, 4), *fd = kiln_bert_alloc(n, 4);
  for (size_t i = 0; i < n; i++) xp[i] = x[i] + h, xm[i] = x[i] - h;
  float *yp = launch(&run, fwd, c, xp, NULL, "y+"), *ym = launch(&run, fwd, c, xm, NULL, "y-");
  for (size_t i = 0; i < n; i++)
    fd[i] = (float)((double)w[i] * ((double)yp[i] - ym[i]) / ((double)xp[i] - xm[i]));
  kiln_bert_check_close(&run, "dx vs fd", dx, fd, n, 1.0, 1e-3);
  free(x), free(res), free(w), free(y), free(dx_same), free(ya), free(dx), free(ref), free(ref_add);
  free(xp), free(xm), free(fd), free(yp), free(ym);
  return kiln_bert_end(&run);
}

bool kiln_bert_test_dropout(const KilnBertDevice *dev) {
  static const DropCfg cfgs[] = {
      {10007, 1024, 0.1f, 42, 0, KILN_SCALAR_F32},
      {4096, 512, 0.5f, -7, 123456, KILN_SCALAR_F32},
      {77, 256, 0.9f, 2147483647, 5, KILN_SCALAR_F32},
      {3001, 1024, 0.1f, 7, 99, KILN_SCALAR_F16},
      {513, 256, 0.5f, 11, 0, KILN_SCALAR_BF16},
  };
  bool ok = true;
  for (size_t i = 0; i < KILN_BERT_COUNT(cfgs); i++) ok &= run_cfg(dev, &cfgs[i], 4000 + i);
  return ok;
}
