/* bert_profile.h — (kilnbert_model) where a step's time goes, kernel call by kernel call:
 * `kiln-bert train --profile` (docs/trainer.md, "Profile").
 *
 * A KilnBertProfile is given to the launch tap (kiln_bert_plan_profile), the one place that
 * sees every launch of the model, which brackets each launch with launch_begin/launch_end under
 * the index of its call in the plan's list. Only the launches between step_begin(timed = 1) and
 * step_end are timed, so the caller leaves out the steps it does not want (the first, which may
 * include one-time work). How a launch is timed depends on the device:
 *   - cuda: a pair of the runtime's events recorded on the launch's stream (the model's:
 *     kiln_bert_model_stream) around it, read once in step_end, so that profiling adds no
 *     synchronization of its own; the events are kept from step to step;
 *   - cpu and emu: launches have finished when they return, so the host's monotonic clock
 *     around each one.
 * A run without a profile has no tap for it, so it pays nothing. */
#ifndef KILN_BERT_PROFILE_H
#define KILN_BERT_PROFILE_H

#include "bert_plan.h"

#include <kiln/kilnrt.h>

#include <stdio.h>

/* A profile of launches queued on `stream` of `dev` (NULL: the default stream; neither owned,
 * both must outlive the profile). OUT_OF_MEMORY. */
KilnBertStatus kiln_bert_profile_create(KilnRtDevice *dev, KilnRtStream *stream,
                                        KilnBertProfile **out);
/* Frees the profile and its events. NULL is a no-op. */
void kiln_bert_profile_destroy(KilnBertProfile *pf);

/* Around one launch of call `call` (an index of kiln_bert_plan_calls): what the tap calls.
 * Outside a timed step they do nothing. A failing event call is returned (with
 * kiln_rt_last_error()); a call index out of memory is OUT_OF_MEMORY. */
KilnRtStatus kiln_bert_profile_launch_begin(KilnBertProfile *pf);
KilnRtStatus kiln_bert_profile_launch_end(KilnBertProfile *pf, int call);

/* A step begins: its launches are timed when `timed` is 1. On cuda, events for as many launches
 * as the last step made are created here, before the step, not during it. */
KilnBertStatus kiln_bert_profile_step_begin(KilnBertProfile *pf, int timed);
/* The step ended after `step_seconds` (the caller's measure of the whole step): a timed
 * step's launch times are read (cuda: once, after the last event) and added to their calls.
 * DEVICE when an event cannot be read. */
KilnBertStatus kiln_bert_profile_step_end(KilnBertProfile *pf, double step_seconds);

/* The result over the timed steps, per distinct call: `calls` is the plan's list
 * (kiln_bert_plan_calls), which names each call. Sorted by time, most first, as a table on
 * `table` and as JSONL records {"profile": true, ...} on `jsonl` (either may be NULL); the
 * table and the summary record put the summed kernel time against the measured step time.
 * Nothing is written when no step was timed but a line saying so. */
void kiln_bert_profile_write(const KilnBertProfile *pf, const KilnBertCall *calls, int ncalls,
                             FILE *table, FILE *jsonl);

#endif /* KILN_BERT_PROFILE_H */
