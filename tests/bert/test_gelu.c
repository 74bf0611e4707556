/* test_gelu.c — bias + GELU forward and backward (kernels-bert/gelu.kiln), exact and tanh forms,
 * f32, f16 and bf16 I/O (the kernels' T). docs/kernels/gelu.md gives the tolerances' reasons. */
#include "bert_ref.h"
#include "harness.h"
#include "tests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct GeluCfg {
  int32_t rows, cols, block_r, block_c, tanh_approx;
  KilnScalarKind t;
} GeluCfg;

/* Host data of one configuration; x, bias, dy hold the kernel's exact inputs (rounded to T). */
typedef struct GeluData {
  size_t n, total;
  float *x, *bias, *dy;
} GeluData;

/* Runs `fn` (forward: x, bias, y; backward: x, bias, dy, dx) and returns its output as f32,
 * checking the sentinels around it. */
static float *run_gelu(KilnBertRun *run, KilnRtFunction *fn, const GeluCfg *c, const GeluData *d,
                       const float *x, bool backward) {
  size_t esz = kiln_bert_elem_size(c->t);
  void *dx = kiln_bert_input_t(run, x, d->n, c->t);
  void *db = kiln_bert_input_t(run, d->bias, (size_t)c->cols, c->t);
  void *ddy = kiln_bert_input_t(run, d->dy, d->n, c->t);
  void *dout = kiln_bert_output(run, d->total * esz);
  int32_t rows = c->rows, cols = c->cols;
  void *fargs[] = {&dx, &db, &dout, &rows, &cols};
  void *bargs[] = {&dx, &db, &ddy, &dout, &rows, &cols};
  kiln_bert_launch(run, fn, kiln_bert_cdiv((size_t)rows, (size_t)c->block_r),
                   kiln_bert_cdiv((size_t)cols, (size_t)c->block_c), backward ? bargs : fargs);
  return kiln_bert_fetch_t(run, backward ? "dx" : "y", dout, d->n, c->t);
}

/* Finite differences of L = sum_i dy_i gelu(x_i + b_i) in f32 through the forward kernel. Each
 * output depends on its own input only, so shifting every x by +-h at once gives, element by
 * element, exactly the central difference of L along that element. */
static void check_fd(KilnBertRun *run, KilnRtFunction *fwd, const GeluCfg *c, const GeluData *d,
                     const float *dx) {
  const float h = 1e-2f;
  float *xp = kiln_bert_alloc(d->n, 4), *xm = kiln_bert_alloc(d->n, 4);
  for (size_t i = 0; i < d->n; i++) xp[i] = d->x[i] + h, xm[i] = d->x[i] - h;
  float *yp = run_gelu(run, fwd, c, d, xp, false), *ym = run_gelu(run, fwd, c, d, xm, false);
  float *fd = kiln_bert_alloc(d->n, 4);
  for (size_t i = 0; i < d->n; i++)
    fd[i] = (float)((double)d->dy[i] * ((double)yp[i] - (double)ym[i]) /
                    ((double)xp[i] - (double)xm[i]));
  kiln_bert_check_close(run, "dx vs fd", dx, fd, d->n, 1e-1, 2e-3);
  free(xp), free(xm), free(yp), free(ym), free(fd);
}

/* The error of the kernel's f32 y = 0.5 v (1 + erf(v / sqrt 2)) (or its tanh form) at v, for
 * the f16 / bf16 bound (kiln_bert_check_rounded). 1 + erf (1 + tanh) is good to 20 f32 ulps of 1
 * absolutely: erf's polynomial on the GPU path is within 1.5e-7 = 2.5 2^-24 (Abramowitz-Stegun
 * 7.1.26), tanh through ex2.approx within 4 2^-22 (2^-22 relative on e^2a, the quotient's two
 * roundings), the inner polynomial's error damped by sech^2 a * |a| <= 0.45, and the sum's rounding;
 * scaled by 0.5 |v|, plus the last two products' roundings of y itself. */
static double gelu_f32_error(double v, double y) {
  return (0.5 * fabs(v) * 20 + 2 * fabs(y)) * 0x1p-24;
}

/* The same for dx = dy gelu'(v): gelu'(v) = 0.5 (1 + erf) + v phi(v) is good to 10 2^-24 (half
 * the error of 1 + erf, and v phi(v) <= 0.25 with exp's error 2^-22 and that of its argument
 * v^2 / 2 <= 12.5 ulps); the tanh form's 0.5 v (1 - t^2) k (1 + 3 0.044715 v^2) term carries t's
 * error 2 |t| 20 2^-24 times 0.5 |v| k (1 + 0.134 v^2) (k = sqrt(2 / pi) < 0.8); times |dy|, plus
 * dx's two roundings. */
