/* bert_plan.h — (kilnbert_model) the kernel calls of a training step and an eval step, read off
 * the model's own launches, for whole-model tuning (`kiln-bert tune`, docs/trainer.md).
 *
 * A KilnBertPlan is a tap on the model's launch table (bert_model_ops.h): every launch becomes
 * a KilnBertCall naming the kernel file, its -D pins, the kernel and a `kiln tune --args` spec at
 * the call's exact shapes, and equal calls are counted once. kiln_bert_plan_step drives a
 * plan-only model (no device, no memory) through one training step and one eval step, so the
 * list comes from the code that issues the calls and cannot drift from it. The same tap can log
 * a real model's launches (kiln_bert_plan_attach), which the tests compare against. */
#ifndef KILN_BERT_PLAN_H
#define KILN_BERT_PLAN_H

#include "bert_batch.h"
#include "bert_model.h"

#include <stdio.h>

/* One distinct kernel call. */
typedef struct KilnBertCall {
  char file[24];   /* the kernels-bert/ file: "gemm.kiln" */
  char pins[64];   /* its -D pins, NAME=VALUE separated by spaces: "T=f32 EPI=1" */
  char kernel[32]; /* "gemm" */
  char shape[48];  /* its main sizes, short: "M=128 N=384 K=128 nt", "rows=64 cols=128" */
  char spec[768];  /* the `kiln tune --args` spec at the call's shapes */
  int count;       /* launches of it in the step(s) planned */
  double flops;    /* per launch: the floating-point operations of its matrix products (0 for
                       a memory-bound kernel), and the bytes it must move at the least */
  double bytes;
} KilnBertCall;

typedef struct KilnBertPlan KilnBertPlan;

/* An empty plan of a precision's calls (the element type its specs are written in). NULL when
 * memory runs out. */
KilnBertPlan *kiln_bert_plan_create(KilnBertPrecision prec);
void kiln_bert_plan_destroy(KilnBertPlan *p);

/* Records the launches of one training step (forward with dropout p, backward, AdamW with opt)
 * and one eval step (forward without dropout) of a batch x seq_len model: with fixed padding at
 * seq_len; with dynamic padding at every length bucket up to seq_len (kiln_bert_pad_bucket).
 * INVALID_ARGUMENT for a shape the model refuses; OUT_OF_MEMORY. */
KilnBertStatus kiln_bert_plan_step(KilnBertPlan *p, const KilnBertConfig *cfg, int batch,
                                   int seq_len, KilnBertPadding padding, double dropout,
                                   const KilnBertOptim *opt);

/* The distinct calls recorded so far, in first-launch order; valid until the plan changes. */
const KilnBertCall *kiln_bert_plan_calls(const KilnBertPlan *p, int *n);

/* Puts the plan in front of a real model: every launch is forwarded and also written to `log`
 * (when not NULL) as one line "FILE|PINS|KERNEL|SPEC". The plan must outlive the model. */
void kiln_bert_plan_attach(KilnBertPlan *p, KilnBertModel *m, FILE *log);

/* Times every launch forwarded from now on (after kiln_bert_plan_attach) with `pf` (NULL:
 * stops), each under its call's index in kiln_bert_plan_calls. `pf` must outlive the model's
 * launches. */
typedef struct KilnBertProfile KilnBertProfile;
void kiln_bert_plan_profile(KilnBertPlan *p, KilnBertProfile *pf);

#endif /* KILN_BERT_PLAN_H */
