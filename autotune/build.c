/* build.c — the builder stage: compile variants in fork()ed workers.
 *
 * Why processes and not threads: kiln_driver_compile creates an MLIR context per call and the
 * frontend keeps per-compilation state, but nothing documents the driver as thread-safe, and a
 * compiler crash on one variant must not take the tuner down. Workers take variants from a
 * shared counter (so a slow variant does not hold up a fixed share), write module `v<order>`
 * (a host object, or a cubin for sm_80/sm_90) into the run's temp dir as an image of the one
 * bundle format (kiln/bundle.h: v<order>.<target>.<o|cubin>, which the timing child loads with
 * kiln_rt_bundle_load, as kiln-tune-runner does from a bundle) and report in a MAP_SHARED table. The parent holds no MLIR or runtime
 * state when it forks. A cubin whose registers or shared memory (ptxas -v) exceed what one
 * program may use is pruned with the numbers. */
#include "internal.h"

#include <kiln/bundle.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

void tune_sig_defines(const TuneSig *s, KilnDefine *spec, size_t *nspec, KilnDefine *mult,
                      size_t *nmult) {
  *nspec = *nmult = 0;
  for (int k = 0; k < s->n; k++) {
    if (s->e[k].multiple)
      mult[(*nmult)++] = (KilnDefine){s->e[k].name, s->e[k].mod};
    else
      spec[(*nspec)++] = (KilnDefine){s->e[k].name, 1};
  }
}

typedef struct BuildSlot {
  int done; /* 1 built, 2 failed */
  double ms;
  char err[256];
  KilnGpuUsage usage; /* GPU targets: ptxas -v */
} BuildSlot;

typedef struct BuildShared {
  atomic_int next;
  BuildSlot slots[];
} BuildShared;

/* Lines of a failed build's log that a heading ending in ':' takes along: ptxas's own message
 * ("kiln: error: ptxas failed for sm_90:" then ptxas's lines) is the reason, the heading only
 * says who failed. */
enum { LOG_HEAD_BYTES = 4096, LOG_REASON_LINES = 3 };

/* The reason a build failed, for the report: the first line of the driver's diagnostics, and
 * when it ends with ':' the next LOG_REASON_LINES non-empty lines after it, joined with " | ".
 * Reads only the log's first LOG_HEAD_BYTES (a compiler's log can be large). */
static void failure_reason(const char *log_path, char *buf, size_t cap) {
  char head[LOG_HEAD_BYTES + 1];
  size_t n = 0;
  FILE *f = fopen(log_path, "r");
  if (f) {
    n = fread(head, 1, LOG_HEAD_BYTES, f);
    fclose(f);
  }
  head[n] = '\0';
  char *line = head, *save = NULL;
  size_t used = 0;
  int taken = 0;
  for (char *l = strtok_r(line, "\n", &save); l && taken <= LOG_REASON_LINES && used + 1 < cap;
       l = strtok_r(NULL, "\n", &save)) {
    while (*l == ' ' || *l == '\t') l++;
    if (!*l) continue;
    int w = snprintf(buf + used, cap - used, "%s%s", taken ? " | " : "", l);
    used += w < 0 ? 0 : (size_t)w < cap - used ? (size_t)w : cap - used - 1;
    size_t len = strlen(l);
    if (taken++ == 0 && (len == 0 || l[len - 1] != ':')) break; /* a one-line diagnostic */
  }
  if (!taken) snprintf(buf, cap, "compile failed");
}

