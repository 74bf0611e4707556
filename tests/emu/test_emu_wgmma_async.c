/* wgmma's asynchronous reads under racecheck: a wgmma's A and B stay pending from its issue to
 * the wgmma.wait_group that retires its group, and a write to them in between, by any thread and
 * across barriers, is a race (runtime/emu/wgmma_async.c). Each scenario is one 128-thread
 * warpgroup with two buffers of A (64x16) and B (16x8) in the interleaved K-major layout; the
 * writer is thread 5 (or thread 3 for cp.async), after a barrier, so the ordinary barrier
 * interval check alone would see nothing; a last barrier keeps every thread (and its pending
 * reads) alive until the writer wrote, whatever the schedule. Cases: overwrite after wait 0 (fine; the MMA's numbers
 * checked), before the wait (race, naming both threads and the wgmma), wait_group 1 with two
 * groups in flight (the older buffer free, the newer pending), a wgmma never committed (wait 0
 * leaves it pending), cp.async landing into and issued into a pending buffer, a shared atomic,
 * a thread that exits without waiting (no error, and the next block starts clean), racecheck
 * off (no error), and the RS form (A from registers): its B pending as the SS form's, its numbers
 * after the wait, and no pending read of the shared A it does not use. */
#include "emu_test.h"

enum { THREADS = 128, ARENA = 8192, BUF_BYTES = 4096, B_AT = 2048 };
#define F16_ONE 0x3c00u /* every element 1.0: each of the 4 accumulators sums 16 products */

typedef enum Scenario {
  WAIT_THEN_WRITE,     /* (1) commit, wait 0, barrier, write: fine */
  WRITE_BEFORE_WAIT,   /* (2) commit, barrier, write, wait: race */
  TWO_GROUPS_OLDER,    /* (3a) two groups, wait 1, write the older group's buffer: fine */
  TWO_GROUPS_NEWER,    /* (3b) two groups, wait 1, write the newer group's buffer: race */
  UNCOMMITTED,         /* a wgmma not committed: wait 0 leaves it pending, write: race */
  CP_ASYNC_LANDING,    /* (4) a copy queued before the wgmma lands into its pending B: race */
  CP_ASYNC_ISSUE,      /* a copy issued into a pending B: race at issue */
  CP_ASYNC_AFTER_WAIT, /* a copy issued and landing after the wait: fine */
  ATOMIC_BEFORE_WAIT,  /* a shared atomic on a pending A: race */
  EXIT_WITHOUT_WAIT,   /* never waits: dropped at exit, no error (two blocks) */
  RS_WAIT_THEN_WRITE,  /* the RS form (A from registers): commit, wait 0, write B: fine */
  RS_WRITE_B,          /* the RS form: write its B before the wait: race */
  RS_WRITE_A_BUFFER    /* the RS form: write the (unread) A buffer before the wait: fine */
} Scenario;

typedef struct Run {
  _Alignas(16) uint32_t src[4]; /* cp.async source */
  Scenario scenario;
  float acc[THREADS][4]; /* the first wgmma's accumulators */
} Run;

static void store_shared(void *dst, const void *src, uint32_t bytes) {
  kiln_emu_shared_access(dst, bytes, bytes, KILN_EMU_ACCESS_STORE);
  memcpy(dst, src, bytes);
  kiln_emu_shared_access(dst, bytes, bytes, KILN_EMU_ACCESS_STORED);
}

/* Interleaved K-major (mode 0): LBO 128 (the two k halves), SBO 256 (groups of 8 rows). */
static uint64_t descriptor(const unsigned char *at) {
  return (uint64_t)((((uintptr_t)at & 0x3ffff) >> 4) & 0x3fff) | (uint64_t)(128 >> 4) << 16 |
         (uint64_t)(256 >> 4) << 32;
}

/* wgmma m64n8k16 on buffer `buf` (A at its start, B at B_AT) into acc. */
static void mma(unsigned char *smem, uint32_t buf, float acc[4]) {
  unsigned char *base = smem + buf * BUF_BYTES;
  kiln_emu_wgmma(acc, 8, 0, 0, 0, descriptor(base), descriptor(base + B_AT));
}

/* The RS form on buffer `buf`: A from registers (every element 1.0), B at B_AT. */
static void mma_rs(unsigned char *smem, uint32_t buf, float acc[4]) {
  uint32_t one = F16_ONE | F16_ONE << 16;
  kiln_emu_wgmma_rs(acc, 8, 0, 0, one, one, one, one, descriptor(smem + buf * BUF_BYTES + B_AT));
}

