/* profile.c — the time of every kernel launch of the timed steps, per distinct call
 * (bert_profile.h).
 *
 * How it works. The launch tap (plan.c) calls launch_begin and launch_end around each launch
 * it forwards, naming the call by its index in the plan's list. On cpu and emu a launch has
 * finished when it returns, so the host's monotonic clock around it is its time, added at
 * once. On cuda the host returns before the kernel is done (or waits for it in ways that are
 * not the kernel's time), so each launch gets a pair of events recorded on the default stream,
 * the stream the model launches on, and the pairs are read after the step: one wait for the
 * last event, then an elapsed time per pair. The events are created before a step for as many
 * launches as the previous step made and kept for the next steps, so a timed step creates none
 * unless it launches more than the one before it. */
#include "bert_profile.h"
#include "bert_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct CallSum {
  double ms;          /* summed milliseconds */
  long long launches; /* timed launches */
  char *variant;      /* what the library says of the kernel the call ran (its config and
                         promises: kiln_rt_function_about), owned; NULL until known */
} CallSum;

struct KilnBertProfile {
  KilnRtDevice *dev;
  KilnRtStream *stream; /* where the launches are queued: the events go there too */
  int use_events;       /* cuda: events around launches; else the host clock */
  int timed;            /* inside a timed step */
  double t0;            /* host clock: the start of the launch under way */
  uint64_t launches0;   /* this thread's kiln_rt_launch count then: did the call launch? */
  CallSum *sum;         /* per call index, over the timed steps */
  size_t ncap;          /* room in sum */
  int ncalls;           /* 1 + the highest call index seen timed */
  KilnRtEvent **ev;     /* events: 2i and 2i+1 bracket the step's launch i */
  size_t nev, evcap;
  int *pending; /* cuda: the call of each launch of the step, until step_end */
  size_t npending, pcap;
  size_t seen, seen_last; /* launches of this step and of the one before (timed or not) */
  int steps;              /* timed steps */
  double step_seconds;    /* their measured time, summed */
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

KilnBertStatus kiln_bert_profile_create(KilnRtDevice *dev, KilnRtStream *stream,
                                        KilnBertProfile **out) {
  KilnBertProfile *pf = calloc(1, sizeof *pf);
  if (!pf) return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "profile: out of memory");
  pf->dev = dev;
  pf->stream = stream;
  pf->use_events = kiln_rt_device_kind(dev) == KILN_RT_DEVICE_CUDA;
  *out = pf;
  return KILN_BERT_OK;
}

void kiln_bert_profile_destroy(KilnBertProfile *pf) {
  if (!pf) return;
  for (size_t i = 0; i < pf->nev; i++) kiln_rt_event_destroy(pf->ev[i]);
  free(pf->ev);
  free(pf->pending);
  for (size_t i = 0; i < pf->ncap; i++) free(pf->sum[i].variant);
  free(pf->sum);
  free(pf);
}

/* At least `n` events. */
static KilnRtStatus have_events(KilnBertProfile *pf, size_t n) {
  if (n <= pf->nev) return KILN_RT_OK;
  if (kiln_bert_grow((void **)&pf->ev, &pf->evcap, n, sizeof *pf->ev) != 0)
    return kiln_rt_set_error(KILN_RT_ERROR_OUT_OF_MEMORY, "profile: out of memory for events");
  while (pf->nev < n) {
    KilnRtStatus st = kiln_rt_event_create(pf->dev, &pf->ev[pf->nev]);
    if (st != KILN_RT_OK) return st;
    pf->nev++;
  }
  return KILN_RT_OK;
}

/* Room for call index `call` in the per-call sums (new ones zero). */
static KilnRtStatus have_call(KilnBertProfile *pf, int call) {
  size_t need = (size_t)call + 1, cap = pf->ncap;
  if (need > cap) {
    if (kiln_bert_grow((void **)&pf->sum, &pf->ncap, need, sizeof *pf->sum) != 0)
      return kiln_rt_set_error(KILN_RT_ERROR_OUT_OF_MEMORY, "profile: out of memory");
    memset(pf->sum + cap, 0, (pf->ncap - cap) * sizeof *pf->sum);
  }
  if (call >= pf->ncalls) pf->ncalls = call + 1;
  return KILN_RT_OK;
}

/* The first timed launch of a call names the variant it ran: the kernel this thread launched
 * last, if the call launched one. */
static KilnRtStatus note_variant(KilnBertProfile *pf, int call) {
  uint64_t count = 0;
  const KilnRtFunction *fn = kiln_rt_last_launch(&count);
  if (pf->sum[call].variant || !fn || count == pf->launches0) return KILN_RT_OK;
  if (!(pf->sum[call].variant = strdup(kiln_rt_function_about(fn))))
    return kiln_rt_set_error(KILN_RT_ERROR_OUT_OF_MEMORY, "profile: out of memory");
  return KILN_RT_OK;
}

