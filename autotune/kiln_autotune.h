/* kiln_autotune.h — `kiln tune` and `kiln lib`: config spaces, builder, runner, cache and the
 * generated kernel libraries.
 *
 * Purpose: pick the fastest correct configuration of each kernel's `tune` block on a device,
 * remember it in a JSON cache, and turn the winners into a C library (docs/tuning.md,
 * docs/library.md).
 *
 * Process model: the tuner's own process never opens a runtime device. Variants are compiled by
 * fork()ed builder workers and every timing runs in its own fork()ed child with a time limit, so
 * a variant that crashes or hangs costs one child, never the tuner (and a CUDA context never has
 * to survive a fork).
 *
 * Ownership: everything handed out by a *_create / *_load / kiln_tune_run is owned by the caller
 * and released by the matching *_destroy / *_free. No function here calls exit() or abort();
 * failures return a non-zero status with a message written to the `err` stream given.
 */
#ifndef KILN_AUTOTUNE_H
#define KILN_AUTOTUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- the commands */

/* `kiln tune ARGS...` and `kiln lib ARGS...` (argv without the command words). Return the
 * process exit code of docs/cli.md: 0 ok, 1 bad input, 2 environment failure, 64 usage. */
int kiln_tune_command(int argc, char **argv);
int kiln_lib_command(int argc, char **argv);
extern const char *const kiln_tune_usage;
extern const char *const kiln_lib_usage;

/* ---------------------------------------------------------------- harness expressions */

/* Evaluates an integer expression (+ - * / % , parentheses, cdiv(a,b), min(a,b), max(a,b),
 * decimal or 0x literals) with names looked up in names[0..n) / values. Division by zero,
 * unknown names, overflow and syntax errors return false with a message in err[0..errcap). */
bool kiln_tune_expr_eval(const char *expr, const char *const *names, const int64_t *values, int n,
                         int64_t *out, char *err, size_t errcap);

/* Power-of-two bucket of a key value: the smallest power of two >= v (v <= 0 gives 0). The
 * generated libraries use the same rule. */
int64_t kiln_tune_bucket(int64_t v);

/* ---------------------------------------------------------------- cache */

typedef enum KilnCacheStatus {
  KILN_CACHE_OK,       /* timed and correct */
  KILN_CACHE_CRASH,    /* the child died on a signal: poisoned */
  KILN_CACHE_HANG,     /* the child ran past the time limit: poisoned */
  KILN_CACHE_MISMATCH, /* outputs differ from the reference candidate's */
  KILN_CACHE_FAILED,   /* the build or the runtime reported an error */
  KILN_CACHE_STATUS_COUNT
} KilnCacheStatus;

/* The identity of this build's compiler, which a record's kiln_version names: the version and
 * a hash of the sources that decide a variant's code and how it is timed ("0.1.0+<16 hex>",
 * cmake/KilnCompilerId.cmake). Records of another build are neither reused nor shipped. */
const char *kiln_tune_compiler_id(void);

/* One measured (or failed) configuration. Identity: kernel, source_hash, tune_hash, config,
 * key, device, compiler (kiln_version). */
typedef struct KilnCacheRecord {
  char kernel[64];
  char source_hash[20];  /* FNV-1a 64 of the kernel's text (tune block excluded), hex */
  char tune_hash[20];    /* FNV-1a 64 of the tune block's canonical text, hex: an edited block
                            never reuses the winners of the old one ("" in a version 1 cache) */
  char config[256];      /* "BLOCK=256,num_warps=4,num_stages=2" */
  char key[256];         /* key buckets: "n=1048576" ("" when the block has no key) */
  char device[256];      /* "cpu:<model>:threads=N", "cuda:<name>:sm_90:sms=132:drv=12040" */
  char kiln_version[32]; /* the compiler that built the variant: version+source hash, e.g.
                            "0.1.0+3f0c9a1d2b4e5f60" (kiln_tune_compiler_id) */
  KilnCacheStatus status;
  double median_ms, p25_ms, p75_ms, min_ms;
  int reps;
  char detail[256]; /* why it failed, for the report */
} KilnCacheRecord;

/* records[0..count) in the order they were added. `slots` is a hash index of their
 * identities (open addressing; a slot holds a record's position + 1, 0 is empty) so that put
 * and find take constant time and a cache of n records loads and merges in O(n); it covers
 * records[0..indexed) and is rebuilt by kiln_cache_put when a caller filled `records` itself.
 * A cache written by hand as {.records, .count} has no index: find then scans. */
typedef struct KilnCache {
  KilnCacheRecord *records;
  size_t count, cap;
  size_t *slots;
  size_t nslots, indexed;
  size_t probes; /* identity comparisons made by kiln_cache_put so far: the tests check that
                    a merge of n records costs O(n) of them, not O(n^2) */
} KilnCache;

const char *kiln_cache_status_name(KilnCacheStatus s);

/* The newest cache format this Kiln reads and the one it writes. */
#define KILN_CACHE_FORMAT_VERSION 2

/* Reads the cache at `path` into *out for a reader (`kiln lib`): no lock is taken and nothing
 * is moved or written, so a cache in a read-only directory reads (writers replace the file by
 * rename, so a reader never sees half of one). Empty when the file does not exist. Records
 * whose times are not finite and non-negative are left out with a note on `err`. Returns 0; 1
 * when the file is not a cache this Kiln can use (corrupt, truncated, wrong shape, or a newer
 * format version), reported on `err`; -1 when it cannot be read. *out is owned by the caller
 * (kiln_cache_free) and is valid (maybe empty) on every return. */
int kiln_cache_read(const char *path, KilnCache *out, FILE *err);
/* Reads the cache for a writer (`kiln tune`), under the lock kiln_cache_merge_save takes. As
 * kiln_cache_read, except that a corrupt file is reported, moved aside to
 * PATH.corrupt-<unix time> and treated as empty (it is never trusted); a newer format version
 * is refused (1) and never moved. A symlink is followed: its target is the cache. Returns 0, 1,
 * or -1 as kiln_cache_read (-1 also when the file cannot be moved or the lock taken). */
int kiln_cache_load(const char *path, KilnCache *out, FILE *err);
/* Adds or replaces (same identity) the records of `add` in the cache file: under an exclusive
 * flock of TARGET.lock (TARGET: path with symlinks followed) it reads the file again, merges,
 * and writes it through a temp file in the target's directory + rename, so concurrent tuners
 * lose no records, a reader never sees a half-written file and a symlinked cache stays a link.
 * Returns 0, 1 (a newer format: nothing written) or -1 (message on err; the old file is
 * intact). */
int kiln_cache_merge_save(const char *path, const KilnCache *add, FILE *err);
/* Appends or replaces a record in memory. Returns 0, or -1 when memory runs out. */
int kiln_cache_put(KilnCache *c, const KilnCacheRecord *r);
/* The record with r's identity, or NULL. Valid until the cache changes. */
const KilnCacheRecord *kiln_cache_find(const KilnCache *c, const KilnCacheRecord *r);
void kiln_cache_free(KilnCache *c);

#ifdef __cplusplus
}
#endif
#endif /* KILN_AUTOTUNE_H */
