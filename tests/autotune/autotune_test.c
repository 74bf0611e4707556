/* autotune_test.c — `kiln tune` as a user runs it: the kiln binary in a child, its JSON report
 * and its cache file checked with cJSON. One test per argv[1]; each works in a fresh temp dir.
 *
 *   unit             harness expressions and key buckets
 *   faults           crash, hang, wrong result, `where` and static-limit pruning, one run
 *   poison_and_warm  crashed/hung configs are poisoned for their key only, with the reason; a
 *                    warm cache times nothing
 *   hang_timeout     a hang stays poisoned under a raised --timeout and a reused cache;
 *                    --retry-poisoned times it again and records the new limit
 *   slow_linker      a linker slower than the time limit: every variant ok, no hang
 *   ptxas_reason     a ptxas that fails: the report keeps ptxas's own message, not only
 *                    "ptxas failed for sm_90:"
 *   args_spec        --args scalars in the order written, helper names, consts in sizes
 *   slow_variant     a correct variant whose runs together outlast the time limit, each run
 *                    within it: ok, not a hang (the limit is per run); the device defaults
 *   broken_linker    a failing, missing or deadly linker: failed, never cached
 *   corrupt_cache    a truncated cache is reported, moved aside and rebuilt
 *   concurrent       two tuners on one cache at once: both records kept, the file valid
 *   budget           a tiny --budget stops timing, and what was not timed says so
 *   budget_build     a build still running when the --budget ends (a ptxas that takes 30 s)
 *                    is ended with its ptxas, and the run returns within seconds
 *   signature        the specialization signature of a call: computed, written, read back,
 *                    checked against other calls' values */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "kiln_autotune.h"

extern char **environ;

#include "check.h"
static char dir[256];

static const char faulty_args[] = "n=%d; x: f32[n]; out: f32[n]; grid=cdiv(n, BLOCK)";

/* Starts `kiln tune FILE --json --cache DIR/cache.json EXTRA...` with stdout and stderr in
 * DIR/<tag>.out / .err. */
static pid_t start_tune(const char *tag, const char *file, const char *args,
                        const char *const *extra) {
  char out[512], err[512], cache[512], path[512];
  snprintf(out, sizeof out, "%s/%s.out", dir, tag);
  snprintf(err, sizeof err, "%s/%s.err", dir, tag);
  snprintf(cache, sizeof cache, "%s/cache.json", dir);
  snprintf(path, sizeof path, "%s/%s", KILN_TEST_KERNELS, file);
  const char *argv[32] = {KILN_EXE, "tune", path, "--json", "--cache", cache, "--args", args};
  int n = 8;
  for (int i = 0; extra && extra[i] && n < 31; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  if (posix_spawn(&pid, KILN_EXE, &fa, NULL, (char **)argv, environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

static int finish(pid_t pid) {
  int st = 0;
  if (pid < 0) return -1;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) continue;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *tag, const char *ext) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s%s", dir, tag, ext);
  return kiln_file_read(p, NULL);
}

/* Runs one tune to completion and returns its parsed JSON report (NULL on failure). */
static cJSON *tune(const char *tag, const char *file, const char *args, const char *const *extra) {
  int rc = finish(start_tune(tag, file, args, extra));
  char *out = slurp(tag, ".out"), *err = slurp(tag, ".err");
  cJSON *j = out ? cJSON_Parse(out) : NULL;
  CHECK(rc == 0 && j, "%s: exit %d, stderr:\n%s", tag, rc, err ? err : "");
  free(out);
  free(err);
  return j;
}

static const cJSON *kernel0(const cJSON *r) {
  return cJSON_GetArrayItem(cJSON_GetObjectItem(r, "kernels"), 0);
}

static const cJSON *cand(const cJSON *r, const char *config) {
  const cJSON *c;
  cJSON_ArrayForEach(
      c, cJSON_GetObjectItem(
             kernel0(r), "candidates")) if (!strcmp(cJSON_GetObjectItem(c, "config")->valuestring,
                                                    config)) return c;
  return NULL;
}

static const char *str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static int num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsNumber(v) ? v->valueint : -1;
}

static const char *mode_cfg(int mode) {
  static char buf[128];
  snprintf(buf, sizeof buf, "BLOCK=64,MODE=%d,num_warps=4,num_stages=2", mode);
  return buf;
}

static void expect_state(const cJSON *r, int mode, const char *state) {
  const cJSON *c = cand(r, mode_cfg(mode));
  CHECK(c && !strcmp(str(c, "status"), state), "MODE=%d: status '%s', want '%s' (%s)", mode,
        c ? str(c, "status") : "missing", state, c ? str(c, "detail") : "");
}

static const char *const fault_opts[] = {"--mode", "max-autotune", "--timeout", "1", "--reps", "2",
                                         NULL};

static cJSON *run_faulty(const char *tag, int n) {
  char args[256];
  snprintf(args, sizeof args, faulty_args, n);
  return tune(tag, "faulty.kiln", args, fault_opts);
}

static void test_faults(void) {
  cJSON *r = run_faulty("faults", 1000);
  if (!r) return;
  expect_state(r, 0, "ok");
  expect_state(r, 1, "crash");
  expect_state(r, 2, "hang");
  expect_state(r, 3, "mismatch");
  CHECK(strstr(str(cand(r, mode_cfg(1)), "detail"), "signal"), "crash detail names the signal");
  CHECK(!strcmp(str(kernel0(r), "winner"), mode_cfg(0)), "winner %s", str(kernel0(r), "winner"));
  CHECK(!strcmp(str(kernel0(r), "key"), "n=1024"), "key bucket %s", str(kernel0(r), "key"));
  int where = 0, limit = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItem(kernel0(r), "pruned")) {
    const char *cfg = str(p, "config"), *why = str(p, "reason");
    if (strstr(cfg, "BLOCK=128,")) where += strstr(why, "where #1") && strstr(why, "BLOCK != 128");
    if (strstr(cfg, "BLOCK=4194304,")) limit += strstr(why, "limit: largest tile") != NULL;
  }
  CHECK(where == 4 && limit == 4, "pruned by where: %d, by the tile limit: %d (want 4, 4)", where,
        limit);
  CHECK(num(r, "timings") == 4, "timings %d, want 4 (one pass; nothing survives to halving)",
        num(r, "timings"));
  cJSON_Delete(r);
}

