/* model.c — BertForSequenceClassification's step on a libkilnrt device, every tensor operation
 * a kernel of kernels-bert/ called through the generated libraries (kb_* headers, built by
 * runtime/bert/CMakeLists.txt with `kiln lib`).
 *
 * How it works. Tokens are laid out batch-major, n = rows x cols of them, each activation a
 * dense [n, width] f32 matrix. Linear layers keep the reference's [out, in] weights and the gemm
 * reads them through strides (y = x W^T: B[k, j] = W[j, k]), as do the backward's transposed
 * products (dX = dY W, dW = dY^T X), so nothing is ever transposed in memory. Q, K and V are
 * one gemm (the layout keeps W_q, W_k, W_v as one [3H, H] matrix and their biases as one [3H]
 * vector) into one [n, 3, heads, D] buffer that the flash attention reads in place; the
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
 * Precision. The element type T of the activations is data: the model holds the KilnBertOps
 * table of its precision (bert_model_ops.h: the same launches over the f32, f16 or bf16
 * libraries) and the size of T, and every T buffer is addressed in elements of that size. fp32
 * reads the f32 parameters directly; fp16 and bf16 keep the f32 parameters as master weights
 * (and f32 moments) and give the forward a T copy in the same layout, which AdamW rewrites after
 * each update. The gradient buffer is f32 in every precision: bias, LayerNorm and embedding
 * gradients are summed into it in f32, and a linear layer's weight gradient, computed in T by the
 * gemm, is widened into it. fp16 scales the loss (the backward's seed) by the GradScaler's scale;
 * the step checks the gradients for inf/NaN on the device (found_inf), and AdamW unscales them
 * (inv_scale, with the clip measuring the unscaled norm) or skips the update.
 *
 * Everything is allocated in kiln_bert_model_create for the largest batch and sequence; the
 * forward, backward and step only launch kernels and copy the batch's few integers in. A
 * plan-only model (kiln_bert_model_create_plan) has no device and no memory and a tap for its
 * table: its forward, backward and step issue every launch of a real one and nothing else, which
 * is how `kiln-bert tune` lists a step's kernel calls (bert_plan.h).
 *
 * Dropout (kiln_bert_model_set_dropout) adds five sites, each with its own Philox stream
 * (kiln_bert_dropout_stream), in every precision (the table's dropout launches): after the
 * embedding LayerNorm and after the attention-output and FFN-output dense layers it is a dropout
 * kernel in place (the backward regenerates the mask from the same stream, so no mask is
 * stored); on the attention probabilities it is inside the flash attention kernels of the
 * DROPOUT = 1 libraries; after the pooler it writes a copy (pooled_drop), since tanh's backward
 * needs the undropped output. With p = 0 none of it runs. */
#include "bert_model.h"
#include "bert_internal.h"
#include "bert_model_ops.h"
#include "kiln_base.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Programs of the first stage of the LayerNorm weight-gradient reduction (and of the token-type
 * embedding's): one per row up to 64 rows, 64 up to 1024 rows, then one per 16 rows up to
 * LN_PARTS. A program walks its rows one after another (each a load, two reductions and a
 * store), so 64 of them over BERT-large's 12288 rows left half an H200's SMs idle and the rest
 * 192 rows deep; ln_parts keeps the 64 of every batch up to 1024 rows, whose sums are as they
 * were. */
#define LN_PARTS 1024
/* Parts of a bias gradient's column sums (colsum_f32's second grid axis): one per 128 rows, at
 * most COLSUM_PARTS, added by layernorm_bwd_reduce into the gradient. */
#define COLSUM_ROWS  128
#define COLSUM_PARTS 256
/* Programs of the gradient norm's first stage (grad_sumsq): a fixed count, so that the norm's
 * order of additions depends on the parameter count and the library's BLOCK only. */
#define SUMSQ_PARTS 1024
/* Split K of a weight gradient dW = dY^T X (gemm.kiln's splits): its N x K output is a few tiles
 * and its K the batch's rows, so that BERT-large's attention output dW (1024 x 1024 over 12288
 * rows) is 64 tiles of 128 x 128 where an H100 or H200 runs 264 at two a SM. Parts of at least
 * DW_SPLIT_ROWS rows, at most DW_SPLITS of them, as many as bring the tiles up to
 * DW_SPLIT_TILES; the same on every device, so that a run's bits do not depend on it. */
#define DW_SPLIT_TILES 264
#define DW_SPLIT_ROWS  512
#define DW_SPLITS      8

/* Offsets (in floats) of one encoder layer's parameters, valid in the parameter, gradient and
 * moment buffers alike. */
typedef struct Layer {
  size_t w[3], b[3]; /* query, key, value */
  size_t wo, bo, g1, b1, wi, bi, wo2, bo2, g2, b2;
} Layer;

/* The activations one encoder layer keeps for its backward (void *: elements of T). */
typedef struct LayerAct {
  void *qkv;            /* [n, 3H] */
  void *ctx;            /* [n, H] attention output */
  float *lse;           /* [rows, heads, cols] */
  void *s1, *x1;        /* [n, H] ctx W_o^T + b + x, and its LayerNorm */
  float *mean1, *rstd1; /* [n] */
  void *u, *h;          /* [n, F] x1 W_i^T, and gelu(u + b_i) */
  void *s2;             /* [n, H] */
  float *mean2, *rstd2; /* [n] */
} LayerAct;

/* The replay of one batch shape's forward and backward: seen once (run on the stream, which
 * also does whatever one-time work the libraries have), then captured; with dropout its
 * arguments change each step, so it is recaptured into the same graph (updated in place). */
typedef struct GraphEntry {
  int rows, cols, dropout;
  KilnRtGraph *graph; /* NULL until the shape's second pass */
  /* the dropout its launches were captured with (their arguments) */
  float drop_p;
  uint64_t drop_seed;
  int64_t drop_step;
} GraphEntry;

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
  /* the precision: its launches over the generated libraries, and the size of T */
  KilnBertPrecision prec;
  const KilnBertOps *ops;
  KilnBertLibs libs;
  size_t es;
  KilnBertScaler scaler; /* fp16's loss scale (1 and unused otherwise) */
  int skipped;           /* the last step's update was skipped */
  /* parameter offsets */
  size_t word, pos, ttype, eg, eb, wp, bp, wc, bc;
  Layer *layer;
  DecayRun *runs;
  size_t nruns;
  /* device buffers: one allocation, carved (see plan()) */
  void *arena;
  float *params, *grads, *m, *v; /* f32: the (master) parameters, gradients, moments */
  float *stash; /* the step's earlier micro-batches' gradient sum (set_stash), or NULL */
  void *w;      /* the weights the kernels read: params (fp32), else their T copy */
  void *dw;     /* T scratch of linear_dw: a weight gradient rounded to T, or its split parts */
  int32_t *ids, *types, *labels, *kv_len, *found_inf;
  void *zeros; /* zero residual / bias for kernels that take one */
  void *emb_out, *emb_s;
  float *emb_mean, *emb_rstd;
  void **x; /* x[l]: input of layer l; x[L] the encoder output */
  LayerAct *act;
  void *pre, *pooled, *logits;
  float *logits32; /* the logits widened for the host (fp16, bf16) */
  float *loss_rows, *xlse, *loss_sum, *dloss;
  void *dlogits, *dpooled, *dpre;
  void *dx, *da, *db, *du, *dctx, *dqkv;
  float *delta, *part_g, *part_b, *sumsq;
  float *part_t;      /* [ln_parts, types, H] the token-type gradient's partial sums */
  float *colsum_part; /* [colsum parts, the widest bias] a bias gradient's partial sums */
  float *sumsq_part;  /* [SUMSQ_PARTS] the gradient norm's partial sums */
  /* the batch's tokens grouped by id for the word gradient (group_tokens_by_id): on the
   * device, sized for the largest batch, and their host staging (+ a count per vocabulary id) */
  int32_t *word_order, *word_starts;
  int32_t *host_order, *host_starts, *host_count;
  /* the last forward's batch shape, and host staging of its small arrays */
  int rows, cols;
  float *host_dloss;
  int mean_rows; /* the rows the backward's mean is over; 0: the batch's (set_loss_rows) */
  KilnBertAllReduceFn allreduce;
  void *allreduce_user;
  /* dropout of the following steps (kiln_bert_model_set_dropout); p 0: none */
  float drop_p;
  uint64_t drop_seed;
  int64_t drop_step;
  void *pooled_drop; /* [B, H] the classifier's input under dropout */
  /* the stream every launch and copy is queued on; the host waits only where it reads */
  KilnRtStream *stream;
  /* whole-step replay (kiln_bert_model_set_graphs): a graph per batch shape */
  int graphs_on;            /* a KILN_BERT_GRAPHS_* mode */
  char graphs_off_why[256]; /* KILN_BERT_GRAPHS_FALLBACK turned off: the failure */
  GraphEntry graphs[KILN_BERT_MAX_GRAPHS];
  int ngraphs;
  KilnBertGraphStats gstats;
};

static KilnBertStatus rt_fail(KilnRtStatus st, const char *what) {
  return kiln_bert_fail(KILN_BERT_ERROR_DEVICE, "%s: %s: %s", what, kiln_rt_status_name(st),
                        kiln_rt_last_error());
}

#define RT(call, what)                                                                             \
  do {                                                                                             \
    KilnRtStatus rt_st_ = (call);                                                                  \
    if (rt_st_ != KILN_RT_OK) return rt_fail(rt_st_, (what));                                      \
  } while (0)

#define TRY(call)                                                                                  \
  do {                                                                                             \
    KilnBertStatus try_st_ = (call);                                                               \
    if (try_st_ != KILN_BERT_OK) return try_st_;                                                   \
  } while (0)

