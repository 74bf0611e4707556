/* test_precision.c — kilnbert_model in fp16, bf16 and fp32 with TF32 gemms against fp32 on the
 * cpu device (contract section 5), on the tiny BERT of test_model.c (2 layers, hidden 32, 2 heads of 16, FFN 64,
 * vocabulary 64) with 3 batches of 4 rows of 16 tokens taken in turn, dropout 0 but in 3:
 *
 * 1. The same seed, data and optimizer for 20 steps in each precision: the fp16 and bf16 losses
 *    and gradient norms stay within the tolerances below of fp32's, no fp16 step overflows at
 *    the starting loss scale 2^16 (the log's scale stays 65536), and no step allocates. TF32
 *    (KILN_BERT_FP32_TF32: the gemms' operands rounded to 10-bit mantissas) within fp16's
 *    tolerances, u = 2^-11 being its rounding too but of the gemm operands only
 *    (docs/trainer.md, "TF32"), and not bit for bit fp32's (its gemm libraries were called);
 *    in the checked build its gemm calls are held to their size rules like the others.
 * 2. An overflow in the real model: with the scale forced to 2^100 the fp16 backward's
 *    gradients are inf, the step is skipped (kiln_bert_model_skipped), the scale halves, and
 *    the parameters are bit for bit what they were; with the scale set back to 2^16, the next
 *    step taken as AdamW step 1 gives the parameters a fresh model's step 1 gives, so the skipped
 *    step moved neither the weights nor the moments.
 * 3. Dropout in fp16: 5 steps at dropout 0.1 (every site, the masks of (seed, step)) give
 *    finite losses and gradient norms and no skipped step; step 1's loss differs from the
 *    dropout-0 model's (the masks are applied) by less than 0.3, and the same step's masks drawn
 *    again give the same loss. Then evaluation after training with dropout: the trained model's
 *    forward after kiln_bert_model_set_dropout(m, 0, ...) gives, bit for bit, the logits of a
 *    fresh fp16 model (dropout 0 since creation) loaded with the trained f32 masters, since
 *    AdamW's half copy is the masters rounded to nearest even, as cast_from_f32 makes it.
 *
 * Tolerances. A half-precision model rounds every activation and weight to T: unit roundoff
 * u = 2^-11 (4.9e-4) for f16, 2^-8 (3.9e-3) for bf16. The loss (0.69 falling to 0.4 here) comes
 * out of the f32 cross-entropy of logits of a few tenths, each a dot product of LayerNorm-
 * normalized T values whose roundings mostly cancel, so a forward's loss moves by a fraction of
 * u; the 20 updates (lr 2e-3, nearly lr sign(g) per weight) then carry the difference along.
 * The checks allow 2 u absolute on every step's loss (measured: 0.07 u for fp16, 0.13 u for
 * bf16) and 5 u relative on the gradient norm (measured: 1.5 u, 1.1 u), which AdamW's update
 * hardly sees but a wrong unscale, a lost loss scale or a gradient flushed in the f16 range
 * moves by far more. The skipped-step comparison allows 1e-6 relative (+1e-9): both
 * models run the same kernels on the same data, only atomics may add in another order. */
#include "bert_model.h"
#include "check.h"
#include "small_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROWS    4
#define COLS    16
#define BATCHES 3
#define STEPS   20

typedef struct Data {
  int32_t ids[BATCHES][ROWS * COLS], lens[BATCHES][ROWS], labels[BATCHES][ROWS];
} Data;

/* Rows of random tokens of random lengths; the label is whether the first token after [CLS]
 * is in the upper half of the vocabulary, so that the loss has something to learn. */
static void make_data(Data *d) {
  uint64_t r = 2024;
  for (int b = 0; b < BATCHES; b++)
    for (int i = 0; i < ROWS; i++) {
      int len = 4 + (int)(kb_test_lcg(&r) % (COLS - 3));
      d->lens[b][i] = len;
      for (int s = 0; s < COLS; s++) {
        uint32_t v = kb_test_lcg(&r);
        d->ids[b][i * COLS + s] = s < len ? 1 + (int32_t)(v % 63) : 0;
      }
      d->labels[b][i] = d->ids[b][i * COLS + 1] >= 32;
    }
}

static const KilnBertOptim opt = {0.9, 0.999, 1e-8, 0.01, 1.0};
static const double lr = 2e-3;

