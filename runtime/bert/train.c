/* train.c — the `kiln-bert train` run (bert_train.h): inputs, then the step loop
 *
 *   batch = the step's slice of the epoch order (bert_batch) -> dropout masks of (seed, step) ->
 *   forward (loss) -> backward ->
 *   step (all-reduce hook, norm, clipping, AdamW at lr x the schedule's factor) -> log record
 *
 * in the precision of --precision (fp16's loss scaling is the model's: a skipped step is logged
 * and counts toward --steps and the schedule, but not toward AdamW's step count), from step 1,
 * or from the step after a --resume'd checkpoint (bert_ckpt: its weights, moments, step, loss
 * scaler and seed, so that the run goes on as if never stopped); then the evaluation pass on the
 * test split when there is one (bert_eval), the summary (bert_metrics) and the --save
 * checkpoint. Everything the steps need is allocated before the first one, the evaluation data
 * included; the batch arrays reach their size on the first step. */
#include "bert_train.h"
#include "bert_ckpt.h"
#include "bert_config.h"
#include "bert_eval.h"
#include "bert_internal.h"
#include "bert_metrics.h"
#include "bert_model.h"
#include "bert_params.h"
#include "bert_st.h"
#include "bert_tok.h"
#include "bert_plan.h"
#include "bert_profile.h"
#include "bert_replicas.h"
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
  o->graphs = -1;
  o->replicas = 1;
  o->accumulate = 1;
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

/* Whether two paths name one place: the same file or directory where both exist, else the
 * same text but for trailing slashes. */
static int same_place(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  size_t na = strlen(a), nb = strlen(b);
  while (na > 1 && a[na - 1] == '/') na--;
  while (nb > 1 && b[nb - 1] == '/') nb--;
  return na == nb && !strncmp(a, b, na);
}

/* One copy of the model in data-parallel training (--replicas; bert_replicas.h): its device,
 * and the shard of each batch it runs. Replica 0 is the run's model: the evaluation, the
 * checkpoints, the launch tap and the profile are its. */
typedef struct Replica {
  KilnRtDevice *dev;
  KilnBertModel *model;
  KilnBertBatch batch;
  int32_t *lens;
} Replica;

/* Everything a run holds, released by run_free whatever happened. */
typedef struct Run {
  KilnBertConfig cfg;
  KilnBertVocab *vocab;
  KilnBertTokenizer *tok;
  KilnBertDataset ds, eval_ds;
  KilnBertEncoded enc, eval_enc; /* eval_enc.n = 0: no evaluation at the end */
  KilnBertParams layout;
  float *flat;
  unsigned char *loaded;
  Replica *rep; /* nrep of them */
  int nrep;
  KilnBertReplicas *group; /* the all-reduce, with more than one replica */
  KilnRtDevice *dev;       /* replica 0's */
  KilnBertModel *model;    /* replica 0's */
  size_t *order;
  FILE *log;
  KilnBertPlan *launches; /* the tap on every launch: KILN_BERT_LAUNCH_LOG, --profile */
  FILE *launch_log;
  KilnBertProfile *profile; /* --profile */
  KilnBertEvalRecord best;  /* --save-best: the evaluation of the checkpoint there */
} Run;

static void run_free(Run *r) {
  kiln_bert_replicas_destroy(r->group); /* clears the models' hooks */
  for (int i = 0; r->rep && i < r->nrep; i++) kiln_bert_model_destroy(r->rep[i].model);
  kiln_bert_plan_destroy(r->launches);   /* after the model: its table forwards through the tap */
  kiln_bert_profile_destroy(r->profile); /* its events before the device */
  if (r->launch_log) fclose(r->launch_log);
  for (int i = 0; r->rep && i < r->nrep; i++) {
    if (r->rep[i].dev) kiln_rt_device_destroy(r->rep[i].dev);
    kiln_bert_batch_free(&r->rep[i].batch);
    free(r->rep[i].lens);
  }
  free(r->rep);
  kiln_bert_encoded_free(&r->enc);
  kiln_bert_encoded_free(&r->eval_enc);
  kiln_bert_data_free(&r->ds);
  kiln_bert_data_free(&r->eval_ds);
  kiln_bert_tok_destroy(r->tok);
  kiln_bert_vocab_destroy(r->vocab);
  kiln_bert_params_free(&r->layout);
  free(r->flat);
  free(r->loaded);
  free(r->order);
  if (r->log) fclose(r->log);
}

/* Whole-step replay (kiln_bert_model_set_graphs): asked for (--graphs: an error where the
 * device cannot capture or a tap is on the launches), refused (--no-graphs), or by default on
 * cuda when nothing taps the launches. The cpu device replays a graph launch by launch, as the
 * stream would, so it gains nothing there but tests the path. Noted on stderr when
 * KILN_BERT_GRAPH_STATS is set (the tests read it). */
static KilnBertStatus choose_graphs(Run *r, const KilnBertTrainOptions *o) {
  /* the default is an optimization: a failure to capture falls back to the stream, noted */
  int mode = o->graphs >= 0 ? (o->graphs ? KILN_BERT_GRAPHS_ON : KILN_BERT_GRAPHS_OFF)
             : kiln_rt_device_kind(r->dev) == KILN_RT_DEVICE_CUDA && !r->launches
                 ? KILN_BERT_GRAPHS_FALLBACK
                 : KILN_BERT_GRAPHS_OFF;
  if (mode == KILN_BERT_GRAPHS_OFF && o->graphs < 0) return KILN_BERT_OK;
  for (int i = 0; i < r->nrep; i++) {
    KilnBertStatus st = kiln_bert_model_set_graphs(r->rep[i].model, mode);
    if (st != KILN_BERT_OK) return st;
  }
  return KILN_BERT_OK;
}

/* A note when replay fell back to the stream; with KILN_BERT_GRAPH_STATS set, what replay
 * did, one line on stderr. */
