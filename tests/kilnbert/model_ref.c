/* model_ref.c — the double-precision reference of one BERT training step (model_ref.h): the
 * forward of the contract's section 4 with every intermediate kept, then the backward by the
 * chain rule, layer by layer, in the plainest loops; AdamW of section 5. Slow and obvious on
 * purpose: only the test's tiny model runs through it. */
#include "model_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double *dalloc(size_t n) {
  double *p = calloc(n ? n : 1, sizeof *p);
  if (!p) abort();
  return p;
}

static size_t off(const KilnBertParams *l, const char *fmt, int layer) {
  char name[160];
  snprintf(name, sizeof name, fmt, layer);
  const KilnBertParam *p = kiln_bert_params_find(l, name);
  if (!p) abort();
  return p->offset;
}

/* y[M][N] = x[M][K] W^T + b, W [N][K]. */
static void lin(const double *x, const double *w, const double *b, double *y, int M, int N, int K) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = b ? b[j] : 0;
      for (int k = 0; k < K; k++) s += x[i * K + k] * w[j * K + k];
      y[i * N + j] = s;
    }
}

/* dx[M][K] += dy W; dW = dy^T x; db = column sums of dy (dW, db overwritten). */
static void lin_bwd(const double *x, const double *w, const double *dy, double *dx, double *dw,
                    double *db, int M, int N, int K) {
  for (int j = 0; j < N; j++) {
    double sb = 0;
    for (int i = 0; i < M; i++) sb += dy[i * N + j];
    if (db) db[j] = sb;
    for (int k = 0; k < K; k++) {
      double s = 0;
      for (int i = 0; i < M; i++) s += dy[i * N + j] * x[i * K + k];
      dw[j * K + k] = s;
    }
  }
  if (dx)
    for (int i = 0; i < M; i++)
      for (int k = 0; k < K; k++) {
        double s = 0;
        for (int j = 0; j < N; j++) s += dy[i * N + j] * w[j * K + k];
        dx[i * K + k] += s;
      }
}

/* y = LayerNorm(s) over rows of H; keeps xhat and rstd. */
static void ln(const double *s, const double *g, const double *b, double eps, double *y,
               double *xhat, double *rstd, int M, int H) {
  for (int i = 0; i < M; i++) {
    double mu = 0, var = 0;
    for (int h = 0; h < H; h++) mu += s[i * H + h];
    mu /= H;
    for (int h = 0; h < H; h++) var += (s[i * H + h] - mu) * (s[i * H + h] - mu);
    var /= H;
    rstd[i] = 1 / sqrt(var + eps);
    for (int h = 0; h < H; h++) {
      xhat[i * H + h] = (s[i * H + h] - mu) * rstd[i];
      y[i * H + h] = xhat[i * H + h] * g[h] + b[h];
    }
  }
}

/* ds = LayerNorm backward of dy (overwritten); dg, db overwritten. */
static void ln_bwd(const double *xhat, const double *rstd, const double *g, const double *dy,
                   double *ds, double *dg, double *db, int M, int H) {
  for (int h = 0; h < H; h++) dg[h] = db[h] = 0;
  for (int i = 0; i < M; i++) {
    double m1 = 0, m2 = 0;
    for (int h = 0; h < H; h++) {
      double d = dy[i * H + h] * g[h];
      m1 += d;
      m2 += d * xhat[i * H + h];
      dg[h] += dy[i * H + h] * xhat[i * H + h];
      db[h] += dy[i * H + h];
    }
    m1 /= H;
    m2 /= H;
    for (int h = 0; h < H; h++)
      ds[i * H + h] = rstd[i] * (dy[i * H + h] * g[h] - m1 - xhat[i * H + h] * m2);
  }
}

typedef struct RefLayer {
  double *x, *q, *k, *v, *prob, *ctx, *xhat1, *rstd1, *x1, *u, *hh, *xhat2, *rstd2;
} RefLayer;

/* The factor element i of a dropout site's tensor is multiplied by: 1 without dropout. */
static double zf(const ModelRefDropout *drop, KilnBertDropSite site, int layer, size_t i) {
  return drop ? drop->factor(drop->user, site, layer, i) : 1.0;
}

double model_ref_loss_grad(const KilnBertConfig *cfg, const KilnBertParams *lay, const double *p,
                           const int32_t *ids, const int32_t *lens, const int32_t *labels, int B,
                           int S, double *g) {
  return model_ref_loss_grad_drop(cfg, lay, p, ids, lens, labels, B, S, NULL, g);
}

