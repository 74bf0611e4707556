/* cache.c — the tuning cache: one JSON file of records, shared by concurrent tuners.
 *
 *   {"format": "kiln-tune-cache", "version": 2, "records": [ {...}, ... ]}
 *
 * Writers (`kiln tune`) take an exclusive flock on TARGET.lock (TARGET: the path with symlinks
 * followed), read the file again, merge their records and replace the file by rename in the
 * target's directory: two tuners never lose each other's records, nobody reads a half-written
 * file, and a cache reached through a symlink stays shared. A file that does not parse as
 * exactly this shape is moved aside by a writer and never trusted: a wrong timing would
 * silently pick a slow or broken kernel forever. Readers (`kiln lib`) take no lock and never
 * move or write anything: an unusable cache is their error. A cache of a newer format is
 * refused by both and left where it is (an older Kiln must not destroy a newer one's cache).
 * Records whose times are not finite and non-negative are left out with a note (JSON allows
 * 1e999, which reads as infinity and would be written back as 0, the fastest of all).
 * Version 1 records have no tune-block hash: they read with an empty one, which no block has.
 * Records in memory and the writer are in cache_records.c (no cJSON: the runtime-only bundle
 * runner writes caches too); reading, locking and merging are here. */
#include "internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
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

/* Times a record may hold: finite and not negative. */
static bool good_time(double v) { return isfinite(v) && v >= 0.0; }

typedef enum RecordRead { REC_OK, REC_BAD_SHAPE, REC_BAD_VALUE } RecordRead;

static RecordRead record_from_json(const cJSON *o, int version, KilnCacheRecord *r) {
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
    return REC_BAD_SHAPE;
  get_str(o, "detail", r->detail, sizeof r->detail);
  int s = 0;
  while (s < KILN_CACHE_STATUS_COUNT && strcmp(st, kiln_cache_status_name((KilnCacheStatus)s))) s++;
  if (s == KILN_CACHE_STATUS_COUNT) return REC_BAD_SHAPE;
  r->status = (KilnCacheStatus)s;
  if (!good_time(r->median_ms) || !good_time(r->p25_ms) || !good_time(r->p75_ms) ||
      !good_time(r->min_ms) || !(reps >= 0 && reps <= 1e9))
    return REC_BAD_VALUE;
  r->reps = (int)reps;
  return REC_OK;
}

typedef enum CacheRead { CACHE_OK, CACHE_BAD, CACHE_NEWER } CacheRead;

/* Parses text into out; records with impossible times are left out with a note. CACHE_BAD:
 * not a cache of this shape; CACHE_NEWER: a format version this Kiln does not know (*version). */
static CacheRead parse_cache(const char *text, const char *path, KilnCache *out, int *version,
                             FILE *err) {
  cJSON *root = cJSON_Parse(text);
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
  const cJSON *recs = cJSON_GetObjectItemCaseSensitive(root, "records");
  CacheRead rc = cJSON_IsObject(root) && cJSON_IsString(fmt) &&
                         !strcmp(fmt->valuestring, "kiln-tune-cache") && cJSON_IsNumber(ver) &&
                         ver->valuedouble == (double)ver->valueint && ver->valueint >= 1
                     ? CACHE_OK
                     : CACHE_BAD;
  *version = rc == CACHE_OK ? ver->valueint : 0;
  if (rc == CACHE_OK && *version > KILN_CACHE_FORMAT_VERSION) rc = CACHE_NEWER;
  if (rc == CACHE_OK && !cJSON_IsArray(recs)) rc = CACHE_BAD;
  const cJSON *it;
  const cJSON *list = rc == CACHE_OK ? recs : NULL;
  int ignored = 0;
  cJSON_ArrayForEach(it, list) {
    KilnCacheRecord r;
    RecordRead rr = record_from_json(it, *version, &r);
    if (rr == REC_BAD_VALUE) {
      if (ignored++ < 5)
        fprintf(err,
                "kiln: note: the cache '%s' has a record of '%s' (%s, key '%s') with a time "
                "that is not finite and non-negative; ignoring it\n",
                path, r.kernel, r.config, r.key);
      continue;
    }
    if (rr != REC_OK || kiln_cache_put(out, &r) != 0) {
      rc = CACHE_BAD;
      break;
    }
  }
  if (ignored > 5)
    fprintf(err, "kiln: note: ... %d such records of '%s' ignored in all\n", ignored, path);
  cJSON_Delete(root);
  if (rc != CACHE_OK) kiln_cache_free(out);
  return rc;
}

