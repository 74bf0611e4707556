/* test_attention.c — flash attention (kernels-bert/attention.kiln, generic over the element type
 * T) in f32, f16 and bf16: the forward with padding (keys past kv_len get no weight, queries
 * past it O = 0 and lse = 0: the reference's too) and saved log-sum-exp, and the
 * backward (delta; dK and dV; dQ), with and without dropout on the probabilities (the reference
 * draws the same Philox keep mask with kiln_ref_attn_keep). docs/kernels/attention.md gives the
 * tolerances' reasons. */
#include "harness.h"
#include "tests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { GAP_ROWS = 16, GAP_COLS = 4, GAP_COLS_WGMMA = 16, NFD = 6 };

/* The wgmma runs (sm_90 and emu; docs/gpu-lowering.md, "wgmma on sm_90"): the kernels
 * compiled with wgmma = 1 and the promises that let their operand loads be pipelined (the row
 * strides multiples of 16, O's and dO's too: their gap is GAP_COLS_WGMMA columns), so that the
 * forward's S = Q K^T and O += P V read K and V through descriptors and Q and P from registers
 * (the RS form), and the backward's dots read Q, dO, K and V so, each of Q and dO (dK/dV) and K
 * (dQ) from one ring that two dots read, through a trans view and as it is; NULL for every
 * other run. */
static const KilnCompileOptions *g_wgmma;

typedef struct AttnCfg {
  int32_t B, H, S, D, bm, bn;
  int32_t kv_len[2];
  KilnScalarKind t; /* the kernels' T: Q, K, V, O, dO and the gradients are T */
  bool bwd, fd;     /* fd: finite differences too (f32 only) */
  float drop;       /* dropout probability on P; 0 runs the DROPOUT = 0 kernels */
  int32_t seed, offset;
} AttnCfg;

/* Shapes and strides of one configuration: Q, K, V and their gradients dense [B, S, H, D];
 * O and dO [B, H, S + GAP_ROWS, D + GAP_COLS] (GAP_COLS_WGMMA on the wgmma runs), so a store
 * past S rows or D columns lands in a sentinel gap; lse and delta dense [B, H, S]. */
typedef struct Layout {
  size_t B, H, S, D, n_qkv, n_o, n_rows;
  int32_t sb, sh, ss, osb, osh, oss;
} Layout;

static Layout layout_of(const AttnCfg *c) {
  Layout l;
  l.B = (size_t)c->B, l.H = (size_t)c->H, l.S = (size_t)c->S, l.D = (size_t)c->D;
  l.n_qkv = l.B * l.S * l.H * l.D;
  l.oss = c->D + (g_wgmma ? GAP_COLS_WGMMA : GAP_COLS);
  l.osh = (c->S + GAP_ROWS) * l.oss, l.osb = c->H * l.osh;
  l.n_o = l.B * (size_t)l.osb;
  l.ss = c->H * c->D, l.sh = c->D, l.sb = c->S * l.ss;
  l.n_rows = l.B * l.H * l.S;
  return l;
}

static size_t qi(const Layout *l, size_t b, size_t h, size_t s, size_t d) {
  return b * (size_t)l->sb + h * (size_t)l->sh + s * (size_t)l->ss + d;
}
static size_t oi(const Layout *l, size_t b, size_t h, size_t s, size_t d) {
  return b * (size_t)l->osb + h * (size_t)l->osh + s * (size_t)l->oss + d;
}

/* Whether the kernels keep P[i, j] of head (b, h): the C mirror of their keep_mask, 16 elements
 * (queries i, i + 1, i + 8, i + 9 by keys j, j + 1, j + 8, j + 9) per Philox block, a byte each
 * (kiln_ref_attn_keep). */
static bool ref_keep(const AttnCfg *c, const Layout *l, size_t b, size_t h, size_t i, size_t j) {
  if (c->drop <= 0.0f) return true;
  return kiln_ref_attn_keep(c->seed, c->offset, (uint32_t)(b * l->H + h), (uint32_t)l->S,
                            (uint32_t)i, (uint32_t)j, c->drop);
}

