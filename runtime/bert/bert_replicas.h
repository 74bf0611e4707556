/* bert_replicas.h — data-parallel training (`kiln-bert train --replicas N`): N copies of the
 * model, each on its own device, each running the forward and backward of one shard of every
 * batch; between the backward and the optimizer their gradient buffers are all-reduced into the
 * gradient of the whole batch's mean loss, so that every copy takes the same AdamW step from the
 * same parameters and the copies stay equal bit for bit.
 *
 * The driver calls kiln_bert_replicas_begin_step with the rows of each shard, runs every
 * replica's forward and backward, then kiln_bert_model_step on every replica; the first of
 * those steps all-reduces for all, in the models' all-reduce hook (bert_model.h). Each
 * replica's backward takes the mean over the whole batch's rows, not its shard's, so the
 * batch's gradient is the plain sum of the replicas' buffers: kiln_rt_comm's all-reduce
 * (kilnrt.h), NCCL's on several GPUs where NCCL can be loaded, else the runtime's through host
 * memory in rank order (a rerun gives the same bits; on GPUs it costs two copies of the
 * gradient buffer per replica and step). */
#ifndef KILN_BERT_REPLICAS_H
#define KILN_BERT_REPLICAS_H

#include "bert_model.h"
#include "bert_status.h"

#include <stddef.h>

/* The most replicas a run may have: each is a device, a model and a staged reduction. */
#define KILN_BERT_MAX_REPLICAS 64

typedef struct KilnBertReplicas KilnBertReplicas;

/* Where replica r's shard of a batch of `count` samples starts (*first, from the batch's
 * first sample) and how many it holds (*rows): the first count % n replicas take one more
 * than count / n, so shards differ by one sample at most and may be empty when count < n. */
void kiln_bert_replicas_shard(size_t count, int n, int r, size_t *first, size_t *rows);

/* Joins n models (n in [1, KILN_BERT_MAX_REPLICAS], models[r] on devs[r], each device its
 * own, the same config, precision and parameter layout) into a group: a communicator over the
 * devices and the all-reduce hook on each model. The models and devices stay the caller's and
 * must outlive the group. INVALID_ARGUMENT for a bad n or models that differ; DEVICE when the
 * communicator cannot be made; OUT_OF_MEMORY. */
KilnBertStatus kiln_bert_replicas_create(KilnBertModel *const *models, KilnRtDevice *const *devs,
                                         int n, KilnBertReplicas **out);
/* Clears the models' hooks and frees the group (NULL is fine). */
void kiln_bert_replicas_destroy(KilnBertReplicas *g);
/* "nccl" or "host": the all-reduce's path (kiln_rt_comm_path). */
const char *kiln_bert_replicas_path(const KilnBertReplicas *g);

/* Starts a step's round, before the replicas' passes: rows[r] is the number of samples replica
 * r will run its forward and backward on (0: none; it adds zeros and receives the sum). Sets
 * every model's backward to the mean over the sum of rows; the next kiln_bert_model_step of
 * any replica reduces, the others' use the result. INVALID_ARGUMENT when every shard is
 * empty. */
KilnBertStatus kiln_bert_replicas_begin_step(KilnBertReplicas *g, const size_t *rows);

/* Whether every replica holds replica 0's parameters and AdamW moments bit for bit (and its
 * loss scale): KILN_BERT_OK, or DEVICE naming the first replica and parameter that differs
 * (a kernel whose result depends on more than its inputs, e.g. the order of float atomics,
 * makes the copies drift apart; a checkpoint saved from replica 0 would then not be the run).
 * Reads the parameters through two host buffers of their size, allocated for the call. */
KilnBertStatus kiln_bert_replicas_check_same(KilnBertReplicas *g);

#endif /* KILN_BERT_REPLICAS_H */
