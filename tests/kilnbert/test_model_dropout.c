/* test_model_dropout.c — kilnbert_model's dropout (contract section 4) on the cpu device against
 * the double-precision reference (model_ref.c) given the same masks: the model of test_model.c
 * (2 layers, hidden 32, 2 heads of 16, FFN 64, a batch of 2 x 16 tokens, one row padded) at
 * dropout 0.1 on all five sites, one training step's loss and every gradient.
 *
 * The reference knows nothing of kernels: it multiplies element i of each site's tensor by the
 * factor this test computes from the site's Philox stream (kiln_bert_dropout_stream, the
 * model's public rule for which counters a site uses) with the C Philox of tests/numeric
 * (kiln_ref_rand). So a kernel that draws another mask, drops at the wrong place, or forgets to
 * regenerate its mask in the backward fails the comparison. Tolerances as in test_model.c (the
 * same f32 chains; dropout adds one rounded multiplication per site): 2e-5 relative for the
 * loss, 1e-4 of each gradient tensor's largest magnitude plus 1e-6 of the global norm.
 *
 * Then: the masks are a function of (seed, step) only (the same step twice gives the same loss
 * bit for bit, the next step another); p = 0 is exactly the model without dropout; steps with
 * dropout allocate nothing; a probability outside [0, 1) is refused. */
#include "bert_model.h"
#include "check.h"
#include "model_ref.h"
#include "reference.h"
#include "small_model.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 2
#define COLS 16
#define DROP 0.1
#define SEED 20261203u
#define STEP 5

/* The masks the model should draw at (SEED, STEP), element by element. */
typedef struct Masks {
  const KilnBertConfig *cfg;
  size_t dropped, total;
} Masks;

static double mask_factor(void *user, KilnBertDropSite site, int layer, size_t i) {
  Masks *mk = user;
  KilnBertPhilox ph = kiln_bert_dropout_stream(SEED, STEP, layer, site, ROWS, COLS, mk->cfg);
  bool keep = kiln_ref_rand(ph.seed, (int32_t)((uint32_t)ph.offset + (uint32_t)i)) > (float)DROP;
  mk->total++;
  mk->dropped += !keep;
  return keep ? 1.0 / (1.0 - (double)(float)DROP) : 0.0;
}

/* Loss and gradients of one forward + backward of the model. */
static float model_step(KilnBertModel *m, const int32_t *ids, const int32_t *lens,
                        const int32_t *labels, float *grads) {
  float loss = NAN;
  KilnBertStatus st = kiln_bert_model_forward(m, ids, lens, labels, ROWS, COLS, &loss, NULL);
  if (st == KILN_BERT_OK) st = kiln_bert_model_backward(m);
  if (st == KILN_BERT_OK && grads) st = kiln_bert_model_get_grads(m, grads);
  CHECK(st == KILN_BERT_OK, "step: %s", kiln_bert_last_error());
  return loss;
}

/* Every gradient tensor against the reference; returns the worst error / tolerance. */
static double check_grads(const KilnBertParams *lay, const float *got, const double *want) {
  double gnorm = 0, worst = 0;
  for (size_t i = 0; i < lay->total; i++) gnorm += want[i] * want[i];
  gnorm = sqrt(gnorm);
  for (size_t k = 0; k < lay->n; k++) {
    const KilnBertParam *q = &lay->p[k];
    double mx = 0, err = 0;
    for (size_t i = q->offset; i < q->offset + q->numel; i++) {
      mx = fmax(mx, fabs(want[i]));
      err = fmax(err, fabs(got[i] - want[i]));
    }
    double tol = 1e-4 * mx + 1e-6 * gnorm;
    worst = fmax(worst, err / tol);
    CHECK(err <= tol, "gradient of %s: max error %.3g, largest |g| %.3g", q->name, err, mx);
  }
  return worst;
}

