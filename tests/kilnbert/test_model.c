/* test_model.c — kilnbert_model on the cpu device against the double-precision reference
 * (model_ref.c) on a tiny BERT (2 layers, hidden 32, 2 heads of 16, FFN 64, vocabulary 64, a
 * batch of 2 rows of 16 tokens, one of them padded): the loss of the forward, every gradient,
 * the gradient norm and the parameters after one AdamW step with clipping and weight decay;
 * then that the steady-state step allocates nothing (the runtime's allocator counters), that
 * the all-reduce hook sees the gradient buffer, and that the loss falls over 20 steps.
 *
 * Tolerances, from fp32 rounding (unit roundoff u = 2^-24 = 6e-8): every value is a chain of a
 * few dozen f32 operations with dot products of at most 64 terms, LayerNorm renormalizing at
 * each layer, so errors stay near sqrt(64) u = 5e-7 relative per product and below 1e-5
 * relative to the scale of a tensor after the whole chain; the checks allow 2e-5 for the loss
 * and 1e-4 of each gradient tensor's largest magnitude (5x what the chain could plausibly
 * reach, far below any real mistake, which moves values by their own size), plus 1e-6 of the
 * global gradient norm for gradients that cancel to 0: the key biases' (softmax ignores a
 * shift shared by all keys) is a sum of 32 terms of the size of dK, so f32 leaves noise of
 * n u |dK| = 1e-8 where the reference has 1e-17. The AdamW update
 * lr g / (|g| + eps) at step 1 is nearly lr sign(g), so an element whose gradient is within
 * its error of 0 may move anywhere in [-lr, lr]: the parameter check allows
 * lr dg eps / (|g| - dg + eps)^2 for a gradient error dg (the update's derivative, bounded),
 * plus 1e-6 relative for the decay and subtraction. */
#include "bert_model.h"
#include "check.h"
#include "model_ref.h"
#include "small_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 2
#define COLS 16

static KilnBertStatus count_calls(void *user, float *grads, size_t n, KilnRtStream *stream) {
  (void)grads;
  (void)stream;
  size_t *seen = user;
  *seen = n;
  return KILN_BERT_OK;
}

/* The gradients of a batch of 79 rows of 16 tokens (1264, rows of random lengths) against the
 * reference: past 1024 rows LayerNorm's weight gradients take a partial row per 16 rows (79
 * programs) and the bias gradients' column sums come in parts of 128 rows (10, the last one
 * ragged) added by a second pass, and the encoder's weight gradients are products of K in
 * two parts (model.c dw_splits: about 632 rows each) added by colsum_f32, where the 2 x 16
 * batch above takes one part each. The same tolerances (their fp32 chains are no longer: the
 * sums over rows grow from 32 to 1264 terms, about sqrt(1264) u = 2e-6 relative, under the
 * 1e-4 of a tensor's largest gradient). */
enum { BIG_ROWS = 79, BIG_COLS = 16 };

/* The same batch in a half precision (unit roundoff u): the gradients, unscaled, against the
 * double reference within HALF_GRAD_U u of each tensor's largest gradient. Every activation,
 * weight and weight-gradient part is rounded to T, so a tensor's gradient errs by a few u of
 * its scale (measured: 2.2 u in fp16, 2.7 u in bf16); a weight gradient missing a part of K,
 * or a part added twice, is off by about half its size. */
#define HALF_GRAD_U 16
static void big_batch_half(const KbTestModel *t, KilnBertPrecision prec, double u,
                           const int32_t *ids, const int32_t *lens, const int32_t *labels) {
  KilnBertModel *m = NULL;
  float loss = 0;
  KilnBertStatus st =
      kiln_bert_model_create_precision(t->dev, &t->cfg, prec, BIG_ROWS, BIG_COLS, &m);
  if (st == KILN_BERT_OK) st = kiln_bert_model_set_params(m, t->flat);
  if (st == KILN_BERT_OK)
    st = kiln_bert_model_forward(m, ids, lens, labels, BIG_ROWS, BIG_COLS, &loss, NULL);
  if (st == KILN_BERT_OK) st = kiln_bert_model_backward(m);
  if (st == KILN_BERT_OK) st = kiln_bert_model_get_grads(m, t->got);
  CHECK(st == KILN_BERT_OK, "precision %d, 79 x 16: %s", (int)prec, kiln_bert_last_error());
  if (st == KILN_BERT_OK) {
    double scale = kiln_bert_model_scaler(m)->scale;
    for (size_t i = 0; i < t->lay->total; i++) t->got[i] = (float)(t->got[i] / scale);
    double worst = kb_test_check_grads_within(t->lay, t->got, t->gd, NULL, HALF_GRAD_U * u);
    printf("79 x 16 in %s: gradients' worst error / tolerance %.3g (%d u of a tensor's largest)\n",
           prec == KILN_BERT_FP16 ? "fp16" : "bf16", worst, HALF_GRAD_U);
  }
  kiln_bert_model_destroy(m);
}