static void test_poison_and_warm(void) {
  cJSON_Delete(run_faulty("first", 1000));
  /* poison is per key: at key n=8192 (a new bucket) the configs that crashed or hung at n=1024
   * are timed again (a config may fail at one size only) */
  cJSON *r = run_faulty("other_key", 5000);
  if (r) {
    expect_state(r, 1, "crash");
    expect_state(r, 2, "hang");
    expect_state(r, 0, "ok");
    CHECK(num(cand(r, mode_cfg(1)), "timings") > 0 && num(cand(r, mode_cfg(0)), "timings") > 0,
          "the new key was not timed");
    cJSON_Delete(r);
  }
  r = run_faulty("warm", 1000); /* the same key: poisoned, with the reason */
  if (r) {
    CHECK(num(r, "timings") == 0, "a warm cache timed %d variants", num(r, "timings"));
    expect_state(r, 1, "poisoned");
    expect_state(r, 2, "poisoned");
    CHECK(strstr(str(cand(r, mode_cfg(1)), "detail"), "crash") &&
              strstr(str(cand(r, mode_cfg(2)), "detail"), "hang"),
          "poison without its reason");
    CHECK(!strcmp(str(kernel0(r), "winner"), mode_cfg(0)), "warm winner %s",
          str(kernel0(r), "winner"));
    cJSON_Delete(r);
  }
}

/* A config that hangs is killed, reported and skipped; at its key it stays poisoned when a later
 * run raises --timeout and when the cache is reused, with the limit it was killed under; only
 * --retry-poisoned times it again, and hanging again it is poisoned with the new limit. */
