/* kiln_emu.h — the GPU emulator: runs code lowered for an NVIDIA GPU on the host.
 *
 * Two halves:
 * - the launch API (kiln_emu_launch), used by the runtime's `emu` device;
 * - the intrinsics (every other kiln_emu_* function), the ABI that lowered kernels call in
 *   place of nvvm ops. They must be called from inside a kernel launched by kiln_emu_launch;
 *   outside a launch they do nothing and return 0.
 *
 * A kernel is `void kiln_emu_entry_NAME(void **args)`; args as CUDA's kernelParams. Each GPU
 * thread runs it on its own fiber; a block's fibers run round-robin on one OS thread; blocks run
 * in parallel on `num_os_threads` OS threads. See docs/emulator.md for the semantics of every
 * intrinsic and the fragment layouts of mma / ldmatrix.
 *
 * Misuse inside a kernel (a bad mask, a shared address out of bounds, trap, a deadlock) does not
 * return to the kernel: the block is marked failed, its fibers are dropped and the launch returns
 * the matching status with a message naming the block and thread.
 */
#ifndef KILN_EMU_H
#define KILN_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Lowered modules resolve these symbols at load time, so they stay visible even when the library
 * is linked into a shared object built with hidden visibility. */
#define KILN_EMU_API __attribute__((visibility("default")))

/* ---- launch API ---------------------------------------------------------------------------- */

typedef enum KilnEmuStatus {
  KILN_EMU_OK = 0,
  KILN_EMU_ERROR_INVALID_ARGUMENT, /* a bad launch configuration */
  KILN_EMU_ERROR_OUT_OF_MEMORY,    /* stacks, shared arenas or queues could not be allocated */
  KILN_EMU_ERROR_SYSTEM,           /* an OS thread or context could not be created */
  KILN_EMU_ERROR_DEADLOCK, /* every live thread of a block waits on something that can't come */
  KILN_EMU_ERROR_TRAP,     /* the kernel executed trap */
  KILN_EMU_ERROR_ASSERT,   /* a device-side assertion failed (__assertfail: device_assert) */
  KILN_EMU_ERROR_MEMORY, /* an access out of bounds or misaligned (shared, or global under memcheck) */
  KILN_EMU_ERROR_INVALID_OP, /* an intrinsic used against its rules (mask, sizes, exited lanes) */
  KILN_EMU_ERROR_RACE,   /* racecheck: two threads touch a shared word in one barrier interval */
  KILN_EMU_ERROR_UNINIT, /* initcheck: a read of shared memory no thread wrote */
  KILN_EMU_STATUS_COUNT
} KilnEmuStatus;

/* The lowered kernel entry. */
typedef void (*KilnEmuKernelFn)(void **args);

#define KILN_EMU_WARP_SIZE         32
#define KILN_EMU_MAX_BLOCK_THREADS 1024
/* The sm_90 opt-in maximum, so that a configuration the emulator runs also fits a real GPU. */
#define KILN_EMU_MAX_SHARED_BYTES    (227u * 1024u)
#define KILN_EMU_DEFAULT_STACK_BYTES (256u * 1024u)

/* The checks a launch makes (KilnEmuLaunch.checks, a bit set); what each covers is in
 * docs/emulator.md, "Checks". They act through kiln_emu_global_access / kiln_emu_shared_access,
 * which the emu lowering emits before every global and shared load, store and atomic. */
typedef enum KilnEmuCheck {
  KILN_EMU_CHECK_MEM =
      1u << 0, /* global accesses in a registered allocation, aligned; shared in the arena */
  KILN_EMU_CHECK_RACE = 1u << 1, /* shared words touched by two threads in one barrier interval */
  KILN_EMU_CHECK_INIT = 1u << 2, /* shared bytes read before any thread of the block wrote them */
  KILN_EMU_CHECK_ALL = 7u
} KilnEmuCheck;

