/* times.c - the wall and CPU time of each step of a compilation (kiln compile --time-passes).
 *
 * The steps are marked as they end (kiln_times_mark): each mark records the time since the
 * previous one, so the steps tile the compilation with no gap and their sum is its total.  The
 * passes and code generators only name their steps (KilnStepHook, kiln_mlir.h); the clocks are
 * read here.  CPU time counts this process and the children it waited for (ptxas), so that a
 * loaded machine's wall time can be told from the work done. */
#include "kiln_driver.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double tv_seconds(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6; }

/* User + system time of this process and its waited-for children. */
static double cpu_now(void) {
  struct rusage self, kids;
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &kids);
  return tv_seconds(self.ru_utime) + tv_seconds(self.ru_stime) + tv_seconds(kids.ru_utime) +
         tv_seconds(kids.ru_stime);
}

void kiln_times_start(KilnTimes *t) {
  t->last_wall = wall_now();
  t->last_cpu = cpu_now();
  t->started = true;
}

void kiln_times_mark(KilnTimes *t, const char *step) {
  if (!t) return;
  double wall = wall_now(), cpu = cpu_now();
  if (!t->started) { /* the first mark starts the clock: nothing before it to measure */
    t->last_wall = wall;
    t->last_cpu = cpu;
    t->started = true;
    return;
  }
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 32;
    KilnStepTime *grown = realloc(t->steps, cap * sizeof *grown);
    if (!grown) { /* said in the report (kiln_times_print), never dropped silently */
      t->incomplete = true;
      return;
    }
    t->steps = grown;
    t->cap = cap;
  }
  t->steps[t->n++] = (KilnStepTime){step, wall - t->last_wall, cpu - t->last_cpu};
  t->last_wall = wall;
  t->last_cpu = cpu;
}

void kiln_times_hook(void *times, const char *step) { kiln_times_mark(times, step); }

void kiln_times_free(KilnTimes *t) {
  if (!t) return;
  free(t->steps);
  *t = (KilnTimes){0};
}

static void totals(const KilnTimes *t, double *wall, double *cpu) {
  *wall = *cpu = 0;
  for (size_t i = 0; i < t->n; i++) {
    *wall += t->steps[i].wall_s;
    *cpu += t->steps[i].cpu_s;
  }
}

void kiln_times_print(const KilnTimes *t, const char *title, FILE *f) {
  double wall, cpu;
  totals(t, &wall, &cpu);
  fprintf(f, "=== time per step: %s ===\n", title ? title : "compile");
  fprintf(f, "  %-28s %10s %10s %7s\n", "step", "wall ms", "cpu ms", "wall %");
  for (size_t i = 0; i < t->n; i++)
    fprintf(f, "  %-28s %10.2f %10.2f %6.1f%%\n", t->steps[i].name, t->steps[i].wall_s * 1e3,
            t->steps[i].cpu_s * 1e3, wall > 0 ? 100.0 * t->steps[i].wall_s / wall : 0.0);
  fprintf(f, "  %-28s %10.2f %10.2f %6.1f%%\n", "total", wall * 1e3, cpu * 1e3, 100.0);
  if (t->incomplete) fprintf(f, "  (incomplete: out of memory recording the steps)\n");
}

/* The title holds a name from the command line: escaped.  Step names are ours (stage names,
 * fixed words) and need no escaping. */
static void json_string(const char *s, FILE *f) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

void kiln_times_print_json(const KilnTimes *t, const char *title, FILE *f) {
  double wall, cpu;
  totals(t, &wall, &cpu);
  fputs("{\"title\": ", f);
  json_string(title ? title : "compile", f);
  fputs(", \"steps\": [", f);
  for (size_t i = 0; i < t->n; i++)
    fprintf(f, "%s\n  {\"step\": \"%s\", \"wall_ms\": %.3f, \"cpu_ms\": %.3f}", i ? "," : "",
            t->steps[i].name, t->steps[i].wall_s * 1e3, t->steps[i].cpu_s * 1e3);
  fprintf(f, "],\n \"total_wall_ms\": %.3f, \"total_cpu_ms\": %.3f, \"complete\": %s}\n", wall * 1e3,
          cpu * 1e3, t->incomplete ? "false" : "true");
}
