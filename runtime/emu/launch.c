/* launch.c — grid, blocks and fibers.
 *
 * How it works: kiln_emu_launch starts num_os_threads workers (the calling thread is one of
 * them). Each worker takes block indices from a shared counter and runs each block to its end:
 * it (re)creates one ucontext fiber per GPU thread on stacks it keeps for the whole launch, then
 * resumes the runnable fibers round-robin. A fiber runs until it returns, blocks (barrier, warp
 * collective) or fails; whoever completes a barrier or collective marks the waiters runnable.
 * When no fiber of the block could run but some are still alive, nothing can ever wake them:
 * that is a deadlock, reported with what every warp waits on. With a seed (KilnEmuLaunch.seed)
 * each round resumes the runnable fibers in a fresh random order instead of thread order.
 */
#include "emu_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(EMU_ASAN)
#define EMU_ASAN 1
#endif
#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

struct EmuLaunchState {
  EmuRange *ranges; /* memcheck's snapshot of the allocation table, owned */
  size_t nranges;
  KilnEmuKernelFn fn;
  void **args;
  KilnEmuLaunch cfg;
  uint64_t nblocks;
  atomic_uint_fast64_t next_block;
  atomic_bool failed;
  pthread_mutex_t lock; /* guards status and msg */
  KilnEmuStatus status;
  char msg[EMU_MSG_BYTES];
};

static _Thread_local EmuWorker *tls_worker;
static _Thread_local char tls_last_error[EMU_MSG_BYTES];

EmuWorker *kiln_emu_worker(void) { return tls_worker; }

EmuFiber *kiln_emu_current(void) { return tls_worker ? tls_worker->cur : NULL; }

const char *kiln_emu_last_error(void) { return tls_last_error; }

const char *kiln_emu_status_name(KilnEmuStatus status) {
  static const char *const names[KILN_EMU_STATUS_COUNT] = {
      [KILN_EMU_OK] = "KILN_EMU_OK",
      [KILN_EMU_ERROR_INVALID_ARGUMENT] = "KILN_EMU_ERROR_INVALID_ARGUMENT",
      [KILN_EMU_ERROR_OUT_OF_MEMORY] = "KILN_EMU_ERROR_OUT_OF_MEMORY",
      [KILN_EMU_ERROR_SYSTEM] = "KILN_EMU_ERROR_SYSTEM",
      [KILN_EMU_ERROR_DEADLOCK] = "KILN_EMU_ERROR_DEADLOCK",
      [KILN_EMU_ERROR_TRAP] = "KILN_EMU_ERROR_TRAP",
      [KILN_EMU_ERROR_ASSERT] = "KILN_EMU_ERROR_ASSERT",
      [KILN_EMU_ERROR_MEMORY] = "KILN_EMU_ERROR_MEMORY",
      [KILN_EMU_ERROR_INVALID_OP] = "KILN_EMU_ERROR_INVALID_OP",
      [KILN_EMU_ERROR_RACE] = "KILN_EMU_ERROR_RACE",
      [KILN_EMU_ERROR_UNINIT] = "KILN_EMU_ERROR_UNINIT",
  };
  if ((unsigned)status >= KILN_EMU_STATUS_COUNT) return "KILN_EMU_STATUS_UNKNOWN";
  return names[status];
}

/* ---- context switches ---------------------------------------------------------------------- */

/* Scheduler -> fiber. ASan must be told which stack becomes current, or it reports the fiber's
 * frames as stack overflows / bad accesses. */
static void resume_fiber(EmuWorker *w, EmuFiber *f) {
  w->cur = f;
#ifdef EMU_ASAN
  __sanitizer_start_switch_fiber(&w->sched_fake_stack, f->stack, f->stack_bytes);
#endif
  swapcontext(&w->sched_uc, &f->uc);
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(w->sched_fake_stack, NULL, NULL);
#endif
  w->cur = NULL;
}

