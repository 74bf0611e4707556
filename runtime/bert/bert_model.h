/* bert_model.h — BertForSequenceClassification on a libkilnrt device: the forward pass with its
 * mean cross-entropy, the backward pass, and the optimizer step (global-norm clipping, then
 * torch AdamW), every tensor operation a kernel of kernels-bert/ called through the libraries
 * `kiln lib` generates at build time, in fp32, fp16 or bf16 (contract section 5: half
 * activations and weights with f32 accumulation, f32 master weights and moments; fp16 with
 * dynamic loss scaling).
 *
 * Memory is planned once, when the model is created, for the largest batch and sequence it will
 * see: parameters, gradients and the two AdamW moments are four flat f32 buffers with the layout
 * of KilnBertParams (so gradients are one buffer, ready for an all-reduce across devices), and
 * every activation the backward needs has its own buffer (of the precision's element type),
 * with fp16/bf16 a half copy of the weights besides. A step allocates nothing on the device or
 * the host.
 *
 * A step is: kiln_bert_model_forward (loss of the batch), kiln_bert_model_backward (gradients
 * of the mean loss into the flat buffer), kiln_bert_model_step (the all-reduce hook, the
 * gradient norm, clipping, AdamW). Not thread-safe: one model per thread. */
#ifndef KILN_BERT_MODEL_H
#define KILN_BERT_MODEL_H

#include "bert_config.h"
#include "bert_params.h"
#include "bert_sched.h"
#include "bert_status.h"

#include <kiln/kilnrt.h>

#include <stddef.h>
#include <stdint.h>

typedef struct KilnBertModel KilnBertModel;

/* Called between the backward and the optimizer with the device's flat gradient buffer (n
 * floats, the layout of the parameters): data-parallel training sums (or averages) it across
 * devices here, e.g. with an NCCL all-reduce on `stream`. With one device there is nothing to
 * do and no hook is set. Returns KILN_BERT_OK or a failure that stops the step. */
typedef KilnBertStatus (*KilnBertAllReduceFn)(void *user, float *grads, size_t n,
                                              KilnRtStream *stream);

/* The optimizer's settings (torch AdamW + clip_grad_norm_, contract section 5). */
typedef struct KilnBertOptim {
  double beta1, beta2, eps, weight_decay;
  double clip; /* max global gradient norm; 0 or less: no clipping */
} KilnBertOptim;

/* The element type of the activations and of the weights the kernels read: fp32 (all f32),
 * fp16 and bf16 (f16/bf16 tensors, f32 accumulation, f32 master weights, moments and gradient
 * buffer; fp16 also scales the loss). */
typedef enum KilnBertPrecision {
  KILN_BERT_FP32,
  KILN_BERT_FP16,
  KILN_BERT_BF16,
  /* fp32 whose gemm calls round A and B to TF32 (10-bit mantissas) and run on tensor cores on
   * a GPU (`--precision fp32 --tf32`); everything else, attention included, is fp32's */
  KILN_BERT_FP32_TF32,
} KilnBertPrecision;

/* "fp32", "fp16", "bf16" -> *out and 0; anything else -1. */
int kiln_bert_precision_parse(const char *name, KilnBertPrecision *out);
/* --precision NAME with --tf32 (tf32 != 0) -> *out: fp32 + tf32 is KILN_BERT_FP32_TF32; tf32
 * with fp16 or bf16 is INVALID_ARGUMENT (their gemms are on tensor cores already, in their own
 * 16-bit types), as is an unknown name; `what` prefixes the message ("tune"). */
KilnBertStatus kiln_bert_precision_resolve(const char *what, const char *name, int tf32,
                                           KilnBertPrecision *out);
/* 1 for fp16 and bf16 (2-byte activations, half weights), 0 for fp32 with or without TF32. */
int kiln_bert_precision_half(KilnBertPrecision prec);
/* "fp32", "fp16", "bf16", "fp32+tf32" */
const char *kiln_bert_precision_name(KilnBertPrecision prec);

/* Plans and allocates everything on dev for batches of up to max_batch rows of up to max_seq
 * tokens: parameters (uninitialized until kiln_bert_model_set_params), gradients, moments
 * (zero) and activations, for the given precision. The model keeps its own copy of the layout;
 * dev must outlive it. INVALID_ARGUMENT for a shape the generated libraries do not cover
 * (attention is built for head dimensions 16 and 64); DEVICE when an allocation or a library
 * fails. kiln_bert_model_create is the fp32 model. */
KilnBertStatus kiln_bert_model_create_precision(KilnRtDevice *dev, const KilnBertConfig *cfg,
                                                KilnBertPrecision prec, int max_batch, int max_seq,
                                                KilnBertModel **out);
