/* test_batch.c — from samples to batches: tokenized once and truncated to the row's room, the
 * step schedule (ceil(N/B) steps an epoch, a partial last batch, --steps wrapping), epoch
 * orders (identity, or a seeded shuffle that is a permutation and repeatable), dynamic padding
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
  test_buckets();
  test_batches(argv[1]);
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
