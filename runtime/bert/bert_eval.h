/* bert_eval.h — `kiln-bert eval`: a trained model's forward pass over a data set, without
 * dropout or gradients, in the data order (never shuffled; kiln-bert contract, sections 1 and
 * 2; under dynamic padding the batches take the samples longest first, so that each is padded
 * to about its own length, and the logits are still written in data order): the mean cross-entropy over all samples (eval_loss), the accuracy (the largest logit, the
 * first on a tie, is the label's), the benchmark metrics of the pass, and optionally every
 * sample's logits. The pass itself (kiln_bert_eval_pass) is shared with `train`, which
 * evaluates its model at the end when the data has a test split. */
#ifndef KILN_BERT_EVAL_H
#define KILN_BERT_EVAL_H

#include "bert_batch.h"
#include "bert_file.h"
#include "bert_metrics.h"
#include "bert_model.h"
#include "bert_profile.h"
#include "bert_status.h"

#include <stddef.h>
#include <stdio.h>

typedef struct KilnBertEvalOptions {
  const char *data;        /* --data: aclImdb root (its test/), split directory, .tsv or .jsonl */
  const char *model;       /* --model DIR: config.json + model.safetensors, every parameter */
  const char *vocab;       /* --vocab; NULL: DIR/vocab.txt */
  const char *device;      /* "cpu" */
  const char *precision;   /* "fp32" */
  int tf32;                /* --tf32: the gemms on TF32 tensor cores */
  const char *log;         /* --log FILE (the summary record) or NULL */
  const char *dump_logits; /* --dump-logits FILE or NULL */
  size_t max_samples;      /* 0: all */
  size_t max_device_bytes; /* the device memory the plan may take; 0: the device's (as train) */
  size_t seq_len, batch;
  KilnBertPadding padding;
  FILE *table; /* where the metrics table goes (kiln-bert: stdout), or NULL */
  FILE *json;  /* where the summary record goes (kiln-bert --json: stdout), or NULL */
  int profile; /* --profile: time each launch of batches 2.. per call (bert_profile.h),
                              written after the summary (table, --json, --log) */
} KilnBertEvalOptions;

/* kiln-bert's defaults: cpu, fp32, seq 128, batch 8, fixed padding; the rest unset. */
void kiln_bert_eval_defaults(KilnBertEvalOptions *o);

/* Runs the evaluation and, when out is not NULL, leaves its metrics there. A wrong input
 * (config, weights, vocabulary, data, a data set without a test split) is FORMAT/IO/NOT_FOUND;
 * an option outside what is implemented INVALID_ARGUMENT; a batch that does not fit the
 * device's memory OUT_OF_MEMORY; a runtime failure DEVICE; each with
 * kiln_bert_last_error() naming it. --dump-logits and --log are written atomically: on a
 * failure neither file is touched. */
KilnBertStatus kiln_bert_eval(const KilnBertEvalOptions *o, KilnBertMetrics *out);

/* One forward pass of model over all of enc in its order, with dropout off (it sets the model's
 * dropout to 0 first: a trainer turns it on again before its next step), batches of `batch` rows (at most the
 * model's planned rows) of seq_len tokens (fixed) or of each batch's bucket (dynamic). Sets
 * metrics' step counts, times, eval_loss, accuracy and eval_samples (not peak_device_bytes);
 * when dump is not NULL, appends one line per sample: its logits as %.9g, space-separated.
 * When profile is not NULL, each batch is one of its steps, timed from the second on. */
KilnBertStatus kiln_bert_eval_pass(KilnBertModel *model, const KilnBertTokenizer *tok,
                                   const KilnBertEncoded *enc, size_t batch, size_t seq_len,
                                   KilnBertPadding padding, KilnBertAtomicFile *dump,
                                   KilnBertProfile *profile, KilnBertMetrics *metrics);

#endif /* KILN_BERT_EVAL_H */