KilnBertStatus kiln_bert_model_create(KilnRtDevice *dev, const KilnBertConfig *cfg, int max_batch,
                                      int max_seq, KilnBertModel **out);
void kiln_bert_model_destroy(KilnBertModel *m);

/* The bytes of device memory kiln_bert_model_create_precision would allocate for the same
 * arguments (its one allocation: the whole memory plan), without a device; INVALID_ARGUMENT as
 * create for a shape it refuses. */
KilnBertStatus kiln_bert_model_plan_bytes(const KilnBertConfig *cfg, KilnBertPrecision prec,
                                          int max_batch, int max_seq, size_t *bytes);
/* Checks, before anything is allocated, that the plan fits the memory of `device` ("cpu",
 * "emu", "cuda[:N]"): limit bytes when limit is not 0 (--max-device-bytes), else
 * KILN_DEVICE_MEMORY (a byte count as kiln_parse_bytes of kiln_base.h reads it), else on cuda the GPU's
 * free memory (the device is opened and closed to read it; DEVICE when it cannot be opened),
 * else the host's physical memory, where the cpu and emu devices keep their buffers. OUT_OF_MEMORY with a message saying how much the plan
 * needs (and how much of it is parameter state) and how much is available, and where that
 * figure came from; INVALID_ARGUMENT for a bad KILN_DEVICE_MEMORY. *needed (when not NULL) gets
 * the plan's bytes. */
KilnBertStatus kiln_bert_model_check_memory(const KilnBertConfig *cfg, KilnBertPrecision prec,
                                            int max_batch, int max_seq, const char *device,
                                            size_t limit, size_t *needed);
/* The same for `copies` models of that shape in one memory (data-parallel replicas on the cpu
 * or emu device, which all keep their buffers in the host's), each with a gradient stash when
 * stash != 0 (kiln_bert_model_set_stash): copies times the plan and the stash. */
KilnBertStatus kiln_bert_model_check_memory_copies(const KilnBertConfig *cfg,
                                                   KilnBertPrecision prec, int max_batch,
                                                   int max_seq, const char *device, size_t limit,
                                                   int copies, int stash, size_t *needed);

/* The parameter layout the model's flat buffers follow. */
const KilnBertParams *kiln_bert_model_params(const KilnBertModel *m);
/* Copies params->total floats from the host into the device's (master) parameters / back;
 * setting them also rounds the fp16/bf16 weights the kernels read from them. */
KilnBertStatus kiln_bert_model_set_params(KilnBertModel *m, const float *flat);
KilnBertStatus kiln_bert_model_get_params(KilnBertModel *m, float *flat);
/* Copies the gradients of the last backward (params->total floats) to the host; with fp16 they
 * are still multiplied by the loss scale (kiln_bert_model_scaler), as the step unscales them. */
KilnBertStatus kiln_bert_model_get_grads(KilnBertModel *m, float *flat);
/* Overwrites the gradient buffer with params->total floats from the host (an all-reduce done
 * through host memory writes its result back with it; scaled as get_grads reads them). */
KilnBertStatus kiln_bert_model_set_grads(KilnBertModel *m, const float *flat);

/* Forward over one batch: ids (rows x cols, row-major), the number of real tokens of each row
 * (its [CLS]..[SEP]; the rest is padding the attention ignores) and a label per row. *loss is
 * the mean cross-entropy over the rows; logits (rows x num_labels) are kept for the backward
 * and copied to `logits` when it is not NULL. INVALID_ARGUMENT when rows or cols exceed the
 * planned sizes or a length is out of [1, cols]. */
KilnBertStatus kiln_bert_model_forward(KilnBertModel *m, const int32_t *ids, const int32_t *lens,
                                       const int32_t *labels, int rows, int cols, float *loss,
                                       float *logits);
/* Gradients of the last forward's mean loss into the flat gradient buffer (overwritten). */
KilnBertStatus kiln_bert_model_backward(KilnBertModel *m);

/* One training step's forward and backward (kiln_bert_model_forward, then
 * kiln_bert_model_backward, with *loss as the forward gives it): the same launches, in the
 * form whole-step replay needs, the loss being read back only after both. */
KilnBertStatus kiln_bert_model_train_pass(KilnBertModel *m, const int32_t *ids, const int32_t *lens,
                                          const int32_t *labels, int rows, int cols, float *loss);
/* Its two halves, for models on several devices (data-parallel replicas): train_launch queues
 * the pass on the model's stream (after copying the batch in) and returns; train_loss waits for
 * it and reads the loss. Between them the host can queue other devices' passes, so that they
 * run side by side. */
KilnBertStatus kiln_bert_model_train_launch(KilnBertModel *m, const int32_t *ids,
                                            const int32_t *lens, const int32_t *labels, int rows,
                                            int cols);
KilnBertStatus kiln_bert_model_train_loss(KilnBertModel *m, float *loss);

