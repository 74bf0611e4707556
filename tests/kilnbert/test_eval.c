/* test_eval.c — kiln_bert_eval (what `kiln-bert eval` runs) on a small BERT (2 layers, hidden
 * 32, 2 heads of 16, FFN 64, the test vocabulary) saved as a model directory, over an 11-line
 * TSV in batches of 4 (the last one partial):
 * - the --dump-logits lines are, bit for bit, the logits kiln_bert_model_forward gives for the
 *   same rows (%.9g round-trips an f32), one line per sample, in data order;
 * - each sample's cross-entropy from the dumped logits matches the double-precision reference
 *   (model_ref.c) within 2e-5 relative (the tolerance test_model.c derives for the loss of this
 *   model), and so does eval_loss, their mean; accuracy is the share of dumped rows whose
 *   larger logit is the label's, exactly; the summary record in --log carries both;
 * - with dynamic padding the logits are the same within 1e-5 (contract 3.7), and in data order
 *   although the pass then takes the samples longest first (the texts differ in length);
 * - bad input is refused with a message naming it, and a failed run leaves an existing dump
 *   file as it was: a model directory without model.safetensors, a checkpoint without the
 *   classifier, a data root without a test/ split, more tokens than the model's vocabulary. */
#include "bert_eval.h"
#include "bert_params.h"
#include "bert_st.h"
#include "bert_tok.h"
#include "bert_vocab.h"
#include "check.h"
#include "model_ref.h"
#include "small_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BATCH 4
#define SEQ   16
#define NS    11

static const char *const texts[NS] = {"the movie was great ! i love it",
                                      "naive walk",
                                      "cafe , max ¿ que ?",
                                      "hello world",
                                      "a b a b a b a b a b a b a b a b a b a b",
                                      "unwanted wanted",
                                      "istanbul resume 5 10",
                                      "i want it",
                                      "the the the movie",
                                      "love walking",
                                      "max maxx — …"};
static const int labels[NS] = {1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0};

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  CHECK(f != NULL, "cannot write %s", path);
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return buf;
}

/* Reads NS lines of two floats each from path into out; returns the lines read. */
static int read_dump(const char *path, float out[NS][2]) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int n = 0;
  float a, b;
  while (n < NS + 1 && fscanf(f, "%g %g", &a, &b) == 2) {
    if (n < NS) out[n][0] = a, out[n][1] = b;
    n++;
  }
  fclose(f);
  return n;
}

/* The model's own forward over the same batches: logits per sample into out. */
static void forward_logits(const KilnBertConfig *cfg, const float *flat, const char *vocab_path,
                           const KilnBertDataset *ds, float out[NS][2], int32_t ids[NS][SEQ],
                           int32_t lens[NS]) {
  KilnRtDevice *dev = NULL;
  KilnBertModel *m = NULL;
  KilnBertVocab *v = NULL;
  KilnBertTokenizer *tok = NULL;
  KilnBertEncoded enc = {0};
  KilnBertBatch b = {0};
  size_t order[NS];
  for (size_t i = 0; i < NS; i++) order[i] = i;
  KilnBertStatus st =
      kiln_rt_device_create("cpu", &dev) == KILN_RT_OK ? KILN_BERT_OK : KILN_BERT_ERROR_DEVICE;
  if (st == KILN_BERT_OK) st = kiln_bert_model_create(dev, cfg, BATCH, SEQ, &m);
  if (st == KILN_BERT_OK) st = kiln_bert_model_set_params(m, flat);
  if (st == KILN_BERT_OK) st = kiln_bert_vocab_load(vocab_path, &v);
  if (st == KILN_BERT_OK) st = kiln_bert_tok_create(v, &tok);
  if (st == KILN_BERT_OK) st = kiln_bert_encode_dataset(tok, ds, SEQ, &enc);
  for (size_t first = 0; st == KILN_BERT_OK && first < NS; first += BATCH) {
    size_t count = NS - first < BATCH ? NS - first : BATCH;
    st = kiln_bert_batch_fill(tok, &enc, order + first, count, SEQ, KILN_BERT_PAD_FIXED, &b);
    if (st != KILN_BERT_OK) break;
    kiln_bert_batch_lens(&b, lens + first);
    memcpy(ids[first], b.ids, count * SEQ * sizeof(int32_t));
    float loss, logits[BATCH * 2];
    st = kiln_bert_model_forward(m, b.ids, lens + first, b.labels, (int)count, SEQ, &loss, logits);
    for (size_t r = 0; st == KILN_BERT_OK && r < count; r++)
      out[first + r][0] = logits[2 * r], out[first + r][1] = logits[2 * r + 1];
  }
  CHECK(st == KILN_BERT_OK, "the model's own forward: %s", kiln_bert_last_error());
  kiln_bert_batch_free(&b);
  kiln_bert_encoded_free(&enc);
  kiln_bert_tok_destroy(tok);
  kiln_bert_vocab_destroy(v);
  kiln_bert_model_destroy(m);
  if (dev) kiln_rt_device_destroy(dev);
}