/* Fiber -> scheduler. `final`: the fiber is never resumed, so ASan may drop its fake stack. */
static void yield_to_scheduler(EmuWorker *w, EmuFiber *f, bool final) {
#ifdef EMU_ASAN
  __sanitizer_start_switch_fiber(final ? NULL : &f->fake_stack, w->sched_stack_bottom,
                                 w->sched_stack_bytes);
#else
  (void) final;
#endif
  swapcontext(&f->uc, &w->sched_uc);
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(f->fake_stack, &w->sched_stack_bottom, &w->sched_stack_bytes);
#endif
}

static _Noreturn void leave_for_good(EmuWorker *w, EmuFiber *f) {
  for (;;) /* the scheduler never resumes a fiber that left for good */
    yield_to_scheduler(w, f, true);
}

void kiln_emu_block(EmuWorker *w, EmuFiber *f, EmuWait why) {
  f->state = EMU_BLOCKED;
  f->wait = why;
  yield_to_scheduler(w, f, false);
  f->wait = EMU_WAIT_NONE;
}

_Noreturn void kiln_emu_fiber_exit(EmuWorker *w, EmuFiber *f) {
  kiln_emu_wgmma_reads_drop(w, f); /* a wgmma never waited for: nothing more to check */
  kiln_emu_copies_flush(f, true, 0);
  f->state = EMU_EXITED;
  w->live--;
  kiln_emu_barriers_on_exit(w);
  leave_for_good(w, f);
}

static void fiber_main(void) {
  EmuWorker *w = tls_worker;
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(NULL, &w->sched_stack_bottom, &w->sched_stack_bytes);
#endif
  w->fn(w->args);
  kiln_emu_fiber_exit(w, w->cur);
}

static void set_msg(EmuWorker *w, KilnEmuStatus status, const char *text) {
  if (w->failed) return; /* the first failure is the one worth reporting */
  w->failed = true;
  w->status = status;
  snprintf(w->msg, sizeof w->msg, "%s", text);
}

_Noreturn void kiln_emu_fail(EmuWorker *w, EmuFiber *f, KilnEmuStatus status, const char *fmt,
                             ...) {
  char detail[EMU_MSG_BYTES / 2], text[EMU_MSG_BYTES];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  snprintf(text, sizeof text, "block (%u,%u,%u) thread %u (warp %u lane %u): %s", w->ctaid[0],
           w->ctaid[1], w->ctaid[2], f->tid, f->tid / KILN_EMU_WARP_SIZE,
           f->tid % KILN_EMU_WARP_SIZE, detail);
  set_msg(w, status, text);
  leave_for_good(w, f);
}

/* ---- deadlock report ----------------------------------------------------------------------- */

static void describe_lane(const EmuWorker *w, const EmuFiber *f, char *buf, size_t n) {
  if (f->state == EMU_EXITED) {
    snprintf(buf, n, "exited");
  } else if (f->wait == EMU_WAIT_BARRIER) {
    const EmuBarrier *b = &w->bars[f->barrier_id];
    snprintf(buf, n, "bar.sync %u (%u of %u arrived)", f->barrier_id, b->arrived,
             b->expected ? b->expected : w->live);
  } else if (f->wait == EMU_WAIT_COLLECTIVE) {
    snprintf(buf, n, "%s mask 0x%08x", kiln_emu_coll_name(f->coll.kind), f->coll.mask);
  } else {
    snprintf(buf, n, "running");
  }
}

static void append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t n, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, n - len, fmt, ap);
  va_end(ap);
}