/* Thread `who` overwrites 4 bytes at offset `off` of the arena after a barrier. */
static void write_after_barrier(unsigned char *smem, uint32_t tid, uint32_t who, uint32_t off) {
  kiln_emu_barrier0();
  uint32_t v = 0;
  if (tid == who) store_shared(smem + off, &v, 4);
}

static void async_kernel(void **args) {
  Run *R = *(Run **)args[0];
  unsigned char *smem = kiln_emu_shared_base();
  uint32_t tid = kiln_emu_tid_x(), one = F16_ONE | F16_ONE << 16;
  for (uint32_t i = tid; i < ARENA / 4; i += THREADS) store_shared(smem + 4 * i, &one, 4);
  kiln_emu_barrier0();
  float acc[4] = {0}, acc2[4] = {0};
  switch (R->scenario) {
  case WAIT_THEN_WRITE:
    mma(smem, 0, acc);
    kiln_emu_wgmma_commit();
    kiln_emu_wgmma_wait(0);
    write_after_barrier(smem, tid, 5, B_AT);
    break;
  case WRITE_BEFORE_WAIT:
    mma(smem, 0, acc);
    kiln_emu_wgmma_commit();
    write_after_barrier(smem, tid, 5, B_AT + 16);
    kiln_emu_wgmma_wait(0);
    break;
  case TWO_GROUPS_OLDER:
  case TWO_GROUPS_NEWER:
    mma(smem, 0, acc);
    kiln_emu_wgmma_commit();
    mma(smem, 1, acc2);
    kiln_emu_wgmma_commit();
    kiln_emu_wgmma_wait(1);
    write_after_barrier(smem, tid, 5, (R->scenario == TWO_GROUPS_NEWER) * BUF_BYTES + 64);
    kiln_emu_wgmma_wait(0);
    break;
  case UNCOMMITTED:
    mma(smem, 0, acc);
    kiln_emu_wgmma_wait(0);
    write_after_barrier(smem, tid, 5, 0);
    break;
  case CP_ASYNC_LANDING:
    if (tid == 3) kiln_emu_cp_async(smem + B_AT + 32, R->src, 16, 16, 1); /* queued, not landed */
    kiln_emu_barrier0(); /* every thread issues its wgmma after the copy was queued */
    mma(smem, 0, acc);
    kiln_emu_wgmma_commit();
    kiln_emu_barrier0();
    kiln_emu_cp_async_wait_all(); /* thread 3's copy lands now, while the read is pending */
    kiln_emu_wgmma_wait(0);
    break;
  case CP_ASYNC_ISSUE:
  case CP_ASYNC_AFTER_WAIT:
    mma(smem, 0, acc);
    kiln_emu_wgmma_commit();
    if (R->scenario == CP_ASYNC_AFTER_WAIT) kiln_emu_wgmma_wait(0);
    kiln_emu_barrier0();
    if (tid == 3) kiln_emu_cp_async(smem + B_AT + 32, R->src, 16, 16, 1);
    kiln_emu_cp_async_wait_all();
    kiln_emu_wgmma_wait(0);
    break;
  case ATOMIC_BEFORE_WAIT:
    mma(smem, 0, acc);
    kiln_emu_wgmma_commit();
    kiln_emu_barrier0();
    if (tid == 5) kiln_emu_atom_shared_add_u32((uint32_t *)(smem + 288), 1) /* row 10 */;
    kiln_emu_wgmma_wait(0);
    break;
  case EXIT_WITHOUT_WAIT:
    mma(smem, 0, acc);
    kiln_emu_wgmma_commit();
    break;
  case RS_WAIT_THEN_WRITE:
  case RS_WRITE_B:
  case RS_WRITE_A_BUFFER:
    mma_rs(smem, 0, acc);
    kiln_emu_wgmma_commit();
    if (R->scenario == RS_WAIT_THEN_WRITE) kiln_emu_wgmma_wait(0);
    write_after_barrier(smem, tid, 5, R->scenario == RS_WRITE_A_BUFFER ? 64 : B_AT + 16);
    kiln_emu_wgmma_wait(0);
    break;
  }
  memcpy(R->acc[tid], acc, sizeof acc);
  kiln_emu_barrier0(); /* no thread exits (dropping its reads) before the writer wrote */
}