int main(void) {
  KilnBertConfig cfg;
  kb_test_small_config(&cfg, 64);
  KilnRtDevice *dev;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK) {
    printf("FAIL: no cpu device: %s\n", kiln_rt_last_error());
    return 1;
  }
  KilnBertModel *m;
  if (kiln_bert_model_create(dev, &cfg, ROWS, COLS, &m) != KILN_BERT_OK) {
    printf("FAIL: model: %s\n", kiln_bert_last_error());
    return 1;
  }
  const KilnBertParams *lay = kiln_bert_model_params(m);
  size_t P = lay->total;
  float *flat = calloc(P, sizeof *flat), *got = calloc(P, sizeof *got);
  double *pd = calloc(P, sizeof *pd), *gd = calloc(P, sizeof *gd);
  kiln_bert_params_init(lay, &cfg, 7, NULL, flat);
  /* larger weights than BERT's 0.02 so that every path carries signal worth comparing */
  for (size_t k = 0; k < lay->n; k++)
    if (lay->p[k].init == KILN_BERT_INIT_NORMAL)
      for (size_t i = 0; i < lay->p[k].numel; i++) flat[lay->p[k].offset + i] *= 10;
  for (size_t i = 0; i < P; i++) pd[i] = flat[i];
  CHECK(kiln_bert_model_set_params(m, flat) == KILN_BERT_OK, "%s", kiln_bert_last_error());

  int32_t ids[ROWS * COLS] = {0}, lens[ROWS] = {COLS, 9}, labels[ROWS] = {1, 0};
  uint64_t r = 12345;
  for (int b = 0; b < ROWS; b++)
    for (int s = 0; s < lens[b]; s++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      ids[b * COLS + s] = 1 + (int32_t)((r >> 33) % (uint64_t)(cfg.vocab_size - 1));
    }

  /* one step at dropout 0.1 against the reference with the same masks */
  CHECK(kiln_bert_model_set_dropout(m, DROP, SEED, STEP) == KILN_BERT_OK, "%s",
        kiln_bert_last_error());
  float loss = model_step(m, ids, lens, labels, got);
  Masks mk = {&cfg, 0, 0};
  ModelRefDropout drop = {mask_factor, &mk};
  double ref = model_ref_loss_grad_drop(&cfg, lay, pd, ids, lens, labels, ROWS, COLS, &drop, gd);
  printf("dropout %.2g: loss %.9g, reference %.9g; the reference dropped %zu of %zu draws\n", DROP,
         loss, ref, mk.dropped, mk.total);
  CHECK(fabs(loss - ref) <= 2e-5 * fmax(1, fabs(ref)), "loss %.9g vs %.9g", loss, ref);
  /* binomial: the masks drop about p of the elements (4 sigma), so the case tests dropout */
  double frac = (double)mk.dropped / (double)mk.total;
  CHECK(fabs(frac - DROP) <= 4 * sqrt(DROP * (1 - DROP) / (double)mk.total),
        "dropped fraction %.4f", frac);
  printf("gradients: worst error / tolerance of a tensor %.3g\n", check_grads(lay, got, gd));

  /* the same step draws the same masks; the next step other ones */
  float again = model_step(m, ids, lens, labels, NULL);
  CHECK(memcmp(&again, &loss, sizeof loss) == 0, "the same step gave %.9g, then %.9g", loss, again);
  CHECK(kiln_bert_model_set_dropout(m, DROP, SEED, STEP + 1) == KILN_BERT_OK, "set");
  float next = model_step(m, ids, lens, labels, NULL);
  printf("loss at step %d: %.9g, at step %d: %.9g\n", STEP, loss, STEP + 1, next);
  CHECK(next != loss, "steps %d and %d drew the same masks", STEP, STEP + 1);

  /* p = 0 (evaluation) is the model without dropout */
  CHECK(kiln_bert_model_set_dropout(m, 0, SEED, STEP) == KILN_BERT_OK, "set");
  float plain = model_step(m, ids, lens, labels, got);
  double ref0 = model_ref_loss_grad(&cfg, lay, pd, ids, lens, labels, ROWS, COLS, gd);
  printf("dropout 0: loss %.9g, reference %.9g\n", plain, ref0);
  CHECK(fabs(plain - ref0) <= 2e-5 * fmax(1, fabs(ref0)), "loss %.9g vs %.9g", plain, ref0);
  check_grads(lay, got, gd);

  /* steps with dropout allocate nothing */
  KilnRtMemStats before, after;
  CHECK(kiln_rt_mem_stats(dev, &before) == KILN_RT_OK, "mem stats");
  KilnBertOptim opt = {0.9, 0.999, 1e-8, 0.01, 1.0};
  for (int k = 1; k <= 5; k++) {
    CHECK(kiln_bert_model_set_dropout(m, DROP, SEED, k) == KILN_BERT_OK, "set");
    model_step(m, ids, lens, labels, NULL);
    CHECK(kiln_bert_model_step(m, &opt, 1e-3, k, NULL) == KILN_BERT_OK, "%s",
          kiln_bert_last_error());
  }
  CHECK(kiln_rt_mem_stats(dev, &after) == KILN_RT_OK, "mem stats");
  CHECK(after.num_allocs == before.num_allocs && after.bytes_in_use == before.bytes_in_use,
        "5 steps with dropout allocated: %zu allocations, %zu -> %zu bytes in use",
        after.num_allocs - before.num_allocs, before.bytes_in_use, after.bytes_in_use);

  /* probabilities outside [0, 1) are refused */
  const double bad[] = {-0.1, 1.0, 1.5, NAN};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(kiln_bert_model_set_dropout(m, bad[i], SEED, 1) == KILN_BERT_ERROR_INVALID_ARGUMENT,
          "dropout %g accepted", bad[i]);

  kiln_bert_model_destroy(m);
  kiln_rt_device_destroy(dev);
  free(flat);
  free(got);
  free(pd);
  free(gd);
  if (!failures) printf("ok\n");
  return failures ? 1 : 0;
}
