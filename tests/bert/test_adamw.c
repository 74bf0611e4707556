/* test_adamw.c — fused AdamW over a flat buffer (with its f16 or bf16 copy of the weights),
 * global gradient norm, clipping, gradient accumulation and the overflow check (kernels-bert/adamw.kiln). docs/kernels/adamw.md gives the tolerances' reasons. */
#include "harness.h"
#include "tests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct AdamCfg {
  int32_t n, block, step, write_f16, found_inf;
  float inv_scale;
  int bf16_copy; /* TW = bf16 (the bf16 trainer's weights) instead of f16 */
  /* the clip folded in: max_norm as a multiple of the unscaled gradients' norm (0: no clip) */
  float clip_of_norm;
} AdamCfg;

static const float LR = 1e-3f, BETA1 = 0.9f, BETA2 = 0.999f, EPS = 1e-8f, WD = 0.01f;

/* One AdamW step in double from the same f32 inputs (bias corrections with pow), the gradients
 * multiplied by the clip coefficient c first. */
static void ref_adamw(const float *p, const float *g, const float *m, const float *v, float *po,
                      float *mo, float *vo, size_t n, int step, float inv_scale, double c) {
  double bc1 = 1.0 - pow(BETA1, step), bc2 = 1.0 - pow(BETA2, step);
  for (size_t i = 0; i < n; i++) {
    double gi = (double)g[i] * c * inv_scale;
    double m1 = BETA1 * (double)m[i] + (1.0 - BETA1) * gi;
    double v1 = BETA2 * (double)v[i] + (1.0 - BETA2) * gi * gi;
    double p1 = (double)p[i] * (1.0 - (double)LR * WD);
    po[i] = (float)(p1 - LR * (m1 / bc1) / (sqrt(v1 / bc2) + EPS));
    mo[i] = (float)m1, vo[i] = (float)v1;
  }
}

static bool run_adamw(const KilnBertDevice *dev, const AdamCfg *c, uint64_t seed) {
  KilnBertRun run;
  KilnScalarKind tw = c->bf16_copy ? KILN_SCALAR_BF16 : KILN_SCALAR_F16;
  kiln_bert_begin(&run, dev, "adamw n=%d step %d %s copy %d found_inf %d clip %g x norm", c->n,
                  c->step, kiln_bert_type_name(tw), c->write_f16, c->found_inf,
                  (double)c->clip_of_norm);
  KilnDefine defs[] = {{"BLOCK", c->block}, {"WRITE_F16", c->write_f16}, {"TW", tw}};
  KilnRtFunction *fn = kiln_bert_kernel(&run, "adamw", "adamw_step", defs, c->bf16_copy ? 3 : 2);
  size_t n = (size_t)c->n, total = n + KILN_BERT_TAIL;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  float *p = kiln_bert_random_f32(&rng, n, -1.0f, 1.0f),
        *g = kiln_bert_random_f32(&rng, n, -1.0f, 1.0f);
  float *m = kiln_bert_random_f32(&rng, n, -0.1f, 0.1f),
        *v = kiln_bert_random_f32(&rng, n, 0.0f, 0.01f);
  if (c->step == 1) /* a first step starts from zero moments */
    memset(m, 0, n * 4), memset(v, 0, n * 4);
  for (size_t i = 0; i < n; i++)
    g[i] /= c->inv_scale; /* scaled gradients, as loss scaling leaves them */
  void *dp = kiln_bert_input(&run, p, n * 4), *dg = kiln_bert_input(&run, g, n * 4);
  void *dm = kiln_bert_input(&run, m, n * 4), *dv = kiln_bert_input(&run, v, n * 4);
  void *dp16 = kiln_bert_output(&run, total * 2);
  int32_t flag = c->found_inf;
  void *dflag = kiln_bert_input(&run, &flag, 4);
  /* sumsq of the scaled gradients, as grad_sumsq leaves it; the kernel's coefficient is
   * min(1, max_norm / (sqrt(sumsq) inv_scale + 1e-6)), here in double */
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += (double)g[i] * g[i];
  float sumsq = (float)ss, max_norm = c->clip_of_norm * (float)sqrt(ss) * c->inv_scale;
  double coef = 1.0;
  if (max_norm > 0) coef = fmin(1.0, max_norm / (sqrt((double)sumsq) * c->inv_scale + 1e-6));
  void *dss = kiln_bert_input(&run, &sumsq, 4);
  int32_t n32 = c->n, step = c->step;
  float lr = LR, b1 = BETA1, b2 = BETA2, eps = EPS, wd = WD, inv = c->inv_scale;
  void *args[] = {&dp, &dg, &dm, &dv,  &dp16, &dflag, &dss, &n32,
                  &lr, &b1, &b2, &eps, &wd,   &step,  &inv, &max_norm};
  kiln_bert_launch(&run, fn, kiln_bert_cdiv(n, (size_t)c->block), 1, args);
  float *po = kiln_bert_alloc(n, 4), *mo = kiln_bert_alloc(n, 4), *vo = kiln_bert_alloc(n, 4);
  uint16_t *p16 = kiln_bert_alloc(total, 2);
  kiln_bert_fetch(&run, po, dp, n * 4), kiln_bert_fetch(&run, mo, dm, n * 4);
  kiln_bert_fetch(&run, vo, dv, n * 4), kiln_bert_fetch(&run, p16, dp16, total * 2);
  bool written = c->write_f16 && !c->found_inf;
  kiln_bert_check_untouched(&run, "p16", p16, 2, total, 1, written ? n : 0, total);
  float *rp = kiln_bert_alloc(n, 4), *rm = kiln_bert_alloc(n, 4), *rv = kiln_bert_alloc(n, 4);
  if (c->found_inf) { /* skipped: everything as it was, bit for bit */
    memcpy(rp, p, n * 4), memcpy(rm, m, n * 4), memcpy(rv, v, n * 4);
  } else {
    ref_adamw(p, g, m, v, rp, rm, rv, n, c->step, c->inv_scale, coef);
  }
  double tol = c->found_inf ? 0.0 : 1e-6;
  kiln_bert_check_close(&run, "p", po, rp, n, 1.0, tol);
  kiln_bert_check_close(&run, "m", mo, rm, n, 1e-2, c->found_inf ? 0.0 : 1e-5);
  kiln_bert_check_close(&run, "v", vo, rv, n, 1e-6, c->found_inf ? 0.0 : 1e-5);
  if (written) { /* the f16 (bf16) copy is exactly the kernel's own f32 p, rounded */
    float *got = kiln_bert_alloc(n, 4), *want = kiln_bert_alloc(n, 4);
    for (size_t i = 0; i < n; i++) {
      got[i] = kiln_bert_elem_get(p16, i, tw);
      want[i] = kiln_bert_round(po[i], tw);
    }
    kiln_bert_check_close(&run, "p16", got, want, n, 1.0, 0.0);
    free(got), free(want);
  }
  free(p), free(g), free(m), free(v), free(po), free(mo), free(vo), free(p16), free(rp), free(rm),
      free(rv);
  return kiln_bert_end(&run);
}

