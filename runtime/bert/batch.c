/* batch.c — encoded data sets, the step schedule, epoch orders and batch rows (bert_batch.h).
 * The shuffle's generator is splitmix64 seeded from (seed, epoch), so that an epoch's order
 * depends on nothing but those two numbers (not on how many steps ran before). */
#include "bert_batch.h"
#include "bert_internal.h"

#include <stdlib.h>
#include <string.h>

void kiln_bert_encoded_free(KilnBertEncoded *enc) {
  free(enc->ids);
  free(enc->start);
  free(enc->labels);
  memset(enc, 0, sizeof *enc);
}

KilnBertStatus kiln_bert_encode_dataset(KilnBertTokenizer *tok, const KilnBertDataset *ds,
                                        size_t seq_len, KilnBertEncoded *out) {
  if (seq_len < 2)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "a row of %zu tokens has no room "
                          "for [CLS] and [SEP]",
                          seq_len);
  KilnBertEncoded e = {0};
  KilnBertIds all = {0}, one = {0};
  e.start = malloc((ds->n + 1) * sizeof *e.start);
  e.labels = malloc((ds->n ? ds->n : 1) * sizeof *e.labels);
  KilnBertStatus st = e.start && e.labels
                          ? KILN_BERT_OK
                          : kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; st == KILN_BERT_OK && i < ds->n; i++) {
    e.start[i] = all.n;
    e.labels[i] = ds->samples[i].label;
    one.n = 0;
    st = kiln_bert_tok_encode(tok, ds->samples[i].text, ds->samples[i].len, &one);
    size_t keep = one.n < seq_len - 2 ? one.n : seq_len - 2;
    if (st == KILN_BERT_OK &&
        kiln_bert_grow((void **)&all.v, &all.cap, all.n + keep + 1, sizeof *all.v))
      st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory tokenizing %s",
                          ds->samples[i].source);
    if (st == KILN_BERT_OK && keep) {
      memcpy(all.v + all.n, one.v, keep * sizeof *one.v);
      all.n += keep;
    }
  }
  kiln_bert_ids_free(&one);
  if (st != KILN_BERT_OK) {
    kiln_bert_ids_free(&all);
    free(e.start);
    free(e.labels);
    return st;
  }
  e.start[ds->n] = all.n;
  e.ids = all.v;
  e.n = ds->n;
  *out = e;
  return KILN_BERT_OK;
}

size_t kiln_bert_total_steps(size_t n, size_t batch, size_t epochs, size_t steps) {
  if (steps) return steps;
  return batch ? epochs * ((n + batch - 1) / batch) : 0;
}

