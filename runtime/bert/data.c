/* data.c — the data sets of bert_data.h. The IMDB reader lists both class directories first,
 * sorts the "neg/NAME" / "pos/NAME" keys by their bytes (strcmp), cuts the list at max_samples
 * and only then reads files, so a short run does not read 25,000 reviews. A review file is read
 * whole within KILN_BERT_MAX_SAMPLE_BYTES; TSV and JSONL files a line at a time, each line within
 * the same bound and the file within KILN_BERT_MAX_DATASET_BYTES (bert_file.h). */
#include "bert_data.h"
#include "bert_file.h"
#include "bert_internal.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void kiln_bert_data_free(KilnBertDataset *ds) {
  for (size_t i = 0; i < ds->n; i++) {
    free(ds->samples[i].text);
    free(ds->samples[i].source);
  }
  free(ds->samples);
  ds->samples = NULL;
  ds->n = 0;
}

typedef struct Builder {
  KilnBertDataset ds;
  size_t cap;
} Builder;

/* Appends a sample owning copies of text and source. -1 when out of memory. */
static int add_sample(Builder *b, const char *text, size_t len, int label, const char *source) {
  if (kiln_bert_grow((void **)&b->ds.samples, &b->cap, b->ds.n + 1, sizeof *b->ds.samples))
    return -1;
  KilnBertSample *s = &b->ds.samples[b->ds.n];
  s->text = malloc(len + 1);
  s->source = strdup(source);
  if (!s->text || !s->source) {
    free(s->text);
    free(s->source);
    return -1;
  }
  memcpy(s->text, text, len);
  s->text[len] = '\0';
  s->len = len;
  s->label = label;
  b->ds.n++;
  return 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n > m && !memcmp(s + n - m, suffix, m);
}

static int cmp_keys(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds "CLASS/NAME" for every regular *.txt file in dir/CLASS (symbolic links followed). */
static KilnBertStatus list_class(const char *dir, const char *cls, char ***keys, size_t *n,
                                 size_t *cap) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", dir, cls) >= (int)sizeof path)
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s/%s: path too long", dir, cls);
  DIR *d = opendir(path);
  if (!d) return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", path, strerror(errno));
  KilnBertStatus st = KILN_BERT_OK;
  struct dirent *e;
  errno = 0;
  while (st == KILN_BERT_OK && (e = readdir(d))) {
    struct stat sb;
    if (!ends_with(e->d_name, ".txt") || fstatat(dirfd(d), e->d_name, &sb, 0) != 0 ||
        !S_ISREG(sb.st_mode)) {
      errno = 0;
      continue;
    }
    size_t len = strlen(cls) + 1 + strlen(e->d_name) + 1;
    char *key = malloc(len);
    if (!key || kiln_bert_grow((void **)keys, cap, *n + 1, sizeof **keys)) {
      free(key);
      st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
      break;
    }
    snprintf(key, len, "%s/%s", cls, e->d_name);
    (*keys)[(*n)++] = key;
    errno = 0;
  }
  if (st == KILN_BERT_OK && errno)
    st = kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", path, strerror(errno));
  closedir(d);
  return st;
}

KilnBertStatus kiln_bert_data_imdb(const char *dir, size_t max_samples, KilnBertDataset *out) {
  char **keys = NULL;
  size_t n = 0, cap = 0;
  KilnBertStatus st = list_class(dir, "neg", &keys, &n, &cap);
  if (st == KILN_BERT_OK) st = list_class(dir, "pos", &keys, &n, &cap);
  if (st == KILN_BERT_OK && n == 0)
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: no *.txt file in neg/ or pos/", dir);
  if (st == KILN_BERT_OK) qsort(keys, n, sizeof *keys, cmp_keys);
  size_t take = max_samples && max_samples < n ? max_samples : n;
  Builder b = {{NULL, 0}, 0};
  for (size_t i = 0; st == KILN_BERT_OK && i < take; i++) {
    char path[4096], *text;
    size_t len;
    if (snprintf(path, sizeof path, "%s/%s", dir, keys[i]) >= (int)sizeof path) {
      st = kiln_bert_fail(KILN_BERT_ERROR_IO, "%s/%s: path too long", dir, keys[i]);
      break;
    }
    if ((st = kiln_bert_file_read(path, KILN_BERT_MAX_SAMPLE_BYTES, "KILN_BERT_MAX_SAMPLE_BYTES",
                                  &text, &len)) != KILN_BERT_OK)
      break;
    if (add_sample(&b, text, len, keys[i][0] == 'p', keys[i]))
      st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    free(text);
  }
  for (size_t i = 0; i < n; i++) free(keys[i]);
  free(keys);
  if (st != KILN_BERT_OK) {
    kiln_bert_data_free(&b.ds);
    return st;
  }
  *out = b.ds;
  return KILN_BERT_OK;
}