static void test_hang_timeout(void) {
  char args[256];
  snprintf(args, sizeof args, faulty_args, 1000);
  const char *const t1[] = {"--mode", "max-autotune", "--timeout", "1", "--reps",
                            "1",      "-D",           "BLOCK=64",  NULL};
  const char *const t5[] = {"--mode", "max-autotune", "--timeout", "5", "--reps",
                            "1",      "-D",           "BLOCK=64",  NULL};
  const char *const retry[] = {"--mode", "max-autotune", "--timeout",        "2", "--reps", "1",
                               "-D",     "BLOCK=64",     "--retry-poisoned", NULL};
  cJSON *r = tune("hang1", "faulty.kiln", args, t1);
  if (r) { /* killed, reported, not the winner */
    expect_state(r, 2, "hang");
    CHECK(strstr(str(cand(r, mode_cfg(2)), "detail"), "1s time limit"), "hang detail '%s'",
          str(cand(r, mode_cfg(2)), "detail"));
    CHECK(!strcmp(str(kernel0(r), "winner"), mode_cfg(0)), "winner %s", str(kernel0(r), "winner"));
    cJSON_Delete(r);
  }
  const char *const *later[] = {t5, t1};
  const char *tags[] = {"raised", "reused"};
  for (int i = 0; i < 2; i++) { /* a raised limit, then the same one: skipped, not timed */
    r = tune(tags[i], "faulty.kiln", args, later[i]);
    if (!r) continue;
    expect_state(r, 2, "poisoned");
    CHECK(num(cand(r, mode_cfg(2)), "timings") == 0, "%s: the hang was timed again", tags[i]);
    CHECK(strstr(str(cand(r, mode_cfg(2)), "detail"), "hang") &&
              strstr(str(cand(r, mode_cfg(2)), "detail"), "1s time limit"),
          "%s: poison without its reason and limit: '%s'", tags[i],
          str(cand(r, mode_cfg(2)), "detail"));
    CHECK(!strcmp(str(kernel0(r), "winner"), mode_cfg(0)), "%s: winner %s", tags[i],
          str(kernel0(r), "winner"));
    cJSON_Delete(r);
  }
  r = tune("retry", "faulty.kiln", args, retry); /* timed again, killed again under 2 s */
  if (r) {
    expect_state(r, 2, "hang");
    CHECK(num(cand(r, mode_cfg(2)), "timings") > 0, "--retry-poisoned did not time the hang");
    CHECK(strstr(str(cand(r, mode_cfg(2)), "detail"), "2s time limit"), "retry detail '%s'",
          str(cand(r, mode_cfg(2)), "detail"));
    cJSON_Delete(r);
  }
  r = tune("after_retry", "faulty.kiln", args, t5); /* the record now holds the new limit */
  if (r) {
    expect_state(r, 2, "poisoned");
    CHECK(strstr(str(cand(r, mode_cfg(2)), "detail"), "2s time limit"), "after retry: '%s'",
          str(cand(r, mode_cfg(2)), "detail"));
    cJSON_Delete(r);
  }
}

static int count_records(const char *key);

/* Writes an executable shell script DIR/name and returns its path. */
static const char *script(const char *name, const char *body) {
  static char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (!f) return NULL;
  fprintf(f, "#!/bin/sh\n%s\n", body);
  fclose(f);
  chmod(p, 0755);
  return p;
}

static const char scale_args[] =
    "n=4096; a=2.5; x: f32[n]; y: f32[n]; out: f32[n]; grid=cdiv(n, BLOCK)";

/* --args as written: ldy is given before ldx uses it although ldx comes first among copy_rows's
 * parameters; R is a helper name (no parameter) that rows and a size use; y's size names the
 * const BLOCK (the largest over the configs sizes the buffer). Every config must run ok at the
 * key of cols = 50. A const given as a scalar entry is refused, telling to pin it with -D. */
static void test_args_spec(void) {
  static const char *const opts[] = {"--mode", "max-autotune", "--reps", "1", NULL};
  cJSON *r = tune("order", "copy_rows.kiln",
                  "R=4; cols=50; ldy=cols+6; ldx=ldy+8; rows=R; x: f32[(R - 1) * ldx + cols]; "
                  "y: f32[(rows - 1) * ldy + BLOCK]=0; grid=rows",
                  opts);
  if (r) {
    CHECK(!strcmp(str(kernel0(r), "key"), "cols=64"), "key '%s'", str(kernel0(r), "key"));
    const char *cfgs[] = {"BLOCK=64,num_warps=1,num_stages=2",
                          "BLOCK=128,num_warps=1,num_stages=2"};
    for (int i = 0; i < 2; i++) {
      const cJSON *c = cand(r, cfgs[i]);
      CHECK(c && !strcmp(str(c, "status"), "ok"), "%s: '%s' (%s)", cfgs[i],
            c ? str(c, "status") : "missing", c ? str(c, "detail") : "");
    }
  }
  cJSON_Delete(r);
  int rc = finish(start_tune(
      "const_arg", "copy_rows.kiln",
      "rows=4; cols=50; ldx=64; ldy=64; BLOCK=64; x: f32[256]; y: f32[256]; grid=rows", NULL));
  char *err = slurp("const_arg", ".err");
  CHECK(rc == 1 && err && strstr(err, "pin it with -D BLOCK=64"),
        "a const in --args: exit %d, '%s'", rc, err ? err : "");
  free(err);
}

