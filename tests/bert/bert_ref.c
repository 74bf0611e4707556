/* bert_ref.c — references for the BERT kernels (see bert_ref.h). */
#include "bert_ref.h"

#include <math.h>

static const double SQRT_2_OVER_PI = 0.79788456080286535588;
static const double INV_SQRT_2PI = 0.39894228040143267794;
static const double GELU_CUBIC = 0.044715;

double kiln_bert_ref_gelu(double v, int tanh_approx) {
  if (tanh_approx)
    return 0.5 * v * (1.0 + tanh(SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v)));
  return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
}

double kiln_bert_ref_gelu_grad(double v, int tanh_approx) {
  if (tanh_approx) {
    double t = tanh(SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v));
    return 0.5 * (1.0 + t) +
           0.5 * v * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_CUBIC * v * v);
  }
  return 0.5 * (1.0 + erf(v / sqrt(2.0))) + v * INV_SQRT_2PI * exp(-0.5 * v * v);
}
