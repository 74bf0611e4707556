/* cache.c — the tuning cache: one JSON file of records, shared by concurrent tuners.
 *
 *   {"format": "kiln-tune-cache", "version": 2, "records": [ {...}, ... ]}
 *
 * Writers take an exclusive flock on PATH.lock, read the file again, merge their records and
 * replace the file by rename: two tuners never lose each other's records and nobody reads a
 * half-written file. Anything that does not parse as exactly this shape is moved aside and
 * never trusted: a wrong timing would silently pick a slow or broken kernel forever.
 * Version 1 records have no tune-block hash: they read with an empty one, which no block has.
 * Records in memory and the writer are in cache_records.c (no cJSON: the runtime-only bundle
 * runner writes caches too); reading, locking and merging are here. */
#include "internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- JSON */

static bool get_str(const cJSON *o, const char *name, char *dst, size_t cap) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap) return false;
  memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
  return true;
}

static bool get_num(const cJSON *o, const char *name, double *dst) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!cJSON_IsNumber(v)) return false;
  *dst = v->valuedouble;
  return true;
}

static bool record_from_json(const cJSON *o, int version, KilnCacheRecord *r) {
  memset(r, 0, sizeof *r);
  char st[32];
  double reps = 0;
  if (!cJSON_IsObject(o) || !get_str(o, "kernel", r->kernel, sizeof r->kernel) ||
      !get_str(o, "source_hash", r->source_hash, sizeof r->source_hash) ||
      (version >= 2 && !get_str(o, "tune_hash", r->tune_hash, sizeof r->tune_hash)) ||
      !get_str(o, "config", r->config, sizeof r->config) ||
      !get_str(o, "key", r->key, sizeof r->key) ||
      !get_str(o, "device", r->device, sizeof r->device) ||
      !get_str(o, "kiln_version", r->kiln_version, sizeof r->kiln_version) ||
      !get_str(o, "status", st, sizeof st) || !get_num(o, "median_ms", &r->median_ms) ||
      !get_num(o, "p25_ms", &r->p25_ms) || !get_num(o, "p75_ms", &r->p75_ms) ||
      !get_num(o, "min_ms", &r->min_ms) || !get_num(o, "reps", &reps))
    return false;
  get_str(o, "detail", r->detail, sizeof r->detail);
  r->reps = (int)reps;
  for (int s = 0; s < KILN_CACHE_STATUS_COUNT; s++)
    if (!strcmp(st, kiln_cache_status_name((KilnCacheStatus)s))) {
      r->status = (KilnCacheStatus)s;
      return true;
    }
  return false;
}

/* Parses text into out. false: not a valid cache. */
static bool parse_cache(const char *text, KilnCache *out) {
  cJSON *root = cJSON_Parse(text);
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
  const cJSON *recs = cJSON_GetObjectItemCaseSensitive(root, "records");
  bool ok = cJSON_IsObject(root) && cJSON_IsString(fmt) &&
            !strcmp(fmt->valuestring, "kiln-tune-cache") && cJSON_IsNumber(ver) &&
            ver->valueint >= 1 && ver->valueint <= KILN_CACHE_FORMAT_VERSION &&
            cJSON_IsArray(recs);
  const cJSON *it;
  const cJSON *list = ok ? recs : NULL;
  cJSON_ArrayForEach(it, list) {
    KilnCacheRecord r;
    if (!record_from_json(it, ver->valueint, &r) || kiln_cache_put(out, &r) != 0) {
      ok = false;
      break;
    }
  }
  cJSON_Delete(root);
  if (!ok) kiln_cache_free(out);
  return ok;
}

/* ---------------------------------------------------------------- the file */

static int lock_open(const char *path, FILE *err) {
  char lock[PATH_MAX];
  snprintf(lock, sizeof lock, "%s.lock", path);
  int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(err, "kiln tune: error: cannot open the cache lock '%s': %s\n", lock, strerror(errno));
    return -1;
  }
  while (flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) {
      fprintf(err, "kiln tune: error: cannot lock '%s': %s\n", lock, strerror(errno));
      close(fd);
      return -1;
    }
  return fd;
}

/* Reads the cache file (caller holds the lock). A bad file is moved aside and reported. */
static int read_locked(const char *path, KilnCache *out, FILE *err) {
  size_t len = 0;
  char *text = tune_read_file(path, &len);
  if (!text) {
    if (errno == ENOENT) return 0;
    fprintf(err, "kiln tune: error: cannot read the cache '%s': %s\n", path, strerror(errno));
    return -1;
  }
  bool ok = strlen(text) == len && parse_cache(text, out);
  free(text);
  if (ok) return 0;
  char aside[PATH_MAX];
  snprintf(aside, sizeof aside, "%s.corrupt-%lld", path, (long long)time(NULL));
  fprintf(err, "kiln tune: warning: the cache '%s' is corrupt; moved it to '%s' and starting "
               "a new one\n", path, aside);
  if (rename(path, aside) != 0) {
    fprintf(err, "kiln tune: error: cannot move '%s' aside: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

int kiln_cache_load(const char *path, KilnCache *out, FILE *err) {
  memset(out, 0, sizeof *out);
  int fd = lock_open(path, err);
  if (fd < 0) return -1;
  int rc = read_locked(path, out, err);
  close(fd); /* releases the flock */
  return rc;
}

int kiln_cache_merge_save(const char *path, const KilnCache *add, FILE *err) {
  int fd = lock_open(path, err);
  if (fd < 0) return -1;
  KilnCache cur = {0};
  int rc = read_locked(path, &cur, err);
  for (size_t i = 0; rc == 0 && i < add->count; i++) rc = kiln_cache_put(&cur, &add->records[i]);
  char *text = rc == 0 ? tune_cache_to_text(&cur) : NULL;
  if (rc == 0 && (!text || kiln_file_write_atomic(path, text, strlen(text)) != 0)) {
    fprintf(err, "kiln tune: error: cannot write the cache '%s': %s\n", path,
            text ? strerror(errno) : "out of memory");
    rc = -1;
  }
  free(text);
  kiln_cache_free(&cur);
  close(fd);
  return rc;
}
