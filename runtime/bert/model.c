/* model.c — BertForSequenceClassification's step on a libkilnrt device, every tensor operation
 * a kernel of kernels-bert/ called through the generated libraries (kb_* headers, built by
 * runtime/bert/CMakeLists.txt with `kiln lib`).
 *
 * How it works. Tokens are laid out batch-major, n = rows x cols of them, each activation a
 * dense [n, width] f32 matrix. Linear layers keep the reference's [out, in] weights and the gemm
 * reads them through strides (y = x W^T: B[k, j] = W[j, k]), as do the backward's transposed
 * products (dX = dY W, dW = dY^T X), so nothing is ever transposed in memory. Q, K and V are
 * three gemms into one [n, 3, heads, D] buffer that the flash attention reads in place; the
 * padding mask is each row's length (keys past it get no weight). The pooler reads token 0 of
 * every row through the row stride cols x hidden; its backward writes only those rows of the
 * incoming gradient, the rest being zero.
 *
 * The forward keeps what the backward needs, per layer: the layer input, QKV, the attention
 * output and its log-sum-exp, the two LayerNorm inputs (x + residual) with their mean and rstd,
 * the FFN's pre-activation and GELU output. Gradients go straight to their place in the flat
 * gradient buffer (weights and biases are used once per step, so they are written, not
 * accumulated; only the embedding tables, scattered into with atomics, are zeroed first).
 *
 * Everything is allocated in kiln_bert_model_create for the largest batch and sequence; the
 * forward, backward and step only launch kernels and copy the batch's few integers in. */
#include "bert_model.h"
#include "bert_internal.h"

#include "kb_adamw.h"
#include "kb_attn_d16_f32.h"
#include "kb_attn_d64_f32.h"
#include "kb_emb_f32.h"
#include "kb_gelu_f32.h"
#include "kb_gemm0_f32.h"
#include "kb_gemm1_f32.h"
#include "kb_gemm3_f32.h"
#include "kb_ln_f32.h"
#include "kb_tanh_f32.h"
#include "kb_xent_f32.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Programs of the first stage of the LayerNorm weight-gradient reduction (at most). */
#define LN_PARTS 64

/* Offsets (in floats) of one encoder layer's parameters, valid in the parameter, gradient and
 * moment buffers alike. */
typedef struct Layer {
  size_t w[3], b[3]; /* query, key, value */
  size_t wo, bo, g1, b1, wi, bi, wo2, bo2, g2, b2;
} Layer;

/* The activations one encoder layer keeps for its backward. */
typedef struct LayerAct {
  float *qkv;             /* [n, 3H] */
  float *ctx;             /* [n, H] attention output */
  float *lse;             /* [rows, heads, cols] */
  float *s1, *x1;         /* [n, H] ctx W_o^T + b + x, and its LayerNorm */
  float *mean1, *rstd1;   /* [n] */
  float *u, *h;           /* [n, F] x1 W_i^T, and gelu(u + b_i) */
  float *s2;              /* [n, H] */
  float *mean2, *rstd2;   /* [n] */
} LayerAct;

/* A run of consecutive parameters with the same weight-decay flag: one AdamW launch. */
typedef struct DecayRun {
  size_t off, len;
  int decay;
} DecayRun;

struct KilnBertModel {
  KilnRtDevice *dev;
  KilnBertConfig cfg;
  KilnBertParams layout;
  int H, F, heads, D, L, NL, max_rows, max_cols;
  /* the generated libraries */
  kb_gemm0_f32 *gemm0;
  kb_gemm1_f32 *gemm1;
  kb_gemm3_f32 *gemm3;
  kb_attn_d16_f32 *attn16;
  kb_attn_d64_f32 *attn64;
  kb_ln_f32 *ln;
  kb_emb_f32 *emb;
  kb_xent_f32 *xent;
  kb_gelu_f32 *gelu;
  kb_tanh_f32 *tanh;
  kb_adamw *adamw;
  /* parameter offsets */
  size_t word, pos, ttype, eg, eb, wp, bp, wc, bc;
  Layer *layer;
  DecayRun *runs;
  size_t nruns;
  /* device buffers: one allocation, carved (see plan()) */
  void *arena;
  float *params, *grads, *m, *v;
  int32_t *ids, *types, *labels, *kv_len, *found_inf;
  uint16_t *p16;
  float *zeros; /* zero residual / bias for kernels that take one */
  float *emb_out, *emb_s, *emb_mean, *emb_rstd;
  float **x;    /* x[l]: input of layer l; x[L] the encoder output */
  LayerAct *act;
  float *pre, *pooled, *logits, *loss_rows, *xlse, *loss_sum, *dloss;
  float *dlogits, *dpooled, *dpre;
  float *dx, *da, *db, *dh, *du, *dctx, *delta, *dqkv, *part_g, *part_b, *sumsq;
  /* the last forward's batch shape, and host staging of its small arrays */
  int rows, cols;
  float *host_dloss;
  KilnBertAllReduceFn allreduce;
  void *allreduce_user;
};

static KilnBertStatus rt_fail(KilnRtStatus st, const char *what) {
  return kiln_bert_fail(KILN_BERT_ERROR_DEVICE, "%s: %s: %s", what, kiln_rt_status_name(st),
                        kiln_rt_last_error());
}