/* What the f16/bf16 kernels' error can be at each output element, the bound the reference
 * returns with each result (docs/kernels/attention.md, "Tolerances of f16 and bf16 results"):
 * u is T's unit roundoff (half an ulp relative: 2^-11 f16, 2^-8 bf16); g covers an f32 sum of
 * at most S + D terms, (S + D) 2^-24 relative to the sum of the terms' magnitudes; tiny is the
 * absolute error of a value rounded to T below T's normal range. */
typedef struct ErrModel {
  double u, g, tiny;
} ErrModel;

/* Bounds of one (b, h), in the layouts of o and of the gradients; NULL when not wanted. */
typedef struct RefBounds {
  float *o, *dq, *dk, *dv;
} RefBounds;

/* The reference in double: O, lse, and (when dout is given) dQ, dK, dV, for one (b, h). With
 * dropout, O = Pd V where Pd = P keep c, and the gradient reaching P is dPd keep c, c the
 * kernels' keep scale (1 / (1 - p) for p on a multiple of 1 / 256); lse is the undropped softmax's. Each result's bound (em) goes into bd's
 * arrays that are not NULL. */
static void ref_head(const AttnCfg *c, const Layout *l, size_t b, size_t h, const float *q,
                     const float *k, const float *v, const float *dout, float *o, float *lse,
                     float *dq, float *dk, float *dv, const ErrModel *em, const RefBounds *bd) {
  size_t S = l->S, D = l->D, L = (size_t)c->kv_len[b];
  double scale = 1.0 / sqrt((double)D);
  double *p = kiln_bert_alloc(S, sizeof(double)), *dp = kiln_bert_alloc(S, sizeof(double));
  double *dkk = kiln_bert_alloc(S * D, sizeof(double)),
         *dvv = kiln_bert_alloc(S * D, sizeof(double));
  double *z = kiln_bert_alloc(S, sizeof(double)); /* keep c, or 0 */
  /* For the bounds: dP's f32 error per key, the bounds' sums over the terms of dK and dV (per
   * key), of O (per query), and each P term's relative error f. */
  double *dpe = kiln_bert_alloc(S, sizeof(double));
  double *mdk = kiln_bert_alloc(S * D, sizeof(double)),
         *mdv = kiln_bert_alloc(S * D, sizeof(double));
  double *mo = kiln_bert_alloc(D, sizeof(double)), *f = kiln_bert_alloc(S, sizeof(double));
  for (size_t i = 0; i < S; i++) {
    if (i >= L) {
      /* a padding query attends to nothing: O, lse and dQ are 0 (exactly: the bounds are the
       * subnormal floor, em->tiny), and it adds nothing to dK and dV */
      lse[(b * l->H + h) * S + i] = 0.0f;
      for (size_t d = 0; d < D; d++) {
        o[oi(l, b, h, i, d)] = 0.0f;
        if (bd->o) bd->o[oi(l, b, h, i, d)] = (float)em->tiny;
        if (!dout) continue;
        dq[qi(l, b, h, i, d)] = 0.0f;
        if (bd->dq) bd->dq[qi(l, b, h, i, d)] = (float)em->tiny;
      }
      continue;
    }
    for (size_t j = 0; j < L; j++)
      z[j] = ref_keep(c, l, b, h, i, j) ? (double)kiln_ref_attn_keep_scale(c->drop) : 0.0;
    double m = -INFINITY, sum = 0.0, sa_max = 0.0;
    for (size_t j = 0; j < L; j++) {
      double s = 0.0, sa = 0.0;
      for (size_t d = 0; d < D; d++) {
        s += (double)q[qi(l, b, h, i, d)] * k[qi(l, b, h, j, d)];
        sa += fabs((double)q[qi(l, b, h, i, d)] * k[qi(l, b, h, j, d)]);
      }
      f[j] = sa * scale * (double)D * 0x1p-24; /* the f32 score's error: D terms, exact products */
      sa_max = fmax(sa_max, f[j]);
      p[j] = s * scale;
      m = fmax(m, p[j]);
    }
    /* A product term with P (or dS) j is off by u (its rounding to T), g (f32 sums of it), and
     * the error of exp(s_j - lse): s_j's, lse's (at most the largest score error) and exp's
     * (4 f32 ulps). */
    for (size_t j = 0; j < L; j++) f[j] = em->u + em->g + f[j] + sa_max + 4 * 0x1p-24;
    for (size_t j = 0; j < L; j++) sum += (p[j] = exp(p[j] - m));
    for (size_t j = 0; j < L; j++) p[j] /= sum;
    lse[(b * l->H + h) * S + i] = (float)(m + log(sum));
    /* O: P rounded to T per term (u of each |p z v|), f32 sums, O rounded to T (u |o|). */
    for (size_t d = 0; d < D; d++) {
      double acc = 0.0;
      mo[d] = 0.0;
      for (size_t j = 0; j < L; j++) {
        acc += p[j] * z[j] * v[qi(l, b, h, j, d)];
        mo[d] += f[j] * p[j] * z[j] * fabs((double)v[qi(l, b, h, j, d)]);
      }
      o[oi(l, b, h, i, d)] = (float)acc;
      mo[d] = em->u * fabs(acc) + mo[d] + em->tiny * (double)(L + 1);
      if (bd->o) bd->o[oi(l, b, h, i, d)] = (float)mo[d];
    }
    if (!dout) continue;
    /* delta = rowsum(dO o) from the kernel's o, itself within mo of the exact one. */
    double delta_err = 0.0;
    for (size_t d = 0; d < D; d++) delta_err += fabs((double)dout[oi(l, b, h, i, d)]) * mo[d];
    double delta = 0.0;
    for (size_t j = 0; j < L; j++) {
      dp[j] = 0.0;
      double dpa = 0.0; /* dP's f32 error: g times the sum of its terms' magnitudes */
      for (size_t d = 0; d < D; d++) {
        dp[j] += (double)dout[oi(l, b, h, i, d)] * v[qi(l, b, h, j, d)];
        dpa += fabs((double)dout[oi(l, b, h, i, d)] * v[qi(l, b, h, j, d)]);
      }
      dp[j] *= z[j];
      dpe[j] = em->g * z[j] * dpa;
      delta += p[j] * dp[j];
    }
    /* dS = P (dP - delta) rounded to T per term of dQ and dK, plus P times delta's error; P z
     * rounded to T per term of dV; each result rounded to T. */
    for (size_t d = 0; d < D; d++) {
      double acc = 0.0, mq = 0.0;
      for (size_t j = 0; j < L; j++) {
        double ds = p[j] * (dp[j] - delta), qd = q[qi(l, b, h, i, d)], kd = k[qi(l, b, h, j, d)];
        double dsm = f[j] * fabs(ds) + p[j] * (delta_err + dpe[j]), od = dout[oi(l, b, h, i, d)];
        acc += ds * kd;
        mq += dsm * fabs(kd);
        dkk[j * D + d] += scale * ds * qd;
        mdk[j * D + d] += scale * dsm * fabs(qd);
        dvv[j * D + d] += p[j] * z[j] * od;
        mdv[j * D + d] += f[j] * p[j] * z[j] * fabs(od);
      }
      dq[qi(l, b, h, i, d)] = (float)(scale * acc);
      if (bd->dq)
        bd->dq[qi(l, b, h, i, d)] =
            (float)(em->u * fabs(scale * acc) + scale * mq + em->tiny * (double)(L + 1));
    }
  }
  for (size_t j = 0; j < S && dout; j++)
    for (size_t d = 0; d < D; d++) {
      size_t e = qi(l, b, h, j, d);
      dk[e] = (float)dkk[j * D + d], dv[e] = (float)dvv[j * D + d];
      if (bd->dk)
        bd->dk[e] =
            (float)(em->u * fabs(dkk[j * D + d]) + mdk[j * D + d] + em->tiny * (double)(S + 1));
      if (bd->dv)
        bd->dv[e] =
            (float)(em->u * fabs(dvv[j * D + d]) + mdv[j * D + d] + em->tiny * (double)(S + 1));
    }
  free(p), free(dp), free(dkk), free(dvv), free(z), free(mdk), free(mdv), free(mo), free(f),
      free(dpe);
}

