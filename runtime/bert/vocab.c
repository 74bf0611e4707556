/* vocab.c — the vocabulary: the file's bytes kept once with each line terminator replaced by a
 * NUL, a token table by id, and an open-addressing hash from token bytes to id (FNV-1a, linear
 * probing, at most half full). WordPiece looks tokens up several times per word, so a lookup
 * allocates nothing and hashes only the bytes asked for. */
#include "bert_vocab.h"
#include "bert_file.h"
#include "bert_internal.h"
#include "bert_unicode.h"

#include <stdlib.h>
#include <string.h>

struct KilnBertVocab {
  char *blob;      /* the file's bytes, one NUL-terminated token per line */
  uint32_t *start; /* token i starts at blob + start[i] */
  uint32_t *len;   /* and has len[i] bytes */
  size_t n;
  int32_t *slots; /* hash slots: token id, or -1 for empty */
  size_t nslots;  /* a power of two, >= 2n */
};

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h;
}

static int32_t *slot_of(const KilnBertVocab *v, const char *tok, size_t len) {
  size_t mask = v->nslots - 1, i = (size_t)hash_bytes(tok, len) & mask;
  for (;; i = (i + 1) & mask) {
    int32_t id = v->slots[i];
    if (id < 0 || (v->len[id] == len && memcmp(v->blob + v->start[id], tok, len) == 0))
      return &v->slots[i];
  }
}

void kiln_bert_vocab_destroy(KilnBertVocab *v) {
  if (!v) return;
  free(v->blob);
  free(v->start);
  free(v->len);
  free(v->slots);
  free(v);
}

/* Splits the blob into lines in place and checks each is UTF-8. */
static KilnBertStatus split_lines(KilnBertVocab *v, size_t size, const char *name) {
  size_t cap = 0, cap2 = 0;
  for (size_t i = 0; i < size;) {
    size_t b = i;
    while (i < size && v->blob[i] != '\n' && v->blob[i] != '\r') i++;
    size_t e = i;
    if (i < size) i += (v->blob[i] == '\r' && i + 1 < size && v->blob[i + 1] == '\n') ? 2 : 1;
    v->blob[e] = '\0';
    for (size_t k = b; k < e;) {
      uint32_t cp;
      size_t used = kiln_bert_utf8_decode((const unsigned char *)v->blob + k, e - k, &cp);
      if (cp == 0xFFFD && !(used == 3 && memcmp(v->blob + k, "\xEF\xBF\xBD", 3) == 0))
        return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s:%zu: not UTF-8", name, v->n + 1);
      k += used;
    }
    if (v->n >= INT32_MAX || e - b > UINT32_MAX ||
        kiln_bert_grow((void **)&v->start, &cap, v->n + 1, sizeof *v->start) ||
        kiln_bert_grow((void **)&v->len, &cap2, v->n + 1, sizeof *v->len))
      return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    v->start[v->n] = (uint32_t)b;
    v->len[v->n] = (uint32_t)(e - b);
    v->n++;
  }
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_vocab_parse(const char *data, size_t len, const char *name,
                                     KilnBertVocab **out) {
  if (len >= UINT32_MAX)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: larger than 4 GiB", name);
  if (len == 0) return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: empty vocabulary", name);
  KilnBertVocab *v = calloc(1, sizeof *v);
  if (!v || !(v->blob = malloc(len + 1))) {
    free(v);
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
  }
  memcpy(v->blob, data, len);
  v->blob[len] = '\0';
  KilnBertStatus st = split_lines(v, len, name);
  if (st != KILN_BERT_OK) {
    kiln_bert_vocab_destroy(v);
    return st;
  }
  v->nslots = 16;
  while (v->nslots < 2 * v->n) v->nslots *= 2;
  if (!(v->slots = malloc(v->nslots * sizeof *v->slots))) {
    kiln_bert_vocab_destroy(v);
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
  }
  memset(v->slots, 0xff, v->nslots * sizeof *v->slots);
  for (size_t i = 0; i < v->n; i++) /* a later line replaces an earlier one */
    *slot_of(v, v->blob + v->start[i], v->len[i]) = (int32_t)i;
  *out = v;
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_vocab_load(const char *path, KilnBertVocab **out) {
  char *data;
  size_t len;
  KilnBertStatus st = kiln_bert_file_read(path, KILN_BERT_MAX_VOCAB_BYTES,
                                          "KILN_BERT_MAX_VOCAB_BYTES", &data, &len);
  if (st != KILN_BERT_OK) return st;
  st = kiln_bert_vocab_parse(data, len, path, out);
  free(data);
  return st;
}

size_t kiln_bert_vocab_size(const KilnBertVocab *v) { return v->n; }

int32_t kiln_bert_vocab_find(const KilnBertVocab *v, const char *tok, size_t len) {
  return *slot_of(v, tok, len);
}

const char *kiln_bert_vocab_token(const KilnBertVocab *v, int32_t id) {
  if (id < 0 || (size_t)id >= v->n) return NULL;
  return v->blob + v->start[id];
}
