/* tune.c — whole-model tuning (bert_tune.h): the calls of a step, each tuned by the autotune
 * library into one cache, and a table of what won.
 *
 * How it works. kiln_bert_plan_step lists the distinct calls (a plan-only model driven through a
 * training and an eval step; nothing is allocated, so BERT-large at batch 24 x 512 is listed in
 * a moment). Each call becomes one `kiln tune` run in this process through kiln_tune_command —
 * the kernel's file, its -D pins, --kernel, --args with the call's spec, the device, mode and
 * cache — with --json, whose report (captured from stdout through a temp file, since the command
 * writes its report there) names the winner and its time. Calls that share a key bucket find
 * their timings in the cache the earlier run wrote, so they cost little. --budget is checked
 * before each call and also bounds the call's own run, so the run ends near it; the calls not
 * reached keep their libraries' defaults and the table says so.
 *
 * The share of a call is its time x its launches per step over the sum of that product for all
 * timed calls: where the step's kernel time goes, as far as the tuner measured it. */
#include "bert_tune.h"
#include "bert_config.h"
#include "bert_internal.h"
#include "bert_plan.h"
#include "bert_train.h"
#include "kiln_base.h" /* kiln_file_write_atomic */

#include <kiln_autotune.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef KILN_BERT_KERNELS_DIR
#define KILN_BERT_KERNELS_DIR "kernels-bert"
#endif

/* What became of one call. */
typedef enum CallState {
  CALL_TUNED,
  CALL_DEFAULT,
  CALL_FAILED,
  CALL_LISTED,
  CALL_BUNDLED
} CallState;

typedef struct CallResult {
  CallState state;
  char winner[256];
  double ms;        /* the winner's median time, < 0 when none */
  int from_cache;   /* the winner's timing was already in the cache */
  char detail[256]; /* why it failed or was left */
} CallResult;

void kiln_bert_tune_defaults(KilnBertTuneOptions *o) {
  memset(o, 0, sizeof *o);
  o->model = "tiny";
  o->precision = "fp32";
  o->device = "cpu";
  o->mode = "default";
  o->kernels_dir = KILN_BERT_KERNELS_DIR;
  o->batch = 8;
  o->seq_len = 128;
  o->padding = KILN_BERT_PAD_FIXED;
  o->budget = -1;
  o->out = stdout;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static KilnBertStatus load_config(const char *model, size_t seq_len, KilnBertConfig *cfg) {
  struct stat sb;
  KilnBertStatus st;
  if (stat(model, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", model);
    st = kiln_bert_config_load(path, cfg);
  } else {
    st = kiln_bert_config_preset(model, cfg);
  }
  if (st == KILN_BERT_OK) st = kiln_bert_config_check_seq_len(cfg, seq_len);
  return st;
}

static KilnBertStatus check_options(const KilnBertTuneOptions *o, KilnBertPrecision *prec) {
  if (o->bundle_dir && o->arch && strcmp(o->arch, "sm_80") && strcmp(o->arch, "sm_90"))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "tune: --arch '%s': expected sm_80 or sm_90", o->arch);
  if (!o->list_only && !o->bundle_dir && (!o->cache || !*o->cache))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "tune: --cache FILE is required (the winners go there)");
  KilnBertStatus pst = kiln_bert_precision_resolve("tune", o->precision, o->tf32, prec);
  if (pst != KILN_BERT_OK) return pst;
  if (strcmp(o->mode, "default") && strcmp(o->mode, "max-autotune"))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "tune: --mode '%s': expected default or max-autotune", o->mode);
  if (strcmp(o->device, "cpu") && strcmp(o->device, "emu") && strcmp(o->device, "cuda") &&
      strncmp(o->device, "cuda:", 5))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "tune: --device '%s': expected cpu, emu or cuda[:N]", o->device);
  if (o->batch < 1 || o->seq_len < 2)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "tune: batch %zu x %zu tokens",
                          o->batch, o->seq_len);
  return KILN_BERT_OK;
}

/* Reads all of f (from its start) into a NUL-terminated buffer; NULL when out of memory. */
static char *slurp(FILE *f) {
  fflush(f);
  long len = ftell(f);
  if (len < 0) len = 0;
  char *s = malloc((size_t)len + 1);
  if (!s) return NULL;
  rewind(f);
  size_t got = fread(s, 1, (size_t)len, f);
  s[got] = '\0';
  return s;
}

