/* test_data.c — the data readers on a small aclImdb-shaped tree made here: which files count
 * (regular *.txt directly in neg/ and pos/), their order (bytes of neg/NAME, pos/NAME:
 * 10_1.txt < 1_3.txt < 2_4.txt), --max-samples, texts kept whole; then TSV and JSONL files.
 * Usage: test_data SCRATCH_DIR */
#include "bert_data.h"
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[4096];

static void put_file(const char *rel, const char *text, size_t len) {
  char path[8192];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "cannot write %s", path);
  if (!f) return;
  fwrite(text, 1, len, f);
  fclose(f);
}

/* A file whose contents are a string literal (which may hold NULs). */
#define PUT(rel, lit) put_file(rel, lit, sizeof(lit) - 1)
#define BOM_TEXT      "\xef\xbb\xbftext with a BOM\r\nand CRLF"

static void make_dir(const char *rel) {
  char path[8192];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  CHECK(mkdir(path, 0777) == 0 || errno == EEXIST, "mkdir %s", path);
}

static void make_tree(void) {
  make_dir("");
  make_dir("train");
  make_dir("train/neg");
  make_dir("train/pos");
  make_dir("train/unsup");
  make_dir("train/neg/dir.txt"); /* a directory with a .txt name is not a sample */
  PUT("train/neg/2_4.txt", "two four");
  PUT("train/neg/10_1.txt", BOM_TEXT);
  PUT("train/neg/1_3.txt", "one\0three");
  PUT("train/neg/notes.md", "not a sample");
  PUT("train/neg/.txt", "no name");
  PUT("train/pos/0_9.txt", "a positive one");
  PUT("train/pos/11_2.txt", "");
  PUT("train/unsup/5_0.txt", "unlabelled");
  PUT("train/urls_neg.txt", "http://");
  PUT("train/labeledBow.feat", "0 0:1");
  char target[8192], link[8192];
  snprintf(target, sizeof target, "%s/train/neg/notes.md", root);
  snprintf(link, sizeof link, "%s/train/pos/broken.txt", root);
  unlink(link);
  CHECK(symlink("no-such-file", link) == 0, "symlink"); /* a dangling link is no regular file */
}