/* "warp 0: lanes 0-15 bar.sync 0 (...); lanes 16-31 shfl.sync mask 0xffffffff" for each warp. */
static void report_deadlock(EmuWorker *w) {
  char text[EMU_MSG_BYTES];
  snprintf(text, sizeof text,
           "block (%u,%u,%u): deadlock, every live thread is blocked:", w->ctaid[0], w->ctaid[1],
           w->ctaid[2]);
  for (uint32_t base = 0; base < w->nthreads; base += KILN_EMU_WARP_SIZE) {
    append(text, sizeof text, " warp %u:", base / KILN_EMU_WARP_SIZE);
    uint32_t first = 0;
    char prev[128], cur[128];
    describe_lane(w, &w->fibers[base], prev, sizeof prev);
    for (uint32_t lane = 1; lane <= KILN_EMU_WARP_SIZE; lane++) {
      if (lane < KILN_EMU_WARP_SIZE) {
        describe_lane(w, &w->fibers[base + lane], cur, sizeof cur);
        if (strcmp(cur, prev) == 0) continue;
      }
      append(text, sizeof text, " lanes %u-%u %s;", first, lane - 1, prev);
      first = lane;
      if (lane < KILN_EMU_WARP_SIZE) memcpy(prev, cur, sizeof prev);
    }
  }
  set_msg(w, KILN_EMU_ERROR_DEADLOCK, text);
}

/* ---- blocks -------------------------------------------------------------------------------- */

static void start_fiber(EmuWorker *w, EmuFiber *f) {
  f->state = EMU_RUNNABLE;
  f->wait = EMU_WAIT_NONE;
  f->fake_stack = NULL;
  memset(&f->coll, 0, sizeof f->coll);
  f->ncopies = 0;
  f->next_group = 0;
  f->n_wg_reads = f->n_wg_chunks = 0;
  f->wg_issued = f->wg_next_group = 0;
#ifdef EMU_ASAN
  /* A fiber dropped mid-call (trap, failure) leaves its frames' redzones poisoned. */
  __asan_unpoison_memory_region(f->stack, f->stack_bytes);
#endif
  getcontext(&f->uc);
  f->uc.uc_stack.ss_sp = f->stack;
  f->uc.uc_stack.ss_size = f->stack_bytes;
  f->uc.uc_link = NULL; /* fibers never return from fiber_main */
  makecontext(&f->uc, fiber_main, 0);
  (void)w;
}

/* splitmix64: small, and good enough to shuffle fibers. */
static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* The order fibers are resumed in this round: thread order, or a fresh random permutation when
 * the launch has a seed (a race whose outcome depends on who runs first then shows up as
 * different numbers under different seeds, even with racecheck off). */
static void schedule_round(EmuWorker *w) {
  if (!w->order) return;
  for (uint32_t i = 0; i < w->nthreads; i++) w->order[i] = i;
  for (uint32_t i = w->nthreads - 1; i > 0; i--) {
    uint32_t j = (uint32_t)(next_random(&w->rng) % (i + 1));
    uint32_t t = w->order[i];
    w->order[i] = w->order[j];
    w->order[j] = t;
  }
}

/* Checker state for a new block: a new epoch and block generation make every shadow record of
 * the previous block old (nothing to clear), so the arena counts as unwritten. */
static void reset_checks(EmuWorker *w, uint64_t index) {
  w->epoch++;
  w->block_gen++;
  memset(w->warp_epoch, 0, sizeof w->warp_epoch);
  kiln_emu_wgmma_reads_reset(w); /* a failed block may have left reads pending */
  w->rng = w->cfg.seed ^ (index * 0xd1b54a32d192ed03u); /* per block: the same on any OS thread */
}