/* Runs kiln_tune_command(argc, argv) with its stdout and stderr going to temp files, returned in
 * *out and *err (caller frees). Returns the command's exit code, or -1 when the files could not
 * be made. */
static int run_captured(int argc, char **argv, char **out, char **err) {
  *out = *err = NULL;
  FILE *fo = tmpfile(), *fe = tmpfile();
  int saved_out = -1, saved_err = -1, rc = -1;
  if (!fo || !fe) goto done;
  fflush(stdout);
  fflush(stderr);
  saved_out = dup(STDOUT_FILENO);
  saved_err = dup(STDERR_FILENO);
  if (saved_out < 0 || saved_err < 0) goto done;
  dup2(fileno(fo), STDOUT_FILENO);
  dup2(fileno(fe), STDERR_FILENO);
  rc = kiln_tune_command(argc, argv);
  fflush(stdout);
  fflush(stderr);
  dup2(saved_out, STDOUT_FILENO);
  dup2(saved_err, STDERR_FILENO);
  *out = slurp(fo);
  *err = slurp(fe);
done:
  if (saved_out >= 0) close(saved_out);
  if (saved_err >= 0) close(saved_err);
  if (fo) fclose(fo);
  if (fe) fclose(fe);
  return rc;
}

/* The winner of kiln tune's --json report (one kernel) into r. */
static void read_report(const char *json, CallResult *r) {
  cJSON *root = cJSON_Parse(json);
  cJSON *k = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "kernels"), 0);
  const char *winner = cJSON_GetStringValue(cJSON_GetObjectItem(k, "winner"));
  r->state = CALL_FAILED;
  snprintf(r->detail, sizeof r->detail, "no correct candidate");
  /* no winner because the budget ended the run (candidates not built or not timed for it):
   * the call keeps its default, as one the budget never reached */
  const cJSON *cand;
  cJSON_ArrayForEach(cand, cJSON_GetObjectItem(k, "candidates")) {
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItem(cand, "status"));
    if (!winner && status && !strcmp(status, "budget")) {
      r->state = CALL_DEFAULT;
      snprintf(r->detail, sizeof r->detail, "not tuned: --budget spent during its run");
    }
  }
  if (winner) {
    r->state = CALL_TUNED;
    snprintf(r->winner, sizeof r->winner, "%s", winner);
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(k, "candidates")) {
      const char *cfg = cJSON_GetStringValue(cJSON_GetObjectItem(c, "config"));
      if (!cfg || strcmp(cfg, winner)) continue;
      const cJSON *ms = cJSON_GetObjectItem(c, "median_ms");
      if (cJSON_IsNumber(ms)) r->ms = ms->valuedouble;
      r->from_cache = cJSON_IsTrue(cJSON_GetObjectItem(c, "from_cache"));
    }
    r->detail[0] = '\0';
  }
  if (!root) snprintf(r->detail, sizeof r->detail, "the tuner's report is not JSON");
  cJSON_Delete(root);
}

/* The last non-empty line of text, for a message. */
static void last_line(const char *text, char *buf, size_t cap) {
  buf[0] = '\0';
  if (!text) return;
  const char *end = text + strlen(text);
  while (end > text && (end[-1] == '\n' || end[-1] == ' ')) end--;
  const char *start = end;
  while (start > text && start[-1] != '\n') start--;
  snprintf(buf, cap, "%.*s", (int)(end - start), start);
}

/* The offsets the trainer's library of kernel file `file` is built with (runtime/bert/
 * CMakeLists.txt: xent.kiln with --index-bits 64), so that its timings are the library's: a
 * cache keeps 32- and 64-bit timings apart (docs/tuning.md). */
static const char *index_bits_of(const char *file) {
  return !strcmp(file, "xent.kiln") ? "64" : "32";
}

/* Call `index`'s candidates compiled into o->bundle_dir/cNNN (argv holds the call's kiln tune
 * arguments so far; --emit-bundle and --arch are added), for kiln-tune-runner. The note
 * "bundled NAME: X of Y candidates built" becomes the table's detail. */