typedef struct KilnEmuLaunch {
  uint32_t grid[3];  /* blocks per axis, each >= 1 */
  uint32_t block[3]; /* threads per axis, each >= 1; the product is a multiple of 32, <= 1024 */
  uint32_t
      shared_bytes; /* static + dynamic shared memory per block, <= KILN_EMU_MAX_SHARED_BYTES */
  uint32_t num_os_threads; /* OS threads running blocks; 0 = online CPUs; never more than blocks */
  uint32_t stack_bytes;    /* fiber stack size; 0 = KILN_EMU_DEFAULT_STACK_BYTES */
  uint32_t checks;         /* KilnEmuCheck bits; 0 = none */
  uint64_t seed;           /* 0: runnable fibers resume in thread order; else a random order per
                              scheduling round, from this seed and the block index */
  uint32_t math;           /* KilnEmuMath: how approximate instructions are computed */
  uint64_t index_limit;    /* memcheck: 0 = none; else a global access reaching element
                              index_limit counted from its pointer argument (below) is reported.
                              Offsets compiled as i32 wrap at 2^31 elements; a lower limit on a
                              scaled-down problem finds the accesses that would wrap at full size */
  const void *const *index_bases; /* the kernel's pointer arguments, from which index_limit
                              counts: an access counts from the nearest one at or below it in its
                              allocation, else from the allocation's start; may be NULL */
  uint32_t num_index_bases;
} KilnEmuLaunch;

/* How kiln_emu_approx_f32 computes (KilnEmuLaunch.math). */
typedef enum KilnEmuMath {
  KILN_EMU_MATH_EXACT = 0,      /* host math, correctly rounded or nearly: checks the logic */
  KILN_EMU_MATH_PESSIMISTIC = 1 /* each result off by the instruction's documented worst-case
                                   error, subnormal inputs and outputs flushed as .ftz says */
} KilnEmuMath;

/* "mem,race,init" (any subset, comma separated), "all", "none" or "" -> *out. Returns 0, or -1
 * (and *out untouched) when a word is not one of these. */
KILN_EMU_API int kiln_emu_parse_checks(const char *text, uint32_t *out);

/* The allocation table memcheck checks global accesses against (process-wide, thread-safe).
 * register: [p, p + bytes) is device memory from now on; entries it overlaps are dropped (a
 * block freed without unregister and handed out again). unregister: drops the entry starting at
 * p, if any. A launch with KILN_EMU_CHECK_MEM reads a snapshot taken when it starts. */
KILN_EMU_API void kiln_emu_mem_register(const void *p, size_t bytes);
KILN_EMU_API void kiln_emu_mem_unregister(const void *p);
/* Whether p lies in a registered allocation; if so *base and *bytes (may be NULL) receive it. */
KILN_EMU_API bool kiln_emu_mem_find(const void *p, const void **base, size_t *bytes);

/* Runs the whole grid and returns when every block has finished or one failed. Blocks not yet
 * started when a block fails are skipped. On failure the message is readable with
 * kiln_emu_last_error() on the calling thread. `args` is only passed through to fn. Thread-safe:
 * several launches may run at once from different threads. */
KILN_EMU_API KilnEmuStatus kiln_emu_launch(KilnEmuKernelFn fn, const KilnEmuLaunch *cfg,
                                           void **args);

/* Detail of the last failed launch on the calling thread ("" if none). Valid until the thread's
 * next failing launch. */
KILN_EMU_API const char *kiln_emu_last_error(void);
/* "KILN_EMU_ERROR_DEADLOCK"; "KILN_EMU_STATUS_UNKNOWN" when out of range. Static string. */
KILN_EMU_API const char *kiln_emu_status_name(KilnEmuStatus status);

/* IEEE half <-> float, round to nearest even; exact for every half (NaN payloads kept). */
KILN_EMU_API float kiln_emu_f16_to_f32(uint16_t h);
KILN_EMU_API uint16_t kiln_emu_f32_to_f16(float f);
/* bfloat16 <-> float; float -> bf16 rounds to nearest even. */
KILN_EMU_API float kiln_emu_bf16_to_f32(uint16_t h);
KILN_EMU_API uint16_t kiln_emu_f32_to_bf16(float f);

/* ---- intrinsics: special registers (%tid, %ntid, %ctaid, %nctaid, %laneid, %warpid) -------- */

