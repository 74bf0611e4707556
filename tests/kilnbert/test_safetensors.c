/* test_safetensors.c — the safetensors reader and writer: a round trip through a file, F16 and
 * BF16 conversion, and a set of truncated and corrupt files made here (every prefix of a valid
 * file, bad lengths, bad JSON, bad entries, random byte flips), each of which must be refused
 * with a message naming the tensor, or read, but never crash (the ASan build checks that too).
 * Usage: test_safetensors SCRATCH_DIR */
#include "bert_st.h"
#include "check.h"
#include "scratch_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[4096];

/* A file image: u64 length + header + data. */
static unsigned char *image(const char *header, const void *data, size_t data_len, size_t *size) {
  size_t h = strlen(header);
  *size = 8 + h + data_len;
  unsigned char *b = malloc(*size);
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)h >> (8 * i));
  memcpy(b + 8, header, h);
  if (data_len) memcpy(b + 8 + h, data, data_len);
  return b;
}

/* Parses header + data and expects `want`; with FORMAT, a message containing `needle`. */
static void expect(const char *what, const char *header, const void *data, size_t data_len,
                   KilnBertStatus want, const char *needle) {
  size_t size;
  unsigned char *b = image(header, data, data_len, &size);
  KilnBertSt *st = NULL;
  KilnBertStatus got = kiln_bert_st_parse(b, size, "mem.safetensors", &st);
  CHECK(got == want, "%s: %s (%s)", what, kiln_bert_status_name(got), kiln_bert_last_error());
  if (got != KILN_BERT_OK && needle)
    CHECK(strstr(kiln_bert_last_error(), needle), "%s: message '%s' lacks '%s'", what,
          kiln_bert_last_error(), needle);
  kiln_bert_st_close(st);
  free(b);
}

static void test_round_trip(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  float w[6] = {1, -2, 3.5f, 1e-30f, -0.0f, 65504}, b[3] = {0.25f, 0.5f, 0.75f}, s = 42;
  KilnBertStEntry e[3] = {
      {"bert.encoder.layer.0.attention.self.query.weight", w, 2, {2, 3}},
      {"classifier.bias", b, 1, {3}},
      {"a \"quoted\"\\name", &s, 0, {0}},
  };
  CHECK(kiln_bert_st_write(path, e, 3) == KILN_BERT_OK, "write: %s", kiln_bert_last_error());
  KilnBertSt *st = NULL;
  CHECK(kiln_bert_st_open(path, &st) == KILN_BERT_OK, "open: %s", kiln_bert_last_error());
  if (!st) return;
  CHECK(kiln_bert_st_count(st) == 3, "count %zu", kiln_bert_st_count(st));
  const KilnBertStTensor *t = kiln_bert_st_find(st, "classifier.bias");
  CHECK(t && t->dt == KILN_BERT_DTYPE_F32 && !strcmp(t->dtype, "F32") && t->ndim == 1 &&
            t->shape[0] == 3 && t->numel == 3 && t->nbytes == 12,
        "classifier.bias entry");
  t = kiln_bert_st_tensor(st, 0);
  CHECK(t && !strcmp(t->name, e[0].name), "header order kept");
  CHECK(t && ((uintptr_t)t->data % 8) == 0, "data 8-byte aligned in the file");
  float out[6] = {0};
  int64_t shape[2] = {2, 3};
  CHECK(kiln_bert_st_read_f32(st, e[0].name, shape, 2, out) == KILN_BERT_OK, "read");
  CHECK(!memcmp(out, w, sizeof w), "values round trip bit for bit");
  float sc = 0;
  CHECK(kiln_bert_st_read_f32(st, "a \"quoted\"\\name", NULL, 0, &sc) == KILN_BERT_OK && sc == 42,
        "escaped name, scalar");
  int64_t wrong[2] = {3, 2};
  CHECK(kiln_bert_st_read_f32(st, e[0].name, wrong, 2, out) == KILN_BERT_ERROR_FORMAT, "shape");
  CHECK(strstr(kiln_bert_last_error(), e[0].name) && strstr(kiln_bert_last_error(), "[2, 3]") &&
            strstr(kiln_bert_last_error(), "[3, 2]"),
        "shape message: %s", kiln_bert_last_error());
  CHECK(kiln_bert_st_read_f32(st, "pooler.dense.weight", shape, 2, out) ==
                KILN_BERT_ERROR_NOT_FOUND &&
            strstr(kiln_bert_last_error(), "pooler.dense.weight"),
        "missing tensor: %s", kiln_bert_last_error());
  kiln_bert_st_close(st);

  /* an overwrite replaces the file; no temporary file stays behind */
  CHECK(kiln_bert_st_write(path, e + 1, 1) == KILN_BERT_OK, "rewrite");
  st = NULL;
  CHECK(kiln_bert_st_open(path, &st) == KILN_BERT_OK && kiln_bert_st_count(st) == 1, "reopen");
  kiln_bert_st_close(st);
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d))) CHECK(!strstr(de->d_name, ".tmp."), "left behind: %s", de->d_name);
  if (d) closedir(d);

  /* writer refusals; a failed write leaves the old file */
  KilnBertStEntry dup[2] = {{"x", b, 1, {3}}, {"x", b, 1, {3}}};
  CHECK(kiln_bert_st_write(path, dup, 2) == KILN_BERT_ERROR_INVALID_ARGUMENT, "duplicate");
  KilnBertStEntry meta = {"__metadata__", b, 1, {3}};
  CHECK(kiln_bert_st_write(path, &meta, 1) == KILN_BERT_ERROR_INVALID_ARGUMENT, "reserved");
  char bad[4200];
  snprintf(bad, sizeof bad, "%s/no/such/dir/model.safetensors", dir);
  CHECK(kiln_bert_st_write(bad, e, 1) == KILN_BERT_ERROR_IO && strstr(kiln_bert_last_error(), bad),
        "unwritable: %s", kiln_bert_last_error());
  CHECK(kiln_bert_st_open(bad, &st) == KILN_BERT_ERROR_IO, "open missing");
  st = NULL;
  CHECK(kiln_bert_st_open(path, &st) == KILN_BERT_OK && kiln_bert_st_count(st) == 1, "old file");
  kiln_bert_st_close(st);
  unlink(path);
}

