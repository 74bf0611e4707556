/* bert_train.h — `kiln-bert train`: the run from options to a trained model, so that the
 * command only reads its options. Loads the config (a preset or a model directory), the
 * vocabulary and the data, tokenizes once, initializes or loads the weights, then steps
 * kilnbert_model through the run's batches with the contract's schedule and writes the JSON-lines
 * log (one record per step, then the summary) and optionally the model (f32 master weights in
 * every precision). fp32, fp16 or bf16 on the cpu device, dropout 0, for now (docs/trainer.md,
 * "What is left"). */
#ifndef KILN_BERT_TRAIN_H
#define KILN_BERT_TRAIN_H

#include "bert_batch.h"
#include "bert_sched.h"
#include "bert_status.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct KilnBertTrainOptions {
  const char *data;      /* --data: aclImdb root, split directory, .tsv or .jsonl */
  const char *model;     /* --model: a preset (tiny, base, large) or a directory with config.json
                            (and model.safetensors, else random init) */
  const char *vocab;     /* --vocab; NULL: MODEL/vocab.txt */
  const char *device;    /* "cpu" */
  const char *precision; /* "fp32", "fp16", "bf16" */
  const char *log;       /* --log FILE or NULL */
  const char *save;      /* --save DIR or NULL */
  size_t max_samples;    /* 0: all */
  size_t seq_len, batch, epochs, steps, warmup;
  KilnBertPadding padding;
  KilnBertSchedule schedule;
  int shuffle;
  uint64_t seed;
  double lr, weight_decay, beta1, beta2, eps, clip;
  double dropout;        /* < 0: the config's hidden_dropout_prob */
  FILE *progress;        /* a terminal to draw a progress bar on, or NULL */
  FILE *table;           /* where the summary table goes at the end (kiln-bert: stdout), or NULL */
} KilnBertTrainOptions;

/* kiln-bert's defaults: tiny, cpu, fp32, seq 128, batch 8, 1 epoch, lr 5e-5, linear schedule
 * without warmup, weight decay 0.01, betas 0.9/0.999, eps 1e-8, clip 1.0, fixed padding,
 * shuffled with seed 42; data, vocab and log unset. */
void kiln_bert_train_defaults(KilnBertTrainOptions *o);

/* Runs the training. A wrong input (config, vocabulary, data, weights) is FORMAT/IO/NOT_FOUND;
 * an option outside what is implemented (precision, device, dropout) INVALID_ARGUMENT; a
 * runtime failure DEVICE; each with kiln_bert_last_error() naming it. */
KilnBertStatus kiln_bert_train(const KilnBertTrainOptions *o);

#endif /* KILN_BERT_TRAIN_H */
