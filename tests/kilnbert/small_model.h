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
#include <stdint.h>
#include <stdio.h>

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

/* Every gradient tensor against the reference `want`: its largest error within 1e-4 of its
 * largest magnitude plus 1e-6 of the global gradient norm (test_model.c says why). Each
 * tensor's tolerance goes to tol[k] when tol is not NULL. Returns the worst error / tolerance. */
static inline double kb_test_check_grads(const KilnBertParams *lay, const float *got,
                                         const double *want, double *tol) {
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
    double t = 1e-4 * mx + 1e-6 * gnorm;
    if (tol) tol[k] = t;
    worst = fmax(worst, err / t);
    CHECK(err <= t, "gradient of %s: max error %.3g, largest |g| %.3g", q->name, err, mx);
  }
  return worst;
}

#endif /* KILN_TEST_SMALL_MODEL_H */