static int bundle_call(const KilnBertTuneOptions *o, const KilnBertCall *c, int index, int argc,
                       char **argv, CallResult *r) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/c%03d", o->bundle_dir, index);
  argv[argc++] = "--emit-bundle";
  argv[argc++] = dir;
  if (!strncmp(o->device, "cuda", 4)) {
    argv[argc++] = "--arch";
    argv[argc++] = (char *)(o->arch ? o->arch : "sm_90");
  }
  argv[argc] = NULL;
  char *out = NULL, *err = NULL;
  int rc = run_captured(argc, argv, &out, &err);
  const char *note = err ? strstr(err, "bundled ") : NULL;
  if (rc == 0 && note) {
    r->state = CALL_BUNDLED;
    snprintf(r->detail, sizeof r->detail, "%.*s", (int)strcspn(note, "\n"), note);
  } else {
    r->state = CALL_FAILED;
    last_line(rc < 0 ? "could not capture the tuner's output" : err, r->detail, sizeof r->detail);
  }
  (void)c;
  free(out);
  free(err);
  return rc;
}

/* One call through kiln_tune_command. Returns the command's exit code. */
static int tune_call(const KilnBertTuneOptions *o, const KilnBertCall *c, int index,
                     double budget_left, CallResult *r) {
  char file[4096], device[64], budget[32], pins[sizeof c->pins];
  char *argv[40]; /* 20 for the pins, 10 for the rest, 4 for a bundle's */
  int argc = 0;
  snprintf(file, sizeof file, "%s/%s", o->kernels_dir, c->file);
  snprintf(device, sizeof device, "%s", !strcmp(o->device, "cuda") ? "cuda:0" : o->device);
  argv[argc++] = file;
  snprintf(pins, sizeof pins, "%s", c->pins);
  for (char *save = NULL, *pin = strtok_r(pins, " ", &save); pin && argc < 20;
       pin = strtok_r(NULL, " ", &save)) {
    argv[argc++] = "-D";
    argv[argc++] = pin;
  }
  argv[argc++] = "--kernel";
  argv[argc++] = (char *)c->kernel;
  argv[argc++] = "--args";
  argv[argc++] = (char *)c->spec;
  argv[argc++] = "--device";
  argv[argc++] = device;
  argv[argc++] = "--mode";
  argv[argc++] = (char *)o->mode;
  argv[argc++] = "--index-bits";
  argv[argc++] = (char *)index_bits_of(c->file);
  if (o->bundle_dir) return bundle_call(o, c, index, argc, argv, r);
  argv[argc++] = "--cache";
  argv[argc++] = (char *)o->cache;
  argv[argc++] = "--json";
  if (budget_left >= 0) {
    /* to the millisecond: a rounded-down budget ended the call's run before the trainer's
     * budget, and the cut call was taken for a failure */
    snprintf(budget, sizeof budget, "%.3f", budget_left < 0.001 ? 0.001 : budget_left);
    argv[argc++] = "--budget";
    argv[argc++] = budget;
  }
  argv[argc] = NULL;
  char *out = NULL, *err = NULL;
  int rc = run_captured(argc, argv, &out, &err);
  if (rc == 0) {
    read_report(out ? out : "", r);
  } else {
    r->state = CALL_FAILED;
    last_line(rc < 0 ? "could not capture the tuner's output" : err, r->detail, sizeof r->detail);
  }
  free(out);
  free(err);
  return rc;
}

/* "M=256; N=128; K=128; ..." : the call's scalar arguments, its shape in the table. */
static void shape_of(const KilnBertCall *c, char *buf, size_t cap) {
  const char *s = strchr(c->spec, ';');
  s = s ? s + 2 : c->spec;
  const char *end = strchr(s, ':'); /* the first buffer */
  if (end) {
    while (end > s && end[-1] != ';') end--;
    while (end > s && (end[-1] == ';' || end[-1] == ' ')) end--;
  } else {
    end = s + strlen(s);
  }
  snprintf(buf, cap, "%.*s", (int)(end - s), s);
}

static const char *state_name(CallState s) {
  switch (s) {
  case CALL_TUNED: return "tuned";
  case CALL_DEFAULT: return "default";
  case CALL_FAILED: return "failed";
  case CALL_LISTED: return "listed";
  case CALL_BUNDLED: return "bundled";
  }
  return "?";
}

/* Sum over timed calls of time x launches. */
static double step_ms(const KilnBertCall *calls, const CallResult *res, int n) {
  double sum = 0;
  for (int i = 0; i < n; i++)
    if (res[i].state == CALL_TUNED && res[i].ms >= 0) sum += res[i].ms * calls[i].count;
  return sum;
}

