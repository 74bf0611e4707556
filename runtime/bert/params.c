/* params.c — the parameter layout of BertForSequenceClassification (bert_params.h): built from
 * the config in the reference's order (but for each layer's query, key and value weights, which
 * come first and together, then their biases), loaded from safetensors with the name aliases older
 * checkpoints use, initialized with a seeded generator, saved as F32. */
#include "bert_params.h"
#include "bert_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Layout {
  KilnBertParams ps;
  size_t cap;
  int oom;
} Layout;

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !memcmp(s + n - m, suffix, m);
}

static void add(Layout *l, KilnBertInit init, int64_t d0, int64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add(Layout *l, KilnBertInit init, int64_t d0, int64_t d1, const char *fmt, ...) {
  if (l->oom || kiln_bert_grow((void **)&l->ps.p, &l->cap, l->ps.n + 1, sizeof *l->ps.p)) {
    l->oom = 1;
    return;
  }
  KilnBertParam *p = &l->ps.p[l->ps.n++];
  memset(p, 0, sizeof *p);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->name, sizeof p->name, fmt, ap);
  va_end(ap);
  p->ndim = d1 ? 2 : 1;
  p->shape[0] = d0;
  p->shape[1] = d1;
  p->numel = (size_t)d0 * (size_t)(d1 ? d1 : 1);
  p->offset = l->ps.total;
  l->ps.total +=
      (p->numel + KILN_BERT_PARAM_ALIGN - 1) / KILN_BERT_PARAM_ALIGN * KILN_BERT_PARAM_ALIGN;
  p->decay = !ends_with(p->name, "bias") && !strstr(p->name, "LayerNorm"); /* contract 5 */
  p->ordinal = l->ps.n - 1;
  p->init = init;
}

/* The offsets: every decayed parameter first, in list order, then the others, each at a
 * multiple of KILN_BERT_PARAM_ALIGN. AdamW's decay is then one flag over each of two ranges of
 * the flat buffer, so a step is two launches; in the reference's order biases, LayerNorm
 * parameters and weights alternate, eight ranges a layer (about 200 launches at BERT-large,
 * most of a few thousand parameters, each paying a launch). The fused QKV projection's weights
 * (all decayed) and biases (none) stay consecutive in their own ranges. */
static void place_by_decay(KilnBertParams *ps) {
  ps->total = 0;
  for (int decayed = 1; decayed >= 0; decayed--)
    for (size_t i = 0; i < ps->n; i++) {
      KilnBertParam *p = &ps->p[i];
      if (p->decay != decayed) continue;
      p->offset = ps->total;
      ps->total +=
          (p->numel + KILN_BERT_PARAM_ALIGN - 1) / KILN_BERT_PARAM_ALIGN * KILN_BERT_PARAM_ALIGN;
    }
}

/* Linear: weight [out, in] + bias [out]; LayerNorm: weight + bias [h]. */
static void linear(Layout *l, const char *prefix, int64_t out, int64_t in) {
  add(l, KILN_BERT_INIT_NORMAL, out, in, "%s.weight", prefix);
  add(l, KILN_BERT_INIT_ZERO, out, 0, "%s.bias", prefix);
}

static void layer_norm(Layout *l, const char *prefix, int64_t h) {
  add(l, KILN_BERT_INIT_ONE, h, 0, "%s.LayerNorm.weight", prefix);
  add(l, KILN_BERT_INIT_ZERO, h, 0, "%s.LayerNorm.bias", prefix);
}

KilnBertStatus kiln_bert_params_layout(const KilnBertConfig *c, KilnBertParams *out) {
  Layout l = {{NULL, 0, 0}, 0, 0};
  int64_t h = c->hidden_size, ffn = c->intermediate_size;
  add(&l, KILN_BERT_INIT_NORMAL, c->vocab_size, h, "bert.embeddings.word_embeddings.weight");
  add(&l, KILN_BERT_INIT_NORMAL, c->max_position_embeddings, h,
      "bert.embeddings.position_embeddings.weight");
  add(&l, KILN_BERT_INIT_NORMAL, c->type_vocab_size, h,
      "bert.embeddings.token_type_embeddings.weight");
  layer_norm(&l, "bert.embeddings", h);
  for (int i = 0; i < c->num_hidden_layers; i++) {
    char p[96], q[128];
    snprintf(p, sizeof p, "bert.encoder.layer.%d", i);
    /* the three projections' weights, then their biases: one [3h, h] matrix and one [3h]
     * vector in the flat buffer, so that the model runs Q, K and V as one product */
    static const char *const qkv[3] = {"query", "key", "value"};
    for (int k = 0; k < 3; k++)
      add(&l, KILN_BERT_INIT_NORMAL, h, h, "%s.attention.self.%s.weight", p, qkv[k]);
    for (int k = 0; k < 3; k++)
      add(&l, KILN_BERT_INIT_ZERO, h, 0, "%s.attention.self.%s.bias", p, qkv[k]);
    /* the reference's order is query.weight, query.bias, key.weight, ...: their ordinals */
    for (int k = 0; !l.oom && k < 6; k++) {
      KilnBertParam *t = &l.ps.p[l.ps.n - 6 + (size_t)k];
      t->ordinal = l.ps.n - 6 + (size_t)(k < 3 ? 2 * k : 2 * (k - 3) + 1);
    }
    snprintf(q, sizeof q, "%s.attention.output.dense", p);
    linear(&l, q, h, h);
    snprintf(q, sizeof q, "%s.attention.output", p);
    layer_norm(&l, q, h);
    snprintf(q, sizeof q, "%s.intermediate.dense", p);
    linear(&l, q, ffn, h);
    snprintf(q, sizeof q, "%s.output.dense", p);
    linear(&l, q, h, ffn);
    snprintf(q, sizeof q, "%s.output", p);
    layer_norm(&l, q, h);
  }
  linear(&l, "bert.pooler.dense", h, h);
  linear(&l, "classifier", c->num_labels, h);
  if (l.oom) {
    free(l.ps.p);
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory for the parameter list");
  }
  place_by_decay(&l.ps);
  *out = l.ps;
  return KILN_BERT_OK;
}