static double xent(const float *l, int label) {
  double a = l[0], b = l[1], mx = fmax(a, b);
  return mx + log(exp(a - mx) + exp(b - mx)) - (label ? b : a);
}

/* Runs eval with the given model dir, data and dump; returns its status. */
static KilnBertStatus run_eval(const char *model, const char *data, const char *vocab,
                               const char *dump, const char *log, KilnBertPadding padding,
                               KilnBertMetrics *mt) {
  KilnBertEvalOptions o;
  kiln_bert_eval_defaults(&o);
  o.model = model;
  o.data = data;
  o.vocab = vocab;
  o.dump_logits = dump;
  o.log = log;
  o.batch = BATCH;
  o.seq_len = SEQ;
  o.padding = padding;
  return kiln_bert_eval(&o, mt);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_eval SCRATCH_DIR VOCAB\n");
    return 2;
  }
  const char *dir = argv[1], *vocab = argv[2];
  char model[1024], path[4096], data[1024], dump[1024], dump2[1024], logp[1024];
  mkdir(dir, 0777);
  snprintf(model, sizeof model, "%s/model", dir);
  mkdir(model, 0777);

  /* the model directory: config and weights (10x BERT's init, so logits differ per sample) */
  KilnBertConfig cfg;
  kb_test_small_config(&cfg, 66);
  KilnBertParams lay;
  CHECK(kiln_bert_params_layout(&cfg, &lay) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  float *flat = calloc(lay.total, sizeof *flat);
  double *pd = calloc(lay.total, sizeof *pd), *gd = calloc(lay.total, sizeof *gd);
  kiln_bert_params_init(&lay, &cfg, 7, NULL, flat);
  for (size_t k = 0; k < lay.n; k++)
    if (lay.p[k].init == KILN_BERT_INIT_NORMAL)
      for (size_t i = 0; i < lay.p[k].numel; i++) flat[lay.p[k].offset + i] *= 10;
  for (size_t i = 0; i < lay.total; i++) pd[i] = flat[i];
  snprintf(path, sizeof path, "%s/config.json", model);
  CHECK(kiln_bert_config_save(path, &cfg) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  snprintf(path, sizeof path, "%s/model.safetensors", model);
  CHECK(kiln_bert_params_save(&lay, flat, path) == KILN_BERT_OK, "%s", kiln_bert_last_error());

  /* the data */
  snprintf(data, sizeof data, "%s/data.tsv", dir);
  FILE *f = fopen(data, "w");
  for (int i = 0; f && i < NS; i++) fprintf(f, "%s\t%d\n", texts[i], labels[i]);
  if (f) fclose(f);
  KilnBertDataset ds = {0};
  CHECK(kiln_bert_data_load(data, "test", 2, 0, &ds) == KILN_BERT_OK && ds.n == NS, "data: %s",
        kiln_bert_last_error());

  /* eval, then the same rows through the model's forward and the reference */
  snprintf(dump, sizeof dump, "%s/logits.txt", dir);
  snprintf(logp, sizeof logp, "%s/eval.jsonl", dir);
  KilnBertMetrics mt = {0};
  KilnBertStatus st = run_eval(model, data, vocab, dump, logp, KILN_BERT_PAD_FIXED, &mt);
  CHECK(st == KILN_BERT_OK, "eval: %s", kiln_bert_last_error());
  float got[NS][2] = {{0}}, want[NS][2] = {{0}};
  int32_t ids[NS][SEQ] = {{0}}, lens[NS] = {0};
  CHECK(read_dump(dump, got) == NS, "%s: not %d lines of two logits", dump, NS);
  forward_logits(&cfg, flat, vocab, &ds, want, ids, lens);
  int same = 1, correct = 0;
  double ce_sum = 0, worst = 0;
  for (int i = 0; i < NS; i++) {
    same &= memcmp(got[i], want[i], sizeof got[i]) == 0;
    correct += (got[i][1] > got[i][0]) == (labels[i] == 1) && got[i][0] != got[i][1];
    int32_t lab = labels[i];
    double ref = model_ref_loss_grad(&cfg, &lay, pd, ids[i], &lens[i], &lab, 1, SEQ, gd);
    double ce = xent(got[i], labels[i]);
    worst = fmax(worst, fabs(ce - ref) / fmax(1, fabs(ref)));
    CHECK(fabs(ce - ref) <= 2e-5 * fmax(1, fabs(ref)),
          "sample %d: cross-entropy %.9g from the "
          "dumped logits, reference %.9g",
          i, ce, ref);
    ce_sum += ref;
  }
  printf("eval_loss %.9g, reference %.9g; accuracy %.4f (%d of %d); worst relative error of a "
         "sample's cross-entropy %.3g\n",
         mt.eval_loss, ce_sum / NS, mt.accuracy, correct, NS, worst);
  CHECK(same, "the dumped logits are not the forward's, bit for bit");
  CHECK(fabs(mt.eval_loss - ce_sum / NS) <= 2e-5 * fmax(1, ce_sum / NS),
        "eval_loss %.9g, "
        "reference %.9g",
        mt.eval_loss, ce_sum / NS);
  CHECK(mt.accuracy == (double)correct / NS, "accuracy %.9g, the dump says %d of %d", mt.accuracy,
        correct, NS);
  CHECK(correct > 0 && correct < NS,
        "a test whose samples are all right or all wrong (%d) "
        "cannot tell argmax from its negation",
        correct);
  CHECK(mt.has_eval && mt.eval_samples == NS && mt.steps == 3 && mt.samples == NS,
        "metrics: %zu samples in %zu steps", mt.eval_samples, mt.steps);
  char *rec = read_text(logp);
  CHECK(rec && strstr(rec, "\"summary\": true") && strstr(rec, "\"eval_loss\": 0.") &&
            strstr(rec, "\"accuracy\": ") && strstr(rec, "\"peak_device_bytes\": ") &&
            strchr(rec, '\n') == rec + strlen(rec) - 1,
        "--log holds one summary record: %s", rec ? rec : "(none)");

  /* dynamic padding: the same logits within f32 noise */
  snprintf(dump2, sizeof dump2, "%s/logits-dynamic.txt", dir);
  CHECK(run_eval(model, data, vocab, dump2, NULL, KILN_BERT_PAD_DYNAMIC, NULL) == KILN_BERT_OK,
        "dynamic: %s", kiln_bert_last_error());
  float dyn[NS][2];
  CHECK(read_dump(dump2, dyn) == NS, "%s: not %d lines", dump2, NS);
  for (int i = 0; i < NS; i++)
    for (int j = 0; j < 2; j++)
      CHECK(fabsf(dyn[i][j] - got[i][j]) <= 1e-5f * fmaxf(1, fabsf(got[i][j])),
            "sample %d logit %d: %.9g with dynamic padding, %.9g fixed", i, j, dyn[i][j],
            got[i][j]);

  /* bad input: a clear refusal, and the old dump stays as it was */
  write_text(dump, "old\n");
  char root[1024], sub[1024], nost[1024], nocls[1024];
  snprintf(root, sizeof root, "%s/imdb", dir);
  snprintf(sub, sizeof sub, "%s/imdb/train", dir);
  mkdir(root, 0777);
  mkdir(sub, 0777);
  st = run_eval(model, root, vocab, dump, NULL, KILN_BERT_PAD_FIXED, NULL);
  CHECK(st == KILN_BERT_ERROR_IO && strstr(kiln_bert_last_error(), "test/"),
        "a data root without test/: %s", kiln_bert_last_error());
  snprintf(nost, sizeof nost, "%s/no-weights", dir);
  mkdir(nost, 0777);
  snprintf(path, sizeof path, "%s/config.json", nost);
  CHECK(kiln_bert_config_save(path, &cfg) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  st = run_eval(nost, data, vocab, dump, NULL, KILN_BERT_PAD_FIXED, NULL);
  CHECK(st == KILN_BERT_ERROR_IO && strstr(kiln_bert_last_error(), "model.safetensors"),
        "a model without weights: %s", kiln_bert_last_error());
  /* a checkpoint without the classifier (a pretrained encoder): refused, naming it */
  snprintf(nocls, sizeof nocls, "%s/no-classifier", dir);
  mkdir(nocls, 0777);
  snprintf(path, sizeof path, "%s/config.json", nocls);
  CHECK(kiln_bert_config_save(path, &cfg) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  KilnBertStEntry *e = calloc(lay.n, sizeof *e);
  size_t ne = 0;
  for (size_t k = 0; k < lay.n; k++) {
    if (!strncmp(lay.p[k].name, "classifier.", 11)) continue;
    e[ne].name = lay.p[k].name;
    e[ne].data = flat + lay.p[k].offset;
    e[ne].ndim = lay.p[k].ndim;
    for (int d = 0; d < lay.p[k].ndim; d++) e[ne].shape[d] = lay.p[k].shape[d];
    ne++;
  }
  snprintf(path, sizeof path, "%s/model.safetensors", nocls);
  CHECK(kiln_bert_st_write(path, e, ne) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  st = run_eval(nocls, data, vocab, dump, NULL, KILN_BERT_PAD_FIXED, NULL);
  CHECK(st == KILN_BERT_ERROR_NOT_FOUND && strstr(kiln_bert_last_error(), "classifier.weight"),
        "a model without a classifier: %s", kiln_bert_last_error());
  /* a vocabulary larger than the model's */
  cfg.vocab_size = 60;
  snprintf(path, sizeof path, "%s/config.json", nocls);
  CHECK(kiln_bert_config_save(path, &cfg) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  st = run_eval(nocls, data, vocab, dump, NULL, KILN_BERT_PAD_FIXED, NULL);
  CHECK(st != KILN_BERT_OK, "a smaller model than the vocabulary was accepted");
  char *old = read_text(dump);
  CHECK(old && !strcmp(old, "old\n"), "a failed eval changed the dump file: %s", old);

  free(e);
  free(flat);
  free(pd);
  free(gd);
  kiln_bert_params_free(&lay);
  kiln_bert_data_free(&ds);
  if (!failures) printf("ok\n");
  return failures ? 1 : 0;
}
