/* test_profile_cuda.c — the cuda path of `kiln-bert train --profile` (bert_profile.h) through
 * the fake driver (tests/runtime/fake_cuda.c with KILN_FAKE_CUDA_FREE and
 * KILN_FAKE_CUDA_MODULES=1).
 *
 * The fake driver runs no kernel and has no device memory, so no model step can run on it; what
 * it has is events, on a fake clock that each record advances by 0.5 ms. So this drives the
 * profile the way the launch tap and the train loop do, launch by launch, with a device of kind
 * cuda, and checks what the cuda path adds to the cpu one (kilnbert.profile covers the rest):
 *   - an untimed step records no event;
 *   - a timed step creates its events before it starts (two per launch of the step before)
 *     and none during it, records two per launch, and reads them after it: each launch spans
 *     exactly one clock tick, 0.5 ms, so each call's time is 0.5 ms x its launches, exactly;
 *   - the table and the JSONL records say so, sorted by time; the events are freed with it.
 * On a machine with a real GPU (no fake counters) it skips (exit 77). */
#include "bert_profile.h"
#include "check.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fake driver's counters, or NULL where libcuda is a real one. */
static int *fake_counter(const char *name) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h ? dlsym(h, name) : NULL;
}

/* One step of launches of calls[0..n), as the tap makes them; the fake driver's event count
 * once the step has begun must be `events_before` (-1: not checked). */
static void step(KilnBertProfile *pf, int timed, const int *calls, int n, double seconds,
                 int events_before) {
  CHECK(kiln_bert_profile_step_begin(pf, timed) == KILN_BERT_OK, "step_begin: %s",
        kiln_bert_last_error());
  int *events = fake_counter("fake_cuda_events");
  CHECK(events_before < 0 || *events == events_before,
        "%d events before the step's launches, expected %d", *events, events_before);
  for (int i = 0; i < n; i++) {
    CHECK(kiln_bert_profile_launch_begin(pf) == KILN_RT_OK, "launch_begin: %s",
          kiln_rt_last_error());
    CHECK(kiln_bert_profile_launch_end(pf, calls[i]) == KILN_RT_OK, "launch_end: %s",
          kiln_rt_last_error());
  }
  CHECK(kiln_bert_profile_step_end(pf, seconds) == KILN_BERT_OK, "step_end: %s",
        kiln_bert_last_error());
}

/* The number after `"key": ` in the JSONL record of `kernel`; NAN when absent. */
static double field(const char *jsonl, const char *kernel, const char *key) {
  char want[96];
  snprintf(want, sizeof want, "\"kernel\": \"%s\"", kernel);
  const char *rec = kernel ? strstr(jsonl, want) : strstr(jsonl, "\"total\": true");
  if (!rec) return NAN;
  const char *end = strchr(rec, '\n');
  snprintf(want, sizeof want, "\"%s\": ", key);
  const char *at = strstr(rec, want);
  return at && (!end || at < end) ? strtod(at + strlen(want), NULL) : NAN;
}

int main(void) {
  KilnRtDevice *dev = NULL;
  if (kiln_rt_device_create("cuda", &dev) != KILN_RT_OK) {
    printf("FAIL no cuda device through the fake driver: %s\n", kiln_rt_last_error());
    return 1;
  }
  int *events = fake_counter("fake_cuda_events"),
      *records = fake_counter("fake_cuda_event_records");
  if (!events || !records) {
    printf("skipped: libcuda is not the fake driver\n");
    kiln_rt_device_destroy(dev);
    return 77;
  }
  KilnBertProfile *pf = NULL;
  CHECK(kiln_bert_profile_create(dev, NULL, &pf) == KILN_BERT_OK, "create");
  if (!pf) return 1;

  /* three calls; a step launches 0, 1, 1, 2, 0, 1 */
  KilnBertCall calls[3];
  memset(calls, 0, sizeof calls);
  const char *names[3] = {"k_zero", "k_one", "k_two"};
  for (int i = 0; i < 3; i++) {
    snprintf(calls[i].file, sizeof calls[i].file, "test.kiln");
    snprintf(calls[i].kernel, sizeof calls[i].kernel, "%s", names[i]);
    snprintf(calls[i].shape, sizeof calls[i].shape, "n=%d", i + 1);
    snprintf(calls[i].spec, sizeof calls[i].spec, "kernel=%s; n=%d", names[i], i + 1);
  }
  const int launches[6] = {0, 1, 1, 2, 0, 1};

  step(pf, 0, launches, 6, 1.0, 0);
  CHECK(*records == 0 && *events == 0, "an untimed step: %d events, %d records", *events, *records);

  /* two per launch of the step before, made before the first timed launch */
  step(pf, 1, launches, 6, 0.004, 12);
  step(pf, 1, launches, 6, 0.006, 12);
  CHECK(*events == 12, "no event created during the timed steps: %d", *events);
  CHECK(*records == 24, "%d events recorded in 2 x 6 launches, expected 24", *records);

  char *table = NULL, *jsonl = NULL;
  size_t tn = 0, jn = 0;
  FILE *tf = open_memstream(&table, &tn), *jf = open_memstream(&jsonl, &jn);
  kiln_bert_profile_write(pf, calls, 3, tf, jf);
  fclose(tf);
  fclose(jf);
  printf("%s%s", table, jsonl);
  double steps = 2;
  /* per timed step: k_one 3 launches x 0.5 ms, k_zero 2, k_two 1 */
  CHECK(field(jsonl, "k_one", "launches_per_step") == 6 / steps, "k_one launches");
  CHECK(field(jsonl, "k_one", "ms_per_step") == 3.0 / steps, "k_one ms: %g",
        field(jsonl, "k_one", "ms_per_step"));
  CHECK(field(jsonl, "k_zero", "ms_per_step") == 2.0 / steps, "k_zero ms");
  CHECK(field(jsonl, "k_two", "ms_per_step") == 1.0 / steps, "k_two ms");
  CHECK(field(jsonl, "k_one", "us_per_launch") == 500, "k_one us per launch");
  CHECK(fabs(field(jsonl, "k_two", "share") - 1.0 / 6) < 1e-8, "k_two share"); /* %.9g */
  CHECK(field(jsonl, NULL, "kernel_ms_per_step") == 6.0 / steps, "kernel ms per step");
  CHECK(fabs(field(jsonl, NULL, "step_ms") - 5.0) < 1e-9, "step ms %g",
        field(jsonl, NULL, "step_ms"));
  CHECK(field(jsonl, NULL, "timed_steps") == 2, "timed steps");
  CHECK(strstr(jsonl, "\"clock\": \"events\""), "the events clock named");
  const char *one = strstr(table, "k_one"), *zero = strstr(table, "k_zero"),
             *two = strstr(table, "k_two");
  CHECK(one && zero && two && one < zero && zero < two, "table rows sorted by time");
  CHECK(strstr(table, "device events") && strstr(table, "launch overhead"), "table header, footer");
  free(table);
  free(jsonl);

  kiln_bert_profile_destroy(pf);
  CHECK(*events == 0, "%d events left after destroy", *events);
  kiln_rt_device_destroy(dev);
  return kiln_check_result("test_profile_cuda");
}