void kiln_bert_params_free(KilnBertParams *ps) {
  free(ps->p);
  memset(ps, 0, sizeof *ps);
}

const KilnBertParam *kiln_bert_params_find(const KilnBertParams *ps, const char *name) {
  for (size_t i = 0; i < ps->n; i++)
    if (!strcmp(ps->p[i].name, name)) return &ps->p[i];
  return NULL;
}

/* The tensor for parameter p under its name or an alias: without "bert.", and LayerNorm
 * weight/bias as gamma/beta. */
static const KilnBertStTensor *find_alias(const KilnBertSt *st, const char *name) {
  char alt[160];
  const char *bare = !strncmp(name, "bert.", 5) ? name + 5 : NULL;
  const char *tries[2] = {name, bare};
  for (int k = 0; k < 2; k++) {
    if (!tries[k]) continue;
    const KilnBertStTensor *t = kiln_bert_st_find(st, tries[k]);
    if (t) return t;
    size_t n = strlen(tries[k]);
    const char *from = ends_with(tries[k], "LayerNorm.weight") ? "weight"
                       : ends_with(tries[k], "LayerNorm.bias") ? "bias"
                                                               : NULL;
    if (!from) continue;
    snprintf(alt, sizeof alt, "%.*s%s", (int)(n - strlen(from)), tries[k],
             !strcmp(from, "weight") ? "gamma" : "beta");
    if ((t = kiln_bert_st_find(st, alt))) return t;
  }
  return NULL;
}

KilnBertStatus kiln_bert_params_load(const KilnBertParams *ps, const KilnBertSt *st, float *flat,
                                     unsigned char *loaded) {
  for (size_t i = 0; i < ps->n; i++) {
    const KilnBertParam *p = &ps->p[i];
    const KilnBertStTensor *t = find_alias(st, p->name);
    loaded[i] = t != NULL;
    if (!t) continue;
    KilnBertStatus s = kiln_bert_st_read_f32(st, t->name, p->shape, p->ndim, flat + p->offset);
    if (s != KILN_BERT_OK) return s;
  }
  return KILN_BERT_OK;
}

int kiln_bert_params_initializable(const KilnBertParam *p) {
  return !strncmp(p->name, "classifier.", 11) || !strncmp(p->name, "bert.pooler.", 12);
}

size_t kiln_bert_params_unused(const KilnBertParams *ps, const KilnBertSt *st,
                               void (*note)(void *user, const char *name), void *user) {
  /* the tensors the parameters read (through their aliases), then every other one */
  const KilnBertStTensor **used = calloc(ps->n ? ps->n : 1, sizeof *used);
  size_t unused = 0;
  for (size_t i = 0; used && i < ps->n; i++) used[i] = find_alias(st, ps->p[i].name);
  for (size_t t = 0; t < kiln_bert_st_count(st); t++) {
    const KilnBertStTensor *x = kiln_bert_st_tensor(st, t);
    int hit = 0;
    for (size_t i = 0; used && i < ps->n && !hit; i++) hit = used[i] == x;
    if (hit) continue;
    unused++;
    if (note) note(user, x->name);
  }
  free(used);
  return unused;
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* A uniform double in (0, 1]. */
static double uniform(uint64_t *s) { return ((double)(splitmix64(s) >> 11) + 1.0) * 0x1p-53; }

void kiln_bert_params_init(const KilnBertParams *ps, const KilnBertConfig *cfg, uint64_t seed,
                           const unsigned char *only, float *flat) {
  for (size_t i = 0; i < ps->n; i++) {
    if (only && only[i]) continue;
    const KilnBertParam *p = &ps->p[i];
    float *x = flat + p->offset;
    /* one stream per parameter: its values do not depend on which others are initialized */
    uint64_t s = seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(p->ordinal + 1));
    for (size_t k = 0; k < p->numel; k++) {
      if (p->init == KILN_BERT_INIT_NORMAL) {
        double u1 = uniform(&s), u2 = uniform(&s); /* Box-Muller, one value per pair */
        x[k] = (float)(cfg->initializer_range * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
      } else {
        x[k] = p->init == KILN_BERT_INIT_ONE ? 1.0f : 0.0f;
      }
    }
    if (!strcmp(p->name, "bert.embeddings.word_embeddings.weight") && cfg->pad_token_id >= 0 &&
        cfg->pad_token_id < p->shape[0])
      memset(x + (size_t)cfg->pad_token_id * (size_t)p->shape[1], 0,
             (size_t)p->shape[1] * sizeof *x);
  }
}

KilnBertStatus kiln_bert_params_save(const KilnBertParams *ps, const float *flat,
                                     const char *path) {
  KilnBertStEntry *e = calloc(ps->n ? ps->n : 1, sizeof *e);
  if (!e) return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  for (size_t i = 0; i < ps->n; i++) {
    e[i].name = ps->p[i].name;
    e[i].data = flat + ps->p[i].offset;
    e[i].ndim = ps->p[i].ndim;
    e[i].shape[0] = ps->p[i].shape[0];
    e[i].shape[1] = ps->p[i].shape[1];
  }
  KilnBertStatus st = kiln_bert_st_write(path, e, ps->n);
  free(e);
  return st;
}