KILN_EMU_API uint32_t kiln_emu_tid_x(void);
KILN_EMU_API uint32_t kiln_emu_tid_y(void);
KILN_EMU_API uint32_t kiln_emu_tid_z(void);
KILN_EMU_API uint32_t kiln_emu_ntid_x(void);
KILN_EMU_API uint32_t kiln_emu_ntid_y(void);
KILN_EMU_API uint32_t kiln_emu_ntid_z(void);
KILN_EMU_API uint32_t kiln_emu_ctaid_x(void);
KILN_EMU_API uint32_t kiln_emu_ctaid_y(void);
KILN_EMU_API uint32_t kiln_emu_ctaid_z(void);
KILN_EMU_API uint32_t kiln_emu_nctaid_x(void);
KILN_EMU_API uint32_t kiln_emu_nctaid_y(void);
KILN_EMU_API uint32_t kiln_emu_nctaid_z(void);
KILN_EMU_API uint32_t kiln_emu_laneid(void);
KILN_EMU_API uint32_t kiln_emu_warpid(void); /* linear thread id / 32 */
KILN_EMU_API uint32_t kiln_emu_warpsize(void);

/* ---- shared memory ------------------------------------------------------------------------- */

/* The calling block's shared arena: KilnEmuLaunch.shared_bytes bytes, 2^18-byte aligned, filled
 * with 0xff bytes (a NaN pattern) when the block starts. Address space 3 is base + offset. */
KILN_EMU_API void *kiln_emu_shared_base(void);
KILN_EMU_API uint32_t kiln_emu_shared_bytes(void);
/* Optional check a lowering may emit before a plain shared load/store: fails the block with
 * KILN_EMU_ERROR_MEMORY unless [p, p + bytes) lies in the arena and p is aligned to `bytes`
 * (when bytes is a power of two <= 16). */
KILN_EMU_API void kiln_emu_shared_check(const void *p, uint32_t bytes);

/* What a checked access does (the `op` of the two functions below). */
typedef enum KilnEmuAccess {
  KILN_EMU_ACCESS_LOAD = 0,
  KILN_EMU_ACCESS_STORE = 1,
  KILN_EMU_ACCESS_ATOMIC = 2,
  KILN_EMU_ACCESS_STORED = 3 /* right after a shared store: the bytes as written (racecheck) */
} KilnEmuAccess;

/* Emitted by the emu lowering before every global load, store and atomic of `bytes` bytes at p
 * whose instruction needs `align`-byte alignment. With KILN_EMU_CHECK_MEM: fails the block with
 * KILN_EMU_ERROR_MEMORY when p is misaligned or [p, p + bytes) is not inside one registered
 * allocation, naming the nearest one, or (with an index_limit) when it reaches that element of
 * its allocation. Without it: returns at once. `op` is a KilnEmuAccess, with the bytes of one
 * element of the accessed type above KILN_EMU_ACCESS_ELEM_SHIFT (0: `bytes`), so that the
 * index limit counts elements as the kernel's offsets do. */
#define KILN_EMU_ACCESS_ELEM_SHIFT 8
KILN_EMU_API void kiln_emu_global_access(const void *p, uint32_t bytes, uint32_t align,
                                         uint32_t op);
/* The same before every shared access: in the arena and aligned (MEMORY) under any check;
 * racecheck (RACE) and initcheck (UNINIT) under theirs. A shared store is bracketed: STORE
 * before it, STORED after it, so that two threads writing the same value to a byte (replicated
 * layouts do) are not a race, while different values are. */
KILN_EMU_API void kiln_emu_shared_access(const void *p, uint32_t bytes, uint32_t align,
                                         uint32_t op);

/* ---- approximate math ---------------------------------------------------------------------- */