static void report_graphs(const Run *r) {
  if (!r->model) return;
  KilnBertGraphStats gs;
  kiln_bert_model_graph_stats(r->model, &gs);
  if (gs.fallback)
    fprintf(stderr, "kiln-bert: note: whole-step replay turned off: %s\n", gs.fallback);
  const char *want = getenv("KILN_BERT_GRAPH_STATS");
  if (!want || !*want) return;
  fprintf(stderr, "graphs: eager %ld captures %ld updates %ld replays %ld shapes %d\n", gs.eager,
          gs.captures, gs.updates, gs.replays, gs.graphs);
}

/* Where the model comes from: the checkpoint being resumed, else --model. */
static const char *model_source(const KilnBertTrainOptions *o) {
  return o->resume ? o->resume : o->model;
}

/* The tap on the model's launches (bert_plan.h), when something needs it:
 *   KILN_BERT_LAUNCH_LOG=FILE: every kernel launch of the run from here on, one line each
 *   (bert_plan.h's format), through the tap whole-model tuning lists the step with; the tests
 *   compare what a real run launches with what `kiln-bert tune` lists;
 *   --profile: the same tap times each launch (bert_profile.h).
 * Without either the model keeps its own table: nothing is in the launches' way. */
static KilnBertStatus attach_tap(Run *r, KilnBertPrecision prec, int profile) {
  const char *path = getenv("KILN_BERT_LAUNCH_LOG");
  int logging = path && *path;
  if (!logging && !profile) return KILN_BERT_OK;
  if (logging && !(r->launch_log = fopen(path, "w")))
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "KILN_BERT_LAUNCH_LOG=%s: %s", path, strerror(errno));
  if (!(r->launches = kiln_bert_plan_create(prec)))
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory");
  if (profile) {
    KilnBertStatus st =
        kiln_bert_profile_create(r->dev, kiln_bert_model_stream(r->model), &r->profile);
    if (st != KILN_BERT_OK) return st;
    kiln_bert_plan_profile(r->launches, r->profile);
  }
  kiln_bert_plan_attach(r->launches, r->model, r->launch_log);
  return KILN_BERT_OK;
}

/* The config: the config.json of a model directory (or of the checkpoint being resumed), else a
 * preset's. */
static KilnBertStatus load_config(Run *r, const KilnBertTrainOptions *o) {
  char path[4096];
  const char *model = model_source(o);
  KilnBertStatus st;
  if (is_dir(model)) {
    snprintf(path, sizeof path, "%s/config.json", model);
    st = kiln_bert_config_load(path, &r->cfg);
  } else {
    st = kiln_bert_config_preset(model, &r->cfg);
  }
  if (st == KILN_BERT_OK) st = kiln_bert_config_check_seq_len(&r->cfg, o->seq_len);
  return st;
}

typedef struct NoteCtx {
  FILE *out;
  const char *path;
} NoteCtx;

static void note_ignored(void *user, const char *name) {
  NoteCtx *n = user;
  if (n->out)
    fprintf(n->out,
            "note: %s: tensor %s is not a parameter of BertForSequenceClassification: "
            "ignored\n",
            n->path, name);
}

/* The parameters a checkpoint lacks: the heads a pretrained encoder comes without are
 * initialized from the seed, with a note each; any other missing tensor is an error naming it. */
static KilnBertStatus check_missing(Run *r, const KilnBertTrainOptions *o, const char *path) {
  for (size_t i = 0; i < r->layout.n; i++) {
    const KilnBertParam *p = &r->layout.p[i];
    if (r->loaded[i]) continue;
    if (!kiln_bert_params_initializable(p))
      return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                            "%s: no tensor %s (nor its older names): only the classifier and the "
                            "pooler may be missing from a checkpoint",
                            path, p->name);
    if (o->notes)
      fprintf(o->notes, "note: %s: no tensor %s: initialized from --seed %llu\n", path, p->name,
              (unsigned long long)o->seed);
  }
  return KILN_BERT_OK;
}

/* The weights: a model directory's model.safetensors where there is one (stored F32, F16 or
 * BF16; the classifier and pooler it lacks are initialized, the tensors it has beyond the
 * model's are ignored, each with a note), else a seeded initialization. */
static KilnBertStatus load_weights(Run *r, const KilnBertTrainOptions *o) {
  char path[4096];
  const char *model = model_source(o);
  KilnBertStatus st = kiln_bert_params_layout(&r->cfg, &r->layout);
  if (st != KILN_BERT_OK) return st;
  r->flat = calloc(r->layout.total, sizeof *r->flat);
  r->loaded = calloc(r->layout.n ? r->layout.n : 1, 1);
  if (!r->flat || !r->loaded)
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory for the parameters");
  snprintf(path, sizeof path, "%s/model.safetensors", model);
  if (is_dir(model) && is_file(path)) {
    KilnBertSt *sf = NULL;
    if ((st = kiln_bert_st_open(path, &sf)) != KILN_BERT_OK) return st;
    st = kiln_bert_params_load(&r->layout, sf, r->flat, r->loaded);
    if (st == KILN_BERT_OK) st = check_missing(r, o, path);
    NoteCtx n = {o->notes, path};
    if (st == KILN_BERT_OK) kiln_bert_params_unused(&r->layout, sf, note_ignored, &n);
    kiln_bert_st_close(sf);
    if (st != KILN_BERT_OK) return st;
  }
  kiln_bert_params_init(&r->layout, &r->cfg, o->seed, r->loaded, r->flat);
  return KILN_BERT_OK;
}

/* The dropout probability of every site: --dropout, else the config's hidden_dropout_prob. */
static double dropout_p(const KilnBertTrainOptions *o, const KilnBertConfig *cfg) {
  return o->dropout >= 0 ? o->dropout : cfg->hidden_dropout_prob;
}