/* A correct kernel that takes about 0.2 s a run (1e8 dependent multiply-adds at ~2 ns on the
 * 2-core test machine), under a 1.5 s limit with 20 repetitions: its child runs for some 4.5 s,
 * each run well within the limit. The limit is per run, so it is ok with its 20 samples; a limit
 * per child made it a hang and poisoned it. Also the devices' default limits. */
static void test_slow_variant(void) {
  static const char *const opts[] = {"--timeout", "1.5", "--reps", "20", NULL};
  cJSON *r =
      tune("slow", "slow.kiln", "n=64; iters=100000000; x: f32[n]; out: f32[n]; grid=1", opts);
  if (r) {
    const cJSON *c = cand(r, "BLOCK=64,num_warps=4,num_stages=2");
    CHECK(c && !strcmp(str(c, "status"), "ok") && num(c, "reps") == 20,
          "slow variant: status '%s' "
          "(%s), %d samples",
          c ? str(c, "status") : "missing", c ? str(c, "detail") : "", c ? num(c, "reps") : -1);
  }
  cJSON_Delete(r);
  CHECK(tune_default_timeout("emu") == 300 && tune_default_timeout("cpu") == 30 &&
            tune_default_timeout("cuda:0") == 10,
        "the devices' default limits");
}

/* A linker slower than the kernel's time limit: linking and loading happen before the timed
 * region, so every variant times ok, none is a hang, and nothing is poisoned. */
static void test_slow_linker(void) {
  const char *cc = script("slowcc", "sleep 2; exec cc \"$@\"");
  CHECK(cc && setenv("KILN_CC", cc, 1) == 0, "KILN_CC");
  static const char *const opts[] = {"--timeout", "1", "--reps", "1", NULL};
  cJSON *r = tune("slow", "scale_add.kiln", scale_args, opts);
  if (!r) return;
  int ok = 0, n = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(kernel0(r), "candidates")) {
    n++;
    ok += !strcmp(str(c, "status"), "ok");
    CHECK(!strcmp(str(c, "status"), "ok"), "%s: %s (%s)", str(c, "config"), str(c, "status"),
          str(c, "detail"));
  }
  CHECK(n > 0 && ok == n, "%d of %d ok", ok, n);
  CHECK(count_records(NULL) == n, "cache records %d, want %d", count_records(NULL), n);
  cJSON_Delete(r);
}

/* A linker that fails, is missing, or takes the timing child down with it (as a loader may on
 * a full disk) is the environment's fault: reported as failed, never cached (so never
 * poisoned, where a crash while loading used to be), and the next run with a working linker
 * times every config. */
static void test_broken_linker(void) {
  char failing[512], dying[512]; /* script() returns one static buffer */
  snprintf(failing, sizeof failing, "%s",
           script("badcc", "echo 'no space left on device' >&2; exit 1"));
  snprintf(dying, sizeof dying, "%s", script("deadlycc", "kill -SEGV $PPID; sleep 5; exit 1"));
  const char *ccs[] = {failing, "/nonexistent/cc", dying},
             *tags[] = {"failing", "missing", "dying"};
  static const char *const opts[] = {"--reps", "1", NULL};
  for (int pass = 0; pass < 3; pass++) {
    CHECK(setenv("KILN_CC", ccs[pass], 1) == 0, "KILN_CC");
    cJSON *r = tune(tags[pass], "scale_add.kiln", scale_args, opts);
    if (!r) return;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(kernel0(r), "candidates"))
        CHECK(!strcmp(str(c, "status"), "failed"), "%s: %s (%s)", str(c, "config"),
              str(c, "status"), str(c, "detail"));
    cJSON_Delete(r);
    CHECK(count_records(NULL) <= 0, "%d records of a broken linker cached", count_records(NULL));
  }
  unsetenv("KILN_CC");
  cJSON *r = tune("fixed", "scale_add.kiln", scale_args, opts);
  CHECK(r && num(r, "timings") > 0 && str(kernel0(r), "winner")[0],
        "no timing after the linker was fixed");
  cJSON_Delete(r);
}