/* The PTX approximations the lowering emits (lower_math.c), all .ftz.f32. */
typedef enum KilnEmuApprox {
  KILN_EMU_APPROX_EX2 = 0,   /* ex2.approx.ftz.f32: relative error 2^-22 (2 ulp) */
  KILN_EMU_APPROX_LG2 = 1,   /* lg2.approx.ftz.f32: absolute error 2^-22.6 */
  KILN_EMU_APPROX_SIN = 2,   /* sin.approx.ftz.f32: absolute error 2^-20.9 */
  KILN_EMU_APPROX_COS = 3,   /* cos.approx.ftz.f32: absolute error 2^-20.9 */
  KILN_EMU_APPROX_RSQRT = 4, /* rsqrt.approx.ftz.f32: relative error 2^-22.9 */
  KILN_EMU_APPROX_TANH = 5,  /* tanh.approx.f32: relative error 2^-10.987 (no .ftz) */
  KILN_EMU_APPROX_RCP = 6,   /* rcp.approx.ftz.f32: 1 ulp, relative error 2^-23 */
  KILN_EMU_APPROX_COUNT
} KilnEmuApprox;

/* The approximation `op` of x: host math under KILN_EMU_MATH_EXACT (and outside a launch);
 * under KILN_EMU_MATH_PESSIMISTIC the host result moved by the worst-case error above, up or
 * down by a hash of x (so errors neither cancel nor all lean one way), with subnormal inputs and
 * results flushed to signed zero for the .ftz forms. */
KILN_EMU_API float kiln_emu_approx_f32(uint32_t op, float x);

/* ---- barriers and control ------------------------------------------------------------------ */

/* bar.sync 0 (__syncthreads): waits until every thread of the block that has not exited arrived. */
KILN_EMU_API void kiln_emu_barrier0(void);
/* bar.sync id, nthreads: id in [0, 16); nthreads 0 = all non-exited threads, else a multiple of
 * 32 counted on arrival. */
KILN_EMU_API void kiln_emu_barrier_sync(uint32_t id, uint32_t nthreads);
/* bar.warp.sync mask (__syncwarp): waits for every lane of mask; the caller must be in mask. */
KILN_EMU_API void kiln_emu_bar_warp_sync(uint32_t mask);
/* membar / fence.{cta,gpu,sys}: a sequentially consistent fence; level is ignored. */
KILN_EMU_API void kiln_emu_membar(uint32_t level);
/* trap: fails the launch with KILN_EMU_ERROR_TRAP. Does not return. */
KILN_EMU_API void kiln_emu_trap(void);
/* __assertfail (CUDA's device-side assert, what device_assert calls): fails the launch with
 * KILN_EMU_ERROR_ASSERT, the message (device_assert's "FILE:LINE:COL: msg") and the function
 * in the error, block and thread named as for every failure. Does not return. */
KILN_EMU_API void kiln_emu_assertfail(const char *message, const char *file, uint32_t line,
                                      const char *function, uint64_t char_size);
/* exit: the thread ends here, as if the entry returned. Does not return. */
KILN_EMU_API void kiln_emu_exit(void);
/* vprintf (CUDA's device printf, what device_print calls): fmt a printf format, args the
 * arguments packed one after another at their natural alignment (int 4 bytes, long long and
 * double 8; floats promoted to double).  Writes the formatted text to stdout with one call, so
 * threads' lines do not interleave; returns the characters written (print.c). */
KILN_EMU_API int kiln_emu_vprintf(const char *fmt, const void *args);

/* ---- warp collectives ---------------------------------------------------------------------- */
/* Every lane of `mask` must call the same collective with the same mask; the caller must be in
 * mask and no lane of mask may have exited (else KILN_EMU_ERROR_INVALID_OP). */

/* Modes numbered as MLIR's NVVM::ShflKind. */
typedef enum KilnEmuShflMode {
  KILN_EMU_SHFL_BFLY = 0,
  KILN_EMU_SHFL_UP = 1,
  KILN_EMU_SHFL_DOWN = 2,
  KILN_EMU_SHFL_IDX = 3
} KilnEmuShflMode;

/* shfl.sync.MODE.b32 d|p, a, b, c, mask. `pred` (may be NULL) receives p: 1 when the source lane
 * was in range, else 0 (then d = the caller's own a). A source lane in range but outside mask
 * yields 0 (the ISA leaves it undefined). */
