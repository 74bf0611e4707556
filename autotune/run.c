/* run.c — the runner stage: time built variants on a device, one child process per timing.
 *
 * A child opens the device, loads the variant, allocates the buffers, and:
 *   - when asked to check, restores the inputs, runs once and copies every buffer back into a
 *     MAP_SHARED area, where the parent compares it with the reference candidate's;
 *   - runs a warm-up, then `reps` timed runs, each on freshly restored buffers (kernels may
 *     write their inputs), timed with runtime events (so GPUs time on the device). On GPUs a
 *     flush buffer larger than L2 is overwritten after the restore, so that the copy of the
 *     inputs does not leave them in L2 for the timed kernel (it would flatter small kernels).
 * Linking and loading happen before the timed region: the child says when the variant is
 * loaded, and only then does the time limit start (the load has a limit of its own, and a slow
 * or failing linker is the environment's failure, never the kernel's). The parent then waits
 * with a deadline and SIGKILLs a child that runs past it (hang); a child that dies on a signal
 * after loading crashed; any runtime error comes back as text.
 *
 * Order of timing: a cheap pass over every candidate, then successive halving (the better half
 * is timed again with twice the repetitions) down to three, then the finalists are re-timed
 * interleaved (A B C A B C ...) so that drift of the machine hits them alike. */
#include "tune_core.h"

#include <kiln/bundle.h>
#include <kiln/kilnrt.h>

#include <math.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 256

typedef struct ChildShared {
  int loaded; /* set (atomically) once the variant is linked, loaded and its buffers exist */
  int runs;   /* runs of the kernel finished (atomically): each restarts the time limit */
  int status; /* 1 ok, 2 runtime error */
  char err[256];
  int nsamples;
  double samples[MAX_SAMPLES];
  unsigned char out[]; /* every buffer, in parameter order, after the checked run */
} ChildShared;

static size_t total_bytes(const TuneProblem *p) {
  size_t n = 0;
  for (int i = 0; i < p->nparams; i++) n += p->bytes[i];
  return n;
}

/* ---------------------------------------------------------------- inside the child */

static int child_fail(ChildShared *sh, const char *what) {
  snprintf(sh->err, sizeof sh->err, "%s: %s", what, kiln_rt_last_error());
  sh->status = 2;
  return 2;
}

static int restore(KilnRtDevice *dev, const TuneProblem *p, void **bufs) {
  for (int i = 0; i < p->nparams; i++)
    if (p->params[i].is_ptr &&
        kiln_rt_memcpy_htod(dev, bufs[i], p->init[i], p->bytes[i], NULL) != KILN_RT_OK)
      return -1;
  return 0;
}

static void set_scalar(unsigned char *slot, const TuneParam *q, int64_t iv, double fv) {
  switch (q->scalar) {
  case KILN_SCALAR_F32: {
    float f = (float)fv;
    memcpy(slot, &f, 4);
    break;
  }
  case KILN_SCALAR_F64: memcpy(slot, &fv, 8); break;
  case KILN_SCALAR_I64:
  case KILN_SCALAR_U64: memcpy(slot, &iv, 8); break;
  case KILN_SCALAR_U32:
  case KILN_SCALAR_I32: {
    int32_t v = (int32_t)iv;
    memcpy(slot, &v, 4);
    break;
  }
  case KILN_SCALAR_U16:
  case KILN_SCALAR_I16: {
    int16_t v = (int16_t)iv;
    memcpy(slot, &v, 2);
    break;
  }
  default: {
    int8_t v = (int8_t)iv;
    memcpy(slot, &v, 1);
    break;
  } /* i8, i1 (f16 scalars: none) */
  }
}