/* The device this copy of the file drives: the emu and cuda builds (runtime/bert/CMakeLists.txt
 * compiles model.c, model_ops.c, eval.c, checkpoint.c and this file again, against the
 * libraries generated for that device, every external name renamed) train on their device in
 * every precision; the main one trains on cpu and hands the other devices' runs to their
 * copies. */
#if defined(KILN_BERT_EMU_BUILD)
#define KILN_BERT_TRAIN_DEVICE "emu"
#elif defined(KILN_BERT_CUDA_BUILD)
#define KILN_BERT_TRAIN_DEVICE "cuda"
#else
#define KILN_BERT_TRAIN_DEVICE "cpu"
#endif
#if defined(KILN_BERT_HAVE_EMU) && defined(KILN_BERT_HAVE_CUDA)
#define KILN_BERT_DEVICES "the cpu, emu and cuda devices"
#elif defined(KILN_BERT_HAVE_EMU)
#define KILN_BERT_DEVICES "the cpu and emu devices"
#elif defined(KILN_BERT_HAVE_CUDA)
#define KILN_BERT_DEVICES "the cpu and cuda devices"
#else
#define KILN_BERT_DEVICES "the cpu device"
#endif

static KilnBertStatus check_options(const KilnBertTrainOptions *o, const KilnBertConfig *cfg,
                                    KilnBertPrecision *prec) {
  KilnBertStatus pst = kiln_bert_precision_resolve("train", o->precision, o->tf32, prec);
  if (pst != KILN_BERT_OK) return pst;
  if (!strncmp(o->device, "cuda", 4) && !kiln_bert_device_is(o->device, "cuda"))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--device %s: expected cpu, emu, cuda or cuda:N", o->device);
  if (!kiln_bert_device_is(o->device, KILN_BERT_TRAIN_DEVICE))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--device %s: the kernel libraries are built for %s only in this "
                          "build",
                          o->device, KILN_BERT_DEVICES);
  /* Adam's bias corrections divide by 1 - beta^t: a beta of 1 or more divides by zero or flips
   * the update's sign. Written so that NaN fails too. */
  if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--adam-beta1 %g, --adam-beta2 %g: each must be in [0, 1)", o->beta1,
                          o->beta2);
  if (!isfinite(o->lr) || !isfinite(o->weight_decay) || !isfinite(o->eps) || !isfinite(o->clip))
    return kiln_bert_fail(
        KILN_BERT_ERROR_INVALID_ARGUMENT,
        "--lr %g, --weight-decay %g, --adam-eps %g, --clip %g: each must be finite", o->lr,
        o->weight_decay, o->eps, o->clip);
  double p = dropout_p(o, cfg);
  if (!(p >= 0 && p < 1))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "dropout %g: a probability in [0, 1) is needed", p);
  if (o->save && is_file(o->save))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--save %s: not a directory (a checkpoint is a directory)", o->save);
  if (o->save_best && is_file(o->save_best))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--save-best %s: not a directory (a checkpoint is a directory)",
                          o->save_best);
  if (o->save_best && o->save && same_place(o->save, o->save_best))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--save-best %s is --save's directory: each save would replace the "
                          "other's checkpoint (give them two directories)",
                          o->save_best);
  if (o->replicas > KILN_BERT_MAX_REPLICAS)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "--replicas %zu: at most %d",
                          o->replicas, KILN_BERT_MAX_REPLICAS);
  if (o->replicas > o->batch)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--replicas %zu: more replicas than the --batch of %zu samples they "
                          "share (each runs a shard of every batch)",
                          o->replicas, o->batch);
  if (o->accumulate > KILN_BERT_MAX_ACCUMULATE)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "--accumulate %zu: at most %d",
                          o->accumulate, KILN_BERT_MAX_ACCUMULATE);
  if (o->accumulate > 1 && o->accumulate * (o->replicas ? o->replicas : 1) > o->batch)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--accumulate %zu: more micro-batches (%zu over %zu replica(s)) than "
                          "the --batch of %zu samples they share",
                          o->accumulate, o->accumulate * (o->replicas ? o->replicas : 1),
                          o->replicas ? o->replicas : 1, o->batch);
  /* grouping reorders what shuffling drew, for dynamic padding to take the gain */
  if (o->group_by_length && (!o->shuffle || o->padding != KILN_BERT_PAD_DYNAMIC))
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--group-by-length needs --padding dynamic and a shuffled order (not "
                          "--no-shuffle)");
  if (!o->data || o->batch < 1 || o->seq_len < 2)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "train needs --data, --batch >= 1 "
                                                            "and --seq-len >= 2");
  return KILN_BERT_OK;
}

/* The data the run is evaluated on at the end: --eval-data, else the test/ split of an aclImdb
 * root given as --data; NULL when there is none (a split directory or a file has no test
 * split). */
static const char *eval_source(const KilnBertTrainOptions *o, char *buf, size_t cap) {
  if (o->eval_data) return o->eval_data;
  snprintf(buf, cap, "%s/test", o->data);
  return is_dir(o->data) && is_dir(buf) ? o->data : NULL;
}

/* The evaluation data, tokenized once before training, so that a bad file fails the run before
 * it starts rather than after it. */
static KilnBertStatus load_eval_data(Run *r, const KilnBertTrainOptions *o) {
  char buf[4096];
  const char *src = eval_source(o, buf, sizeof buf);
  if (!src) return KILN_BERT_OK;
  size_t max = o->eval_max_samples ? o->eval_max_samples : o->max_samples;
  KilnBertStatus st = kiln_bert_data_load(src, "test", r->cfg.num_labels, max, &r->eval_ds);
  if (st == KILN_BERT_OK)
    st = kiln_bert_encode_dataset(r->tok, &r->eval_ds, o->seq_len, &r->eval_enc);
  if (st == KILN_BERT_OK && r->eval_enc.n == 0)
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: no samples to evaluate on", src);
  return st;
}