/* Whole-step replay. With graphs on, kiln_bert_model_train_pass runs the launches of a batch
 * shape (rows x cols, dropout on or off) on the stream the first time it meets it (one-time
 * work, module loads, happens there), captures them into a graph the second time and replays
 * that graph from then on: on cuda one graph launch instead of ~30 launches per layer. With
 * dropout, whose random streams are kernel arguments that change every step, the shape's
 * launches are recaptured into the same graph each step (updated in place: same kernels, other
 * arguments). The batch is copied in before the replay and the loss read after it; the
 * optimizer step runs on the stream. At most KILN_BERT_MAX_GRAPHS shapes get a graph (dynamic
 * padding has one per length bucket and batch size); the rest run on the stream.
 * INVALID_ARGUMENT on a device that cannot capture (emu), for a plan-only model, or one with a
 * tap on its launches (--profile, the launch log: a replay passes no tap). Off after create. */
#define KILN_BERT_MAX_GRAPHS 64
enum {
  KILN_BERT_GRAPHS_OFF = 0,
  KILN_BERT_GRAPHS_ON = 1,       /* a failed capture or replay fails the pass */
  KILN_BERT_GRAPHS_FALLBACK = 2, /* one turns replay off for good and the pass runs on the
                                    stream (KilnBertGraphStats.fallback says why) */
};
KilnBertStatus kiln_bert_model_set_graphs(KilnBertModel *m, int mode);

/* What whole-step replay did so far: passes run on the stream (graphs off, or a shape's first
 * pass), graphs captured, recaptured in place, replayed; and how many shapes hold a graph. */
typedef struct KilnBertGraphStats {
  long eager, captures, updates, replays;
  int graphs;
  const char *fallback; /* NULL, or why KILN_BERT_GRAPHS_FALLBACK turned replay off (the model's) */
} KilnBertGraphStats;
void kiln_bert_model_graph_stats(const KilnBertModel *m, KilnBertGraphStats *out);

/* The stream the model queues its launches and copies on (NULL for a plan-only model): work
 * that must be ordered with the model's (profiling events, an all-reduce) goes on it. */
KilnRtStream *kiln_bert_model_stream(const KilnBertModel *m);

/* The dropout sites of contract section 4, each with its own Philox stream. */
typedef enum KilnBertDropSite {
  KILN_BERT_DROP_EMBEDDINGS, /* after the embedding LayerNorm: [rows x cols, hidden] */
  KILN_BERT_DROP_ATTN_PROBS, /* the attention probabilities: [rows, heads, cols, cols] */
  KILN_BERT_DROP_ATTN_OUT,   /* the attention output dense, before its residual LayerNorm */
  KILN_BERT_DROP_FFN_OUT,    /* the FFN down projection, before its residual LayerNorm */
  KILN_BERT_DROP_POOLER      /* the pooler's output, the classifier's input: [rows, hidden] */
} KilnBertDropSite;

/* A Philox stream: element i of a site's tensor (row-major in the shapes above) is kept when
 * rand(seed, offset + i) > p (Kiln's rand; tests/numeric's kiln_ref_rand in C), and then
 * scaled by 1 / (1 - p).  The attention probabilities take a byte per element, 16 elements
 * per Philox block: element (r, h, i, j) is kept when byte 2 ((i >> 3) & 1) + ((j >> 3) & 1)
 * (from the low end) of the word at offset + 4 ((bh q4 + q(i)) q4 + q(j)) + 2 (i & 1) + (j & 1)
 * is at least t = min(round(256 p), 255), q(x) = 4 (x >> 4) + ((x >> 1) & 3), bh = r heads + h,
 * q4 = 4 ceil(cols / 16) (kernels-bert/attention.kiln; tests/numeric's kiln_ref_attn_keep), so
 * with probability 1 - t / 256, within 2^-9 of 1 - p below p = 0.998; kept ones are scaled by
 * 256 / (256 - t), the inverse of that probability.
 * Every site's offset is a multiple of 4 (hidden sizes are). */
typedef struct KilnBertPhilox {
  int32_t seed, offset;
} KilnBertPhilox;

/* The stream of a site in encoder layer `layer` (-1 for the embeddings and the pooler) at
 * optimizer step `step` of a run seeded with `seed`, for a batch of rows x cols tokens: a pure
 * function, so a run (and a resumed run) draws the same masks, and a test can rebuild them. */
KilnBertPhilox kiln_bert_dropout_stream(uint64_t seed, int64_t step, int layer,
                                        KilnBertDropSite site, int rows, int cols,
                                        const KilnBertConfig *cfg);

