/* test_model_dropout.c — kilnbert_model's dropout (contract section 4) on the cpu device against
 * the double-precision reference (model_ref.c) given the same masks: the model of test_model.c
 * (2 layers, hidden 32, 2 heads of 16, FFN 64, a batch of 2 x 14 tokens, one row padded) at
 * dropout 0.1 on all five sites, one training step's loss and every gradient. The
 * probabilities draw 16 keep decisions per Philox block, a byte each (kiln_ref_attn_keep:
 * queries i, i + 1, i + 8, i + 9 by keys j, j + 1, j + 8, j + 9), the 14 queries and keys of a
 * head rounded up to 16 (kiln_bert_dropout_stream), and scale a kept one by
 * kiln_ref_attn_keep_scale (256 / 230 at 0.1, where the other sites take 1 / (1 - 0.1)).
 *
 * The reference knows nothing of kernels: it multiplies element i of each site's tensor by the
 * factor this test computes from the site's Philox stream (kiln_bert_dropout_stream, the
 * model's public rule for which counters a site uses) with the C Philox of tests/numeric
 * (kiln_ref_rand, kiln_ref_attn_keep). So a kernel that draws another mask, drops at the wrong place, or forgets to
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
#define COLS 14
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
  bool keep;
  if (site == KILN_BERT_DROP_ATTN_PROBS) { /* element (bh, q, k) of [bh, COLS, COLS] */
    uint32_t k = (uint32_t)(i % COLS), q = (uint32_t)(i / COLS % COLS),
             bh = (uint32_t)(i / COLS / COLS);
    keep = kiln_ref_attn_keep(ph.seed, ph.offset, bh, COLS, q, k, (float)DROP);
  } else {
    keep = kiln_ref_rand(ph.seed, (int32_t)((uint32_t)ph.offset + (uint32_t)i)) > (float)DROP;
  }
  mk->total++;
  mk->dropped += !keep;
  if (!keep) return 0.0;
  return site == KILN_BERT_DROP_ATTN_PROBS ? (double)kiln_ref_attn_keep_scale((float)DROP)
                                           : 1.0 / (1.0 - (double)(float)DROP);
}