/* A model of the given precision with the seed-7 initialization. NULL on failure (reported). */
static KilnBertModel *make_model(KilnRtDevice *dev, const KilnBertConfig *cfg,
                                 KilnBertPrecision prec, float **flat_out) {
  KilnBertModel *m = NULL;
  KilnBertStatus st = kiln_bert_model_create_precision(dev, cfg, prec, ROWS, COLS, &m);
  CHECK(st == KILN_BERT_OK, "model (precision %d): %s", (int)prec, kiln_bert_last_error());
  if (st != KILN_BERT_OK) return NULL;
  const KilnBertParams *lay = kiln_bert_model_params(m);
  float *flat = calloc(lay->total, sizeof *flat);
  kiln_bert_params_init(lay, cfg, 7, NULL, flat);
  CHECK(kiln_bert_model_set_params(m, flat) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  if (flat_out)
    *flat_out = flat;
  else
    free(flat);
  return m;
}

/* One training step on batch b as AdamW step `k`; the loss and gradient norm out. */
static KilnBertStatus train_step(KilnBertModel *m, const Data *d, int b, int k, float *loss,
                                 double *norm) {
  KilnBertStatus st =
      kiln_bert_model_forward(m, d->ids[b], d->lens[b], d->labels[b], ROWS, COLS, loss, NULL);
  if (st == KILN_BERT_OK) st = kiln_bert_model_backward(m);
  if (st == KILN_BERT_OK) st = kiln_bert_model_step(m, &opt, lr, k, norm);
  return st;
}

/* STEPS steps in one precision: losses and norms out; no allocation, no skipped step. */
static void run_steps(KilnRtDevice *dev, const KilnBertConfig *cfg, const Data *d,
                      KilnBertPrecision prec, float loss[STEPS], double norm[STEPS]) {
  KilnBertModel *m = make_model(dev, cfg, prec, NULL);
  if (!m) return;
  KilnRtMemStats before, after;
  CHECK(kiln_rt_mem_stats(dev, &before) == KILN_RT_OK, "mem stats");
  int skipped = 0;
  for (int k = 1; k <= STEPS; k++) {
    KilnBertStatus st = train_step(m, d, (k - 1) % BATCHES, k, &loss[k - 1], &norm[k - 1]);
    CHECK(st == KILN_BERT_OK, "precision %d, step %d: %s", (int)prec, k, kiln_bert_last_error());
    if (st != KILN_BERT_OK) break;
    skipped += kiln_bert_model_skipped(m);
  }
  CHECK(kiln_rt_mem_stats(dev, &after) == KILN_RT_OK, "mem stats");
  CHECK(after.num_allocs == before.num_allocs && after.bytes_in_use == before.bytes_in_use,
        "precision %d: %d steps allocated %zu times", (int)prec, STEPS,
        after.num_allocs - before.num_allocs);
  CHECK(skipped == 0, "precision %d: %d steps skipped", (int)prec, skipped);
  float want = prec == KILN_BERT_FP16 ? 65536.0f : 1.0f;
  CHECK(kiln_bert_model_scaler(m)->scale == want, "precision %d: scale %g after %d steps",
        (int)prec, (double)kiln_bert_model_scaler(m)->scale, STEPS);
  kiln_bert_model_destroy(m);
}

static void compare(const char *name, const float ref[STEPS], const double rnorm[STEPS],
                    const float got[STEPS], const double gnorm[STEPS], double u) {
  double worst = 0, worst_norm = 0;
  for (int k = 0; k < STEPS; k++) {
    double e = fabs((double)got[k] - (double)ref[k]), en = fabs(gnorm[k] - rnorm[k]) / rnorm[k];
    worst = fmax(worst, e);
    worst_norm = fmax(worst_norm, en);
    CHECK(e <= 2 * u, "%s step %d: loss %.6f, fp32 %.6f (tolerance %.3g)", name, k + 1,
          (double)got[k], (double)ref[k], 2 * u);
    CHECK(en <= 5 * u, "%s step %d: grad norm %.6g, fp32 %.6g (relative tolerance %.3g)", name,
          k + 1, gnorm[k], rnorm[k], 5 * u);
  }
  printf("%s: largest loss difference %.3g (tolerance %.3g), grad norm %.3g relative (%.3g); "
         "loss %.6f -> %.6f (fp32 %.6f -> %.6f)\n",
         name, worst, 2 * u, worst_norm, 5 * u, (double)got[0], (double)got[STEPS - 1],
         (double)ref[0], (double)ref[STEPS - 1]);
}

/* An fp16 step at a scale that overflows is skipped and leaves no trace in the optimizer. */
static void overflow_skips(KilnRtDevice *dev, const KilnBertConfig *cfg, const Data *d) {
  float *flat = NULL;
  KilnBertModel *a = make_model(dev, cfg, KILN_BERT_FP16, &flat);
  KilnBertModel *b = make_model(dev, cfg, KILN_BERT_FP16, NULL);
  if (!a || !b || !flat) {
    kiln_bert_model_destroy(a);
    kiln_bert_model_destroy(b);
    free(flat);
    return;
  }
  size_t P = kiln_bert_model_params(a)->total;
  float *pa = calloc(P, sizeof *pa), *pb = calloc(P, sizeof *pb), loss = 0;
  double norm = 0;
  const float huge = 0x1p100f;
  kiln_bert_model_scaler(a)->scale = huge;
  CHECK(train_step(a, d, 0, 1, &loss, &norm) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  CHECK(kiln_bert_model_skipped(a) == 1, "a step at scale 2^100 was not skipped");
  CHECK(kiln_bert_model_scaler(a)->scale == huge / 2, "scale %g after the overflow, want 2^99",
        (double)kiln_bert_model_scaler(a)->scale);
  CHECK(!isfinite(norm), "the overflowed step's grad norm is finite: %g", norm);
  CHECK(kiln_bert_model_get_params(a, pa) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  CHECK(memcmp(pa, flat, P * sizeof *pa) == 0, "the skipped step changed the parameters");
  /* back to the starting scale; the caller did not count the skipped step: AdamW step 1 */
  kiln_bert_model_scaler(a)->scale = 65536.0f;
  CHECK(train_step(a, d, 0, 1, &loss, &norm) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  CHECK(train_step(b, d, 0, 1, &loss, &norm) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  CHECK(!kiln_bert_model_skipped(a) && !kiln_bert_model_skipped(b), "a step at 2^16 skipped");
  CHECK(kiln_bert_model_get_params(a, pa) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  CHECK(kiln_bert_model_get_params(b, pb) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  size_t bad = 0, moved = 0;
  for (size_t i = 0; i < P; i++) {
    if (fabsf(pa[i] - pb[i]) > 1e-6f * fabsf(pb[i]) + 1e-9f) bad++;
    if (pb[i] != flat[i]) moved++;
  }
  CHECK(bad == 0, "%zu parameters differ from a fresh model's step 1 after a skipped step", bad);
  CHECK(moved > P / 2, "step 1 moved only %zu of %zu parameters", moved, P);
  printf("overflow: skipped at 2^100, scale halved, parameters unchanged; the next step equals "
         "a fresh step 1 (%zu parameters moved)\n",
         moved);
  kiln_bert_model_destroy(a);
  kiln_bert_model_destroy(b);
  free(flat);
  free(pa);
  free(pb);
}

/* fp16 with dropout trains; a forward with dropout turned off is the dropout-0 forward. */
static void fp16_dropout(KilnRtDevice *dev, const KilnBertConfig *cfg, const Data *d) {
  KilnBertModel *a = make_model(dev, cfg, KILN_BERT_FP16, NULL);
  KilnBertModel *z = make_model(dev, cfg, KILN_BERT_FP16, NULL);
  if (!a || !z) {
    kiln_bert_model_destroy(a);
    kiln_bert_model_destroy(z);
    return;
  }
  const int steps = 5;
  const uint64_t seed = 11;
  float first_z = 0, again = 0;
  for (int k = 1; k <= steps; k++) {
    float loss = 0;
    double norm = 0, nz = 0;
    CHECK(kiln_bert_model_set_dropout(a, 0.1, seed, k) == KILN_BERT_OK, "%s",
          kiln_bert_last_error());
    if (k == 1) {
      /* the same step's masks twice: the same forward */
      CHECK(kiln_bert_model_forward(a, d->ids[0], d->lens[0], d->labels[0], ROWS, COLS, &again,
                                    NULL) == KILN_BERT_OK,
            "%s", kiln_bert_last_error());
      CHECK(train_step(z, d, 0, 1, &first_z, &nz) == KILN_BERT_OK, "%s", kiln_bert_last_error());
    }
    KilnBertStatus st = train_step(a, d, (k - 1) % BATCHES, k, &loss, &norm);
    CHECK(st == KILN_BERT_OK, "fp16 dropout step %d: %s", k, kiln_bert_last_error());
    if (st != KILN_BERT_OK) break;
    CHECK(isfinite(loss) && isfinite(norm), "fp16 dropout step %d: loss %g, grad norm %g", k,
          (double)loss, norm);
    CHECK(!kiln_bert_model_skipped(a), "fp16 dropout step %d skipped (scale %g)", k,
          (double)kiln_bert_model_scaler(a)->scale);
    if (k == 1) {
      CHECK(loss == again, "step 1's masks drawn twice gave losses %.9g and %.9g", (double)loss,
            (double)again);
      CHECK(loss != first_z && fabsf(loss - first_z) < 0.3f,
            "fp16 step 1: loss %.6f at dropout 0.1, %.6f at 0 (want different, and close)",
            (double)loss, (double)first_z);
      printf("fp16 dropout: step 1 loss %.6f (dropout 0: %.6f)\n", (double)loss, (double)first_z);
    }
  }
  /* evaluation after training: dropout off against a dropout-0 model of the same weights */
  size_t P = kiln_bert_model_params(a)->total;
  float *masters = calloc(P, sizeof *masters);
  float la[ROWS * 2], lb[ROWS * 2], loss_a = 0, loss_b = 0;
  KilnBertModel *b = NULL;
  CHECK(kiln_bert_model_get_params(a, masters) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  CHECK(kiln_bert_model_create_precision(dev, cfg, KILN_BERT_FP16, ROWS, COLS, &b) == KILN_BERT_OK,
        "%s", kiln_bert_last_error());
  if (b) {
    CHECK(kiln_bert_model_set_params(b, masters) == KILN_BERT_OK, "%s", kiln_bert_last_error());
    CHECK(kiln_bert_model_set_dropout(a, 0, seed, steps) == KILN_BERT_OK, "%s",
          kiln_bert_last_error());
    for (int bt = 0; bt < BATCHES; bt++) {
      CHECK(kiln_bert_model_forward(a, d->ids[bt], d->lens[bt], d->labels[bt], ROWS, COLS, &loss_a,
                                    la) == KILN_BERT_OK,
            "%s", kiln_bert_last_error());
      CHECK(kiln_bert_model_forward(b, d->ids[bt], d->lens[bt], d->labels[bt], ROWS, COLS, &loss_b,
                                    lb) == KILN_BERT_OK,
            "%s", kiln_bert_last_error());
      CHECK(memcmp(la, lb, sizeof la) == 0 && loss_a == loss_b,
            "batch %d: the trained model with dropout off gives loss %.9g, a dropout-0 model of "
            "its weights %.9g (logits %.9g vs %.9g)",
            bt, (double)loss_a, (double)loss_b, (double)la[0], (double)lb[0]);
    }
    printf("fp16 dropout: after %d steps, the forward with dropout off equals a dropout-0 "
           "model's (loss %.6f)\n",
           steps, (double)loss_a);
  }
  kiln_bert_model_destroy(a);
  kiln_bert_model_destroy(b);
  kiln_bert_model_destroy(z);
  free(masters);
}

int main(void) {
  KilnBertConfig cfg;
  kb_test_small_config(&cfg, 64);
  KilnRtDevice *dev = kb_test_cpu_device();
  if (!dev) return 1;
  Data *d = calloc(1, sizeof *d);
  make_data(d);
  float l32[STEPS] = {0}, l16[STEPS] = {0}, lbf[STEPS] = {0};
  double n32[STEPS] = {0}, n16[STEPS] = {0}, nbf[STEPS] = {0};
  run_steps(dev, &cfg, d, KILN_BERT_FP32, l32, n32);
  run_steps(dev, &cfg, d, KILN_BERT_FP16, l16, n16);
  run_steps(dev, &cfg, d, KILN_BERT_BF16, lbf, nbf);
  float ltf[STEPS] = {0};
  double ntf[STEPS] = {0};
  run_steps(dev, &cfg, d, KILN_BERT_FP32_TF32, ltf, ntf);
  CHECK(l32[STEPS - 1] < l32[0] - 0.05, "fp32 did not learn: loss %.6f -> %.6f", (double)l32[0],
        (double)l32[STEPS - 1]);
  compare("fp16", l32, n32, l16, n16, 0x1p-11);
  compare("bf16", l32, n32, lbf, nbf, 0x1p-8);
  compare("tf32", l32, n32, ltf, ntf, 0x1p-11);
  CHECK(memcmp(l32, ltf, sizeof l32) || memcmp(n32, ntf, sizeof n32),
        "tf32: every loss and norm is fp32's bit for bit (the TF32 gemms were not called)");
  overflow_skips(dev, &cfg, d);
  fp16_dropout(dev, &cfg, d);
  free(d);
  kiln_rt_device_destroy(dev);
  if (!failures) printf("ok\n");
  return failures ? 1 : 0;
}