/* With --resume: the checkpoint's state, checked against this run (the data position counts
 * in samples and batches, so both must be the same), and its AdamW moments. */
static KilnBertStatus resume_state(Run *r, const KilnBertTrainOptions *o, size_t total,
                                   KilnBertTrainState *ts) {
  KilnBertStatus st = KILN_BERT_OK;
  for (int i = 0; i < r->nrep && st == KILN_BERT_OK; i++)
    st = kiln_bert_ckpt_load_moments(o->resume, r->rep[i].model);
  if (st != KILN_BERT_OK) return st;
  if (ts->samples != r->enc.n || ts->batch != o->batch)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--resume %s: saved by a run of %zu samples in batches of %zu; this one "
                          "has %zu in batches of %zu, so its data position does not carry over",
                          o->resume, ts->samples, ts->batch, r->enc.n, o->batch);
  size_t epoch, first, count;
  kiln_bert_step_slice(ts->samples, ts->batch, ts->step, &epoch, &first, &count);
  if (epoch != ts->epoch || first != ts->position)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s/trainer_state.json: step %zu is at epoch %zu position %zu, not at "
                          "the recorded epoch %zu position %zu",
                          o->resume, ts->step, epoch, first, ts->epoch, ts->position);
  if (ts->step >= total)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--resume %s: the checkpoint has taken %zu steps of the %zu this run "
                          "has: nothing left to do (--steps is the total, not the steps to add)",
                          o->resume, ts->step, total);
  if (o->stop_after && o->stop_after <= ts->step)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--stop-after %zu: the checkpoint in %s is already at step %zu",
                          o->stop_after, o->resume, ts->step);
  return KILN_BERT_OK;
}

/* The checkpoint after ts->step steps into dir (--save, --save-best), with where the next
 * step's batch starts. */
static KilnBertStatus save_checkpoint(Run *r, const char *dir, KilnBertTrainState *ts) {
  /* replica 0 stands for all: they must agree */
  if (r->group) {
    KilnBertStatus st = kiln_bert_replicas_check_same(r->group);
    if (st != KILN_BERT_OK) return st;
  }
  size_t count;
  kiln_bert_step_slice(ts->samples, ts->batch, ts->step, &ts->epoch, &ts->position, &count);
  return kiln_bert_ckpt_save(dir, &r->cfg, r->model, ts);
}

/* --save-best: after an evaluation (em) of the model as it stands after ts->step steps, its
 * checkpoint into the --save-best directory when its eval_loss is below the best so far (the
 * first evaluation's always; an equal loss keeps the earlier one, as HF's load_best_model_at_end
 * does; a NaN loss never), with the evaluation in its state. *saved says whether it was. */
static KilnBertStatus save_best(Run *r, const KilnBertTrainOptions *o, const KilnBertTrainState *ts,
                                const KilnBertMetrics *em, int *saved) {
  *saved = 0;
  if (!o->save_best || !isfinite(em->eval_loss)) return KILN_BERT_OK;
  if (r->best.has && !(em->eval_loss < r->best.loss)) return KILN_BERT_OK;
  KilnBertTrainState bs = *ts;
  bs.eval = (KilnBertEvalRecord){1, ts->step, em->eval_loss, em->accuracy, em->eval_samples};
  KilnBertStatus st = save_checkpoint(r, o->save_best, &bs);
  if (st != KILN_BERT_OK) return st;
  r->best = bs.eval;
  *saved = 1;
  if (o->progress) {
    fprintf(o->progress, "step %zu: the best eval_loss so far, saved to %s\n", ts->step,
            o->save_best);
    fflush(o->progress);
  }
  return KILN_BERT_OK;
}

/* --save-best with --resume: the evaluation recorded in the --save-best directory's checkpoint
 * is the one to beat; a directory without a checkpoint, or with one that records none (a --save
 * checkpoint), sets no bar. A damaged checkpoint there is refused (IO / FORMAT). */
static KilnBertStatus load_best(Run *r, const KilnBertTrainOptions *o) {
  char path[4200];
  snprintf(path, sizeof path, "%s/trainer_state.json", o->save_best);
  if (!is_file(path)) return KILN_BERT_OK;
  KilnBertTrainState bs;
  KilnBertStatus st = kiln_bert_ckpt_read_state(o->save_best, &bs);
  if (st != KILN_BERT_OK) return st;
  r->best = bs.eval;
  if (r->best.has && o->notes)
    fprintf(o->notes,
            "kiln-bert train: --save-best %s: its checkpoint (step %zu, eval_loss %.6f) is the "
            "one to beat\n",
            o->save_best, r->best.step, r->best.loss);
  return KILN_BERT_OK;
}

/* The summary as a table: the metrics, then the last step's loss. */
static void summary_table(const KilnBertTrainOptions *o, const KilnBertMetrics *mt, double loss) {
  char title[512], copies[96] = "";
  if (o->replicas > 1 && o->accumulate > 1)
    snprintf(copies, sizeof copies, " (%zu replicas, %zu micro-batches each)", o->replicas,
             o->accumulate);
  else if (o->replicas > 1)
    snprintf(copies, sizeof copies, " (%zu replicas)", o->replicas);
  else if (o->accumulate > 1)
    snprintf(copies, sizeof copies, " (%zu micro-batches)", o->accumulate);
  snprintf(title, sizeof title,
           "kiln-bert train: model %s, %s%s on %s%s, %zu steps of %zu x %s%zu "
           "tokens",
           model_source(o), o->precision, o->tf32 ? "+tf32" : "", o->device, copies, mt->steps,
           o->batch, o->padding == KILN_BERT_PAD_DYNAMIC ? "<= " : "", o->seq_len);
  kiln_bert_metrics_table(mt, title, o->table);
  fprintf(o->table, "%-18s %14.6f\n", "last loss", loss);
  fflush(o->table);
}