KilnRtStatus kiln_bert_profile_launch_begin(KilnBertProfile *pf) {
  pf->seen++;
  if (!pf->timed) return KILN_RT_OK;
  kiln_rt_last_launch(&pf->launches0);
  if (!pf->use_events) {
    pf->t0 = now();
    return KILN_RT_OK;
  }
  KilnRtStatus st = have_events(pf, 2 * pf->npending + 2);
  return st == KILN_RT_OK ? kiln_rt_event_record(pf->ev[2 * pf->npending], pf->stream) : st;
}

KilnRtStatus kiln_bert_profile_launch_end(KilnBertProfile *pf, int call) {
  if (!pf->timed) return KILN_RT_OK;
  double t1 = now();
  KilnRtStatus st = have_call(pf, call);
  if (st != KILN_RT_OK) return st;
  st = note_variant(pf, call);
  if (st != KILN_RT_OK) return st;
  if (!pf->use_events) {
    pf->sum[call].ms += 1e3 * (t1 - pf->t0);
    pf->sum[call].launches++;
    return KILN_RT_OK;
  }
  if ((st = kiln_rt_event_record(pf->ev[2 * pf->npending + 1], pf->stream)) != KILN_RT_OK)
    return st;
  if (kiln_bert_grow((void **)&pf->pending, &pf->pcap, pf->npending + 1, sizeof *pf->pending))
    return kiln_rt_set_error(KILN_RT_ERROR_OUT_OF_MEMORY, "profile: out of memory");
  pf->pending[pf->npending++] = call;
  return KILN_RT_OK;
}

KilnBertStatus kiln_bert_profile_step_begin(KilnBertProfile *pf, int timed) {
  pf->seen_last = pf->seen;
  pf->seen = 0;
  pf->npending = 0;
  pf->timed = timed;
  if (timed && pf->use_events && have_events(pf, 2 * pf->seen_last) != KILN_RT_OK)
    return kiln_bert_fail(KILN_BERT_ERROR_DEVICE, "profile: %s", kiln_rt_last_error());
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_profile_step_end(KilnBertProfile *pf, double step_seconds) {
  if (!pf->timed) return KILN_BERT_OK;
  pf->timed = 0;
  if (pf->npending) {
    /* the last launch's end event done means every earlier one is (one stream, in order) */
    if (kiln_rt_event_synchronize(pf->ev[2 * pf->npending - 1]) != KILN_RT_OK)
      return kiln_bert_fail(KILN_BERT_ERROR_DEVICE, "profile: %s", kiln_rt_last_error());
    for (size_t i = 0; i < pf->npending; i++) {
      float ms = 0;
      if (kiln_rt_event_elapsed_ms(pf->ev[2 * i], pf->ev[2 * i + 1], &ms) != KILN_RT_OK)
        return kiln_bert_fail(KILN_BERT_ERROR_DEVICE, "profile: %s", kiln_rt_last_error());
      pf->sum[pf->pending[i]].ms += ms;
      pf->sum[pf->pending[i]].launches++;
    }
    pf->npending = 0;
  }
  pf->steps++;
  pf->step_seconds += step_seconds;
  return KILN_BERT_OK;
}

/* ---- the result -------------------------------------------------------------------------- */

/* A row of the result: a call that was launched in the timed steps. */
typedef struct Row {
  int call;
  CallSum sum;
} Row;

/* Most time first; equal times in call order (first launched first). */
static int by_time(const void *a, const void *b) {
  const Row *x = a, *y = b;
  return x->sum.ms < y->sum.ms ? 1 : x->sum.ms > y->sum.ms ? -1 : x->call - y->call;
}

/* A JSON string of our own text (file, pins, kernel, shape and spec are printable ASCII that the
 * plan formats; quotes and backslashes are escaped all the same). */
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s >= 0x20) fputc(*s, f);
  }
  fputc('"', f);
}

/* What a call achieved: TFLOP/s of its matrix products and GB/s of the bytes it must move
 * (the plan's cost per launch over the measured time); 0 when it has none or took no time. */
static double per_second(double per_launch, double launches, double ms, double unit) {
  return ms > 0 ? per_launch * launches / (1e-3 * ms) / unit : 0;
}

/* The variant's text for the table: without the config entries its call's pins already say
 * ("T=f16" of "T=f16,BM=128,..."). */
static void print_variant(FILE *f, const char *variant, const char *pins) {
  const char *s = variant;
  int first = 1;
  while (*s) {
    size_t len = strcspn(s, ",");
    int pinned = 0;
    for (const char *p = pins; *p && !pinned;) {
      size_t plen = strcspn(p, " ");
      pinned = plen == len && plen && !strncmp(p, s, len);
      p += plen + (p[plen] == ' ');
    }
    if (!pinned) fprintf(f, "%s%.*s", first ? "" : ",", (int)len, s);
    first = first && pinned;
    s += len + (s[len] == ',');
  }
}