static void run_block(EmuWorker *w, uint64_t index) {
  const uint32_t *g = w->cfg.grid;
  w->ctaid[0] = (uint32_t)(index % g[0]);
  w->ctaid[1] = (uint32_t)(index / g[0] % g[1]);
  w->ctaid[2] = (uint32_t)(index / g[0] / g[1]);
  w->failed = false;
  w->live = w->nthreads;
  memset(w->bars, 0, sizeof w->bars);
  memset(w->shared, 0xff, w->cfg.shared_bytes);
  reset_checks(w, index);
  for (uint32_t i = 0; i < w->nthreads; i++) start_fiber(w, &w->fibers[i]);

  while (w->live > 0) {
    bool ran = false;
    schedule_round(w);
    for (uint32_t k = 0; k < w->nthreads && !w->failed; k++) {
      EmuFiber *f = &w->fibers[w->order ? w->order[k] : k];
      if (f->state == EMU_RUNNABLE) {
        resume_fiber(w, f);
        ran = true;
      }
    }
    if (w->failed || atomic_load(&w->launch->failed)) return;
    if (!ran && w->live > 0) {
      report_deadlock(w);
      return;
    }
  }
}

static void worker_free(EmuWorker *w) {
  if (w->fibers) {
    for (uint32_t i = 0; i < w->nthreads; i++) {
      free(w->fibers[i].copies);
      free(w->fibers[i].wg_reads);
      free(w->fibers[i].wg_chunks);
    }
  }
  free(w->fibers);
  free(w->shadow);
  free(w->wg_pending);
  free(w->wg_stamp);
  free(w->order);
  if (w->stacks) munmap(w->stacks, w->stacks_bytes);
  free(w->shared);
}

/* The arena's allocation: at least 16 bytes, a whole number of EMU_SHARED_ALIGN (aligned_alloc
 * wants a multiple of the alignment). */
static size_t shared_arena_bytes(uint32_t shared_bytes) {
  return ((size_t)shared_bytes + 16 + EMU_SHARED_ALIGN - 1) / EMU_SHARED_ALIGN * EMU_SHARED_ALIGN;
}

/* Stacks come from one mapping with a PROT_NONE page under each, so an overflow faults at once
 * instead of corrupting the neighbouring fiber. */
static KilnEmuStatus worker_init(EmuWorker *w, EmuLaunchState *L) {
  memset(w, 0, sizeof *w);
  w->launch = L;
  w->fn = L->fn;
  w->args = L->args;
  w->cfg = L->cfg;
  w->nthreads = L->cfg.block[0] * L->cfg.block[1] * L->cfg.block[2];
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t stack = L->cfg.stack_bytes ? L->cfg.stack_bytes : KILN_EMU_DEFAULT_STACK_BYTES;
  stack = (stack + page - 1) / page * page;
  size_t stride = stack + page;
  w->fibers = calloc(w->nthreads, sizeof *w->fibers);
  w->shared = aligned_alloc(EMU_SHARED_ALIGN, shared_arena_bytes(L->cfg.shared_bytes));
  void *map = mmap(NULL, stride * w->nthreads, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map != MAP_FAILED) {
    w->stacks = map;
    w->stacks_bytes = stride * w->nthreads;
  }
  w->ranges = L->ranges;
  w->nranges = L->nranges;
  if (L->cfg.checks & (KILN_EMU_CHECK_RACE | KILN_EMU_CHECK_INIT))
    w->shadow = calloc((size_t)L->cfg.shared_bytes + 1, sizeof *w->shadow);
  if (L->cfg.seed) w->order = malloc(w->nthreads * sizeof *w->order);
  if (!w->fibers || !w->shared || !w->stacks ||
      (!w->shadow && (L->cfg.checks & (KILN_EMU_CHECK_RACE | KILN_EMU_CHECK_INIT))) ||
      (!w->order && L->cfg.seed) || !kiln_emu_wgmma_reads_init(w))
    return KILN_EMU_ERROR_OUT_OF_MEMORY;
  for (uint32_t i = 0; i < w->nthreads; i++) {
    EmuFiber *f = &w->fibers[i];
    unsigned char *lo = w->stacks + (size_t)i * stride;
    if (mprotect(lo, page, PROT_NONE) != 0) return KILN_EMU_ERROR_SYSTEM;
    f->stack = lo + page;
    f->stack_bytes = stack;
    f->tid = i;
    f->tid3[0] = i % w->cfg.block[0];
    f->tid3[1] = i / w->cfg.block[0] % w->cfg.block[1];
    f->tid3[2] = i / w->cfg.block[0] / w->cfg.block[1];
  }
  return KILN_EMU_OK;
}

