/* cache_records.c — tuning records in memory and the cache file's text.
 *
 * No cJSON here: the bundle runner, built where only the runtime builds (a GPU machine without
 * the compiler's dependencies), writes its cache with this writer, and `kiln tune` writes with
 * it too, so there is one writer. Reading (cJSON) and locked merging are in cache.c. */
#include "tune_core.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_names[KILN_CACHE_STATUS_COUNT] = {"ok", "crash", "hang", "mismatch",
                                                                  "failed"};

const char *kiln_cache_status_name(KilnCacheStatus s) {
  return (unsigned)s < KILN_CACHE_STATUS_COUNT ? status_names[s] : "unknown";
}

static bool same_identity(const KilnCacheRecord *a, const KilnCacheRecord *b) {
  return !strcmp(a->kernel, b->kernel) && !strcmp(a->source_hash, b->source_hash) &&
         !strcmp(a->tune_hash, b->tune_hash) && !strcmp(a->config, b->config) &&
         !strcmp(a->key, b->key) && !strcmp(a->device, b->device) &&
         !strcmp(a->kiln_version, b->kiln_version);
}

/* ---------------------------------------------------------------- the identity index */

/* FNV-1a over the identity fields, each with its terminating NUL so that ("ab","c") and
 * ("a","bc") differ. */
static uint64_t identity_hash(const KilnCacheRecord *r) {
  const char *fields[] = {r->kernel, r->source_hash, r->tune_hash,   r->config,
                          r->key,    r->device,      r->kiln_version};
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
    for (const char *p = fields[f];; p++) {
      h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
      if (!*p) break;
    }
  return h;
}

/* The slot holding r's identity, or the empty slot where it belongs (nslots is a power of two
 * and at most half full, so the probe ends). */
static size_t index_slot(const KilnCache *c, const KilnCacheRecord *r, size_t *probes) {
  size_t mask = c->nslots - 1;
  for (size_t s = (size_t)identity_hash(r) & mask;; s = (s + 1) & mask) {
    if (!c->slots[s]) return s;
    ++*probes;
    if (same_identity(&c->records[c->slots[s] - 1], r)) return s;
  }
}

/* Indexes records[0..count) in a table of at least twice as many slots. The first of
 * duplicate identities (only in a hand-filled cache) is the one find returns. */
static int index_rebuild(KilnCache *c, size_t want) {
  size_t n = 64;
  while (n < 2 * want) n *= 2;
  size_t *slots = calloc(n, sizeof *slots);
  if (!slots) return -1;
  free(c->slots);
  c->slots = slots;
  c->nslots = n;
  for (size_t i = 0; i < c->count; i++) {
    size_t s = index_slot(c, &c->records[i], &c->probes);
    if (!c->slots[s]) c->slots[s] = i + 1;
  }
  c->indexed = c->count;
  return 0;
}

const KilnCacheRecord *kiln_cache_find(const KilnCache *c, const KilnCacheRecord *r) {
  if (c->slots && c->indexed == c->count) {
    size_t probes = 0; /* counted for puts only: find leaves the cache as it is */
    size_t s = index_slot(c, r, &probes);
    return c->slots[s] ? &c->records[c->slots[s] - 1] : NULL;
  }
  for (size_t i = 0; i < c->count; i++) /* a hand-made cache without an index */
    if (same_identity(&c->records[i], r)) return &c->records[i];
  return NULL;
}

int kiln_cache_put(KilnCache *c, const KilnCacheRecord *r) {
  if ((!c->slots || c->indexed != c->count || 2 * (c->count + 1) > c->nslots) &&
      index_rebuild(c, c->count + 1) != 0)
    return -1;
  size_t s = index_slot(c, r, &c->probes);
  if (c->slots[s]) {
    c->records[c->slots[s] - 1] = *r;
    return 0;
  }
  if (c->count == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    KilnCacheRecord *nr = realloc(c->records, cap * sizeof *nr);
    if (!nr) return -1;
    c->records = nr;
    c->cap = cap;
  }
  c->records[c->count++] = *r;
  c->slots[s] = c->count;
  c->indexed = c->count;
  return 0;
}

