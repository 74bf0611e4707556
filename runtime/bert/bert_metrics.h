/* bert_metrics.h — the benchmark metrics of a kiln-bert run (train or eval), counted step by
 * step and written at the end as the log's summary record (one JSON line) or as a table: the
 * reference benchmark's first_iter_time, avg_iter_time (steps after the first), iter_per_sec,
 * samples_per_sec, total_time (the steps only, no data preparation) and total_time_hr, plus
 * tokens_per_sec (tokens fed, padding included), padding_share (the share of them that was
 * padding: what dynamic padding and grouping by length save), peak_device_bytes and, when an evaluation ran,
 * eval_loss and accuracy (null otherwise). One writer for both commands, so their records and
 * tables agree key for key. */
#ifndef KILN_BERT_METRICS_H
#define KILN_BERT_METRICS_H

#include <stddef.h>
#include <stdio.h>

typedef struct KilnBertMetrics {
  size_t steps, samples, tokens;
  size_t real_tokens; /* of tokens, those of the samples ([CLS] to [SEP]): the rest is padding */
  double first_iter_time;   /* seconds of step 1 */
  double later_iter_time;   /* seconds of steps 2.. together */
  double total_time;        /* seconds from the first step's start to the last one's end */
  size_t peak_device_bytes; /* the device allocator's high-water mark */
  int has_eval;             /* eval_loss and accuracy are set */
  double eval_loss;         /* mean cross-entropy over the evaluated samples */
  double accuracy;          /* fraction of samples whose largest logit is their label's */
  size_t eval_samples;
  double eval_time; /* train: seconds of the end-of-run evaluation pass (0: none or eval itself) */
} KilnBertMetrics;

/* Counts one step of dt seconds that fed `samples` rows of `tokens` tokens in all, `real` of
 * them the samples' own (the rest padding). */
void kiln_bert_metrics_step(KilnBertMetrics *m, double dt, size_t samples, size_t tokens,
                            size_t real);

/* Mean seconds of the steps after the first (the first alone when there is one step). */
double kiln_bert_metrics_avg_iter(const KilnBertMetrics *m);

/* "HH:MM:SS" of a duration in seconds (hours may exceed 99). */
void kiln_bert_metrics_hms(double seconds, char out[32]);

/* Writes {"summary": true, "steps": .., <the metrics>} and a newline to f; a value JSON cannot
 * hold (NaN, inf) and an evaluation that did not run are null. */
void kiln_bert_metrics_json(const KilnBertMetrics *m, FILE *f);

/* Writes the same metrics as a two-column table under the line `title`, then flushes f. */
void kiln_bert_metrics_table(const KilnBertMetrics *m, const char *title, FILE *f);

#endif /* KILN_BERT_METRICS_H */