/* A whole decimal label in [0, num_labels); -1 otherwise. */
static int parse_label(const char *s, size_t len, int num_labels) {
  if (len == 0 || len > 9) return -1;
  int v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v < num_labels ? v : -1;
}

/* Calls fn for every line of the file (without its \n or \r\n) until it returns non-OK or
 * max_samples samples were added. */
typedef KilnBertStatus (*LineFn)(Builder *b, const char *line, size_t len, size_t lineno,
                                 const char *path, int num_labels);

/* The next line of f into *buf (NUL-terminated, without its \n) and its length into *len.
 * 1 with a line, 0 at the end of the file, -1 with errno: EFBIG for a line longer than
 * KILN_BERT_MAX_SAMPLE_BYTES (checked as it grows: /dev/zero is one endless line), ENOMEM, EIO. */
static int read_line(FILE *f, char **buf, size_t *cap, size_t *len) {
  size_t n = 0;
  int c = EOF;
  while ((c = getc_unlocked(f)) != EOF && c != '\n') {
    if (n == KILN_BERT_MAX_SAMPLE_BYTES) return errno = EFBIG, -1;
    if (kiln_bert_grow((void **)buf, cap, n + 2, 1)) return errno = ENOMEM, -1;
    (*buf)[n++] = (char)c;
  }
  if (ferror(f)) return errno = EIO, -1;
  if (c == EOF && n == 0) return 0;
  if (kiln_bert_grow((void **)buf, cap, n + 1, 1)) return errno = ENOMEM, -1;
  (*buf)[n] = '\0';
  *len = n;
  return 1;
}

/* The failure of read_line at line lineno of path. */
static KilnBertStatus line_error(const char *path, size_t lineno) {
  if (errno == EFBIG)
    return kiln_bert_fail(
        KILN_BERT_ERROR_FORMAT,
        "%s:%zu: a line longer than KILN_BERT_MAX_SAMPLE_BYTES (%zu MiB); refused", path, lineno,
        KILN_BERT_MAX_SAMPLE_BYTES >> 20);
  if (errno == ENOMEM)
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s:%zu: %s", path, lineno, strerror(errno));
}

/* Lines are read one at a time, each bounded by KILN_BERT_MAX_SAMPLE_BYTES and the file by
 * KILN_BERT_MAX_DATASET_BYTES (a regular file from its size, before a byte is read; anything
 * else as it is read), so no input costs more memory than the samples it holds. */
static KilnBertStatus read_lines(const char *path, int num_labels, size_t max_samples, LineFn fn,
                                 KilnBertDataset *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", path, strerror(errno));
  struct stat sb;
  KilnBertStatus st = KILN_BERT_OK;
  if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) &&
      (uintmax_t)sb.st_size > (uintmax_t)KILN_BERT_MAX_DATASET_BYTES)
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                        "%s: larger than KILN_BERT_MAX_DATASET_BYTES (%zu MiB); refused", path,
                        KILN_BERT_MAX_DATASET_BYTES >> 20);
  Builder b = {{NULL, 0}, 0};
  char *line = NULL;
  size_t cap = 0, len = 0, lineno = 0, total = 0;
  while (st == KILN_BERT_OK && (!max_samples || b.ds.n < max_samples)) {
    int got = read_line(f, &line, &cap, &len);
    if (got == 0) break;
    if (got < 0) {
      st = line_error(path, lineno + 1);
      break;
    }
    total += len + 1;
    if (total > KILN_BERT_MAX_DATASET_BYTES) {
      st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: larger than KILN_BERT_MAX_DATASET_BYTES (%zu MiB); refused", path,
                          KILN_BERT_MAX_DATASET_BYTES >> 20);
      break;
    }
    if (len && line[len - 1] == '\r') len--;
    st = fn(&b, line, len, ++lineno, path, num_labels);
  }
  free(line);
  fclose(f);
  if (st == KILN_BERT_OK && b.ds.n == 0)
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: no samples", path);
  if (st != KILN_BERT_OK) {
    kiln_bert_data_free(&b.ds);
    return st;
  }
  *out = b.ds;
  return KILN_BERT_OK;
}