static int count_records(const char *key) {
  char *text = slurp("cache", ".json");
  cJSON *c = text ? cJSON_Parse(text) : NULL;
  free(text);
  if (!c) return -1;
  int n = 0;
  const cJSON *rec;
  cJSON_ArrayForEach(rec, cJSON_GetObjectItem(c, "records")) n +=
      !key || !strcmp(str(rec, "key"), key);
  cJSON_Delete(c);
  return n;
}

static void test_corrupt_cache(void) {
  cJSON_Delete(run_faulty("fill", 1000));
  char p[512];
  snprintf(p, sizeof p, "%s/cache.json", dir);
  char *text = slurp("cache", ".json");
  FILE *f = fopen(p, "wb");
  if (!text || !f) {
    CHECK(0, "no cache to truncate");
    free(text);
    if (f) fclose(f);
    return;
  }
  fwrite(text, 1, strlen(text) / 2, f); /* a truncated file, as after a crash of a naive writer */
  fclose(f);
  free(text);
  cJSON *r = run_faulty("after", 1000);
  char *err = slurp("after", ".err");
  CHECK(err && strstr(err, "corrupt"), "corruption not reported: %s", err ? err : "");
  free(err);
  CHECK(r && num(r, "timings") == 4, "the corrupt cache was trusted (timings %d)",
        r ? num(r, "timings") : -1);
  CHECK(count_records("n=1024") == 4, "rebuilt cache has %d records", count_records("n=1024"));
  int aside = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    aside += !strncmp(e->d_name, "cache.json.corrupt-", 19);
  if (d) closedir(d);
  CHECK(aside == 1, "%d files moved aside", aside);
  cJSON_Delete(r);
}

static void test_concurrent(void) {
  char a[256], b[256];
  snprintf(a, sizeof a, faulty_args, 300);
  snprintf(b, sizeof b, faulty_args, 3000);
  pid_t p1 = start_tune("one", "faulty.kiln", a, fault_opts);
  pid_t p2 = start_tune("two", "faulty.kiln", b, fault_opts);
  int r1 = finish(p1), r2 = finish(p2);
  CHECK(r1 == 0 && r2 == 0, "exit codes %d %d", r1, r2);
  int n1 = count_records("n=512"), n2 = count_records("n=4096");
  /* each tuner records MODE 0 and 3 for its key, and crash/hang unless the other poisoned them */
  CHECK(n1 >= 2 && n2 >= 2 && n1 + n2 >= 6, "records: %d for n=512, %d for n=4096", n1, n2);
}

static void test_budget(void) {
  static const char *const opts[] = {"--mode", "max-autotune", "--budget", "0.001", NULL};
  cJSON *r = tune("budget", "scale_add.kiln",
                  "n=64; a=1.0; x: f32[n]; y: f32[n]; out: f32[n]; grid=cdiv(n, BLOCK)", opts);
  if (!r) return;
  int budget = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(kernel0(r), "candidates")) budget +=
      !strcmp(str(c, "status"), "budget");
  CHECK(budget == 6 && num(r, "timings") == 0, "%d of 6 stopped by the budget, %d timings", budget,
        num(r, "timings"));
  cJSON_Delete(r);
}

/* A ptxas that rejects the PTX with its own message (a fake one, so no CUDA toolkit is needed):
 * the bundle's note on each left-out candidate must carry that message after the driver's
 * heading, which alone said nothing. */
static void test_ptxas_reason(void) {
  const char *ptxas =
      script("badptxas", "echo \"ptxas v.ptx, line 7; error   : Unknown modifier '.zz'\" >&2; "
                         "echo 'ptxas fatal   : Ptx assembly aborted due to errors' >&2; exit 255");
  CHECK(ptxas && setenv("KILN_PTXAS", ptxas, 1) == 0, "KILN_PTXAS");
  char bundle[512];
  snprintf(bundle, sizeof bundle, "%s/bundle", dir);
  const char *const opts[] = {"--device", "cuda", "--arch",   "sm_90", "--emit-bundle",
                              bundle,     "-D",   "BLOCK=64", "-D",    "num_warps=1",
                              NULL};
  int rc = finish(start_tune("ptxas", "scale_add.kiln", scale_args, opts));
  unsetenv("KILN_PTXAS");
  char *err = slurp("ptxas", ".err");
  CHECK(rc == 0 && err &&
            strstr(err, "ptxas failed for sm_90: | ptxas v.ptx, line 7; error   : "
                        "Unknown modifier '.zz' | ptxas fatal   : Ptx assembly aborted"),
        "exit %d, the reason is not kept: %s", rc, err ? err : "");
  free(err);
}