void kiln_cache_free(KilnCache *c) {
  free(c->records);
  free(c->slots);
  memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------------------- a record from a candidate */

bool tune_record_from_cand(const TuneCand *c, const char *kernel, const char *hash,
                           const char *tune_hash, const char *key, const char *device,
                           const char *compiler, KilnCacheRecord *r) {
  static const KilnCacheStatus map[ST_COUNT] = {[ST_OK] = KILN_CACHE_OK,
                                                [ST_CRASH] = KILN_CACHE_CRASH,
                                                [ST_HANG] = KILN_CACHE_HANG,
                                                [ST_MISMATCH] = KILN_CACHE_MISMATCH};
  if (c->from_cache ||
      (c->state != ST_OK && c->state != ST_CRASH && c->state != ST_HANG && c->state != ST_MISMATCH))
    return false; /* build and runtime errors may be the environment's fault: try again next time */
  if (c->state == ST_OK && !(isfinite(c->median_ms) && c->median_ms >= 0 && isfinite(c->p25_ms) &&
                             isfinite(c->p75_ms) && isfinite(c->min_ms) && c->min_ms >= 0))
    return false; /* a broken timer: no time to keep */
  memset(r, 0, sizeof *r);
  snprintf(r->kernel, sizeof r->kernel, "%s", kernel);
  snprintf(r->source_hash, sizeof r->source_hash, "%s", hash);
  snprintf(r->tune_hash, sizeof r->tune_hash, "%s", tune_hash);
  snprintf(r->config, sizeof r->config, "%s", c->config);
  snprintf(r->key, sizeof r->key, "%s", key);
  snprintf(r->device, sizeof r->device, "%s", device);
  snprintf(r->kiln_version, sizeof r->kiln_version, "%s", compiler);
  r->status = map[c->state];
  r->median_ms = c->median_ms;
  r->p25_ms = c->p25_ms;
  r->p75_ms = c->p75_ms;
  r->min_ms = c->min_ms;
  r->reps = c->reps;
  snprintf(r->detail, sizeof r->detail, "%s", c->detail);
  return true;
}

/* ---------------------------------------------------------------- JSON text */

void tune_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

/* %.17g reads back to the same double; JSON has no NaN or infinity. */
void tune_json_number(FILE *f, double v) { fprintf(f, "%.17g", isfinite(v) ? v : 0.0); }

static void record_text(FILE *f, const KilnCacheRecord *r) {
  const char *names[] = {"kernel", "source_hash", "tune_hash",   "config",
                         "key",    "device",      "kiln_version"};
  const char *vals[] = {r->kernel, r->source_hash, r->tune_hash,   r->config,
                        r->key,    r->device,      r->kiln_version};
  fputs("    {", f);
  for (int i = 0; i < 7; i++) {
    fprintf(f, "\"%s\": ", names[i]);
    tune_json_string(f, vals[i]);
    fputs(", ", f);
  }
  fprintf(f, "\"status\": \"%s\", \"median_ms\": ", kiln_cache_status_name(r->status));
  tune_json_number(f, r->median_ms);
  fputs(", \"p25_ms\": ", f);
  tune_json_number(f, r->p25_ms);
  fputs(", \"p75_ms\": ", f);
  tune_json_number(f, r->p75_ms);
  fputs(", \"min_ms\": ", f);
  tune_json_number(f, r->min_ms);
  fprintf(f, ", \"reps\": %d, \"detail\": ", r->reps);
  tune_json_string(f, r->detail);
  fputc('}', f);
}

char *tune_cache_to_text(const KilnCache *c) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  fprintf(f, "{\"format\": \"kiln-tune-cache\", \"version\": %d, \"records\": [\n",
          KILN_CACHE_FORMAT_VERSION);
  for (size_t i = 0; i < c->count; i++) {
    record_text(f, &c->records[i]);
    fputs(i + 1 < c->count ? ",\n" : "\n", f);
  }
  fputs("]}\n", f);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

int tune_cache_write(const char *path, const KilnCache *c, FILE *err) {
  char *text = tune_cache_to_text(c);
  int rc = text && kiln_file_write_atomic(path, text, strlen(text)) == 0 ? 0 : -1;
  if (rc)
    fprintf(err, "kiln: error: cannot write the cache '%s': %s\n", path,
            text ? strerror(errno) : "out of memory");
  free(text);
  return rc;
}
