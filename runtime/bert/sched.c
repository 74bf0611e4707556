/* sched.c — LR schedules and loss scaling (bert_sched.h), in double precision as the reference
 * computes its LR multipliers in Python floats. */
#include "bert_sched.h"

#include <math.h>

double kiln_bert_lr_factor(KilnBertSchedule schedule, size_t j, size_t warmup, size_t total) {
  if (j < warmup) return (double)j / (double)(warmup > 1 ? warmup : 1);
  if (schedule == KILN_BERT_SCHEDULE_CONSTANT) return 1.0;
  double left = total > j ? (double)(total - j) : 0.0;
  size_t span = total > warmup ? total - warmup : 0;
  return left / (double)(span > 1 ? span : 1);
}

void kiln_bert_scaler_init(KilnBertScaler *s) {
  s->scale = KILN_BERT_SCALER_INIT;
  s->good_steps = 0;
}

int kiln_bert_scaler_update(KilnBertScaler *s, int found_inf) {
  if (found_inf) {
    s->scale *= 0.5f;
    s->good_steps = 0;
    return 1;
  }
  if (++s->good_steps == KILN_BERT_SCALER_GROWTH_INTERVAL) {
    float grown = s->scale * 2.0f;
    if (isfinite(grown)) s->scale = grown;
    s->good_steps = 0;
  }
  return 0;
}