/* Global norm in two stages (grad_sumsq's `parts` partial sums, grad_sumsq_reduce's sum of them,
 * no atomics), then clipping in place, for a max_norm below and above the norm, of
 * gradients that carry a loss scale (a power of two; clip_grads measures the unscaled norm). */
enum { NORM_REDUCE_BLOCK = 256 };

static bool run_norm(const KilnBertDevice *dev, int32_t n_, int32_t block, int32_t parts,
                     float max_norm_frac, float scale, uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev,
                  "grad norm + clip n=%d BLOCK %d parts %d max_norm %.1f x norm, scale %g", n_,
                  block, parts, (double)max_norm_frac, (double)scale);
  KilnDefine defs[] = {{"BLOCK", block}};
  KilnDefine rdefs[] = {{"BLOCK", NORM_REDUCE_BLOCK}};
  KilnDefine sdefs[] = {{"BLOCK", block}, {"CHECK", 1}};
  KilnRtFunction *ss = kiln_bert_kernel(&run, "adamw", "grad_sumsq", sdefs, 2);
  KilnRtFunction *ssr = kiln_bert_kernel(&run, "adamw", "grad_sumsq_reduce", rdefs, 1);
  KilnRtFunction *clip = kiln_bert_kernel(&run, "adamw", "clip_grads", defs, 1);
  size_t n = (size_t)n_, total = n + KILN_BERT_TAIL;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  float *g = kiln_bert_random_f32(&rng, total, -1.0f, 1.0f);
  for (size_t i = 0; i < n; i++) g[i] *= scale;
  memset(g + n, KILN_BERT_SENTINEL, KILN_BERT_TAIL * 4);
  float zero = 0.0f;
  void *dg = kiln_bert_input(&run, g, total * 4), *dss = kiln_bert_input(&run, &zero, 4);
  void *dpart = kiln_bert_output(&run, (size_t)parts * 4);
  int32_t n32 = n_;
  int32_t flag = 0;
  void *dflag = kiln_bert_input(&run, &flag, 4);
  void *sargs[] = {&dg, &dpart, &dflag, &n32, &parts};
  void *rargs[] = {&dpart, &dss, &parts};
  uint32_t grid = kiln_bert_cdiv(n, (size_t)block);
  kiln_bert_launch(&run, ss, (uint32_t)parts, 1, sargs);
  kiln_bert_launch(&run, ssr, 1, 1, rargs);
  float got_ss = 0.0f;
  kiln_bert_fetch(&run, &got_ss, dss, 4);
  kiln_bert_fetch(&run, &flag, dflag, 4);
  if (run.ok && flag != 0) kiln_bert_fail(&run, "found_inf is %d on finite gradients", flag);
  double ref_ss = 0.0;
  for (size_t i = 0; i < n; i++) ref_ss += (double)g[i] * g[i];
  float want_ss = (float)ref_ss;
  kiln_bert_check_close(&run, "sumsq", &got_ss, &want_ss, 1, scale * scale, 1e-5);
  float inv_scale = 1.0f / scale;
  float max_norm = (float)(max_norm_frac * sqrt(ref_ss) * inv_scale);
  void *cargs[] = {&dg, &dss, &n32, &max_norm, &inv_scale};
  kiln_bert_launch(&run, clip, grid, 1, cargs);
  float *out = kiln_bert_alloc(total, 4), *ref = kiln_bert_alloc(n, 4);
  kiln_bert_fetch(&run, out, dg, total * 4);
  kiln_bert_check_untouched(&run, "grad", out, 4, total, 1, n, total);
  double coef = fmin(1.0, max_norm / (sqrt(ref_ss) * inv_scale + 1e-6));
  for (size_t i = 0; i < n; i++) ref[i] = (float)(g[i] * coef);
  kiln_bert_check_close(&run, "clipped", out, ref, n, 1.0, 1e-5);
  free(g), free(out), free(ref);
  return kiln_bert_end(&run);
}