/* Runs a scenario with `checks`; requires `want` and, on an error, every needle in the message. */
static Run *run(Scenario s, uint32_t blocks, uint32_t checks, KilnEmuStatus want,
                const char *const *needles) {
  Run *R = calloc(1, sizeof *R);
  R->scenario = s;
  for (int i = 0; i < 4; i++) R->src[i] = 0x12345678u + (uint32_t)i;
  kiln_emu_mem_register(R, sizeof *R); /* memcheck: the cp.async source */
  void *args[] = {&R};
  KilnEmuLaunch cfg = emu_cfg(blocks, 1, 1, THREADS, ARENA, 1);
  cfg.checks = checks;
  CHECK_LAUNCH(want, async_kernel, &cfg, args);
  for (; needles && *needles; needles++)
    CHECK(strstr(kiln_emu_last_error(), *needles) != NULL, "scenario %d: message '%s' lacks '%s'",
          (int)s, kiln_emu_last_error(), *needles);
  kiln_emu_mem_unregister(R);
  return R;
}

static void expect_ok(Scenario s, uint32_t blocks, uint32_t checks) {
  free(run(s, blocks, checks, KILN_EMU_OK, NULL));
}

static void expect_race(Scenario s, const char *const *needles) {
  free(run(s, 1, KILN_EMU_CHECK_ALL, KILN_EMU_ERROR_RACE, needles));
}

/* (1): no error, and the MMA's numbers are those of the bytes at issue (16 products of 1.0). */
static void wait_then_write(Scenario s) {
  Run *R = run(s, 1, KILN_EMU_CHECK_ALL, KILN_EMU_OK, NULL);
  int bad = 0;
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < 4; i++) bad += R->acc[t][i] != 16.0f;
  CHECK(bad == 0, "wgmma then wait then overwrite: %d accumulators differ from 16", bad);
  free(R);
}

int main(void) {
  wait_then_write(WAIT_THEN_WRITE);
  /* in thread order, threads 0-4 pass their wait before thread 5 writes: the first reader of
   * column 1 (lanes 4i) still pending is thread 8 */
  expect_race(WRITE_BEFORE_WAIT,
              (const char *const[]){"thread 5 (warp 0 lane 5): racecheck: write during a pending "
                                    "wgmma read: shared store at shared offset 2064",
                                    "(warp 0 lane 8) reads as the B operand of its wgmma #1 (in "
                                    "its wgmma group 0)",
                                    NULL});
  expect_ok(TWO_GROUPS_OLDER, 1, KILN_EMU_CHECK_ALL);
  expect_race(TWO_GROUPS_NEWER, (const char *const[]){"shared offset 4160",
                                                      "A operand of its wgmma #2 (in its "
                                                      "wgmma group 1)",
                                                      NULL});
  expect_race(UNCOMMITTED, (const char *const[]){"wgmma #1 (not committed yet)", NULL});
  expect_race(CP_ASYNC_LANDING,
              (const char *const[]){"thread 3 (warp 0 lane 3): racecheck: write during a pending "
                                    "wgmma read: cp.async landing at shared offset 2080",
                                    NULL});
  expect_race(CP_ASYNC_ISSUE,
              (const char *const[]){"cp.async destination (at issue) at shared offset 2080", NULL});
  expect_ok(CP_ASYNC_AFTER_WAIT, 1, KILN_EMU_CHECK_ALL);
  expect_race(ATOMIC_BEFORE_WAIT,
              (const char *const[]){"atom.shared.add_u32 at shared offset 288", "A operand", NULL});
  expect_ok(EXIT_WITHOUT_WAIT, 2, KILN_EMU_CHECK_ALL);
  /* racecheck off: the same write before the wait passes (initcheck and memcheck on) */
  expect_ok(WRITE_BEFORE_WAIT, 1, KILN_EMU_CHECK_MEM | KILN_EMU_CHECK_INIT);
  /* the RS form: its B reads are pending as the SS form's; A comes from registers, so a write
   * to the buffer an SS wgmma would have read A from is no race */
  wait_then_write(RS_WAIT_THEN_WRITE);
  expect_race(RS_WRITE_B,
              (const char *const[]){"thread 5 (warp 0 lane 5): racecheck: write during a pending "
                                    "wgmma read: shared store at shared offset 2064",
                                    "reads as the B operand of its wgmma #1", NULL});
  expect_ok(RS_WRITE_A_BUFFER, 1, KILN_EMU_CHECK_ALL);
  return kiln_check_result("emu.wgmma_async");
}