#define RT(call, what)                                        \
  do {                                                        \
    KilnRtStatus rt_st_ = (call);                             \
    if (rt_st_ != KILN_RT_OK) return rt_fail(rt_st_, (what)); \
  } while (0)

/* ---- grids that depend on more than the kernel's own parameters -------------------------- */

typedef struct Grid {
  uint32_t x, y, cols;
} Grid;

static uint32_t cdiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

/* One program per row (layernorm_fwd, xent): user is a Grid with x set. */
#define ROW_GRID(fn, cfgtype)                                               \
  static void fn(const cfgtype *c, void *user, uint32_t g[3]) {             \
    (void)c;                                                                \
    g[0] = ((const Grid *)user)->x;                                         \
    g[1] = g[2] = 1;                                                        \
  }
ROW_GRID(grid_ln_fwd, kb_ln_f32_layernorm_fwd_config)
ROW_GRID(grid_ln_bwd, kb_ln_f32_layernorm_bwd_config)
ROW_GRID(grid_xent_fwd, kb_xent_f32_xent_fwd_config)
ROW_GRID(grid_xent_bwd, kb_xent_f32_xent_bwd_config)

/* Attention: (cdiv(S, block), rows x heads); user is a Grid with cols = S and y = rows x heads. */
#define ATTN_GRID(fn, cfgtype, BLK)                                         \
  static void fn(const cfgtype *c, void *user, uint32_t g[3]) {             \
    const Grid *gr = user;                                                  \
    g[0] = cdiv(gr->cols, (uint32_t)c->BLK);                                \
    g[1] = gr->y;                                                           \
    g[2] = 1;                                                               \
  }
ATTN_GRID(grid_a16_fwd, kb_attn_d16_f32_attn_fwd_config, BM)
ATTN_GRID(grid_a16_delta, kb_attn_d16_f32_attn_bwd_delta_config, BM)
ATTN_GRID(grid_a16_dkdv, kb_attn_d16_f32_attn_bwd_dkdv_config, BN)
ATTN_GRID(grid_a16_dq, kb_attn_d16_f32_attn_bwd_dq_config, BM)
ATTN_GRID(grid_a64_fwd, kb_attn_d64_f32_attn_fwd_config, BM)
ATTN_GRID(grid_a64_delta, kb_attn_d64_f32_attn_bwd_delta_config, BM)
ATTN_GRID(grid_a64_dkdv, kb_attn_d64_f32_attn_bwd_dkdv_config, BN)
ATTN_GRID(grid_a64_dq, kb_attn_d64_f32_attn_bwd_dq_config, BM)

/* ---- the operations, each one kernel launch ----------------------------------------------- */

/* C[M, N] (row stride ldc) = A B (+ epilogue), A[i, k] = a[i sam + k sak], B[k, j] = b[k sbk + j sbn]:
 * epi 0 plain, 1 + bias, 3 + bias + res (res with C's strides). */
static KilnBertStatus gemm(KilnBertModel *m, int epi, float *a, float *b, float *c, float *bias,
                           float *res, int M, int N, int K, int sam, int sak, int sbk, int sbn,
                           int ldc) {
  KilnRtStatus st;
  if (!bias) bias = m->zeros;
  if (!res) res = m->zeros;
  switch (epi) {
  case 0:
    st = kb_gemm0_f32_gemm(m->gemm0, a, b, c, bias, res, M, N, K, sam, sak, sbk, sbn, ldc, 1, NULL,
                           NULL, NULL);
    break;
  case 1:
    st = kb_gemm1_f32_gemm(m->gemm1, a, b, c, bias, res, M, N, K, sam, sak, sbk, sbn, ldc, 1, NULL,
                           NULL, NULL);
    break;
  default:
    st = kb_gemm3_f32_gemm(m->gemm3, a, b, c, bias, res, M, N, K, sam, sak, sbk, sbn, ldc, 1, NULL,
                           NULL, NULL);
    break;
  }
  RT(st, "gemm");
  return KILN_BERT_OK;
}

/* y[M, N] (row stride ldy) = x[M, K] (row stride ldx) W^T + b for W [N, K]; res added when
 * given (epi 3). */
static KilnBertStatus linear_fwd(KilnBertModel *m, float *x, int ldx, float *w, float *b,
                                 float *res, float *y, int ldy, int M, int N, int K) {
  return gemm(m, res ? 3 : 1, x, w, y, b, res, M, N, K, ldx, 1, 1, K, ldy);
}

/* dX[M, K] (row stride ldx) = dY[M, N] (row stride ldy) W (+ res) for W [N, K]. */
static KilnBertStatus linear_dx(KilnBertModel *m, float *dy, int ldy, float *w, float *res,
                                float *dx, int ldx, int M, int N, int K) {
  return gemm(m, res ? 3 : 0, dy, w, dx, NULL, res, M, K, N, ldy, 1, K, 1, ldx);
}

/* dW[N, K] = dY[M, N]^T X[M, K] (row strides ldy, ldx), written over dW. */
static KilnBertStatus linear_dw(KilnBertModel *m, float *dy, int ldy, float *x, int ldx,
                                float *dw, int M, int N, int K) {
  return gemm(m, 0, dy, x, dw, NULL, NULL, N, K, M, 1, ldy, ldx, 1, K);
}

