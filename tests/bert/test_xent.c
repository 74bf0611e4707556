/* test_xent.c — softmax cross-entropy forward (loss, lse) and backward (dlogits) with an ignore
 * index (kernels-bert/xent.kiln), with f32, f16 and bf16 logits (the kernels' T). docs/kernels/xent.md gives the tolerances' reasons. */
#include "bert_ref.h"
#include "harness.h"
#include "tests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { IGNORE = -100 };

typedef struct XentCfg {
  int32_t rows, classes, block;
  float offset; /* added to every logit: large values test the max subtraction */
  bool fd;      /* finite differences too (f32 only) */
  KilnScalarKind t;
} XentCfg;

typedef struct XentDev {
  KilnRtFunction *fwd;
  void *x, *labels, *loss, *lse;
  int32_t rows, classes, ignore;
} XentDev;

static void launch_fwd(KilnBertRun *run, XentDev *d) {
  void *args[] = {&d->x, &d->labels, &d->loss, &d->lse, &d->classes, &d->ignore};
  kiln_bert_launch(run, d->fwd, (uint32_t)d->rows, 1, args);
}

/* Central differences of L = sum_r w_r loss_r through xent_fwd at the columns kiln_bert_fd_column
 * picks with `step`; column c of every row is shifted at once, and rows do not interact, so each
 * row's loss gives its own element's difference. */
static void finite_differences(KilnBertRun *run, XentDev *d, float *x, const float *w, size_t step,
                               float *fd) {
  const float h = 2e-2f;
  size_t rows = (size_t)d->rows, classes = (size_t)d->classes, n = rows * classes;
  float *lp = kiln_bert_alloc(rows, 4), *lm = kiln_bert_alloc(rows, 4),
        *keep = kiln_bert_alloc(rows, 4);
  for (size_t c = 0; c < classes && run->ok; c++) {
    if (!kiln_bert_fd_column(c, classes, step)) continue;
    for (size_t r = 0; r < rows; r++)
      keep[r] = x[r * classes + c], x[r * classes + c] = keep[r] + h;
    kiln_bert_upload(run, d->x, x, n * 4);
    launch_fwd(run, d);
    kiln_bert_fetch(run, lp, d->loss, rows * 4);
    for (size_t r = 0; r < rows; r++) x[r * classes + c] = keep[r] - h;
    kiln_bert_upload(run, d->x, x, n * 4);
    launch_fwd(run, d);
    kiln_bert_fetch(run, lm, d->loss, rows * 4);
    for (size_t r = 0; r < rows; r++) {
      double span = (double)(keep[r] + h) - (double)(keep[r] - h);
      fd[r * classes + c] = (float)((double)w[r] * ((double)lp[r] - (double)lm[r]) / span);
      x[r * classes + c] = keep[r];
    }
  }
  kiln_bert_upload(run, d->x, x, n * 4);
  free(lp), free(lm), free(keep);
}

