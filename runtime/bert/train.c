/* train.c — the `kiln-bert train` run (bert_train.h): inputs, then the step loop
 *
 *   batch = the step's slice of the epoch order (bert_batch) -> forward (loss) -> backward ->
 *   step (all-reduce hook, norm, clipping, AdamW at lr x the schedule's factor) -> log record
 *
 * in the precision of --precision (fp16's loss scaling is the model's: a skipped step is logged
 * and counts toward --steps and the schedule, but not toward AdamW's step count)
 *
 * and the summary with the contract's timing metrics. Everything the steps need is allocated
 * before the first one; the batch arrays reach their size on the first step. */
#include "bert_train.h"
#include "bert_config.h"
#include "bert_internal.h"
#include "bert_model.h"
#include "bert_params.h"
#include "bert_st.h"
#include "bert_tok.h"
#include "bert_vocab.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void kiln_bert_train_defaults(KilnBertTrainOptions *o) {
  memset(o, 0, sizeof *o);
  o->model = "tiny";
  o->device = "cpu";
  o->precision = "fp32";
  o->seq_len = 128;
  o->batch = 8;
  o->epochs = 1;
  o->padding = KILN_BERT_PAD_FIXED;
  o->schedule = KILN_BERT_SCHEDULE_LINEAR;
  o->shuffle = 1;
  o->seed = 42;
  o->lr = 5e-5;
  o->weight_decay = 0.01;
  o->beta1 = 0.9;
  o->beta2 = 0.999;
  o->eps = 1e-8;
  o->clip = 1.0;
  o->dropout = -1;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Everything a run holds, released by run_free whatever happened. */
typedef struct Run {
  KilnBertConfig cfg;
  KilnBertVocab *vocab;
  KilnBertTokenizer *tok;
  KilnBertDataset ds;
  KilnBertEncoded enc;
  KilnBertParams layout;
  float *flat;
  unsigned char *loaded;
  KilnRtDevice *dev;
  KilnBertModel *model;
  KilnBertBatch batch;
  size_t *order;
  int32_t *lens;
  FILE *log;
} Run;

static void run_free(Run *r) {
  kiln_bert_model_destroy(r->model);
  if (r->dev) kiln_rt_device_destroy(r->dev);
  kiln_bert_batch_free(&r->batch);
  kiln_bert_encoded_free(&r->enc);
  kiln_bert_data_free(&r->ds);
  kiln_bert_tok_destroy(r->tok);
  kiln_bert_vocab_destroy(r->vocab);
  kiln_bert_params_free(&r->layout);
  free(r->flat);
  free(r->loaded);
  free(r->order);
  free(r->lens);
  if (r->log) fclose(r->log);
}

/* The config, and the weights: a model directory's model.safetensors where there is one (the
 * parameters it lacks, e.g. a pretrained checkpoint's classifier, are initialized), else a
 * seeded initialization. */
static KilnBertStatus load_model(Run *r, const KilnBertTrainOptions *o) {
  char path[4096];
  int dir = is_dir(o->model);
  KilnBertStatus st;
  if (dir) {
    snprintf(path, sizeof path, "%s/config.json", o->model);
    st = kiln_bert_config_load(path, &r->cfg);
  } else {
    st = kiln_bert_config_preset(o->model, &r->cfg);
  }
  if (st != KILN_BERT_OK) return st;
  if ((st = kiln_bert_config_check_seq_len(&r->cfg, o->seq_len)) != KILN_BERT_OK) return st;
  if ((st = kiln_bert_params_layout(&r->cfg, &r->layout)) != KILN_BERT_OK) return st;
  r->flat = calloc(r->layout.total, sizeof *r->flat);
  r->loaded = calloc(r->layout.n ? r->layout.n : 1, 1);
  if (!r->flat || !r->loaded)
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory for the parameters");
  if (dir) {
    snprintf(path, sizeof path, "%s/model.safetensors", o->model);
    if (is_file(path)) {
      KilnBertSt *sf = NULL;
      if ((st = kiln_bert_st_open(path, &sf)) != KILN_BERT_OK) return st;
      st = kiln_bert_params_load(&r->layout, sf, r->flat, r->loaded);
      kiln_bert_st_close(sf);
      if (st != KILN_BERT_OK) return st;
    }
  }
  kiln_bert_params_init(&r->layout, &r->cfg, o->seed, r->loaded, r->flat);
  return KILN_BERT_OK;
}

static KilnBertStatus check_options(const KilnBertTrainOptions *o, const KilnBertConfig *cfg,
                                    KilnBertPrecision *prec) {
  if (kiln_bert_precision_parse(o->precision, prec) != 0)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--precision %s: expected fp32, fp16 or bf16", o->precision);
  if (strcmp(o->device, "cpu"))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--device %s: the kernel libraries are built for the cpu device only yet",
                          o->device);
  double p = o->dropout >= 0 ? o->dropout : cfg->hidden_dropout_prob;
  if (p != 0)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "dropout %g: only --dropout 0 is implemented yet", p);
  if (!o->data || o->batch < 1 || o->seq_len < 2)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "train needs --data, --batch >= 1 "
                          "and --seq-len >= 2");
  return KILN_BERT_OK;
}