/* out[c] = sum over rows of x[r ld + c]: bias gradients, and the loss's sum. */
static KilnBertStatus colsum(KilnBertModel *m, float *x, float *out, int rows, int cols, int ld) {
  RT(kb_gemm0_f32_colsum_f32(m->gemm0, x, out, rows, cols, ld, NULL, NULL, NULL), "colsum_f32");
  return KILN_BERT_OK;
}

static KilnBertStatus layernorm_fwd(KilnBertModel *m, float *x, float *res, size_t g, size_t b,
                                    float *s, float *y, float *mean, float *rstd, int n) {
  Grid gr = {(uint32_t)n, 1, 0};
  RT(kb_ln_f32_layernorm_fwd(m->ln, x, res, m->params + g, m->params + b, s, y, mean, rstd, m->H,
                             (float)m->cfg.layer_norm_eps, grid_ln_fwd, &gr, NULL),
     "layernorm_fwd");
  return KILN_BERT_OK;
}

/* dx = LayerNorm backward of dy at s; gamma's and beta's gradients into the gradient buffer. */
static KilnBertStatus layernorm_bwd(KilnBertModel *m, float *s, float *dy, size_t g, size_t b,
                                    float *mean, float *rstd, float *dx, int n) {
  int parts = n < LN_PARTS ? n : LN_PARTS;
  Grid gr = {(uint32_t)parts, 1, 0};
  RT(kb_ln_f32_layernorm_bwd(m->ln, s, dy, m->params + g, mean, rstd, dx, m->part_g, m->part_b, n,
                             m->H, grid_ln_bwd, &gr, NULL),
     "layernorm_bwd");
  RT(kb_ln_f32_layernorm_bwd_reduce(m->ln, m->part_g, m->grads + g, parts, m->H, NULL, NULL, NULL),
     "layernorm_bwd_reduce");
  RT(kb_ln_f32_layernorm_bwd_reduce(m->ln, m->part_b, m->grads + b, parts, m->H, NULL, NULL, NULL),
     "layernorm_bwd_reduce");
  return KILN_BERT_OK;
}

/* The attention kernels of the library built for the model's head dimension. Q, K, V at qkv,
 * qkv + H, qkv + 2H with the [n, 3, heads, D] strides; O and dO dense [n, H]. */
#define ATTN_STRIDES(m) \
  S, m->heads, S * 3 * m->H, m->D, 3 * m->H, S * m->H, m->D, m->H
static KilnBertStatus attn_fwd(KilnBertModel *m, LayerAct *a) {
  int S = m->cols;
  float scale = 1.0f / sqrtf((float)m->D);
  Grid gr = {0, (uint32_t)(m->rows * m->heads), (uint32_t)S};
  float *q = a->qkv, *k = a->qkv + m->H, *v = a->qkv + 2 * m->H;
  KilnRtStatus st =
      m->D == 64 ? kb_attn_d64_f32_attn_fwd(m->attn64, q, k, v, a->ctx, a->lse, m->kv_len,
                                            ATTN_STRIDES(m), scale, grid_a64_fwd, &gr, NULL)
                 : kb_attn_d16_f32_attn_fwd(m->attn16, q, k, v, a->ctx, a->lse, m->kv_len,
                                            ATTN_STRIDES(m), scale, grid_a16_fwd, &gr, NULL);
  RT(st, "attn_fwd");
  return KILN_BERT_OK;
}

/* dQ, dK, dV into m->dqkv from dO in m->dctx. */
static KilnBertStatus attn_bwd(KilnBertModel *m, LayerAct *a) {
  int S = m->cols;
  float scale = 1.0f / sqrtf((float)m->D);
  Grid gr = {0, (uint32_t)(m->rows * m->heads), (uint32_t)S};
  float *q = a->qkv, *k = a->qkv + m->H, *v = a->qkv + 2 * m->H;
  float *dq = m->dqkv, *dk = m->dqkv + m->H, *dv = m->dqkv + 2 * m->H;
  KilnRtStatus st;
  if (m->D == 64) {
    st = kb_attn_d64_f32_attn_bwd_delta(m->attn64, a->ctx, m->dctx, m->delta, S, m->heads,
                                        S * m->H, m->D, m->H, grid_a64_delta, &gr, NULL);
    if (st == KILN_RT_OK)
      st = kb_attn_d64_f32_attn_bwd_dkdv(m->attn64, q, k, v, m->dctx, a->lse, m->delta, m->kv_len,
                                         dk, dv, ATTN_STRIDES(m), scale, grid_a64_dkdv, &gr, NULL);
    if (st == KILN_RT_OK)
      st = kb_attn_d64_f32_attn_bwd_dq(m->attn64, q, k, v, m->dctx, a->lse, m->delta, m->kv_len,
                                       dq, ATTN_STRIDES(m), scale, grid_a64_dq, &gr, NULL);
  } else {
    st = kb_attn_d16_f32_attn_bwd_delta(m->attn16, a->ctx, m->dctx, m->delta, S, m->heads,
                                        S * m->H, m->D, m->H, grid_a16_delta, &gr, NULL);
    if (st == KILN_RT_OK)
      st = kb_attn_d16_f32_attn_bwd_dkdv(m->attn16, q, k, v, m->dctx, a->lse, m->delta, m->kv_len,
                                         dk, dv, ATTN_STRIDES(m), scale, grid_a16_dkdv, &gr, NULL);
    if (st == KILN_RT_OK)
      st = kb_attn_d16_f32_attn_bwd_dq(m->attn16, q, k, v, m->dctx, a->lse, m->delta, m->kv_len,
                                       dq, ATTN_STRIDES(m), scale, grid_a16_dq, &gr, NULL);
  }
  RT(st, "attention backward");
  return KILN_BERT_OK;
}