static void progress(FILE *tty, size_t k, size_t total, double loss) {
  if (!tty) return;
  int width = 30, done = total ? (int)((double)width * (double)k / (double)total) : width;
  fprintf(tty, "\r[%.*s%*s] %zu/%zu loss %.4f", done,
          "==============================", width - done, "", k, total, loss);
  if (k == total) fputc('\n', tty);
  fflush(tty);
}

/* The number of replicas: --replicas, 1 when unset. */
static int replicas_of(const KilnBertTrainOptions *o) { return o->replicas ? (int)o->replicas : 1; }

/* The device of replica i: --device itself with one replica; with several, cuda[:K] becomes
 * cuda:K+i (a GPU each), and cpu and emu are a device each over the host's memory. */
static void replica_device(const char *device, int nrep, int i, char *buf, size_t cap) {
  if (nrep == 1 || strncmp(device, "cuda", 4) != 0) {
    snprintf(buf, cap, "%s", device);
    return;
  }
  long first = device[4] == ':' ? strtol(device + 5, NULL, 10) : 0;
  snprintf(buf, cap, "cuda:%ld", first + i);
}

/* The micro-batches each replica runs a step in: --accumulate, 1 when unset. */
static int accumulate_of(const KilnBertTrainOptions *o) {
  return o->accumulate ? (int)o->accumulate : 1;
}

/* A step's batch is split into replicas x accumulate shards (kiln_bert_replicas_shard), shard
 * i A + j being replica i's micro-batch j: with one replica, --accumulate A runs in turn the
 * shards --replicas A runs side by side. Shard g's dropout seed is the run's for shard 0 (so
 * one replica without accumulation draws what a plain run draws), the run's mixed with g for
 * the others, whose samples draw other masks. */
static uint64_t shard_seed(uint64_t seed, int g) {
  return g ? seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)g) : seed;
}

/* The rows each replica's model is planned for: one shard of a full batch, rounded up. */
static int shard_rows(const KilnBertTrainOptions *o) {
  size_t n = (size_t)replicas_of(o) * (size_t)accumulate_of(o);
  return (int)((o->batch + n - 1) / n);
}

/* Whether the replicas' plans fit, before anything is allocated: each GPU holds one; the cpu
 * and emu devices all keep theirs in the host's memory. */
static KilnBertStatus check_plans(const Run *r, const KilnBertTrainOptions *o,
                                  KilnBertPrecision prec) {
  int nrep = replicas_of(o), stash = accumulate_of(o) > 1;
  if (strncmp(o->device, "cuda", 4) != 0)
    return kiln_bert_model_check_memory_copies(&r->cfg, prec, shard_rows(o), (int)o->seq_len,
                                               o->device, o->max_device_bytes, nrep, stash, NULL);
  for (int i = 0; i < nrep; i++) {
    char name[64];
    replica_device(o->device, nrep, i, name, sizeof name);
    KilnBertStatus st = kiln_bert_model_check_memory_copies(
        &r->cfg, prec, shard_rows(o), (int)o->seq_len, name, o->max_device_bytes, 1, stash, NULL);
    if (st != KILN_BERT_OK) return st;
  }
  return KILN_BERT_OK;
}

/* check_plans, and a batch that does not fit told that it can run in micro-batches. */
static KilnBertStatus check_replica_memory(const Run *r, const KilnBertTrainOptions *o,
                                           KilnBertPrecision prec) {
  KilnBertStatus st = check_plans(r, o, prec);
  if (st == KILN_BERT_ERROR_OUT_OF_MEMORY &&
      o->batch > (size_t)replicas_of(o) * (size_t)accumulate_of(o)) {
    char why[1024];
    snprintf(why, sizeof why, "%s", kiln_bert_last_error());
    st = kiln_bert_fail(st, "%s, or --accumulate %d (each step's batch in micro-batches)", why,
                        2 * accumulate_of(o));
  }
  return st;
}

/* Every replica's device and model, each model holding the run's initial parameters; with more
 * than one, the group that all-reduces their gradients. */
static KilnBertStatus create_replicas(Run *r, const KilnBertTrainOptions *o,
                                      KilnBertPrecision prec) {
  int nrep = replicas_of(o), rows = shard_rows(o);
  KilnBertModel *models[KILN_BERT_MAX_REPLICAS];
  KilnRtDevice *devs[KILN_BERT_MAX_REPLICAS];
  if (!(r->rep = calloc((size_t)nrep, sizeof *r->rep)))
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory");
  r->nrep = nrep;
  KilnBertStatus st = KILN_BERT_OK;
  for (int i = 0; i < nrep && st == KILN_BERT_OK; i++) {
    Replica *p = &r->rep[i];
    char name[64];
    replica_device(o->device, nrep, i, name, sizeof name);
    if (!(p->lens = calloc((size_t)rows, sizeof *p->lens)))
      return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory");
    if (kiln_rt_device_create(name, &p->dev) != KILN_RT_OK)
      return kiln_bert_fail(KILN_BERT_ERROR_DEVICE, "device %s: %s", name, kiln_rt_last_error());
    st = kiln_bert_model_create_precision(p->dev, &r->cfg, prec, rows, (int)o->seq_len, &p->model);
    if (st == KILN_BERT_OK) st = kiln_bert_model_set_params(p->model, r->flat);
    if (st == KILN_BERT_OK && accumulate_of(o) > 1) st = kiln_bert_model_set_stash(p->model, 1);
    models[i] = p->model;
    devs[i] = p->dev;
  }
  if (st != KILN_BERT_OK) return st;
  r->dev = r->rep[0].dev;
  r->model = r->rep[0].model;
  if (nrep == 1) return KILN_BERT_OK;
  st = kiln_bert_replicas_create(models, devs, nrep, &r->group);
  /* several GPUs without NCCL still train, at two copies of the gradients per step */
  if (st == KILN_BERT_OK && kiln_rt_device_kind(r->dev) == KILN_RT_DEVICE_CUDA && o->notes &&
      strcmp(kiln_bert_replicas_path(r->group), "host") == 0)
    fprintf(o->notes,
            "kiln-bert: note: --replicas %d: the gradients are all-reduced through host memory "
            "(NCCL could not be loaded: libnccl.so.2, or the file KILN_NCCL_LIBRARY names)\n",
            nrep);
  return st;
}

