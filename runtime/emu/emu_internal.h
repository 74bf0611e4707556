/* emu_internal.h — what the files of the emulator share; not for use outside runtime/emu.
 *
 * One EmuWorker per OS thread of a launch. It owns the fibers (one per GPU thread of a block),
 * their stacks and the shared arena, and runs the blocks handed to it one after the other. The
 * intrinsics find their worker and fiber through a thread-local pointer set while a block runs.
 */
#ifndef KILN_EMU_INTERNAL_H
#define KILN_EMU_INTERNAL_H

#include "kiln_emu.h"

#include <stdbool.h>
#include <ucontext.h>

#define EMU_NUM_BARRIERS 16
#define EMU_MSG_BYTES    2048
/* The shared arena's alignment, 2^18 (above the 227 KiB limit): the low 18 bits of a host
 * pointer into the arena are its offset, as the 18-bit start address of a wgmma descriptor, which
 * the lowering takes from a shared pointer's low bits, needs (wgmma.c). */
#define EMU_SHARED_ALIGN ((size_t)1 << 18)
/* The group a cp.async belongs to before its commit_group. */
#define EMU_GROUP_OPEN UINT32_MAX

typedef enum EmuFiberState { EMU_RUNNABLE, EMU_BLOCKED, EMU_EXITED } EmuFiberState;
typedef enum EmuWait { EMU_WAIT_NONE, EMU_WAIT_BARRIER, EMU_WAIT_COLLECTIVE } EmuWait;

typedef enum EmuCollKind {
  EMU_COLL_SHFL,
  EMU_COLL_VOTE,
  EMU_COLL_REDUX,
  EMU_COLL_WARP_SYNC,
  EMU_COLL_MMA,
  EMU_COLL_LDMATRIX,
  EMU_COLL_STMATRIX,
  EMU_COLL_WGMMA_RS, /* wgmma with A from registers: the quads trade their A registers */
  EMU_COLL_COUNT
} EmuCollKind;

/* One lane's side of a warp collective: what it brought and what it gets back. */
typedef struct EmuCollective {
  bool arrived; /* waiting in this collective; cleared by the lane that completes it */
  EmuCollKind kind;
  uint32_t sub; /* mode / op / variant: lanes only meet when kind, sub and mask agree */
  uint32_t mask;
  uint32_t in[6];   /* shfl: a, b, c; vote: pred; redux: value; mma: a0..a3, b0, b1;
                       stmatrix: r0..r3; wgmma RS: a0..a3 */
  float fin[4];     /* mma: c0..c3 */
  int32_t iin[4];   /* integer mma: c0..c3 */
  const void *addr; /* ldmatrix, stmatrix: this lane's row address */
  uint32_t out[4];  /* results (f32 results stored as their bits) */
  uint32_t *quad;   /* wgmma RS: receives the a0..a3 of the lane's quad, lane by lane (16) */
  uint32_t pred;    /* shfl: the in-range predicate */
} EmuCollective;

typedef struct EmuCopy {
  void *dst;
  const void *src;
  uint32_t cp_size, src_size;
  uint32_t group;
} EmuCopy;

/* One wgmma whose shared-memory reads are still pending (wgmma_async.c): issued and not yet
 * retired by a wgmma.wait_group of its thread. Its 16-byte chunks of the arena are
 * EmuFiber.wg_chunks[begin, end), each with EMU_WG_CHUNK_B set when it was read for B. */
typedef struct EmuWgRead {
  uint32_t seq;   /* the thread's wgmma count at issue, from 1 (named in a report) */
  uint32_t group; /* its wgmma commit group; EMU_GROUP_OPEN before wgmma.commit_group */
  uint32_t begin, end;
} EmuWgRead;
#define EMU_WG_CHUNK_B 0x80000000u

typedef struct EmuFiber {
  ucontext_t uc;
  unsigned char *stack; /* usable stack (above the guard page) */
  size_t stack_bytes;
  void *fake_stack; /* ASan's fake stack while switched away */
  uint32_t tid;     /* linear thread id in the block */
  uint32_t tid3[3];
  EmuFiberState state;
  EmuWait wait;
  uint32_t barrier_id;
  EmuCollective coll;
  EmuCopy *copies; /* queued cp.async, in issue order; owned, reused across blocks */
  size_t ncopies, cap_copies;
  uint32_t next_group; /* groups committed so far */
  /* racecheck: wgmma reads not retired, in issue order (so retiring takes a prefix) */
  EmuWgRead *wg_reads;
  size_t n_wg_reads, cap_wg_reads;
  uint32_t *wg_chunks; /* chunk index | EMU_WG_CHUNK_B */
  size_t n_wg_chunks, cap_wg_chunks;
  uint32_t wg_issued;     /* wgmmas issued by the thread in this block */
  uint32_t wg_next_group; /* wgmma groups committed so far */
} EmuFiber;