/* Draws every element of every site's mask once (the counts of mk start over). */
static void count_masks(Masks *mk) {
  const KilnBertConfig *c = mk->cfg;
  size_t hidden = (size_t)ROWS * COLS * c->hidden_size;
  size_t probs = (size_t)ROWS * c->num_attention_heads * COLS * COLS;
  mk->dropped = mk->total = 0;
  for (size_t i = 0; i < hidden; i++) mask_factor(mk, KILN_BERT_DROP_EMBEDDINGS, -1, i);
  for (size_t i = 0; i < (size_t)ROWS * c->hidden_size; i++)
    mask_factor(mk, KILN_BERT_DROP_POOLER, -1, i);
  for (int l = 0; l < c->num_hidden_layers; l++) {
    for (size_t i = 0; i < probs; i++) mask_factor(mk, KILN_BERT_DROP_ATTN_PROBS, l, i);
    for (size_t i = 0; i < hidden; i++) mask_factor(mk, KILN_BERT_DROP_ATTN_OUT, l, i);
    for (size_t i = 0; i < hidden; i++) mask_factor(mk, KILN_BERT_DROP_FFN_OUT, l, i);
  }
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

int main(void) {
  KbTestModel t;
  if (!kb_test_model_open(&t, ROWS, COLS)) return 1;

  int32_t ids[ROWS * COLS] = {0}, lens[ROWS] = {COLS, 9}, labels[ROWS] = {1, 0};
  kb_test_ids(&t.cfg, ids, lens, ROWS, COLS);

  /* one step at dropout 0.1 against the reference with the same masks */
  CHECK(kiln_bert_model_set_dropout(t.m, DROP, SEED, STEP) == KILN_BERT_OK, "%s",
        kiln_bert_last_error());
  float loss = model_step(t.m, ids, lens, labels, t.got);
  Masks mk = {&t.cfg, 0, 0};
  ModelRefDropout drop = {mask_factor, &mk};
  double ref =
      model_ref_loss_grad_drop(&t.cfg, t.lay, t.pd, ids, lens, labels, ROWS, COLS, &drop, t.gd);
  printf("dropout %.2g: loss %.9g, reference %.9g; the reference dropped %zu of %zu draws\n", DROP,
         loss, ref, mk.dropped, mk.total);
  CHECK(fabs(loss - ref) <= 2e-5 * fmax(1, fabs(ref)), "loss %.9g vs %.9g", loss, ref);
  /* binomial: the masks drop about p of the elements (4 sigma over each site's elements once:
   * the reference asks for some more than once), so the case tests dropout */
  count_masks(&mk);
  double frac = (double)mk.dropped / (double)mk.total;
  printf("the masks drop %zu of their %zu elements\n", mk.dropped, mk.total);
  CHECK(fabs(frac - DROP) <= 4 * sqrt(DROP * (1 - DROP) / (double)mk.total),
        "dropped fraction %.4f of %zu", frac, mk.total);
  printf("gradients: worst error / tolerance of a tensor %.3g\n",
         kb_test_check_grads(t.lay, t.got, t.gd, NULL));

  /* the same step draws the same masks; the next step other ones */
  float again = model_step(t.m, ids, lens, labels, NULL);
  CHECK(memcmp(&again, &loss, sizeof loss) == 0, "the same step gave %.9g, then %.9g", loss, again);
  CHECK(kiln_bert_model_set_dropout(t.m, DROP, SEED, STEP + 1) == KILN_BERT_OK, "set");
  float next = model_step(t.m, ids, lens, labels, NULL);
  printf("loss at step %d: %.9g, at step %d: %.9g\n", STEP, loss, STEP + 1, next);
  CHECK(next != loss, "steps %d and %d drew the same masks", STEP, STEP + 1);

  /* p = 0 (evaluation) is the model without dropout */
  CHECK(kiln_bert_model_set_dropout(t.m, 0, SEED, STEP) == KILN_BERT_OK, "set");
  float plain = model_step(t.m, ids, lens, labels, t.got);
  double ref0 = model_ref_loss_grad(&t.cfg, t.lay, t.pd, ids, lens, labels, ROWS, COLS, t.gd);
  printf("dropout 0: loss %.9g, reference %.9g\n", plain, ref0);
  CHECK(fabs(plain - ref0) <= 2e-5 * fmax(1, fabs(ref0)), "loss %.9g vs %.9g", plain, ref0);
  kb_test_check_grads(t.lay, t.got, t.gd, NULL);

  /* steps with dropout allocate nothing */
  KilnRtMemStats before, after;
  CHECK(kiln_rt_mem_stats(t.dev, &before) == KILN_RT_OK, "mem stats");
  KilnBertOptim opt = {0.9, 0.999, 1e-8, 0.01, 1.0};
  for (int k = 1; k <= 5; k++) {
    CHECK(kiln_bert_model_set_dropout(t.m, DROP, SEED, k) == KILN_BERT_OK, "set");
    model_step(t.m, ids, lens, labels, NULL);
    CHECK(kiln_bert_model_step(t.m, &opt, 1e-3, k, NULL) == KILN_BERT_OK, "%s",
          kiln_bert_last_error());
  }
  CHECK(kiln_rt_mem_stats(t.dev, &after) == KILN_RT_OK, "mem stats");
  CHECK(after.num_allocs == before.num_allocs && after.bytes_in_use == before.bytes_in_use,
        "5 steps with dropout allocated: %zu allocations, %zu -> %zu bytes in use",
        after.num_allocs - before.num_allocs, before.bytes_in_use, after.bytes_in_use);

  /* probabilities outside [0, 1) are refused */
  const double bad[] = {-0.1, 1.0, 1.5, NAN};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(kiln_bert_model_set_dropout(t.m, bad[i], SEED, 1) == KILN_BERT_ERROR_INVALID_ARGUMENT,
          "dropout %g accepted", bad[i]);

  kb_test_model_close(&t);
  if (!failures) printf("ok\n");
  return failures ? 1 : 0;
}
