/* test_tanh.c — tanh forward and backward (kernels-bert/tanh.kiln), the pooler's activation, in
 * f32, f16 and bf16 (the kernels' T), against tanh in double; the backward takes the forward's
 * output y and is checked against dy (1 - y^2) in double and, in f32, by finite differences. */
#include "bert_ref.h"
#include "harness.h"
#include "tests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct TanhCfg {
  int32_t n, block;
  KilnScalarKind t;
} TanhCfg;

/* y = tanh(x) through the forward kernel, as f32. */
static float *run_fwd(KilnBertRun *run, KilnRtFunction *fn, const TanhCfg *c, const float *x) {
  size_t esz = kiln_bert_elem_size(c->t);
  void *dx = kiln_bert_input_t(run, x, (size_t)c->n, c->t);
  void *dy = kiln_bert_output(run, ((size_t)c->n + KILN_BERT_TAIL) * esz);
  int32_t n = c->n;
  void *args[] = {&dx, &dy, &n};
  kiln_bert_launch(run, fn, kiln_bert_cdiv((size_t)n, (size_t)c->block), 1, args);
  return kiln_bert_fetch_t(run, "y", dy, (size_t)n, c->t);
}

static bool run_cfg(const KilnBertDevice *dev, const TanhCfg *c, uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "%s n %d block %d", kiln_bert_type_name(c->t), c->n, c->block);
  KilnDefine defs[] = {{"T", c->t}, {"BLOCK", c->block}};
  KilnRtFunction *fwd = kiln_bert_kernel(&run, "tanh", "tanh_fwd", defs, KILN_BERT_COUNT(defs));
  KilnRtFunction *bwd = kiln_bert_kernel(&run, "tanh", "tanh_bwd", defs, KILN_BERT_COUNT(defs));
  size_t n = (size_t)c->n, esz = kiln_bert_elem_size(c->t);
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  /* [-4, 4]: the linear middle and both saturated tails */
  float *x = kiln_bert_random_t(&rng, n, -4.0f, 4.0f, c->t);
  float *dy = kiln_bert_random_t(&rng, n, -1.0f, 1.0f, c->t);
  float *y = run_fwd(&run, fwd, c, x);
  /* the backward from the kernel's own y, as the model calls it */
  void *dyv = kiln_bert_input_t(&run, y, n, c->t);
  void *ddy = kiln_bert_input_t(&run, dy, n, c->t);
  void *ddx = kiln_bert_output(&run, (n + KILN_BERT_TAIL) * esz);
  int32_t nn = c->n;
  void *bargs[] = {&dyv, &ddy, &ddx, &nn};
  kiln_bert_launch(&run, bwd, kiln_bert_cdiv(n, (size_t)c->block), 1, bargs);
  float *dx = kiln_bert_fetch_t(&run, "dx", ddx, n, c->t);
  float *ref_y = kiln_bert_alloc(n, 4), *ref_dx = kiln_bert_alloc(n, 4);
  for (size_t i = 0; i < n; i++) {
    ref_y[i] = (float)tanh((double)x[i]);
    /* from the kernel's own y, rounded to T: near saturation 1 - y^2 is small and T's rounding of
     * y would dominate a comparison with 1 - tanh(x)^2 (the f32 finite differences below check
     * the derivative itself) */
    ref_dx[i] = (float)((double)dy[i] * (1 - (double)y[i] * (double)y[i]));
  }
  /* f32: the math's own error; f16/bf16: one rounding of the f32 result to T (half an ulp: 2^-11
   * and 2^-8 relative) with room for the f32 math before it. */
  double tol = c->t == KILN_SCALAR_F16 ? 2e-3 : c->t == KILN_SCALAR_BF16 ? 8e-3 : 1e-5;
  double floor = c->t == KILN_SCALAR_F32 ? 1e-1 : 1e-2;
  /* y through the GPU lowering is tanh.approx.f32: relative error up to 2^-10.987 = 4.93e-4 (PTX
   * ISA; KILN_EMU_MATH=pessimistic applies all of it, rounded up to 0x1.03p-11), and
   * |err| / max(|y|, floor) is at most the relative error, so f32 adds it to the math's own;
   * f16/bf16 already hold it (2^-11 + 4.94e-4 < 2e-3). */
  const double tanh_approx = 0x1.03p-11;
  double tol_y = kiln_bert_on_emu(dev) && c->t == KILN_SCALAR_F32 ? tol + tanh_approx : tol;
  if (c->t == KILN_SCALAR_F32) {
    kiln_bert_check_close(&run, "y", y, ref_y, n, floor, tol_y);
    kiln_bert_check_close(&run, "dx", dx, ref_dx, n, floor, tol);
  } else {
    /* f16 / bf16: a bound per element (kiln_bert_check_rounded). y's f32 error is tanhf's few
     * ulps, 4 2^-24 |y|, or tanh.approx's 0x1.03p-11 |y| through the GPU lowering; dx = dy (1 -
     * y^2) from the kernel's own y (exact T values) errs by the roundings of y^2, 1 - y^2 and
     * the product: 2^-24 (|dy| y^2 + 2 |dx|), doubled for a fused multiply-add that rounds
     * elsewhere. */
    double *ey = kiln_bert_alloc(n, sizeof *ey), *edx = kiln_bert_alloc(n, sizeof *edx);
    double rel_y = kiln_bert_on_emu(dev) ? tanh_approx : 4 * 0x1p-24;
    for (size_t i = 0; i < n; i++) {
      ey[i] = rel_y * fabs((double)ref_y[i]);
      edx[i] =
          2 * 0x1p-24 * (fabs((double)dy[i]) * (double)y[i] * y[i] + 2 * fabs((double)ref_dx[i]));
    }
    kiln_bert_check_rounded(&run, "y", y, ref_y, ey, n, c->t);
    kiln_bert_check_rounded(&run, "dx", dx, ref_dx, edx, n, c->t);
    free(ey), free(edx);
  }
  if (c->t == KILN_SCALAR_F32) {
    /* central differences of sum dy tanh(x): each output depends on its own input only */
    const float h = 1e-2f;
    float *xp = kiln_bert_alloc(n, 4), *xm = kiln_bert_alloc(n, 4), *fd = kiln_bert_alloc(n, 4);
    for (size_t i = 0; i < n; i++) xp[i] = x[i] + h, xm[i] = x[i] - h;
    float *yp = run_fwd(&run, fwd, c, xp), *ym = run_fwd(&run, fwd, c, xm);
    for (size_t i = 0; i < n; i++)
      fd[i] = (float)((double)dy[i] * ((double)yp[i] - (double)ym[i]) /
                      ((double)xp[i] - (double)xm[i]));
    /* through the GPU lowering each y errs by up to tanh_approx |y| <= 4.94e-4 either way, so
     * a difference over 2h errs by up to 4.94e-4 / h, and dx = dy (1 - y^2) from such a y by
     * 2 * 4.94e-4: 5.0e-2 in all, 0.50 normalized by the floor 0.1, so there the check only
     * catches gross errors (a lost factor or sign) */
    double tol_fd = kiln_bert_on_emu(dev) ? 2e-3 + (1 / h + 2) * tanh_approx / 1e-1 : 2e-3;
    kiln_bert_check_close(&run, "dx vs fd", dx, fd, n, 1e-1, tol_fd);
    free(xp), free(xm), free(fd), free(yp), free(ym);
  }
  free(x), free(dy), free(y), free(dx), free(ref_y), free(ref_dx);
  return kiln_bert_end(&run);
}

bool kiln_bert_test_tanh(const KilnBertDevice *dev) {
  static const TanhCfg cfgs[] = {
      {1000, 128, KILN_SCALAR_F32}, {2 * 768, 512, KILN_SCALAR_F32}, {77, 1024, KILN_SCALAR_F32},
      {1000, 128, KILN_SCALAR_F16}, {1000, 512, KILN_SCALAR_BF16},
  };
  bool ok = true;
  for (size_t i = 0; i < KILN_BERT_COUNT(cfgs); i++) ok &= run_cfg(dev, &cfgs[i], 2000 + i);
  return ok;
}