/* Element i of a T buffer. */
static void *at(const KilnBertModel *m, void *base, size_t i) { return (char *)base + i * m->es; }
/* The weights the kernels read, at a parameter offset. */
static void *wt(const KilnBertModel *m, size_t off) { return at(m, m->w, off); }

/* The step's host <-> device copies and fills. A plan-only model (no device:
 * kiln_bert_model_create_plan) has no memory, so they do nothing there (a read gives zeros):
 * only its launches, recorded by its table, matter. */
/* Every copy is queued on the model's stream behind the launches before it; one from the host
 * waits until its source has been read (the caller may reuse it on return), one to the host
 * until its bytes have arrived: the only places the host waits for the device. */
static KilnRtStatus copy_in(KilnBertModel *m, void *dst, const void *src, size_t bytes) {
  if (!m->dev) return KILN_RT_OK;
  KilnRtStatus st = kiln_rt_memcpy_htod(m->dev, dst, src, bytes, m->stream);
  return st == KILN_RT_OK ? kiln_rt_stream_synchronize(m->stream) : st;
}

static KilnRtStatus copy_out(KilnBertModel *m, void *dst, const void *src, size_t bytes) {
  if (!m->dev) {
    memset(dst, 0, bytes);
    return KILN_RT_OK;
  }
  KilnRtStatus st = kiln_rt_memcpy_dtoh(m->dev, dst, src, bytes, m->stream);
  return st == KILN_RT_OK ? kiln_rt_stream_synchronize(m->stream) : st;
}

static KilnRtStatus fill(KilnBertModel *m, void *dst, int value, size_t bytes) {
  return m->dev ? kiln_rt_memset(m->dev, dst, value, bytes, m->stream) : KILN_RT_OK;
}

/* ---- the operations, each one kernel launch ----------------------------------------------- */

/* C[M, N] (row stride ldc) = A B (+ epilogue), A[i, k] = a[i sam + k sak], B[k, j] = b[k sbk + j sbn]:
 * epi 0 plain, 1 + bias, 3 + bias + res (res with C's strides). */
static KilnBertStatus gemm(KilnBertModel *m, int epi, void *a, void *b, void *c, void *bias,
                           void *res, int M, int N, int K, int sam, int sak, int sbk, int sbn,
                           int ldc) {
  if (!bias) bias = m->zeros;
  if (!res) res = m->zeros;
  RT(m->ops->gemm(&m->libs, epi, a, b, c, bias, res, M, N, K, sam, sak, sbk, sbn, ldc, 1), "gemm");
  return KILN_BERT_OK;
}

/* y[M, N] (row stride ldy) = x[M, K] (row stride ldx) W^T + b for W [N, K]; res added when
 * given (epi 3). */
static KilnBertStatus linear_fwd(KilnBertModel *m, void *x, int ldx, void *w, void *b, void *res,
                                 void *y, int ldy, int M, int N, int K) {
  return gemm(m, res ? 3 : 1, x, w, y, b, res, M, N, K, ldx, 1, 1, K, ldy);
}

/* dX[M, K] (row stride ldx) = dY[M, N] (row stride ldy) W (+ res) for W [N, K]. */
static KilnBertStatus linear_dx(KilnBertModel *m, void *dy, int ldy, void *w, void *res, void *dx,
                                int ldx, int M, int N, int K) {
  return gemm(m, res ? 3 : 0, dy, w, dx, NULL, res, M, K, N, ldy, 1, K, 1, ldx);
}

/* The programs of the first stage of a LayerNorm backward's weight reduction over n rows. */
static int ln_parts(int n) {
  if (n <= 1024) return n < 64 ? n : 64;
  int p = (n + 15) / 16;
  return p < LN_PARTS ? p : LN_PARTS;
}

/* The row parts of a bias gradient's column sums over `rows` rows. */
static int colsum_parts(int rows) {
  int p = (rows + COLSUM_ROWS - 1) / COLSUM_ROWS;
  return p < COLSUM_PARTS ? p : COLSUM_PARTS;
}

/* out[c] = the sum of x's rows (a bias gradient): in row parts (COLSUM_ROWS rows each, so that
 * a large batch gives the GPU a program per part and column block), then the parts added by
 * layernorm_bwd_reduce; a batch of COLSUM_ROWS rows or fewer in one pass. */
static KilnBertStatus colsum(KilnBertModel *m, void *x, float *out, int rows, int cols, int ld) {
  int parts = colsum_parts(rows);
  if (parts <= 1) {
    RT(m->ops->colsum(&m->libs, x, out, rows, cols, ld, 1), "colsum_f32");
    return KILN_BERT_OK;
  }
  RT(m->ops->colsum(&m->libs, x, m->colsum_part, rows, cols, ld, parts), "colsum_f32");
  RT(m->ops->sum_rows(&m->libs, m->colsum_part, out, parts, cols), "layernorm_bwd_reduce");
  return KILN_BERT_OK;
}

/* The parts of K = `rows` that dW [N, K] is computed in (DW_SPLIT_TILES). */
static int dw_splits(size_t rows, size_t N, size_t K) {
  size_t tiles = ((N + 127) / 128) * ((K + 127) / 128);
  size_t s = DW_SPLIT_TILES / tiles, most = rows / DW_SPLIT_ROWS;
  if (s > most) s = most;
  if (s > DW_SPLITS) s = DW_SPLITS;
  return s < 1 ? 1 : (int)s;
}

/* dW[N, K] = dY[M, N]^T X[M, K] (row strides ldy, ldx), written over the f32 gradient at
 * parameter offset `off`: in fp32 in one part directly; else through the T scratch m->dw, with
 * a widening copy (one part) or the parts' column sums (split K: colsum_f32 over `splits`
 * rows of N K columns, f32 whatever T). */
static KilnBertStatus linear_dw(KilnBertModel *m, void *dy, int ldy, void *x, int ldx, size_t off,
                                int M, int N, int K) {
  int splits = dw_splits((size_t)M, (size_t)N, (size_t)K);
  float *grad = m->grads + off;
  if (!m->ops->half_weights && splits == 1)
    return gemm(m, 0, dy, x, grad, NULL, NULL, N, K, M, 1, ldy, ldx, 1, K);
  RT(m->ops->gemm(&m->libs, 0, dy, x, m->dw, m->zeros, m->zeros, N, K, M, 1, ldy, ldx, 1, K,
                  splits),
     "gemm");
  if (splits > 1) return colsum(m, m->dw, grad, splits, N * K, N * K);
  RT(m->ops->to_f32(&m->libs, m->dw, grad, N * K), "cast_to_f32");
  return KILN_BERT_OK;
}

/* s = x + res, y = LayerNorm(s); with `drop` (a site's stream, dropout on) x is dropped first:
 * s = dropout(x) + res in one pass, where a dropout launch over x came before. */
static KilnBertStatus layernorm_fwd(KilnBertModel *m, void *x, void *res, size_t g, size_t b,
                                    void *s, void *y, float *mean, float *rstd, int n,
                                    const KilnBertPhilox *drop) {
  RT(m->ops->ln_fwd(&m->libs, x, res, wt(m, g), wt(m, b), s, y, mean, rstd, n, m->H,
                    (float)m->cfg.layer_norm_eps, drop ? m->drop_p : 0.0f, drop ? drop->seed : 0,
                    drop ? drop->offset : 0),
     "layernorm_fwd");
  return KILN_BERT_OK;
}

/* dx = LayerNorm backward of dy at s; gamma's and beta's gradients into the gradient buffer.
 * With `drop` (the forward's stream) also dx_drop = the gradient of the forward's x before its
 * dropout, in the same pass, returned in *x_grad; without, *x_grad = dx. */
static KilnBertStatus layernorm_bwd(KilnBertModel *m, void *s, void *dy, size_t g, size_t b,
                                    float *mean, float *rstd, void *dx, void *dx_drop, int n,
                                    const KilnBertPhilox *drop, void **x_grad) {
  int parts = ln_parts(n);
  RT(m->ops->ln_bwd(&m->libs, s, dy, wt(m, g), mean, rstd, dx, drop ? dx_drop : dx, m->part_g,
                    m->part_b, n, m->H, parts, drop ? m->drop_p : 0.0f, drop ? drop->seed : 0,
                    drop ? drop->offset : 0),
     "layernorm_bwd");
  RT(m->ops->sum_rows(&m->libs, m->part_g, m->grads + g, parts, m->H), "layernorm_bwd_reduce");
  RT(m->ops->sum_rows(&m->libs, m->part_b, m->grads + b, parts, m->H), "layernorm_bwd_reduce");
  if (x_grad) *x_grad = drop ? dx_drop : dx;
  return KILN_BERT_OK;
}

/* The Philox stream of a dropout site of the current step (layer -1 for the embeddings and
 * the pooler). */
static KilnBertPhilox drop_stream(const KilnBertModel *m, int layer, KilnBertDropSite site) {
  return kiln_bert_dropout_stream(m->drop_seed, m->drop_step, layer, site, m->rows, m->cols,
                                  &m->cfg);
}

/* A site's stream in *buf when dropout is on, else NULL (what layernorm_fwd and layernorm_bwd
 * take for "no dropout"). */
static const KilnBertPhilox *site_stream(const KilnBertModel *m, int layer, KilnBertDropSite site,
                                         KilnBertPhilox *buf) {
  if (m->drop_p <= 0) return NULL;
  *buf = drop_stream(m, layer, site);
  return buf;
}

/* One attention call on layer activations a: Q, K, V at qkv, qkv + H, qkv + 2H with the
 * [n, 3, heads, D] strides; O (the context) and dO (m->dctx) dense [n, H]; dQ, dK, dV into
 * m->dqkv with Q's strides. */