static void test_budget_build(void) {
  const char *ptxas = script("slowptxas", "sleep 30; exit 1");
  CHECK(ptxas && setenv("KILN_PTXAS", ptxas, 1) == 0, "KILN_PTXAS");
  char bundle[512];
  snprintf(bundle, sizeof bundle, "%s/bundle", dir);
  const char *const opts[] = {"--device", "cuda",     "--arch", "sm_90", "--emit-bundle",
                              bundle,     "--budget", "2",      NULL};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = finish(start_tune("bbuild", "scale_add.kiln", scale_args, opts));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  unsetenv("KILN_PTXAS");
  char *err = slurp("bbuild", ".err");
  int cut = 0;
  for (const char *p = err; p && (p = strstr(p, "ran out during its build")); p++) cut++;
  CHECK(rc == 0, "exit %d: %s", rc, err ? err : "");
  /* each build waits 30 s in its ptxas: a run that waited for any of them took 30 s or more */
  CHECK(secs < 25, "the run took %.1f s with a 2 s budget", secs);
  CHECK(cut > 0 && err && strstr(err, "0 of"), "%d candidates cut during their build: %s", cut,
        err ? err : "");
  free(err);
  /* the cut builds' ptxas went with them: none is left sleeping (the pattern's bracket keeps
   * pgrep from finding the shell that runs it; a killed one may take a moment to go) */
  char cmd[700];
  const char *base = strrchr(ptxas, '/') ? strrchr(ptxas, '/') + 1 : ptxas;
  snprintf(cmd, sizeof cmd, "pgrep -f '%.*s[%c]%s' >/dev/null", (int)(base - ptxas), ptxas, base[0],
           base + 1);
  int alive = 1;
  for (int i = 0; i < 20 && alive; i++) {
    alive = system(cmd) == 0;
    if (alive) usleep(100000);
  }
  CHECK(!alive, "a ptxas of a cut build is still running");
}

static void test_unit(void) {
  const char *names[] = {"n", "BLOCK"};
  int64_t vals[] = {1000, 256}, v = 0;
  char err[128];
  CHECK(kiln_tune_expr_eval("cdiv(n, BLOCK)", names, vals, 2, &v, err, sizeof err) && v == 4,
        "cdiv %lld", (long long)v);
  CHECK(kiln_tune_expr_eval("max(1, n / (BLOCK * 8)) + -2 * 3 % 4", names, vals, 2, &v, err,
                            sizeof err) &&
            v == -1,
        "precedence %lld", (long long)v);
  CHECK(!kiln_tune_expr_eval("n / (BLOCK - 256)", names, vals, 2, &v, err, sizeof err) &&
            strstr(err, "division by zero"),
        "%s", err);
  CHECK(!kiln_tune_expr_eval("m + 1", names, vals, 2, &v, err, sizeof err) &&
            strstr(err, "unknown name m"),
        "%s", err);
  CHECK(!kiln_tune_expr_eval("9223372036854775807 + 1", names, vals, 2, &v, err, sizeof err),
        "overflow accepted");
  /* what a generated library prints of a grid rule parses back to the same text: never "--"
   * (cdiv(--n, BLOCK) once became a pre-decrement), no deeper nesting than the rule had (38
   * negations printed with parentheses went past the depth limit: found by fuzz_libgen) */
  static TuneExpr e;
  const char *rules[] = {"cdiv(--n, BLOCK)", "-(n - -BLOCK) * 2 - (n - 1) - 0x10",
                         "--------------------------------------n"};
  const char *want[] = {"cdiv(- -n, BLOCK)", "-(n - -BLOCK) * 2 - (n - 1) - 16", NULL};
  for (int i = 0; i < 3; i++) {
    char *text = NULL, *again = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    CHECK(m && tune_expr_parse(rules[i], &e, err, sizeof err) == 0, "%s: %s", rules[i], err);
    tune_expr_print(&e, m);
    fclose(m);
    m = open_memstream(&again, &len);
    CHECK(m && tune_expr_parse(text, &e, err, sizeof err) == 0, "'%s' printed as '%s': %s",
          rules[i], text, err);
    tune_expr_print(&e, m);
    fclose(m);
    CHECK(!strstr(text, "--") && !strcmp(text, again) && (!want[i] || !strcmp(text, want[i])),
          "'%s' printed as '%s', then '%s'", rules[i], text, again);
    free(text);
    free(again);
  }
  CHECK(tune_expr_parse("cdiv(n, BLOCK) */ int x /*", &e, err, sizeof err) &&
            strstr(err, "expected a number"),
        "%s", err);
  CHECK(tune_expr_parse("foo(n, 2)", &e, err, sizeof err) && strstr(err, "unknown function foo"),
        "%s", err);
  CHECK(kiln_tune_bucket(1000) == 1024 && kiln_tune_bucket(1024) == 1024 &&
            kiln_tune_bucket(1) == 1 && kiln_tune_bucket(0) == 0 && kiln_tune_bucket(1025) == 2048,
        "buckets");
  /* ptxas -v against one program's limits: 64 registers fit 32 warps exactly, 65 round up to
   * 72 and do not; 255 fit 8 warps; 48 KiB of static shared memory fit, one byte more not */
  KilnGpuUsage u = {true, 64, 1024, 0, 0};
  char why[160] = "";
  CHECK(tune_gpu_usage_fits(&u, 32, why, sizeof why), "64 regs x 1024 threads: %s", why);
  u.registers = 65;
  CHECK(!tune_gpu_usage_fits(&u, 32, why, sizeof why) &&
            strstr(why, "65 registers x 1024 threads = 73728"),
        "65 regs x 1024 threads: '%s'", why);
  u.registers = 255;
  CHECK(tune_gpu_usage_fits(&u, 8, why, sizeof why) && !tune_gpu_usage_fits(&u, 9, why, sizeof why),
        "255 regs");
  u = (KilnGpuUsage){true, 32, 48 * 1024, 0, 0};
  CHECK(tune_gpu_usage_fits(&u, 4, why, sizeof why), "48 KiB smem: %s", why);
  u.shared_bytes++;
  CHECK(!tune_gpu_usage_fits(&u, 4, why, sizeof why) && strstr(why, "shared memory"), "smem: '%s'",
        why);
}