#define TRY(call)                              \
  do {                                         \
    KilnBertStatus try_st_ = (call);           \
    if (try_st_ != KILN_BERT_OK) return try_st_; \
  } while (0)

/* ---- creation: the memory plan ------------------------------------------------------------ */

static size_t param_off(const KilnBertModel *m, const char *name, int *missing) {
  const KilnBertParam *p = kiln_bert_params_find(&m->layout, name);
  if (!p) {
    *missing = 1;
    return 0;
  }
  return p->offset;
}

static void find_params(KilnBertModel *m, int *missing) {
  char name[160];
  m->word = param_off(m, "bert.embeddings.word_embeddings.weight", missing);
  m->pos = param_off(m, "bert.embeddings.position_embeddings.weight", missing);
  m->ttype = param_off(m, "bert.embeddings.token_type_embeddings.weight", missing);
  m->eg = param_off(m, "bert.embeddings.LayerNorm.weight", missing);
  m->eb = param_off(m, "bert.embeddings.LayerNorm.bias", missing);
  m->wp = param_off(m, "bert.pooler.dense.weight", missing);
  m->bp = param_off(m, "bert.pooler.dense.bias", missing);
  m->wc = param_off(m, "classifier.weight", missing);
  m->bc = param_off(m, "classifier.bias", missing);
  static const char *const qkv[3] = {"query", "key", "value"};
#define P(fmt) \
  (snprintf(name, sizeof name, "bert.encoder.layer.%d." fmt, l), param_off(m, name, missing))
  for (int l = 0; l < m->L; l++) {
    Layer *y = &m->layer[l];
    for (int j = 0; j < 3; j++) {
      snprintf(name, sizeof name, "bert.encoder.layer.%d.attention.self.%s.weight", l, qkv[j]);
      y->w[j] = param_off(m, name, missing);
      snprintf(name, sizeof name, "bert.encoder.layer.%d.attention.self.%s.bias", l, qkv[j]);
      y->b[j] = param_off(m, name, missing);
    }
    y->wo = P("attention.output.dense.weight");
    y->bo = P("attention.output.dense.bias");
    y->g1 = P("attention.output.LayerNorm.weight");
    y->b1 = P("attention.output.LayerNorm.bias");
    y->wi = P("intermediate.dense.weight");
    y->bi = P("intermediate.dense.bias");
    y->wo2 = P("output.dense.weight");
    y->bo2 = P("output.dense.bias");
    y->g2 = P("output.LayerNorm.weight");
    y->b2 = P("output.LayerNorm.bias");
  }
#undef P
}

/* The AdamW launches: consecutive parameters with the same decay flag, the alignment padding
 * between them included (its gradient is always 0 and its value stays 0). */
static int plan_runs(KilnBertModel *m) {
  const KilnBertParams *pl = &m->layout;
  m->runs = calloc(pl->n ? pl->n : 1, sizeof *m->runs);
  if (!m->runs) return -1;
  for (size_t i = 0; i < pl->n; i++) {
    const KilnBertParam *p = &pl->p[i];
    DecayRun *last = m->nruns ? &m->runs[m->nruns - 1] : NULL;
    if (last && last->decay == p->decay) {
      last->len = p->offset + p->numel - last->off;
    } else {
      m->runs[m->nruns++] = (DecayRun){p->offset, p->numel, p->decay};
    }
  }
  return 0;
}

/* Carves every device buffer out of one allocation: called twice, first with base NULL to
 * size it (the pointers stay NULL), then with the real base. 64-byte aligned pieces. */