/* The O entries (inside the gaps) of a buffer of element type t gathered densely, as f32. */
static float *gather_o(const Layout *l, const void *raw, KilnScalarKind t) {
  float *out = kiln_bert_alloc(l->n_rows * l->D, 4);
  size_t r = 0;
  for (size_t b = 0; b < l->B; b++)
    for (size_t h = 0; h < l->H; h++)
      for (size_t s = 0; s < l->S; s++, r++)
        for (size_t d = 0; d < l->D; d++) {
          size_t i = oi(l, b, h, s, d);
          out[r * l->D + d] = kiln_bert_elem_get(raw, i, t);
        }
  return out;
}

/* O's sentinels: everything outside the S x D block of each head. */
static void check_o_gaps(KilnBertRun *run, const Layout *l, const void *raw, size_t esz) {
  if (!run->ok) return;
  const unsigned char *bytes = raw;
  size_t bad = 0;
  for (size_t i = 0; i < l->n_o + KILN_BERT_TAIL; i++) {
    size_t in_head = i % (size_t)l->osh, row = in_head / (size_t)l->oss,
           col = in_head % (size_t)l->oss;
    if (i < l->n_o && row < l->S && col < l->D) continue;
    for (size_t k = 0; k < esz; k++)
      if (bytes[i * esz + k] != KILN_BERT_SENTINEL) {
        bad++;
        break;
      }
  }
  if (bad) kiln_bert_fail(run, "o: %zu element(s) outside the result were written", bad);
}