int tune_cache_parse_text(const char *text, size_t len, const char *name, KilnCache *out,
                          int *version, FILE *err) {
  memset(out, 0, sizeof *out);
  *version = 0;
  CacheRead cr = strlen(text) == len ? parse_cache(text, name, out, version, err) : CACHE_BAD;
  return cr == CACHE_OK ? 0 : cr == CACHE_NEWER ? 2 : 1;
}

/* ---------------------------------------------------------------- the file */

/* Reads and parses the file at path. 0 (empty when there is none), 1 (reported as the caller
 * wants: newer set when the format is newer), -1 (I/O, reported). */
static int read_text(const char *path, KilnCache *out, bool *bad, bool *newer, FILE *err) {
  memset(out, 0, sizeof *out);
  *bad = *newer = false;
  size_t len = 0;
  char *text = kiln_file_read_max(path, &len, TUNE_MAX_CACHE_BYTES);
  if (!text) {
    if (errno == ENOENT) return 0;
    tune_report_read_error(err, "kiln", "cache", path, "TUNE_MAX_CACHE_BYTES",
                           TUNE_MAX_CACHE_BYTES);
    return -1;
  }
  int version = 0;
  int cr = tune_cache_parse_text(text, len, path, out, &version, err);
  free(text);
  if (cr == 2) {
    fprintf(err,
            "kiln: error: the cache '%s' is format version %d, written by a newer Kiln (this "
            "one reads up to version %d); use that Kiln or another --cache\n",
            path, version, KILN_CACHE_FORMAT_VERSION);
    *newer = true;
    return 1;
  }
  *bad = cr == 1;
  return cr == 0 ? 0 : 1;
}

int kiln_cache_read(const char *path, KilnCache *out, FILE *err) {
  bool bad, newer;
  int rc = read_text(path, out, &bad, &newer, err);
  if (bad)
    fprintf(err,
            "kiln: error: the cache '%s' is not a valid Kiln tuning cache (corrupt, "
            "truncated or of another shape); it is left as it is\n",
            path);
  return rc;
}

static int lock_open(const char *target, FILE *err) {
  char lock[PATH_MAX + 8];
  snprintf(lock, sizeof lock, "%s.lock", target);
  int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
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

/* Reads the cache file for a writer (the caller holds the lock on target, the path with its
 * symlinks followed). A corrupt file is moved aside and reported; a newer one is refused. */
static int read_locked(const char *target, KilnCache *out, FILE *err) {
  bool bad, newer;
  int rc = read_text(target, out, &bad, &newer, err);
  if (!bad) return rc;
  char aside[PATH_MAX + 32];
  snprintf(aside, sizeof aside, "%s.corrupt-%lld", target, (long long)time(NULL));
  fprintf(err,
          "kiln tune: warning: the cache '%s' is corrupt; moved it to '%s' and starting "
          "a new one\n",
          target, aside);
  if (rename(target, aside) != 0) {
    fprintf(err, "kiln tune: error: cannot move '%s' aside: %s\n", target, strerror(errno));
    return -1;
  }
  return 0;
}

/* The cache's real file (symlinks followed) into target; -1 reported. */
static int cache_target(const char *path, char *target, size_t cap, FILE *err) {
  if (kiln_file_resolve(path, target, cap) == 0) return 0;
  fprintf(err, "kiln tune: error: cannot follow the cache path '%s': %s\n", path, strerror(errno));
  return -1;
}

int kiln_cache_load(const char *path, KilnCache *out, FILE *err) {
  memset(out, 0, sizeof *out);
  char target[PATH_MAX];
  if (cache_target(path, target, sizeof target, err)) return -1;
  int fd = lock_open(target, err);
  if (fd < 0) return -1;
  int rc = read_locked(target, out, err);
  close(fd); /* releases the flock */
  return rc;
}

int kiln_cache_merge_save(const char *path, const KilnCache *add, FILE *err) {
  char target[PATH_MAX];
  if (cache_target(path, target, sizeof target, err)) return -1;
  int fd = lock_open(target, err);
  if (fd < 0) return -1;
  KilnCache cur = {0};
  int rc = read_locked(target, &cur, err);
  for (size_t i = 0; rc == 0 && i < add->count; i++) rc = kiln_cache_put(&cur, &add->records[i]);
  char *text = rc == 0 ? tune_cache_to_text(&cur) : NULL;
  if (rc == 0 && (!text || kiln_file_write_atomic(target, text, strlen(text)) != 0)) {
    fprintf(err, "kiln tune: error: cannot write the cache '%s': %s\n", target,
            text ? strerror(errno) : "out of memory");
    rc = -1;
  }
  free(text);
  kiln_cache_free(&cur);
  close(fd);
  return rc;
}