static void check_big_batch(void) {
  /* kilnbert.model_parts lowers the launch's index limit below this batch's tensors (80,896
   * floats of FFN activations) on purpose: its point is the small model's parts */
  if (getenv("KILN_INDEX_LIMIT")) {
    printf("79 x 16: not run under KILN_INDEX_LIMIT\n");
    return;
  }
  KbTestModel t;
  if (!kb_test_model_open(&t, BIG_ROWS, BIG_COLS)) {
    failures++;
    return;
  }
  static int32_t ids[BIG_ROWS * BIG_COLS], lens[BIG_ROWS], labels[BIG_ROWS];
  uint64_t r = 99;
  for (int b = 0; b < BIG_ROWS; b++) {
    lens[b] = 2 + (int32_t)(kb_test_lcg(&r) % (BIG_COLS - 1));
    labels[b] = (int32_t)(kb_test_lcg(&r) % 2);
  }
  kb_test_ids(&t.cfg, ids, lens, BIG_ROWS, BIG_COLS);
  float loss = 0;
  CHECK(kiln_bert_model_forward(t.m, ids, lens, labels, BIG_ROWS, BIG_COLS, &loss, NULL) ==
            KILN_BERT_OK,
        "forward, 79 x 16: %s", kiln_bert_last_error());
  double ref =
      model_ref_loss_grad(&t.cfg, t.lay, t.pd, ids, lens, labels, BIG_ROWS, BIG_COLS, t.gd);
  CHECK(fabs(loss - ref) <= 2e-5 * fmax(1, fabs(ref)), "loss 79 x 16 %.9g vs %.9g", loss, ref);
  CHECK(kiln_bert_model_backward(t.m) == KILN_BERT_OK, "backward, 79 x 16: %s",
        kiln_bert_last_error());
  CHECK(kiln_bert_model_get_grads(t.m, t.got) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  double worst = kb_test_check_grads(t.lay, t.got, t.gd, NULL);
  printf("79 x 16: loss %.9g, reference %.9g; gradients: worst error / tolerance %.3g\n", loss, ref,
         worst);
  big_batch_half(&t, KILN_BERT_FP16, 0x1p-11, ids, lens, labels);
  big_batch_half(&t, KILN_BERT_BF16, 0x1p-8, ids, lens, labels);
  kb_test_model_close(&t);
}

int main(void) {
  check_big_batch();
  KbTestModel t;
  if (!kb_test_model_open(&t, ROWS, COLS)) return 1;
  size_t P = t.lay->total;
  KilnBertStatus st;

  int32_t ids[ROWS * COLS] = {0}, lens[ROWS] = {COLS, 9}, labels[ROWS] = {1, 0};
  kb_test_ids(&t.cfg, ids, lens, ROWS, COLS);

  /* forward */
  float loss = 0;
  st = kiln_bert_model_forward(t.m, ids, lens, labels, ROWS, COLS, &loss, NULL);
  CHECK(st == KILN_BERT_OK, "forward: %s", kiln_bert_last_error());
  double ref = model_ref_loss_grad(&t.cfg, t.lay, t.pd, ids, lens, labels, ROWS, COLS, t.gd);
  printf("loss %.9g, reference %.9g\n", loss, ref);
  CHECK(fabs(loss - ref) <= 2e-5 * fmax(1, fabs(ref)), "loss %.9g vs %.9g", loss, ref);

  /* backward: every parameter's gradient */
  st = kiln_bert_model_backward(t.m);
  CHECK(st == KILN_BERT_OK, "backward: %s", kiln_bert_last_error());
  CHECK(kiln_bert_model_get_grads(t.m, t.got) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  double *gtol = calloc(t.lay->n, sizeof *gtol);
  double worst = kb_test_check_grads(t.lay, t.got, t.gd, gtol);
  printf("gradients: worst error / tolerance of a tensor %.3g\n", worst);

  /* one AdamW step with clipping and decay; the all-reduce hook sees the whole buffer */
  KilnBertOptim opt = {0.9, 0.999, 1e-8, 0.01, 1.0};
  double lr = 1e-3, norm = 0;
  size_t seen = 0;
  kiln_bert_model_set_allreduce(t.m, count_calls, &seen);
  st = kiln_bert_model_step(t.m, &opt, lr, 1, &norm);
  CHECK(st == KILN_BERT_OK, "step: %s", kiln_bert_last_error());
  CHECK(seen == P, "the all-reduce hook saw %zu floats of %zu", seen, P);
  double rnorm = model_ref_adamw_first_step(t.lay, t.pd, t.gd, lr, opt.beta1, opt.beta2, opt.eps,
                                            opt.weight_decay, opt.clip);
  printf("grad norm %.9g, reference %.9g\n", norm, rnorm);
  CHECK(fabs(norm - rnorm) <= 1e-4 * rnorm, "grad norm %.9g vs %.9g", norm, rnorm);
  double c = rnorm > opt.clip ? opt.clip / (rnorm + 1e-6) : 1;
  CHECK(kiln_bert_model_get_params(t.m, t.got) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  int bad = 0;
  for (size_t k = 0; k < t.lay->n; k++) {
    const KilnBertParam *q = &t.lay->p[k];
    for (size_t i = q->offset; i < q->offset + q->numel; i++) {
      double g = fabs(t.gd[i]) * c, dg = gtol[k] * c + 1e-4 * g;
      double room = g - dg > 0 ? g - dg : 0;
      double tol = lr * fmin(2, dg * opt.eps / ((room + opt.eps) * (room + opt.eps))) +
                   1e-6 * fabs(t.pd[i]) + 1e-9;
      if (fabs(t.got[i] - t.pd[i]) > tol && bad++ < 10)
        CHECK(0, "%s[%zu] after step 1: %.9g, reference %.9g (tolerance %.3g)", q->name,
              i - q->offset, t.got[i], t.pd[i], tol);
    }
  }
  CHECK(bad == 0, "%d parameters off after step 1", bad);
  kiln_bert_model_set_allreduce(t.m, NULL, NULL);

  /* the steady-state step allocates nothing; the loss falls on the repeated batch */
  KilnRtMemStats before, after;
  CHECK(kiln_rt_mem_stats(t.dev, &before) == KILN_RT_OK, "mem stats");
  float first = 0, last = 0;
  for (int k = 2; k <= 21; k++) {
    st = kiln_bert_model_forward(t.m, ids, lens, labels, ROWS, COLS, &loss, NULL);
    if (st == KILN_BERT_OK) st = kiln_bert_model_backward(t.m);
    if (st == KILN_BERT_OK) st = kiln_bert_model_step(t.m, &opt, lr, k, NULL);
    CHECK(st == KILN_BERT_OK, "step %d: %s", k, kiln_bert_last_error());
    if (k == 2) first = loss;
    last = loss;
  }
  CHECK(kiln_rt_mem_stats(t.dev, &after) == KILN_RT_OK, "mem stats");
  CHECK(after.num_allocs == before.num_allocs && after.bytes_in_use == before.bytes_in_use,
        "20 steps allocated: %zu allocations, %zu -> %zu bytes in use",
        after.num_allocs - before.num_allocs, before.bytes_in_use, after.bytes_in_use);
  printf("loss step 2 %.6g, step 21 %.6g\n", first, last);
  CHECK(last < 0.5 * first, "the loss did not fall: %.6g -> %.6g", first, last);

  /* a batch larger than planned is refused, not run */
  CHECK(kiln_bert_model_forward(t.m, ids, lens, labels, ROWS + 1, COLS, &loss, NULL) ==
            KILN_BERT_ERROR_INVALID_ARGUMENT,
        "an oversized batch was accepted");
  /* so is a token id outside the vocabulary (the word gradient groups the tokens by id) */
  int32_t keep = ids[3];
  ids[3] = 1 << 20;
  CHECK(kiln_bert_model_forward(t.m, ids, lens, labels, ROWS, COLS, &loss, NULL) ==
                KILN_BERT_ERROR_INVALID_ARGUMENT &&
            strstr(kiln_bert_last_error(), "outside the vocabulary"),
        "an id outside the vocabulary was accepted: %s", kiln_bert_last_error());
  ids[3] = -1;
  CHECK(kiln_bert_model_forward(t.m, ids, lens, labels, ROWS, COLS, &loss, NULL) ==
            KILN_BERT_ERROR_INVALID_ARGUMENT,
        "a negative id was accepted");
  ids[3] = keep;

  kb_test_model_close(&t);
  free(gtol);
  if (!failures) printf("ok\n");
  return failures ? 1 : 0;
}