/* The rows of shard g of a step's `count` samples, and where it starts (from r->order + the
 * step's first sample). */
static size_t shard_of(const Run *r, const KilnBertTrainOptions *o, size_t count, int g,
                       size_t *off) {
  size_t rows;
  kiln_bert_replicas_shard(count, r->nrep * accumulate_of(o), g, off, &rows);
  return rows;
}

/* Replica i's micro-batch j: the forward and backward over shard i A + j of the step's `count`
 * samples (from r->order + first), queued on its stream: *tokens tokens, *real of them the
 * samples' own (the rest padding); nothing when the shard is empty (an epoch's last batch may
 * have fewer samples than there are shards). */
static KilnBertStatus micro_launch(Run *r, const KilnBertTrainOptions *o, int i, int j,
                                   size_t first, size_t count, uint64_t seed, int64_t step,
                                   size_t *tokens, size_t *real) {
  Replica *p = &r->rep[i];
  int g = i * accumulate_of(o) + j;
  size_t off, rows = shard_of(r, o, count, g, &off);
  *tokens = *real = 0;
  if (rows == 0) return KILN_BERT_OK;
  KilnBertStatus st = kiln_bert_batch_fill(r->tok, &r->enc, r->order + first + off, rows,
                                           o->seq_len, o->padding, &p->batch);
  if (st != KILN_BERT_OK) return st;
  kiln_bert_batch_lens(&p->batch, p->lens);
  *tokens = p->batch.rows * p->batch.cols;
  for (size_t k = 0; k < p->batch.rows; k++) *real += (size_t)p->lens[k];
  /* fresh masks each step, a function of (seed, global step): a rerun, and a resumed run,
   * draw the same ones */
  st = kiln_bert_model_set_dropout(p->model, dropout_p(o, &r->cfg), shard_seed(seed, g), step);
  if (st == KILN_BERT_OK)
    st = kiln_bert_model_train_launch(p->model, p->batch.ids, p->lens, p->batch.labels,
                                      (int)p->batch.rows, (int)p->batch.cols);
  return st;
}

/* After replica i's micro-batch j (which ran rows): its gradients into the stash, or, after
 * the replica's last non-empty micro-batch, the stash into them. Shards shrink with their
 * index, so a replica's non-empty micro-batches come first. */
static KilnBertStatus micro_done(Run *r, const KilnBertTrainOptions *o, int i, int j,
                                 size_t count) {
  int A = accumulate_of(o), last = j == A - 1;
  size_t off;
  if (!last && shard_of(r, o, count, i * A + j + 1, &off) == 0) last = 1;
  if (A == 1 || (last && j == 0)) return KILN_BERT_OK; /* one micro-batch: nothing to sum */
  KilnBertModel *m = r->rep[i].model;
  return last ? kiln_bert_model_add_stash(m) : kiln_bert_model_stash_grads(m, j == 0);
}

/* --eval-every: the evaluation after `step` steps, on replica 0 (the copies are equal) in
 * batches of the rows it is planned for, dropout off (the pass turns it off; the next step sets
 * it again): a {"eval_step": ...} record in the log (the contract's step records alone carry
 * "step" and "loss") and a line under the progress bar. */
static KilnBertStatus periodic_eval(Run *r, const KilnBertTrainOptions *o,
                                    const KilnBertTrainState *ts) {
  size_t step = ts->step;
  KilnBertMetrics em = {0};
  KilnBertStatus st = kiln_bert_eval_pass(r->model, r->tok, &r->eval_enc, (size_t)shard_rows(o),
                                          o->seq_len, o->padding, NULL, NULL, &em);
  int saved = 0;
  if (st == KILN_BERT_OK) st = save_best(r, o, ts, &em, &saved);
  if (st != KILN_BERT_OK) return st;
  if (r->log) {
    char lbuf[32] = "null";
    if (isfinite(em.eval_loss)) snprintf(lbuf, sizeof lbuf, "%.9g", em.eval_loss);
    fprintf(r->log,
            "{\"eval_step\": %zu, \"eval_loss\": %s, \"accuracy\": %.9g, \"eval_samples\": %zu, "
            "\"eval_time\": %.6f%s}\n",
            step, lbuf, em.accuracy, em.eval_samples, em.total_time,
            !o->save_best ? ""
            : saved       ? ", \"saved_best\": true"
                          : ", \"saved_best\": false");
  }
  if (o->progress) {
    fprintf(o->progress, "\nstep %zu: eval_loss %.6f, accuracy %.2f %% (%zu samples)\n", step,
            em.eval_loss, 100 * em.accuracy, em.eval_samples);
    fflush(o->progress);
  }
  return KILN_BERT_OK;
}

/* One optimizer step of the run: every replica's micro-batches in turn (each micro-batch's
 * passes queued on all replicas before any loss is read, so that replicas on several GPUs run
 * side by side), the sums of their gradients, the all-reduce, and every replica's AdamW step
 * (which reduces in the first). Every backward takes the mean over the whole step's samples,
 * so the sum over micro-batches and replicas is the batch's gradient. *loss is the batch's
 * mean loss (the shards' weighted by their rows), *norm the gradient norm, *tokens the batch's
 * tokens and *real the samples' own among them. */