static void write_row(FILE *table, FILE *jsonl, const KilnBertCall *c, const char *variant,
                      double launches, double ms, double share) {
  double us = launches > 0 ? 1e3 * ms / launches : 0;
  double tflops = per_second(c->flops, launches, ms, 1e12);
  double gbps = per_second(c->bytes, launches, ms, 1e9);
  if (table) {
    char tf[16] = "-";
    if (c->flops > 0) snprintf(tf, sizeof tf, "%.2f", tflops);
    fprintf(table, "%10.3f %6.1f%% %9.4g %10.1f %8s %8.1f  %-22s %-20s %-26s ", ms, 100 * share,
            launches, us, tf, gbps, c->kernel, c->pins, c->shape);
    print_variant(table, variant ? variant : "", c->pins);
    fputc('\n', table);
  }
  if (jsonl) {
    fputs("{\"profile\": true, \"kernel\": ", jsonl);
    json_str(jsonl, c->kernel);
    fputs(", \"file\": ", jsonl);
    json_str(jsonl, c->file);
    fputs(", \"pins\": ", jsonl);
    json_str(jsonl, c->pins);
    fputs(", \"shape\": ", jsonl);
    json_str(jsonl, c->shape);
    fputs(", \"variant\": ", jsonl);
    json_str(jsonl, variant ? variant : "");
    fprintf(jsonl,
            ", \"launches_per_step\": %.9g, \"ms_per_step\": %.9g, \"us_per_launch\": %.9g, "
            "\"share\": %.9g, \"flops_per_launch\": %.9g, \"bytes_per_launch\": %.9g, "
            "\"tflops\": %.9g, \"gbps\": %.9g, \"spec\": ",
            launches, ms, us, share, c->flops, c->bytes, tflops, gbps);
    json_str(jsonl, c->spec);
    fputs("}\n", jsonl);
  }
}

void kiln_bert_profile_write(const KilnBertProfile *pf, const KilnBertCall *calls, int ncalls,
                             FILE *table, FILE *jsonl) {
  const char *clock = pf->use_events ? "device events" : "host clock";
  if (!pf->steps) {
    if (table)
      fprintf(table, "profile: no step was timed (the first step is not: run 2 or more)\n");
    if (jsonl) fprintf(jsonl, "{\"profile\": true, \"total\": true, \"timed_steps\": 0}\n");
    return;
  }
  int n = pf->ncalls < ncalls ? pf->ncalls : ncalls;
  Row *rows = malloc((size_t)(n ? n : 1) * sizeof *rows);
  if (!rows) {
    if (table) fprintf(table, "profile: out of memory for the table\n");
    return;
  }
  int nrows = 0;
  double kernel_ms = 0;
  for (int i = 0; i < n; i++)
    if (pf->sum[i].launches) {
      kernel_ms += pf->sum[i].ms;
      rows[nrows++] = (Row){i, pf->sum[i]};
    }
  double steps = pf->steps, step_ms = 1e3 * pf->step_seconds / steps;
  kernel_ms /= steps;
  qsort(rows, (size_t)nrows, sizeof *rows, by_time);
  if (table)
    fprintf(table,
            "\nprofile: %d timed step%s (%s), per step, most time first; TFLOP/s of the matrix "
            "products, GB/s of the bytes each call must move at the least\n%10s %7s %9s %10s "
            "%8s %8s  %-22s %-20s %-26s %s\n",
            pf->steps, pf->steps == 1 ? "" : "s", clock, "ms", "share", "launches", "us/launch",
            "TFLOP/s", "GB/s", "kernel", "pins", "shape", "variant (the config it ran)");
  for (int r = 0; r < nrows; r++) {
    double ms = rows[r].sum.ms / steps;
    write_row(table, jsonl, &calls[rows[r].call], rows[r].sum.variant,
              (double)rows[r].sum.launches / steps, ms, kernel_ms > 0 ? ms / kernel_ms : 0);
  }
  free(rows);
  double other = step_ms - kernel_ms;
  if (table)
    fprintf(table,
            "kernels %.3f ms of the measured step's %.3f ms (%.1f%%); the other %.3f ms is "
            "host work and launch overhead\n",
            kernel_ms, step_ms, step_ms > 0 ? 100 * kernel_ms / step_ms : 0, other);
  if (jsonl)
    fprintf(jsonl,
            "{\"profile\": true, \"total\": true, \"timed_steps\": %d, \"clock\": \"%s\", "
            "\"calls\": %d, \"kernel_ms_per_step\": %.9g, \"step_ms\": %.9g, \"other_ms\": %.9g}\n",
            pf->steps, pf->use_events ? "events" : "host", nrows, kernel_ms, step_ms, other);
}