static KilnBertAttn attn_args(KilnBertModel *m, LayerAct *a) {
  int S = m->cols, H = m->H;
  /* with dropout on, the probabilities' stream of this layer (the DROPOUT = 1 kernels) */
  KilnBertPhilox ph = {0, 0};
  if (m->drop_p > 0) ph = drop_stream(m, (int)(a - m->act), KILN_BERT_DROP_ATTN_PROBS);
  return (KilnBertAttn){.q = a->qkv,
                        .k = at(m, a->qkv, (size_t)H),
                        .v = at(m, a->qkv, 2 * (size_t)H),
                        .o = a->ctx,
                        .dout = m->dctx,
                        .dq = m->dqkv,
                        .dk = at(m, m->dqkv, (size_t)H),
                        .dv = at(m, m->dqkv, 2 * (size_t)H),
                        .lse = a->lse,
                        .delta = m->delta,
                        .kv_len = m->kv_len,
                        .S = S,
                        .heads = m->heads,
                        .D = m->D,
                        .sb = S * 3 * H,
                        .sh = m->D,
                        .ss = 3 * H,
                        .osb = S * H,
                        .osh = m->D,
                        .oss = H,
                        .bh = m->rows * m->heads,
                        .scale = 1.0f / sqrtf((float)m->D),
                        .p_drop = m->drop_p,
                        .seed = ph.seed,
                        .offset = ph.offset};
}

static KilnBertStatus attn_fwd(KilnBertModel *m, LayerAct *a) {
  KilnBertAttn args = attn_args(m, a);
  RT(m->ops->attn_fwd(&m->libs, &args), "attn_fwd");
  return KILN_BERT_OK;
}

/* dQ, dK, dV into m->dqkv from dO in m->dctx. */
static KilnBertStatus attn_bwd(KilnBertModel *m, LayerAct *a) {
  KilnBertAttn args = attn_args(m, a);
  RT(m->ops->attn_bwd_delta(&m->libs, &args), "attn_bwd_delta");
  RT(m->ops->attn_bwd_dkdv(&m->libs, &args), "attn_bwd_dkdv");
  RT(m->ops->attn_bwd_dq(&m->libs, &args), "attn_bwd_dq");
  return KILN_BERT_OK;
}

/* y[0..count) = dropout(x) for a site of the current step (x == y: in place); nothing when
 * dropout is off. */
static KilnBertStatus drop_fwd(KilnBertModel *m, void *x, void *y, int count, int layer,
                               KilnBertDropSite site) {
  if (m->drop_p <= 0) return KILN_BERT_OK;
  KilnBertPhilox ph = drop_stream(m, layer, site);
  RT(m->ops->drop_fwd(&m->libs, x, y, count, m->drop_p, ph.seed, ph.offset), "dropout_fwd");
  return KILN_BERT_OK;
}

/* The gradient before a site's dropout from dy, the gradient after it: written to dx (which may
 * be dy) and returned; with dropout off, dy itself. */
static KilnBertStatus drop_bwd(KilnBertModel *m, void *dy, void *dx, int count, int layer,
                               KilnBertDropSite site, void **out) {
  *out = dy;
  if (m->drop_p <= 0) return KILN_BERT_OK;
  KilnBertPhilox ph = drop_stream(m, layer, site);
  RT(m->ops->drop_bwd(&m->libs, dy, dx, count, m->drop_p, ph.seed, ph.offset), "dropout_bwd");
  *out = dx;
  return KILN_BERT_OK;
}

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
#define P(fmt)                                                                                     \
  (snprintf(name, sizeof name, "bert.encoder.layer.%d." fmt, l), param_off(m, name, missing))
  for (int l = 0; l < m->L; l++) {
    Layer *y = &m->layer[l];
    for (int j = 0; j < 3; j++) {
      snprintf(name, sizeof name, "bert.encoder.layer.%d.attention.self.%s.weight", l, qkv[j]);
      y->w[j] = param_off(m, name, missing);
      snprintf(name, sizeof name, "bert.encoder.layer.%d.attention.self.%s.bias", l, qkv[j]);
      y->b[j] = param_off(m, name, missing);
    }
    /* the fused QKV projection reads W_q, W_k, W_v as one [3H, H] matrix and the biases as
     * one [3H] vector (the layout puts them so: bert_params.h) */
    size_t HH = (size_t)m->H * (size_t)m->H, Hs = (size_t)m->H;
    if (y->w[1] != y->w[0] + HH || y->w[2] != y->w[1] + HH || y->b[1] != y->b[0] + Hs ||
        y->b[2] != y->b[1] + Hs)
      *missing = 1;
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

static int by_offset(const void *a, const void *b) {
  size_t x = (*(const KilnBertParam *const *)a)->offset,
         y = (*(const KilnBertParam *const *)b)->offset;
  return x < y ? -1 : x > y;
}

/* The AdamW launches: parameters adjacent in the flat buffer with the same decay flag, the
 * alignment padding between them included (its gradient is always 0 and its value stays 0).
 * The layout puts the decayed ones first (bert_params.h): two launches. */
static int plan_runs(KilnBertModel *m) {
  const KilnBertParams *pl = &m->layout;
  const KilnBertParam **order = calloc(pl->n ? pl->n : 1, sizeof *order);
  m->runs = calloc(pl->n ? pl->n : 1, sizeof *m->runs);
  if (!m->runs || !order) {
    free(order);
    return -1;
  }
  for (size_t i = 0; i < pl->n; i++) order[i] = &pl->p[i];
  qsort(order, pl->n, sizeof *order, by_offset);
  for (size_t i = 0; i < pl->n; i++) {
    const KilnBertParam *p = order[i];
    DecayRun *last = m->nruns ? &m->runs[m->nruns - 1] : NULL;
    if (last && last->decay == p->decay) {
      last->len = p->offset + p->numel - last->off;
    } else {
      m->runs[m->nruns++] = (DecayRun){p->offset, p->numel, p->decay};
    }
  }
  free(order);
  return 0;
}

/* The elements of linear_dw's scratch at up to n encoder rows: the largest weight gradient
 * that is split or rounded to T, times its parts (0 when none is). */
static size_t dw_scratch(const KilnBertModel *m, size_t n) {
  size_t H = (size_t)m->H, F = (size_t)m->F, B = (size_t)m->max_rows;
  /* every linear_dw: [rows, N, K] */
  const size_t shapes[][3] = {{n, 3 * H, H}, {n, H, H}, {n, F, H},
                              {n, H, F},     {B, H, H}, {B, (size_t)m->NL, H}};
  size_t most = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    size_t splits = (size_t)dw_splits(shapes[i][0], shapes[i][1], shapes[i][2]);
    size_t need = splits * shapes[i][1] * shapes[i][2];
    if ((splits > 1 || m->ops->half_weights) && need > most) most = need;
  }
  return most;
}

/* Carves every device buffer out of one allocation: called twice, first with base NULL to
 * size it (the pointers stay NULL), then with the real base. 64-byte aligned pieces; TAKE_T
 * for buffers of the element type T. The end of each piece goes to ends[] when given (at most
 * PLAN_MAX_PARTS), their count to *nends. */
enum { PLAN_MAX_PARTS = 4096 };
static size_t plan_parts(KilnBertModel *m, char *base, size_t *ends, size_t *nends) {
  size_t at = 0, nparts = 0;
#define TAKE_BYTES(ptr, bytes)                                                                     \
  do {                                                                                             \
    (ptr) = base ? (void *)(base + at) : NULL;                                                     \
    at += ((size_t)(bytes) + 63) & ~(size_t)63;                                                    \
    if (ends && nparts < PLAN_MAX_PARTS) ends[nparts] = at;                                        \
    nparts++;                                                                                      \
  } while (0)
#define TAKE(ptr, count, type) TAKE_BYTES(ptr, (size_t)(count) * sizeof(type))
#define TAKE_T(ptr, count)     TAKE_BYTES(ptr, (size_t)(count) * m->es)
  size_t P = m->layout.total, n = (size_t)m->max_rows * (size_t)m->max_cols;
  size_t H = (size_t)m->H, F = (size_t)m->F, B = (size_t)m->max_rows;
  size_t bhs = B * (size_t)m->heads * (size_t)m->max_cols;
  size_t NL = (size_t)m->NL;
  size_t zn = n * H > F ? n * H : F;
  if (zn < 3 * H) zn = 3 * H;
  int half = m->ops->half_weights;
  /* the widest linear weight: [F, H], the fused QKV's [3H, H] or the classifier's [NL, H] */
  size_t wrows = F > 3 * H ? F : 3 * H;
  TAKE(m->params, P, float);
  TAKE(m->grads, P, float);
  TAKE(m->m, P, float);
  TAKE(m->v, P, float);
  if (half) {
    TAKE_T(m->w, P);
    TAKE(m->logits32, B * NL, float);
  } else {
    m->w = m->params;
  }
  size_t dw_elems = dw_scratch(m, n);
  if (dw_elems) TAKE_T(m->dw, dw_elems);
  TAKE(m->ids, n, int32_t);
  TAKE(m->types, n, int32_t);
  TAKE(m->word_order, n, int32_t);
  TAKE(m->word_starts, n + 1, int32_t);
  TAKE(m->labels, B, int32_t);
  TAKE(m->kv_len, B, int32_t);
  TAKE(m->found_inf, 1, int32_t);
  TAKE_T(m->zeros, zn);
  TAKE_T(m->emb_out, n * H);
  TAKE_T(m->emb_s, n * H);
  TAKE(m->emb_mean, n, float);
  TAKE(m->emb_rstd, n, float);
  for (int l = 0; l <= m->L; l++)
    if (l) TAKE_T(m->x[l], n * H);
  for (int l = 0; l < m->L; l++) {
    LayerAct *a = &m->act[l];
    TAKE_T(a->qkv, n * 3 * H);
    TAKE_T(a->ctx, n * H);
    TAKE(a->lse, bhs, float);
    TAKE_T(a->s1, n * H);
    TAKE_T(a->x1, n * H);
    TAKE(a->mean1, n, float);
    TAKE(a->rstd1, n, float);
    TAKE_T(a->u, n * F);
    TAKE_T(a->h, n * F);
    TAKE_T(a->s2, n * H);
    TAKE(a->mean2, n, float);
    TAKE(a->rstd2, n, float);
  }
  TAKE_T(m->pre, B * H);
  TAKE_T(m->pooled, B * H);
  TAKE_T(m->pooled_drop, B * H);
  TAKE_T(m->logits, B * NL);
  TAKE(m->loss_rows, B, float);
  TAKE(m->xlse, B, float);
  TAKE(m->loss_sum, 1, float);
  TAKE(m->dloss, B, float);
  TAKE_T(m->dlogits, B * NL);
  TAKE_T(m->dpooled, B * H);
  TAKE_T(m->dpre, B * H);
  TAKE_T(m->dx, n * H);
  TAKE_T(m->da, n * H);
  TAKE_T(m->db, n * H);
  TAKE_T(m->du, n * F);
  TAKE_T(m->dctx, n * H);
  TAKE(m->delta, bhs, float);
  TAKE_T(m->dqkv, n * 3 * H);
  TAKE(m->part_g, (size_t)ln_parts((int)n) * H, float);
  TAKE(m->part_b, (size_t)ln_parts((int)n) * H, float);
  /* the widest bias gradient: the FFN's F, the fused QKV's 3H or the classifier's NL */
  TAKE(m->colsum_part, (size_t)colsum_parts((int)n) * (wrows > NL ? wrows : NL), float);
  TAKE(m->sumsq, 1, float);
  TAKE(m->part_t, (size_t)ln_parts((int)n) * (size_t)m->cfg.type_vocab_size * H, float);
  TAKE(m->sumsq_part, SUMSQ_PARTS, float);
#undef TAKE_T
#undef TAKE
#undef TAKE_BYTES
  if (nends) *nends = nparts;
  return at;
}