static KilnBertStatus train_step(Run *r, const KilnBertTrainOptions *o, const KilnBertOptim *opt,
                                 KilnBertTrainState *ts, size_t first, size_t count, size_t k,
                                 double lr, float *loss, double *norm, size_t *tokens,
                                 size_t *real) {
  size_t rows[KILN_BERT_MAX_REPLICAS], off;
  int A = accumulate_of(o);
  double sum = 0;
  *tokens = *real = 0;
  for (int i = 0; i < r->nrep; i++) {
    rows[i] = 0;
    for (int j = 0; j < A; j++) rows[i] += shard_of(r, o, count, i * A + j, &off);
  }
  if (r->group) {
    KilnBertStatus st = kiln_bert_replicas_begin_step(r->group, rows);
    if (st != KILN_BERT_OK) return st;
  } else if (A > 1) {
    KilnBertStatus st = kiln_bert_model_set_loss_rows(r->model, (int)count);
    if (st != KILN_BERT_OK) return st;
  }
  for (int j = 0; j < A; j++) {
    for (int i = 0; i < r->nrep; i++) {
      size_t t, re;
      KilnBertStatus st = micro_launch(r, o, i, j, first, count, ts->seed, (int64_t)k + 1, &t, &re);
      if (st != KILN_BERT_OK) return st;
      *tokens += t;
      *real += re;
    }
    for (int i = 0; i < r->nrep; i++) {
      size_t mrows = shard_of(r, o, count, i * A + j, &off);
      if (mrows == 0) continue;
      float l = 0;
      KilnBertStatus st = kiln_bert_model_train_loss(r->rep[i].model, &l);
      if (st == KILN_BERT_OK) st = micro_done(r, o, i, j, count);
      if (st != KILN_BERT_OK) return st;
      sum += (double)mrows / (double)count * (double)l;
    }
  }
  *loss = (float)sum;
  for (int i = 0; i < r->nrep; i++) {
    KilnBertStatus st =
        kiln_bert_model_step(r->rep[i].model, opt, lr, (int)ts->adam_step + 1, i ? NULL : norm);
    if (st != KILN_BERT_OK) return st;
  }
  return KILN_BERT_OK;
}

#if !defined(KILN_BERT_EMU_BUILD) && !defined(KILN_BERT_CUDA_BUILD)
/* kiln_bert_train of the device copies. */
KilnBertStatus kiln_bert_emu_train(const KilnBertTrainOptions *o);
KilnBertStatus kiln_bert_cuda_train(const KilnBertTrainOptions *o);
#endif