double model_ref_loss_grad_drop(const KilnBertConfig *cfg, const KilnBertParams *lay,
                                const double *p, const int32_t *ids, const int32_t *lens,
                                const int32_t *labels, int B, int S, const ModelRefDropout *drop,
                                double *g) {
  int H = cfg->hidden_size, F = cfg->intermediate_size, NH = cfg->num_attention_heads;
  int D = H / NH, L = cfg->num_hidden_layers, NL = cfg->num_labels, n = B * S;
  double eps = cfg->layer_norm_eps, scale = 1 / sqrt((double)D);
  memset(g, 0, lay->total * sizeof *g);
  size_t word = off(lay, "bert.embeddings.word_embeddings.weight", 0);
  size_t pos = off(lay, "bert.embeddings.position_embeddings.weight", 0);
  size_t typ = off(lay, "bert.embeddings.token_type_embeddings.weight", 0);
  size_t eg = off(lay, "bert.embeddings.LayerNorm.weight", 0);
  size_t eb = off(lay, "bert.embeddings.LayerNorm.bias", 0);

  /* ---- forward ---- */
  double *e = dalloc((size_t)n * H), *exhat = dalloc((size_t)n * H), *erstd = dalloc(n);
  RefLayer *ly = calloc((size_t)L + 1, sizeof *ly);
  for (int l = 0; l <= L; l++) ly[l].x = dalloc((size_t)n * H);
  for (int t = 0; t < n; t++)
    for (int h = 0; h < H; h++)
      e[t * H + h] =
          p[word + (size_t)ids[t] * H + h] + p[pos + (size_t)(t % S) * H + h] + p[typ + h];
  ln(e, p + eg, p + eb, eps, ly[0].x, exhat, erstd, n, H);
  for (size_t i = 0; i < (size_t)n * H; i++)
    ly[0].x[i] *= zf(drop, KILN_BERT_DROP_EMBEDDINGS, -1, i);
  double *tmp = dalloc((size_t)n * F), *s = dalloc((size_t)n * H);
  for (int l = 0; l < L; l++) {
    RefLayer *a = &ly[l];
    a->q = dalloc((size_t)n * H);
    a->k = dalloc((size_t)n * H);
    a->v = dalloc((size_t)n * H);
    a->prob = dalloc((size_t)B * NH * S * S);
    a->ctx = dalloc((size_t)n * H);
    a->xhat1 = dalloc((size_t)n * H);
    a->rstd1 = dalloc(n);
    a->x1 = dalloc((size_t)n * H);
    a->u = dalloc((size_t)n * F);
    a->hh = dalloc((size_t)n * F);
    a->xhat2 = dalloc((size_t)n * H);
    a->rstd2 = dalloc(n);
    const char *pre = "bert.encoder.layer.%d.";
    char f[200];
#define O(name) (snprintf(f, sizeof f, "%s%s", pre, name), off(lay, f, l))
    lin(a->x, p + O("attention.self.query.weight"), p + O("attention.self.query.bias"), a->q, n, H,
        H);
    lin(a->x, p + O("attention.self.key.weight"), p + O("attention.self.key.bias"), a->k, n, H, H);
    lin(a->x, p + O("attention.self.value.weight"), p + O("attention.self.value.bias"), a->v, n, H,
        H);
    for (int b = 0; b < B; b++)
      for (int hd = 0; hd < NH; hd++)
        for (int i = 0; i < S; i++) {
          double *pr = a->prob + (((size_t)b * NH + hd) * S + i) * S, mx = -1e300, sum = 0;
          for (int j = 0; j < lens[b]; j++) {
            double d = 0;
            for (int c = 0; c < D; c++)
              d += a->q[(b * S + i) * H + hd * D + c] * a->k[(b * S + j) * H + hd * D + c];
            pr[j] = d * scale;
            if (pr[j] > mx) mx = pr[j];
          }
          for (int j = 0; j < lens[b]; j++) sum += (pr[j] = exp(pr[j] - mx));
          for (int j = 0; j < lens[b]; j++) pr[j] /= sum;
          size_t zrow = (((size_t)b * NH + hd) * S + i) * S;
          for (int c = 0; c < D; c++) {
            double o = 0;
            for (int j = 0; j < lens[b]; j++)
              o += pr[j] * zf(drop, KILN_BERT_DROP_ATTN_PROBS, l, zrow + j) *
                   a->v[(b * S + j) * H + hd * D + c];
            a->ctx[(b * S + i) * H + hd * D + c] = o;
          }
        }
    lin(a->ctx, p + O("attention.output.dense.weight"), p + O("attention.output.dense.bias"), s, n,
        H, H);
    for (int i = 0; i < n * H; i++)
      s[i] = s[i] * zf(drop, KILN_BERT_DROP_ATTN_OUT, l, (size_t)i) + a->x[i];
    ln(s, p + O("attention.output.LayerNorm.weight"), p + O("attention.output.LayerNorm.bias"), eps,
       a->x1, a->xhat1, a->rstd1, n, H);
    lin(a->x1, p + O("intermediate.dense.weight"), p + O("intermediate.dense.bias"), a->u, n, F, H);
    for (int i = 0; i < n * F; i++) a->hh[i] = 0.5 * a->u[i] * (1 + erf(a->u[i] / sqrt(2.0)));
    lin(a->hh, p + O("output.dense.weight"), p + O("output.dense.bias"), s, n, H, F);
    for (int i = 0; i < n * H; i++)
      s[i] = s[i] * zf(drop, KILN_BERT_DROP_FFN_OUT, l, (size_t)i) + a->x1[i];
    ln(s, p + O("output.LayerNorm.weight"), p + O("output.LayerNorm.bias"), eps, ly[l + 1].x,
       a->xhat2, a->rstd2, n, H);
  }
  size_t wp = off(lay, "bert.pooler.dense.weight", 0), bp = off(lay, "bert.pooler.dense.bias", 0);
  size_t wc = off(lay, "classifier.weight", 0), bc = off(lay, "classifier.bias", 0);
  double *cls = dalloc((size_t)B * H), *pooled = dalloc((size_t)B * H),
         *pdrop = dalloc((size_t)B * H);
  double *logits = dalloc((size_t)B * NL);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < H; h++) cls[b * H + h] = ly[L].x[(size_t)b * S * H + h];
  lin(cls, p + wp, p + bp, pooled, B, H, H);
  for (int i = 0; i < B * H; i++) pooled[i] = tanh(pooled[i]);
  for (int i = 0; i < B * H; i++)
    pdrop[i] = pooled[i] * zf(drop, KILN_BERT_DROP_POOLER, -1, (size_t)i);
  lin(pdrop, p + wc, p + bc, logits, B, NL, H);
  double loss = 0;
  double *dlogits = dalloc((size_t)B * NL);
  for (int b = 0; b < B; b++) {
    double mx = -1e300, sum = 0;
    for (int c = 0; c < NL; c++) mx = fmax(mx, logits[b * NL + c]);
    for (int c = 0; c < NL; c++) sum += exp(logits[b * NL + c] - mx);
    double lse = mx + log(sum);
    loss += lse - logits[b * NL + labels[b]];
    for (int c = 0; c < NL; c++)
      dlogits[b * NL + c] = (exp(logits[b * NL + c] - lse) - (c == labels[b])) / B;
  }
  loss /= B;

  /* ---- backward ---- */
  double *dpooled = dalloc((size_t)B * H), *dcls = dalloc((size_t)B * H);
  lin_bwd(pdrop, p + wc, dlogits, dpooled, g + wc, g + bc, B, NL, H);
  for (int i = 0; i < B * H; i++)
    dpooled[i] *= zf(drop, KILN_BERT_DROP_POOLER, -1, (size_t)i) * (1 - pooled[i] * pooled[i]);
  lin_bwd(cls, p + wp, dpooled, dcls, g + wp, g + bp, B, H, H);
  double *dx = dalloc((size_t)n * H), *ds = dalloc((size_t)n * H), *dx1 = dalloc((size_t)n * H);
  double *dh = dalloc((size_t)n * F), *dctx = dalloc((size_t)n * H);
  double *dq = dalloc((size_t)n * H), *dk = dalloc((size_t)n * H), *dv = dalloc((size_t)n * H);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < H; h++) dx[(size_t)b * S * H + h] = dcls[b * H + h];
  for (int l = L - 1; l >= 0; l--) {
    RefLayer *a = &ly[l];
    const char *pre = "bert.encoder.layer.%d.";
    char f[200];
    ln_bwd(a->xhat2, a->rstd2, p + O("output.LayerNorm.weight"), dx, ds,
           g + O("output.LayerNorm.weight"), g + O("output.LayerNorm.bias"), n, H);
    memcpy(dx1, ds, (size_t)n * H * sizeof *dx1);
    for (int i = 0; i < n * H; i++) ds[i] *= zf(drop, KILN_BERT_DROP_FFN_OUT, l, (size_t)i);
    memset(dh, 0, (size_t)n * F * sizeof *dh);
    lin_bwd(a->hh, p + O("output.dense.weight"), ds, dh, g + O("output.dense.weight"),
            g + O("output.dense.bias"), n, H, F);
    for (int i = 0; i < n * F; i++) {
      double uu = a->u[i];
      dh[i] *= 0.5 * (1 + erf(uu / sqrt(2.0))) + uu * exp(-0.5 * uu * uu) / 2.5066282746310002;
    }
    lin_bwd(a->x1, p + O("intermediate.dense.weight"), dh, dx1, g + O("intermediate.dense.weight"),
            g + O("intermediate.dense.bias"), n, F, H);
    ln_bwd(a->xhat1, a->rstd1, p + O("attention.output.LayerNorm.weight"), dx1, ds,
           g + O("attention.output.LayerNorm.weight"), g + O("attention.output.LayerNorm.bias"), n,
           H);
    memcpy(dx, ds, (size_t)n * H * sizeof *dx);
    for (int i = 0; i < n * H; i++) ds[i] *= zf(drop, KILN_BERT_DROP_ATTN_OUT, l, (size_t)i);
    memset(dctx, 0, (size_t)n * H * sizeof *dctx);
    lin_bwd(a->ctx, p + O("attention.output.dense.weight"), ds, dctx,
            g + O("attention.output.dense.weight"), g + O("attention.output.dense.bias"), n, H, H);
    memset(dq, 0, (size_t)n * H * sizeof *dq);
    memset(dk, 0, (size_t)n * H * sizeof *dk);
    memset(dv, 0, (size_t)n * H * sizeof *dv);
    for (int b = 0; b < B; b++)
      for (int hd = 0; hd < NH; hd++)
        for (int i = 0; i < S; i++) {
          const double *pr = a->prob + (((size_t)b * NH + hd) * S + i) * S;
          const double *go = dctx + (b * S + i) * H + hd * D;
          size_t zrow = (((size_t)b * NH + hd) * S + i) * S;
          double dp[512], z[512], dot = 0;
          for (int j = 0; j < lens[b]; j++) {
            z[j] = zf(drop, KILN_BERT_DROP_ATTN_PROBS, l, zrow + j);
            dp[j] = 0;
            for (int c = 0; c < D; c++) dp[j] += go[c] * a->v[(b * S + j) * H + hd * D + c];
            dp[j] *= z[j]; /* the gradient reaching the undropped probability */
            dot += pr[j] * dp[j];
          }
          for (int j = 0; j < lens[b]; j++) {
            double dsc = pr[j] * (dp[j] - dot) * scale;
            for (int c = 0; c < D; c++) {
              dv[(b * S + j) * H + hd * D + c] += pr[j] * z[j] * go[c];
              dq[(b * S + i) * H + hd * D + c] += dsc * a->k[(b * S + j) * H + hd * D + c];
              dk[(b * S + j) * H + hd * D + c] += dsc * a->q[(b * S + i) * H + hd * D + c];
            }
          }
        }
    lin_bwd(a->x, p + O("attention.self.query.weight"), dq, dx,
            g + O("attention.self.query.weight"), g + O("attention.self.query.bias"), n, H, H);
    lin_bwd(a->x, p + O("attention.self.key.weight"), dk, dx, g + O("attention.self.key.weight"),
            g + O("attention.self.key.bias"), n, H, H);
    lin_bwd(a->x, p + O("attention.self.value.weight"), dv, dx,
            g + O("attention.self.value.weight"), g + O("attention.self.value.bias"), n, H, H);
#undef O
  }
  for (size_t i = 0; i < (size_t)n * H; i++) dx[i] *= zf(drop, KILN_BERT_DROP_EMBEDDINGS, -1, i);
  ln_bwd(exhat, erstd, p + eg, dx, ds, g + eg, g + eb, n, H);
  for (int t = 0; t < n; t++)
    for (int h = 0; h < H; h++) {
      g[word + (size_t)ids[t] * H + h] += ds[t * H + h];
      g[pos + (size_t)(t % S) * H + h] += ds[t * H + h];
      g[typ + h] += ds[t * H + h];
    }

  for (int l = 0; l <= L; l++) {
    RefLayer *a = &ly[l];
    double *all[] = {a->x,     a->q,  a->k, a->v,  a->prob,  a->ctx,  a->xhat1,
                     a->rstd1, a->x1, a->u, a->hh, a->xhat2, a->rstd2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
  }
  double *rest[] = {e,       exhat, erstd, tmp, s,   cls, pooled, pdrop, logits, dlogits,
                    dpooled, dcls,  dx,    ds,  dx1, dh,  dctx,   dq,    dk,     dv};
  for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) free(rest[i]);
  free(ly);
  return loss;
}

double model_ref_adamw_first_step(const KilnBertParams *lay, double *p, const double *g, double lr,
                                  double beta1, double beta2, double eps, double wd, double clip) {
  double ss = 0;
  for (size_t i = 0; i < lay->total; i++) ss += g[i] * g[i];
  double norm = sqrt(ss), c = 1;
  if (clip > 0 && clip / (norm + 1e-6) < 1) c = clip / (norm + 1e-6);
  for (size_t k = 0; k < lay->n; k++) {
    const KilnBertParam *q = &lay->p[k];
    for (size_t i = q->offset; i < q->offset + q->numel; i++) {
      double gi = g[i] * c;
      if (q->decay) p[i] *= 1 - lr * wd;
      double m = (1 - beta1) * gi, v = (1 - beta2) * gi * gi;
      p[i] -= (lr / (1 - beta1)) * m / (sqrt(v) / sqrt(1 - beta2) + eps);
    }
  }
  return norm;
}