static size_t plan(KilnBertModel *m, char *base) { return plan_parts(m, base, NULL, NULL); }

/* Tells the runtime where each tensor of the arena ends (kiln_rt_mem_set_parts), so that the
 * launch check of kernels compiled with 32-bit offsets judges a pointer by its own tensor, not
 * by the rest of the arena behind it: a batch whose arena holds more than 2^31 elements past a
 * tensor would otherwise be refused although no kernel's offsets come near 2^31. */
static KilnRtStatus mark_parts(KilnBertModel *m) {
  size_t n = 0;
  plan_parts(m, m->arena, NULL, &n);
  if (n > PLAN_MAX_PARTS)
    return kiln_rt_set_error(KILN_RT_ERROR_INVALID_ARGUMENT,
                             "model: %zu buffers in the memory plan, more than %d", n,
                             (int)PLAN_MAX_PARTS);
  size_t *ends = malloc(n * sizeof *ends);
  if (!ends) return kiln_rt_set_error(KILN_RT_ERROR_OUT_OF_MEMORY, "model: out of host memory");
  plan_parts(m, m->arena, ends, &n);
  KilnRtStatus st = kiln_rt_mem_set_parts(m->dev, m->arena, ends, n);
  free(ends);
  return st;
}

int kiln_bert_precision_parse(const char *name, KilnBertPrecision *out) {
  static const char *const names[] = {"fp32", "fp16", "bf16"};
  for (int i = 0; i < 3; i++)
    if (name && !strcmp(name, names[i])) {
      *out = (KilnBertPrecision)i;
      return 0;
    }
  return -1;
}

KilnBertStatus kiln_bert_precision_resolve(const char *what, const char *name, int tf32,
                                           KilnBertPrecision *out) {
  if (kiln_bert_precision_parse(name, out) != 0)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "%s: --precision %s: expected fp32, fp16 or bf16", what,
                          name ? name : "(none)");
  if (!tf32) return KILN_BERT_OK;
  if (*out != KILN_BERT_FP32)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "%s: --tf32 is for --precision fp32 (TF32 tensor cores for the f32 "
                          "gemms); %s gemms already run on tensor cores in %s",
                          what, name, name);
  *out = KILN_BERT_FP32_TF32;
  return KILN_BERT_OK;
}

int kiln_bert_precision_half(KilnBertPrecision prec) {
  return prec == KILN_BERT_FP16 || prec == KILN_BERT_BF16;
}

const char *kiln_bert_precision_name(KilnBertPrecision prec) {
  switch (prec) {
  case KILN_BERT_FP16: return "fp16";
  case KILN_BERT_BF16: return "bf16";
  case KILN_BERT_FP32_TF32: return "fp32+tf32";
  default: return "fp32";
  }
}

/* The table of a precision (the emu copy's are over the emu libraries). */
static const KilnBertOps *precision_ops(KilnBertPrecision prec) {
  switch (prec) {
  case KILN_BERT_FP16: return &kiln_bert_ops_f16;
  case KILN_BERT_BF16: return &kiln_bert_ops_bf16;
  case KILN_BERT_FP32_TF32: return &kiln_bert_ops_tf32;
  default: return &kiln_bert_ops_f32;
  }
}

KilnBertStatus kiln_bert_model_create(KilnRtDevice *dev, const KilnBertConfig *cfg, int max_batch,
                                      int max_seq, KilnBertModel **out) {
  return kiln_bert_model_create_precision(dev, cfg, KILN_BERT_FP32, max_batch, max_seq, out);
}

/* The model's shape without its memory: every check of the config and batch, the fields, the
 * layout and the host-side arrays, so that plan() can size (or carve) the one allocation. dev
 * may be NULL when only the size is wanted. */
static KilnBertStatus model_shape(KilnRtDevice *dev, const KilnBertConfig *cfg,
                                  KilnBertPrecision prec, int max_batch, int max_seq,
                                  KilnBertModel **out) {
  *out = NULL;
  if (prec != KILN_BERT_FP32 && prec != KILN_BERT_FP16 && prec != KILN_BERT_BF16 &&
      prec != KILN_BERT_FP32_TF32)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "model: unknown precision %d",
                          (int)prec);
  if (!cfg || max_batch < 1 || max_seq < 2 || max_seq > cfg->max_position_embeddings)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: a batch of %d rows of %d tokens does not fit", max_batch,
                          max_seq);
  int D = cfg->hidden_size / cfg->num_attention_heads;
  if (D != 16 && D != 64)
    return kiln_bert_fail(
        KILN_BERT_ERROR_INVALID_ARGUMENT,
        "model: head dimension %d: the attention libraries are built for 16 and 64", D);
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
  m->prec = prec;
  m->ops = precision_ops(prec);
  m->es = m->ops->esize;
  kiln_bert_scaler_init(&m->scaler);
  if (prec != KILN_BERT_FP16) m->scaler.scale = 1.0f; /* no loss scaling */
  KilnBertStatus st = kiln_bert_params_layout(cfg, &m->layout);
  if (st != KILN_BERT_OK) {
    free(m);
    return st;
  }
  m->layer = calloc((size_t)m->L + 1, sizeof *m->layer);
  m->act = calloc((size_t)m->L + 1, sizeof *m->act);
  m->x = calloc((size_t)m->L + 1, sizeof *m->x);
  m->host_dloss = calloc((size_t)max_batch, sizeof *m->host_dloss);
  size_t ntok = (size_t)max_batch * (size_t)max_seq;
  m->host_order = calloc(ntok, sizeof *m->host_order);
  m->host_starts = calloc(ntok + 1, sizeof *m->host_starts);
  m->host_count = calloc((size_t)cfg->vocab_size + 1, sizeof *m->host_count);
  if (!m->layer || !m->act || !m->x || !m->host_dloss || !m->host_order || !m->host_starts ||
      !m->host_count || plan_runs(m)) {
    kiln_bert_model_destroy(m);
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "model: out of memory");
  }
  int missing = 0;
  find_params(m, &missing);
  if (missing) {
    kiln_bert_model_destroy(m);
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: the layout lacks a parameter, or does not hold a layer's query, "
                          "key and value consecutively");
  }
  /* LayerNorm's backward walks a row in one BLOCK: some variant must cover the hidden size. */
  if (!m->ops->ln_bwd_covers(max_batch * max_seq, m->H)) {
    kiln_bert_model_destroy(m);
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: no layernorm_bwd variant of the library covers hidden size %d",
                          m->H);
  }
  *out = m;
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_plan_bytes(const KilnBertConfig *cfg, KilnBertPrecision prec,
                                          int max_batch, int max_seq, size_t *bytes) {
  KilnBertModel *m = NULL;
  TRY(model_shape(NULL, cfg, prec, max_batch, max_seq, &m));
  *bytes = plan(m, NULL);
  kiln_bert_model_destroy(m);
  return KILN_BERT_OK;
}

/* The free memory of a cuda device, read by opening it (cuMemGetInfo counts what other
 * processes hold too); the device is closed again, since the check runs before the run opens
 * its own. */
static KilnBertStatus cuda_free_memory(const char *device, size_t *bytes) {
  KilnRtDevice *dev = NULL;
  KilnRtDeviceInfo info;
  KilnRtStatus rs = kiln_rt_device_create(device, &dev);
  if (rs == KILN_RT_OK) rs = kiln_rt_device_info(dev, &info);
  kiln_rt_device_destroy(dev);
  char what[160];
  snprintf(what, sizeof what, "--device %s", device);
  if (rs != KILN_RT_OK) return rt_fail(rs, what);
  *bytes = info.free_mem;
  return KILN_BERT_OK;
}

/* The memory `device` offers a model: limit when it is not 0 (--max-device-bytes), else
 * KILN_DEVICE_MEMORY, else on cuda the device's free memory, else the host's physical memory
 * (the cpu and emu devices keep their buffers in host memory). *source says which, for the
 * message. */