KILN_EMU_API uint32_t kiln_emu_shfl_sync_i32(uint32_t mode, uint32_t mask, uint32_t a, uint32_t b,
                                             uint32_t c, uint32_t *pred);
KILN_EMU_API float kiln_emu_shfl_sync_f32(uint32_t mode, uint32_t mask, float a, uint32_t b,
                                          uint32_t c, uint32_t *pred);

typedef enum KilnEmuVoteMode {
  KILN_EMU_VOTE_ALL = 0,
  KILN_EMU_VOTE_ANY = 1,
  KILN_EMU_VOTE_UNI = 2,
  KILN_EMU_VOTE_BALLOT = 3
} KilnEmuVoteMode;

/* vote.sync.MODE: pred is tested != 0. ballot returns the mask of lanes (of `mask`) whose pred
 * is true; all/any/uni return 0 or 1. */
KILN_EMU_API uint32_t kiln_emu_vote_sync(uint32_t mode, uint32_t mask, uint32_t pred);

typedef enum KilnEmuReduxOp {
  KILN_EMU_REDUX_ADD = 0, /* wraps modulo 2^32 */
  KILN_EMU_REDUX_MIN = 1, /* signed */
  KILN_EMU_REDUX_MAX = 2, /* signed */
  KILN_EMU_REDUX_UMIN = 3,
  KILN_EMU_REDUX_UMAX = 4,
  KILN_EMU_REDUX_AND = 5,
  KILN_EMU_REDUX_OR = 6,
  KILN_EMU_REDUX_XOR = 7
} KilnEmuReduxOp;

/* redux.sync.OP.b32/.s32/.u32: every lane of mask receives the reduction of their values. */
KILN_EMU_API uint32_t kiln_emu_redux_sync(uint32_t op, uint32_t mask, uint32_t value);

/* ---- matrix ops (.sync.aligned: all 32 lanes of the warp, none exited) --------------------- */

/* mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32: d = A(16x16) B(16x8) + C.
 * a0..a3: the lane's four .b32 registers of A, two halves each (low half = lower element index);
 * b0, b1: its two registers of B; c0..c3: its accumulators. d[0..3] receives D in C's layout.
 * Products are exact; sums are f32, added in k order onto c. Layouts in docs/emulator.md. */
KILN_EMU_API void kiln_emu_mma_m16n8k16_f32_f16(float *d, uint32_t a0, uint32_t a1, uint32_t a2,
                                                uint32_t a3, uint32_t b0, uint32_t b1, float c0,
                                                float c1, float c2, float c3);
KILN_EMU_API void kiln_emu_mma_m16n8k16_f32_bf16(float *d, uint32_t a0, uint32_t a1, uint32_t a2,
                                                 uint32_t a3, uint32_t b0, uint32_t b1, float c0,
                                                 float c1, float c2, float c3);
/* mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: a0..a3 and b0, b1 hold one tf32 each (an
 * f32 whose 13 low mantissa bits are ignored). */
KILN_EMU_API void kiln_emu_mma_m16n8k8_f32_tf32(float *d, uint32_t a0, uint32_t a1, uint32_t a2,
                                                uint32_t a3, uint32_t b0, uint32_t b1, float c0,
                                                float c1, float c2, float c3);

/* mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32: d = A(16x32) B(32x8) + C in i32, wrapping
 * modulo 2^32 (no .satfinite). a0..a3 and b0, b1 hold four signed bytes each (the low byte is
 * the lowest k); c0..c3 and d[0..3] are in C's layout. Exact. */
KILN_EMU_API void kiln_emu_mma_m16n8k32_s32_s8(int32_t *d, uint32_t a0, uint32_t a1, uint32_t a2,
                                               uint32_t a3, uint32_t b0, uint32_t b1, int32_t c0,
                                               int32_t c1, int32_t c2, int32_t c3);

/* ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16: num in {1, 2, 4}. Lanes 8i..8i+7 pass the
 * shared addresses of rows 0..7 of matrix i (16 bytes each, 16-byte aligned); other lanes'
 * addresses are ignored. d[0..num-1] receives one .b32 (two b16) per matrix. */