typedef struct EmuBarrier {
  uint32_t arrived;
  uint32_t expected; /* 0: every non-exited thread */
} EmuBarrier;

typedef struct EmuLaunchState EmuLaunchState;

/* racecheck / initcheck state of one byte of the shared arena. Epochs count barriers on the
 * worker and never restart (a new block starts a new epoch), so nothing is cleared between blocks
 * and 0 means "never". An access by thread t in epoch E and warp epoch W is ordered after a
 * recorded one by thread u when u == t, when E differs (a barrier came between), or when t and u
 * share a warp and W differs (a bar.warp.sync came between). */
typedef struct EmuShadow {
  uint32_t w_epoch, r_epoch;   /* epoch of the last write / of the reads recorded */
  uint32_t init_block;         /* the block (EmuWorker.block_gen) that last wrote the byte */
  uint16_t w_tid, r_tid;       /* the last writer; one reader of r_epoch */
  uint16_t w_wepoch, r_wepoch; /* their warp epochs (low 16 bits) */
  uint8_t value;               /* the byte as the last writer left it */
  uint8_t r_many;              /* more than one thread read in r_epoch */
} EmuShadow;

/* One registered allocation (kiln_emu_mem_register). */
typedef struct EmuRange {
  uintptr_t base;
  size_t bytes;
} EmuRange;

typedef struct EmuWorker {
  EmuLaunchState *launch;
  KilnEmuKernelFn fn;
  void **args;
  KilnEmuLaunch cfg;
  uint32_t nthreads;
  uint32_t ctaid[3];
  EmuFiber *fibers;      /* nthreads */
  unsigned char *stacks; /* one mapping holding every fiber stack and its guard page */
  size_t stacks_bytes;
  unsigned char *shared; /* the arena, cfg.shared_bytes, EMU_SHARED_ALIGN-aligned */
  uint32_t live;         /* fibers not exited */
  EmuBarrier bars[EMU_NUM_BARRIERS];
  EmuFiber *cur; /* the fiber running now, NULL in the scheduler */
  ucontext_t sched_uc;
  const void *sched_stack_bottom; /* ASan: the scheduler's stack, to switch back to */
  size_t sched_stack_bytes;
  void *sched_fake_stack;
  EmuShadow *shadow;  /* racecheck / initcheck: one per byte of the arena, else NULL */
  uint32_t epoch;     /* barriers completed and blocks started on this worker, from 1 */
  uint32_t block_gen; /* blocks started on this worker, from 1 */
  /* racecheck of wgmma's asynchronous reads: per 16-byte chunk of the arena, how many issued
   * wgmmas of the block's threads read it and are not retired (NULL without racecheck) */
  uint32_t *wg_pending;
  uint32_t *wg_stamp;        /* per chunk, the last wg_stamp_gen that counted it (one per wgmma) */
  uint32_t wg_stamp_gen;     /* one per wgmma issued, from 1 */
  uint64_t wg_pending_total; /* the sum of wg_pending: 0 lets every write skip the check */
  uint32_t
      warp_epoch[KILN_EMU_MAX_BLOCK_THREADS / KILN_EMU_WARP_SIZE]; /* bar.warp.syncs per warp */
  const EmuRange *ranges; /* memcheck: the launch's snapshot of the allocation table, sorted */
  size_t nranges;
  uint32_t *order; /* seeded schedules: this round's order of the fibers */
  uint64_t rng;    /* its generator state */
  bool failed;     /* the block failed: stop scheduling it */
  KilnEmuStatus status;
  char msg[EMU_MSG_BYTES];
} EmuWorker;

/* The worker running a block on this OS thread; NULL outside a launch. */
EmuWorker *kiln_emu_worker(void);
/* The calling fiber, or NULL when not called from a kernel. */
EmuFiber *kiln_emu_current(void);