static void print_table(const KilnBertTuneOptions *o, const KilnBertCall *calls,
                        const CallResult *res, int n, double seconds) {
  FILE *f = o->out;
  double sum = step_ms(calls, res, n);
  fprintf(f, "%-22s %-26s %-44s %5s %-8s %-40s %10s %6s\n", "kernel", "pins", "shape", "calls",
          "state", "winner", "time_ms", "share");
  for (int i = 0; i < n; i++) {
    const KilnBertCall *c = &calls[i];
    const CallResult *r = &res[i];
    char shape[512], pins[sizeof c->pins], share[16] = "-", ms[24] = "-";
    shape_of(c, shape, sizeof shape);
    snprintf(pins, sizeof pins, "%s", c->pins);
    if (r->state == CALL_TUNED && r->ms >= 0) {
      snprintf(ms, sizeof ms, "%.4f", r->ms);
      if (sum > 0) snprintf(share, sizeof share, "%.1f%%", 100.0 * r->ms * c->count / sum);
    }
    fprintf(f, "%-22s %-26s %-44.44s %5d %-8s %-40.40s %10s %6s%s%s\n", c->kernel, pins, shape,
            c->count, state_name(r->state),
            r->state == CALL_TUNED                                ? r->winner
            : r->state == CALL_LISTED || r->state == CALL_BUNDLED ? "-"
                                                                  : "(library default)",
            ms, share, r->detail[0] ? "  " : "", r->detail);
  }
  fprintf(f,
          "\n%d distinct kernel calls; summed kernel time of one train + eval step %.3f ms "
          "(timed calls x launches); tuning time %.1f s\n",
          n, sum, seconds);
}

