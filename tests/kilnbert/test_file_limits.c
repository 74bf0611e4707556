/* test_file_limits.c — every file the trainer reads into memory is bounded by a named limit
 * (bert_file.h): vocab.txt, config.json, trainer_state.json, aclImdb review files, TSV and
 * JSONL files and their lines, and a safetensors file's header.
 *
 * Each reader gets /dev/zero, itself or through a link (no size to look at: it must stop once the read passes its bound;
 * before the bounds these read until memory ran out, so the test would be killed or time out)
 * or a sparse file one byte over the bound (a regular file says its size: it must be refused
 * before a byte is read, which the test sees as a fast refusal of a 4 GiB file), and must
 * answer KILN_BERT_ERROR_FORMAT (exit 1 from kiln-bert) with the path and the limit's name.
 * A JSONL line one byte over KILN_BERT_MAX_SAMPLE_BYTES after a sound line is refused naming
 * line 2 (it used to be read as a sample); a TSV line of exactly the bound is a sample of the
 * right length, so the bound is not one byte short.
 * Usage: test_file_limits SCRATCH_DIR */
#ifdef KILN_TEST_CHECKPOINT /* built with the model (kilnbert_model) */
#include "bert_ckpt.h"
#endif
#include "bert_config.h"
#include "bert_data.h"
#include "bert_file.h"
#include "bert_st.h"
#include "bert_vocab.h"
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[4096];

static const char *path_of(const char *rel) {
  static char path[8192];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  return path;
}

/* A sparse file of `size` bytes whose first bytes are `head` (may be NULL). */
static void sparse(const char *rel, off_t size, const void *head, size_t nhead) {
  const char *path = path_of(rel);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "cannot create %s", path);
  if (!f) return;
  if (head) CHECK(fwrite(head, 1, nhead, f) == nhead, "write %s", path);
  CHECK(fflush(f) == 0 && ftruncate(fileno(f), size) == 0, "truncate %s", path);
  fclose(f);
}

static void link_to_dev_zero(const char *rel) {
  const char *path = path_of(rel);
  unlink(path);
  CHECK(symlink("/dev/zero", path) == 0, "symlink %s: %s", path, strerror(errno));
}

/* st is FORMAT and the last error holds both needles. */
static void refused(const char *what, KilnBertStatus st, const char *needle1, const char *needle2) {
  CHECK(st == KILN_BERT_ERROR_FORMAT, "%s: %s (%s)", what, kiln_bert_status_name(st),
        kiln_bert_last_error());
  const char *msg = kiln_bert_last_error();
  CHECK(strstr(msg, needle1) && strstr(msg, needle2), "%s: '%s' lacks '%s' or '%s'", what, msg,
        needle1, needle2);
  printf("ok   %-34s %s\n", what, msg);
}

static void test_vocab_and_json(void) {
  KilnBertVocab *v = NULL;
  refused("vocab /dev/zero", kiln_bert_vocab_load("/dev/zero", &v), "/dev/zero",
          "larger than KILN_BERT_MAX_VOCAB_BYTES (64 MiB)");
  sparse("vocab.txt", (off_t)KILN_BERT_MAX_VOCAB_BYTES + 1, NULL, 0);
  refused("vocab sparse", kiln_bert_vocab_load(path_of("vocab.txt"), &v), "vocab.txt",
          "KILN_BERT_MAX_VOCAB_BYTES");
  CHECK(v == NULL);
  KilnBertConfig cfg;
  kiln_bert_config_defaults(&cfg);
  link_to_dev_zero("config.json");
  refused("config.json -> /dev/zero", kiln_bert_config_load(path_of("config.json"), &cfg),
          "config.json", "larger than KILN_BERT_MAX_JSON_BYTES (16 MiB)");
#ifdef KILN_TEST_CHECKPOINT
  link_to_dev_zero("trainer_state.json");
  KilnBertTrainState ts;
  refused("trainer_state.json /dev/zero", kiln_bert_ckpt_read_state(root, &ts),
          "trainer_state.json", "KILN_BERT_MAX_JSON_BYTES");
#else
  printf("skip trainer_state.json (no model in this build)\n");
#endif
}

