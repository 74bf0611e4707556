/* metrics.c — the summary metrics of train and eval (bert_metrics.h): counted per step, then
 * written as one JSON record or as a table. Rates are over total_time, except iter_per_sec,
 * which is 1 / avg_iter_time as in the reference benchmark (its first step pays for warm-up). */
#include "bert_metrics.h"

#include <math.h>

void kiln_bert_metrics_step(KilnBertMetrics *m, double dt, size_t samples, size_t tokens,
                            size_t real) {
  if (m->steps == 0)
    m->first_iter_time = dt;
  else
    m->later_iter_time += dt;
  m->steps++;
  m->samples += samples;
  m->tokens += tokens;
  m->real_tokens += real;
}

/* The share of the tokens fed that was padding. */
static double padding_share(const KilnBertMetrics *m) {
  return m->tokens ? 1.0 - (double)m->real_tokens / (double)m->tokens : 0;
}

double kiln_bert_metrics_avg_iter(const KilnBertMetrics *m) {
  return m->steps > 1 ? m->later_iter_time / (double)(m->steps - 1) : m->first_iter_time;
}

void kiln_bert_metrics_hms(double seconds, char out[32]) {
  long t = seconds > 0 ? (long)(seconds + 0.5) : 0;
  snprintf(out, 32, "%02ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

static double per_sec(double count, double seconds) { return seconds > 0 ? count / seconds : 0; }

/* A JSON number with 9 significant digits, or null when JSON cannot hold it. */
static void json_num(FILE *f, const char *key, double v, int present) {
  if (present && isfinite(v))
    fprintf(f, ", \"%s\": %.9g", key, v);
  else
    fprintf(f, ", \"%s\": null", key);
}

void kiln_bert_metrics_json(const KilnBertMetrics *m, FILE *f) {
  double avg = kiln_bert_metrics_avg_iter(m);
  char hr[32];
  kiln_bert_metrics_hms(m->total_time, hr);
  fprintf(f, "{\"summary\": true, \"steps\": %zu", m->steps);
  json_num(f, "first_iter_time", m->first_iter_time, 1);
  json_num(f, "avg_iter_time", avg, 1);
  json_num(f, "iter_per_sec", avg > 0 ? 1 / avg : 0, 1);
  json_num(f, "samples_per_sec", per_sec((double)m->samples, m->total_time), 1);
  json_num(f, "tokens_per_sec", per_sec((double)m->tokens, m->total_time), 1);
  json_num(f, "padding_share", padding_share(m), 1);
  json_num(f, "total_time", m->total_time, 1);
  fprintf(f, ", \"total_time_hr\": \"%s\", \"peak_device_bytes\": %zu", hr, m->peak_device_bytes);
  json_num(f, "eval_loss", m->eval_loss, m->has_eval);
  json_num(f, "accuracy", m->accuracy, m->has_eval);
  if (m->has_eval) fprintf(f, ", \"eval_samples\": %zu", m->eval_samples);
  if (m->has_eval && m->eval_time > 0) json_num(f, "eval_time", m->eval_time, 1);
  fputs("}\n", f);
}

void kiln_bert_metrics_table(const KilnBertMetrics *m, const char *title, FILE *f) {
  double avg = kiln_bert_metrics_avg_iter(m);
  char hr[32];
  kiln_bert_metrics_hms(m->total_time, hr);
  fprintf(f, "%s\n", title);
  fprintf(f, "%-18s %14s\n", "metric", "value");
  fprintf(f, "%-18s %14.4f s\n", "first_iter_time", m->first_iter_time);
  fprintf(f, "%-18s %14.4f s\n", "avg_iter_time", avg);
  fprintf(f, "%-18s %14.3f\n", "iter_per_sec", avg > 0 ? 1 / avg : 0);
  fprintf(f, "%-18s %14.2f\n", "samples_per_sec", per_sec((double)m->samples, m->total_time));
  fprintf(f, "%-18s %14.0f\n", "tokens_per_sec", per_sec((double)m->tokens, m->total_time));
  fprintf(f, "%-18s %13.1f %%\n", "padding_share", 100 * padding_share(m));
  fprintf(f, "%-18s %14.3f s (%s)\n", "total_time", m->total_time, hr);
  fprintf(f, "%-18s %14.1f MiB\n", "peak_device_bytes",
          (double)m->peak_device_bytes / (1024.0 * 1024.0));
  if (m->has_eval) {
    fprintf(f, "%-18s %14.6f\n", "eval_loss", m->eval_loss);
    fprintf(f, "%-18s %13.2f %% (%zu samples)\n", "accuracy", 100 * m->accuracy, m->eval_samples);
    if (m->eval_time > 0) fprintf(f, "%-18s %14.3f s\n", "eval_time", m->eval_time);
  }
  fflush(f);
}