/* matmul_f16's runtime parameters: three pointers, then M N K and six strides (i32), plus an
 * f32 and an i1 that must never be promised anything. */
static const TuneParam sig_params[] = {
    {"a", true, KILN_SCALAR_F16},      {"b", true, KILN_SCALAR_F16},
    {"c", true, KILN_SCALAR_F16},      {"M", false, KILN_SCALAR_I32},
    {"N", false, KILN_SCALAR_I32},     {"K", false, KILN_SCALAR_I32},
    {"sam", false, KILN_SCALAR_I32},   {"sak", false, KILN_SCALAR_I32},
    {"sbk", false, KILN_SCALAR_I64},   {"sbn", false, KILN_SCALAR_I32},
    {"alpha", false, KILN_SCALAR_F32}, {"flag", false, KILN_SCALAR_I1},
};
enum { SIG_NP = sizeof sig_params / sizeof *sig_params };

static void test_signature(void) {
  /* row-major 64x48x61: K and sam odd, N = 48 divisible, 0 is divisible too, negative -32 too */
  int64_t row[SIG_NP] = {1, 1, 1, 64, 48, 61, 61, 1, -32, 1, 1, 1};
  TuneSig s;
  tune_sig_compute(sig_params, row, SIG_NP, 255, &s);
  CHECK(!strcmp(s.text, "M%16,N%16,sak=1,sbk%16,sbn=1"), "text '%s'", s.text);
  CHECK(s.n == 5 && s.e[2].param == 7 && !s.e[2].multiple && s.e[3].multiple, "entries %d", s.n);
  KilnDefine spec[TUNE_MAX_PARAMS], mult[TUNE_MAX_PARAMS];
  size_t ns = 0, nm = 0;
  tune_sig_defines(&s, spec, &ns, mult, &nm);
  CHECK(ns == 2 && nm == 3 && !strcmp(spec[0].name, "sak") && spec[0].value == 1 &&
            !strcmp(mult[2].name, "sbk") && mult[2].value == 16,
        "defines %zu %zu", ns, nm);
  /* read back, and checked against other calls */
  TuneSig r;
  CHECK(tune_sig_parse(s.text, sig_params, SIG_NP, &r) && r.n == 5 && !strcmp(r.text, s.text),
        "parse '%s'", r.text);
  CHECK(tune_sig_holds(&r, row), "the tuned call breaks its own signature");
  int64_t other[SIG_NP];
  memcpy(other, row, sizeof other);
  other[7] = 64; /* a transposed operand: sak = 64 */
  CHECK(!tune_sig_holds(&r, other), "sak = 64 keeps 'sak=1'");
  other[7] = 1, other[4] = 40; /* N = 40: not a multiple of 16 */
  CHECK(!tune_sig_holds(&r, other), "N = 40 keeps 'N%%16'");
  other[4] = 0, other[5] = 7; /* 0 is a multiple of 16; K was never promised anything */
  CHECK(tune_sig_holds(&r, other), "N = 0, K = 7 break the signature");
  TuneSig none;
  CHECK(tune_sig_parse("", sig_params, SIG_NP, &none) && none.n == 0 &&
            tune_sig_holds(&none, other),
        "the empty signature");
  /* what cannot be checked is refused: unknown names, non-integers, other promises */
  CHECK(!tune_sig_parse("sak=1,zz%16", sig_params, SIG_NP, &r) && r.n == 0,
        "unknown name accepted");
  CHECK(!tune_sig_parse("alpha=1", sig_params, SIG_NP, &r), "an f32 parameter accepted");
  CHECK(!tune_sig_parse("flag=1", sig_params, SIG_NP, &r), "an i1 parameter accepted");
  CHECK(!tune_sig_parse("M%4", sig_params, SIG_NP, &r) &&
            !tune_sig_parse("M=2", sig_params, SIG_NP, &r),
        "another promise accepted");
  /* the library's second tier: multiples of 8 (N = 40 keeps it, 44 does not; 48 too) */
  TuneSig t8;
  int64_t rows8[SIG_NP];
  memcpy(rows8, row, sizeof rows8);
  rows8[4] = 40;
  tune_sig_compute_mod(sig_params, rows8, SIG_NP, 255, 8, &t8);
  CHECK(!strcmp(t8.text, "M%8,N%8,sak=1,sbk%8,sbn=1") && t8.e[1].mod == 8, "tier 8 '%s'", t8.text);
  tune_sig_defines(&t8, spec, &ns, mult, &nm);
  CHECK(nm == 3 && mult[1].value == 8, "tier 8 defines %zu", nm);
  CHECK(tune_sig_parse("N%8", sig_params, SIG_NP, &r) && r.n == 1 && r.e[0].mod == 8 &&
            tune_sig_holds(&r, rows8),
        "parse 'N%%8'");
  rows8[4] = 44;
  CHECK(!tune_sig_holds(&r, rows8), "N = 44 keeps 'N%%8'");
  /* a key with little room keeps the promises that fit, in order */
  tune_sig_compute(sig_params, row, SIG_NP, 12, &s);
  CHECK(!strcmp(s.text, "M%16,N%16") && s.n == 2, "truncated '%s' (%d)", s.text, s.n);
  CHECK(!strcmp(tune_sig_of_key("M=64,N=64|M%16"), "M%16") && !strcmp(tune_sig_of_key("M=64"), ""),
        "signature of a key");
}

