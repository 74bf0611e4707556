/* model_ref.h — a plain double-precision reference of BertForSequenceClassification's training
 * step (forward loss, every gradient, clipping and one torch AdamW update), written from the
 * kiln-bert contract's sections 4 and 5 with loops and nothing shared with the kernels: the
 * model test holds `kiln_bert_model_*` to it, without dropout or with the masks a caller
 * supplies (element by element, at the contract's five sites). */
#ifndef KILN_TEST_MODEL_REF_H
#define KILN_TEST_MODEL_REF_H

#include "bert_config.h"
#include "bert_model.h" /* KilnBertDropSite: the sites' names and tensor layouts */
#include "bert_params.h"

#include <stddef.h>

#include <stdint.h>

/* Loss of the batch (rows x cols ids, lens[r] real tokens of row r, labels) under the
 * parameters p (layout's flat buffer, in double), and its gradient into g (layout->total
 * doubles, overwritten). Returns the mean cross-entropy. */
double model_ref_loss_grad(const KilnBertConfig *cfg, const KilnBertParams *layout, const double *p,
                           const int32_t *ids, const int32_t *lens, const int32_t *labels, int rows,
                           int cols, double *g);

/* Dropout masks: factor(user, site, layer, i) is what element i of the site's tensor (layer -1
 * for the embeddings and the pooler; the layouts of KilnBertDropSite) is multiplied by: 0 when
 * dropped, 1 / (1 - p) when kept. */
typedef struct ModelRefDropout {
  double (*factor)(void *user, KilnBertDropSite site, int layer, size_t i);
  void *user;
} ModelRefDropout;

/* model_ref_loss_grad with dropout (drop NULL: none); the probabilities' mask multiplies them
 * only where they weight V, the softmax itself is undropped (as in torch). */
double model_ref_loss_grad_drop(const KilnBertConfig *cfg, const KilnBertParams *layout,
                                const double *p, const int32_t *ids, const int32_t *lens,
                                const int32_t *labels, int rows, int cols,
                                const ModelRefDropout *drop, double *g);

/* One AdamW update (contract section 5) of p from zero moments at step 1: g is clipped to
 * global norm clip first (when clip > 0). Returns the norm before clipping. */
double model_ref_adamw_first_step(const KilnBertParams *layout, double *p, const double *g,
                                  double lr, double beta1, double beta2, double eps, double wd,
                                  double clip);

#endif /* KILN_TEST_MODEL_REF_H */
