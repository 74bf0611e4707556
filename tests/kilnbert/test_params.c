/* test_params.c — the parameter layout (names, shapes and count of BertForSequenceClassification:
 * bert-base with 2 labels has 109,483,778), weight-decay flags as the contract's rule says,
 * aligned offsets, initialization, and loading from safetensors: a save/load round trip, the
 * aliases of older checkpoints (no "bert." prefix, LayerNorm gamma/beta), a checkpoint without
 * classifier, a wrong shape. Usage: test_params SCRATCH_DIR */
#include "bert_params.h"
#include "check.h"
#include "scratch_dir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_layout(void) {
  KilnBertConfig c;
  KilnBertParams ps;
  kiln_bert_config_preset("base", &c);
  CHECK(kiln_bert_params_layout(&c, &ps) == KILN_BERT_OK, "layout");
  size_t total = 0;
  for (size_t i = 0; i < ps.n; i++) total += ps.p[i].numel;
  CHECK(ps.n == 5 + 12 * 16 + 4, "%zu parameters", ps.n);
  CHECK(total == 109483778, "bert-base classifier has %zu floats", total);
  const KilnBertParam *p =
      kiln_bert_params_find(&ps, "bert.encoder.layer.11.intermediate.dense.weight");
  CHECK(p && p->ndim == 2 && p->shape[0] == 3072 && p->shape[1] == 768 && p->decay,
        "intermediate weight [3072, 768], decayed");
  p = kiln_bert_params_find(&ps, "bert.encoder.layer.0.attention.output.LayerNorm.weight");
  CHECK(p && p->ndim == 1 && p->shape[0] == 768 && !p->decay && p->init == KILN_BERT_INIT_ONE,
        "LayerNorm weight: no decay, ones");
  p = kiln_bert_params_find(&ps, "bert.embeddings.word_embeddings.weight");
  CHECK(p && p->decay && p->offset == 0, "embeddings decayed");
  p = kiln_bert_params_find(&ps, "classifier.bias");
  CHECK(p && !p->decay && p->shape[0] == 2 && p == &ps.p[ps.n - 1], "classifier bias last");
  /* every decayed parameter before every other (AdamW's two launches), each range in list
   * order; aligned; no two overlap; all within total */
  int ok = 1;
  size_t decay_end = 0, first_rest = ps.total;
  for (size_t i = 0; i < ps.n; i++) {
    const KilnBertParam *q = &ps.p[i];
    ok &= q->offset % KILN_BERT_PARAM_ALIGN == 0 && q->offset + q->numel <= ps.total;
    if (q->decay && q->offset + q->numel > decay_end) decay_end = q->offset + q->numel;
    if (!q->decay && q->offset < first_rest) first_rest = q->offset;
    for (size_t j = 0; j < i; j++) {
      const KilnBertParam *r = &ps.p[j];
      if (r->decay == q->decay)
        ok &= q->offset >= r->offset + r->numel;
      else
        ok &= q->offset + q->numel <= r->offset || r->offset + r->numel <= q->offset;
    }
  }
  CHECK(ok && ps.total >= total, "aligned, each decay range in list order, no overlap");
  CHECK(decay_end <= first_rest, "decayed parameters first (%zu floats), then the rest (from %zu)",
        decay_end, first_rest);
  kiln_bert_params_free(&ps);
}

/* A small model: 1 layer, hidden 4, 2 heads, FFN 8, 10 tokens, 8 positions, 3 labels. */
static void small_config(KilnBertConfig *c) {
  kiln_bert_config_defaults(c);
  c->vocab_size = 10;
  c->max_position_embeddings = 8;
  c->hidden_size = 4;
  c->num_attention_heads = 2;
  c->intermediate_size = 8;
  c->num_hidden_layers = 1;
  c->num_labels = 3;
}

static void test_init(void) {
  KilnBertConfig c;
  KilnBertParams ps;
  kiln_bert_config_preset("tiny", &c);
  kiln_bert_params_layout(&c, &ps);
  float *a = calloc(ps.total, sizeof *a), *b = calloc(ps.total, sizeof *b);
  kiln_bert_params_init(&ps, &c, 42, NULL, a);
  kiln_bert_params_init(&ps, &c, 42, NULL, b);
  CHECK(!memcmp(a, b, ps.total * sizeof *a), "same seed, same weights");
  const KilnBertParam *w = kiln_bert_params_find(&ps, "bert.embeddings.word_embeddings.weight");
  double sum = 0, sq = 0;
  for (size_t k = 0; k < w->numel; k++) {
    sum += a[w->offset + k];
    sq += (double)a[w->offset + k] * a[w->offset + k];
  }
  double mean = sum / (double)w->numel, sd = sqrt(sq / (double)w->numel - mean * mean);
  CHECK(fabs(mean) < 1e-3 && fabs(sd - 0.02) < 0.001, "normal(0, 0.02): mean %g sd %g", mean, sd);
  int pad_zero = 1;
  for (int k = 0; k < 128; k++) pad_zero &= a[w->offset + k] == 0;
  CHECK(pad_zero, "the [PAD] row is zero");
  const KilnBertParam *ln = kiln_bert_params_find(&ps, "bert.embeddings.LayerNorm.weight");
  const KilnBertParam *bias = kiln_bert_params_find(&ps, "bert.pooler.dense.bias");
  CHECK(a[ln->offset] == 1 && a[ln->offset + 127] == 1 && a[bias->offset] == 0, "ones and zeros");
  /* `only` leaves the flagged parameters alone */
  unsigned char *only = calloc(ps.n, 1);
  memset(only, 1, ps.n);
  only[ps.n - 2] = 0; /* classifier.weight */
  memset(b, 0, ps.total * sizeof *b);
  kiln_bert_params_init(&ps, &c, 42, only, b);
  const KilnBertParam *cw = &ps.p[ps.n - 2];
  CHECK(b[w->offset + 200] == 0 && !memcmp(b + cw->offset, a + cw->offset, cw->numel * sizeof *b),
        "only the classifier initialized, with the same values");
  free(only);
  free(a);
  free(b);
  kiln_bert_params_free(&ps);
}