static size_t plan(KilnBertModel *m, char *base) {
  size_t at = 0;
#define TAKE(ptr, count, type)                        \
  do {                                                \
    (ptr) = base ? (type *)(void *)(base + at) : NULL; \
    at += (((size_t)(count) * sizeof(type)) + 63) & ~(size_t)63; \
  } while (0)
  size_t P = m->layout.total, n = (size_t)m->max_rows * (size_t)m->max_cols;
  size_t H = (size_t)m->H, F = (size_t)m->F, B = (size_t)m->max_rows;
  size_t bhs = B * (size_t)m->heads * (size_t)m->max_cols;
  size_t zn = n * H > F ? n * H : F;
  if (zn < 3 * H) zn = 3 * H;
  TAKE(m->params, P, float);
  TAKE(m->grads, P, float);
  TAKE(m->m, P, float);
  TAKE(m->v, P, float);
  TAKE(m->ids, n, int32_t);
  TAKE(m->types, n, int32_t);
  TAKE(m->labels, B, int32_t);
  TAKE(m->kv_len, B, int32_t);
  TAKE(m->found_inf, 1, int32_t);
  TAKE(m->p16, 1, uint16_t);
  TAKE(m->zeros, zn, float);
  TAKE(m->emb_out, n * H, float);
  TAKE(m->emb_s, n * H, float);
  TAKE(m->emb_mean, n, float);
  TAKE(m->emb_rstd, n, float);
  for (int l = 0; l <= m->L; l++)
    if (l) TAKE(m->x[l], n * H, float);
  for (int l = 0; l < m->L; l++) {
    LayerAct *a = &m->act[l];
    TAKE(a->qkv, n * 3 * H, float);
    TAKE(a->ctx, n * H, float);
    TAKE(a->lse, bhs, float);
    TAKE(a->s1, n * H, float);
    TAKE(a->x1, n * H, float);
    TAKE(a->mean1, n, float);
    TAKE(a->rstd1, n, float);
    TAKE(a->u, n * F, float);
    TAKE(a->h, n * F, float);
    TAKE(a->s2, n * H, float);
    TAKE(a->mean2, n, float);
    TAKE(a->rstd2, n, float);
  }
  size_t NL = (size_t)m->NL;
  TAKE(m->pre, B * H, float);
  TAKE(m->pooled, B * H, float);
  TAKE(m->logits, B * NL, float);
  TAKE(m->loss_rows, B, float);
  TAKE(m->xlse, B, float);
  TAKE(m->loss_sum, 1, float);
  TAKE(m->dloss, B, float);
  TAKE(m->dlogits, B * NL, float);
  TAKE(m->dpooled, B * H, float);
  TAKE(m->dpre, B * H, float);
  TAKE(m->dx, n * H, float);
  TAKE(m->da, n * H, float);
  TAKE(m->db, n * H, float);
  TAKE(m->dh, n * F, float);
  TAKE(m->du, n * F, float);
  TAKE(m->dctx, n * H, float);
  TAKE(m->delta, bhs, float);
  TAKE(m->dqkv, n * 3 * H, float);
  TAKE(m->part_g, LN_PARTS * H, float);
  TAKE(m->part_b, LN_PARTS * H, float);
  TAKE(m->sumsq, 1, float);
#undef TAKE
  return at;
}

KilnBertStatus kiln_bert_model_create(KilnRtDevice *dev, const KilnBertConfig *cfg,
                                      int max_batch, int max_seq, KilnBertModel **out) {
  *out = NULL;
  if (!dev || !cfg || max_batch < 1 || max_seq < 2 || max_seq > cfg->max_position_embeddings)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: a batch of %d rows of %d tokens does not fit", max_batch, max_seq);
  int D = cfg->hidden_size / cfg->num_attention_heads;
  if (D != 16 && D != 64)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: head dimension %d: the fp32 attention library is built for 16 and 64",
                          D);
  if ((double)max_batch * max_seq * cfg->intermediate_size * 3 > 2147483647.0)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: a batch of %d x %d tokens overflows the kernels' 32-bit indices",
                          max_batch, max_seq);
  KilnBertModel *m = calloc(1, sizeof *m);
  if (!m) return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "model: out of memory");
  m->dev = dev;
  m->cfg = *cfg;
  m->H = cfg->hidden_size;
  m->F = cfg->intermediate_size;
  m->heads = cfg->num_attention_heads;
  m->D = D;
  m->L = cfg->num_hidden_layers;
  m->NL = cfg->num_labels;
  m->max_rows = max_batch;
  m->max_cols = max_seq;
  KilnBertStatus st = kiln_bert_params_layout(cfg, &m->layout);
  if (st != KILN_BERT_OK) {
    free(m);
    return st;
  }
  m->layer = calloc((size_t)m->L + 1, sizeof *m->layer);
  m->act = calloc((size_t)m->L + 1, sizeof *m->act);
  m->x = calloc((size_t)m->L + 1, sizeof *m->x);
  m->host_dloss = calloc((size_t)max_batch, sizeof *m->host_dloss);
  if (!m->layer || !m->act || !m->x || !m->host_dloss || plan_runs(m)) {
    kiln_bert_model_destroy(m);
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "model: out of memory");
  }
  int missing = 0;
  find_params(m, &missing);
  if (missing) {
    kiln_bert_model_destroy(m);
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "model: the layout lacks a parameter");
  }
  /* LayerNorm's backward walks a row in one BLOCK: some variant must cover the hidden size. */
  if (kb_ln_f32_layernorm_bwd_pick(max_batch * max_seq, m->H).num_warps == 0) {
    kiln_bert_model_destroy(m);
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: no layernorm_bwd variant of the library covers hidden size %d",
                          m->H);
  }
  size_t bytes = plan(m, NULL);
  KilnRtStatus rs = kiln_rt_malloc(dev, bytes, &m->arena);
  if (rs != KILN_RT_OK) {
    kiln_bert_model_destroy(m);
    return rt_fail(rs, "model: allocating the memory plan");
  }
  plan(m, m->arena);
  m->x[0] = m->emb_out;
  /* Zero everything once: moments, the zero buffer, gradient padding, token types, flags. */
  rs = kiln_rt_memset(dev, m->arena, 0, bytes, NULL);
#define LIB(lib, var) \
  if (rs == KILN_RT_OK) rs = lib##_create(dev, &m->var);
  LIB(kb_gemm0_f32, gemm0)
  LIB(kb_gemm1_f32, gemm1)
  LIB(kb_gemm3_f32, gemm3)
  LIB(kb_attn_d16_f32, attn16)
  LIB(kb_attn_d64_f32, attn64)
  LIB(kb_ln_f32, ln)
  LIB(kb_emb_f32, emb)
  LIB(kb_xent_f32, xent)
  LIB(kb_gelu_f32, gelu)
  LIB(kb_tanh_f32, tanh)
  LIB(kb_adamw, adamw)
