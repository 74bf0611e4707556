/* eval.c — `kiln-bert eval` (bert_eval.h): a model directory's weights, the data set's test
 * split tokenized once, then
 *
 *   batch = the next slice of the pass's order (the data order; by length under dynamic
 *   padding) -> forward (loss, logits) -> sum of losses, correct argmaxes, the logits kept
 *   for the dump, which writes them in data order
 *
 * and the summary (bert_metrics). The forward is the training forward with dropout off (the
 * pass turns it off: `train` evaluates the model it trained with dropout), so a sample's logits
 * are the ones a dropout-0 forward of the same weights computes; no backward runs and no
 * gradient is touched. The model is planned for one batch of the run's shape, like train's. */
#include "bert_eval.h"
#include "bert_config.h"
#include "bert_internal.h"
#include "bert_params.h"
#include "bert_st.h"
#include "bert_tok.h"
#include "bert_vocab.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void kiln_bert_eval_defaults(KilnBertEvalOptions *o) {
  memset(o, 0, sizeof *o);
  o->device = "cpu";
  o->precision = "fp32";
  o->seq_len = 128;
  o->batch = 8;
  o->padding = KILN_BERT_PAD_FIXED;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The label the model predicts: the first of the largest logits (torch.argmax's choice). A
 * NaN row predicts -1, which no label equals. */
static int argmax(const float *logits, int n) {
  int best = -1;
  for (int j = 0; j < n; j++)
    if (!isnan(logits[j]) && (best < 0 || logits[j] > logits[best])) best = j;
  return best;
}

/* Appends one line per row: the row's logits, %.9g (enough to round-trip an f32). */
static void dump_rows(KilnBertAtomicFile *dump, const float *logits, size_t rows, int nl) {
  char buf[32];
  for (size_t r = 0; r < rows; r++)
    for (int j = 0; j < nl; j++) {
      int len = snprintf(buf, sizeof buf, "%.9g%c", (double)logits[r * (size_t)nl + (size_t)j],
                         j + 1 < nl ? ' ' : '\n');
      kiln_bert_file_write(dump, buf, (size_t)len);
    }
}

/* The model's number of labels: the length of its classifier's bias. */
static int model_labels(const KilnBertModel *model) {
  const KilnBertParam *b = kiln_bert_params_find(kiln_bert_model_params(model), "classifier.bias");
  return b ? (int)b->numel : 0;
}

/* The pass's order: the data order; under dynamic padding the samples by token count,
 * longest first (equal ones in data order), so that each batch is padded to about its own
 * samples' length. A sample's logits do not depend on its batch (padding is masked), and the
 * dump writes them in data order all the same. */
static KilnBertStatus pass_order(const KilnBertEncoded *enc, KilnBertPadding padding,
                                 size_t *order) {
  kiln_bert_epoch_order(enc->n, 0, 0, 0, order); /* never shuffled */
  return padding == KILN_BERT_PAD_DYNAMIC ? kiln_bert_sort_by_length(enc, order, enc->n)
                                          : KILN_BERT_OK;
}

KilnBertStatus kiln_bert_eval_pass(KilnBertModel *model, const KilnBertTokenizer *tok,
                                   const KilnBertEncoded *enc, size_t batch, size_t seq_len,
                                   KilnBertPadding padding, KilnBertAtomicFile *dump,
                                   KilnBertProfile *profile, KilnBertMetrics *metrics) {
  int nl = model_labels(model);
  if (enc->n == 0 || batch < 1 || nl < 1)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "eval: %zu samples in batches of %zu, %d labels: nothing to evaluate",
                          enc->n, batch, nl);
  KilnBertBatch b = {0};
  size_t *order = malloc(enc->n * sizeof *order);
  int32_t *lens = malloc(batch * sizeof *lens);
  float *logits = malloc(batch * (size_t)nl * sizeof *logits);
  /* every sample's logits, in data order, for the dump after the pass */
  float *all = dump ? malloc(enc->n * (size_t)nl * sizeof *all) : NULL;
  KilnBertStatus st = KILN_BERT_OK;
  if (!order || !lens || !logits || (dump && !all))
    st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "eval: out of memory");
  /* evaluation sees the whole network (the trainer sets dropout again before its next step) */
  if (st == KILN_BERT_OK) st = kiln_bert_model_set_dropout(model, 0, 0, 0);
  KilnBertMetrics mt = {0};
  double loss_sum = 0, t0 = now();
  size_t correct = 0;
  if (st == KILN_BERT_OK) st = pass_order(enc, padding, order);
  for (size_t first = 0; st == KILN_BERT_OK && first < enc->n; first += batch) {
    /* a profile times the batches after the first, as train's steps */
    if (profile && (st = kiln_bert_profile_step_begin(profile, first > 0)) != KILN_BERT_OK) break;
    double ts = now();
    size_t count = enc->n - first < batch ? enc->n - first : batch;
    st = kiln_bert_batch_fill(tok, enc, order + first, count, seq_len, padding, &b);
    if (st != KILN_BERT_OK) break;
    kiln_bert_batch_lens(&b, lens);
    float loss = 0;
    st = kiln_bert_model_forward(model, b.ids, lens, b.labels, (int)b.rows, (int)b.cols, &loss,
                                 logits);
    if (st != KILN_BERT_OK) break;
    double batch_time = now() - ts;
    size_t real = 0;
    for (size_t r = 0; r < b.rows; r++) real += (size_t)lens[r];
    kiln_bert_metrics_step(&mt, batch_time, b.rows, b.rows * b.cols, real);
    if (profile && (st = kiln_bert_profile_step_end(profile, batch_time)) != KILN_BERT_OK) break;
    /* the batch's mean back to a sum, so that a partial last batch weighs per sample */
    loss_sum += (double)loss * (double)b.rows;
    for (size_t r = 0; r < b.rows; r++)
      correct += argmax(logits + r * (size_t)nl, nl) == b.labels[r];
    for (size_t r = 0; all && r < b.rows; r++)
      memcpy(all + order[first + r] * (size_t)nl, logits + r * (size_t)nl,
             (size_t)nl * sizeof *all);
  }
  if (st == KILN_BERT_OK && dump) dump_rows(dump, all, enc->n, nl);
  if (st == KILN_BERT_OK) {
    mt.total_time = now() - t0;
    mt.has_eval = 1;
    mt.eval_samples = enc->n;
    mt.eval_loss = loss_sum / (double)enc->n;
    mt.accuracy = (double)correct / (double)enc->n;
    mt.peak_device_bytes = metrics->peak_device_bytes;
    *metrics = mt;
  }
  kiln_bert_batch_free(&b);
  free(order);
  free(lens);
  free(logits);
  free(all);
  return st;
}

