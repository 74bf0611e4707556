/* small_model.h — the small BERT the model tests share: 2 layers, hidden 32, 2 heads of 16,
 * FFN 64, 32 positions, 2 labels, the given vocabulary size. Small enough that the double
 * reference (model_ref.c) and the emulator run a step in seconds, large enough for every part
 * of the model (multi-head attention, padding, two layers) to matter. With it, the steps those
 * tests begin with: the cpu device, a fixed random stream for token ids, the scaled seed-7
 * parameters and the gradient check against the reference. Header-only, like the CHECK it
 * reports through (tests/common/check.h). */
#ifndef KILN_TEST_SMALL_MODEL_H
#define KILN_TEST_SMALL_MODEL_H

#include "bert_config.h"
#include "bert_model.h"
#include "bert_params.h"
#include "check.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline void kb_test_small_config(KilnBertConfig *c, int vocab_size) {
  kiln_bert_config_defaults(c);
  c->vocab_size = vocab_size;
  c->hidden_size = 32;
  c->num_hidden_layers = 2;
  c->num_attention_heads = 2;
  c->intermediate_size = 64;
  c->max_position_embeddings = 32;
  c->num_labels = 2;
}

/* The runtime's cpu device, or NULL after a FAIL line. */
static inline KilnRtDevice *kb_test_cpu_device(void) {
  KilnRtDevice *dev = NULL;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK) {
    printf("FAIL: no cpu device: %s\n", kiln_rt_last_error());
    return NULL;
  }
  return dev;
}

/* The next value of the tests' fixed random stream (a 64-bit LCG; its high 31 bits). */
static inline uint32_t kb_test_lcg(uint64_t *r) {
  *r = *r * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*r >> 33);
}

/* Token ids in [1, vocab) for the first lens[b] positions of each of `rows` rows of `cols`, from
 * a stream seeded 12345; the positions past a row's length are left as they are (padding). */
static inline void kb_test_ids(const KilnBertConfig *cfg, int32_t *ids, const int32_t *lens,
                               int rows, int cols) {
  uint64_t r = 12345;
  for (int b = 0; b < rows; b++)
    for (int s = 0; s < lens[b]; s++)
      ids[b * cols + s] = 1 + (int32_t)(kb_test_lcg(&r) % (uint32_t)(cfg->vocab_size - 1));
}

/* The seed-7 parameters with the normally initialized weights 10x larger than BERT's 0.02, so
 * that every path carries signal worth comparing: into flat, and as doubles into pd. */
static inline void kb_test_scaled_params(const KilnBertParams *lay, const KilnBertConfig *cfg,
                                         float *flat, double *pd) {
  kiln_bert_params_init(lay, cfg, 7, NULL, flat);
  for (size_t k = 0; k < lay->n; k++)
    if (lay->p[k].init == KILN_BERT_INIT_NORMAL)
      for (size_t i = 0; i < lay->p[k].numel; i++) flat[lay->p[k].offset + i] *= 10;
  for (size_t i = 0; i < lay->total; i++) pd[i] = flat[i];
}

/* Every gradient tensor against the reference `want`: its largest error within `rel` of its
 * largest magnitude plus rel / 100 of the global gradient norm (test_model.c says why). Each
 * tensor's tolerance goes to tol[k] when tol is not NULL. Returns the worst error / tolerance. */
static inline double kb_test_check_grads_within(const KilnBertParams *lay, const float *got,
                                                const double *want, double *tol, double rel) {
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
    double t = rel * mx + 1e-2 * rel * gnorm;
    if (tol) tol[k] = t;
    worst = fmax(worst, err / t);
    CHECK(err <= t, "gradient of %s: max error %.3g, largest |g| %.3g", q->name, err, mx);
  }
  return worst;
}

/* fp32's tolerances (the file comment of test_model.c): 1e-4 of a tensor's largest gradient. */
static inline double kb_test_check_grads(const KilnBertParams *lay, const float *got,
                                         const double *want, double *tol) {
  return kb_test_check_grads_within(lay, got, want, tol, 1e-4);
}

/* What the model tests begin with: the small model (vocabulary 64) of rows x cols tokens on the
 * cpu device with the scaled seed-7 parameters set, and buffers of its parameter count. */
typedef struct KbTestModel {
  KilnBertConfig cfg;
  KilnRtDevice *dev;
  KilnBertModel *m;
  const KilnBertParams *lay;
  float *flat, *got; /* the parameters set; room for what the model hands back */
  double *pd, *gd;   /* the parameters as doubles; room for the reference's gradients */
} KbTestModel;

/* false after a FAIL line when there is no device or model. */
static inline bool kb_test_model_open(KbTestModel *t, int rows, int cols) {
  kb_test_small_config(&t->cfg, 64);
  if (!(t->dev = kb_test_cpu_device())) return false;
  if (kiln_bert_model_create(t->dev, &t->cfg, rows, cols, &t->m) != KILN_BERT_OK) {
    printf("FAIL: model: %s\n", kiln_bert_last_error());
    return false;
  }
  t->lay = kiln_bert_model_params(t->m);
  size_t n = t->lay->total;
  t->flat = calloc(n, sizeof *t->flat), t->got = calloc(n, sizeof *t->got);
  t->pd = calloc(n, sizeof *t->pd), t->gd = calloc(n, sizeof *t->gd);
  kb_test_scaled_params(t->lay, &t->cfg, t->flat, t->pd);
  CHECK(kiln_bert_model_set_params(t->m, t->flat) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  return true;
}

static inline void kb_test_model_close(KbTestModel *t) {
  kiln_bert_model_destroy(t->m);
  kiln_rt_device_destroy(t->dev);
  free(t->flat), free(t->got), free(t->pd), free(t->gd);
}

#endif /* KILN_TEST_SMALL_MODEL_H */