KilnBertStatus kiln_bert_train(const KilnBertTrainOptions *o) {
#if defined(KILN_BERT_HAVE_EMU) && !defined(KILN_BERT_EMU_BUILD) && !defined(KILN_BERT_CUDA_BUILD)
  if (o->device && !strcmp(o->device, "emu")) return kiln_bert_emu_train(o);
#endif
#if defined(KILN_BERT_HAVE_CUDA) && !defined(KILN_BERT_EMU_BUILD) && !defined(KILN_BERT_CUDA_BUILD)
  if (o->device && kiln_bert_device_is(o->device, "cuda")) return kiln_bert_cuda_train(o);
#endif
  Run r = {0};
  KilnBertTrainState ts;
  kiln_bert_train_state_init(&ts, o->seed, 0, o->batch);
  KilnBertPrecision prec = KILN_BERT_FP32;
  /* a checkpoint is checked whole before any of it is used */
  KilnBertStatus st = o->resume ? kiln_bert_ckpt_read_state(o->resume, &ts) : KILN_BERT_OK;
  if (st == KILN_BERT_OK) st = load_config(&r, o);
  if (st == KILN_BERT_OK) st = check_options(o, &r.cfg, &prec);
  /* a batch that cannot fit fails here, before the weights are read or anything is written */
  if (st == KILN_BERT_OK) st = check_replica_memory(&r, o, prec);
  if (st == KILN_BERT_OK) st = load_weights(&r, o);
  char vpath[4096];
  if (st == KILN_BERT_OK) {
    if (o->vocab)
      snprintf(vpath, sizeof vpath, "%s", o->vocab);
    else if (is_dir(model_source(o)))
      snprintf(vpath, sizeof vpath, "%s/vocab.txt", model_source(o));
    else
      st = kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--vocab FILE is required with "
                          "--model %s",
                          o->model);
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
  if (st == KILN_BERT_OK) st = load_eval_data(&r, o);
  if (st == KILN_BERT_OK && o->eval_every && r.eval_enc.n == 0)
    st = kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                        "--eval-every %zu: no data to evaluate on (--eval-data PATH, or an "
                        "aclImdb --data with a test/ split)",
                        o->eval_every);
  if (st == KILN_BERT_OK && o->save_best && r.eval_enc.n == 0)
    st = kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                        "--save-best %s: no data to evaluate on (--eval-data PATH, or an "
                        "aclImdb --data with a test/ split)",
                        o->save_best);
  if (st == KILN_BERT_OK && !o->resume) ts.samples = r.enc.n;
  if (st == KILN_BERT_OK) {
    r.order = calloc(r.enc.n, sizeof *r.order);
    if (!r.order) st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  if (st == KILN_BERT_OK) st = create_replicas(&r, o, prec);
  size_t total = kiln_bert_total_steps(r.enc.n, o->batch, o->epochs, o->steps);
  if (st == KILN_BERT_OK && o->resume) st = resume_state(&r, o, total, &ts);
  /* the run's own state records no evaluation (a resumed --save-best checkpoint's is its) */
  ts.eval = (KilnBertEvalRecord){0};
  if (st == KILN_BERT_OK && o->resume && o->save_best) st = load_best(&r, o);
  /* the loss scaler goes on from the checkpoint; a fresh run takes the model's start (2^16 in
   * fp16, 1 otherwise) */
  if (st == KILN_BERT_OK && o->resume)
    for (int i = 0; i < r.nrep; i++) *kiln_bert_model_scaler(r.rep[i].model) = ts.scaler;
  else if (st == KILN_BERT_OK)
    ts.scaler = *kiln_bert_model_scaler(r.model);
  if (st == KILN_BERT_OK) st = attach_tap(&r, prec, o->profile);
  if (st == KILN_BERT_OK) st = choose_graphs(&r, o);
  if (st == KILN_BERT_OK && o->log && !(r.log = fopen(o->log, "w")))
    st = kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", o->log, strerror(errno));
  if (st != KILN_BERT_OK) {
    run_free(&r);
    return st;
  }

  KilnBertOptim opt = {o->beta1, o->beta2, o->eps, o->weight_decay, o->clip};
  KilnBertMetrics mt = {0};
  size_t cur_epoch = (size_t)-1;
  double t0 = now(), last_loss = NAN, save_time = 0, eval_time = 0;
  size_t end = o->stop_after && o->stop_after < total ? o->stop_after : total;
  size_t first_step = ts.step;
  for (size_t k = ts.step; k < end && st == KILN_BERT_OK; k++) {
    /* --profile times the steps after this process's first (which may do one-time work) */
    if (r.profile && (st = kiln_bert_profile_step_begin(r.profile, k > first_step)) != KILN_BERT_OK)
      break;
    double tstart = now();
    size_t epoch, first, count;
    kiln_bert_step_slice(r.enc.n, o->batch, k, &epoch, &first, &count);
    if (epoch != cur_epoch) {
      kiln_bert_epoch_order(r.enc.n, o->shuffle, ts.seed, epoch, r.order);
      if (o->group_by_length && (st = kiln_bert_group_by_length(&r.enc, o->batch, ts.seed, epoch,
                                                                r.order)) != KILN_BERT_OK)
        break;
      cur_epoch = epoch;
    }
    float loss = 0;
    double norm = 0, lr = o->lr * kiln_bert_lr_factor(o->schedule, k, o->warmup, total);
    /* the scale this step's backward uses (the step may change it) */
    double scale = kiln_bert_model_scaler(r.model)->scale;
    size_t tokens = 0, real = 0;
    st = train_step(&r, o, &opt, &ts, first, count, k, lr, &loss, &norm, &tokens, &real);
    if (st != KILN_BERT_OK) break;
    /* AdamW's step count: a step skipped for an fp16 overflow does not advance it (contract 5) */
    int skipped = kiln_bert_model_skipped(r.model);
    ts.adam_step += !skipped;
    ts.step = k + 1;
    ts.scaler = *kiln_bert_model_scaler(r.model);
    double step_time = now() - tstart;
    kiln_bert_metrics_step(&mt, step_time, count, tokens, real);
    /* the launch times are read after the step's time is taken: the reading is not in it */
    if (r.profile && (st = kiln_bert_profile_step_end(r.profile, step_time)) != KILN_BERT_OK) break;
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
    if (o->save && o->save_every && ts.step % o->save_every == 0 && ts.step < end) {
      /* a periodic checkpoint (the last one is the final --save); not training time */
      double ss = now();
      st = save_checkpoint(&r, o->save, &ts);
      save_time += now() - ss;
    }
    if (st == KILN_BERT_OK && o->eval_every && ts.step % o->eval_every == 0 && ts.step < end) {
      /* a periodic evaluation (the last one is the summary's); not training time */
      double es = now();
      st = periodic_eval(&r, o, &ts);
      eval_time += now() - es;
    }
  }
  mt.total_time = now() - t0 - save_time - eval_time;
  /* the copies trained one model: replica 0's evaluation and checkpoint are the run's */
  if (st == KILN_BERT_OK && r.group) st = kiln_bert_replicas_check_same(r.group);
  if (st == KILN_BERT_OK && r.eval_enc.n > 0) {
    KilnBertMetrics em = {0};
    /* dropout off: the pass turns it off itself */
    /* on replica 0, in batches of the rows it is planned for */
    st = kiln_bert_eval_pass(r.model, r.tok, &r.eval_enc, (size_t)shard_rows(o), o->seq_len,
                             o->padding, NULL, NULL, &em);
    mt.has_eval = em.has_eval;
    mt.eval_loss = em.eval_loss;
    mt.accuracy = em.accuracy;
    mt.eval_samples = em.eval_samples;
    mt.eval_time = em.total_time;
    int saved = 0;
    if (st == KILN_BERT_OK) st = save_best(&r, o, &ts, &em, &saved);
  }
  if (st == KILN_BERT_OK && r.log && r.best.has)
    fprintf(r.log, "{\"best_step\": %zu, \"best_eval_loss\": %.9g, \"best_accuracy\": %.9g}\n",
            r.best.step, r.best.loss, r.best.accuracy);
  KilnRtMemStats ms;
  if (st == KILN_BERT_OK && kiln_rt_mem_stats(r.dev, &ms) == KILN_RT_OK)
    mt.peak_device_bytes = ms.peak_bytes_in_use;
  if (st == KILN_BERT_OK && r.log) kiln_bert_metrics_json(&mt, r.log);
  if (st == KILN_BERT_OK && o->table) summary_table(o, &mt, last_loss);
  if (st == KILN_BERT_OK && r.profile) {
    int ncalls = 0;
    const KilnBertCall *calls = kiln_bert_plan_calls(r.launches, &ncalls);
    kiln_bert_profile_write(r.profile, calls, ncalls, o->table, r.log);
    if (o->table) fflush(o->table);
  }
  if (st == KILN_BERT_OK && r.log && (fflush(r.log) != 0 || ferror(r.log)))
    st = kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", o->log, strerror(errno));
  if (st == KILN_BERT_OK && o->save) st = save_checkpoint(&r, o->save, &ts);
  report_graphs(&r);
  run_free(&r);
  return st;
}