typedef struct AttnDev {
  KilnRtFunction *fwd;
  void *q, *k, *v, *o, *lse, *kvl;
  int32_t S, H, sb, sh, ss, osb, osh, oss;
  float scale, p_drop;
  int32_t seed, offset;
  uint32_t grid[2];
} AttnDev;

static void launch_fwd(KilnBertRun *run, AttnDev *a) {
  void *args[] = {&a->q,   &a->k,   &a->v,     &a->o,      &a->lse,  &a->kvl,
                  &a->S,   &a->H,   &a->sb,    &a->sh,     &a->ss,   &a->osb,
                  &a->osh, &a->oss, &a->scale, &a->p_drop, &a->seed, &a->offset};
  kiln_bert_launch(run, a->fwd, a->grid[0], a->grid[1], args);
}

/* Central differences of L = sum dO * O through the forward kernel at nfd (<= NFD) elements each
 * of Q, K and V; for K and V the last one sits at a padded key position (gradient 0) when the
 * batch it falls in is padded. */
static void check_fd(KilnBertRun *run, AttnDev *a, const AttnCfg *c, const Layout *l,
                     float *host[3], const float *dout, float *grads[3], int nfd, KilnRefRng *rng) {
  const float h = 1e-2f;
  float fd[3 * NFD], an[3 * NFD];
  float *o = kiln_bert_alloc(l->n_o, 4);
  void *dbuf[3] = {a->q, a->k, a->v};
  for (int t = 0; t < 3 && run->ok; t++)
    for (int e = 0; e < nfd; e++) {
      size_t b = (size_t)e % l->B, hh = kiln_ref_rng_next(rng) % l->H,
             d = kiln_ref_rng_next(rng) % l->D;
      size_t L = (size_t)c->kv_len[b];
      size_t s = kiln_ref_rng_next(rng) % (t == 0 ? l->S : L);
      if (t > 0 && e == nfd - 1 && L < l->S) s = L; /* a padding key */
      size_t i = qi(l, b, hh, s, d);
      float keep = host[t][i];
      double loss[2];
      for (int sgn = 0; sgn < 2; sgn++) {
        host[t][i] = sgn == 0 ? keep + h : keep - h;
        kiln_bert_upload(run, dbuf[t], host[t], l->n_qkv * 4);
        launch_fwd(run, a);
        kiln_bert_fetch(run, o, a->o, l->n_o * 4);
        float *g = gather_o(l, o, KILN_SCALAR_F32), *w = gather_o(l, dout, KILN_SCALAR_F32);
        loss[sgn] = 0.0;
        for (size_t r = 0; r < l->n_rows * l->D; r++) loss[sgn] += (double)w[r] * g[r];
        free(g), free(w);
      }
      host[t][i] = keep;
      kiln_bert_upload(run, dbuf[t], host[t], l->n_qkv * 4);
      fd[t * nfd + e] = (float)((loss[0] - loss[1]) / ((double)(keep + h) - (double)(keep - h)));
      an[t * nfd + e] = grads[t][i];
    }
  kiln_bert_check_close(run, "grads vs fd", an, fd, (size_t)(3 * nfd), 1e-1, 2e-3);
  free(o);
}