static int child_main(const TuneTarget *tg, const char *kernel, const TuneProblem *p,
                      const TuneCand *cand, int reps, bool check, ChildShared *sh) {
  /* A faulting variant must die on its signal, which the parent reports as a crash; a
   * sanitizer's or the embedder's handler would turn it into an exit code or a slow report. */
  int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++) signal(fatal[i], SIG_DFL);
  KilnRtDevice *dev;
  KilnRtModule *mod;
  KilnRtFunction *fn;
  if (kiln_rt_device_create(tg->spec, &dev) != KILN_RT_OK) return child_fail(sh, "device");
  /* the candidate is module v<order> of its folder, a bundle (kiln/bundle.h) */
  char dir[sizeof cand->obj_path];
  snprintf(dir, sizeof dir, "%s", cand->obj_path);
  char *slash = strrchr(dir, '/');
  if (!slash) return snprintf(sh->err, sizeof sh->err, "no folder in %.200s", cand->obj_path), 2;
  *slash = '\0';
  if (kiln_rt_bundle_load(dev, dir, slash + 1, &mod) != KILN_RT_OK) return child_fail(sh, "load");
  if (kiln_rt_module_get_function(mod, kernel, &fn) != KILN_RT_OK) return child_fail(sh, "lookup");
  void *bufs[TUNE_MAX_PARAMS] = {0}, *args[TUNE_MAX_PARAMS];
  unsigned char vals[TUNE_MAX_PARAMS][8];
  for (int i = 0; i < p->nparams; i++) {
    if (p->params[i].is_ptr) {
      if (kiln_rt_malloc(dev, p->bytes[i], &bufs[i]) != KILN_RT_OK) return child_fail(sh, "malloc");
      args[i] = &bufs[i];
    } else {
      set_scalar(vals[i], &p->params[i], p->ival[i], p->fval[i]);
      args[i] = vals[i];
    }
  }
  KilnRtLaunchConfig lc = {.grid = {cand->grid[0], cand->grid[1], cand->grid[2]},
                           .block_threads = (uint32_t)cand->cfg.num_warps * 32};
  KilnRtEvent *e0, *e1;
  if (kiln_rt_event_create(dev, &e0) != KILN_RT_OK || kiln_rt_event_create(dev, &e1) != KILN_RT_OK)
    return child_fail(sh, "event");
  void *flush = NULL; /* freed with the device when the child exits */
  if (tg->flush_bytes && kiln_rt_malloc(dev, tg->flush_bytes, &flush) != KILN_RT_OK)
    return child_fail(sh, "malloc (L2 flush buffer)");
  __atomic_store_n(&sh->loaded, 1, __ATOMIC_RELEASE); /* the time limit starts now */
  if (check) {
    if (restore(dev, p, bufs) || kiln_rt_launch(fn, &lc, args, NULL) != KILN_RT_OK ||
        kiln_rt_device_synchronize(dev) != KILN_RT_OK)
      return child_fail(sh, "run");
    __atomic_add_fetch(&sh->runs, 1, __ATOMIC_RELEASE);
    size_t off = 0;
    for (int i = 0; i < p->nparams; i++) {
      if (!p->params[i].is_ptr) continue;
      if (kiln_rt_memcpy_dtoh(dev, sh->out + off, bufs[i], p->bytes[i], NULL) != KILN_RT_OK)
        return child_fail(sh, "copy back");
      off += p->bytes[i];
    }
  }
  for (int r = -1; r < reps && r < MAX_SAMPLES; r++) { /* r == -1: warm-up */
    float ms = 0;
    if (restore(dev, p, bufs) ||
        (flush && kiln_rt_memset(dev, flush, r & 0xff, tg->flush_bytes, NULL) != KILN_RT_OK) ||
        kiln_rt_event_record(e0, NULL) != KILN_RT_OK ||
        kiln_rt_launch(fn, &lc, args, NULL) != KILN_RT_OK ||
        kiln_rt_event_record(e1, NULL) != KILN_RT_OK ||
        kiln_rt_event_synchronize(e1) != KILN_RT_OK ||
        kiln_rt_event_elapsed_ms(e0, e1, &ms) != KILN_RT_OK)
      return child_fail(sh, "timed run");
    if (r >= 0) sh->samples[sh->nsamples++] = ms;
    __atomic_add_fetch(&sh->runs, 1, __ATOMIC_RELEASE);
  }
  sh->status = 1;
  return 0; /* the process ends here: the device and memory go with it */
}

/* ---------------------------------------------------------------- in the parent */

typedef struct Runner {
  const TuneTarget *tg;
  const char *kernel;
  const TuneProblem *p;
  const TuneRunOpts *o;
  unsigned char *ref; /* outputs of the reference candidate, or NULL */
  int ref_order;
  int timings;
} Runner;