static void test_half_types(void) {
  /* F16: 1.0, -2.5, 65504, smallest subnormal; BF16: 1.0, -3.0 (little-endian) */
  const unsigned char data[] = {0x00, 0x3c, 0x00, 0xc1, 0xff, 0x7b, 0x01, 0x00, 0x80, 0x3f,
                                0x40, 0xc0, 1,    0,    0,    0,    0,    0,    0,    0};
  size_t size;
  unsigned char *b = image("{\"__metadata__\":{\"format\":\"pt\"},"
                           "\"bf\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[8,12]},"
                           "\"h\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[0,8]},"
                           "\"bert.embeddings.position_ids\":{\"dtype\":\"I64\",\"shape\":[1,1],"
                           "\"data_offsets\":[12,20]}}   ",
                           data, sizeof data, &size);
  KilnBertSt *st = NULL;
  CHECK(kiln_bert_st_parse(b, size, "half", &st) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  if (st) {
    float h[4], bf[2];
    int64_t s22[2] = {2, 2}, s2[1] = {2}, s11[2] = {1, 1};
    CHECK(kiln_bert_st_read_f32(st, "h", s22, 2, h) == KILN_BERT_OK && h[0] == 1.0f &&
              h[1] == -2.5f && h[2] == 65504.0f && h[3] == 0x1p-24f,
          "f16 values %g %g %g %g", h[0], h[1], h[2], h[3]);
    CHECK(kiln_bert_st_read_f32(st, "bf", s2, 1, bf) == KILN_BERT_OK && bf[0] == 1.0f &&
              bf[1] == -3.0f,
          "bf16 values %g %g", bf[0], bf[1]);
    CHECK(kiln_bert_st_find(st, "bert.embeddings.position_ids") != NULL, "extra I64 tensor listed");
    CHECK(kiln_bert_st_read_f32(st, "bert.embeddings.position_ids", s11, 2, h) ==
                  KILN_BERT_ERROR_FORMAT &&
              strstr(kiln_bert_last_error(), "I64"),
          "I64 is not readable as weights: %s", kiln_bert_last_error());
    CHECK(kiln_bert_st_find(st, "__metadata__") == NULL, "metadata is not a tensor");
  }
  kiln_bert_st_close(st);
  free(b);
}

static void test_corrupt(void) {
  const float four[4] = {1, 2, 3, 4};
  KilnBertSt *st = NULL;
  CHECK(kiln_bert_st_parse("", 0, "empty", &st) == KILN_BERT_ERROR_FORMAT && !st, "empty file");
  CHECK(kiln_bert_st_parse("\x10\0\0\0\0\0\0", 7, "seven", &st) == KILN_BERT_ERROR_FORMAT,
        "7 bytes");
  unsigned char big[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'};
  CHECK(kiln_bert_st_parse(big, 10, "huge", &st) == KILN_BERT_ERROR_FORMAT &&
            strstr(kiln_bert_last_error(), "beyond"),
        "header length 2^64-1: %s", kiln_bert_last_error());
  unsigned char over[12] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
  CHECK(kiln_bert_st_parse(over, 12, "over", &st) == KILN_BERT_ERROR_FORMAT, "length 100 of 4");

#define ENTRY(name, dtype, shape, offs)                                                            \
  "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":" offs "}"
  expect("ok", "{" ENTRY("w", "F32", "[2,2]", "[0,16]") "}", four, 16, KILN_BERT_OK, NULL);
  expect("no tensors", "{}", NULL, 0, KILN_BERT_OK, NULL);
  expect("trailing spaces", "{" ENTRY("w", "F32", "[4]", "[0,16]") "}     ", four, 16, KILN_BERT_OK,
         NULL);
  expect("not JSON", "{\"w\": ", four, 16, KILN_BERT_ERROR_FORMAT, "JSON");
  expect("array", "[1, 2]", four, 16, KILN_BERT_ERROR_FORMAT, "object");
  expect("text after", "{} x", four, 16, KILN_BERT_ERROR_FORMAT, "after");
  expect("entry not object", "{\"w\": 3}", four, 16, KILN_BERT_ERROR_FORMAT, "'w'");
  expect("no dtype", "{\"w\":{\"shape\":[4],\"data_offsets\":[0,16]}}", four, 16,
         KILN_BERT_ERROR_FORMAT, "'w'");
  expect("shape not array", "{" ENTRY("w", "F32", "4", "[0,16]") "}", four, 16,
         KILN_BERT_ERROR_FORMAT, "'w'");
  expect("negative size", "{" ENTRY("w", "F32", "[-4]", "[0,16]") "}", four, 16,
         KILN_BERT_ERROR_FORMAT, "'w'");
  expect("fractional size", "{" ENTRY("w", "F32", "[1.5]", "[0,16]") "}", four, 16,
         KILN_BERT_ERROR_FORMAT, "'w'");
  expect("one offset", "{" ENTRY("w", "F32", "[4]", "[16]") "}", four, 16, KILN_BERT_ERROR_FORMAT,
         "'w'");
  expect("end beyond data", "{" ENTRY("w", "F32", "[4]", "[4,20]") "}", four, 16,
         KILN_BERT_ERROR_FORMAT, "'w': data_offsets [4, 20] outside the 16");
  expect("begin after end", "{" ENTRY("w", "F32", "[0]", "[8,4]") "}", four, 16,
         KILN_BERT_ERROR_FORMAT, "'w'");
  expect("bytes vs shape", "{" ENTRY("w", "F32", "[3]", "[0,16]") "}", four, 16,
         KILN_BERT_ERROR_FORMAT, "'w': shape [3] of F32 does not fit its 16 bytes");
  expect("numel overflow",
         "{" ENTRY("w", "F32", "[4294967296,4294967296,4294967296]", "[0,16]") "}", four, 16,
         KILN_BERT_ERROR_FORMAT, "'w'");
  expect("duplicate",
         "{" ENTRY("w", "F32", "[4]", "[0,16]") "," ENTRY("w", "F32", "[4]", "[0,16]") "}", four,
         16, KILN_BERT_ERROR_FORMAT, "'w' appears twice");
  expect("overlapping and unsorted",
         "{" ENTRY("b", "F32", "[2]", "[8,16]") "," ENTRY("a", "F32", "[4]", "[0,16]") "}", four,
         16, KILN_BERT_OK, NULL);
  expect("unknown dtype listed", "{" ENTRY("q", "Q9", "[7]", "[0,3]") "}", four, 16, KILN_BERT_OK,
         NULL);
  expect("offsets beyond 2^53", "{" ENTRY("w", "F32", "[4]", "[0,1e300]") "}", four, 16,
         KILN_BERT_ERROR_FORMAT, "'w'");
#undef ENTRY
}

/* Every prefix of a valid file is refused; random byte flips never crash. */
static void test_truncation_and_flips(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/whole.safetensors", dir);
  float w[12];
  for (int i = 0; i < 12; i++) w[i] = (float)i;
  KilnBertStEntry e[2] = {{"embeddings.word", w, 2, {2, 4}}, {"pooler.bias", w + 8, 1, {4}}};
  CHECK(kiln_bert_st_write(path, e, 2) == KILN_BERT_OK, "write");
  FILE *f = fopen(path, "rb");
  unsigned char buf[4096];
  size_t size = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  CHECK(size > 48 + 8, "file size %zu", size);
  KilnBertSt *st = NULL;
  for (size_t n = 0; n < size; n++) {
    unsigned char *copy = malloc(n ? n : 1); /* exact size, so ASan sees any overread */
    memcpy(copy, buf, n);
    st = NULL;
    KilnBertStatus got = kiln_bert_st_parse(copy, n, "prefix", &st);
    CHECK(got == KILN_BERT_ERROR_FORMAT && !st, "prefix of %zu bytes: %s", n,
          kiln_bert_status_name(got));
    kiln_bert_st_close(st);
    free(copy);
  }
  /* a truncated file on disk names the file and the tensor cut off */
  CHECK(truncate(path, (off_t)size - 3) == 0, "truncate: %s", strerror(errno));
  st = NULL;
  CHECK(kiln_bert_st_open(path, &st) == KILN_BERT_ERROR_FORMAT &&
            strstr(kiln_bert_last_error(), path) && strstr(kiln_bert_last_error(), "pooler.bias"),
        "truncated file: %s", kiln_bert_last_error());
  unlink(path);

  uint64_t rng = 0x9E3779B97F4A7C15ull;
  int ok = 0;
  for (int k = 0; k < 3000; k++) {
    unsigned char *copy = malloc(size);
    memcpy(copy, buf, size);
    for (int flips = 0; flips < 1 + k % 3; flips++) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      copy[(rng >> 8) % (k % 2 ? size : 8 + 120)] ^= (unsigned char)(1u << (rng % 8));
    }
    st = NULL;
    KilnBertStatus got = kiln_bert_st_parse(copy, size, "flipped", &st);
    CHECK(got == KILN_BERT_OK || got == KILN_BERT_ERROR_FORMAT, "flip %d: %s", k,
          kiln_bert_status_name(got));
    if (got == KILN_BERT_OK) { /* whatever was accepted is readable within bounds */
      ok++;
      for (size_t i = 0; i < kiln_bert_st_count(st); i++) {
        const KilnBertStTensor *t = kiln_bert_st_tensor(st, i);
        CHECK(t->data >= copy && t->data + t->nbytes <= copy + size, "flip %d: bounds", k);
        if (t->dt != KILN_BERT_DTYPE_OTHER && t->numel <= 64) {
          float out[64];
          kiln_bert_st_read_f32(st, t->name, t->shape, t->ndim, out);
        }
      }
    }
    kiln_bert_st_close(st);
    free(copy);
  }
  CHECK(ok > 0, "some flips (in the data) leave a valid file");
}

int main(int argc, char **argv) {
  int rc = kb_test_scratch_dir(argc, argv);
  if (rc) return rc;
  snprintf(dir, sizeof dir, "%s", argv[1]);
  test_round_trip();
  test_half_types();
  test_corrupt();
  test_truncation_and_flips();
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
