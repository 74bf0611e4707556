/* bert_tune.h — (kilnbert_tune) whole-model tuning: `kiln-bert tune` (docs/trainer.md).
 *
 * Lists the distinct kernel calls of one training step and one eval step of a model at its exact
 * shapes (bert_plan.h, read off the model's own launches) and tunes each through the autotune
 * library (kiln_tune_command, the code behind `kiln tune`) into one cache, then reports a table
 * per call: the winner, its time and its share of the step's summed kernel time. With a bundle
 * directory it times nothing and compiles every call's candidates instead, for a machine that has
 * the device but not the compiler (bench/gpu/prepare.sh, bench/gpu-check.sh). */
#ifndef KILN_BERT_TUNE_H
#define KILN_BERT_TUNE_H

#include "bert_batch.h"
#include "bert_status.h"

#include <stddef.h>
#include <stdio.h>

typedef struct KilnBertTuneOptions {
  const char *model;       /* a preset (tiny, mini, base, large) or a directory with config.json */
  const char *precision;   /* fp32, fp16, bf16 */
  int tf32;                /* --tf32 (fp32 only): the calls of the TF32 gemm libraries */
  const char *device;      /* cpu, emu, cuda or cuda:N */
  const char *mode;        /* default or max-autotune (kiln tune --mode) */
  const char *cache;       /* the tuning cache to extend; required */
  const char *kernels_dir; /* where kernels-bert/'s files are */
  size_t batch, seq_len;
  KilnBertPadding padding;
  double budget;          /* seconds after which no new kernel is tuned; < 0: no bound */
  int list_only;          /* list the calls, tune nothing */
  const char *bundle_dir; /* time nothing: every call's candidates compiled into DIR/cNNN (kiln
                            * tune --emit-bundle) for kiln-tune-runner on another machine, and
                            * DIR/calls.txt listing them; no cache needed */
  const char *arch;       /* cuda bundles: sm_80 or sm_90 (default sm_90) */
  int json;               /* the report as JSON instead of a table */
  FILE *out;              /* where the report goes */
} KilnBertTuneOptions;

/* tiny, fp32, cpu, default mode, batch 8, seq 128, fixed padding, no budget, the kernels of
 * this source tree; cache unset. */
void kiln_bert_tune_defaults(KilnBertTuneOptions *o);

/* Runs the tuning. INVALID_ARGUMENT for an option it refuses (shape, precision, device, mode,
 * no cache); FORMAT/NOT_FOUND/IO for a wrong model directory; DEVICE when the device cannot be
 * used for tuning (a cuda device that is not there); OUT_OF_MEMORY. A kernel whose tuning fails
 * is reported in the table and makes the run end with FORMAT after the others are tuned. */
KilnBertStatus kiln_bert_tune(const KilnBertTuneOptions *o);

#endif /* KILN_BERT_TUNE_H */
