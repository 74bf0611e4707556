/* bert_replicas.h — data-parallel training (`kiln-bert train --replicas N`): N copies of the
 * model, each on its own device, each running the forward and backward of one shard of every
 * batch; between the backward and the optimizer their gradient buffers are all-reduced into the
 * gradient of the whole batch's mean loss, so that every copy takes the same AdamW step from the
 * same parameters and the copies stay equal bit for bit.
 *
 * The all-reduce runs in the models' all-reduce hook (bert_model.h), once a step: the driver
 * runs every replica's forward and backward, calls kiln_bert_replicas_begin_step with the rows
 * each shard held, then kiln_bert_model_step on every replica; the first of those steps
 * reduces for all. A shard of r rows of a batch of R is the gradient of its own mean loss, so
 * the whole batch's is sum_r (r / R) g_r: each buffer is read to the host, weighted and summed
 * in rank order (a fixed order: a rerun gives the same bits), and the sum written back to every
 * replica. Going through host memory makes it work on every device kind (cpu, emu, several
 * GPUs) at the cost of two copies of the gradient buffer per replica and step; on several GPUs
 * an NCCL all-reduce on the models' streams is the fast path that would take its place. */
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

/* Joins n models (n in [1, KILN_BERT_MAX_REPLICAS], each on its own device, the same config,
 * precision and parameter layout) into a group: installs the all-reduce hook on each and
 * allocates the host buffers of the reduction (two flat buffers of the parameters' size).
 * The models stay the caller's and must outlive the group. INVALID_ARGUMENT for a bad n or
 * models that differ; OUT_OF_MEMORY. */
KilnBertStatus kiln_bert_replicas_create(KilnBertModel *const *models, int n,
                                         KilnBertReplicas **out);
/* Clears the models' hooks and frees the group (NULL is fine). */
void kiln_bert_replicas_destroy(KilnBertReplicas *g);

/* Starts a step's round: rows[r] is the number of samples replica r ran its forward and
 * backward on (0: it ran none; its buffer is not read, but it receives the sum). The next
 * kiln_bert_model_step of any replica reduces; the others' use the result. INVALID_ARGUMENT
 * when every shard is empty. */
KilnBertStatus kiln_bert_replicas_begin_step(KilnBertReplicas *g, const size_t *rows);

/* Whether every replica holds replica 0's parameters and AdamW moments bit for bit (and its
 * loss scale): KILN_BERT_OK, or DEVICE naming the first replica and parameter that differs
 * (a kernel whose result depends on more than its inputs, e.g. the order of float atomics,
 * makes the copies drift apart; a checkpoint saved from replica 0 would then not be the run). */
KilnBertStatus kiln_bert_replicas_check_same(KilnBertReplicas *g);

#endif /* KILN_BERT_REPLICAS_H */