KILN_EMU_API void kiln_emu_ldmatrix(uint32_t *d, uint32_t num, uint32_t trans,
                                    const void *row_addr);

/* stmatrix.sync.aligned.m8n8.x{num}.shared.b16 (sm_90): num in {1, 2, 4}; ldmatrix's inverse.
 * Lanes 8i..8i+7 pass the shared addresses of rows 0..7 of matrix i (16 bytes each, 16-byte
 * aligned; other lanes' addresses are ignored), and r[i] of lane l holds elements (l/4, 2(l%4))
 * and (l/4, 2(l%4) + 1) of matrix i (the low half first); r[num..3] are ignored. */
KILN_EMU_API void kiln_emu_stmatrix(uint32_t num, void *row_addr, uint32_t r0, uint32_t r1,
                                    uint32_t r2, uint32_t r3);

/* kiln_emu_wgmma's operand types. */
typedef enum KilnEmuWgmmaType {
  KILN_EMU_WGMMA_F16 = 0,
  KILN_EMU_WGMMA_BF16 = 1,
  KILN_EMU_WGMMA_TF32 = 2, /* m64n{n}k8: 4-byte words, their 13 low mantissa bits ignored */
} KilnEmuWgmmaType;

/* wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16,bf16}.{f16,bf16} and m64n{n}k8.f32.tf32.tf32
 * (sm_90), A and B in shared memory: for the calling thread only, acc[0 .. n/2 - 1] += its
 * fragment of A(64xK) B(Kxn), K 16 (8 for tf32), products exact, sums in f32 in k order. n a
 * multiple of 8 in 8..256; type a KilnEmuWgmmaType; trans_a / trans_b the immediate transposes
 * (0 K-major, 1 MN-major; tf32 is K-major only); desc_a / desc_b the
 * 64-bit matrix descriptors, whose start address is an offset in the block's arena (the arena is
 * 2^18-byte aligned, so the low 18 bits of a pointer into it are that offset). The block must be
 * whole warpgroups of 128 threads; each computes the 64 rows of its own descriptors. Layouts,
 * descriptor fields and swizzles in docs/emulator.md ("wgmma"); an element outside the arena
 * fails with MEMORY, a nonzero base_offset or a bad argument with INVALID_OP. */
KILN_EMU_API void kiln_emu_wgmma(float *acc, uint32_t n, uint32_t type, uint32_t trans_a,
                                 uint32_t trans_b, uint64_t desc_a, uint64_t desc_b);
/* The RS form: wgmma.mma_async with A from registers and B in shared memory.  a0..a3 are the
 * thread's four .b32 registers of A (two f16 / bf16 each, the low half the lower column) in
 * mma.sync's m16n8k16 A layout over its warp's rows 16w .. 16w + 15 of the warpgroup's 64
 * (docs/emulator.md, "wgmma"); A in registers is K-major, so there is no trans_a.  B, desc_b,
 * trans_b, n and acc as kiln_emu_wgmma, bf16 its type (0 f16, 1 bf16: no RS form for tf32).  A
 * warp collective (every lane of the warp, none exited, with the same n, bf16 and trans_b): each
 * lane's rows are spread over its quad. */
KILN_EMU_API void kiln_emu_wgmma_rs(float *acc, uint32_t n, uint32_t bf16, uint32_t trans_b,
                                    uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                    uint64_t desc_b);
/* wgmma.commit_group: closes the calling thread's group of wgmmas issued since the last one.
 * The MMA's result is final at issue, but under racecheck its reads of A and B stay pending until
 * a wait retires its group: a write to those bytes by any thread before then is a race. */
KILN_EMU_API void kiln_emu_wgmma_commit(void);
/* wgmma.wait_group n: retires the reads of every committed group but the n most recent ones
 * (wgmmas not committed yet stay pending). The accumulators need nothing: they are final. */
KILN_EMU_API void kiln_emu_wgmma_wait(uint32_t n);

/* ---- asynchronous copies ------------------------------------------------------------------- */

