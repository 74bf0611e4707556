/* bert_model_ops.h — (kilnbert_model, internal) the model's kernel launches for one element type
 * of the activations, as a table: model.c is written once against KilnBertOps and picks the
 * table of its precision (f32, f16, bf16) when it is created, so the element type is data, not
 * a copy of the model per type.
 *
 * The generated libraries type their buffers (`float *` for f32, `uint16_t *` for f16 and bf16)
 * and name their functions after the library (kb_gemm1_f16_gemm); model_ops.c instantiates
 * model_ops.inc once per type to wrap them behind these `void *` signatures. Buffers of the
 * element type T are `void *`; what is f32 in every precision (LayerNorm statistics, the
 * attention's log-sum-exp, losses, the f32 gradient buffer) stays `float *`. Every function
 * returns the library's status (KILN_RT_OK or a failure with kiln_rt_last_error()). */
#ifndef KILN_BERT_MODEL_OPS_H
#define KILN_BERT_MODEL_OPS_H

#include "bert_model.h"

#include <kiln/kilnrt.h>

#include <stddef.h>
#include <stdint.h>

/* The library instances of one precision (opaque handles of the generated types). */
typedef struct KilnBertLibs {
  void *gemm0, *gemm1, *gemm3, *gemm4; /* gemm.kiln, EPI = 0, 1, 3, 4 (+ colsum_f32) */
  void *attn16, *attn64;               /* attention.kiln, D = 16, 64 */
  void *attn16_drop, *attn64_drop; /* the same with DROPOUT = 1 (dropout on the probabilities) */
  void *drop;                      /* dropout.kiln */
  void *ln, *emb, *xent, *gelu, *tanh;
  void *cast;           /* cast.kiln (half types only; NULL for f32) */
  void *adamw;          /* adamw.kiln: f32 masters; WRITE_F16=1 and TW = T for half types */
  void *tap;            /* a tap table's own state (kiln_bert_model_tap); NULL otherwise */
  KilnRtStream *stream; /* the stream every launch is queued on (the model's) */
} KilnBertLibs;

/* One attention call: Q, K, V (and dQ, dK, dV) with the [n, 3, heads, D] strides (batch sb,
 * head sh, position ss), O and dO dense [n, heads x D] (osb, osh, oss); bh = rows x heads
 * programs along y, S the sequence length. */
typedef struct KilnBertAttn {
  void *q, *k, *v, *o, *dout, *dq, *dk, *dv;
  float *lse, *delta;
  int32_t *kv_len;
  int S, heads, D, sb, sh, ss, osb, osh, oss, bh;
  float scale;
  /* dropout on the probabilities: p_drop > 0 runs the DROPOUT = 1 kernels with the Philox
   * stream (seed, offset); 0 the plain ones */
  float p_drop;
  int32_t seed, offset;
} KilnBertAttn;

