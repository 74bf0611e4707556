/* test_embedding.c — word + position + token-type embeddings, forward and the backward's three
 * kernels without atomics (kernels-bert/embedding.kiln; the token types' parts added by
 * layernorm.kiln's layernorm_bwd_reduce, as the model does), with f32, f16 and bf16 tables (the
 * kernels' T). docs/kernels/embedding.md gives the tolerances' reasons. */
#include "harness.h"
#include "tests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct EmbCfg {
  int32_t batch, seq, hidden, vocab, block_t, block_h;
  KilnScalarKind t; /* the tables, the output and its gradient; gradient tables stay f32 */
} EmbCfg;

/* n random values rounded to t, and their device copy as t. */
static float *input_t(KilnBertRun *run, KilnRefRng *rng, size_t n, KilnScalarKind t, void **dev) {
  float *x = kiln_bert_random_t(rng, n, -1.0f, 1.0f, t);
  *dev = kiln_bert_input_t(run, x, n, t);
  return x;
}

enum { NTYPES = 2, FD_PER_TABLE = 6, TYPE_PARTS = 5, REDUCE_BLOCK = 64 };

/* The tokens grouped by id for embedding_bwd_word: order[] the token indices by increasing id,
 * token order within an id; starts[u] where the u-th distinct id's tokens begin, n past the
 * last one. A plain selection by id (the model's counting sort gives the same arrays). */
static void group_by_id(const int32_t *ids, size_t n, int32_t vocab, int32_t *order,
                        int32_t *starts) {
  size_t at = 0, u = 0;
  for (int32_t v = 0; v < vocab; v++) {
    size_t first = at;
    for (size_t t = 0; t < n; t++)
      if (ids[t] == v) order[at++] = (int32_t)t;
    if (at > first) starts[u++] = (int32_t)first;
  }
  for (; u <= n; u++) starts[u] = (int32_t)n;
}

/* A device buffer whose first n floats are 0 (an accumulator) and whose tail is sentinel. */
static void *zeroed_output(KilnBertRun *run, size_t n) {
  size_t total = n + KILN_BERT_TAIL;
  unsigned char *host = kiln_bert_alloc(total, 4);
  memset(host, KILN_BERT_SENTINEL, total * 4);
  memset(host, 0, n * 4);
  void *d = kiln_bert_input(run, host, total * 4);
  free(host);
  return d;
}

/* L = sum w * out, in double. */
static double loss(const float *out, const float *w, size_t n) {
  double l = 0.0;
  for (size_t i = 0; i < n; i++) l += (double)w[i] * out[i];
  return l;
}

