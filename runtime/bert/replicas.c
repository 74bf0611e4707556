/* replicas.c — data-parallel replicas of the model (bert_replicas.h): the shard split, the
 * all-reduce in the models' hook, and the check that the copies agree.
 *
 * Each replica's backward divides its summed loss by the whole batch's rows
 * (kiln_bert_model_set_loss_rows), so its gradients are its share of the batch's and the
 * all-reduce is a plain sum (kiln_rt_comm: NCCL on several GPUs, else through host memory in
 * rank order); a replica whose shard was empty adds zeros. Every replica then holds the same
 * sum, and the optimizer's kernels are functions of their inputs, so the copies take the same
 * step. With one replica nothing of this runs: the model divides by its own rows. */
#include "bert_replicas.h"
#include "bert_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct Rank {
  KilnBertReplicas *group;
  int r;
} Rank;

struct KilnBertReplicas {
  KilnBertModel *models[KILN_BERT_MAX_REPLICAS];
  Rank ranks[KILN_BERT_MAX_REPLICAS];
  int empty[KILN_BERT_MAX_REPLICAS]; /* this step's shard had no rows: the replica adds zeros */
  int n;
  int armed;   /* begin_step was called and the round's reduction has not run yet */
  size_t size; /* floats in each gradient buffer */
  KilnRtComm *comm;
};

void kiln_bert_replicas_shard(size_t count, int n, int r, size_t *first, size_t *rows) {
  size_t per = count / (size_t)n, extra = count % (size_t)n, ur = (size_t)r;
  *rows = per + (ur < extra);
  *first = ur * per + (ur < extra ? ur : extra);
}

/* The round's sum over the replicas' gradient buffers, into every one of them. */
static KilnBertStatus reduce(KilnBertReplicas *g) {
  float *bufs[KILN_BERT_MAX_REPLICAS];
  KilnRtStream *streams[KILN_BERT_MAX_REPLICAS];
  float s0 = kiln_bert_model_scaler(g->models[0])->scale;
  for (int r = 0; r < g->n; r++) {
    /* fp16's backward multiplies by the loss scale: the shards must share it to be summed */
    if (kiln_bert_model_scaler(g->models[r])->scale != s0)
      return kiln_bert_fail(KILN_BERT_ERROR_DEVICE,
                            "replicas: replica %d's loss scale %g is not replica 0's %g", r,
                            (double)kiln_bert_model_scaler(g->models[r])->scale, (double)s0);
    if (g->empty[r]) {
      KilnBertStatus st = kiln_bert_model_zero_grads(g->models[r]);
      if (st != KILN_BERT_OK) return st;
    }
    bufs[r] = kiln_bert_model_grad_buffer(g->models[r]);
    streams[r] = kiln_bert_model_stream(g->models[r]);
  }
  KilnRtStatus rs = kiln_rt_comm_allreduce_sum_f32(g->comm, bufs, g->size, streams);
  if (rs != KILN_RT_OK)
    return kiln_bert_fail(KILN_BERT_ERROR_DEVICE, "replicas: the all-reduce (%s): %s",
                          kiln_rt_comm_path(g->comm), kiln_rt_last_error());
  return KILN_BERT_OK;
}

/* The hook of every replica: the round's first call reduces for all, the others find the sum
 * already in their buffers. */
static KilnBertStatus replica_hook(void *user, float *grads, size_t n, KilnRtStream *stream) {
  (void)grads;
  (void)stream;
  Rank *rank = user;
  KilnBertReplicas *g = rank->group;
  if (n != g->size)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "replicas: replica %d reduces %zu gradients, the group %zu", rank->r, n,
                          g->size);
  if (!g->armed) return KILN_BERT_OK; /* reduced earlier in this round */
  g->armed = 0;
  return reduce(g);
}

KilnBertStatus kiln_bert_replicas_create(KilnBertModel *const *models, KilnRtDevice *const *devs,
                                         int n, KilnBertReplicas **out) {
  *out = NULL;
  if (n < 1 || n > KILN_BERT_MAX_REPLICAS)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "replicas: %d replicas; 1 to %d are supported", n,
                          KILN_BERT_MAX_REPLICAS);
  const KilnBertParams *lay0 = kiln_bert_model_params(models[0]);
  for (int r = 1; r < n; r++) {
    const KilnBertParams *lay = kiln_bert_model_params(models[r]);
    if (lay->total != lay0->total || lay->n != lay0->n ||
        kiln_bert_model_precision(models[r]) != kiln_bert_model_precision(models[0]))
      return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                            "replicas: replica %d is another model than replica 0 (%zu "
                            "parameters against %zu, or another precision)",
                            r, lay->total, lay0->total);
  }
  KilnBertReplicas *g = calloc(1, sizeof *g);
  if (!g) return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "replicas: out of memory");
  if (kiln_rt_comm_create(devs, n, &g->comm) != KILN_RT_OK) {
    free(g);
    return kiln_bert_fail(KILN_BERT_ERROR_DEVICE, "replicas: %s", kiln_rt_last_error());
  }
  g->size = lay0->total;
  g->n = n;
  for (int r = 0; r < n; r++) {
    g->models[r] = models[r];
    g->ranks[r] = (Rank){g, r};
    kiln_bert_model_set_allreduce(models[r], replica_hook, &g->ranks[r]);
  }
  *out = g;
  return KILN_BERT_OK;
}