/* Gradient accumulation: acc += grad, one f32 add an element, so exactly C's float sum (the
 * trainer's micro-batches are the same bits as replicas summed in rank order only if it is);
 * nothing past n is written. Magnitudes from 2^-20 to 2^20, so that most adds round. */
static bool run_accumulate(const KilnBertDevice *dev, int32_t n_, int32_t block, uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "grad_accumulate n=%d BLOCK %d", n_, block);
  KilnDefine defs[] = {{"BLOCK", block}};
  KilnRtFunction *fn = kiln_bert_kernel(&run, "adamw", "grad_accumulate", defs, 1);
  size_t n = (size_t)n_, total = n + KILN_BERT_TAIL;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  float *acc = kiln_bert_random_f32(&rng, total, -1.0f, 1.0f);
  float *g = kiln_bert_random_f32(&rng, total, -1.0f, 1.0f);
  for (size_t i = 0; i < n; i++) g[i] = ldexpf(g[i], (int)(i % 41) - 20);
  memset(acc + n, KILN_BERT_SENTINEL, KILN_BERT_TAIL * 4);
  float *ref = kiln_bert_alloc(n, 4), *out = kiln_bert_alloc(total, 4);
  for (size_t i = 0; i < n; i++) ref[i] = acc[i] + g[i];
  void *dacc = kiln_bert_input(&run, acc, total * 4), *dg = kiln_bert_input(&run, g, total * 4);
  int32_t n32 = n_;
  void *args[] = {&dacc, &dg, &n32};
  kiln_bert_launch(&run, fn, kiln_bert_cdiv(n, (size_t)block), 1, args);
  kiln_bert_fetch(&run, out, dacc, total * 4);
  kiln_bert_check_untouched(&run, "acc", out, 4, total, 1, n, total);
  kiln_bert_check_close(&run, "acc + grad", out, ref, n, 1.0, 0.0);
  free(acc), free(g), free(ref), free(out);
  return kiln_bert_end(&run);
}

/* The loss scaler's overflow check in the norm's pass (grad_sumsq with CHECK = 1; CHECK = 0 must
 * leave the flag alone): found_inf stays 0 on finite data, FLT_MAX included (whose square
 * overflows the sum: finite gradients are not an overflow), and becomes 1 for one inf or NaN;
 * an inf just past the end must not count. The partial sums are checked against C's where every
 * element is finite and far from overflow. */
