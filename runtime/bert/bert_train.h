/* bert_train.h — `kiln-bert train`: the run from options to a trained model, so that the
 * command only reads its options. Loads the config (a preset, a model directory, or the
 * checkpoint being resumed), the vocabulary and the data, tokenizes once, initializes or loads
 * the weights, then steps kilnbert_model through the run's batches with the contract's schedule
 * in fp32, fp16 or bf16, with dropout at every site of the contract (masks drawn from --seed and
 * the step, so a resumed run draws the same ones), evaluates the model on the test split when
 * there is one (bert_eval, dropout off), and writes the JSON-lines log (one record per step, then
 * the summary) and optionally a checkpoint (bert_ckpt; f32 master weights in every precision).
 * The cpu and emu devices (docs/trainer.md, "What is left"). */
#ifndef KILN_BERT_TRAIN_H
#define KILN_BERT_TRAIN_H

#include "bert_batch.h"
#include "bert_sched.h"
#include "bert_status.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The most micro-batches --accumulate may split a replica's part of a batch into. */
#define KILN_BERT_MAX_ACCUMULATE 4096

typedef struct KilnBertTrainOptions {
  const char *data;   /* --data: aclImdb root, split directory, .tsv or .jsonl */
  const char *model;  /* --model: a preset (tiny, mini, base, large) or a directory with config.json
                            (and model.safetensors, else random init) */
  const char *vocab;  /* --vocab; NULL: MODEL/vocab.txt */
  const char *device; /* "cpu", or "emu" where the build has it */
  const char *precision;   /* "fp32", "fp16", "bf16" */
  int tf32;                /* --tf32 (fp32 only): the gemms on TF32 tensor cores */
  const char *log;         /* --log FILE or NULL */
  const char *save;        /* --save DIR or NULL: model, optimizer state and position (bert_ckpt) */
  const char *save_best;   /* --save-best DIR or NULL: after each evaluation (--eval-every, the
                              end of the run) whose eval_loss is the lowest so far, the checkpoint
                              there, with that evaluation in its trainer_state.json */
  const char *resume;      /* --resume DIR or NULL: continue the run saved there (its model,
                            moments, step and seed; --steps stays the run's total) */
  const char *eval_data;   /* --eval-data PATH or NULL: evaluated at the end (default: --data's
                            test/ split when --data is an aclImdb root that has one) */
  size_t max_samples;      /* 0: all */
  size_t eval_max_samples; /* the end-of-run evaluation's first N test samples; 0: max_samples */
  size_t max_device_bytes; /* --max-device-bytes: the device memory the plan may take; 0: the
                              device's (KILN_DEVICE_MEMORY, else the host's memory on cpu/emu) */
  size_t seq_len, batch, epochs, steps, warmup;
  size_t stop_after; /* --stop-after N: end after step N of the run (the schedule still
                            counts the whole run), e.g. to --save and --resume later; 0: never */
  size_t eval_every; /* --eval-every N: also evaluate after every N-th step before the last
                            (a {"eval_step": k, ...} record in the log); 0: at the end only */
  size_t save_every; /* --save-every N: also write the --save checkpoint after every N-th
                            step, so that a killed run can be resumed; 0: at the end only */
  size_t replicas;   /* --replicas N: data-parallel copies of the model (bert_replicas.h), each
                            on its own device (cuda[:K]: cuda:K, cuda:K+1, ...) running 1/N of
                            every --batch; 1 (or 0): one model */
  size_t accumulate; /* --accumulate A: each replica runs its part of every --batch as A
                            micro-batches in turn, their gradients summed before the optimizer
                            (gradient accumulation: the activations of batch / (replicas x A)
                            samples); 1 (or 0): one pass */
  KilnBertPadding padding;
  KilnBertSchedule schedule;
  int shuffle;
  int group_by_length; /* --group-by-length: each epoch's shuffled order grouped by length
                            (kiln_bert_group_by_length), so that dynamic padding pads each
                            batch to about its samples' own length; needs both */
  int profile;         /* --profile: time each launch of steps 2.. per call (bert_profile.h) and
                            write the result after the summary (table and log) */
  int graphs;          /* whole-step replay (kiln_bert_model_set_graphs): 1 on (--graphs), 0
                            off (--no-graphs), -1 (the default) on cuda unless --profile or the
                            launch log taps the launches */
  uint64_t seed;
  double lr, weight_decay, beta1, beta2, eps, clip;
  double dropout; /* < 0: the config's hidden_dropout_prob; must be in [0, 1) */
  FILE *progress; /* a terminal to draw a progress bar on, or NULL */
  FILE *table;    /* where the summary table goes at the end (kiln-bert: stdout), or NULL */
  FILE *notes;    /* where notes on a loaded checkpoint go (a parameter initialized rather
                            than loaded, a tensor ignored; kiln-bert: stderr), or NULL */
} KilnBertTrainOptions;

/* kiln-bert's defaults: tiny, cpu, fp32, seq 128, batch 8, 1 epoch, lr 5e-5, linear schedule
 * without warmup, weight decay 0.01, betas 0.9/0.999, eps 1e-8, clip 1.0, fixed padding,
 * shuffled with seed 42; data, vocab and log unset. */
void kiln_bert_train_defaults(KilnBertTrainOptions *o);

/* Runs the training. A wrong input (config, vocabulary, data, weights) is FORMAT/IO/NOT_FOUND;
 * an option outside what is implemented (precision, device) or a dropout outside [0, 1)
 * INVALID_ARGUMENT; a batch whose memory plan does not fit the device OUT_OF_MEMORY (before
 * anything is allocated or written); a runtime failure DEVICE; each with kiln_bert_last_error()
 * naming it. */
KilnBertStatus kiln_bert_train(const KilnBertTrainOptions *o);

#endif /* KILN_BERT_TRAIN_H */