/* The kernel of one run: defs, with wgmma = 1 on the wgmma runs. */
static KilnRtFunction *attn_kernel(KilnBertRun *run, const char *kernel, const KilnDefine *defs,
                                   size_t n) {
  KilnDefine all[8];
  for (size_t i = 0; i < n; i++) all[i] = defs[i];
  run->d.extra = NULL;
  if (g_wgmma && strcmp(kernel, "attn_bwd_delta") != 0) { /* delta has no dot */
    all[n++] = (KilnDefine){"wgmma", 1};
    run->d.extra = g_wgmma;
  }
  return kiln_bert_kernel(run, "attention", kernel, all, n);
}

/* f32 results: 1e-5 relative, floor 1 (f32 sums of at most S + D terms, no rounding to a
 * narrower type). f16 / bf16 results: each element within the bound ref_head derives for it
 * (docs/kernels/attention.md). */
static const double TOL_F32 = 1e-5;

static ErrModel err_model(KilnScalarKind t, size_t S, size_t D) {
  ErrModel em = {0.0, (double)(S + D) * 0x1p-24, 0.0};
  if (t == KILN_SCALAR_F16)
    em.u = 0x1p-11, em.tiny = 0x1p-25; /* below 2^-14 f16 is subnormal: steps of 2^-24 */
  else if (t == KILN_SCALAR_BF16)
    em.u = 0x1p-8, em.tiny = 0x1p-134;
  return em;
}

static void check_result(KilnBertRun *run, KilnScalarKind t, const char *what, const float *got,
                         const float *ref, const float *bound, size_t n) {
  if (t == KILN_SCALAR_F32)
    kiln_bert_check_close(run, what, got, ref, n, 1.0, TOL_F32);
  else
    kiln_test_check_bound(run, what, got, ref, bound, n);
}

/* The backward: delta, then dK and dV (one program per key block), then dQ (one program per
 * query block), each gradient checked against the reference; finite differences when asked. */
static void run_bwd(KilnBertRun *run, const KilnBertDevice *dev, AttnDev *a, const AttnCfg *c,
                    const Layout *l, float *host[3], const float *dout, float *rg[3], float *bg[3],
                    KilnRefRng *rng) {
  KilnDefine defs[] = {
      {"T", c->t}, {"BM", c->bm}, {"BN", c->bn}, {"D", c->D}, {"DROPOUT", c->drop > 0.0f}};
  KilnDefine ddefs[] = {{"T", c->t}, {"BM", c->bm}, {"D", c->D}};
  KilnRtFunction *fdelta = attn_kernel(run, "attn_bwd_delta", ddefs, 3);
  KilnRtFunction *fdkdv = attn_kernel(run, "attn_bwd_dkdv", defs, 5);
  KilnRtFunction *fdq = attn_kernel(run, "attn_bwd_dq", defs, 5);
  size_t esz = kiln_bert_elem_size(c->t);
  void *ddo = kiln_bert_input_t(run, dout, l->n_o, c->t);
  void *ddelta = kiln_bert_output(run, (l->n_rows + KILN_BERT_TAIL) * 4);
  void *dg[3];
  for (int t = 0; t < 3; t++) dg[t] = kiln_bert_output(run, (l->n_qkv + KILN_BERT_TAIL) * esz);
  void *a1[] = {&a->o, &ddo, &ddelta, &a->S, &a->H, &a->osb, &a->osh, &a->oss};
  kiln_bert_launch(run, fdelta, a->grid[0], a->grid[1], a1);
  void *a2[] = {&a->q,   &a->k,   &a->v,   &ddo,      &a->lse,    &ddelta,  &a->kvl,
                &dg[1],  &dg[2],  &a->S,   &a->H,     &a->sb,     &a->sh,   &a->ss,
                &a->osb, &a->osh, &a->oss, &a->scale, &a->p_drop, &a->seed, &a->offset};
  kiln_bert_launch(run, fdkdv, kiln_bert_cdiv(l->S, (size_t)c->bn), a->grid[1], a2);
  void *a3[] = {&a->q,   &a->k,   &a->v,     &ddo,       &a->lse,  &ddelta,   &a->kvl,
                &dg[0],  &a->S,   &a->H,     &a->sb,     &a->sh,   &a->ss,    &a->osb,
                &a->osh, &a->oss, &a->scale, &a->p_drop, &a->seed, &a->offset};
  kiln_bert_launch(run, fdq, a->grid[0], a->grid[1], a3);
  static const char *names[3] = {"dq", "dk", "dv"};
  float *grads[3];
  for (int t = 0; t < 3; t++) {
    grads[t] = kiln_bert_fetch_t(run, names[t], dg[t], l->n_qkv, c->t);
    check_result(run, c->t, names[t], grads[t], rg[t], bg[t], l->n_qkv);
  }
  /* Two forward launches per element, each ~1 s on emu at these shapes: two elements per
   * tensor there (the second in the padded sequence). */
  if (c->fd && run->ok)
    check_fd(run, a, c, l, host, dout, grads, kiln_bert_on_emu(dev) ? 2 : NFD, rng);
  for (int t = 0; t < 3; t++) free(grads[t]);
}