static bool run_overflow(const KilnBertDevice *dev, int check, float poison, size_t where,
                         int32_t want, uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "grad_sumsq CHECK=%d, element %zu = %g", check, where, (double)poison);
  KilnDefine defs[] = {{"BLOCK", 1024}, {"CHECK", check}};
  KilnRtFunction *fn = kiln_bert_kernel(&run, "adamw", "grad_sumsq", defs, 2);
  size_t n = 5000;
  int32_t parts = 3, n32 = (int32_t)n, flag = 0;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  float *x = kiln_bert_random_f32(&rng, n + KILN_BERT_TAIL, -1e15f, 1e15f);
  for (size_t i = n; i < n + KILN_BERT_TAIL; i++)
    x[i] = INFINITY; /* just past the end: a load ignoring its mask raises the flag */
  x[where] = poison;
  void *dx = kiln_bert_input(&run, x, (n + KILN_BERT_TAIL) * 4);
  void *dpart = kiln_bert_output(&run, (size_t)parts * 4), *dflag = kiln_bert_input(&run, &flag, 4);
  void *args[] = {&dx, &dpart, &dflag, &n32, &parts};
  kiln_bert_launch(&run, fn, (uint32_t)parts, 1, args);
  kiln_bert_fetch(&run, &flag, dflag, 4);
  printf("       found_inf  %d (want %d)\n", flag, want);
  if (run.ok && flag != want) kiln_bert_fail(&run, "found_inf is %d, want %d", flag, want);
  if (isfinite(poison) && fabsf(poison) < 1e15f) {
    float got[3], ref[3];
    kiln_bert_fetch(&run, got, dpart, sizeof got);
    for (int32_t p = 0; p < parts; p++) {
      double acc = 0;
      for (size_t o = (size_t)p * 1024; o < n; o += (size_t)parts * 1024)
        for (size_t i = o; i < o + 1024 && i < n; i++) acc += (double)x[i] * x[i];
      ref[p] = (float)acc;
    }
    /* positive terms: a relative error within the 1024 roundings of a sequential sum */
    kiln_bert_check_close(&run, "part", got, ref, (size_t)parts, 1e30, 1e-4);
  }
  free(x);
  return kiln_bert_end(&run);
}

bool kiln_bert_test_adamw(const KilnBertDevice *dev) {
  static const AdamCfg cfgs[] = {
      {10007, 1024, 1, 1, 0, 1.0f / 1024.0f, 0, 0}, /* first step, f16 copy, loss scale 1024 */
      {4096, 512, 7, 0, 0, 1.0f, 0, 0},             /* exact blocks, later step */
      {777, 256, 1000, 1, 0, 0.5f, 0, 0},
      {777, 256, 3, 1, 1, 1.0f, 0, 0.5f}, /* found_inf set: the step is skipped */
      {1000, 512, 2, 1, 0, 1.0f, 1, 0},   /* the bf16 copy (TW = bf16) */
      /* the clip folded in: max_norm half the norm (c about 0.5, scaled gradients), and twice
       * it (c = 1) */
      {10007, 1024, 5, 1, 0, 1.0f / 65536.0f, 0, 0.5f},
      {4096, 512, 2, 0, 0, 1.0f, 0, 2.0f},
  };
  bool ok = true;
  for (size_t i = 0; i < KILN_BERT_COUNT(cfgs); i++) ok &= run_adamw(dev, &cfgs[i], 6000 + i);
  /* parts: fewer than the blocks (each part strides over several), more than the blocks and
   * than the reduce's block (empty parts; the reduce loops), and odd */
  ok &= run_norm(dev, 10007, 1024, 3, 0.5f, 1.0f, 6100);
  ok &= run_norm(dev, 777, 512, 1024, 2.0f, 1.0f, 6101);
  ok &= run_norm(dev, 4099, 1024, 7, 0.5f, 65536.0f, 6102);        /* fp16's starting loss scale */
  ok &= run_accumulate(dev, 10007, 1024, 6300);                    /* a ragged last block */
  ok &= run_accumulate(dev, 4096, 512, 6301);                      /* exact blocks */
  ok &= run_overflow(dev, 1, 1.0f, 3, 0, 6200);                    /* all finite */
  ok &= run_overflow(dev, 1, 3.4028234663852886e38f, 17, 0, 6201); /* FLT_MAX: finite */
  ok &= run_overflow(dev, 1, -INFINITY, 4999, 1, 6202); /* a part's ragged second block */
  ok &= run_overflow(dev, 1, NAN, 2500, 1, 6203);       /* NaN */
  ok &= run_overflow(dev, 0, NAN, 2500, 0, 6204);       /* CHECK = 0: left alone */
  return ok;
}