static void sleep_ms(long ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* Linking and loading a variant (the system linker for host objects, the driver's loader for
 * cubins) is the environment's work, not the kernel's: on a loaded machine it can take longer
 * than the kernel's time limit, so it has a limit of its own, and going past it is a failure of
 * the environment (not cached), never a hang of the kernel. */
enum { LOAD_LIMIT_S = 120 };

enum { WAIT_RUN_TIMEOUT = -1, WAIT_LOAD_TIMEOUT = -2 };

/* Waits for pid: LOAD_LIMIT_S until the child says the variant is loaded, then timeout_s for
 * each run of the kernel (the limit starts again when a run finishes: a child of the halving
 * rounds runs 2, 4, 8 times the repetitions, and a slow but correct variant must not become a
 * hang because it was asked for more runs); kills it when it runs past either. Returns the
 * wait status, or WAIT_*_TIMEOUT. */
static int wait_limited(pid_t pid, const ChildShared *sh, double timeout_s) {
  double end = tune_now() + LOAD_LIMIT_S;
  bool loaded = false;
  int status = 0, runs = 0;
  for (long nap = 1;; nap = nap < 20 ? nap * 2 : 20) {
    if (!loaded && __atomic_load_n(&sh->loaded, __ATOMIC_ACQUIRE)) {
      loaded = true;
      end = tune_now() + timeout_s;
      nap = 1;
    }
    int done = __atomic_load_n(&sh->runs, __ATOMIC_ACQUIRE);
    if (loaded && done != runs) {
      runs = done;
      end = tune_now() + timeout_s;
    }
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return 0;
    if (tune_now() > end) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0) continue;
      return loaded ? WAIT_RUN_TIMEOUT : WAIT_LOAD_TIMEOUT;
    }
    sleep_ms(nap);
  }
}

/* How far two correct variants may differ, per element type: they sum in other orders and, in
 * 16-bit types, round intermediates (a P tile, a partial sum) at other points, so the bound
 * grows with the type's precision. `scale` is the largest magnitude in the reference buffer:
 * the absolute part covers elements that cancel to ~0 (a difference of a few ulps of the
 * buffer's large values). */
typedef struct Tolerance {
  double rel, abs_of_scale;
} Tolerance;

static Tolerance tolerance_of(KilnScalarKind k) {
  if (k == KILN_SCALAR_F16) return (Tolerance){1e-2, 1e-3};
  if (k == KILN_SCALAR_BF16) return (Tolerance){4e-2, 8e-3};
  return (Tolerance){1e-3, 1e-5};
}

static bool close_enough(double a, double b, Tolerance t, double scale) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (a == b) return true; /* infinities too */
  return fabs(a - b) <= t.rel * fmax(fabs(a), fabs(b)) + t.abs_of_scale * scale + 1e-6;
}

static double element(const unsigned char *buf, size_t i, KilnScalarKind k) {
  switch (k) {
  case KILN_SCALAR_F32: {
    float f;
    memcpy(&f, buf + 4 * i, 4);
    return f;
  }
  case KILN_SCALAR_F16: {
    uint16_t h;
    memcpy(&h, buf + 2 * i, 2);
    return kiln_f16_to_f32(h);
  }
  case KILN_SCALAR_BF16: {
    uint16_t h;
    memcpy(&h, buf + 2 * i, 2);
    return kiln_bf16_to_f32(h);
  }
  case KILN_SCALAR_I64: {
    int64_t v;
    memcpy(&v, buf + 8 * i, 8);
    return (double)v;
  }
  case KILN_SCALAR_I32: {
    int32_t v;
    memcpy(&v, buf + 4 * i, 4);
    return v;
  }
  case KILN_SCALAR_I16: {
    int16_t v;
    memcpy(&v, buf + 2 * i, 2);
    return v;
  }
  case KILN_SCALAR_F64: {
    double v;
    memcpy(&v, buf + 8 * i, 8);
    return v;
  }
  case KILN_SCALAR_U64: {
    uint64_t v;
    memcpy(&v, buf + 8 * i, 8);
    return (double)v;
  }
  case KILN_SCALAR_U32: {
    uint32_t v;
    memcpy(&v, buf + 4 * i, 4);
    return v;
  }
  case KILN_SCALAR_U16: {
    uint16_t v;
    memcpy(&v, buf + 2 * i, 2);
    return v;
  }
  case KILN_SCALAR_U8: return buf[i];
  default: return (int8_t)buf[i];
  }
}