#undef LIB
  if (rs != KILN_RT_OK) {
    KilnBertStatus f = rt_fail(rs, "model: setting up the kernel libraries");
    kiln_bert_model_destroy(m);
    return f;
  }
  *out = m;
  return KILN_BERT_OK;
}

void kiln_bert_model_destroy(KilnBertModel *m) {
  if (!m) return;
  if (m->gemm0) kb_gemm0_f32_destroy(m->gemm0);
  if (m->gemm1) kb_gemm1_f32_destroy(m->gemm1);
  if (m->gemm3) kb_gemm3_f32_destroy(m->gemm3);
  if (m->attn16) kb_attn_d16_f32_destroy(m->attn16);
  if (m->attn64) kb_attn_d64_f32_destroy(m->attn64);
  if (m->ln) kb_ln_f32_destroy(m->ln);
  if (m->emb) kb_emb_f32_destroy(m->emb);
  if (m->xent) kb_xent_f32_destroy(m->xent);
  if (m->gelu) kb_gelu_f32_destroy(m->gelu);
  if (m->tanh) kb_tanh_f32_destroy(m->tanh);
  if (m->adamw) kb_adamw_destroy(m->adamw);
  if (m->arena) kiln_rt_free(m->dev, m->arena);
  kiln_bert_params_free(&m->layout);
  free(m->layer);
  free(m->act);
  free(m->x);
  free(m->runs);
  free(m->host_dloss);
  free(m);
}

const KilnBertParams *kiln_bert_model_params(const KilnBertModel *m) { return &m->layout; }

