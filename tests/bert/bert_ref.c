/* bert_ref.c — references for the BERT kernels (see bert_ref.h). */
#include "bert_ref.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

static const double SQRT_2_OVER_PI = 0.79788456080286535588;
static const double INV_SQRT_2PI = 0.39894228040143267794;
static const double GELU_CUBIC = 0.044715;

double kiln_bert_ref_gelu(double v, int tanh_approx) {
  if (tanh_approx) return 0.5 * v * (1.0 + tanh(SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v)));
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

void kiln_bert_ref_layernorm_fwd(const float *x, const float *res, const float *gamma,
                                 const float *beta, float *y, float *mean, float *rstd, size_t rows,
                                 size_t cols, float eps) {
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols, *rr = res + r * cols;
    double mu = 0.0, var = 0.0;
    for (size_t c = 0; c < cols; c++) mu += (double)(xr[c] + rr[c]);
    mu /= (double)cols;
    for (size_t c = 0; c < cols; c++) {
      double d = (double)(xr[c] + rr[c]) - mu;
      var += d * d;
    }
    double rs = 1.0 / sqrt(var / (double)cols + (double)eps);
    for (size_t c = 0; c < cols; c++)
      y[r * cols + c] = (float)(((double)(xr[c] + rr[c]) - mu) * rs * gamma[c] + beta[c]);
    mean[r] = (float)mu;
    rstd[r] = (float)rs;
  }
}

/* Mean and rstd = 1/sqrt(biased var + eps) of one row, in double, two passes. */
static void row_stats(const float *s, size_t cols, float eps, double *mean, double *rstd) {
  double mu = 0.0, var = 0.0;
  for (size_t c = 0; c < cols; c++) mu += s[c];
  mu /= (double)cols;
  for (size_t c = 0; c < cols; c++) var += ((double)s[c] - mu) * ((double)s[c] - mu);
  *mean = mu;
  *rstd = 1.0 / sqrt(var / (double)cols + (double)eps);
}

void kiln_bert_ref_layernorm_bwd(const float *s, const float *s_t, const float *dy,
                                 const float *gamma, float eps, float *dx, float *dgamma,
                                 float *dbeta, size_t rows, size_t cols) {
  for (size_t c = 0; c < cols; c++) dgamma[c] = dbeta[c] = 0.0f;
  double *dg = calloc(cols, sizeof *dg), *db = calloc(cols, sizeof *db);
  for (size_t r = 0; r < rows && dg && db; r++) {
    const float *sr = s_t + r * cols, *dr = dy + r * cols;
    double mean, rstd, c1 = 0.0, c2 = 0.0;
    row_stats(s + r * cols, cols, eps, &mean, &rstd);
    for (size_t c = 0; c < cols; c++) {
      double xhat = ((double)sr[c] - mean) * rstd, wdy = (double)gamma[c] * dr[c];
      c1 += xhat * wdy;
      c2 += wdy;
      dg[c] += (double)dr[c] * xhat;
      db[c] += dr[c];
    }
    c1 /= (double)cols;
    c2 /= (double)cols;
    for (size_t c = 0; c < cols; c++) {
      double xhat = ((double)sr[c] - mean) * rstd, wdy = (double)gamma[c] * dr[c];
      dx[r * cols + c] = (float)(rstd * (wdy - xhat * c1 - c2));
    }
  }
  for (size_t c = 0; c < cols && dg && db; c++) dgamma[c] = (float)dg[c], dbeta[c] = (float)db[c];
  free(dg), free(db);
}

/* logsumexp of one row in double, after subtracting the maximum. */
static double row_lse(const float *x, size_t n) {
  double m = x[0], s = 0.0;
  for (size_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
  for (size_t i = 0; i < n; i++) s += exp((double)x[i] - m);
  return m + log(s);
}

void kiln_bert_ref_xent_fwd(const float *x, const int32_t *labels, float *loss, float *lse,
                            size_t rows, size_t classes, int32_t ignore_index) {
  for (size_t r = 0; r < rows; r++) {
    double l = row_lse(x + r * classes, classes);
    lse[r] = (float)l;
    loss[r] = labels[r] == ignore_index ? 0.0f : (float)(l - x[r * classes + (size_t)labels[r]]);
  }
}

void kiln_bert_ref_xent_bwd(const float *x, const int32_t *labels, const float *dloss, float *dx,
                            size_t rows, size_t classes, int32_t ignore_index) {
  for (size_t r = 0; r < rows; r++) {
    double l = row_lse(x + r * classes, classes);
    bool ignored = labels[r] == ignore_index;
    for (size_t c = 0; c < classes; c++) {
      double p = exp((double)x[r * classes + c] - l) - (c == (size_t)labels[r] ? 1.0 : 0.0);
      dx[r * classes + c] = ignored ? 0.0f : (float)(p * dloss[r]);
    }
  }
}