static double gelu_grad_f32_error(double v, double dy, double dx) {
  double t_term = 20 * fabs(v) * 0.8 * (1 + 0.134 * v * v);
  return (fabs(dy) * (10 + t_term) + 2 * fabs(dx)) * 0x1p-24;
}

static bool run_cfg(const KilnBertDevice *dev, const GeluCfg *c, uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "%s %s %dx%d block %dx%d", kiln_bert_type_name(c->t),
                  c->tanh_approx ? "tanh" : "erf", c->rows, c->cols, c->block_r, c->block_c);
  KilnDefine defs[] = {
      {"T", c->t}, {"BLOCK_R", c->block_r}, {"BLOCK_C", c->block_c}, {"TANH", c->tanh_approx}};
  KilnRtFunction *fwd =
      kiln_bert_kernel(&run, "gelu", "bias_gelu_fwd", defs, KILN_BERT_COUNT(defs));
  KilnRtFunction *bwd =
      kiln_bert_kernel(&run, "gelu", "bias_gelu_bwd", defs, KILN_BERT_COUNT(defs));
  GeluData d;
  d.n = (size_t)c->rows * (size_t)c->cols;
  d.total = d.n + KILN_BERT_TAIL;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  /* x + bias spans [-5, 5]: both tails and the middle of GELU. */
  d.x = kiln_bert_random_t(&rng, d.n, -4.0f, 4.0f, c->t);
  d.bias = kiln_bert_random_t(&rng, (size_t)c->cols, -1.0f, 1.0f, c->t);
  d.dy = kiln_bert_random_t(&rng, d.n, -1.0f, 1.0f, c->t);

  float *y = run_gelu(&run, fwd, c, &d, d.x, false);
  float *dx = run_gelu(&run, bwd, c, &d, d.x, true);
  float *ref_y = kiln_bert_alloc(d.n, 4), *ref_dx = kiln_bert_alloc(d.n, 4);
  for (size_t i = 0; i < d.n; i++) {
    /* v = x + b is rounded to f32 in the kernel; do the same so v itself is not the difference. */
    double v = (double)(d.x[i] + d.bias[i % (size_t)c->cols]);
    ref_y[i] = (float)kiln_bert_ref_gelu(v, c->tanh_approx);
    ref_dx[i] = (float)((double)d.dy[i] * kiln_bert_ref_gelu_grad(v, c->tanh_approx));
  }
  if (c->t == KILN_SCALAR_F32) {
    /* the math's own error, relative above |y| = 0.1 (docs/kernels/gelu.md) */
    kiln_bert_check_close(&run, "y", y, ref_y, d.n, 1e-1, 1e-5);
    kiln_bert_check_close(&run, "dx", dx, ref_dx, d.n, 1e-1, 1e-5);
    check_fd(&run, fwd, c, &d, dx);
  } else {
    double *ey = kiln_bert_alloc(d.n, sizeof *ey), *edx = kiln_bert_alloc(d.n, sizeof *edx);
    for (size_t i = 0; i < d.n; i++) {
      double v = (double)(d.x[i] + d.bias[i % (size_t)c->cols]);
      ey[i] = gelu_f32_error(v, ref_y[i]);
      edx[i] = gelu_grad_f32_error(v, d.dy[i], ref_dx[i]);
    }
    kiln_bert_check_rounded(&run, "y", y, ref_y, ey, d.n, c->t);
    kiln_bert_check_rounded(&run, "dx", dx, ref_dx, edx, d.n, c->t);
    free(ey), free(edx);
  }
  free(y), free(dx), free(ref_y), free(ref_dx), free(d.x), free(d.bias), free(d.dy);
  return kiln_bert_end(&run);
}

bool kiln_bert_test_gelu(const KilnBertDevice *dev) {
  static const GeluCfg cfgs[] = {
      {77, 96, 4, 128, 0, KILN_SCALAR_F32},   {77, 96, 4, 128, 1, KILN_SCALAR_F32},
      {16, 64, 4, 64, 0, KILN_SCALAR_F32},    {3, 768, 1, 256, 1, KILN_SCALAR_F32},
      {37, 100, 16, 64, 0, KILN_SCALAR_F16},  {8, 768, 2, 1024, 1, KILN_SCALAR_F16},
      {37, 100, 16, 64, 1, KILN_SCALAR_BF16}, {8, 1024, 2, 1024, 0, KILN_SCALAR_BF16},
  };
  bool ok = true;
  for (size_t i = 0; i < KILN_BERT_COUNT(cfgs); i++) ok &= run_cfg(dev, &cfgs[i], 1000 + i);
  return ok;
}
