/* test_sched.c — the LR multipliers of the contract's section 5 (warmup, linear and constant,
 * the last linear step at 1/(T-W)) and GradScaler's loss-scale state machine. */
#include "bert_sched.h"
#include "check.h"

#include <float.h>
#include <math.h>

static void test_lr(void) {
  static const struct {
    KilnBertSchedule s;
    size_t j, w, t;
    double want;
  } cases[] = {
      {KILN_BERT_SCHEDULE_LINEAR, 0, 0, 4, 1.0},    {KILN_BERT_SCHEDULE_LINEAR, 1, 0, 4, 0.75},
      {KILN_BERT_SCHEDULE_LINEAR, 3, 0, 4, 0.25},   {KILN_BERT_SCHEDULE_LINEAR, 4, 0, 4, 0.0},
      {KILN_BERT_SCHEDULE_LINEAR, 0, 2, 6, 0.0},    {KILN_BERT_SCHEDULE_LINEAR, 1, 2, 6, 0.5},
      {KILN_BERT_SCHEDULE_LINEAR, 2, 2, 6, 1.0},    {KILN_BERT_SCHEDULE_LINEAR, 5, 2, 6, 0.25},
      {KILN_BERT_SCHEDULE_LINEAR, 9, 2, 6, 0.0},    {KILN_BERT_SCHEDULE_LINEAR, 4, 10, 5, 0.4},
      {KILN_BERT_SCHEDULE_LINEAR, 0, 1, 1, 0.0},    {KILN_BERT_SCHEDULE_LINEAR, 0, 0, 1, 1.0},
      {KILN_BERT_SCHEDULE_CONSTANT, 0, 0, 4, 1.0},  {KILN_BERT_SCHEDULE_CONSTANT, 0, 2, 6, 0.0},
      {KILN_BERT_SCHEDULE_CONSTANT, 1, 2, 6, 0.5},  {KILN_BERT_SCHEDULE_CONSTANT, 2, 2, 6, 1.0},
      {KILN_BERT_SCHEDULE_CONSTANT, 99, 2, 6, 1.0}, {KILN_BERT_SCHEDULE_CONSTANT, 0, 1, 9, 0.0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double got = kiln_bert_lr_factor(cases[i].s, cases[i].j, cases[i].w, cases[i].t);
    CHECK(got == cases[i].want, "case %zu: j=%zu W=%zu T=%zu: %g, expected %g", i, cases[i].j,
          cases[i].w, cases[i].t, got, cases[i].want);
  }
  /* T = 3 epochs x 7 steps, W = 5: the last step's update uses 1/(T - W) */
  CHECK(kiln_bert_lr_factor(KILN_BERT_SCHEDULE_LINEAR, 20, 5, 21) == 1.0 / 16, "last step");
}

static void test_scaler(void) {
  KilnBertScaler s;
  kiln_bert_scaler_init(&s);
  CHECK(s.scale == 65536.0f && s.good_steps == 0, "starts at 2^16");
  CHECK(kiln_bert_scaler_update(&s, 1) == 1 && s.scale == 32768.0f, "inf: skip and halve");
  int skipped = 0;
  for (int i = 0; i < 1999; i++) skipped += kiln_bert_scaler_update(&s, 0);
  CHECK(!skipped && s.scale == 32768.0f && s.good_steps == 1999, "1999 good steps: no change");
  CHECK(kiln_bert_scaler_update(&s, 0) == 0 && s.scale == 65536.0f && s.good_steps == 0,
        "the 2000th doubles");
  for (int i = 0; i < 1500; i++) kiln_bert_scaler_update(&s, 0);
  kiln_bert_scaler_update(&s, 1);
  for (int i = 0; i < 1999; i++) kiln_bert_scaler_update(&s, 0);
  CHECK(s.scale == 32768.0f, "an overflow restarts the count: %g", (double)s.scale);
  s.scale = FLT_MAX;
  s.good_steps = 1999;
  kiln_bert_scaler_update(&s, 0);
  CHECK(s.scale == FLT_MAX && s.good_steps == 0, "no growth to inf");
}

int main(void) {
  test_lr();
  test_scaler();
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