typedef struct KilnBertOps {
  const char *name; /* "f32", "f16", "bf16" */
  size_t esize;     /* bytes per element of T */
  int half_weights; /* 1: the forward reads a T copy of the f32 master weights */
  KilnRtStatus (*create)(KilnRtDevice *dev, KilnBertLibs *libs);
  void (*destroy)(KilnBertLibs *libs); /* the non-NULL handles */
  /* whether layernorm_bwd has a variant whose block covers `cols` */
  int (*ln_bwd_covers)(int rows, int cols);

  /* c = a b (+ bias, + res; epi 4: times gelu'(res + bias)) through strides (gemm.kiln); epi 0,
   * 1, 3 or 4; splits > 1 (epi 0): K in that many parts, part z's sum at c + z M ldc */
  KilnRtStatus (*gemm)(const KilnBertLibs *l, int epi, void *a, void *b, void *c, void *bias,
                       void *res, int M, int N, int K, int sam, int sak, int sbk, int sbn, int ldc,
                       int splits);
  /* out[c] (f32) = sum over rows of x[r ld + c] */
  /* out[p * cols + c] = sum of x[r, c] over part p's rows (the BLOCK_R-row blocks p, p + parts,
   * ...): with parts = 1 the column sums themselves (colsum_f32) */
  KilnRtStatus (*colsum)(const KilnBertLibs *l, void *x, float *out, int rows, int cols, int ld,
                         int parts);
  /* s = dropout(x) + res (p > 0: the stream (seed, offset) over the [rows, cols] x, as
   * drop_fwd draws it; p = 0: x + res), y = LayerNorm(s) */
  KilnRtStatus (*ln_fwd)(const KilnBertLibs *l, void *x, void *res, void *gamma, void *beta,
                         void *s, void *y, float *mean, float *rstd, int rows, int cols, float eps,
                         float p, int32_t seed, int32_t offset);
  /* dx = the gradient of s; with p > 0 also dx_drop = the gradient of the forward's x before
   * its dropout (drop_bwd of dx; not written at p = 0) */
  KilnRtStatus (*ln_bwd)(const KilnBertLibs *l, void *s, void *dy, void *gamma, float *mean,
                         float *rstd, void *dx, void *dx_drop, float *part_g, float *part_b,
                         int rows, int cols, int parts, float p, int32_t seed, int32_t offset);
  /* out[c] = sum of the f32 rows part[p cols + c], p < parts */
  KilnRtStatus (*sum_rows)(const KilnBertLibs *l, float *part, float *out, int parts, int cols);
  KilnRtStatus (*emb_fwd)(const KilnBertLibs *l, int32_t *ids, int32_t *types, void *word,
                          void *pos, void *ttype, void *out, int ntok, int seq, int hidden);
  /* the embedding backward, one kernel per table and no atomics (bits independent of the
   * scheduling): dword's rows of the ids present, from the batch's tokens grouped by id (order,
   * starts: embedding.kiln); dpos's first seq rows; dtype's partial sums, parts x ntypes rows
   * for sum_rows */
  KilnRtStatus (*emb_bwd_word)(const KilnBertLibs *l, int32_t *ids, int32_t *order, int32_t *starts,
                               void *dout, float *dword, int ntok, int hidden);
  KilnRtStatus (*emb_bwd_pos)(const KilnBertLibs *l, void *dout, float *dpos, int batch, int seq,
                              int hidden);
  KilnRtStatus (*emb_bwd_type)(const KilnBertLibs *l, int32_t *types, void *dout, float *part,
                               int ntok, int hidden, int ntypes, int parts);
  KilnRtStatus (*xent_fwd)(const KilnBertLibs *l, void *x, int32_t *labels, float *loss, float *lse,
                           int classes, int rows);
  KilnRtStatus (*xent_bwd)(const KilnBertLibs *l, void *x, int32_t *labels, float *lse,
                           float *dloss, void *dx, int classes, int rows);
  KilnRtStatus (*gelu_fwd)(const KilnBertLibs *l, void *x, void *bias, void *y, int rows, int cols);
  KilnRtStatus (*tanh_fwd)(const KilnBertLibs *l, void *x, void *y, int n);
  KilnRtStatus (*tanh_bwd)(const KilnBertLibs *l, void *y, void *dy, void *dx, int n);
  KilnRtStatus (*attn_fwd)(const KilnBertLibs *l, const KilnBertAttn *a);
  /* the backward, in this order: delta = rowsum(dO O), then dK and dV, then dQ (one entry per
   * kernel, so that a tap sees, and can time, each launch on its own) */
  KilnRtStatus (*attn_bwd_delta)(const KilnBertLibs *l, const KilnBertAttn *a);
  KilnRtStatus (*attn_bwd_dkdv)(const KilnBertLibs *l, const KilnBertAttn *a);
  KilnRtStatus (*attn_bwd_dq)(const KilnBertLibs *l, const KilnBertAttn *a);
  /* y = dropout(x) (x == y allowed) and its backward dx from dy: element i kept when
   * rand(seed, offset + i) > p, scaled by 1 / (1 - p) */
  KilnRtStatus (*drop_fwd)(const KilnBertLibs *l, void *x, void *y, int n, float p, int32_t seed,
                           int32_t offset);
  KilnRtStatus (*drop_bwd)(const KilnBertLibs *l, void *dy, void *dx, int n, float p, int32_t seed,
                           int32_t offset);
  /* y (f32) = x (T) and y (T) = x (f32), rounded to nearest even; NULL for f32 */
  KilnRtStatus (*to_f32)(const KilnBertLibs *l, void *x, float *y, int n);
  KilnRtStatus (*from_f32)(const KilnBertLibs *l, float *x, void *y, int n);

  /* the optimizer, on f32 buffers whatever T is (adamw.kiln) */
  /* the squared norm in two stages: parts partial sums, then their sum into sumsq[0]; in the
   * fp16 table the first stage also sets found_inf[0] = 1 when grad holds an inf or NaN (left
   * as it is otherwise: the loss scaler's overflow check in the same pass), in the others it
   * leaves found_inf alone */
  KilnRtStatus (*grad_sumsq)(const KilnBertLibs *l, float *grad, float *part, int32_t *found_inf,
                             int n, int parts);
  KilnRtStatus (*grad_sumsq_reduce)(const KilnBertLibs *l, float *part, float *sumsq, int parts);
  /* acc[i] += grad[i] for i < n (gradient accumulation over micro-batches) */
  KilnRtStatus (*grad_accumulate)(const KilnBertLibs *l, float *acc, float *grad, int n);
  /* AdamW over n parameters, the gradients clipped by the global norm sqrt(sumsq[0]) when
   * max_norm > 0 (clip_grads' coefficient, applied as they are read); w (T) gets the new
   * weights when half_weights (else unused) */
  KilnRtStatus (*adamw_step)(const KilnBertLibs *l, float *p, float *grad, float *m, float *v,
                             void *w, int32_t *found_inf, float *sumsq, int n, float lr,
                             float beta1, float beta2, float eps, float weight_decay, int step,
                             float inv_scale, float max_norm);
} KilnBertOps;

