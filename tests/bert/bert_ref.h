/* bert_ref.h — plain C references for the BERT kernels, written from the math of each operation
 * (no Kiln code), in double unless a function says otherwise, so that the test tolerances measure
 * the kernels' own f32/f16 error. Matrices are dense row-major unless strides are given.
 */
#ifndef KILN_BERT_REF_H
#define KILN_BERT_REF_H

#include <stddef.h>
#include <stdint.h>

/* gelu(v) and its derivative; tanh_approx selects the tanh approximation over the exact erf form. */
double kiln_bert_ref_gelu(double v, int tanh_approx);
double kiln_bert_ref_gelu_grad(double v, int tanh_approx);

/* y = LayerNorm(x + res) per row of a rows x cols matrix: s = x + res (rounded to f32, as the
 * kernel's s is), mean, rstd = 1/sqrt(biased var + eps), y = (s - mean) rstd gamma + beta. */
void kiln_bert_ref_layernorm_fwd(const float *x, const float *res, const float *gamma,
                                 const float *beta, float *y, float *mean, float *rstd, size_t rows,
                                 size_t cols, float eps);
/* Backward of the above: dx (which is also d(res)), dgamma, dbeta. The mean and rstd are its
 * own, in double, of each row of s = x + res (as the forward computes them, so nothing of the
 * kernel's enters); xhat takes s_t, s as the backward reads it (rounded to the activations'
 * type; s itself in f32). */
void kiln_bert_ref_layernorm_bwd(const float *s, const float *s_t, const float *dy,
                                 const float *gamma, float eps, float *dx, float *dgamma,
                                 float *dbeta, size_t rows, size_t cols);

/* Softmax cross-entropy per row over `classes` logits: loss = logsumexp(x) - x[label], 0 for rows
 * whose label equals ignore_index. dlogits = (softmax(x) - onehot(label)) * dloss[row] (0 rows for
 * ignored labels). */
void kiln_bert_ref_xent_fwd(const float *x, const int32_t *labels, float *loss, float *lse,
                            size_t rows, size_t classes, int32_t ignore_index);
void kiln_bert_ref_xent_bwd(const float *x, const int32_t *labels, const float *dloss, float *dx,
                            size_t rows, size_t classes, int32_t ignore_index);

#endif /* KILN_BERT_REF_H */