/* Everything an eval run holds, released by eval_free whatever happened. */
typedef struct EvalRun {
  KilnBertConfig cfg;
  KilnBertParams layout;
  float *flat;
  unsigned char *loaded;
  KilnBertVocab *vocab;
  KilnBertTokenizer *tok;
  KilnBertDataset ds;
  KilnBertEncoded enc;
  KilnRtDevice *dev;
  KilnBertModel *model;
  KilnBertPlan *launches; /* --profile: the tap on the model's launches */
  KilnBertProfile *profile;
} EvalRun;

static void eval_free(EvalRun *r) {
  kiln_bert_model_destroy(r->model);
  kiln_bert_plan_destroy(r->launches);   /* after the model: its table forwards through the tap */
  kiln_bert_profile_destroy(r->profile); /* its events before the device */
  if (r->dev) kiln_rt_device_destroy(r->dev);
  kiln_bert_encoded_free(&r->enc);
  kiln_bert_data_free(&r->ds);
  kiln_bert_tok_destroy(r->tok);
  kiln_bert_vocab_destroy(r->vocab);
  kiln_bert_params_free(&r->layout);
  free(r->flat);
  free(r->loaded);
}

/* The device this copy drives, as in train.c: the emu and cuda copies evaluate on theirs, the
 * main one on cpu, handing the others to their copies (kiln_bert_eval below). */
#if defined(KILN_BERT_EMU_BUILD)
#define KILN_BERT_EVAL_DEVICE "emu"
#elif defined(KILN_BERT_CUDA_BUILD)
#define KILN_BERT_EVAL_DEVICE "cuda"
#else
#define KILN_BERT_EVAL_DEVICE "cpu"
#endif

/* --precision (and --tf32) resolved: fp32, fp32 with TF32 gemms, fp16 or bf16 (the f32
 * weights of the checkpoint rounded once to the half weights the forward reads, as training's
 * AdamW writes them); check_eval_options refuses anything else first */
static KilnBertPrecision eval_precision(const KilnBertEvalOptions *o) {
  KilnBertPrecision prec = KILN_BERT_FP32;
  if (kiln_bert_precision_resolve("eval", o->precision, o->tf32, &prec) != KILN_BERT_OK)
    return KILN_BERT_FP32;
  return prec;
}