void kiln_bert_replicas_destroy(KilnBertReplicas *g) {
  if (!g) return;
  for (int r = 0; r < g->n; r++) kiln_bert_model_set_allreduce(g->models[r], NULL, NULL);
  kiln_rt_comm_destroy(g->comm);
  free(g);
}

const char *kiln_bert_replicas_path(const KilnBertReplicas *g) {
  return kiln_rt_comm_path(g->comm);
}

KilnBertStatus kiln_bert_replicas_begin_step(KilnBertReplicas *g, const size_t *rows) {
  size_t total = 0;
  for (int r = 0; r < g->n; r++) total += rows[r];
  if (total == 0 || total > INT32_MAX)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "replicas: a step of %zu samples over the replicas", total);
  for (int r = 0; r < g->n; r++) {
    KilnBertStatus st = kiln_bert_model_set_loss_rows(g->models[r], (int)total);
    if (st != KILN_BERT_OK) return st;
    g->empty[r] = rows[r] == 0;
  }
  g->armed = 1;
  return KILN_BERT_OK;
}

/* The name of the parameter that holds float i of the flat buffer (padding: the one before
 * it's); offsets need not grow along the list (bert_params.h). */
static const char *param_at(const KilnBertParams *lay, size_t i) {
  const char *name = lay->n ? lay->p[0].name : "?";
  size_t best = 0;
  for (size_t k = 0; k < lay->n; k++)
    if (lay->p[k].offset <= i && lay->p[k].offset >= best) {
      best = lay->p[k].offset;
      name = lay->p[k].name;
    }
  return name;
}

/* Replica r's parameters against replica 0's, float by float (the first difference named);
 * a and b hold size floats each. */
static KilnBertStatus compare_params(KilnBertReplicas *g, int r, float *a, float *b) {
  KilnBertStatus st = kiln_bert_model_get_params(g->models[0], a);
  if (st == KILN_BERT_OK) st = kiln_bert_model_get_params(g->models[r], b);
  if (st != KILN_BERT_OK) return st;
  for (size_t i = 0; i < g->size; i++)
    if (memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return kiln_bert_fail(KILN_BERT_ERROR_DEVICE,
                            "replicas: replica %d's parameters differ from replica 0's at float "
                            "%zu (%s): %.9g against %.9g; the copies no longer train the same "
                            "model",
                            r, i, param_at(kiln_bert_model_params(g->models[0]), i), (double)b[i],
                            (double)a[i]);
  return KILN_BERT_OK;
}

/* FNV-1a over the bits of n floats. */
static uint64_t hash_floats(const float *x, size_t n) {
  const unsigned char *b = (const unsigned char *)x;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* A replica's two AdamW moments as one hash (read at once, into a and b). */
static KilnBertStatus moments_hash(KilnBertReplicas *g, int r, float *a, float *b, uint64_t *h) {
  KilnBertStatus st = kiln_bert_model_get_moments(g->models[r], a, b);
  if (st == KILN_BERT_OK) *h = hash_floats(a, g->size) ^ (hash_floats(b, g->size) * 31);
  return st;
}

static KilnBertStatus check_same(KilnBertReplicas *g, float *a, float *b) {
  for (int r = 1; r < g->n; r++) {
    if (kiln_bert_model_scaler(g->models[r])->scale != kiln_bert_model_scaler(g->models[0])->scale)
      return kiln_bert_fail(KILN_BERT_ERROR_DEVICE,
                            "replicas: replica %d's loss scale is not replica 0's", r);
    KilnBertStatus st = compare_params(g, r, a, b);
    if (st != KILN_BERT_OK) return st;
  }
  uint64_t h0 = 0, h = 0;
  for (int r = 0; r < g->n; r++) {
    KilnBertStatus st = moments_hash(g, r, a, b, r ? &h : &h0);
    if (st != KILN_BERT_OK) return st;
    if (r && h != h0)
      return kiln_bert_fail(KILN_BERT_ERROR_DEVICE,
                            "replicas: replica %d's AdamW moments differ from replica 0's; the "
                            "copies no longer train the same model",
                            r);
  }
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_replicas_check_same(KilnBertReplicas *g) {
  if (g->n == 1) return KILN_BERT_OK;
  float *a = malloc(g->size * sizeof *a), *b = malloc(g->size * sizeof *b);
  KilnBertStatus st = a && b ? check_same(g, a, b)
                             : kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY,
                                              "replicas: out of memory to compare the replicas");
  free(a);
  free(b);
  return st;
}