static bool run_cfg(const KilnBertDevice *dev, const XentCfg *c, uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "%s %dx%d BLOCK %d offset %g", kiln_bert_type_name(c->t), c->rows,
                  c->classes, c->block, (double)c->offset);
  KilnDefine defs[] = {{"T", c->t}, {"BLOCK", c->block}};
  XentDev d = {0};
  d.fwd = kiln_bert_kernel(&run, "xent", "xent_fwd", defs, 2);
  KilnRtFunction *bwd = kiln_bert_kernel(&run, "xent", "xent_bwd", defs, 2);
  size_t esz = kiln_bert_elem_size(c->t);
  size_t rows = (size_t)c->rows, classes = (size_t)c->classes, n = rows * classes;
  size_t total = n + KILN_BERT_TAIL, rtotal = rows + KILN_BERT_TAIL;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  float *x = kiln_bert_random_f32(&rng, n, -8.0f, 8.0f);
  for (size_t i = 0; i < n; i++)
    x[i] = kiln_bert_round(x[i] + c->offset, c->t); /* the kernel's exact input */
  int32_t *labels = kiln_bert_alloc(rows, 4);
  for (size_t r = 0; r < rows; r++) /* about one row in five is ignored */
    labels[r] =
        kiln_ref_rng_next(&rng) % 5 == 0 ? IGNORE : (int32_t)(kiln_ref_rng_next(&rng) % classes);
  labels[0] = (int32_t)classes - 1; /* the last class, in the last (ragged) chunk */
  float *dloss = kiln_bert_random_f32(&rng, rows, 0.5f, 1.5f);
  d.rows = c->rows, d.classes = c->classes, d.ignore = IGNORE;
  d.x = kiln_bert_input_t(&run, x, n, c->t), d.labels = kiln_bert_input(&run, labels, rows * 4);
  d.loss = kiln_bert_output(&run, rtotal * 4), d.lse = kiln_bert_output(&run, rtotal * 4);
  void *ddl = kiln_bert_input(&run, dloss, rows * 4), *ddx = kiln_bert_output(&run, total * esz);
  launch_fwd(&run, &d);
  void *bargs[] = {&d.x, &d.labels, &d.lse, &ddl, &ddx, &d.classes, &d.ignore};
  kiln_bert_launch(&run, bwd, (uint32_t)rows, 1, bargs);
  float *loss = kiln_bert_alloc(rtotal, 4), *lse = kiln_bert_alloc(rtotal, 4);
  kiln_bert_fetch(&run, loss, d.loss, rtotal * 4), kiln_bert_fetch(&run, lse, d.lse, rtotal * 4);
  kiln_bert_check_untouched(&run, "loss", loss, 4, rtotal, 1, rows, rtotal);
  kiln_bert_check_untouched(&run, "lse", lse, 4, rtotal, 1, rows, rtotal);
  float *dx = kiln_bert_fetch_t(&run, "dx", ddx, n, c->t);
  float *rl = kiln_bert_alloc(rows, 4), *rlse = kiln_bert_alloc(rows, 4),
        *rdx = kiln_bert_alloc(n, 4);
  kiln_bert_ref_xent_fwd(x, labels, rl, rlse, rows, classes, IGNORE);
  kiln_bert_ref_xent_bwd(x, labels, dloss, rdx, rows, classes, IGNORE);
  kiln_bert_check_close(&run, "loss", loss, rl, rows, 1.0, 1e-5);
  kiln_bert_check_close(&run, "lse", lse, rlse, rows, 1.0, 1e-6);
  /* dx: f32 as before; f16 / bf16: the f32 result rounded to T once (twice half an ulp).
   * Through the GPU lowering exp is ex2.approx (relative 2^-22) and log lg2.approx (absolute
   * 2^-22.6 = 0x1.51cp-23, times ln 2 in log), PTX ISA bounds that KILN_EMU_MATH=pessimistic
   * applies in full (rounded up to 0x1.52p-23).
   * p = exp(x - lse) then errs relatively by its own ex2, 2^-22, plus lse's error: the forward's
   * ex2 on the terms (2^-22) and on each chunk's rescale (2^-22 per chunk) and the lg2. Where
   * the label's p is near 1, p - 1 cancels and that error, times scale <= 1.5, is absolute:
   * 1.2e-6 for one chunk, normalized by the floor 1e-2 and added to f32's own 2e-5 (f16/bf16
   * already hold it). */
  double chunks = (double)((c->classes + c->block - 1) / c->block);
  double approx = kiln_bert_on_emu(dev)
                      ? 1.5 * ((chunks + 2) * 0x1p-22 + 0x1.52p-23 * 0.6931471805599453) / 1e-2
                      : 0;
  if (c->t == KILN_SCALAR_F32) {
    kiln_bert_check_close(&run, "dx", dx, rdx, n, 1e-2, 2e-5 + approx);
  } else {
    /* f16 / bf16: a bound per element (kiln_bert_check_rounded). p = exp(x - lse) errs relatively
     * by lse's absolute error (the f32 sum of `classes` positive terms, (classes + 2) 2^-24, the
     * log's and the max's additions, 2^-24 |lse|, through ex2/lg2 on the GPU path the chunks'
     * rescales: approx * 1e-2 / 1.5 relative), the rounding of x - lse (2^-24 |x - lse|) and exp's
     * own few ulps (4 2^-24); p - onehot and the product with scale round twice more. */
    double *e = kiln_bert_alloc(n, sizeof *e);
    double sum_err = (double)(c->classes + 2) * 0x1p-24, approx_rel = approx * 1e-2 / 1.5;
    for (size_t r = 0; r < rows; r++) {
      double scale = labels[r] == IGNORE ? 0.0 : fabs((double)dloss[r]), l = rlse[r];
      for (size_t k = 0; k < classes; k++) {
        size_t i = r * classes + k;
        double p = exp((double)x[i] - l);
        double rel_p = sum_err + 0x1p-24 * (fabs(l) + fabs((double)x[i] - l) + 4) + approx_rel;
        e[i] = scale * (p * rel_p + 2 * 0x1p-24 * fabs(p - ((int32_t)k == labels[r])));
      }
    }
    kiln_bert_check_rounded(&run, "dx", dx, rdx, e, n, c->t);
    free(e);
  }
  if (c->fd && c->t == KILN_SCALAR_F32 && run.ok) {
    float *fd = kiln_bert_alloc(n, 4);
    size_t step = kiln_bert_on_emu(dev) ? 8 : 1; /* two launches per column */
    finite_differences(&run, &d, x, dloss, step, fd);
    kiln_bert_check_close_columns(&run, "dx vs fd", dx, fd, rows, classes, step, 1e-1, 2e-3);
    free(fd);
  }
  free(x), free(labels), free(dloss), free(loss), free(lse), free(dx), free(rl), free(rlse),
      free(rdx);
  return kiln_bert_end(&run);
}

bool kiln_bert_test_xent(const KilnBertDevice *dev) {
  static const XentCfg cfgs[] = {
      {16, 2, 32, 0.0f, true, KILN_SCALAR_F32}, /* sequence classification: two classes */
      {6, 77, 32, 0.0f, true, KILN_SCALAR_F32}, /* three chunks, the last ragged; FD */
      {13, 1000, 256, 80.0f, false,
       KILN_SCALAR_F32}, /* logits near 80: exp overflows without the max shift */
      {5, 3001, 1024, 0.0f, false, KILN_SCALAR_F32},  /* a scaled-down vocabulary */
      {6, 77, 32, 40.0f, false, KILN_SCALAR_F16},     /* f16 logits, ragged chunks */
      {5, 3001, 1024, 0.0f, false, KILN_SCALAR_BF16}, /* bf16 logits */
  };
  bool ok = true;
  for (size_t i = 0; i < KILN_BERT_COUNT(cfgs); i++) ok &= run_cfg(dev, &cfgs[i], 3000 + i);
  return ok;
}