static KilnBertStatus device_memory(const char *device, size_t limit, size_t *bytes,
                                    const char **source) {
  if (limit) {
    *bytes = limit;
    *source = "--max-device-bytes";
    return KILN_BERT_OK;
  }
  const char *env = getenv("KILN_DEVICE_MEMORY");
  if (env && *env) {
    if (kiln_parse_bytes(env, bytes))
      return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                            "KILN_DEVICE_MEMORY=%s: expected a positive number of bytes, "
                            "optionally with K, M, G or T (KiB, MiB, ...)",
                            env);
    *source = "KILN_DEVICE_MEMORY";
    return KILN_BERT_OK;
  }
  if (device && !strncmp(device, "cuda", 4)) {
    *source = "free on the GPU (cuMemGetInfo)";
    return cuda_free_memory(device, bytes);
  }
  *bytes = kiln_host_memory_bytes();
  if (*bytes == SIZE_MAX) { /* unknown: no limit but the allocator's */
    *source = "unknown";
    return KILN_BERT_OK;
  }
  *source = device && !strcmp(device, "emu") ? "the host's memory, which the emu device uses"
                                             : "the host's memory, which the cpu device uses";
  return KILN_BERT_OK;
}

/* The gradient stash's bytes (kiln_bert_model_set_stash): one f32 per parameter, rounded up
 * as the allocator does; 0 when the layout cannot be made (plan_bytes has refused it then). */
static size_t stash_bytes(const KilnBertConfig *cfg) {
  KilnBertParams lay;
  if (kiln_bert_params_layout(cfg, &lay) != KILN_BERT_OK) return 0;
  size_t bytes = lay.total * sizeof(float);
  kiln_bert_params_free(&lay);
  return bytes;
}

KilnBertStatus kiln_bert_model_check_memory(const KilnBertConfig *cfg, KilnBertPrecision prec,
                                            int max_batch, int max_seq, const char *device,
                                            size_t limit, size_t *needed) {
  return kiln_bert_model_check_memory_copies(cfg, prec, max_batch, max_seq, device, limit, 1, 0,
                                             needed);
}

KilnBertStatus kiln_bert_model_check_memory_copies(const KilnBertConfig *cfg,
                                                   KilnBertPrecision prec, int max_batch,
                                                   int max_seq, const char *device, size_t limit,
                                                   int copies, int stash, size_t *needed) {
  size_t one = 0, have = 0;
  const char *source = NULL;
  if (copies < 1)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "model: %d copies", copies);
  TRY(kiln_bert_model_plan_bytes(cfg, prec, max_batch, max_seq, &one));
  if (stash) one += stash_bytes(cfg);
  TRY(device_memory(device, limit, &have, &source));
  if (one > SIZE_MAX / (size_t)copies)
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "model: %d copies of %zu bytes overflow",
                          copies, one);
  size_t need = one * (size_t)copies;
  if (needed) *needed = need;
  if (need <= have) return KILN_BERT_OK;
  KilnBertParams lay;
  TRY(kiln_bert_params_layout(cfg, &lay));
  /* parameters, gradients, two moments (and the stash) */
  size_t state = (4 + (stash != 0)) * lay.total * sizeof(float) * (size_t)copies;
  kiln_bert_params_free(&lay);
  char a[32], b[32], c[32], n[48] = "";
  if (copies > 1) snprintf(n, sizeof n, "%d copies of ", copies);
  return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY,
                        "%sa batch of %d x %d tokens in %s needs %s (%zu bytes) of %s device "
                        "memory (%s of it the parameters, gradients%s and AdamW moments, the rest "
                        "activations), but %s (%zu bytes) is available (%s): use a smaller "
                        "--batch or --seq-len%s",
                        n, max_batch, max_seq, kiln_bert_precision_name(prec),
                        kiln_bytes_text(need, a, sizeof a), need, device ? device : "the",
                        kiln_bytes_text(state, b, sizeof b), stash ? ", the gradient stash" : "",
                        kiln_bytes_text(have, c, sizeof c), have, source,
                        copies > 1 ? ", or fewer --replicas" : "");
}

KilnBertStatus kiln_bert_model_create_precision(KilnRtDevice *dev, const KilnBertConfig *cfg,
                                                KilnBertPrecision prec, int max_batch, int max_seq,
                                                KilnBertModel **out) {
  *out = NULL;
  if (!dev)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "model: no device to plan it on");
  KilnBertModel *m = NULL;
  TRY(model_shape(dev, cfg, prec, max_batch, max_seq, &m));
  size_t bytes = plan(m, NULL);
  KilnRtStatus rs = kiln_rt_malloc(dev, bytes, &m->arena);
  if (rs != KILN_RT_OK) {
    kiln_bert_model_destroy(m);
    return rt_fail(rs, "model: allocating the memory plan");
  }
  plan(m, m->arena);
  m->x[0] = m->emb_out;
  rs = mark_parts(m);
  /* Zero everything once: moments, the zero buffer, gradient padding, token types, flags. */
  if (rs == KILN_RT_OK) rs = kiln_rt_memset(dev, m->arena, 0, bytes, NULL);
  if (rs == KILN_RT_OK) rs = kiln_rt_stream_create(dev, &m->stream);
  if (rs == KILN_RT_OK) rs = m->ops->create(dev, &m->libs);
  m->libs.stream = m->stream;
  if (rs != KILN_RT_OK) {
    KilnBertStatus f = rt_fail(rs, "model: setting up the kernel libraries");
    kiln_bert_model_destroy(m);
    return f;
  }
  *out = m;
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_create_plan(const KilnBertConfig *cfg, KilnBertPrecision prec,
                                           int max_batch, int max_seq, const KilnBertOps *tap,
                                           void *tap_user, KilnBertModel **out) {
  *out = NULL;
  KilnBertModel *m = NULL;
  TRY(model_shape(NULL, cfg, prec, max_batch, max_seq, &m));
  /* No memory: the buffers get distinct addresses carved from a made-up base that nothing
   * dereferences (the tap only records shapes, and the copies skip a model without a device). */
  plan(m, (char *)(uintptr_t)4096);
  m->x[0] = m->emb_out;
  m->ops = tap;
  m->libs.tap = tap_user;
  *out = m;
  return KILN_BERT_OK;
}

void kiln_bert_model_tap(KilnBertModel *m, const KilnBertOps *tap, void *tap_user,
                         const KilnBertOps **real, KilnBertLibs *real_libs) {
  *real = m->ops;
  *real_libs = m->libs;
  m->ops = tap;
  m->libs.tap = tap_user;
}

const KilnBertOps *kiln_bert_model_ops(const KilnBertModel *m) { return m->ops; }

void kiln_bert_model_destroy(KilnBertModel *m) {
  if (!m) return;
  for (int i = 0; i < m->ngraphs; i++) kiln_rt_graph_destroy(m->graphs[i].graph);
  kiln_rt_stream_destroy(m->stream); /* waits for the work queued on it */
  if (m->ops && m->dev) m->ops->destroy(&m->libs);
  if (m->stash) kiln_rt_free(m->dev, m->stash);
  if (m->arena) kiln_rt_free(m->dev, m->arena);
  kiln_bert_params_free(&m->layout);
  free(m->layer);
  free(m->act);
  free(m->x);
  free(m->runs);
  free(m->host_dloss);
  free(m->host_order);
  free(m->host_starts);
  free(m->host_count);
  free(m);
}

const KilnBertParams *kiln_bert_model_params(const KilnBertModel *m) { return &m->layout; }

