/* test_batch.c — from samples to batches: tokenized once and truncated to the row's room, the
 * step schedule (ceil(N/B) steps an epoch, a partial last batch, --steps wrapping), epoch
 * orders (identity, or a seeded shuffle that is a permutation and repeatable), grouped by length
 * (each run of 50 batches sorted by length, cut into batches put in a drawn order), dynamic padding
 * buckets, and the rows, masks and labels of fixed and dynamic batches.
 * Usage: test_batch VOCAB */
#include "bert_batch.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static void test_schedule(void) {
  CHECK(kiln_bert_total_steps(5, 2, 3, 0) == 9, "3 epochs of ceil(5/2)");
  CHECK(kiln_bert_total_steps(5, 2, 3, 7) == 7, "--steps overrides --epochs");
  CHECK(kiln_bert_total_steps(4, 2, 1, 0) == 2, "exact division");
  static const size_t want[][4] = {/* k, epoch, first, count for n=5, B=2 */
                                   {0, 0, 0, 2}, {1, 0, 2, 2}, {2, 0, 4, 1},
                                   {3, 1, 0, 2}, {5, 1, 4, 1}, {6, 2, 0, 2}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    size_t e, f, c;
    kiln_bert_step_slice(5, 2, want[i][0], &e, &f, &c);
    CHECK(e == want[i][1] && f == want[i][2] && c == want[i][3], "step %zu: epoch %zu, %zu+%zu",
          want[i][0], e, f, c);
  }
  size_t e, f, c;
  kiln_bert_step_slice(3, 8, 1, &e, &f, &c);
  CHECK(e == 1 && f == 0 && c == 3, "a batch larger than the data set");
}

static void test_orders(void) {
  enum { N = 100 };
  size_t a[N], b[N], c[N];
  kiln_bert_epoch_order(N, 0, 7, 3, a);
  int id = 1;
  for (size_t i = 0; i < N; i++) id &= a[i] == i;
  CHECK(id, "no shuffle: data order");
  kiln_bert_epoch_order(N, 1, 7, 0, a);
  kiln_bert_epoch_order(N, 1, 7, 0, b);
  kiln_bert_epoch_order(N, 1, 7, 1, c);
  CHECK(!memcmp(a, b, sizeof a), "same seed and epoch, same order");
  CHECK(memcmp(a, c, sizeof a), "another epoch, another order");
  int seen[N] = {0}, moved = 0;
  for (size_t i = 0; i < N; i++) {
    seen[a[i]]++;
    moved += a[i] != i;
  }
  int perm = 1;
  for (size_t i = 0; i < N; i++) perm &= seen[i] == 1;
  CHECK(perm && moved > N / 2, "a permutation that moves most samples (%d)", moved);
}

/* The reference for one run of kiln_bert_group_by_length: its samples sorted longest first,
 * equal lengths in run order (an insertion sort: the test's own, not the code's qsort). */
static void sorted_run(const size_t *run, size_t m, const size_t *len, size_t *out) {
  for (size_t i = 0; i < m; i++) {
    size_t j = i;
    while (j > 0 && len[out[j - 1]] < len[run[i]]) {
      out[j] = out[j - 1];
      j--;
    }
    out[j] = run[i];
  }
}

/* The tokens a batch order costs under dynamic padding: each batch's bucket x its rows. */
static size_t padded_tokens(const size_t *order, size_t n, size_t batch, const size_t *len) {
  size_t total = 0;
  for (size_t f = 0; f < n; f += batch) {
    size_t c = n - f < batch ? n - f : batch, longest = 0;
    for (size_t i = 0; i < c; i++)
      if (len[order[f + i]] > longest) longest = len[order[f + i]];
    total += kiln_bert_pad_bucket(longest + 2, 512) * c;
  }
  return total;
}

static void test_group_by_length(void) {
  /* 1234 samples of lengths 1..500 in batches of 8: runs of 400 (50 batches) and a last run of
   * 34, four full batches and a partial one of 2 */
  enum { N = 1234, B = 8, G = KILN_BERT_GROUP_BATCHES * B };
  static size_t len[N], start[N + 1], shuffled[N], order[N], again[N], other[N], ref[G];
  uint64_t x = 12345;
  for (size_t i = 0; i < N; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    len[i] = 1 + (size_t)(x >> 33) % 500;
    start[i + 1] = start[i] + len[i];
  }
  KilnBertEncoded enc = {.start = start, .n = N};
  kiln_bert_epoch_order(N, 1, 9, 2, shuffled);
  memcpy(order, shuffled, sizeof order);
  CHECK(kiln_bert_group_by_length(&enc, B, 9, 2, order) == KILN_BERT_OK, "grouped");
  int unmoved_runs = 0;
  for (size_t r0 = 0; r0 < N; r0 += G) {
    size_t m = N - r0 < G ? N - r0 : G, full = m / B;
    sorted_run(shuffled + r0, m, len, ref);
    /* every full batch is one block of B of the sorted run, each block once */
    int used[KILN_BERT_GROUP_BATCHES] = {0}, blocks_ok = 1, in_order = 1;
    for (size_t b = 0; b < full; b++) {
      size_t blk = 0;
      while (blk < full && ref[blk * B] != order[r0 + b * B]) blk++;
      blocks_ok &= blk < full && !memcmp(ref + blk * B, order + r0 + b * B, B * sizeof *ref);
      if (blk < full) used[blk]++;
      in_order &= blk == b;
    }
    for (size_t b = 0; b < full; b++) blocks_ok &= used[b] == 1;
    CHECK(blocks_ok,
          "run at %zu: its batches are the blocks of its samples sorted by length, "
          "each once",
          r0);
    /* the partial batch: the run's shortest samples, last */
    CHECK(!memcmp(ref + full * B, order + r0 + full * B, (m - full * B) * sizeof *ref),
          "run at %zu: the partial batch is its shortest samples, last", r0);
    unmoved_runs += in_order && full > 1;
  }
  CHECK(unmoved_runs == 0, "the batches of each run in a drawn order, not longest first");
  memcpy(again, shuffled, sizeof again);
  kiln_bert_group_by_length(&enc, B, 9, 2, again);
  CHECK(!memcmp(order, again, sizeof order), "the same seed and epoch, the same order");
  memcpy(other, shuffled, sizeof other);
  kiln_bert_group_by_length(&enc, B, 9, 3, other);
  CHECK(memcmp(order, other, sizeof order), "another epoch, another batch order");
  size_t plain = padded_tokens(shuffled, N, B, len), grouped = padded_tokens(order, N, B, len);
  printf("dynamic padding of 1234 samples of 1..500 tokens in batches of 8: %zu tokens shuffled, "
         "%zu grouped by length\n",
         plain, grouped);
  CHECK(grouped < plain * 3 / 4, "grouping saves padding: %zu against %zu", grouped, plain);
  KilnBertEncoded none = {.start = start, .n = 0};
  CHECK(kiln_bert_group_by_length(&none, B, 9, 2, order) == KILN_BERT_OK, "no samples");
}