extern const KilnBertOps kiln_bert_ops_f32, kiln_bert_ops_f16, kiln_bert_ops_bf16;
/* fp32 with the gemm libraries built with -D TF32=1 (KILN_BERT_FP32_TF32); name "f32" */
extern const KilnBertOps kiln_bert_ops_tf32;

/* Taps: a table that sees every launch of the model (bert_plan.h records them), its state in
 * KilnBertLibs.tap. Every entry that launches is one kernel launch. The model and its table are the one place launches are issued, so what a tap
 * sees is exactly what a step runs. */
/* A model without a device or memory whose launches all go to `tap` (tap_user in libs.tap):
 * forward, backward and step run their host logic and issue every launch of the shapes asked
 * for, and nothing else (copies do nothing, reads give zeros). prec picks the element size and
 * the checks of a real model of that precision; destroy with kiln_bert_model_destroy. */
KilnBertStatus kiln_bert_model_create_plan(const KilnBertConfig *cfg, KilnBertPrecision prec,
                                           int max_batch, int max_seq, const KilnBertOps *tap,
                                           void *tap_user, KilnBertModel **out);
/* Puts `tap` in front of a real model's table: *real and *real_libs get the table and libraries
 * it had, for the tap to forward to (its destroy must forward too). */
void kiln_bert_model_tap(KilnBertModel *m, const KilnBertOps *tap, void *tap_user,
                         const KilnBertOps **real, KilnBertLibs *real_libs);
/* The model's table (its precision's, or the tap in front of it). */
const KilnBertOps *kiln_bert_model_ops(const KilnBertModel *m);

#endif /* KILN_BERT_MODEL_OPS_H */