static void test_load(const char *dir) {
  KilnBertConfig c;
  KilnBertParams ps;
  small_config(&c);
  CHECK(kiln_bert_params_layout(&c, &ps) == KILN_BERT_OK, "layout");
  float *w = calloc(ps.total, sizeof *w), *r = calloc(ps.total, sizeof *r);
  kiln_bert_params_init(&ps, &c, 7, NULL, w);
  unsigned char *loaded = calloc(ps.n, 1);
  char path[4200];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);

  /* round trip */
  CHECK(kiln_bert_params_save(&ps, w, path) == KILN_BERT_OK, "save: %s", kiln_bert_last_error());
  KilnBertSt *st = NULL;
  CHECK(kiln_bert_st_open(path, &st) == KILN_BERT_OK, "open");
  if (st) {
    CHECK(kiln_bert_params_load(&ps, st, r, loaded) == KILN_BERT_OK, "%s", kiln_bert_last_error());
    int all = 1, same = 1;
    for (size_t i = 0; i < ps.n; i++) {
      all &= loaded[i];
      same &= !memcmp(w + ps.p[i].offset, r + ps.p[i].offset, ps.p[i].numel * sizeof *w);
    }
    CHECK(all && same, "every parameter back, bit for bit");
  }
  kiln_bert_st_close(st);

  /* an older pretrained checkpoint: bare names, gamma/beta, no classifier, extra heads */
  KilnBertStEntry *e = calloc(ps.n + 1, sizeof *e);
  char(*names)[160] = calloc(ps.n + 1, sizeof *names);
  size_t ne = 0;
  for (size_t i = 0; i < ps.n; i++) {
    const KilnBertParam *p = &ps.p[i];
    if (!strncmp(p->name, "classifier", 10)) continue;
    snprintf(names[ne], sizeof names[ne], "%s", p->name + 5);
    char *ln = strstr(names[ne], "LayerNorm.");
    if (ln) strcpy(ln + 10, !strcmp(ln + 10, "weight") ? "gamma" : "beta");
    e[ne] = (KilnBertStEntry){names[ne], w + p->offset, p->ndim, {p->shape[0], p->shape[1]}};
    ne++;
  }
  float extra[10] = {0};
  e[ne++] = (KilnBertStEntry){"cls.predictions.bias", extra, 1, {10}};
  CHECK(kiln_bert_st_write(path, e, ne) == KILN_BERT_OK, "write old checkpoint");
  memset(r, 0, ps.total * sizeof *r);
  st = NULL;
  CHECK(kiln_bert_st_open(path, &st) == KILN_BERT_OK, "open old");
  if (st) {
    CHECK(kiln_bert_params_load(&ps, st, r, loaded) == KILN_BERT_OK, "%s", kiln_bert_last_error());
    int ok = 1;
    for (size_t i = 0; i < ps.n; i++) {
      int cls = !strncmp(ps.p[i].name, "classifier", 10);
      ok &= loaded[i] == !cls;
      if (!cls) ok &= !memcmp(w + ps.p[i].offset, r + ps.p[i].offset, ps.p[i].numel * sizeof *w);
    }
    CHECK(ok, "aliases found, classifier reported missing");
  }
  kiln_bert_st_close(st);

  /* a tensor of the wrong shape is named */
  e[0].shape[0] = 11; /* word embeddings: 11 x 4 floats */
  float big[44] = {0};
  e[0].data = big;
  CHECK(kiln_bert_st_write(path, e, 1) == KILN_BERT_OK, "write bad");
  st = NULL;
  CHECK(kiln_bert_st_open(path, &st) == KILN_BERT_OK, "open bad");
  if (st)
    CHECK(kiln_bert_params_load(&ps, st, r, loaded) == KILN_BERT_ERROR_FORMAT &&
              strstr(kiln_bert_last_error(), "embeddings.word_embeddings.weight") &&
              strstr(kiln_bert_last_error(), "[11, 4]"),
          "wrong shape: %s", kiln_bert_last_error());
  kiln_bert_st_close(st);
  unlink(path);
  free(names);
  free(e);
  free(loaded);
  free(w);
  free(r);
  kiln_bert_params_free(&ps);
}

int main(int argc, char **argv) {
  int rc = kb_test_scratch_dir(argc, argv);
  if (rc) return rc;
  test_layout();
  test_init();
  test_load(argv[1]);
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