static void test_buckets(void) {
  static const size_t want[][3] = {{2, 512, 32},    {32, 512, 32},   {33, 512, 64},
                                   {65, 512, 128},  {129, 512, 256}, {385, 512, 512},
                                   {300, 256, 256}, {20, 16, 16}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    CHECK(kiln_bert_pad_bucket(want[i][0], want[i][1]) == want[i][2], "bucket(%zu, %zu) = %zu",
          want[i][0], want[i][1], kiln_bert_pad_bucket(want[i][0], want[i][1]));
}

static void test_batches(const char *vocab_path) {
  KilnBertVocab *v = NULL;
  KilnBertTokenizer *tok = NULL;
  if (kiln_bert_vocab_load(vocab_path, &v) != KILN_BERT_OK ||
      kiln_bert_tok_create(v, &tok) != KILN_BERT_OK) {
    CHECK(0, "setup: %s", kiln_bert_last_error());
    kiln_bert_vocab_destroy(v);
    return;
  }
  /* ids in tests/kilnbert/vocab.txt: the 5 movie 6 was 7 great 8 ! 9 hello 41 world 42 */
  char t0[] = "the movie was great!", t1[] = "hello", t2[] = "";
  KilnBertSample s[3] = {{t0, strlen(t0), 1, (char *)"s0"},
                         {t1, strlen(t1), 0, (char *)"s1"},
                         {t2, 0, 1, (char *)"s2"}};
  KilnBertDataset ds = {s, 3};
  KilnBertEncoded enc = {0};
  CHECK(kiln_bert_encode_dataset(tok, &ds, 1, &enc) == KILN_BERT_ERROR_INVALID_ARGUMENT, "L=1");
  CHECK(kiln_bert_encode_dataset(tok, &ds, 6, &enc) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  CHECK(enc.n == 3 && enc.start[1] == 4 && enc.start[2] == 5 && enc.start[3] == 5,
        "truncated to L-2 = 4 ids");
  CHECK(enc.ids[0] == 5 && enc.ids[3] == 8 && enc.ids[4] == 41, "ids");
  CHECK(enc.labels[0] == 1 && enc.labels[1] == 0, "labels");

  KilnBertBatch b = {0};
  size_t order[3] = {1, 0, 2};
  CHECK(kiln_bert_batch_fill(tok, &enc, order, 3, 6, KILN_BERT_PAD_FIXED, &b) == KILN_BERT_OK,
        "fixed");
  static const int32_t ids[18] = {2, 41, 3, 0, 0, 0, 2, 5, 6, 7, 8, 3, 2, 3, 0, 0, 0, 0};
  static const int32_t mask[18] = {1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  CHECK(b.rows == 3 && b.cols == 6, "fixed shape %zux%zu", b.rows, b.cols);
  CHECK(!memcmp(b.ids, ids, sizeof ids) && !memcmp(b.mask, mask, sizeof mask), "fixed rows");
  CHECK(b.labels[0] == 0 && b.labels[1] == 1 && b.labels[2] == 1, "fixed labels");

  kiln_bert_encoded_free(&enc);
  CHECK(kiln_bert_encode_dataset(tok, &ds, 512, &enc) == KILN_BERT_OK, "L=512");
  CHECK(kiln_bert_batch_fill(tok, &enc, order, 2, 512, KILN_BERT_PAD_DYNAMIC, &b) == KILN_BERT_OK &&
            b.rows == 2 && b.cols == 32,
        "dynamic: the longest row (7) padded to the 32 bucket, %zu columns", b.cols);
  CHECK(b.ids[32 + 5] == 9 && b.ids[32 + 6] == 3 && b.ids[32 + 7] == 0 && b.mask[32 + 6] == 1 &&
            b.mask[32 + 7] == 0,
        "dynamic second row");
  kiln_bert_batch_free(&b);
  kiln_bert_encoded_free(&enc);
  kiln_bert_tok_destroy(tok);
  kiln_bert_vocab_destroy(v);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s VOCAB\n", argv[0]);
    return 2;
  }
  test_schedule();
  test_orders();
  test_group_by_length();
  test_buckets();
  test_batches(argv[1]);
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