static int print_json(const KilnBertTuneOptions *o, const KilnBertCall *calls,
                      const CallResult *res, int n, double seconds) {
  double sum = step_ms(calls, res, n);
  cJSON *root = cJSON_CreateObject(), *ks = cJSON_AddArrayToObject(root, "kernels");
  cJSON_AddStringToObject(root, "model", o->model);
  cJSON_AddStringToObject(root, "precision", o->precision);
  cJSON_AddBoolToObject(root, "tf32", o->tf32 != 0);
  cJSON_AddNumberToObject(root, "batch", (double)o->batch);
  cJSON_AddNumberToObject(root, "seq_len", (double)o->seq_len);
  cJSON_AddStringToObject(root, "padding",
                          o->padding == KILN_BERT_PAD_DYNAMIC ? "dynamic" : "fixed");
  cJSON_AddStringToObject(root, "mode", o->mode);
  cJSON_AddStringToObject(root, "device", o->device);
  cJSON_AddStringToObject(root, "cache", o->cache ? o->cache : "");
  cJSON_AddNumberToObject(root, "tuning_seconds", seconds);
  cJSON_AddNumberToObject(root, "step_kernel_ms", sum);
  for (int i = 0; i < n; i++) {
    const KilnBertCall *c = &calls[i];
    const CallResult *r = &res[i];
    cJSON *k = cJSON_CreateObject();
    char shape[512];
    shape_of(c, shape, sizeof shape);
    cJSON_AddStringToObject(k, "file", c->file);
    cJSON_AddStringToObject(k, "pins", c->pins);
    cJSON_AddStringToObject(k, "kernel", c->kernel);
    cJSON_AddStringToObject(k, "shape", shape);
    cJSON_AddStringToObject(k, "spec", c->spec);
    cJSON_AddNumberToObject(k, "calls", c->count);
    cJSON_AddStringToObject(k, "state", state_name(r->state));
    if (r->state == CALL_TUNED) {
      cJSON_AddStringToObject(k, "winner", r->winner);
      cJSON_AddNumberToObject(k, "time_ms", r->ms);
      cJSON_AddNumberToObject(k, "share", sum > 0 ? r->ms * c->count / sum : 0);
      cJSON_AddBoolToObject(k, "from_cache", r->from_cache);
    } else {
      cJSON_AddNullToObject(k, "winner");
    }
    if (r->detail[0]) cJSON_AddStringToObject(k, "detail", r->detail);
    cJSON_AddItemToArray(ks, k);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return -1;
  fprintf(o->out, "%s\n", text);
  free(text);
  return 0;
}

/* DIR/calls.txt of a bundle: one line per call, "cNNN FILE KERNEL LAUNCHES PINS..." (the pins
 * space-separated, none for a kernel without), which bench/gpu-check.sh runs kiln-tune-runner
 * over. Written atomically; nonzero on failure. */
static int write_bundle_list(const KilnBertTuneOptions *o, const KilnBertCall *calls,
                             const CallResult *res, int n) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return -1;
  fprintf(f, "# kiln-bert tune --emit-bundle: model %s, %s, batch %zu x %zu, mode %s\n", o->model,
          o->precision, o->batch, o->seq_len, o->mode);
  for (int i = 0; i < n; i++)
    if (res[i].state == CALL_BUNDLED)
      fprintf(f, "c%03d %s %s %d%s%s\n", i, calls[i].file, calls[i].kernel, calls[i].count,
              calls[i].pins[0] ? " " : "", calls[i].pins);
  if (fclose(f) != 0) {
    free(text);
    return -1;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/calls.txt", o->bundle_dir);
  int rc = kiln_file_write_atomic(path, text, len);
  free(text);
  return rc;
}

/* Tunes calls[0..n) into res, within the budget. DEVICE when the device cannot be used (the
 * first call's run says so: nothing is tuned then). */
static KilnBertStatus tune_calls(const KilnBertTuneOptions *o, const KilnBertCall *calls, int n,
                                 CallResult *res, double t0) {
  for (int i = 0; i < n; i++) {
    CallResult *r = &res[i];
    r->ms = -1;
    if (o->list_only) {
      r->state = CALL_LISTED;
      continue;
    }
    double left = o->budget < 0 ? -1 : o->budget - (now_s() - t0);
    if (o->budget >= 0 && left <= 0) {
      r->state = CALL_DEFAULT;
      snprintf(r->detail, sizeof r->detail, "not tuned: --budget spent");
      continue;
    }
    int rc = tune_call(o, &calls[i], i, left, r);
    /* a run the budget cut short keeps the default, as the ones after it */
    if (r->state == CALL_FAILED && o->budget >= 0 && now_s() - t0 >= o->budget) {
      r->state = CALL_DEFAULT;
      snprintf(r->detail, sizeof r->detail, "not tuned: --budget spent during its run");
    }
    if (rc == 2 && i == 0)
      return kiln_bert_fail(KILN_BERT_ERROR_DEVICE, "tune: device %s cannot be used for tuning: %s",
                            o->device, r->detail);
  }
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_tune(const KilnBertTuneOptions *o) {
  KilnBertPrecision prec = KILN_BERT_FP32;
  KilnBertConfig cfg;
  KilnBertStatus st = check_options(o, &prec);
  if (st == KILN_BERT_OK) st = load_config(o->model, o->seq_len, &cfg);
  if (st != KILN_BERT_OK) return st;
  KilnBertTrainOptions t;
  kiln_bert_train_defaults(&t); /* the optimizer the trainer runs by default */
  KilnBertOptim opt = {t.beta1, t.beta2, t.eps, t.weight_decay, t.clip};
  KilnBertPlan *plan = kiln_bert_plan_create(prec);
  if (!plan) return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "tune: out of memory");
  double t0 = now_s();
  st = kiln_bert_plan_step(plan, &cfg, (int)o->batch, (int)o->seq_len, o->padding,
                           cfg.hidden_dropout_prob, &opt);
  int n = 0;
  const KilnBertCall *calls = kiln_bert_plan_calls(plan, &n);
  CallResult *res = st == KILN_BERT_OK ? calloc((size_t)n + 1, sizeof *res) : NULL;
  if (st == KILN_BERT_OK && !res)
    st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "tune: out of memory");
  if (st == KILN_BERT_OK && o->bundle_dir && !o->list_only && mkdir(o->bundle_dir, 0755) != 0 &&
      errno != EEXIST)
    st = kiln_bert_fail(KILN_BERT_ERROR_IO, "tune: cannot create '%s': %s", o->bundle_dir,
                        strerror(errno));
  if (st == KILN_BERT_OK) st = tune_calls(o, calls, n, res, t0);
  if (st == KILN_BERT_OK && o->bundle_dir && !o->list_only &&
      write_bundle_list(o, calls, res, n) != 0)
    st = kiln_bert_fail(KILN_BERT_ERROR_IO, "tune: cannot write '%s/calls.txt': %s", o->bundle_dir,
                        strerror(errno));
  if (st == KILN_BERT_OK) {
    double seconds = now_s() - t0;
    if (o->json) {
      if (print_json(o, calls, res, n, seconds))
        st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "tune: out of memory");
    } else {
      print_table(o, calls, res, n, seconds);
    }
  }
  int failed = 0;
  for (int i = 0; st == KILN_BERT_OK && i < n; i++) failed += res[i].state == CALL_FAILED;
  if (st == KILN_BERT_OK && failed)
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                        "tune: %d of %d kernel calls could not be tuned "
                        "(see the table)",
                        failed, n);
  free(res);
  kiln_bert_plan_destroy(plan);
  return st;
}