KilnBertStatus kiln_bert_model_set_params(KilnBertModel *m, const float *flat) {
  RT(kiln_rt_memcpy_htod(m->dev, m->params, flat, m->layout.total * sizeof(float), NULL),
     "model: copying the parameters in");
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_get_params(KilnBertModel *m, float *flat) {
  RT(kiln_rt_memcpy_dtoh(m->dev, flat, m->params, m->layout.total * sizeof(float), NULL),
     "model: copying the parameters out");
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_get_grads(KilnBertModel *m, float *flat) {
  RT(kiln_rt_memcpy_dtoh(m->dev, flat, m->grads, m->layout.total * sizeof(float), NULL),
     "model: copying the gradients out");
  return KILN_BERT_OK;
}

void kiln_bert_model_set_allreduce(KilnBertModel *m, KilnBertAllReduceFn fn, void *user) {
  m->allreduce = fn;
  m->allreduce_user = user;
}

/* ---- forward ------------------------------------------------------------------------------ */

static KilnBertStatus encoder_layer_fwd(KilnBertModel *m, int l) {
  const Layer *y = &m->layer[l];
  LayerAct *a = &m->act[l];
  float *p = m->params, *x = m->x[l];
  int n = m->rows * m->cols, H = m->H, F = m->F;
  for (int j = 0; j < 3; j++)
    TRY(linear_fwd(m, x, H, p + y->w[j], p + y->b[j], NULL, a->qkv + j * H, 3 * H, n, H, H));
  TRY(attn_fwd(m, a));
  /* attention output dense, then LayerNorm(. + x) */
  TRY(linear_fwd(m, a->ctx, H, p + y->wo, p + y->bo, NULL, m->da, H, n, H, H));
  TRY(layernorm_fwd(m, m->da, x, y->g1, y->b1, a->s1, a->x1, a->mean1, a->rstd1, n));
  /* FFN: u = x1 W_i^T, h = gelu(u + b_i) (u kept for GELU's backward), then LayerNorm(. + x1) */
  TRY(gemm(m, 0, a->x1, p + y->wi, a->u, NULL, NULL, n, F, H, H, 1, 1, H, F));
  RT(kb_gelu_f32_bias_gelu_fwd(m->gelu, a->u, p + y->bi, a->h, n, F, NULL, NULL, NULL),
     "bias_gelu_fwd");
  TRY(linear_fwd(m, a->h, F, p + y->wo2, p + y->bo2, NULL, m->da, H, n, H, F));
  TRY(layernorm_fwd(m, m->da, a->x1, y->g2, y->b2, a->s2, m->x[l + 1], a->mean2, a->rstd2, n));
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_forward(KilnBertModel *m, const int32_t *ids, const int32_t *lens,
                                       const int32_t *labels, int rows, int cols, float *loss,
                                       float *logits) {
  if (rows < 1 || rows > m->max_rows || cols < 2 || cols > m->max_cols)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: a batch of %d x %d does not fit the planned %d x %d", rows, cols,
                          m->max_rows, m->max_cols);
  for (int r = 0; r < rows; r++)
    if (lens[r] < 1 || lens[r] > cols || labels[r] < 0 || labels[r] >= m->NL)
      return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                            "model: row %d has length %d or label %d out of range", r, lens[r],
                            labels[r]);
  m->rows = rows;
  m->cols = cols;
  int n = rows * cols, H = m->H;
  float *p = m->params;
  RT(kiln_rt_memcpy_htod(m->dev, m->ids, ids, (size_t)n * sizeof *ids, NULL), "model: ids");
  RT(kiln_rt_memcpy_htod(m->dev, m->kv_len, lens, (size_t)rows * sizeof *lens, NULL),
     "model: lengths");
  RT(kiln_rt_memcpy_htod(m->dev, m->labels, labels, (size_t)rows * sizeof *labels, NULL),
     "model: labels");
  /* embeddings (token types are all 0, positions 0..cols-1), LayerNorm with a zero residual */
  RT(kb_emb_f32_embedding_fwd(m->emb, m->ids, m->types, p + m->word, p + m->pos, p + m->ttype,
                              m->da, n, cols, H, NULL, NULL, NULL),
     "embedding_fwd");
  TRY(layernorm_fwd(m, m->da, m->zeros, m->eg, m->eb, m->emb_s, m->x[0], m->emb_mean,
                    m->emb_rstd, n));
  for (int l = 0; l < m->L; l++) TRY(encoder_layer_fwd(m, l));
  /* pooler on token 0 of every row (row stride cols x H), tanh; classifier; cross-entropy */
  TRY(linear_fwd(m, m->x[m->L], cols * H, p + m->wp, p + m->bp, NULL, m->pre, H, rows, H, H));
  RT(kb_tanh_f32_tanh_fwd(m->tanh, m->pre, m->pooled, rows * H, NULL, NULL, NULL), "tanh_fwd");
  TRY(linear_fwd(m, m->pooled, H, p + m->wc, p + m->bc, NULL, m->logits, m->NL, rows, m->NL, H));
  Grid gr = {(uint32_t)rows, 1, 0};
  RT(kb_xent_f32_xent_fwd(m->xent, m->logits, m->labels, m->loss_rows, m->xlse, m->NL, -100,
                          grid_xent_fwd, &gr, NULL),
     "xent_fwd");
  TRY(colsum(m, m->loss_rows, m->loss_sum, rows, 1, 1));
  float sum = 0;
  RT(kiln_rt_memcpy_dtoh(m->dev, &sum, m->loss_sum, sizeof sum, NULL), "model: loss");
  if (loss) *loss = sum / (float)rows;
  if (logits)
    RT(kiln_rt_memcpy_dtoh(m->dev, logits, m->logits, (size_t)rows * m->NL * sizeof *logits,
                           NULL),
       "model: logits");
  return KILN_BERT_OK;
}

/* ---- backward ----------------------------------------------------------------------------- */

/* m->dx holds the gradient of layer l's output; leaves the gradient of its input there. */
static KilnBertStatus encoder_layer_bwd(KilnBertModel *m, int l) {
  const Layer *y = &m->layer[l];
  LayerAct *a = &m->act[l];
  float *p = m->params, *g = m->grads, *x = m->x[l];
  int n = m->rows * m->cols, H = m->H, F = m->F;
  /* second LayerNorm: da = gradient of the FFN output and of x1 (the residual) */
  TRY(layernorm_bwd(m, a->s2, m->dx, y->g2, y->b2, a->mean2, a->rstd2, m->da, n));
  TRY(linear_dw(m, m->da, H, a->h, F, g + y->wo2, n, H, F));
  TRY(colsum(m, m->da, g + y->bo2, n, H, H));
  TRY(linear_dx(m, m->da, H, p + y->wo2, NULL, m->dh, F, n, H, F));
  RT(kb_gelu_f32_bias_gelu_bwd(m->gelu, a->u, p + y->bi, m->dh, m->du, n, F, NULL, NULL, NULL),
     "bias_gelu_bwd");
  TRY(linear_dw(m, m->du, F, a->x1, H, g + y->wi, n, F, H));
  TRY(colsum(m, m->du, g + y->bi, n, F, F));
  /* db = gradient of x1: through the FFN plus the residual */
  TRY(linear_dx(m, m->du, F, p + y->wi, m->da, m->db, H, n, F, H));
  /* first LayerNorm: da = gradient of the attention output dense and of x */
  TRY(layernorm_bwd(m, a->s1, m->db, y->g1, y->b1, a->mean1, a->rstd1, m->da, n));
  TRY(linear_dw(m, m->da, H, a->ctx, H, g + y->wo, n, H, H));
  TRY(colsum(m, m->da, g + y->bo, n, H, H));
  TRY(linear_dx(m, m->da, H, p + y->wo, NULL, m->dctx, H, n, H, H));
  TRY(attn_bwd(m, a));
  for (int j = 0; j < 3; j++) {
    TRY(linear_dw(m, m->dqkv + j * H, 3 * H, x, H, g + y->w[j], n, H, H));
    TRY(colsum(m, m->dqkv + j * H, g + y->b[j], n, H, 3 * H));
  }
  /* dx = residual + dQ W_q + dK W_k + dV W_v, accumulated in place */
  for (int j = 0; j < 3; j++)
    TRY(linear_dx(m, m->dqkv + j * H, 3 * H, p + y->w[j], j ? m->dx : m->da, m->dx, H, n, H, H));
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_backward(KilnBertModel *m) {
  int rows = m->rows, cols = m->cols, n = rows * cols, H = m->H, NL = m->NL;
  if (rows < 1)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "model: backward before a forward");
  float *p = m->params, *g = m->grads;
  for (int r = 0; r < rows; r++) m->host_dloss[r] = 1.0f / (float)rows;
  RT(kiln_rt_memcpy_htod(m->dev, m->dloss, m->host_dloss, (size_t)rows * sizeof(float), NULL),
     "model: dloss");
  Grid gr = {(uint32_t)rows, 1, 0};
  RT(kb_xent_f32_xent_bwd(m->xent, m->logits, m->labels, m->xlse, m->dloss, m->dlogits, NL, -100,
                          grid_xent_bwd, &gr, NULL),
     "xent_bwd");
  /* classifier, pooler (tanh), and the pooler's input: token 0 of each row */
  TRY(linear_dw(m, m->dlogits, NL, m->pooled, H, g + m->wc, rows, NL, H));
  TRY(colsum(m, m->dlogits, g + m->bc, rows, NL, NL));
  TRY(linear_dx(m, m->dlogits, NL, p + m->wc, NULL, m->dpooled, H, rows, NL, H));
  RT(kb_tanh_f32_tanh_bwd(m->tanh, m->pooled, m->dpooled, m->dpre, rows * H, NULL, NULL, NULL),
     "tanh_bwd");
  TRY(linear_dw(m, m->dpre, H, m->x[m->L], cols * H, g + m->wp, rows, H, H));
  TRY(colsum(m, m->dpre, g + m->bp, rows, H, H));
  RT(kiln_rt_memset(m->dev, m->dx, 0, (size_t)n * H * sizeof(float), NULL), "model: memset");
  TRY(linear_dx(m, m->dpre, H, p + m->wp, NULL, m->dx, cols * H, rows, H, H));
  for (int l = m->L - 1; l >= 0; l--) TRY(encoder_layer_bwd(m, l));
  /* embeddings: LayerNorm, then the three tables (zeroed: scattered into with atomics) */
  TRY(layernorm_bwd(m, m->emb_s, m->dx, m->eg, m->eb, m->emb_mean, m->emb_rstd, m->da, n));
  const KilnBertConfig *c = &m->cfg;
  RT(kiln_rt_memset(m->dev, g + m->word, 0, (size_t)c->vocab_size * H * sizeof(float), NULL),
     "model: memset");
  RT(kiln_rt_memset(m->dev, g + m->pos, 0,
                    (size_t)c->max_position_embeddings * H * sizeof(float), NULL),
     "model: memset");
  RT(kiln_rt_memset(m->dev, g + m->ttype, 0, (size_t)c->type_vocab_size * H * sizeof(float),
                    NULL),
     "model: memset");
  RT(kb_emb_f32_embedding_bwd(m->emb, m->ids, m->types, m->da, g + m->word, g + m->pos,
                              g + m->ttype, n, cols, H, NULL, NULL, NULL),
     "embedding_bwd");
  return KILN_BERT_OK;
}

/* ---- optimizer ---------------------------------------------------------------------------- */

KilnBertStatus kiln_bert_model_step(KilnBertModel *m, const KilnBertOptim *opt, double lr,
                                    int step, double *grad_norm) {
  int P = (int)m->layout.total;
  if (step < 1)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "model: AdamW step %d < 1", step);
  if (m->allreduce) TRY(m->allreduce(m->allreduce_user, m->grads, m->layout.total, NULL));
  RT(kiln_rt_memset(m->dev, m->sumsq, 0, sizeof(float), NULL), "model: memset");
  RT(kb_adamw_grad_sumsq(m->adamw, m->grads, m->sumsq, P, NULL, NULL, NULL), "grad_sumsq");
  float sumsq = 0;
  RT(kiln_rt_memcpy_dtoh(m->dev, &sumsq, m->sumsq, sizeof sumsq, NULL), "model: grad norm");
  if (grad_norm) *grad_norm = sqrt((double)sumsq);
  if (opt->clip > 0)
    RT(kb_adamw_clip_grads(m->adamw, m->grads, m->sumsq, P, (float)opt->clip, NULL, NULL, NULL),
       "clip_grads");
  for (size_t i = 0; i < m->nruns; i++) {
    const DecayRun *r = &m->runs[i];
    RT(kb_adamw_adamw_step(m->adamw, m->params + r->off, m->grads + r->off, m->m + r->off,
                           m->v + r->off, m->p16, m->found_inf, (int)r->len, (float)lr,
                           (float)opt->beta1, (float)opt->beta2, (float)opt->eps,
                           r->decay ? (float)opt->weight_decay : 0.0f, step, 1.0f, NULL, NULL,
                           NULL),
       "adamw_step");
  }
  return KILN_BERT_OK;
}

/* ---- optimizer state, for checkpoints ------------------------------------------------------ */

KilnBertStatus kiln_bert_model_get_moments(KilnBertModel *m, float *exp_avg, float *exp_avg_sq) {
  size_t bytes = m->layout.total * sizeof(float);
  RT(kiln_rt_memcpy_dtoh(m->dev, exp_avg, m->m, bytes, NULL), "model: first moments");
  RT(kiln_rt_memcpy_dtoh(m->dev, exp_avg_sq, m->v, bytes, NULL), "model: second moments");
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_set_moments(KilnBertModel *m, const float *exp_avg,
                                           const float *exp_avg_sq) {
  size_t bytes = m->layout.total * sizeof(float);
  RT(kiln_rt_memcpy_htod(m->dev, m->m, exp_avg, bytes, NULL), "model: first moments");
  RT(kiln_rt_memcpy_htod(m->dev, m->v, exp_avg_sq, bytes, NULL), "model: second moments");
  return KILN_BERT_OK;
}