/* The largest finite magnitude among the n elements of a reference buffer. */
static double max_magnitude(const unsigned char *buf, size_t n, KilnScalarKind k) {
  double m = 0.0;
  for (size_t j = 0; j < n; j++) {
    double v = fabs(element(buf, j, k));
    if (isfinite(v) && v > m) m = v;
  }
  return m;
}

/* Floats: within the element type's tolerance (tolerance_of); integers exact. */
static bool outputs_match(const Runner *R, const unsigned char *got, char *why, size_t cap) {
  size_t off = 0;
  for (int i = 0; i < R->p->nparams; i++) {
    const TuneParam *q = &R->p->params[i];
    if (!q->is_ptr) continue;
    bool fl = kiln_scalar_is_float(q->scalar);
    Tolerance tol = tolerance_of(q->scalar);
    double scale = fl ? max_magnitude(R->ref + off, R->p->elems[i], q->scalar) : 0.0;
    for (size_t j = 0; j < R->p->elems[i]; j++) {
      double a = element(R->ref + off, j, q->scalar), b = element(got + off, j, q->scalar);
      if (fl ? !close_enough(a, b, tol, scale) : a != b) {
        snprintf(why, cap, "wrong result: %s[%zu] = %g, reference (config #%d) has %g", q->name, j,
                 b, R->ref_order, a);
        return false;
      }
    }
    off += R->p->bytes[i];
  }
  return true;
}

static void add_samples(TuneCand *c, const double *s, int n) {
  double *ns = realloc(c->samples, (size_t)(c->nsamples + n) * sizeof *ns);
  if (!ns) return;
  memcpy(ns + c->nsamples, s, (size_t)n * sizeof *s);
  c->samples = ns;
  c->nsamples += n;
}

__attribute__((format(printf, 3, 4))) static void set_failure(TuneCand *c, TuneState st,
                                                              const char *fmt, ...) {
  c->state = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->detail, sizeof c->detail, fmt, ap);
  va_end(ap);
}

/* One child: check (compare or become the reference) and/or `reps` timed runs. */
static void run_child(Runner *R, TuneCand *c, int reps, bool check) {
  size_t out = check ? total_bytes(R->p) : 0, size = sizeof(ChildShared) + out;
  ChildShared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return set_failure(c, ST_FAILED, "run: cannot map shared memory");
  fflush(NULL);
  pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    tune_child_dies_with_parent(parent);
    _exit(child_main(R->tg, R->kernel, R->p, c, reps, check, sh));
  }
  if (pid < 0) {
    munmap(sh, size);
    return set_failure(c, ST_FAILED, "run: fork failed");
  }
  if (reps > 0) {
    R->timings++;
    c->timings++;
  }
  int status = wait_limited(pid, sh, R->o->timeout_s);
  if (status == WAIT_RUN_TIMEOUT)
    set_failure(c, ST_HANG, "hang: killed after the %gs time limit of one run", R->o->timeout_s);
  else if (status == WAIT_LOAD_TIMEOUT)
    set_failure(c, ST_FAILED, "load: linking or loading the variant took over %ds", LOAD_LIMIT_S);
  else if (WIFSIGNALED(status) &&
           !sh->loaded) /* the linker's or loader's fault, not the kernel's */
    set_failure(c, ST_FAILED, "load: the child died on signal %s (%d) while loading the variant",
                strsignal(WTERMSIG(status)), WTERMSIG(status));
  else if (WIFSIGNALED(status))
    set_failure(c, ST_CRASH, "crash: signal %s (%d)", strsignal(WTERMSIG(status)),
                WTERMSIG(status));
  else if (sh->status != 1)
    set_failure(c, ST_FAILED, "run: %s", sh->err[0] ? sh->err : "the child failed");
  else {
    add_samples(c, sh->samples, sh->nsamples);
    if (check && !R->ref) {
      R->ref = malloc(out ? out : 1);
      if (R->ref) memcpy(R->ref, sh->out, out);
      R->ref_order = c->order;
    } else if (check && !outputs_match(R, sh->out, c->detail, sizeof c->detail)) {
      c->state = ST_MISMATCH;
    }
  }
  munmap(sh, size);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void summarize(TuneCand *c) {
  if (c->nsamples == 0) return;
  qsort(c->samples, (size_t)c->nsamples, sizeof *c->samples, cmp_double);
  int n = c->nsamples;
  c->median_ms = n % 2 ? c->samples[n / 2] : 0.5 * (c->samples[n / 2 - 1] + c->samples[n / 2]);
  c->p25_ms = c->samples[(n - 1) / 4];
  c->p75_ms = c->samples[(3 * (n - 1) + 3) / 4];
  c->min_ms = c->samples[0];
  c->reps = n;
}