static void launch_fail(EmuLaunchState *L, KilnEmuStatus status, const char *msg) {
  pthread_mutex_lock(&L->lock);
  if (L->status == KILN_EMU_OK) {
    L->status = status;
    snprintf(L->msg, sizeof L->msg, "%s", msg);
  }
  pthread_mutex_unlock(&L->lock);
  atomic_store(&L->failed, true);
}

static void *worker_main(void *arg) {
  EmuLaunchState *L = arg;
  EmuWorker *w = malloc(sizeof *w);
  if (!w) {
    launch_fail(L, KILN_EMU_ERROR_OUT_OF_MEMORY, "out of memory for an emulator worker");
    return NULL;
  }
  KilnEmuStatus st = worker_init(w, L);
  if (st != KILN_EMU_OK) {
    launch_fail(L, st, "cannot allocate the fiber stacks or the shared arena of a worker");
  } else {
    tls_worker = w;
    while (!atomic_load(&L->failed)) {
      uint64_t b = atomic_fetch_add(&L->next_block, 1);
      if (b >= L->nblocks) break;
      run_block(w, b);
      if (w->failed) launch_fail(L, w->status, w->msg);
    }
    tls_worker = NULL;
  }
  worker_free(w);
  free(w);
  return NULL;
}

/* ---- launch -------------------------------------------------------------------------------- */

static const char *check_config(KilnEmuKernelFn fn, const KilnEmuLaunch *cfg) {
  if (!fn || !cfg) return "kiln_emu_launch: NULL kernel or configuration";
  for (int i = 0; i < 3; i++) {
    if (cfg->grid[i] == 0 || cfg->block[i] == 0)
      return "kiln_emu_launch: grid and block sizes must be >= 1 on every axis";
  }
  uint64_t threads = (uint64_t)cfg->block[0] * cfg->block[1] * cfg->block[2];
  if (threads > KILN_EMU_MAX_BLOCK_THREADS || threads % KILN_EMU_WARP_SIZE != 0)
    return "kiln_emu_launch: threads per block must be a multiple of 32, at most 1024";
  if (cfg->shared_bytes > KILN_EMU_MAX_SHARED_BYTES)
    return "kiln_emu_launch: shared_bytes exceeds KILN_EMU_MAX_SHARED_BYTES";
  if (cfg->stack_bytes != 0 && cfg->stack_bytes < 16384)
    return "kiln_emu_launch: stack_bytes must be 0 or at least 16384";
  if (cfg->checks & ~(uint32_t)KILN_EMU_CHECK_ALL) return "kiln_emu_launch: unknown bits in checks";
  if (cfg->math > KILN_EMU_MATH_PESSIMISTIC)
    return "kiln_emu_launch: math must be KILN_EMU_MATH_EXACT or KILN_EMU_MATH_PESSIMISTIC";
  return NULL;
}

static KilnEmuStatus launch_result(KilnEmuStatus st, const char *msg) {
  if (st != KILN_EMU_OK) snprintf(tls_last_error, sizeof tls_last_error, "%s", msg);
  return st;
}