static void test_datasets(void) {
  KilnBertDataset ds = {NULL, 0};
  refused("TSV /dev/zero", kiln_bert_data_tsv("/dev/zero", 2, 0, &ds),
          "/dev/zero:1:", "a line longer than KILN_BERT_MAX_SAMPLE_BYTES (4 MiB)");
  sparse("huge.tsv", (off_t)KILN_BERT_MAX_DATASET_BYTES + 1, "a\t1\n", 4);
  refused("TSV sparse over the data bound", kiln_bert_data_tsv(path_of("huge.tsv"), 2, 0, &ds),
          "huge.tsv", "larger than KILN_BERT_MAX_DATASET_BYTES (4096 MiB)");

  /* line 1 sound, line 2 one byte over the bound */
  size_t n = KILN_BERT_MAX_SAMPLE_BYTES + 1;
  char *big = malloc(n + 64);
  CHECK(big != NULL);
  if (!big) return;
  const char *first = "{\"text\": \"fine\", \"label\": 1}\n";
  FILE *f = fopen(path_of("long.jsonl"), "wb");
  CHECK(f != NULL);
  if (f) {
    fputs(first, f);
    memset(big, 'x', n);
    fwrite(big, 1, n, f);
    fputc('\n', f);
    fclose(f);
  }
  refused("JSONL line over the bound", kiln_bert_data_jsonl(path_of("long.jsonl"), 2, 0, &ds),
          "long.jsonl:2:", "KILN_BERT_MAX_SAMPLE_BYTES");
  CHECK(ds.n == 0 && ds.samples == NULL, "a refused read left %zu samples", ds.n);

  /* a TSV line of exactly the bound (text, tab, one-digit label) is a sample */
  n = KILN_BERT_MAX_SAMPLE_BYTES;
  memset(big, 'y', n - 2);
  big[n - 2] = '\t';
  big[n - 1] = '0';
  f = fopen(path_of("edge.tsv"), "wb");
  CHECK(f != NULL);
  if (f) {
    fwrite(big, 1, n, f);
    fputs("\nshort\t1\n", f);
    fclose(f);
  }
  KilnBertStatus st = kiln_bert_data_tsv(path_of("edge.tsv"), 2, 0, &ds);
  CHECK(st == KILN_BERT_OK, "edge.tsv: %s", kiln_bert_last_error());
  if (st == KILN_BERT_OK) {
    CHECK(ds.n == 2, "edge.tsv: %zu samples, expected 2", ds.n);
    CHECK(ds.n == 2 && ds.samples[0].len == n - 2 && ds.samples[0].label == 0 &&
              ds.samples[1].len == 5 && !strcmp(ds.samples[1].text, "short") &&
              ds.samples[1].label == 1,
          "edge.tsv: lengths %zu / %zu", ds.samples[0].len, ds.n > 1 ? ds.samples[1].len : 0);
    printf("ok   TSV line of exactly the bound    %zu + %zu bytes of text\n", ds.samples[0].len,
           ds.n > 1 ? ds.samples[1].len : 0);
    kiln_bert_data_free(&ds);
  }
  free(big);

  /* an aclImdb review file over the sample bound */
  CHECK(mkdir(path_of("imdb"), 0777) == 0 || errno == EEXIST);
  CHECK(mkdir(path_of("imdb/neg"), 0777) == 0 || errno == EEXIST);
  CHECK(mkdir(path_of("imdb/pos"), 0777) == 0 || errno == EEXIST);
  sparse("imdb/pos/0_9.txt", 4, "good", 4);
  sparse("imdb/neg/0_1.txt", (off_t)KILN_BERT_MAX_SAMPLE_BYTES + 1, "bad", 3);
  refused("IMDB review over the bound", kiln_bert_data_imdb(path_of("imdb"), 0, &ds), "0_1.txt",
          "larger than KILN_BERT_MAX_SAMPLE_BYTES (4 MiB)");
}

static void test_safetensors(void) {
  KilnBertSt *st = NULL;
  /* a header length one over the bound, in a file long enough to hold it (sparse) */
  uint64_t hlen = KILN_BERT_MAX_ST_HEADER_BYTES + 1;
  unsigned char head[8];
  for (int i = 0; i < 8; i++) head[i] = (unsigned char)(hlen >> (8 * i));
  sparse("big-header.safetensors", (off_t)(8 + hlen + 16), head, 8);
  refused("safetensors header over the bound",
          kiln_bert_st_open(path_of("big-header.safetensors"), &st), "header length 100000001",
          "over KILN_BERT_MAX_ST_HEADER_BYTES (100000000 bytes)");
  /* a header length past the end of the file */
  hlen = 1000;
  for (int i = 0; i < 8; i++) head[i] = (unsigned char)(hlen >> (8 * i));
  sparse("short.safetensors", 100, head, 8);
  refused("safetensors header past the end", kiln_bert_st_open(path_of("short.safetensors"), &st),
          "header length 1000", "goes beyond the file's 100 bytes");
  CHECK(kiln_bert_st_open("/dev/zero", &st) == KILN_BERT_ERROR_IO &&
            strstr(kiln_bert_last_error(), "not a regular file"),
        "safetensors /dev/zero: %s", kiln_bert_last_error());
  CHECK(st == NULL);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_file_limits SCRATCH_DIR\n");
    return 64;
  }
  snprintf(root, sizeof root, "%s", argv[1]);
  CHECK(mkdir(root, 0777) == 0 || errno == EEXIST, "mkdir %s", root);
  test_vocab_and_json();
  test_datasets();
  test_safetensors();
  return kiln_check_result("test_file_limits");
}