static KilnBertStatus check_eval_options(const KilnBertEvalOptions *o) {
  if (!o->model || !o->data)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "eval needs --model DIR and --data PATH");
  KilnBertPrecision prec;
  KilnBertStatus st = kiln_bert_precision_resolve("eval", o->precision, o->tf32, &prec);
  if (st != KILN_BERT_OK) return st;
  if (!kiln_bert_device_is(o->device, KILN_BERT_EVAL_DEVICE))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--device %s: not a device this build's kernel libraries are for "
                          "(cpu, and emu or cuda[:N] where built)",
                          o->device);
  if (o->batch < 1 || o->seq_len < 2)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "eval needs --batch >= 1 and "
                                                            "--seq-len >= 2");
  return KILN_BERT_OK;
}

/* DIR/config.json and DIR/model.safetensors, which must hold every parameter: a model with a
 * freshly initialized classifier would classify at random, so eval refuses it. */
static KilnBertStatus load_trained(EvalRun *r, const KilnBertEvalOptions *o) {
  char path[4096];
  snprintf(path, sizeof path, "%s/config.json", o->model);
  KilnBertStatus st = kiln_bert_config_load(path, &r->cfg);
  if (st == KILN_BERT_OK) st = kiln_bert_config_check_seq_len(&r->cfg, o->seq_len);
  if (st == KILN_BERT_OK) st = kiln_bert_params_layout(&r->cfg, &r->layout);
  if (st != KILN_BERT_OK) return st;
  r->flat = calloc(r->layout.total, sizeof *r->flat);
  r->loaded = calloc(r->layout.n ? r->layout.n : 1, 1);
  if (!r->flat || !r->loaded)
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory for the parameters");
  snprintf(path, sizeof path, "%s/model.safetensors", o->model);
  KilnBertSt *sf = NULL;
  if ((st = kiln_bert_st_open(path, &sf)) != KILN_BERT_OK) return st;
  st = kiln_bert_params_load(&r->layout, sf, r->flat, r->loaded);
  kiln_bert_st_close(sf);
  for (size_t i = 0; st == KILN_BERT_OK && i < r->layout.n; i++)
    if (!r->loaded[i])
      st = kiln_bert_fail(KILN_BERT_ERROR_NOT_FOUND,
                          "%s: no tensor %s: eval needs a trained model (every parameter)", path,
                          r->layout.p[i].name);
  return st;
}

/* The vocabulary (--vocab, else DIR/vocab.txt), no larger than the model's, and the data set
 * tokenized once. */
static KilnBertStatus load_inputs(EvalRun *r, const KilnBertEvalOptions *o) {
  char vpath[4096];
  if (o->vocab)
    snprintf(vpath, sizeof vpath, "%s", o->vocab);
  else
    snprintf(vpath, sizeof vpath, "%s/vocab.txt", o->model);
  KilnBertStatus st = kiln_bert_vocab_load(vpath, &r->vocab);
  if (st == KILN_BERT_OK && kiln_bert_vocab_size(r->vocab) > (size_t)r->cfg.vocab_size)
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: %zu tokens, more than the model's %d", vpath,
                        kiln_bert_vocab_size(r->vocab), r->cfg.vocab_size);
  if (st == KILN_BERT_OK) st = kiln_bert_tok_create(r->vocab, &r->tok);
  if (st == KILN_BERT_OK)
    st = kiln_bert_data_load(o->data, "test", r->cfg.num_labels, o->max_samples, &r->ds);
  if (st == KILN_BERT_OK) st = kiln_bert_encode_dataset(r->tok, &r->ds, o->seq_len, &r->enc);
  if (st == KILN_BERT_OK && r->enc.n == 0)
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: no samples", o->data);
  return st;
}

/* --profile: the tap on the model's launches, timing them (bert_profile.h). */
static KilnBertStatus attach_profile(EvalRun *r, const KilnBertEvalOptions *o) {
  if (!(r->launches = kiln_bert_plan_create(eval_precision(o))))
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory");
  KilnBertStatus st =
      kiln_bert_profile_create(r->dev, kiln_bert_model_stream(r->model), &r->profile);
  if (st != KILN_BERT_OK) return st;
  kiln_bert_plan_profile(r->launches, r->profile);
  kiln_bert_plan_attach(r->launches, r->model, NULL);
  return KILN_BERT_OK;
}

/* The profile's result after the summary, on table and jsonl (either may be NULL). */
static void write_profile(const EvalRun *r, FILE *table, FILE *jsonl) {
  if (!r->profile) return;
  int ncalls = 0;
  const KilnBertCall *calls = kiln_bert_plan_calls(r->launches, &ncalls);
  kiln_bert_profile_write(r->profile, calls, ncalls, table, jsonl);
}