/* Dropout with probability p on every site for the forward/backward pairs that follow, with
 * the streams of (seed, step); p = 0 (the state after kiln_bert_model_create) turns it off and
 * costs nothing. The trainer sets it before each step and back to 0 for evaluation.
 * INVALID_ARGUMENT when p is not in [0, 1) or the planned batch needs more counters per layer
 * than the kernels' i32 offsets hold (2^31: far beyond BERT-large at 24 x 512). */
KilnBertStatus kiln_bert_model_set_dropout(KilnBertModel *m, double p, uint64_t seed, int64_t step);

/* The device's flat gradient buffer (params->total floats; what the all-reduce hook is given),
 * and a queued zeroing of it (a data-parallel replica that ran no rows this step adds zeros). */
float *kiln_bert_model_grad_buffer(const KilnBertModel *m);
KilnBertStatus kiln_bert_model_zero_grads(KilnBertModel *m);

/* The rows the backward divides the summed loss by: 0 (after create) the batch's own rows, so
 * the gradients are those of its mean loss; in data-parallel training the whole batch's rows,
 * so that each replica's gradients are its share of the batch's and their sum is the batch's
 * gradient. The forward's *loss stays its own batch's mean. INVALID_ARGUMENT below 0. */
KilnBertStatus kiln_bert_model_set_loss_rows(KilnBertModel *m, int rows);

/* Gradient accumulation (`kiln-bert train --accumulate N`): a step's batch runs as several
 * micro-batches, each a forward and backward whose gradients (each the micro-batch's share of
 * the step's mean: kiln_bert_model_set_loss_rows with the step's rows) are summed before the
 * optimizer. The backward writes its gradients in place, so the model keeps the sum of the
 * step's earlier micro-batches in a stash, one more flat f32 buffer (params->total floats, its
 * own allocation; kiln_bert_model_check_memory_copies counts it with stash = 1).
 * set_stash allocates it (on != 0) or frees it; INVALID_ARGUMENT for a plan-only model.
 * stash_grads, after a micro-batch that is not the step's last, copies the gradient buffer
 * into the stash (first != 0: the step's first micro-batch) or adds it there; add_stash, after
 * the step's last micro-batch, adds the stash into the gradient buffer, which then holds the
 * step's sum for the all-reduce hook and the step. Both are queued on the model's stream; each
 * add is one f32 add an element (grad_accumulate), so N micro-batches sum to
 * ((g0 + g1) + ...) + g(N-1), the rank-order sum data-parallel replicas make of N shards.
 * INVALID_ARGUMENT without a stash. */
KilnBertStatus kiln_bert_model_set_stash(KilnBertModel *m, int on);
KilnBertStatus kiln_bert_model_stash_grads(KilnBertModel *m, int first);
KilnBertStatus kiln_bert_model_add_stash(KilnBertModel *m);

/* Sets (or clears, with NULL) the all-reduce hook. */
void kiln_bert_model_set_allreduce(KilnBertModel *m, KilnBertAllReduceFn fn, void *user);

KilnBertPrecision kiln_bert_model_precision(const KilnBertModel *m);

/* fp16's dynamic loss scaler (GradScaler's defaults), owned by the model: the backward seeds
 * the loss gradient with its scale and the step updates it. Reading it gives the scale of the
 * next backward; writing it (a resumed run, a test forcing an overflow) sets that scale. fp32
 * and bf16 keep scale 1 and never update it. */
KilnBertScaler *kiln_bert_model_scaler(KilnBertModel *m);

/* Whether the last kiln_bert_model_step skipped its update: fp16 gradients with an inf or NaN
 * (the parameters and moments are unchanged and the scale was halved; the caller does not
 * count the step in AdamW's `step`). Always 0 for fp32 and bf16. */
int kiln_bert_model_skipped(const KilnBertModel *m);

/* The optimizer step after a backward: the all-reduce hook, (fp16) the overflow check, the
 * global L2 norm of the unscaled gradients (into *grad_norm when not NULL; inf or NaN on an
 * overflow), clipping, then AdamW with learning rate lr as update number `step` (1-based: the
 * bias corrections), weight decay only where the layout says so, and (fp16) the scaler's
 * update. An overflow skips the update (kiln_bert_model_skipped). */
KilnBertStatus kiln_bert_model_step(KilnBertModel *m, const KilnBertOptim *opt, double lr, int step,
                                    double *grad_norm);

/* AdamW's two moments (exp_avg m, exp_avg_sq v; params->total floats each, the parameters'
 * layout) to the host / from it: what a checkpoint needs to resume the optimizer exactly. The
 * update count (the bias corrections' step) is the caller's, passed to kiln_bert_model_step. */
KilnBertStatus kiln_bert_model_get_moments(KilnBertModel *m, float *exp_avg, float *exp_avg_sq);
KilnBertStatus kiln_bert_model_set_moments(KilnBertModel *m, const float *exp_avg,
                                           const float *exp_avg_sq);

#endif /* KILN_BERT_MODEL_H */