/* "HH:MM:SS" of a duration in seconds. */
static void hms(double s, char out[32]) {
  long t = (long)(s + 0.5);
  snprintf(out, 32, "%02ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* The summary as a table (the log's summary record, plus tokens per second and the last loss). */
static void summary_table(const KilnBertTrainOptions *o, size_t steps, double first, double avg,
                          size_t samples, size_t tokens, double total, const char *hr,
                          double loss) {
  FILE *f = o->table;
  fprintf(f, "kiln-bert train: model %s, %s on %s, %zu steps of %zu x %zu tokens\n", o->model,
          o->precision, o->device, steps, o->batch, o->seq_len);
  fprintf(f, "%-18s %14s\n", "metric", "value");
  fprintf(f, "%-18s %14.4f s\n", "first_iter_time", first);
  fprintf(f, "%-18s %14.4f s\n", "avg_iter_time", avg);
  fprintf(f, "%-18s %14.3f\n", "iter_per_sec", avg > 0 ? 1 / avg : 0);
  fprintf(f, "%-18s %14.2f\n", "samples_per_sec", total > 0 ? (double)samples / total : 0);
  fprintf(f, "%-18s %14.0f\n", "tokens_per_sec", total > 0 ? (double)tokens / total : 0);
  fprintf(f, "%-18s %14.3f s (%s)\n", "total_time", total, hr);
  fprintf(f, "%-18s %14.6f\n", "last loss", loss);
  fflush(f);
}

static void progress(FILE *tty, size_t k, size_t total, double loss) {
  if (!tty) return;
  int width = 30, done = total ? (int)((double)width * (double)k / (double)total) : width;
  fprintf(tty, "\r[%.*s%*s] %zu/%zu loss %.4f", done, "==============================",
          width - done, "", k, total, loss);
  if (k == total) fputc('\n', tty);
  fflush(tty);
}

KilnBertStatus kiln_bert_train(const KilnBertTrainOptions *o) {
  Run r = {0};
  KilnBertPrecision prec = KILN_BERT_FP32;
  KilnBertStatus st = load_model(&r, o);
  if (st == KILN_BERT_OK) st = check_options(o, &r.cfg, &prec);
  char vpath[4096];
  if (st == KILN_BERT_OK) {
    if (o->vocab) snprintf(vpath, sizeof vpath, "%s", o->vocab);
    else if (is_dir(o->model)) snprintf(vpath, sizeof vpath, "%s/vocab.txt", o->model);
    else st = kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "--vocab FILE is required with "
                             "--model %s", o->model);
  }
  if (st == KILN_BERT_OK) st = kiln_bert_vocab_load(vpath, &r.vocab);
  if (st == KILN_BERT_OK && kiln_bert_vocab_size(r.vocab) > (size_t)r.cfg.vocab_size)
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: %zu tokens, more than the model's %d", vpath,
                        kiln_bert_vocab_size(r.vocab), r.cfg.vocab_size);
  if (st == KILN_BERT_OK) st = kiln_bert_tok_create(r.vocab, &r.tok);
  if (st == KILN_BERT_OK)
    st = kiln_bert_data_load(o->data, "train", r.cfg.num_labels, o->max_samples, &r.ds);
  if (st == KILN_BERT_OK) st = kiln_bert_encode_dataset(r.tok, &r.ds, o->seq_len, &r.enc);
  if (st == KILN_BERT_OK && r.enc.n == 0)
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: no samples", o->data);
  if (st == KILN_BERT_OK) {
    r.order = calloc(r.enc.n, sizeof *r.order);
    r.lens = calloc(o->batch, sizeof *r.lens);
    if (!r.order || !r.lens) st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  KilnRtStatus rs = KILN_RT_OK;
  if (st == KILN_BERT_OK && (rs = kiln_rt_device_create(o->device, &r.dev)) != KILN_RT_OK)
    st = kiln_bert_fail(KILN_BERT_ERROR_DEVICE, "device %s: %s", o->device, kiln_rt_last_error());
  if (st == KILN_BERT_OK)
    st = kiln_bert_model_create_precision(r.dev, &r.cfg, prec, (int)o->batch, (int)o->seq_len,
                                          &r.model);
  if (st == KILN_BERT_OK) st = kiln_bert_model_set_params(r.model, r.flat);
  if (st == KILN_BERT_OK && o->log && !(r.log = fopen(o->log, "w")))
    st = kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", o->log, strerror(errno));
  if (st != KILN_BERT_OK) {
    run_free(&r);
    return st;
  }

  size_t total = kiln_bert_total_steps(r.enc.n, o->batch, o->epochs, o->steps);
  KilnBertOptim opt = {o->beta1, o->beta2, o->eps, o->weight_decay, o->clip};
  size_t cur_epoch = (size_t)-1, samples = 0, tokens = 0;
  /* AdamW's step count: a step skipped for an fp16 overflow does not advance it (contract 5) */
  int adam_steps = 0;
  double t0 = now(), first_time = 0, loss_sum_time = 0, last_loss = NAN;
  for (size_t k = 0; k < total && st == KILN_BERT_OK; k++) {
    double ts = now();
    size_t epoch, first, count;
    kiln_bert_step_slice(r.enc.n, o->batch, k, &epoch, &first, &count);
    if (epoch != cur_epoch) {
      kiln_bert_epoch_order(r.enc.n, o->shuffle, o->seed, epoch, r.order);
      cur_epoch = epoch;
    }
    st = kiln_bert_batch_fill(r.tok, &r.enc, r.order + first, count, o->seq_len, o->padding,
                              &r.batch);
    if (st != KILN_BERT_OK) break;
    for (size_t i = 0; i < r.batch.rows; i++) {
      int32_t n = 0;
      for (size_t c = 0; c < r.batch.cols; c++) n += r.batch.mask[i * r.batch.cols + c] != 0;
      r.lens[i] = n;
    }
    float loss = 0;
    double norm = 0, lr = o->lr * kiln_bert_lr_factor(o->schedule, k, o->warmup, total);
    /* the scale this step's backward uses (the step may change it) */
    double scale = kiln_bert_model_scaler(r.model)->scale;
    st = kiln_bert_model_forward(r.model, r.batch.ids, r.lens, r.batch.labels, (int)r.batch.rows,
                                 (int)r.batch.cols, &loss, NULL);
    if (st == KILN_BERT_OK) st = kiln_bert_model_backward(r.model);
    if (st == KILN_BERT_OK) st = kiln_bert_model_step(r.model, &opt, lr, adam_steps + 1, &norm);
    if (st != KILN_BERT_OK) break;
    int skipped = kiln_bert_model_skipped(r.model);
    if (!skipped) adam_steps++;
    double dt = now() - ts;
    if (k == 0) first_time = dt;
    else loss_sum_time += dt;
    samples += count;
    tokens += r.batch.rows * r.batch.cols;
    last_loss = loss;
    if (r.log) {
      /* JSON has no NaN or infinity: a diverged value is written as null */
      char lbuf[32] = "null", nbuf[32] = "null";
      if (isfinite(loss)) snprintf(lbuf, sizeof lbuf, "%.9g", (double)loss);
      if (isfinite(norm)) snprintf(nbuf, sizeof nbuf, "%.9g", norm);
      fprintf(r.log,
              "{\"step\": %zu, \"loss\": %s, \"lr\": %.9g, \"grad_norm\": %s, \"scale\": %.9g, "
              "\"skipped\": %s}\n",
              k + 1, lbuf, lr, nbuf, scale, skipped ? "true" : "false");
    }
    progress(o->progress, k + 1, total, loss);
  }
  double total_time = now() - t0;
  if (st == KILN_BERT_OK && r.log) {
    double avg = total > 1 ? loss_sum_time / (double)(total - 1) : first_time;
    char hr[32];
    hms(total_time, hr);
    fprintf(r.log,
            "{\"summary\": true, \"steps\": %zu, \"first_iter_time\": %.6f, \"avg_iter_time\": %.6f, "
            "\"iter_per_sec\": %.6f, \"samples_per_sec\": %.6f, \"total_time\": %.6f, "
            "\"total_time_hr\": \"%s\"}\n",
            total, first_time, avg, avg > 0 ? 1 / avg : 0,
            total_time > 0 ? (double)samples / total_time : 0, total_time, hr);
  }
  if (st == KILN_BERT_OK && o->table) {
    double avg = total > 1 ? loss_sum_time / (double)(total - 1) : first_time;
    char hr[32];
    hms(total_time, hr);
    summary_table(o, total, first_time, avg, samples, tokens, total_time, hr, last_loss);
  }
  if (st == KILN_BERT_OK && r.log && (fflush(r.log) != 0 || ferror(r.log)))
    st = kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", o->log, strerror(errno));
  if (st == KILN_BERT_OK && o->save) {
    char path[4096];
    if (mkdir(o->save, 0777) != 0 && errno != EEXIST)
      st = kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", o->save, strerror(errno));
    if (st == KILN_BERT_OK) st = kiln_bert_model_get_params(r.model, r.flat);
    snprintf(path, sizeof path, "%s/config.json", o->save);
    if (st == KILN_BERT_OK) st = kiln_bert_config_save(path, &r.cfg);
    snprintf(path, sizeof path, "%s/model.safetensors", o->save);
    if (st == KILN_BERT_OK) st = kiln_bert_params_save(&r.layout, r.flat, path);
  }
  run_free(&r);
  return st;
}
