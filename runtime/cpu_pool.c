/* cpu_pool.c — the worker threads that run a launch's programs on the cpu device.
 *
 * A launch publishes one job (kernel, args, grid) with a number of worker slots (one per program,
 * at most one per worker) and bumps a generation counter; workers that see it claim a slot, the
 * ones that get one claim program indices from a shared atomic counter until the grid is
 * exhausted, and the last of them to finish wakes the launcher. A one-program launch thus
 * involves one worker, not all of them. Programs never run on the caller's thread, because its
 * stack may be small while kernels keep tiles on the stack: workers get KILN_RT_CPU_STACK_BYTES.
 *
 * Handing a launch over through condition variables costs two sleeps and wake-ups (~25 us), far
 * more than a small kernel. So both sides first poll for a short while (yielding the core each
 * time, which on a machine with fewer cores than threads lets the other side run): a worker
 * polls the generation after each job, the launcher spins briefly and then polls the count of
 * active workers, and only then do they sleep on the condition variables. Back-to-back launches
 * thus never sleep (bench/launch-overhead: ~2 us per one-program launch on 2 cores).
 * Lost wake-ups are excluded the usual way: the generation changes, and the last worker signals,
 * under the lock, and each side re-checks under the lock before it waits.
 */
#include "device_impl.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct KilnRtCpuPool {
  pthread_t *threads;
  int num_threads;
  pthread_mutex_t run_lock; /* one launch at a time */
  pthread_mutex_t lock;     /* guards the fields below */
  pthread_cond_t work_cv, done_cv;
  _Atomic uint64_t generation; /* changed under `lock` */
  _Atomic bool stop;           /* set under `lock` */
  _Atomic int active;          /* workers still on the current job */
  _Atomic int slots;           /* workers the current job still takes (may go below 0) */
  /* the current job */
  KilnRtCpuKernel kernel;
  void **args;
  uint32_t grid[3];
  uint64_t total;
  _Atomic uint64_t next;
  /* the current job's failed device_asserts: the first one's text, and how many */
  pthread_mutex_t fail_lock;
  uint64_t fails;
  char fail_text[1024];
};

/* The pool whose job the calling worker runs (kiln_cpu_assert_fail's way back to it). */
static _Thread_local KilnRtCpuPool *tls_pool;

void kiln_cpu_assert_fail(const char *text, int32_t x, int32_t y, int32_t z, int64_t element) {
  KilnRtCpuPool *pool = tls_pool;
  if (!pool) { /* a kernel called outside a pool: say it at least */
    fprintf(stderr, "device_assert failed at %s (program (%d, %d, %d), element %lld)\n", text, x, y,
            z, (long long)element);
    return;
  }
  pthread_mutex_lock(&pool->fail_lock);
  if (pool->fails++ == 0)
    snprintf(pool->fail_text, sizeof pool->fail_text,
             "device_assert failed at %s (program (%d, %d, %d), element %lld)", text, x, y, z,
             (long long)element);
  pthread_mutex_unlock(&pool->fail_lock);
}

int kiln_rt_cpu_default_threads(void) {
  const char *env = getenv("KILN_CPU_THREADS");
  if (env && *env) {
    char *end = NULL;
    long n = strtol(env, &end, 10);
    if (end && *end == '\0' && n >= 1 && n <= 4096) return (int)n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n >= 1 ? (int)(n > 4096 ? 4096 : n) : 1;
}

static void run_programs(KilnRtCpuPool *pool) {
  const uint32_t gx = pool->grid[0], gy = pool->grid[1], gz = pool->grid[2];
  for (;;) {
    uint64_t i = atomic_fetch_add_explicit(&pool->next, 1, memory_order_relaxed);
    if (i >= pool->total) break;
    uint32_t x = (uint32_t)(i % gx);
    uint32_t y = (uint32_t)((i / gx) % gy);
    uint32_t z = (uint32_t)(i / ((uint64_t)gx * gy));
    pool->kernel(pool->args, (int32_t)x, (int32_t)y, (int32_t)z, (int32_t)gx, (int32_t)gy,
                 (int32_t)gz);
  }
}

/* Polls of the other side before sleeping: each yields the core once (a few microseconds on
 * an idle machine, so a launch that follows within roughly 50-200 us is picked up awake). */
#define POOL_POLLS 64
/* Before those, the launcher spins on the count of active workers without giving up its core,
 * for about 10 us (a pause is ~20 ns on x86): a worker on another core finishes a small job in a
 * microsecond or two, and a yield alone costs more than that when the cores are shared. */
#define POOL_SPINS 500

static inline void pool_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* The next generation after `seen`, polled and then waited for; `seen` itself once stopping. */
static uint64_t wait_for_work(KilnRtCpuPool *pool, uint64_t seen) {
  for (int i = 0; i < POOL_POLLS; i++) {
    uint64_t g = atomic_load_explicit(&pool->generation, memory_order_acquire);
    if (g != seen || atomic_load(&pool->stop)) return g;
    sched_yield();
  }
  pthread_mutex_lock(&pool->lock);
  while (!atomic_load(&pool->stop) && atomic_load(&pool->generation) == seen)
    pthread_cond_wait(&pool->work_cv, &pool->lock);
  uint64_t g = atomic_load(&pool->generation);
  pthread_mutex_unlock(&pool->lock);
  return g;
}

static void *worker_main(void *arg) {
  KilnRtCpuPool *pool = arg;
  uint64_t seen = 0;
  tls_pool = pool;
  for (;;) {
    seen = wait_for_work(pool, seen);
    if (atomic_load(&pool->stop)) break;
    /* A worker late for a finished job may take a slot of the next one: it then runs that job
     * (the slot's acquire makes its fields visible), which is as good as any other worker. */
    if (atomic_fetch_sub_explicit(&pool->slots, 1, memory_order_acq_rel) <= 0) continue;
    run_programs(pool);
    if (atomic_fetch_sub(&pool->active, 1) == 1) {
      pthread_mutex_lock(&pool->lock);
      pthread_cond_signal(&pool->done_cv);
      pthread_mutex_unlock(&pool->lock);
    }
  }
  return NULL;
}

static void stop_workers(KilnRtCpuPool *pool, int started) {
  pthread_mutex_lock(&pool->lock);
  atomic_store(&pool->stop, true);
  pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->lock);
  for (int i = 0; i < started; i++) pthread_join(pool->threads[i], NULL);
}