static void test_imdb(void) {
  static const struct {
    const char *source, *text;
    size_t len;
    int label;
  } want[] = {
      {"neg/10_1.txt", BOM_TEXT, sizeof BOM_TEXT - 1, 0},
      {"neg/1_3.txt", "one\0three", sizeof "one\0three" - 1, 0},
      {"neg/2_4.txt", "two four", sizeof "two four" - 1, 0},
      {"pos/0_9.txt", "a positive one", sizeof "a positive one" - 1, 1},
      {"pos/11_2.txt", "", sizeof "" - 1, 1},
  };
  char split[8192];
  snprintf(split, sizeof split, "%s/train", root);
  KilnBertDataset ds = {0};
  CHECK(kiln_bert_data_imdb(split, 0, &ds) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  CHECK(ds.n == 5, "%zu samples", ds.n);
  for (size_t i = 0; i < ds.n && i < 5; i++) {
    const KilnBertSample *s = &ds.samples[i];
    CHECK(!strcmp(s->source, want[i].source), "sample %zu is %s, expected %s", i, s->source,
          want[i].source);
    CHECK(s->len == want[i].len && !memcmp(s->text, want[i].text, s->len) && s->text[s->len] == 0,
          "sample %zu text", i);
    CHECK(s->label == want[i].label, "sample %zu label %d", i, s->label);
  }
  kiln_bert_data_free(&ds);
  CHECK(ds.n == 0 && ds.samples == NULL, "freed");

  CHECK(kiln_bert_data_imdb(split, 2, &ds) == KILN_BERT_OK && ds.n == 2 &&
            !strcmp(ds.samples[1].source, "neg/1_3.txt"),
        "--max-samples 2");
  kiln_bert_data_free(&ds);
  CHECK(kiln_bert_data_imdb(split, 4, &ds) == KILN_BERT_OK && ds.n == 4 && ds.samples[3].label == 1,
        "--max-samples 4 reaches pos/");
  kiln_bert_data_free(&ds);
  CHECK(kiln_bert_data_imdb(split, 100, &ds) == KILN_BERT_OK && ds.n == 5, "more than there are");
  kiln_bert_data_free(&ds);

  /* --data as the data set root (split chosen by the command) or as the split itself */
  CHECK(kiln_bert_data_load(root, "train", 2, 0, &ds) == KILN_BERT_OK && ds.n == 5, "root");
  kiln_bert_data_free(&ds);
  CHECK(kiln_bert_data_load(split, "test", 2, 0, &ds) == KILN_BERT_OK && ds.n == 5, "split dir");
  kiln_bert_data_free(&ds);
  CHECK(kiln_bert_data_load(root, "test", 2, 0, &ds) == KILN_BERT_ERROR_IO &&
            strstr(kiln_bert_last_error(), "test/"),
        "no test split: %s", kiln_bert_last_error());

  /* a split without pos/ is refused, naming the directory */
  make_dir("half");
  make_dir("half/neg");
  PUT("half/neg/1_1.txt", "x");
  char half[8192];
  snprintf(half, sizeof half, "%s/half", root);
  CHECK(kiln_bert_data_imdb(half, 0, &ds) == KILN_BERT_ERROR_IO &&
            strstr(kiln_bert_last_error(), "half/pos"),
        "no pos/: %s", kiln_bert_last_error());
  make_dir("empty");
  make_dir("empty/neg");
  make_dir("empty/pos");
  snprintf(half, sizeof half, "%s/empty", root);
  CHECK(kiln_bert_data_imdb(half, 0, &ds) == KILN_BERT_ERROR_FORMAT, "no samples");
}

static void test_tsv_jsonl(void) {
  static const char tsv[] = "text\tlabel\nA fine\tfilm.\t1\r\nbad\t0\n\nlast\t1";
  put_file("d.tsv", tsv, sizeof tsv - 1);
  char path[8192];
  snprintf(path, sizeof path, "%s/d.tsv", root);
  KilnBertDataset ds = {0};
  CHECK(kiln_bert_data_load(path, "train", 2, 0, &ds) == KILN_BERT_OK, "%s",
        kiln_bert_last_error());
  CHECK(ds.n == 3, "tsv: %zu samples", ds.n);
  if (ds.n == 3) {
    CHECK(!strcmp(ds.samples[0].text, "A fine\tfilm.") && ds.samples[0].label == 1,
          "split at the last tab, CR dropped: '%s'", ds.samples[0].text);
    CHECK(!strcmp(ds.samples[1].text, "bad") && ds.samples[1].label == 0, "second");
    CHECK(!strcmp(ds.samples[2].text, "last") && strstr(ds.samples[2].source, "d.tsv:5"),
          "unterminated last line, source %s", ds.samples[2].source);
  }
  kiln_bert_data_free(&ds);
  CHECK(kiln_bert_data_tsv(path, 2, 1, &ds) == KILN_BERT_OK && ds.n == 1, "tsv max 1");
  kiln_bert_data_free(&ds);
  PUT("bad.tsv", "good\t1\nbad\t2\n");
  snprintf(path, sizeof path, "%s/bad.tsv", root);
  CHECK(kiln_bert_data_tsv(path, 2, 0, &ds) == KILN_BERT_ERROR_FORMAT &&
            strstr(kiln_bert_last_error(), "bad.tsv:2"),
        "label out of range: %s", kiln_bert_last_error());

  static const char jsonl[] = "{\"text\": \"caf\\u00e9 \\\"quoted\\\"\", \"label\": "
                              "1}\n\n{\"label\": 0, \"text\": \"b\"}\n";
  put_file("d.jsonl", jsonl, sizeof jsonl - 1);
  snprintf(path, sizeof path, "%s/d.jsonl", root);
  CHECK(kiln_bert_data_load(path, "train", 2, 0, &ds) == KILN_BERT_OK && ds.n == 2, "jsonl: %s",
        kiln_bert_last_error());
  if (ds.n == 2)
    CHECK(!strcmp(ds.samples[0].text, "caf\xc3\xa9 \"quoted\"") && ds.samples[0].label == 1 &&
              ds.samples[1].label == 0,
          "jsonl values '%s'", ds.samples[0].text);
  kiln_bert_data_free(&ds);
  PUT("bad.jsonl", "{\"text\": \"a\", \"label\": 0}\n{\"text\": 5, \"label\": 0}\n");
  snprintf(path, sizeof path, "%s/bad.jsonl", root);
  CHECK(kiln_bert_data_jsonl(path, 2, 0, &ds) == KILN_BERT_ERROR_FORMAT &&
            strstr(kiln_bert_last_error(), "bad.jsonl:2"),
        "bad line: %s", kiln_bert_last_error());
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  snprintf(root, sizeof root, "%s", argv[1]);
  make_tree();
  test_imdb();
  test_tsv_jsonl();
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