KilnBertStatus kiln_bert_model_set_params(KilnBertModel *m, const float *flat) {
  RT(copy_in(m, m->params, flat, m->layout.total * sizeof(float)),
     "model: copying the parameters in");
  /* fp16/bf16: the forward's T weights from the masters (AdamW keeps them in step after) */
  if (m->ops->half_weights)
    RT(m->ops->from_f32(&m->libs, m->params, m->w, (int)m->layout.total), "cast_from_f32");
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_get_params(KilnBertModel *m, float *flat) {
  RT(copy_out(m, flat, m->params, m->layout.total * sizeof(float)),
     "model: copying the parameters out");
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_get_grads(KilnBertModel *m, float *flat) {
  RT(copy_out(m, flat, m->grads, m->layout.total * sizeof(float)),
     "model: copying the gradients out");
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_set_grads(KilnBertModel *m, const float *flat) {
  RT(copy_in(m, m->grads, flat, m->layout.total * sizeof(float)),
     "model: copying the gradients in");
  return KILN_BERT_OK;
}

float *kiln_bert_model_grad_buffer(const KilnBertModel *m) { return m->grads; }

KilnBertStatus kiln_bert_model_zero_grads(KilnBertModel *m) {
  RT(fill(m, m->grads, 0, m->layout.total * sizeof(float)), "model: memset");
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_set_stash(KilnBertModel *m, int on) {
  if (!m->dev)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: a plan-only model has no gradient stash");
  if (!on || m->stash) {
    if (!on && m->stash) {
      /* nothing queued may still read it */
      RT(kiln_rt_stream_synchronize(m->stream), "model: freeing the gradient stash");
      kiln_rt_free(m->dev, m->stash);
      m->stash = NULL;
    }
    return KILN_BERT_OK;
  }
  void *p = NULL;
  RT(kiln_rt_malloc(m->dev, m->layout.total * sizeof(float), &p),
     "model: allocating the gradient stash");
  m->stash = p;
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_stash_grads(KilnBertModel *m, int first) {
  if (!m->stash)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: no gradient stash (kiln_bert_model_set_stash)");
  if (first) {
    RT(kiln_rt_memcpy_dtod(m->dev, m->stash, m->grads, m->layout.total * sizeof(float), m->stream),
       "model: stashing the gradients");
    return KILN_BERT_OK;
  }
  RT(m->ops->grad_accumulate(&m->libs, m->stash, m->grads, (int)m->layout.total),
     "grad_accumulate");
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_add_stash(KilnBertModel *m) {
  if (!m->stash)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: no gradient stash (kiln_bert_model_set_stash)");
  RT(m->ops->grad_accumulate(&m->libs, m->grads, m->stash, (int)m->layout.total),
     "grad_accumulate");
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_set_loss_rows(KilnBertModel *m, int rows) {
  if (rows < 0)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "model: a mean over %d rows", rows);
  m->mean_rows = rows;
  return KILN_BERT_OK;
}

void kiln_bert_model_set_allreduce(KilnBertModel *m, KilnBertAllReduceFn fn, void *user) {
  m->allreduce = fn;
  m->allreduce_user = user;
}

KilnBertPrecision kiln_bert_model_precision(const KilnBertModel *m) { return m->prec; }

KilnRtStream *kiln_bert_model_stream(const KilnBertModel *m) { return m->stream; }

KilnBertScaler *kiln_bert_model_scaler(KilnBertModel *m) { return &m->scaler; }

int kiln_bert_model_skipped(const KilnBertModel *m) { return m->skipped; }

/* ---- dropout ------------------------------------------------------------------------------ */

/* splitmix64's finalizer: consecutive inputs give unrelated outputs. */
static uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The counters (Philox words) one encoder layer's sites take from its key: the attention
 * probabilities [rows, heads, cols, cols], 16 per block of 4 words (queries i, i + 1, i + 8,
 * i + 9 by keys j, j + 1, j + 8, j + 9, so that each thread of the tensor-core layouts finds 8
 * of its elements in one block: kernels-bert/attention.kiln), the queries and the keys rounded
 * up to a multiple of 16, then the two [rows x cols, hidden] outputs. */
static int64_t layer_counters(int rows, int cols, const KilnBertConfig *cfg) {
  int64_t padded = ((int64_t)cols + 15) / 16 * 16;
  int64_t probs = (int64_t)rows * cfg->num_attention_heads * padded * padded / 4;
  return probs + 2 * (int64_t)rows * cols * cfg->hidden_size;
}

KilnBertPhilox kiln_bert_dropout_stream(uint64_t seed, int64_t step, int layer,
                                        KilnBertDropSite site, int rows, int cols,
                                        const KilnBertConfig *cfg) {
  /* One key per (seed, step, group): a group is an encoder layer, or (layer -1) the embeddings
   * and the pooler. Keys rather than one long counter range keep every counter within i32 at
   * BERT-large's shapes (a layer's probabilities alone are up to 10^8 counters). */
  int group = layer < 0 ? cfg->num_hidden_layers : layer;
  uint64_t key = mix64(mix64(mix64(seed) ^ (uint64_t)step) ^ (uint64_t)group);
  int64_t n_hidden = (int64_t)rows * cols * cfg->hidden_size;
  int64_t probs = layer_counters(rows, cols, cfg) - 2 * n_hidden;
  int64_t offset = 0;
  switch (site) {
  case KILN_BERT_DROP_ATTN_PROBS:
  case KILN_BERT_DROP_EMBEDDINGS: offset = 0; break;
  case KILN_BERT_DROP_ATTN_OUT: offset = probs; break;
  case KILN_BERT_DROP_FFN_OUT: offset = probs + n_hidden; break;
  case KILN_BERT_DROP_POOLER: offset = n_hidden; break;
  }
  return (KilnBertPhilox){(int32_t)(uint32_t)(key >> 32), (int32_t)offset};
}

KilnBertStatus kiln_bert_model_set_dropout(KilnBertModel *m, double p, uint64_t seed,
                                           int64_t step) {
  if (!(p >= 0 && p < 1))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "model: dropout %g is not in [0, 1)",
                          p);
  /* The kernels count in i32: every site's counters must fit at the planned shape. */
  if (p > 0 && layer_counters(m->max_rows, m->max_cols, &m->cfg) > INT32_MAX)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: dropout at %d x %d tokens needs more Philox counters per layer "
                          "than the kernels' 32-bit offsets hold",
                          m->max_rows, m->max_cols);
  m->drop_p = (float)p;
  m->drop_seed = seed;
  m->drop_step = step;
  return KILN_BERT_OK;
}

/* ---- forward ------------------------------------------------------------------------------ */

static KilnBertStatus encoder_layer_fwd(KilnBertModel *m, int l) {
  const Layer *y = &m->layer[l];
  LayerAct *a = &m->act[l];
  void *x = m->x[l];
  int n = m->rows * m->cols, H = m->H, F = m->F;
  /* Q, K and V in one product: W_qkv [3H, H] and b_qkv [3H] are consecutive in the layout */
  TRY(linear_fwd(m, x, H, wt(m, y->w[0]), wt(m, y->b[0]), NULL, a->qkv, 3 * H, n, 3 * H, H));
  TRY(attn_fwd(m, a));
  /* attention output dense, then LayerNorm(dropout(.) + x) */
  KilnBertPhilox ph;
  TRY(linear_fwd(m, a->ctx, H, wt(m, y->wo), wt(m, y->bo), NULL, m->da, H, n, H, H));
  TRY(layernorm_fwd(m, m->da, x, y->g1, y->b1, a->s1, a->x1, a->mean1, a->rstd1, n,
                    site_stream(m, l, KILN_BERT_DROP_ATTN_OUT, &ph)));
  /* FFN: u = x1 W_i^T, h = gelu(u + b_i) (u kept for GELU's backward), then
   * LayerNorm(dropout(.) + x1) */
  TRY(gemm(m, 0, a->x1, wt(m, y->wi), a->u, NULL, NULL, n, F, H, H, 1, 1, H, F));
  RT(m->ops->gelu_fwd(&m->libs, a->u, wt(m, y->bi), a->h, n, F), "bias_gelu_fwd");
  TRY(linear_fwd(m, a->h, F, wt(m, y->wo2), wt(m, y->bo2), NULL, m->da, H, n, H, F));
  TRY(layernorm_fwd(m, m->da, a->x1, y->g2, y->b2, a->s2, m->x[l + 1], a->mean2, a->rstd2, n,
                    site_stream(m, l, KILN_BERT_DROP_FFN_OUT, &ph)));
  return KILN_BERT_OK;
}

/* The classifier's input: the pooler's output, dropped when dropout is on. */
static void *classifier_input(KilnBertModel *m) {
  return m->drop_p > 0 ? m->pooled_drop : m->pooled;
}

/* The word embeddings' gradient without atomics (embedding_bwd_word): the real tokens of the
 * rows x cols batch (position < its row's length) grouped by id with a stable counting sort, so
 * that each id's tokens are summed in token order whatever the device. order[] gets the token
 * indices, id by id in increasing id, then 0 for the unused slots (an index the kernel's empty
 * programs may read); starts[u] is where the u-th distinct id's tokens begin, and starts[u ..
 * n] = the real token count past the last one (empty groups, so the kernel's grid of n programs
 * is the same for every batch of this shape: a replayed step reads the new groups from the same
 * buffers). Padded positions are left out: their output gradient is exactly 0 (no key past a
 * row's length gets weight, and only position 0 reaches the loss), so the [PAD] row gets no
 * gradient, as HF's padding_idx gives it, and a batch of short rows does not make one program
 * sum every padded token's zeros. count has vocab + 1 entries. */
static void group_tokens_by_id(const int32_t *ids, const int32_t *lens, int rows, int cols,
                               int vocab, int32_t *count, int32_t *order, int32_t *starts) {
  int n = rows * cols, real = 0;
  memset(count, 0, ((size_t)vocab + 1) * sizeof *count);
  for (int t = 0; t < n; t++)
    if (t % cols < lens[t / cols]) count[ids[t] + 1]++, real++;
  int u = 0;
  for (int v = 0; v < vocab; v++) {
    if (count[v + 1]) starts[u++] = count[v];
    count[v + 1] += count[v]; /* count[v]: the first slot of id v */
  }
  for (; u <= n; u++) starts[u] = real;
  for (int t = 0; t < n; t++)
    if (t % cols < lens[t / cols]) order[count[ids[t]]++] = t;
  for (int t = real; t < n; t++) order[t] = 0;
}

/* Checks a batch against the plan and copies it in: the forward's first part. */
static KilnBertStatus forward_inputs(KilnBertModel *m, const int32_t *ids, const int32_t *lens,
                                     const int32_t *labels, int rows, int cols) {
  if (rows < 1 || rows > m->max_rows || cols < 2 || cols > m->max_cols)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: a batch of %d x %d does not fit the planned %d x %d", rows, cols,
                          m->max_rows, m->max_cols);
  for (int r = 0; r < rows; r++)
    if (lens[r] < 1 || lens[r] > cols || labels[r] < 0 || labels[r] >= m->NL)
      return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                            "model: row %d has length %d or label %d out of range", r, lens[r],
                            labels[r]);
  int n = rows * cols;
  for (int t = 0; t < n; t++)
    if (ids[t] < 0 || ids[t] >= m->cfg.vocab_size)
      return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                            "model: token %d has id %d, outside the vocabulary of %d", t, ids[t],
                            m->cfg.vocab_size);
  m->rows = rows;
  m->cols = cols;
  RT(copy_in(m, m->ids, ids, (size_t)n * sizeof *ids), "model: ids");
  group_tokens_by_id(ids, lens, rows, cols, m->cfg.vocab_size, m->host_count, m->host_order,
                     m->host_starts);
  RT(copy_in(m, m->word_order, m->host_order, (size_t)n * sizeof(int32_t)), "model: token order");
  RT(copy_in(m, m->word_starts, m->host_starts, ((size_t)n + 1) * sizeof(int32_t)),
     "model: token groups");
  RT(copy_in(m, m->kv_len, lens, (size_t)rows * sizeof *lens), "model: lengths");
  RT(copy_in(m, m->labels, labels, (size_t)rows * sizeof *labels), "model: labels");
  return KILN_BERT_OK;
}

/* The forward's launches over the batch copied in (nothing read back: they can be captured). */
static KilnBertStatus forward_launches(KilnBertModel *m) {
  int rows = m->rows, cols = m->cols, n = rows * cols, H = m->H;
  /* embeddings (token types are all 0, positions 0..cols-1), LayerNorm with a zero residual */
  RT(m->ops->emb_fwd(&m->libs, m->ids, m->types, wt(m, m->word), wt(m, m->pos), wt(m, m->ttype),
                     m->da, n, cols, H),
     "embedding_fwd");
  TRY(layernorm_fwd(m, m->da, m->zeros, m->eg, m->eb, m->emb_s, m->x[0], m->emb_mean, m->emb_rstd,
                    n, NULL));
  TRY(drop_fwd(m, m->x[0], m->x[0], n * H, -1, KILN_BERT_DROP_EMBEDDINGS));
  for (int l = 0; l < m->L; l++) TRY(encoder_layer_fwd(m, l));
  /* pooler on token 0 of every row (row stride cols x H), tanh; classifier; cross-entropy */
  TRY(linear_fwd(m, m->x[m->L], cols * H, wt(m, m->wp), wt(m, m->bp), NULL, m->pre, H, rows, H, H));
  RT(m->ops->tanh_fwd(&m->libs, m->pre, m->pooled, rows * H), "tanh_fwd");
  TRY(drop_fwd(m, m->pooled, m->pooled_drop, rows * H, -1, KILN_BERT_DROP_POOLER));
  TRY(linear_fwd(m, classifier_input(m), H, wt(m, m->wc), wt(m, m->bc), NULL, m->logits, m->NL,
                 rows, m->NL, H));
  RT(m->ops->xent_fwd(&m->libs, m->logits, m->labels, m->loss_rows, m->xlse, m->NL, rows),
     "xent_fwd");
  /* the losses are f32 in every precision: their sum is the f32 row-sum kernel's */
  RT(m->ops->sum_rows(&m->libs, m->loss_rows, m->loss_sum, rows, 1), "layernorm_bwd_reduce");
  return KILN_BERT_OK;
}

/* The mean loss of the launches before (and the logits, widened to f32, when asked for). */
static KilnBertStatus forward_outputs(KilnBertModel *m, float *loss, float *logits) {
  int rows = m->rows;
  float sum = 0;
  RT(copy_out(m, &sum, m->loss_sum, sizeof sum), "model: loss");
  if (loss) *loss = sum / (float)rows;
  if (logits) {
    float *src = m->logits;
    if (m->ops->half_weights) {
      RT(m->ops->to_f32(&m->libs, m->logits, m->logits32, rows * m->NL), "cast_to_f32");
      src = m->logits32;
    }
    RT(copy_out(m, logits, src, (size_t)rows * m->NL * sizeof *logits), "model: logits");
  }
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_forward(KilnBertModel *m, const int32_t *ids, const int32_t *lens,
                                       const int32_t *labels, int rows, int cols, float *loss,
                                       float *logits) {
  TRY(forward_inputs(m, ids, lens, labels, rows, cols));
  TRY(forward_launches(m));
  return forward_outputs(m, loss, logits);
}

/* ---- backward ----------------------------------------------------------------------------- */

/* m->dx holds the gradient of layer l's output; leaves the gradient of its input there. */
static KilnBertStatus encoder_layer_bwd(KilnBertModel *m, int l) {
  const Layer *y = &m->layer[l];
  LayerAct *a = &m->act[l];
  float *g = m->grads;
  void *x = m->x[l];
  int n = m->rows * m->cols, H = m->H, F = m->F;
  KilnBertPhilox ph;
  /* second LayerNorm: da = gradient of x1 (the residual) and of the FFN output after its
   * dropout; dffn = the FFN output's before it (in db, free until x1's gradient) */
  void *dffn = NULL;
  TRY(layernorm_bwd(m, a->s2, m->dx, y->g2, y->b2, a->mean2, a->rstd2, m->da, m->db, n,
                    site_stream(m, l, KILN_BERT_DROP_FFN_OUT, &ph), &dffn));
  TRY(linear_dw(m, dffn, H, a->h, F, y->wo2, n, H, F));
  TRY(colsum(m, dffn, g + y->bo2, n, H, H));
  /* du = (dffn W_o2) * gelu'(u + b_i): GELU's backward in the product's epilogue (EPI 4), so
   * that the gradient of h is never written and read back */
  TRY(gemm(m, 4, dffn, wt(m, y->wo2), m->du, wt(m, y->bi), a->u, n, F, H, H, 1, F, 1, F));
  TRY(linear_dw(m, m->du, F, a->x1, H, y->wi, n, F, H));
  TRY(colsum(m, m->du, g + y->bi, n, F, F));
  /* db = gradient of x1: through the FFN plus the residual */
  TRY(linear_dx(m, m->du, F, wt(m, y->wi), m->da, m->db, H, n, F, H));
  /* first LayerNorm: da = gradient of x (the residual) and of the attention output dense after
   * its dropout; dout = the dense's before it (in dx: the layer output's gradient was read by
   * the second LayerNorm, and dx is written again only by the last product, after dout's last
   * reader) */
  void *dout = NULL;
  TRY(layernorm_bwd(m, a->s1, m->db, y->g1, y->b1, a->mean1, a->rstd1, m->da, m->dx, n,
                    site_stream(m, l, KILN_BERT_DROP_ATTN_OUT, &ph), &dout));
  TRY(linear_dw(m, dout, H, a->ctx, H, y->wo, n, H, H));
  TRY(colsum(m, dout, g + y->bo, n, H, H));
  TRY(linear_dx(m, dout, H, wt(m, y->wo), NULL, m->dctx, H, n, H, H));
  TRY(attn_bwd(m, a));
  /* the fused QKV projection's gradients: dW_qkv [3H, H], db_qkv [3H], and
   * dx = residual + dQKV W_qkv (one product over K = 3H) */
  TRY(linear_dw(m, m->dqkv, 3 * H, x, H, y->w[0], n, 3 * H, H));
  TRY(colsum(m, m->dqkv, g + y->b[0], n, 3 * H, 3 * H));
  TRY(linear_dx(m, m->dqkv, 3 * H, wt(m, y->w[0]), m->da, m->dx, H, n, 3 * H, H));
  return KILN_BERT_OK;
}

/* The backward's seed: the gradient of the mean loss, times fp16's loss scale (1 otherwise). */
static KilnBertStatus backward_seed(KilnBertModel *m) {
  float over = (float)(m->mean_rows > 0 ? m->mean_rows : m->rows);
  for (int r = 0; r < m->rows; r++) m->host_dloss[r] = m->scaler.scale / over;
  RT(copy_in(m, m->dloss, m->host_dloss, (size_t)m->rows * sizeof(float)), "model: dloss");
  return KILN_BERT_OK;
}

/* The backward's launches from the seed (nothing read back: they can be captured). */
static KilnBertStatus backward_launches(KilnBertModel *m) {
  int rows = m->rows, cols = m->cols, n = rows * cols, H = m->H, NL = m->NL;
  float *g = m->grads;
  RT(m->ops->xent_bwd(&m->libs, m->logits, m->labels, m->xlse, m->dloss, m->dlogits, NL, rows),
     "xent_bwd");
  /* classifier, pooler (tanh), and the pooler's input: token 0 of each row */
  TRY(linear_dw(m, m->dlogits, NL, classifier_input(m), H, m->wc, rows, NL, H));
  TRY(colsum(m, m->dlogits, g + m->bc, rows, NL, NL));
  TRY(linear_dx(m, m->dlogits, NL, wt(m, m->wc), NULL, m->dpooled, H, rows, NL, H));
  void *dpool;
  TRY(drop_bwd(m, m->dpooled, m->dpooled, rows * H, -1, KILN_BERT_DROP_POOLER, &dpool));
  RT(m->ops->tanh_bwd(&m->libs, m->pooled, dpool, m->dpre, rows * H), "tanh_bwd");
  TRY(linear_dw(m, m->dpre, H, m->x[m->L], cols * H, m->wp, rows, H, H));
  TRY(colsum(m, m->dpre, g + m->bp, rows, H, H));
  RT(fill(m, m->dx, 0, (size_t)n * H * m->es), "model: memset");
  TRY(linear_dx(m, m->dpre, H, wt(m, m->wp), NULL, m->dx, cols * H, rows, H, H));
  for (int l = m->L - 1; l >= 0; l--) TRY(encoder_layer_bwd(m, l));
  /* embeddings: LayerNorm, then the three tables, each element one program's sum in a fixed
   * order (no atomics). The kernels write the word table's rows of the batch's ids and the
   * position table's first cols rows: both are zeroed first; the type table is written whole. */
  void *demb;
  TRY(drop_bwd(m, m->dx, m->dx, n * H, -1, KILN_BERT_DROP_EMBEDDINGS, &demb));
  TRY(layernorm_bwd(m, m->emb_s, demb, m->eg, m->eb, m->emb_mean, m->emb_rstd, m->da, NULL, n, NULL,
                    NULL));
  const KilnBertConfig *c = &m->cfg;
  RT(fill(m, g + m->word, 0, (size_t)c->vocab_size * H * sizeof(float)), "model: memset");
  RT(fill(m, g + m->pos, 0, (size_t)c->max_position_embeddings * H * sizeof(float)),
     "model: memset");
  RT(m->ops->emb_bwd_word(&m->libs, m->ids, m->word_order, m->word_starts, m->da, g + m->word, n,
                          H),
     "embedding_bwd_word");
  RT(m->ops->emb_bwd_pos(&m->libs, m->da, g + m->pos, rows, cols, H), "embedding_bwd_pos");
  int parts = ln_parts(n), ntypes = c->type_vocab_size;
  RT(m->ops->emb_bwd_type(&m->libs, m->types, m->da, m->part_t, n, H, ntypes, parts),
     "embedding_bwd_type");
  RT(m->ops->sum_rows(&m->libs, m->part_t, g + m->ttype, parts, ntypes * H),
     "layernorm_bwd_reduce");
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_backward(KilnBertModel *m) {
  if (m->rows < 1)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "model: backward before a forward");
  TRY(backward_seed(m));
  return backward_launches(m);
}

/* ---- whole-step replay --------------------------------------------------------------------- */

KilnBertStatus kiln_bert_model_set_graphs(KilnBertModel *m, int on) {
  if (on && !m->dev)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: a plan-only model has no graphs");
  if (on && m->libs.tap)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "model: graphs replay launches past the tap on them (--profile, "
                          "KILN_BERT_LAUNCH_LOG): turn one of them off");
  if (on) {
    /* whether the device captures at all: an empty capture says so before any step */
    KilnRtGraph *probe = NULL;
    KilnRtStatus st = kiln_rt_graph_begin_capture(m->stream);
    if (st == KILN_RT_OK) st = kiln_rt_graph_end_capture(m->stream, &probe);
    kiln_rt_graph_destroy(probe);
    if (st != KILN_RT_OK)
      return kiln_bert_fail(st == KILN_RT_ERROR_UNSUPPORTED ? KILN_BERT_ERROR_INVALID_ARGUMENT
                                                            : KILN_BERT_ERROR_DEVICE,
                            "model: graphs: %s", kiln_rt_last_error());
  }
  m->graphs_on = on;
  return KILN_BERT_OK;
}

void kiln_bert_model_graph_stats(const KilnBertModel *m, KilnBertGraphStats *out) {
  *out = m->gstats;
  out->graphs = 0;
  out->fallback = m->graphs_off_why[0] ? m->graphs_off_why : NULL;
  for (int i = 0; i < m->ngraphs; i++) out->graphs += m->graphs[i].graph != NULL;
}

static KilnBertStatus pass_launches(KilnBertModel *m) {
  TRY(forward_launches(m));
  return backward_launches(m);
}

/* The launches of the pass captured into e's graph (anew, or in place of what it held). A
 * failure ends the capture, drops what it recorded and keeps the graph as it was. */
static KilnBertStatus capture_pass(KilnBertModel *m, GraphEntry *e) {
  RT(kiln_rt_graph_begin_capture(m->stream), "model: graph capture");
  KilnBertStatus st = pass_launches(m);
  if (st != KILN_BERT_OK) {
    KilnRtGraph *partial = NULL;
    if (kiln_rt_graph_end_capture(m->stream, &partial) == KILN_RT_OK)
      kiln_rt_graph_destroy(partial);
    return st;
  }
  if (e->graph) {
    RT(kiln_rt_graph_recapture(m->stream, e->graph), "model: graph update");
    m->gstats.updates++;
  } else {
    RT(kiln_rt_graph_end_capture(m->stream, &e->graph), "model: graph capture");
    m->gstats.captures++;
  }
  e->drop_p = m->drop_p;
  e->drop_seed = m->drop_seed;
  e->drop_step = m->drop_step;
  return KILN_BERT_OK;
}

/* The entry of the current batch shape (and dropout on or off), added when new; NULL when the
 * table is full (the pass then runs on the stream). *fresh: added now. */
static GraphEntry *graph_entry(KilnBertModel *m, int *fresh) {
  int drop = m->drop_p > 0;
  *fresh = 0;
  for (int i = 0; i < m->ngraphs; i++) {
    GraphEntry *e = &m->graphs[i];
    if (e->rows == m->rows && e->cols == m->cols && e->dropout == drop) return e;
  }
  if (m->ngraphs == KILN_BERT_MAX_GRAPHS) return NULL;
  *fresh = 1;
  GraphEntry *e = &m->graphs[m->ngraphs++];
  *e = (GraphEntry){.rows = m->rows, .cols = m->cols, .dropout = drop};
  return e;
}

/* The forward and backward launches of the batch copied in: on the stream, or from the
 * shape's graph (captured at its second pass, recaptured when dropout's step changed). */
static KilnBertStatus replay_pass(KilnBertModel *m, GraphEntry *e) {
  int redrawn = e->dropout && (e->drop_p != m->drop_p || e->drop_seed != m->drop_seed ||
                               e->drop_step != m->drop_step);
  if (!e->graph || redrawn) TRY(capture_pass(m, e));
  RT(kiln_rt_graph_launch(e->graph, m->stream), "model: graph replay");
  m->gstats.replays++;
  return KILN_BERT_OK;
}

static KilnBertStatus run_pass(KilnBertModel *m) {
  int fresh = 0;
  GraphEntry *e = m->graphs_on ? graph_entry(m, &fresh) : NULL;
  if (e && !fresh) {
    KilnBertStatus st = replay_pass(m, e);
    if (st == KILN_BERT_OK || m->graphs_on != KILN_BERT_GRAPHS_FALLBACK) return st;
    /* replay is an optimization here: off for good, and this pass on the stream */
    snprintf(m->graphs_off_why, sizeof m->graphs_off_why, "%s", kiln_bert_last_error());
    m->graphs_on = KILN_BERT_GRAPHS_OFF;
  }
  m->gstats.eager++;
  return pass_launches(m);
}

KilnBertStatus kiln_bert_model_train_launch(KilnBertModel *m, const int32_t *ids,
                                            const int32_t *lens, const int32_t *labels, int rows,
                                            int cols) {
  TRY(forward_inputs(m, ids, lens, labels, rows, cols));
  TRY(backward_seed(m));
  return run_pass(m);
}

KilnBertStatus kiln_bert_model_train_loss(KilnBertModel *m, float *loss) {
  return forward_outputs(m, loss, NULL);
}

KilnBertStatus kiln_bert_model_train_pass(KilnBertModel *m, const int32_t *ids, const int32_t *lens,
                                          const int32_t *labels, int rows, int cols, float *loss) {
  TRY(kiln_bert_model_train_launch(m, ids, lens, labels, rows, cols));
  return kiln_bert_model_train_loss(m, loss);
}

/* ---- optimizer ---------------------------------------------------------------------------- */

KilnBertStatus kiln_bert_model_step(KilnBertModel *m, const KilnBertOptim *opt, double lr, int step,
                                    double *grad_norm) {
  int P = (int)m->layout.total;
  if (step < 1)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "model: AdamW step %d < 1", step);
  if (m->allreduce) TRY(m->allreduce(m->allreduce_user, m->grads, m->layout.total, m->stream));
  /* fp16: found_inf = whether the (all-reduced) gradients hold an inf or NaN, found in the
   * norm's pass over them (the fp16 table's grad_sumsq), on the device for AdamW and read back
   * for the scaler. Other precisions have no overflow to find: their grad_sumsq leaves the
   * flag at 0, as set when the model was created. */
  int fp16 = m->prec == KILN_BERT_FP16;
  if (fp16) RT(fill(m, m->found_inf, 0, sizeof(int32_t)), "model: memset");
  /* the gradients carry the loss scale until AdamW (and the clip's norm) take it off */
  float inv_scale = 1.0f / m->scaler.scale;
  RT(m->ops->grad_sumsq(&m->libs, m->grads, m->sumsq_part, m->found_inf, P, SUMSQ_PARTS),
     "grad_sumsq");
  RT(m->ops->grad_sumsq_reduce(&m->libs, m->sumsq_part, m->sumsq, SUMSQ_PARTS),
     "grad_sumsq_reduce");
  int32_t flag = 0;
  if (fp16) RT(copy_out(m, &flag, m->found_inf, sizeof flag), "model: found_inf");
  int found = flag != 0;
  float sumsq = 0;
  RT(copy_out(m, &sumsq, m->sumsq, sizeof sumsq), "model: grad norm");
  if (grad_norm) *grad_norm = sqrt((double)sumsq) * (double)inv_scale;
  /* The clip by global norm happens inside AdamW, as it reads each gradient (the contract's
   * g <- c g when c < 1, the same bits as a clip pass before it): one pass over the gradient
   * buffer less, and the buffer stays as the backward (and the all-reduce) left it. With
   * found_inf set on the device, every launch leaves its parameters as they are. */
  float max_norm = opt->clip > 0 ? (float)opt->clip : 0.0f;
  for (size_t i = 0; i < m->nruns; i++) {
    const DecayRun *r = &m->runs[i];
    RT(m->ops->adamw_step(&m->libs, m->params + r->off, m->grads + r->off, m->m + r->off,
                          m->v + r->off, at(m, m->w, r->off), m->found_inf, m->sumsq, (int)r->len,
                          (float)lr, (float)opt->beta1, (float)opt->beta2, (float)opt->eps,
                          r->decay ? (float)opt->weight_decay : 0.0f, step, inv_scale, max_norm),
       "adamw_step");
  }
  m->skipped = found;
  if (m->prec == KILN_BERT_FP16) kiln_bert_scaler_update(&m->scaler, found);
  return KILN_BERT_OK;
}

/* ---- optimizer state, for checkpoints ------------------------------------------------------ */

KilnBertStatus kiln_bert_model_get_moments(KilnBertModel *m, float *exp_avg, float *exp_avg_sq) {
  size_t bytes = m->layout.total * sizeof(float);
  RT(copy_out(m, exp_avg, m->m, bytes), "model: first moments");
  RT(copy_out(m, exp_avg_sq, m->v, bytes), "model: second moments");
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_model_set_moments(KilnBertModel *m, const float *exp_avg,
                                           const float *exp_avg_sq) {
  size_t bytes = m->layout.total * sizeof(float);
  RT(copy_in(m, m->m, exp_avg, bytes), "model: first moments");
  RT(copy_in(m, m->v, exp_avg_sq, bytes), "model: second moments");
  return KILN_BERT_OK;
}