int main(int argc, char **argv) {
  if (argc != 2) return 64;
  snprintf(dir, sizeof dir, "%s/kiln-autotune-test-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) return 2;
  const char *t = argv[1];
  if (!strcmp(t, "unit"))
    test_unit();
  else if (!strcmp(t, "faults"))
    test_faults();
  else if (!strcmp(t, "poison_and_warm"))
    test_poison_and_warm();
  else if (!strcmp(t, "hang_timeout"))
    test_hang_timeout();
  else if (!strcmp(t, "corrupt_cache"))
    test_corrupt_cache();
  else if (!strcmp(t, "concurrent"))
    test_concurrent();
  else if (!strcmp(t, "budget"))
    test_budget();
  else if (!strcmp(t, "budget_build"))
    test_budget_build();
  else if (!strcmp(t, "slow_linker"))
    test_slow_linker();
  else if (!strcmp(t, "slow_variant"))
    test_slow_variant();
  else if (!strcmp(t, "args_spec"))
    test_args_spec();
  else if (!strcmp(t, "ptxas_reason"))
    test_ptxas_reason();
  else if (!strcmp(t, "broken_linker"))
    test_broken_linker();
  else if (!strcmp(t, "signature"))
    test_signature();
  else
    return 64;
  if (!failures) { /* keep the files of a failed test for a look */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 2;
  }
  printf("%s %s (%s)\n", failures ? "FAILED" : "ok", t, dir);
  return failures != 0;
}