void kiln_bert_step_slice(size_t n, size_t batch, size_t k, size_t *epoch, size_t *first,
                          size_t *count) {
  size_t per_epoch = (n + batch - 1) / batch, j = k % per_epoch;
  *epoch = k / per_epoch;
  *first = j * batch;
  *count = n - *first < batch ? n - *first : batch;
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void kiln_bert_epoch_order(size_t n, int shuffle, uint64_t seed, size_t epoch, size_t *order) {
  for (size_t i = 0; i < n; i++) order[i] = i;
  if (!shuffle) return;
  uint64_t s = seed ^ (0xD1B54A32D192ED03ull * ((uint64_t)epoch + 1));
  for (size_t i = n; i > 1; i--) {
    /* an unbiased draw in [0, i): reject the top partial range */
    uint64_t limit = UINT64_MAX - UINT64_MAX % i, r;
    do r = splitmix64(&s);
    while (r >= limit);
    size_t j = (size_t)(r % i), t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
}

/* A sample to sort: its token count and its position in what is sorted. */
typedef struct LenPos {
  size_t len, pos;
} LenPos;

/* Longest first; equal lengths in their order (qsort is not stable: the position decides). */
static int longest_first(const void *a, const void *b) {
  const LenPos *x = a, *y = b;
  if (x->len != y->len) return x->len < y->len ? 1 : -1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* kiln_bert_sort_by_length with the caller's scratch: lp and tmp hold n each. */
static void sort_by_length(const KilnBertEncoded *enc, size_t *samples, size_t n, LenPos *lp,
                           size_t *tmp) {
  for (size_t i = 0; i < n; i++) {
    size_t s = samples[i];
    lp[i] = (LenPos){enc->start[s + 1] - enc->start[s], i};
    tmp[i] = s;
  }
  qsort(lp, n, sizeof *lp, longest_first);
  for (size_t i = 0; i < n; i++) samples[i] = tmp[lp[i].pos];
}

KilnBertStatus kiln_bert_sort_by_length(const KilnBertEncoded *enc, size_t *samples, size_t n) {
  LenPos *lp = malloc((n ? n : 1) * sizeof *lp);
  size_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
  int ok = lp && tmp;
  if (ok) sort_by_length(enc, samples, n, lp, tmp);
  free(lp);
  free(tmp);
  return ok ? KILN_BERT_OK
            : kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory sorting by length");
}

KilnBertStatus kiln_bert_group_by_length(const KilnBertEncoded *enc, size_t batch, uint64_t seed,
                                         size_t epoch, size_t *order) {
  size_t n = enc->n, group = KILN_BERT_GROUP_BATCHES * batch;
  if (n == 0 || batch == 0) return KILN_BERT_OK;
  size_t cap = group < n ? group : n;
  LenPos *lp = malloc(cap * sizeof *lp);
  size_t *run = malloc(cap * sizeof *run);
  if (!lp || !run) {
    free(lp);
    free(run);
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory grouping by length");
  }
  for (size_t r0 = 0; r0 < n; r0 += group) {
    size_t m = n - r0 < group ? n - r0 : group;
    sort_by_length(enc, order + r0, m, lp, run);
    memcpy(run, order + r0, m * sizeof *run);
    /* the full batches of the run in a drawn order (Fisher-Yates over batch indices; the
     * draws are unbiased enough for an order: at most 50 batches against 2^64) */
    size_t full = m / batch, perm[KILN_BERT_GROUP_BATCHES];
    for (size_t b = 0; b < full; b++) perm[b] = b;
    uint64_t st = seed ^ (0x9FB21C651E98DF25ull * ((uint64_t)epoch + 1)) ^ (r0 / group + 1);
    for (size_t b = full; b > 1; b--) {
      size_t j = (size_t)(splitmix64(&st) % b), t = perm[b - 1];
      perm[b - 1] = perm[j];
      perm[j] = t;
    }
    for (size_t b = 0; b < full; b++)
      memcpy(order + r0 + b * batch, run + perm[b] * batch, batch * sizeof *run);
  }
  free(lp);
  free(run);
  return KILN_BERT_OK;
}

size_t kiln_bert_pad_bucket(size_t longest, size_t seq_len) {
  size_t b = longest <= 32 ? 32 : longest <= 64 ? 64 : (longest + 127) / 128 * 128;
  return b < seq_len ? b : seq_len;
}

void kiln_bert_batch_free(KilnBertBatch *b) {
  free(b->ids);
  free(b->mask);
  free(b->labels);
  memset(b, 0, sizeof *b);
}

KilnBertStatus kiln_bert_batch_fill(const KilnBertTokenizer *tok, const KilnBertEncoded *enc,
                                    const size_t *order, size_t count, size_t seq_len,
                                    KilnBertPadding padding, KilnBertBatch *b) {
  if (seq_len < 2)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "a row of %zu tokens has no room "
                          "for [CLS] and [SEP]",
                          seq_len);
  size_t cols = seq_len;
  if (padding == KILN_BERT_PAD_DYNAMIC) {
    size_t longest = 2;
    for (size_t r = 0; r < count; r++) {
      size_t len = enc->start[order[r] + 1] - enc->start[order[r]] + 2;
      if (len > longest) longest = len;
    }
    cols = kiln_bert_pad_bucket(longest, seq_len);
  }
  size_t cap_cells = b->cap_cells, cap_rows = b->cap_rows;
  if (kiln_bert_grow((void **)&b->ids, &cap_cells, count * cols, sizeof *b->ids) ||
      kiln_bert_grow((void **)&b->mask, &b->cap_cells, count * cols, sizeof *b->mask) ||
      kiln_bert_grow((void **)&b->labels, &cap_rows, count, sizeof *b->labels))
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory for a batch");
  b->cap_rows = cap_rows;
  for (size_t r = 0; r < count; r++) {
    size_t s = order[r], n = enc->start[s + 1] - enc->start[s];
    size_t real = kiln_bert_tok_row(tok, enc->ids + enc->start[s], n, cols, b->ids + r * cols);
    for (size_t c = 0; c < cols; c++) b->mask[r * cols + c] = c < real;
    b->labels[r] = enc->labels[s];
  }
  b->rows = count;
  b->cols = cols;
  return KILN_BERT_OK;
}

void kiln_bert_batch_lens(const KilnBertBatch *b, int32_t *lens) {
  for (size_t r = 0; r < b->rows; r++) {
    int32_t n = 0;
    for (size_t c = 0; c < b->cols; c++) n += b->mask[r * b->cols + c] != 0;
    lens[r] = n;
  }
}