/* cp.async.{ca,cg}.shared.global [dst], [src], cp_size, src_size: cp_size in {4, 8, 16} (16 only
 * for cg), src_size <= cp_size; bytes past src_size are zero-filled. dst is checked against the
 * arena and both addresses must be cp_size aligned. The copy is only queued: it happens at the
 * wait that covers its group (or when the thread exits). cache_global: 1 for .cg, 0 for .ca. */
KILN_EMU_API void kiln_emu_cp_async(void *dst_shared, const void *src_global, uint32_t cp_size,
                                    uint32_t src_size, uint32_t cache_global);
/* cp.async.commit_group: closes the calling thread's group of copies issued since the last one. */
KILN_EMU_API void kiln_emu_cp_async_commit_group(void);
/* cp.async.wait_group n: performs every committed group but the n most recent ones. */
KILN_EMU_API void kiln_emu_cp_async_wait_group(uint32_t n);
/* cp.async.wait_all: commit_group + wait_group 0. */
KILN_EMU_API void kiln_emu_cp_async_wait_all(void);

/* ---- atomics (relaxed, real atomics: blocks run in parallel) ------------------------------- */
/* Each returns the old value. The global forms take any host pointer; the _shared forms first
 * check the address against the arena (KILN_EMU_ERROR_MEMORY) and its alignment to the word's
 * size (4 or 8 bytes), and show racecheck an atomic access of that size.
 * X(name, type): one line per operation; cas takes (p, compare, value). The 64-bit ones are
 * PTX's atom.{add,min,max}.{s64,u64}, add.f64, exch.b64, {and,or,xor}.b64 and cas.b64. */
#define KILN_EMU_ATOMIC_OPS(X)                                                                     \
  X(add_i32, int32_t)                                                                              \
  X(add_u32, uint32_t)                                                                             \
  X(add_f32, float)                                                                                \
  X(max_i32, int32_t)                                                                              \
  X(min_i32, int32_t)                                                                              \
  X(max_u32, uint32_t)                                                                             \
  X(min_u32, uint32_t)                                                                             \
  X(max_f32, float)                                                                                \
  X(min_f32, float)                                                                                \
  X(and_b32, uint32_t)                                                                             \
  X(or_b32, uint32_t)                                                                              \
  X(xor_b32, uint32_t)                                                                             \
  X(exch_b32, uint32_t)                                                                            \
  X(exch_f32, float)                                                                               \
  X(add_i64, int64_t)                                                                              \
  X(add_u64, uint64_t)                                                                             \
  X(add_f64, double)                                                                               \
  X(max_i64, int64_t)                                                                              \
  X(min_i64, int64_t)                                                                              \
  X(max_u64, uint64_t)                                                                             \
  X(min_u64, uint64_t)                                                                             \
  X(max_f64, double)                                                                               \
  X(min_f64, double)                                                                               \
  X(and_b64, uint64_t)                                                                             \
  X(or_b64, uint64_t)                                                                              \
  X(xor_b64, uint64_t)                                                                             \
  X(exch_b64, uint64_t)                                                                            \
  X(exch_f64, double)

#define KILN_EMU_DECLARE_ATOMIC(name, type)                                                        \
  KILN_EMU_API type kiln_emu_atom_##name(type *p, type v);                                         \
  KILN_EMU_API type kiln_emu_atom_shared_##name(type *p, type v);
KILN_EMU_ATOMIC_OPS(KILN_EMU_DECLARE_ATOMIC)
#undef KILN_EMU_DECLARE_ATOMIC

KILN_EMU_API uint32_t kiln_emu_atom_cas_b32(uint32_t *p, uint32_t cmp, uint32_t v);
KILN_EMU_API uint32_t kiln_emu_atom_shared_cas_b32(uint32_t *p, uint32_t cmp, uint32_t v);
KILN_EMU_API uint64_t kiln_emu_atom_cas_b64(uint64_t *p, uint64_t cmp, uint64_t v);
KILN_EMU_API uint64_t kiln_emu_atom_shared_cas_b64(uint64_t *p, uint64_t cmp, uint64_t v);

#ifdef __cplusplus
}
#endif

#endif /* KILN_EMU_H */
