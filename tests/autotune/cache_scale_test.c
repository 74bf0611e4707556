/* cache_scale_test.c — the tuning cache at scale (autotune/cache.c, cache_records.c).
 *
 * Test mode (no arguments): a cache of 10,000 generated records is saved, then 10,000 more
 * are merged into it (half of them replace records it has, with new times; half are new), and
 * the file is read back. The merged cache must hold exactly 15,000 records, in the order they
 * were first added, each with the times of its last write (exact: %.17g round-trips a
 * double), and every identity must be found. The cost is checked as work, not time: the
 * identity comparisons kiln_cache_put makes (KilnCache.probes) must stay within a small
 * multiple of the records put (a hash index), where a scan per insert makes ~n^2/2 of them.
 *
 * Bench mode (`bench N`): times reading, merging and saving a cache of N records and prints
 * one line (seconds, wall clock); bench/cache-scale.sh runs it at several sizes. Nothing is
 * asserted there. */
#include "kiln_autotune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* Record i of a generated cache: 100 configs of each kernel, 10 keys; its time encodes
 * `round` so a replaced record can be told from the old one. */
static KilnCacheRecord record(size_t i, int round) {
  KilnCacheRecord r;
  memset(&r, 0, sizeof r);
  snprintf(r.kernel, sizeof r.kernel, "kernel_%zu", i / 1000);
  snprintf(r.source_hash, sizeof r.source_hash, "%016zx", i / 1000 * 7919);
  snprintf(r.tune_hash, sizeof r.tune_hash, "%016zx", i / 1000 * 104729);
  snprintf(r.config, sizeof r.config, "BLOCK=%zu,num_warps=%zu", (size_t)16 << (i % 10),
           i / 10 % 10);
  snprintf(r.key, sizeof r.key, "n=%zu", (i / 100 % 10) * 1024);
  snprintf(r.device, sizeof r.device, "cpu:test:threads=2");
  snprintf(r.kiln_version, sizeof r.kiln_version, "%s", kiln_tune_compiler_id());
  r.status = KILN_CACHE_OK;
  r.median_ms = (double)i + round / 8.0;
  r.p25_ms = r.p75_ms = r.min_ms = r.median_ms;
  r.reps = round;
  return r;
}

/* Records [first, first + n) of `round`. */
static KilnCache records(size_t first, size_t n, int round) {
  KilnCache c = {0};
  for (size_t i = first; i < first + n; i++) {
    KilnCacheRecord r = record(i, round);
    if (kiln_cache_put(&c, &r) != 0) {
      fprintf(stderr, "out of memory\n");
      exit(2);
    }
  }
  return c;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A fresh path in a new temp directory (removed by cleanup). */
static void temp_cache(char *dir, size_t dcap, char *path, size_t pcap) {
  snprintf(dir, dcap, "%s/kiln-cache-scale.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(2);
  }
  snprintf(path, pcap, "%s/cache.json", dir);
}

static void cleanup(const char *dir, const char *path) {
  char lock[4200];
  snprintf(lock, sizeof lock, "%s.lock", path);
  unlink(path);
  unlink(lock);
  rmdir(dir);
}

static void test_merge_10k(void) {
  enum { N = 10000 };
  char dir[4096], path[4200];
  temp_cache(dir, sizeof dir, path, sizeof path);
  KilnCache a = records(0, N, 1), b = records(N / 2, N, 2);
  CHECK(kiln_cache_merge_save(path, &a, stderr) == 0);
  CHECK(kiln_cache_merge_save(path, &b, stderr) == 0);
  KilnCache got;
  CHECK(kiln_cache_read(path, &got, stderr) == 0);
  CHECK(got.count == N + N / 2, "%zu records after the merge, want %d", got.count, N + N / 2);
  size_t wrong = 0, lost = 0;
  for (size_t i = 0; i < got.count && i < N + N / 2; i++) {
    KilnCacheRecord want = record(i, i < N / 2 ? 1 : 2);
    if (memcmp(&got.records[i], &want, sizeof want)) wrong++;
    const KilnCacheRecord *f = kiln_cache_find(&got, &want);
    if (!f || f->median_ms != want.median_ms) lost++;
  }
  CHECK(wrong == 0, "%zu merged records differ from the last write of their identity", wrong);
  CHECK(lost == 0, "%zu identities not found with their last time", lost);
  kiln_cache_free(&a);
  kiln_cache_free(&b);
  kiln_cache_free(&got);
  cleanup(dir, path);
}

/* The work of merging in memory: 20,000 puts, 10,000 of them replacing. A scan per put makes
 * about 75 million comparisons here; the index a few per put. */
static void test_put_cost(void) {
  enum { N = 10000 };
  KilnCache c = records(0, N, 1);
  for (size_t i = 0; i < N; i++) {
    KilnCacheRecord r = record(i, 3);
    CHECK(kiln_cache_put(&c, &r) == 0);
  }
  CHECK(c.count == N, "%zu records, want %d", c.count, N);
  CHECK(c.probes <= 8 * (size_t)(2 * N), "%zu identity comparisons for %d puts: not O(n)", c.probes,
        2 * N);
  KilnCacheRecord r = record(N / 3, 3);
  const KilnCacheRecord *f = kiln_cache_find(&c, &r);
  CHECK(f && f->reps == 3, "the replaced record is not found with its new value");
  r = record(N + 1, 1);
  CHECK(!kiln_cache_find(&c, &r), "a record never put is found");
  kiln_cache_free(&c);
}

/* A cache filled by hand (records and count, no index) still finds and merges. */
static void test_hand_filled(void) {
  KilnCacheRecord rs[3] = {record(0, 1), record(1, 1), record(2, 1)};
  KilnCache view = {.records = rs, .count = 3};
  KilnCacheRecord r = record(1, 5);
  CHECK(kiln_cache_find(&view, &r) == &rs[1]);
  KilnCache c = {0};
  for (size_t i = 0; i < view.count; i++) CHECK(kiln_cache_put(&c, &view.records[i]) == 0);
  CHECK(kiln_cache_put(&c, &r) == 0);
  CHECK(c.count == 3 && c.records[1].reps == 5);
  kiln_cache_free(&c);
}

/* One line: N, seconds to save N records into a new file, to merge N more (half replacing)
 * into it (read + merge + write under the lock), and to read the result. */
static int bench(size_t n) {
  char dir[4096], path[4200];
  temp_cache(dir, sizeof dir, path, sizeof path);
  KilnCache a = records(0, n, 1), b = records(n / 2, n, 2), got;
  double t0 = now();
  int rc = kiln_cache_merge_save(path, &a, stderr);
  double t1 = now();
  rc |= kiln_cache_merge_save(path, &b, stderr);
  double t2 = now();
  rc |= kiln_cache_read(path, &got, stderr);
  double t3 = now();
  printf("%8zu %10.3f %10.3f %10.3f %10zu\n", n, t1 - t0, t2 - t1, t3 - t2, got.count);
  kiln_cache_free(&a);
  kiln_cache_free(&b);
  kiln_cache_free(&got);
  cleanup(dir, path);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "bench")) return bench(strtoul(argv[2], NULL, 10));
  test_put_cost();
  test_hand_filled();
  test_merge_10k();
  if (failures) printf("%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