/* Writes the summary record (and the profile's records) to path, atomically. */
static KilnBertStatus write_log(const char *path, const KilnBertMetrics *mt, const EvalRun *r) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  kiln_bert_metrics_json(mt, f);
  write_profile(r, NULL, f);
  fclose(f);
  KilnBertStatus st = kiln_bert_file_write_atomic(path, text, len);
  free(text);
  return st;
}

#if !defined(KILN_BERT_EMU_BUILD) && !defined(KILN_BERT_CUDA_BUILD)
/* kiln_bert_eval of the device copies. */
KilnBertStatus kiln_bert_emu_eval(const KilnBertEvalOptions *o, KilnBertMetrics *out);
KilnBertStatus kiln_bert_cuda_eval(const KilnBertEvalOptions *o, KilnBertMetrics *out);
#endif

KilnBertStatus kiln_bert_eval(const KilnBertEvalOptions *o, KilnBertMetrics *out) {
#if defined(KILN_BERT_HAVE_EMU) && !defined(KILN_BERT_EMU_BUILD) && !defined(KILN_BERT_CUDA_BUILD)
  if (o->device && !strcmp(o->device, "emu")) return kiln_bert_emu_eval(o, out);
#endif
#if defined(KILN_BERT_HAVE_CUDA) && !defined(KILN_BERT_EMU_BUILD) && !defined(KILN_BERT_CUDA_BUILD)
  if (o->device && kiln_bert_device_is(o->device, "cuda")) return kiln_bert_cuda_eval(o, out);
#endif
  EvalRun r = {0};
  KilnBertStatus st = check_eval_options(o);
  if (st == KILN_BERT_OK) st = load_trained(&r, o);
  if (st == KILN_BERT_OK) st = load_inputs(&r, o);
  size_t rows = o->batch < r.enc.n ? o->batch : r.enc.n; /* no larger plan than the data needs */
  /* a batch that cannot fit fails before the device is set up or a file is written */
  if (st == KILN_BERT_OK)
    st = kiln_bert_model_check_memory(&r.cfg, eval_precision(o), (int)rows, (int)o->seq_len,
                                      o->device, o->max_device_bytes, NULL);
  if (st == KILN_BERT_OK && kiln_rt_device_create(o->device, &r.dev) != KILN_RT_OK)
    st = kiln_bert_fail(KILN_BERT_ERROR_DEVICE, "device %s: %s", o->device, kiln_rt_last_error());
  if (st == KILN_BERT_OK)
    st = kiln_bert_model_create_precision(r.dev, &r.cfg, eval_precision(o), (int)rows,
                                          (int)o->seq_len, &r.model);
  if (st == KILN_BERT_OK) st = kiln_bert_model_set_params(r.model, r.flat);
  if (st == KILN_BERT_OK && o->profile) st = attach_profile(&r, o);
  KilnBertAtomicFile dump = {0};
  int dumping = 0;
  if (st == KILN_BERT_OK && o->dump_logits &&
      (st = kiln_bert_file_begin(o->dump_logits, &dump)) == KILN_BERT_OK)
    dumping = 1;
  KilnBertMetrics mt = {0};
  if (st == KILN_BERT_OK)
    st = kiln_bert_eval_pass(r.model, r.tok, &r.enc, rows, o->seq_len, o->padding,
                             dumping ? &dump : NULL, r.profile, &mt);
  KilnRtMemStats ms;
  if (st == KILN_BERT_OK && kiln_rt_mem_stats(r.dev, &ms) == KILN_RT_OK)
    mt.peak_device_bytes = ms.peak_bytes_in_use;
  if (dumping) {
    if (st == KILN_BERT_OK)
      st = kiln_bert_file_commit(&dump);
    else
      kiln_bert_file_abort(&dump);
  }
  if (st == KILN_BERT_OK && o->log) st = write_log(o->log, &mt, &r);
  if (st == KILN_BERT_OK && o->table) {
    char title[512];
    snprintf(title, sizeof title,
             "kiln-bert eval: model %s, %s%s on %s, %zu samples in %zu "
             "batches of %zu x %s%zu tokens",
             o->model, o->precision, o->tf32 ? "+tf32" : "", o->device, mt.eval_samples, mt.steps,
             rows, o->padding == KILN_BERT_PAD_DYNAMIC ? "<= " : "", o->seq_len);
    kiln_bert_metrics_table(&mt, title, o->table);
    write_profile(&r, o->table, NULL);
  }
  if (st == KILN_BERT_OK && o->json) {
    kiln_bert_metrics_json(&mt, o->json);
    write_profile(&r, NULL, o->json);
    fflush(o->json);
  }
  if (st == KILN_BERT_OK && out) *out = mt;
  eval_free(&r);
  return st;
}