KilnEmuStatus kiln_emu_launch(KilnEmuKernelFn fn, const KilnEmuLaunch *cfg, void **args) {
  const char *bad = check_config(fn, cfg);
  if (bad) return launch_result(KILN_EMU_ERROR_INVALID_ARGUMENT, bad);
  if (tls_worker)
    return launch_result(KILN_EMU_ERROR_INVALID_ARGUMENT,
                         "kiln_emu_launch: cannot launch from inside a kernel");
  EmuLaunchState *L = calloc(1, sizeof *L);
  if (!L) return launch_result(KILN_EMU_ERROR_OUT_OF_MEMORY, "out of memory for a launch");
  L->fn = fn;
  L->args = args;
  L->cfg = *cfg;
  L->nblocks = (uint64_t)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
  if ((cfg->checks & KILN_EMU_CHECK_MEM) &&
      kiln_emu_mem_snapshot(&L->ranges, &L->nranges) != KILN_EMU_OK) {
    free(L);
    return launch_result(KILN_EMU_ERROR_OUT_OF_MEMORY, "out of memory for memcheck's table");
  }
  atomic_init(&L->next_block, 0);
  atomic_init(&L->failed, false);
  pthread_mutex_init(&L->lock, NULL);

  uint64_t nos = cfg->num_os_threads;
  if (nos == 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    nos = cpus > 0 ? (uint64_t)cpus : 1;
  }
  if (nos > L->nblocks) nos = L->nblocks;
  if (nos > 256) nos = 256;
  pthread_t threads[256];
  uint64_t started = 0;
  /* A thread that cannot be created only costs parallelism: the others take its blocks. */
  while (started + 1 < nos && pthread_create(&threads[started], NULL, worker_main, L) == 0)
    started++;
  worker_main(L);
  for (uint64_t i = 0; i < started; i++) pthread_join(threads[i], NULL);

  KilnEmuStatus st = launch_result(L->status, L->msg);
  pthread_mutex_destroy(&L->lock);
  free(L->ranges);
  free(L);
  return st;
}

/* ---- special registers --------------------------------------------------------------------- */

#define EMU_SREG(name, expr)                                                                       \
  uint32_t kiln_emu_##name(void) {                                                                 \
    EmuWorker *w = tls_worker;                                                                     \
    EmuFiber *f = w ? w->cur : NULL;                                                               \
    return f ? (uint32_t)(expr) : 0;                                                               \
  }
EMU_SREG(tid_x, f->tid3[0])
EMU_SREG(tid_y, f->tid3[1])
EMU_SREG(tid_z, f->tid3[2])
EMU_SREG(ntid_x, w->cfg.block[0])
EMU_SREG(ntid_y, w->cfg.block[1])
EMU_SREG(ntid_z, w->cfg.block[2])
EMU_SREG(ctaid_x, w->ctaid[0])
EMU_SREG(ctaid_y, w->ctaid[1])
EMU_SREG(ctaid_z, w->ctaid[2])
EMU_SREG(nctaid_x, w->cfg.grid[0])
EMU_SREG(nctaid_y, w->cfg.grid[1])
EMU_SREG(nctaid_z, w->cfg.grid[2])
EMU_SREG(laneid, f->tid % KILN_EMU_WARP_SIZE)
EMU_SREG(warpid, f->tid / KILN_EMU_WARP_SIZE)
EMU_SREG(shared_bytes, w->cfg.shared_bytes)
#undef EMU_SREG

uint32_t kiln_emu_warpsize(void) { return KILN_EMU_WARP_SIZE; }

void *kiln_emu_shared_base(void) {
  EmuWorker *w = tls_worker;
  return w && w->cur ? w->shared : NULL;
}

void kiln_emu_trap(void) {
  EmuWorker *w = tls_worker;
  if (w && w->cur) kiln_emu_fail(w, w->cur, KILN_EMU_ERROR_TRAP, "trap");
}

void kiln_emu_assertfail(const char *message, const char *file, uint32_t line, const char *function,
                         uint64_t char_size) {
  (void)file, (void)line, (void)char_size; /* device_assert's message names its place */
  EmuWorker *w = tls_worker;
  if (w && w->cur)
    kiln_emu_fail(w, w->cur, KILN_EMU_ERROR_ASSERT, "device_assert failed at %s (in %s)", message,
                  function);
}

void kiln_emu_exit(void) {
  EmuWorker *w = tls_worker;
  if (w && w->cur) kiln_emu_fiber_exit(w, w->cur);
}