static void free_pool(KilnRtCpuPool *pool) {
  pthread_cond_destroy(&pool->done_cv);
  pthread_cond_destroy(&pool->work_cv);
  pthread_mutex_destroy(&pool->lock);
  pthread_mutex_destroy(&pool->run_lock);
  pthread_mutex_destroy(&pool->fail_lock);
  free(pool->threads);
  free(pool);
}

KilnRtStatus kiln_rt_cpu_pool_create(int num_threads, KilnRtCpuPool **out) {
  KILN_ASSERT(num_threads >= 1);
  KilnRtCpuPool *pool = calloc(1, sizeof *pool);
  if (pool) pool->threads = calloc((size_t)num_threads, sizeof *pool->threads);
  if (!pool || !pool->threads) {
    free(pool);
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for the cpu thread pool");
  }
  pthread_mutex_init(&pool->run_lock, NULL);
  pthread_mutex_init(&pool->lock, NULL);
  pthread_mutex_init(&pool->fail_lock, NULL);
  pthread_cond_init(&pool->work_cv, NULL);
  pthread_cond_init(&pool->done_cv, NULL);
  atomic_init(&pool->next, 0);
  atomic_init(&pool->generation, 0);
  atomic_init(&pool->stop, false);
  atomic_init(&pool->active, 0);
  atomic_init(&pool->slots, 0);

  pthread_attr_t attr;
  pthread_attr_init(&attr);
  int err = pthread_attr_setstacksize(&attr, KILN_RT_CPU_STACK_BYTES);
  int started = 0;
  while (err == 0 && started < num_threads) {
    err = pthread_create(&pool->threads[started], &attr, worker_main, pool);
    if (err == 0) started++;
  }
  pthread_attr_destroy(&attr);
  if (err) {
    stop_workers(pool, started);
    free_pool(pool);
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY,
                        "cannot start cpu worker thread %d of %d with 64 MiB stacks: %s",
                        started + 1, num_threads, strerror(err));
  }
  pool->num_threads = num_threads;
  *out = pool;
  return KILN_RT_OK;
}

void kiln_rt_cpu_pool_destroy(KilnRtCpuPool *pool) {
  if (!pool) return;
  stop_workers(pool, pool->num_threads);
  free_pool(pool);
}

KilnRtStatus kiln_rt_cpu_pool_run(KilnRtCpuPool *pool, KilnRtCpuKernel kernel, void **args,
                                  const uint32_t grid[3]) {
  uint64_t total = (uint64_t)grid[0] * grid[1] * grid[2];
  if (total == 0) return KILN_RT_OK;
  int workers = total < (uint64_t)pool->num_threads ? (int)total : pool->num_threads;
  pthread_mutex_lock(&pool->run_lock);
  pthread_mutex_lock(&pool->fail_lock);
  pool->fails = 0;
  pthread_mutex_unlock(&pool->fail_lock);
  pthread_mutex_lock(&pool->lock);
  pool->kernel = kernel;
  pool->args = args;
  memcpy(pool->grid, grid, sizeof pool->grid);
  pool->total = total;
  atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
  atomic_store(&pool->active, workers);
  atomic_store_explicit(&pool->slots, workers, memory_order_release);
  atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
  if (workers == 1)
    pthread_cond_signal(&pool->work_cv);
  else
    pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->lock);
  for (int i = 0; i < POOL_SPINS && atomic_load(&pool->active) > 0; i++) pool_pause();
  for (int i = 0; i < POOL_POLLS && atomic_load(&pool->active) > 0; i++) sched_yield();
  pthread_mutex_lock(&pool->lock);
  while (atomic_load(&pool->active) > 0) pthread_cond_wait(&pool->done_cv, &pool->lock);
  pthread_mutex_unlock(&pool->lock);
  pthread_mutex_lock(&pool->fail_lock);
  uint64_t fails = pool->fails;
  char text[sizeof pool->fail_text];
  memcpy(text, pool->fail_text, sizeof text);
  pthread_mutex_unlock(&pool->fail_lock);
  pthread_mutex_unlock(&pool->run_lock);
  if (fails == 0) return KILN_RT_OK;
  if (fails == 1) return kiln_rt_fail(KILN_RT_ERROR_LAUNCH, "%s", text);
  return kiln_rt_fail(KILN_RT_ERROR_LAUNCH, "%s, and %llu more failed elements", text,
                      (unsigned long long)(fails - 1));
}