/* Fails the calling fiber's block with `status` and a message prefixed by the block and thread,
 * and leaves the fiber for good. */
_Noreturn void kiln_emu_fail(EmuWorker *w, EmuFiber *f, KilnEmuStatus status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Blocks the calling fiber until another marks it runnable again. */
void kiln_emu_block(EmuWorker *w, EmuFiber *f, EmuWait why);
/* Ends the calling fiber (its queued copies are performed first). */
_Noreturn void kiln_emu_fiber_exit(EmuWorker *w, EmuFiber *f);
/* After a thread exited: completes the all-thread barriers that now have every live thread. */
void kiln_emu_barriers_on_exit(EmuWorker *w);

/* Fails unless [p, p + bytes) lies in the arena and p is `align`-aligned; `what` names the access. */
void kiln_emu_check_shared_range(EmuWorker *w, EmuFiber *f, const void *p, size_t bytes,
                                 size_t align, const char *what);

/* The rendezvous: records the caller's part (already in f->coll.in/fin/addr) and returns once
 * every lane of mask arrived and `compute` filled everyone's out. compute runs on the last lane
 * to arrive, with the warp's first fiber. */
typedef void (*EmuCollFn)(EmuFiber *warp, uint32_t mask, uint32_t sub);
void kiln_emu_collective(EmuWorker *w, EmuFiber *f, EmuCollKind kind, uint32_t sub, uint32_t mask,
                         EmuCollFn compute);
const char *kiln_emu_coll_name(EmuCollKind kind);

/* ---- checks (check.c) ---- */

/* The launch's snapshot of the allocation table (sorted by base; *out NULL when it is empty).
 * KILN_EMU_ERROR_OUT_OF_MEMORY when no copy could be made. */
KilnEmuStatus kiln_emu_mem_snapshot(EmuRange **out, size_t *n);
/* memcheck of a global access by the calling fiber (a no-op without KILN_EMU_CHECK_MEM). */
void kiln_emu_check_global(EmuWorker *w, EmuFiber *f, const void *p, size_t bytes, size_t align,
                           const char *what);
/* racecheck / initcheck of an access to arena bytes [p, p + bytes) by fiber f (a no-op when
 * neither check is on). `what` names the access in a report. */
void kiln_emu_check_shadow(EmuWorker *w, EmuFiber *f, const void *p, size_t bytes, KilnEmuAccess op,
                           const char *what);

/* ---- wgmma's asynchronous reads (wgmma_async.c; each a no-op without racecheck) ---- */

/* A tensor core's reading of a 32-bit register (or shared word) as tf32: the sign, the exponent
 * and the 10 high mantissa bits; the 13 low bits are ignored (truncation).  mma.sync's m16n8k8
 * and wgmma's k8 .tf32 (matrix.c, wgmma.c). */
float kiln_emu_tf32_value(uint32_t bits);

/* Allocates the per-chunk counters when the launch has racecheck; false when out of memory. */
bool kiln_emu_wgmma_reads_init(EmuWorker *w);
/* A new block: every pending read of the last one is forgotten. */
void kiln_emu_wgmma_reads_reset(EmuWorker *w);
/* Opens the record of a wgmma the fiber issues now, which reads at most max_chunks chunks. */
void kiln_emu_wgmma_reads_begin(EmuWorker *w, EmuFiber *f, uint32_t max_chunks);
/* The open record reads the element at arena offset `off` (2 bytes) as operand A or B. */
void kiln_emu_wgmma_read_note(EmuWorker *w, EmuFiber *f, uint32_t off, bool b_operand);
/* The thread ends: its pending reads are dropped (not an error). */
void kiln_emu_wgmma_reads_drop(EmuWorker *w, EmuFiber *f);
/* A write to arena bytes [p, p + bytes) by fiber f: a race when any thread's wgmma read of them
 * is pending. `what` names the write in the report. */
void kiln_emu_wgmma_check_write(EmuWorker *w, EmuFiber *f, const void *p, size_t bytes,
                                const char *what);

/* Performs the fiber's queued copies except those of the `keep_recent` most recently committed
 * groups and the uncommitted ones; `all` performs every queued copy (at thread exit). */
void kiln_emu_copies_flush(EmuFiber *f, bool all, uint32_t keep_recent);

#endif /* KILN_EMU_INTERNAL_H */