int tune_image_path(const char *module_path, KilnTarget target, char *buf, size_t cap) {
  bool gpu = target == KILN_TARGET_SM80 || target == KILN_TARGET_SM90;
  const char *slash = strrchr(module_path, '/');
  char name[256];
  if (!slash || snprintf(name, sizeof name, "%s", slash + 1) >= (int)sizeof name) return -1;
  char file[400];
  if (kiln_rt_bundle_image_name(file, sizeof file, name, kiln_target_name(target),
                                gpu ? KILN_RT_MODULE_CUBIN : KILN_RT_MODULE_HOST_OBJECT) != 0)
    return -1;
  int n = snprintf(buf, cap, "%.*s/%s", (int)(slash - module_path), module_path, file);
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

static void build_one(const char *path, const char *src, size_t srclen, const char *kernel,
                      const TuneSig *sig, const TuneTarget *tg, TuneCand *cand, const char *tmpdir,
                      BuildSlot *slot) {
  char log_path[600];
  snprintf(log_path, sizeof log_path, "%s/v%d.log", tmpdir, cand->order);
  snprintf(cand->obj_path, sizeof cand->obj_path, "%s/v%d", tmpdir, cand->order);
  FILE *diag = fopen(log_path, "w");
  KilnDefine defs[32];
  int nd = 0;
  for (int i = 0; i < cand->cfg.nbindings && i < 32; i++)
    defs[nd++] = (KilnDefine){cand->cfg.bindings[i].name, cand->cfg.bindings[i].value};
  KilnDefine spec[TUNE_MAX_PARAMS], mult[TUNE_MAX_PARAMS];
  size_t nspec = 0, nmult = 0;
  if (sig) tune_sig_defines(sig, spec, &nspec, mult, &nmult);
  KilnCompileOptions o = {.path = path,
                          .source = src,
                          .source_len = srclen,
                          .kernel = kernel,
                          .defines = defs,
                          .num_defines = (size_t)nd,
                          .specialize = spec,
                          .num_specialize = nspec,
                          .multiple_of = mult,
                          .num_multiple_of = nmult,
                          .target = tg->target,
                          .cpu = tg->cpu[0] ? tg->cpu : NULL,
                          .index_bits = tg->index_bits == 64 ? 64 : 32,
                          .num_warps = cand->cfg.num_warps,
                          .num_stages = cand->cfg.num_stages,
                          .diag = diag ? diag : stderr,
                          .gpu_usage = &slot->usage};
  KilnBuffer obj = {0};
  char image[600] = "";
  double t0 = tune_now();
  bool gpu = tg->target == KILN_TARGET_SM80 || tg->target == KILN_TARGET_SM90;
  KilnDriverStatus st = kiln_driver_compile(&o, gpu ? KILN_EMIT_CUBIN : KILN_EMIT_OBJ, &obj);
  slot->ms = (tune_now() - t0) * 1e3;
  if (diag) fclose(diag);
  if (st != KILN_DRIVER_OK) {
    failure_reason(log_path, slot->err, sizeof slot->err);
    slot->done = 2;
  } else if (tune_image_path(cand->obj_path, tg->target, image, sizeof image) != 0 ||
             kiln_file_write_atomic(image, obj.data, obj.size) != 0) {
    snprintf(slot->err, sizeof slot->err, "cannot write %.200s", image);
    slot->done = 2;
  } else {
    slot->done = 1;
  }
  kiln_buffer_free(&obj);
}

static void worker(const char *path, const char *src, size_t srclen, const char *kernel,
                   const TuneSig *sig, const TuneTarget *tg, TuneCand *c, const int *idx, int nidx,
                   const char *tmpdir, const TuneRunOpts *o, BuildShared *sh) {
  for (;;) {
    int k = atomic_fetch_add(&sh->next, 1);
    if (k >= nidx) break;
    if (o->deadline > 0 && tune_now() > o->deadline) {
      snprintf(sh->slots[k].err, sizeof sh->slots[k].err, "budget");
      sh->slots[k].done = 2;
      continue;
    }
    build_one(path, src, srclen, kernel, sig, tg, &c[idx[k]], tmpdir, &sh->slots[k]);
  }
}

/* Waits for the workers. With a deadline (--budget) a build under way when it passes is not
 * waited for: a variant can take minutes to compile (an emulator object of a large kernel on a
 * loaded machine), and the budget bounds the run's wall time, so the workers are killed and
 * true returned. *died: the last signal a worker died of by itself. */
static bool wait_workers(pid_t *pids, int n, double deadline, int *died) {
  int left = n;
  while (left > 0) {
    for (int w = 0; w < n; w++) {
      int status = 0;
      if (pids[w] <= 0) continue;
      pid_t r = waitpid(pids[w], &status, deadline > 0 ? WNOHANG : 0);
      if (r == pids[w] || (r < 0 && errno == ECHILD)) {
        if (r == pids[w] && WIFSIGNALED(status)) *died = WTERMSIG(status);
        pids[w] = 0;
        left--;
      }
    }
    if (left == 0) break;
    if (deadline > 0 && tune_now() > deadline) {
      for (int w = 0; w < n; w++)
        if (pids[w] > 0) kill(-pids[w], SIGKILL);
      for (int w = 0; w < n; w++)
        if (pids[w] > 0)
          while (waitpid(pids[w], NULL, 0) < 0 && errno == EINTR) continue;
      return true;
    }
    if (deadline > 0) usleep(20000);
  }
  return false;
}

void tune_build(const char *path, const char *src, size_t srclen, const char *kernel,
                const TuneSig *sig, const TuneTarget *tg, TuneCand *c, const int *idx, int nidx,
                const char *tmpdir, const TuneRunOpts *o) {
  if (nidx <= 0) return;
  size_t size = sizeof(BuildShared) + (size_t)nidx * sizeof(BuildSlot);
  BuildShared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) {
    for (int k = 0; k < nidx; k++) {
      c[idx[k]].state = ST_FAILED;
      snprintf(c[idx[k]].detail, sizeof c[idx[k]].detail, "build: cannot map shared memory");
    }
    return;
  }
  atomic_init(&sh->next, 0);
  int nworkers = o->jobs < 1 ? 1 : o->jobs > nidx ? nidx : o->jobs;
  fflush(NULL);
  pid_t pids[256], parent = getpid();
  int started = 0;
  for (int w = 0; w < nworkers && w < 256; w++) {
    pid_t pid = fork();
    if (pid == 0) {
      /* its own process group, so that a budget cut also ends the ptxas it may be running */
      setpgid(0, 0);
      tune_child_dies_with_parent(parent);
      worker(path, src, srclen, kernel, sig, tg, c, idx, nidx, tmpdir, o, sh);
      _exit(0);
    }
    if (pid > 0) {
      setpgid(pid, pid); /* as the child does: whichever runs first */
      pids[started++] = pid;
    }
  }
  if (started == 0) worker(path, src, srclen, kernel, sig, tg, c, idx, nidx, tmpdir, o, sh);
  int died = 0;
  bool cut = wait_workers(pids, started, o->deadline, &died);
  for (int k = 0; k < nidx; k++) {
    TuneCand *cand = &c[idx[k]];
    BuildSlot *s = &sh->slots[k];
    snprintf(cand->obj_path, sizeof cand->obj_path, "%s/v%d", tmpdir, cand->order);
    cand->compile_ms = s->ms;
    cand->usage = s->usage;
    /* registers and shared memory are known once ptxas has run: a variant that cannot launch
     * is pruned here, before anything is timed */
    if (s->done == 1 && s->usage.valid &&
        !tune_gpu_usage_fits(&s->usage, cand->cfg.num_warps, cand->detail, sizeof cand->detail))
      cand->state = ST_PRUNED;
    if (s->done == 1) continue;
    if (s->done == 0 && cut) { /* its build was under way when the budget ran out */
      cand->state = ST_BUDGET;
      snprintf(cand->detail, sizeof cand->detail,
               "not built: the --budget ran out during its build");
      continue;
    }
    const char *limit = s->done == 2 ? strstr(s->err, "limit: shared memory") : NULL;
    if (s->done == 2 && !strcmp(s->err, "budget")) {
      cand->state = ST_BUDGET;
      snprintf(cand->detail, sizeof cand->detail, "not built: the --budget ran out");
    } else if (limit) {
      /* the compiler's "limit:" verdict (a pipeline ring or arena over the target's shared
       * memory) is a config that cannot launch, like ptxas's limits above: pruned, with why */
      cand->state = ST_PRUNED;
      snprintf(cand->detail, sizeof cand->detail, "%.250s", limit);
    } else {
      cand->state = ST_FAILED;
      if (s->done == 2)
        snprintf(cand->detail, sizeof cand->detail, "build: %.240s", s->err);
      else
        snprintf(cand->detail, sizeof cand->detail, "build: the compiler died (signal %d)", died);
    }
  }
  munmap(sh, size);
}