static bool run_cfg(const KilnBertDevice *dev, const EmbCfg *c, uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "%s batch %d seq %d hidden %d vocab %d block %dx%d",
                  kiln_bert_type_name(c->t), c->batch, c->seq, c->hidden, c->vocab, c->block_t,
                  c->block_h);
  KilnDefine defs[] = {{"T", c->t}, {"BLOCK_T", c->block_t}, {"BLOCK_H", c->block_h}};
  KilnDefine pdefs[] = {{"T", c->t}, {"BLOCK_P", c->block_t}, {"BLOCK_H", c->block_h}};
  KilnDefine rdefs[] = {{"BLOCK", REDUCE_BLOCK}};
  KilnRtFunction *fwd = kiln_bert_kernel(&run, "embedding", "embedding_fwd", defs, 3);
  KilnRtFunction *bwd_word = kiln_bert_kernel(&run, "embedding", "embedding_bwd_word", defs, 3);
  KilnRtFunction *bwd_pos = kiln_bert_kernel(&run, "embedding", "embedding_bwd_pos", pdefs, 3);
  KilnRtFunction *bwd_type = kiln_bert_kernel(&run, "embedding", "embedding_bwd_type", defs, 3);
  KilnRtFunction *reduce = kiln_bert_kernel(&run, "layernorm", "layernorm_bwd_reduce", rdefs, 1);
  size_t esz = kiln_bert_elem_size(c->t);
  size_t ntok = (size_t)c->batch * (size_t)c->seq, H = (size_t)c->hidden, n = ntok * H;
  size_t sizes[3] = {(size_t)c->vocab * H, (size_t)c->seq * H, NTYPES * H};
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  int32_t *ids = kiln_bert_alloc(ntok, 4), *types = kiln_bert_alloc(ntok, 4);
  for (size_t t = 0; t < ntok; t++) /* a small vocabulary: ids repeat, also within one tile */
    ids[t] = (int32_t)(kiln_ref_rng_next(&rng) % (uint64_t)c->vocab),
    types[t] = (int32_t)(t % (size_t)c->seq >= (size_t)c->seq / 2);
  void *dtab[3], *dgrad[3], *dw;
  float *tab[3], *w = input_t(&run, &rng, n, c->t, &dw);
  for (int k = 0; k < 3; k++) tab[k] = input_t(&run, &rng, sizes[k], c->t, &dtab[k]);
  void *dids = kiln_bert_input(&run, ids, ntok * 4),
       *dtypes = kiln_bert_input(&run, types, ntok * 4);
  int32_t *order = kiln_bert_alloc(ntok, 4), *starts = kiln_bert_alloc(ntok + 1, 4);
  group_by_id(ids, ntok, c->vocab, order, starts);
  void *dorder = kiln_bert_input(&run, order, ntok * 4),
       *dstarts = kiln_bert_input(&run, starts, (ntok + 1) * 4);
  void *dpart = kiln_bert_output(&run, (size_t)TYPE_PARTS * NTYPES * H * 4);
  for (int k = 0; k < 3; k++) dgrad[k] = zeroed_output(&run, sizes[k]);
  void *dout = kiln_bert_output(&run, (n + KILN_BERT_TAIL) * esz);
  int32_t ntok32 = (int32_t)ntok, seq = c->seq, hidden = c->hidden;
  uint32_t gx = kiln_bert_cdiv(ntok, (size_t)c->block_t),
           gy = kiln_bert_cdiv(H, (size_t)c->block_h);
  void *fargs[] = {&dids, &dtypes, &dtab[0], &dtab[1], &dtab[2], &dout, &ntok32, &seq, &hidden};
  int32_t batch = c->batch, ntypes = NTYPES, parts = TYPE_PARTS, tcols = NTYPES * c->hidden;
  void *wargs[] = {&dids, &dorder, &dstarts, &dw, &dgrad[0], &ntok32, &hidden};
  void *pargs[] = {&dw, &dgrad[1], &batch, &seq, &hidden};
  void *targs[] = {&dtypes, &dw, &dpart, &ntok32, &hidden, &ntypes, &parts};
  void *rargs[] = {&dpart, &dgrad[2], &parts, &tcols};
  kiln_bert_launch(&run, fwd, gx, gy, fargs);
  kiln_bert_launch(&run, bwd_word, (uint32_t)ntok, gy, wargs);
  kiln_bert_launch(&run, bwd_pos, kiln_bert_cdiv((size_t)seq, (size_t)c->block_t), gy, pargs);
  kiln_bert_launch(&run, bwd_type, TYPE_PARTS, gy, targs);
  kiln_bert_launch(&run, reduce, kiln_bert_cdiv((size_t)tcols, REDUCE_BLOCK), 1, rargs);
  float *out = kiln_bert_fetch_t(&run, "out", dout, n, c->t), *ref = kiln_bert_alloc(n, 4);
  double *gref[3];
  for (int k = 0; k < 3; k++) gref[k] = kiln_bert_alloc(sizes[k], sizeof(double));
  for (size_t t = 0; t < ntok; t++) {
    size_t rowk[3] = {(size_t)ids[t], t % (size_t)c->seq, (size_t)types[t]};
    for (size_t j = 0; j < H; j++) {
      ref[t * H + j] = tab[0][rowk[0] * H + j] + tab[1][rowk[1] * H + j] + tab[2][rowk[2] * H + j];
      for (int k = 0; k < 3; k++) gref[k][rowk[k] * H + j] += w[t * H + j];
    }
  }
  /* f32: two additions. f16 / bf16: a bound per element (kiln_bert_check_rounded): the f32 sum of
   * three T values errs by its two roundings, 2^-24 (|w + p| + |w + p + t|) <= 2^-23 (|w| + |p| +
   * |t|) in any order; then the rounding to T. */
  if (c->t == KILN_SCALAR_F32) {
    kiln_bert_check_close(&run, "out", out, ref, n, 1.0, 1e-6);
  } else {
    double *e = kiln_bert_alloc(n, sizeof *e);
    for (size_t t = 0; t < ntok; t++) {
      size_t rowk[3] = {(size_t)ids[t], t % (size_t)c->seq, (size_t)types[t]};
      for (size_t j = 0; j < H; j++) {
        double mag = 0;
        for (int k = 0; k < 3; k++) mag += fabs((double)tab[k][rowk[k] * H + j]);
        e[t * H + j] = 0x1p-23 * mag;
      }
    }
    kiln_bert_check_rounded(&run, "out", out, ref, e, n, c->t);
    free(e);
  }
  static const char *names[3] = {"dword", "dpos", "dtype"};
  float *grad[3];
  for (int k = 0; k < 3; k++) {
    size_t total = sizes[k] + KILN_BERT_TAIL;
    grad[k] = kiln_bert_alloc(total, 4);
    float *gr = kiln_bert_alloc(sizes[k], 4);
    for (size_t i = 0; i < sizes[k]; i++) gr[i] = (float)gref[k][i];
    kiln_bert_fetch(&run, grad[k], dgrad[k], total * 4);
    kiln_bert_check_untouched(&run, names[k], grad[k], 4, total, 1, sizes[k], total);
    kiln_bert_check_close(&run, names[k], grad[k], gr, sizes[k], 1.0, 1e-5);
    free(gr);
  }
  /* Finite differences of L = sum w * out through embedding_fwd, at a few elements of each
   * table (rows used by the first tokens, so that every difference is non-trivial). */
  const float h = 1e-2f;
  float fd[3 * FD_PER_TABLE], an[3 * FD_PER_TABLE];
  for (int k = 0; k < 3 && run.ok && c->t == KILN_SCALAR_F32; k++)
    for (int e = 0; e < FD_PER_TABLE; e++) {
      size_t t = (size_t)e * 7 % ntok, j = (size_t)(kiln_ref_rng_next(&rng) % H);
      size_t row = k == 0 ? (size_t)ids[t] : k == 1 ? t % (size_t)c->seq : (size_t)types[t];
      float *v = &tab[k][row * H + j], keep = *v;
      double lp, lm;
      *v = keep + h;
      kiln_bert_upload(&run, dtab[k], tab[k], sizes[k] * 4);
      kiln_bert_launch(&run, fwd, gx, gy, fargs);
      kiln_bert_fetch(&run, out, dout, n * 4);
      lp = loss(out, w, n);
      *v = keep - h;
      kiln_bert_upload(&run, dtab[k], tab[k], sizes[k] * 4);
      kiln_bert_launch(&run, fwd, gx, gy, fargs);
      kiln_bert_fetch(&run, out, dout, n * 4);
      lm = loss(out, w, n);
      fd[k * FD_PER_TABLE + e] = (float)((lp - lm) / ((double)(keep + h) - (double)(keep - h)));
      an[k * FD_PER_TABLE + e] = grad[k][row * H + j];
      *v = keep;
      kiln_bert_upload(&run, dtab[k], tab[k], sizes[k] * 4);
    }
  if (c->t == KILN_SCALAR_F32)
    kiln_bert_check_close(&run, "grad vs fd", an, fd, 3 * FD_PER_TABLE, 1.0, 1e-3);
  for (int k = 0; k < 3; k++) free(tab[k]), free(gref[k]), free(grad[k]);
  free(ids), free(types), free(order), free(starts), free(w), free(out), free(ref);
  return kiln_bert_end(&run);
}

bool kiln_bert_test_embedding(const KilnBertDevice *dev) {
  static const EmbCfg cfgs[] = {
      {3, 37, 96, 50, 4, 64, KILN_SCALAR_F32}, /* 111 tokens, ragged in both directions */
      {2, 16, 64, 7, 8, 32, KILN_SCALAR_F32},  /* exact tiles; 7 ids, so every tile repeats ids */
      {3, 37, 96, 50, 4, 64, KILN_SCALAR_F16}, /* f16 tables */
      {2, 16, 64, 7, 8, 32, KILN_SCALAR_BF16}, /* bf16 tables */
      /* the word gradient's cuda tile (16 tokens by 256 columns): 80 tokens of 9 ids, so each
       * id's run is a partial tile or one and a bit; 272 columns, a ragged second block */
      {2, 40, 272, 9, 16, 256, KILN_SCALAR_F16},
  };
  bool ok = true;
  for (size_t i = 0; i < KILN_BERT_COUNT(cfgs); i++) ok &= run_cfg(dev, &cfgs[i], 5000 + i);
  return ok;
}