static bool run_cfg(const KilnBertDevice *dev, const AttnCfg *c, uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "%s B%d H%d S%d D%d kv_len %d,%d tiles %dx%d%s dropout %g%s",
                  kiln_bert_type_name(c->t), c->B, c->H, c->S, c->D, c->kv_len[0],
                  c->B > 1 ? c->kv_len[1] : c->kv_len[0], c->bm, c->bn, c->bwd ? " fwd+bwd" : "",
                  (double)c->drop, g_wgmma ? " wgmma" : "");
  Layout l = layout_of(c);
  KilnDefine defs[] = {
      {"T", c->t}, {"BM", c->bm}, {"BN", c->bn}, {"D", c->D}, {"DROPOUT", c->drop > 0.0f}};
  AttnDev a = {0};
  a.fwd = attn_kernel(&run, "attn_fwd", defs, 5);
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  /* Q in [-2, 2): scores up to ~|q||k| scale, probabilities spread over a few decades. */
  float *host[3] = {kiln_bert_random_t(&rng, l.n_qkv, -2.0f, 2.0f, c->t),
                    kiln_bert_random_t(&rng, l.n_qkv, -2.0f, 2.0f, c->t),
                    kiln_bert_random_t(&rng, l.n_qkv, -1.0f, 1.0f, c->t)};
  float *dout = kiln_bert_random_t(&rng, l.n_o, -1.0f, 1.0f, c->t);
  size_t esz = kiln_bert_elem_size(c->t);
  void *dv3[3];
  for (int t = 0; t < 3; t++) dv3[t] = kiln_bert_input_t(&run, host[t], l.n_qkv, c->t);
  a.q = dv3[0], a.k = dv3[1], a.v = dv3[2];
  a.o = kiln_bert_output(&run, (l.n_o + KILN_BERT_TAIL) * esz);
  a.lse = kiln_bert_output(&run, (l.n_rows + KILN_BERT_TAIL) * 4);
  a.kvl = kiln_bert_input(&run, c->kv_len, l.B * 4);
  a.S = c->S, a.H = c->H, a.sb = l.sb, a.sh = l.sh, a.ss = l.ss, a.osb = l.osb, a.osh = l.osh,
  a.oss = l.oss;
  a.scale = (float)(1.0 / sqrt((double)c->D));
  a.p_drop = c->drop, a.seed = c->seed, a.offset = c->offset;
  a.grid[0] = kiln_bert_cdiv(l.S, (size_t)c->bm), a.grid[1] = (uint32_t)(l.B * l.H);
  launch_fwd(&run, &a);
  unsigned char *oraw = kiln_bert_alloc(l.n_o + KILN_BERT_TAIL, esz);
  float *lse = kiln_bert_alloc(l.n_rows + KILN_BERT_TAIL, 4);
  kiln_bert_fetch(&run, oraw, a.o, (l.n_o + KILN_BERT_TAIL) * esz);
  kiln_bert_fetch(&run, lse, a.lse, (l.n_rows + KILN_BERT_TAIL) * 4);
  check_o_gaps(&run, &l, oraw, esz);
  kiln_bert_check_untouched(&run, "lse", lse, 4, l.n_rows + KILN_BERT_TAIL, 1, l.n_rows,
                            l.n_rows + KILN_BERT_TAIL);

  float *ro = kiln_bert_alloc(l.n_o, 4), *rlse = kiln_bert_alloc(l.n_rows, 4);
  float *rg[3] = {kiln_bert_alloc(l.n_qkv, 4), kiln_bert_alloc(l.n_qkv, 4),
                  kiln_bert_alloc(l.n_qkv, 4)};
  float *bg[3] = {kiln_bert_alloc(l.n_qkv, 4), kiln_bert_alloc(l.n_qkv, 4),
                  kiln_bert_alloc(l.n_qkv, 4)};
  float *bo = kiln_bert_alloc(l.n_o, 4);
  ErrModel em = err_model(c->t, l.S, l.D);
  RefBounds bd = {bo, bg[0], bg[1], bg[2]};
  for (size_t b = 0; b < l.B; b++)
    for (size_t h = 0; h < l.H; h++)
      ref_head(c, &l, b, h, host[0], host[1], host[2], c->bwd ? dout : NULL, ro, rlse, rg[0], rg[1],
               rg[2], &em, &bd);
  float *got_o = gather_o(&l, oraw, c->t), *want_o = gather_o(&l, ro, KILN_SCALAR_F32);
  float *bound_o = gather_o(&l, bo, KILN_SCALAR_F32);
  check_result(&run, c->t, "o", got_o, want_o, bound_o, l.n_rows * l.D);
  kiln_bert_check_close(&run, "lse", lse, rlse, l.n_rows, 1.0, 1e-5);
  if (c->bwd && run.ok) run_bwd(&run, dev, &a, c, &l, host, dout, rg, bg, &rng);
  for (int t = 0; t < 3; t++) free(host[t]), free(rg[t]), free(bg[t]);
  free(dout), free(oraw), free(lse), free(ro), free(rlse), free(got_o), free(want_o), free(bo),
      free(bound_o);
  return kiln_bert_end(&run);
}