static bool out_of_time(const TuneRunOpts *o) {
  return o->deadline > 0 && tune_now() > o->deadline;
}

static void progress(const TuneRunOpts *o, const char *kernel, int done, int total,
                     const char *what) {
  if (!o->progress || total <= 0) return;
  int w = 30, fill = done * w / total;
  fprintf(o->log, "\r%-20.20s %-8s [%.*s%*s] %d/%d", kernel, what, fill,
          "##############################", w - fill, "", done, total);
  if (done == total) fputc('\n', o->log);
  fflush(o->log);
}

static int by_median(const TuneCand *c, int a, int b) {
  double x = c[a].median_ms, y = c[b].median_ms;
  return (x > y) - (x < y);
}

/* Indices of the OK candidates among idx, fastest first (insertion sort: n is small). */
static int ok_sorted(TuneCand *c, const int *idx, int nidx, int *out) {
  int n = 0;
  for (int k = 0; k < nidx; k++) {
    int i = idx[k]; /* read first: out may be idx */
    if (c[i].state != ST_PENDING && c[i].state != ST_OK) continue;
    summarize(&c[i]);
    int j = n++;
    while (j > 0 && by_median(c, i, out[j - 1]) < 0) {
      out[j] = out[j - 1];
      j--;
    }
    out[j] = i;
  }
  return n;
}

static void halving(Runner *R, TuneCand *c, const int *idx, int nidx) {
  int *surv = malloc((size_t)(nidx > 0 ? nidx : 1) * sizeof *surv);
  if (!surv) return;
  int n = ok_sorted(c, idx, nidx, surv), reps = R->o->reps * 2;
  while (n > 3 && !out_of_time(R->o)) {
    int keep = (n + 1) / 2 < 3 ? 3 : (n + 1) / 2;
    for (int k = 0; k < keep && !out_of_time(R->o); k++) {
      run_child(R, &c[surv[k]], reps, false);
      progress(R->o, R->kernel, k + 1, keep, "halving");
    }
    n = ok_sorted(c, surv, keep, surv);
    reps *= 2;
  }
  for (int round = 0; round < 3 && n >= 2 && !out_of_time(R->o); round++) /* interleaved finals */
    for (int k = 0; k < n && k < 3; k++) run_child(R, &c[surv[k]], R->o->reps, false);
  free(surv);
}

int tune_run(const TuneTarget *tg, const char *kernel, const TuneProblem *p, TuneCand *c,
             const int *idx, int nidx, int ref, const TuneRunOpts *o) {
  Runner R = {tg, kernel, p, o, NULL, -1, 0};
  if (ref >= 0) { /* a cached winner, run only to give the new configs a reference */
    TuneCand tmp = c[ref];
    tmp.samples = NULL;
    tmp.nsamples = 0;
    run_child(&R, &tmp, 0, true);
    free(tmp.samples);
  }
  int built = 0;
  for (int k = 0; k < nidx; k++) built += c[idx[k]].state == ST_PENDING;
  for (int k = 0, done = 0; k < nidx; k++) {
    TuneCand *cand = &c[idx[k]];
    if (cand->state != ST_PENDING) continue;
    if (out_of_time(o)) {
      cand->state = ST_BUDGET;
      snprintf(cand->detail, sizeof cand->detail, "not timed: the --budget ran out");
      continue;
    }
    run_child(&R, cand, o->reps, true);
    progress(o, kernel, ++done, built, "timing");
  }
  halving(&R, c, idx, nidx);
  for (int k = 0; k < nidx; k++) {
    TuneCand *cand = &c[idx[k]];
    summarize(cand);
    if (cand->state == ST_PENDING) cand->state = cand->nsamples ? ST_OK : ST_FAILED;
  }
  free(R.ref);
  return R.timings;
}

void tune_cands_free(TuneCand *c, int n) {
  if (!c) return;
  for (int i = 0; i < n; i++) free(c[i].samples);
  free(c);
}