static KilnBertStatus tsv_line(Builder *b, const char *line, size_t len, size_t lineno,
                               const char *path, int num_labels) {
  if (len == 0) return KILN_BERT_OK;
  const char *tab = NULL;
  for (size_t i = 0; i < len; i++)
    if (line[i] == '\t') tab = line + i;
  if (!tab)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s:%zu: no tab before the label", path, lineno);
  size_t tlen = (size_t)(tab - line);
  int label = parse_label(tab + 1, len - tlen - 1, num_labels);
  if (label < 0) {
    if (lineno == 1) return KILN_BERT_OK; /* a header line */
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s:%zu: the label is not an integer in [0, %d)",
                          path, lineno, num_labels);
  }
  char src[4096];
  snprintf(src, sizeof src, "%s:%zu", path, lineno);
  if (add_sample(b, line, tlen, label, src))
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  return KILN_BERT_OK;
}

static KilnBertStatus jsonl_line(Builder *b, const char *line, size_t len, size_t lineno,
                                 const char *path, int num_labels) {
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
  if (i == len) return KILN_BERT_OK;
  cJSON *root = cJSON_ParseWithLength(line, len);
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text");
  const cJSON *label = cJSON_GetObjectItemCaseSensitive(root, "label");
  KilnBertStatus st = KILN_BERT_OK;
  if (!cJSON_IsObject(root) || !cJSON_IsString(text) || !cJSON_IsNumber(label))
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                        "%s:%zu: not an object with a string \"text\" and a number \"label\"", path,
                        lineno);
  else if (label->valuedouble != (double)(int)label->valuedouble || label->valuedouble < 0 ||
           label->valuedouble >= num_labels)
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s:%zu: the label is not an integer in [0, %d)",
                        path, lineno, num_labels);
  if (st == KILN_BERT_OK) {
    char src[4096];
    snprintf(src, sizeof src, "%s:%zu", path, lineno);
    if (add_sample(b, text->valuestring, strlen(text->valuestring), (int)label->valuedouble, src))
      st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  cJSON_Delete(root);
  return st;
}

KilnBertStatus kiln_bert_data_tsv(const char *path, int num_labels, size_t max_samples,
                                  KilnBertDataset *out) {
  return read_lines(path, num_labels, max_samples, tsv_line, out);
}

KilnBertStatus kiln_bert_data_jsonl(const char *path, int num_labels, size_t max_samples,
                                    KilnBertDataset *out) {
  return read_lines(path, num_labels, max_samples, jsonl_line, out);
}

static int is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

KilnBertStatus kiln_bert_data_load(const char *path, const char *split, int num_labels,
                                   size_t max_samples, KilnBertDataset *out) {
  if (ends_with(path, ".tsv")) return kiln_bert_data_tsv(path, num_labels, max_samples, out);
  if (ends_with(path, ".jsonl")) return kiln_bert_data_jsonl(path, num_labels, max_samples, out);
  if (num_labels < 2)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "%s: IMDB data has labels 0 and 1, the model has %d", path, num_labels);
  char sub[4096];
  snprintf(sub, sizeof sub, "%s/neg", path);
  int here = is_dir(sub);
  snprintf(sub, sizeof sub, "%s/pos", path);
  here = here || is_dir(sub);
  if (here) return kiln_bert_data_imdb(path, max_samples, out);
  if (snprintf(sub, sizeof sub, "%s/%s", path, split) >= (int)sizeof sub)
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: path too long", path);
  if (!is_dir(sub))
    return kiln_bert_fail(KILN_BERT_ERROR_IO,
                          "%s: neither a .tsv/.jsonl file, a split directory (neg/, pos/) nor a "
                          "data set root with %s/",
                          path, split);
  return kiln_bert_data_imdb(sub, max_samples, out);
}
