/* bert_sched.h — the optimizer's host-side arithmetic of the kiln-bert contract (section 5):
 * the learning-rate schedules with warmup (HF get_linear_schedule_with_warmup and
 * get_constant_schedule_with_warmup) and fp16 dynamic loss scaling with torch GradScaler's
 * defaults. The update itself runs on the device (kernels-bert/adamw). */
#ifndef KILN_BERT_SCHED_H
#define KILN_BERT_SCHED_H

#include <stddef.h>

typedef enum KilnBertSchedule {
  KILN_BERT_SCHEDULE_LINEAR,   /* warmup, then linear decay to 0 at the last step */
  KILN_BERT_SCHEDULE_CONSTANT, /* warmup, then constant */
} KilnBertSchedule;

/* The LR multiplier after j steps already taken (the update of step k uses j = k - 1), with W
 * warmup steps of T in all: j / max(1, W) while j < W; then 1 (constant) or
 * max(0, (T - j) / max(1, T - W)) (linear). */
double kiln_bert_lr_factor(KilnBertSchedule schedule, size_t j, size_t warmup, size_t total);

/* Dynamic loss scaling as torch.cuda.amp.GradScaler's defaults: start at 2^16; a step whose
 * gradients hold an inf or NaN is skipped and halves the scale; 2000 good steps in a row double
 * it (unless that would overflow to inf). */
typedef struct KilnBertScaler {
  float scale;
  int good_steps; /* good steps since the last change */
} KilnBertScaler;

#define KILN_BERT_SCALER_INIT            65536.0f
#define KILN_BERT_SCALER_GROWTH_INTERVAL 2000

void kiln_bert_scaler_init(KilnBertScaler *s);
/* Records one step's outcome; returns 1 when the optimizer update must be skipped. */
int kiln_bert_scaler_update(KilnBertScaler *s, int found_inf);

#endif /* KILN_BERT_SCHED_H */
