/* bert_ckpt.h — training checkpoints: what `train --save DIR` writes and `train --resume DIR`
 * reads, so that a resumed run's losses equal an uninterrupted run's bit for bit.
 *
 * DIR holds config.json and model.safetensors (F32, HF names: a model `eval` and `train
 * --model` read), optimizer.safetensors (AdamW's moments per parameter, "NAME.exp_avg" and
 * "NAME.exp_avg_sq", F32) and trainer_state.json (the step, the AdamW update count, the loss
 * scaler, the seed and the data position, and the size and FNV-1a checksum of both safetensors
 * files; in a `--save-best` checkpoint also the evaluation that chose it). A save writes all of them into a fresh directory beside DIR and then exchanges the two
 * directories in one rename, so DIR holds either the previous checkpoint or the new one, whole,
 * whatever happens during the save; resuming checks the checksums first, so a damaged file is
 * refused before anything is loaded. */
#ifndef KILN_BERT_CKPT_H
#define KILN_BERT_CKPT_H

#include "bert_config.h"
#include "bert_model.h"
#include "bert_sched.h"
#include "bert_status.h"

#include <stddef.h>
#include <stdint.h>

/* An evaluation of a checkpoint's weights: after `step` steps, over `samples` samples. */
typedef struct KilnBertEvalRecord {
  int has;         /* 0: none (a --save checkpoint); the rest is then 0 */
  size_t step;     /* the steps the evaluated weights had taken */
  double loss;     /* eval_loss: the mean cross-entropy (finite) */
  double accuracy; /* in [0, 1] */
  size_t samples;
} KilnBertEvalRecord;

/* Where a run stands after `step` optimizer steps. */
typedef struct KilnBertTrainState {
  size_t step;             /* steps taken (logged), the next one is step + 1 */
  size_t adam_step;        /* AdamW updates applied: the bias corrections' k (an fp16 step skipped
                             on overflow counts in step but not here) */
  KilnBertScaler scaler;   /* the loss scale and its good-step counter (scale 1 in fp32/bf16) */
  uint64_t seed;           /* the run's seed: epoch shuffles are drawn from (seed, epoch), and
                             per-step random streams from (seed, step) */
  size_t epoch, position;  /* where step + 1's batch starts: epoch, position in its order */
  size_t samples, batch;   /* the data set's size and the batch the position counts in */
  KilnBertEvalRecord eval; /* the evaluation of these weights, when one was made (--save-best) */
} KilnBertTrainState;

/* A fresh run: nothing taken, scale 1 (the fp16 loss scaler sets its own start), at the start of
 * epoch 0 of `samples` in batches of `batch`. */
void kiln_bert_train_state_init(KilnBertTrainState *ts, uint64_t seed, size_t samples,
                                size_t batch);

/* Writes the checkpoint to dir (created when missing; a symbolic link is followed): cfg, the
 * model's parameters and moments (copied to the host here), and ts, into dir.saving first, then
 * swapped in whole; other files in dir are kept, by hard link (so dir's parent must be writable
 * and on the same file system). IO naming the file, DEVICE when a copy from the device fails;
 * on any failure dir is left exactly as it was. A test forces a failure at one stage with
 * KILN_BERT_SAVE_FAIL=model|optimizer|config|state|swap. */
KilnBertStatus kiln_bert_ckpt_save(const char *dir, const KilnBertConfig *cfg, KilnBertModel *m,
                                   const KilnBertTrainState *ts);

/* Reads dir/trainer_state.json into *ts after checking that model.safetensors and
 * optimizer.safetensors are the files it describes (size and checksum). IO naming the file
 * when one is missing or unreadable; FORMAT for a malformed state or a file that does not
 * match it. */
KilnBertStatus kiln_bert_ckpt_read_state(const char *dir, KilnBertTrainState *ts);

/* Loads dir/optimizer.safetensors into the model's moments (every parameter's two tensors,
 * shapes checked). FORMAT/NOT_FOUND naming the tensor. */
KilnBertStatus kiln_bert_ckpt_load_moments(const char *dir, KilnBertModel *m);

#endif /* KILN_BERT_CKPT_H */