bool kiln_bert_test_attention(const KilnBertDevice *dev) {
  static const AttnCfg cpu[] = {
      {2,
       2,
       37,
       32,
       16,
       16,
       {37, 20},
       KILN_SCALAR_F32,
       true,
       true,
       0,
       0,
       0}, /* ragged S, a padded sequence; FD */
      {1,
       3,
       16,
       64,
       8,
       8,
       {9, 0},
       KILN_SCALAR_F32,
       false,
       false,
       0,
       0,
       0}, /* head dim 64, exact tiles, 7 padding keys */
      {2,
       2,
       37,
       32,
       16,
       16,
       {37, 20},
       KILN_SCALAR_F16,
       true,
       false,
       0,
       0,
       0}, /* f16 data, f32 accumulation */
      {2,
       2,
       37,
       32,
       16,
       16,
       {37, 20},
       KILN_SCALAR_BF16,
       true,
       false,
       0,
       0,
       0}, /* bf16 data, f32 accumulation */
      {1, 1, 24, 128, 16, 16, {19, 0}, KILN_SCALAR_F16, true, false, 0, 0, 0}, /* head dim 128 */
      {2,
       1,
       512,
       64,
       32,
       32,
       {512, 300},
       KILN_SCALAR_F16,
       true,
       false,
       0,
       0,
       0}, /* BERT's length, padded */
      /* dropout on P: the keep mask regenerated by every kernel; FD through the fixed mask */
      {2, 2, 37, 32, 16, 16, {37, 20}, KILN_SCALAR_F32, true, true, 0.1f, 42, 7},
      {2, 2, 37, 32, 16, 16, {37, 20}, KILN_SCALAR_F16, true, false, 0.5f, -3, 1000},
      {2, 2, 37, 32, 16, 16, {37, 20}, KILN_SCALAR_BF16, true, false, 0.1f, 5, 0},
      {1, 2, 16, 64, 8, 8, {11, 0}, KILN_SCALAR_F32, true, false, 0.9f, 2147483647, 123456},
  };
  /* The emulator runs a 16x16-tile forward program in ~0.1 s: one head and 21 rows (a full tile
   * and a ragged one) instead of two and 37, plus tiles the tuner picks on a GPU. */
  static const AttnCfg emu[] = {
      {2,
       1,
       21,
       32,
       16,
       16,
       {21, 9},
       KILN_SCALAR_F32,
       true,
       true,
       0,
       0,
       0}, /* ragged S, a padded sequence; FD */
      {1,
       3,
       16,
       64,
       8,
       8,
       {9, 0},
       KILN_SCALAR_F32,
       false,
       false,
       0,
       0,
       0}, /* head dim 64, exact tiles, 7 padding keys */
      {2,
       1,
       21,
       32,
       16,
       16,
       {21, 9},
       KILN_SCALAR_F16,
       true,
       false,
       0,
       0,
       0}, /* f16 data, f32 accumulation */
      {2,
       1,
       21,
       32,
       16,
       16,
       {21, 9},
       KILN_SCALAR_BF16,
       true,
       false,
       0,
       0,
       0}, /* bf16 data (bf16 mma) */
      {1,
       1,
       77,
       64,
       64,
       64,
       {70, 0},
       KILN_SCALAR_F16,
       true,
       false,
       0,
       0,
       0}, /* f16 64x64 tiles (tensor cores, FA2 layouts), ragged, 7 padding keys; backward */
      {1,
       1,
       45,
       64,
       32,
       32,
       {40, 0},
       KILN_SCALAR_F32,
       true,
       false,
       0,
       0,
       0}, /* f32 32x32 tiles, backward */
      /* dropout on P (the cpu cases' first and second shapes, smaller) */
      {2, 1, 21, 32, 16, 16, {21, 9}, KILN_SCALAR_F32, true, true, 0.1f, 42, 7},
      {2, 1, 21, 32, 16, 16, {21, 9}, KILN_SCALAR_F16, true, false, 0.5f, -3, 1000},
      /* dropout on the tensor cores' layout: each thread's rows r and r + 8 and column pairs of
       * n8 tiles 8 apart (queries and keys forward and in dQ, keys and queries in dK/dV) share
       * Philox blocks (S = 77: 5 groups of 16 queries and of 16 keys, the last with 3 outside;
       * offset 6 is taken as 4) */
      {1, 1, 77, 64, 64, 64, {70, 0}, KILN_SCALAR_F16, true, false, 0.1f, 9, 6},
  };
  bool on_emu = kiln_bert_on_emu(dev);
  const AttnCfg *cfgs = on_emu ? emu : cpu;
  size_t n = on_emu ? KILN_BERT_COUNT(emu) : KILN_BERT_COUNT(cpu);
  bool ok = true;
  for (size_t i = 0; i < n; i++) ok &= run_cfg(dev, &cfgs[i], 8000 + i);
  if (on_emu) {
    /* wgmma at the FA2 tile (64x64 on 4 warps: the presets fa2_wgmma and bwd_wgmma), forward
     * and backward, f16 and bf16, with and without dropout: S a multiple of 16 (the promise),
     * padded keys, last blocks of 32 and 16 rows (S = 96, 80); and the narrow tiles of 32
     * queries (dK/dV on wgmma, its P^T and dP^T m64n32) and of 32 keys (the forward and dQ on
     * wgmma, S and dP m64n32; bwd_wgmma_narrow) */
    static const KilnDefine mult[] = {{"S", 16},   {"sb", 16},  {"sh", 16}, {"ss", 16},
                                      {"osb", 16}, {"osh", 16}, {"oss", 16}};
    static const KilnCompileOptions promises = {.multiple_of = mult, .num_multiple_of = 7};
    static const AttnCfg wg[] = {
        {2, 1, 128, 64, 64, 64, {100, 128}, KILN_SCALAR_F16, true, false, 0, 0, 0},
        {1, 2, 96, 64, 64, 64, {70, 0}, KILN_SCALAR_BF16, true, false, 0.1f, 5, 8},
        {2, 2, 80, 64, 64, 64, {80, 33}, KILN_SCALAR_F16, true, false, 0.2f, 11, 16},
        {2, 1, 96, 64, 32, 64, {96, 41}, KILN_SCALAR_F16, true, false, 0.1f, 3, 0},
        {1, 2, 80, 64, 64, 32, {57, 0}, KILN_SCALAR_BF16, true, false, 0, 0, 0},
    };
    g_wgmma = &promises;
    for (size_t i = 0; i < KILN_BERT_COUNT(wg); i++) ok &= run_cfg(dev, &wg[i], 8100 + i);
    g_wgmma = NULL;
  }
  return ok;
}
