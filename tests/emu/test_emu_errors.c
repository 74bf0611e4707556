/* Failures end the launch with the right status and a useful message instead of hanging or
 * crashing: divergent barriers (deadlock), trap, shared out of bounds, misused masks, bad
 * configurations. A good launch afterwards must still work. */
#include "emu_test.h"

#include <time.h>

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* The emulator's last message names `needle` (the one CHECK, tests/common/check.h). */
#define CHECK_MSG(needle)                                                                          \
  CHECK(contains(kiln_emu_last_error(), needle), "message lacks \"%s\": %s", needle,               \
        kiln_emu_last_error())

/* Half of every warp skips the barrier and waits for the whole warp instead. */
static void divergent_kernel(void **args) {
  (void)args;
  if (kiln_emu_laneid() < 16) kiln_emu_barrier0();
  kiln_emu_bar_warp_sync(0xffffffffu);
}

/* Half the block waits at barrier 0, the other half at barrier 1: neither can complete. */
static void two_barriers_kernel(void **args) {
  (void)args;
  if (kiln_emu_tid_x() < 64)
    kiln_emu_barrier0();
  else
    kiln_emu_barrier_sync(1, 0);
}

/* Threads that return early count as arrived: not a deadlock. */
static void early_exit_kernel(void **args) {
  uint32_t *count = *(uint32_t **)args[0];
  if (kiln_emu_tid_x() >= 64) return;
  kiln_emu_barrier0();
  kiln_emu_atom_add_u32(count, 1);
}

/* Lanes disagree on the collective: shfl against vote never meet. */
static void mismatch_kernel(void **args) {
  (void)args;
  if (kiln_emu_laneid() == 5)
    kiln_emu_vote_sync(KILN_EMU_VOTE_ANY, 0xffffffffu, 1);
  else
    kiln_emu_shfl_sync_i32(KILN_EMU_SHFL_IDX, 0xffffffffu, 1, 0, 0x1f, NULL);
}

static void trap_kernel(void **args) {
  (void)args;
  kiln_emu_barrier0();
  if (kiln_emu_ctaid_x() == 2 && kiln_emu_tid_x() == 37) kiln_emu_trap();
  kiln_emu_barrier0();
}

static void oob_ldmatrix_kernel(void **args) {
  (void)args;
  uint16_t *sh = kiln_emu_shared_base();
  uint32_t d;
  /* lane 7's row starts at byte 256 of a 256-byte arena */
  kiln_emu_ldmatrix(&d, 1, 0, kiln_emu_laneid() == 7 ? sh + 128 : sh + kiln_emu_laneid() * 8);
}

static void oob_cp_async_kernel(void **args) {
  const uint32_t *src = *(const uint32_t **)args[0];
  char *sh = kiln_emu_shared_base();
  kiln_emu_cp_async(sh + 8 * kiln_emu_tid_x(), src, 8, 8, 0); /* 64 threads x 8 bytes > 256 */
  kiln_emu_cp_async_wait_all();
}

static void exited_lane_kernel(void **args) {
  (void)args;
  if (kiln_emu_laneid() == 3) return;
  kiln_emu_barrier0();
  kiln_emu_shfl_sync_i32(KILN_EMU_SHFL_BFLY, 0xffffffffu, 1, 1, 0x1f, NULL);
}

static void not_in_mask_kernel(void **args) {
  (void)args;
  kiln_emu_vote_sync(KILN_EMU_VOTE_ALL, 0x0000ffffu, 1);
}

static void sum_kernel(void **args) {
  uint32_t *count = *(uint32_t **)args[0];
  kiln_emu_barrier0();
  kiln_emu_atom_add_u32(count, 1);
}

int main(void) {
  clock_t start = clock();
  KilnEmuLaunch one = emu_cfg(1, 1, 1, 128, 0, 1);
  CHECK_LAUNCH(KILN_EMU_ERROR_DEADLOCK, divergent_kernel, &one, NULL);
  CHECK_MSG("block (0,0,0)");
  CHECK_MSG("warp 0: lanes 0-15 bar.sync 0 (64 of 128 arrived); lanes 16-31 bar.warp.sync mask "
            "0xffffffff");
  CHECK_MSG("warp 3:");

  CHECK_LAUNCH(KILN_EMU_ERROR_DEADLOCK, two_barriers_kernel, &one, NULL);
  CHECK_MSG("bar.sync 1");

  uint32_t count = 0;
  void *cargs[] = {&(uint32_t *){&count}};
  CHECK_LAUNCH(KILN_EMU_OK, early_exit_kernel, &one, cargs);
  CHECK_EQ_U(count, 64);

  KilnEmuLaunch warp = emu_cfg(1, 1, 1, 32, 0, 1);
  CHECK_LAUNCH(KILN_EMU_ERROR_DEADLOCK, mismatch_kernel, &warp, NULL);
  CHECK_MSG("lanes 5-5 vote.sync");

  KilnEmuLaunch grid = emu_cfg(4, 1, 1, 64, 0, 2);
  CHECK_LAUNCH(KILN_EMU_ERROR_TRAP, trap_kernel, &grid, NULL);
  CHECK_MSG("block (2,0,0) thread 37 (warp 1 lane 5): trap");

  KilnEmuLaunch small = emu_cfg(1, 1, 1, 32, 256, 1);
  CHECK_LAUNCH(KILN_EMU_ERROR_MEMORY, oob_ldmatrix_kernel, &small, NULL);
  CHECK_MSG("lane 7): ldmatrix row address");
  uint32_t *src = aligned_alloc(16, 64);
  memset(src, 0, 64);
  void *sargs[] = {&src};
  KilnEmuLaunch small64 = emu_cfg(1, 1, 1, 64, 256, 1);
  CHECK_LAUNCH(KILN_EMU_ERROR_MEMORY, oob_cp_async_kernel, &small64, sargs);
  CHECK_MSG("thread 32 ");
  free(src);

  CHECK_LAUNCH(KILN_EMU_ERROR_INVALID_OP, exited_lane_kernel, &warp, NULL);
  CHECK_MSG("lane 3, which has exited");
  CHECK_LAUNCH(KILN_EMU_ERROR_INVALID_OP, not_in_mask_kernel, &warp, NULL);
  CHECK_MSG("does not hold the calling lane");

  KilnEmuLaunch bad = emu_cfg(1, 1, 1, 48, 0, 1);
  CHECK_LAUNCH(KILN_EMU_ERROR_INVALID_ARGUMENT, sum_kernel, &bad, NULL);
  bad = emu_cfg(0, 1, 1, 32, 0, 1);
  CHECK_LAUNCH(KILN_EMU_ERROR_INVALID_ARGUMENT, sum_kernel, &bad, NULL);
  bad = emu_cfg(1, 1, 1, 32, KILN_EMU_MAX_SHARED_BYTES + 1, 1);
  CHECK_LAUNCH(KILN_EMU_ERROR_INVALID_ARGUMENT, sum_kernel, &bad, NULL);
  CHECK_LAUNCH(KILN_EMU_ERROR_INVALID_ARGUMENT, NULL, &one, NULL);

  /* the emulator is still usable after all of that */
  count = 0;
  KilnEmuLaunch ok = emu_cfg(5, 1, 1, 96, 0, 3);
  CHECK_LAUNCH(KILN_EMU_OK, sum_kernel, &ok, cargs);
  CHECK_EQ_U(count, 5 * 96);

  CHECK_EQ_U(kiln_emu_laneid(), 0); /* intrinsics outside a launch are inert */
  CHECK(kiln_emu_shared_base() == NULL);
  CHECK(strcmp(kiln_emu_status_name(KILN_EMU_ERROR_DEADLOCK), "KILN_EMU_ERROR_DEADLOCK") == 0);
  CHECK(strcmp(kiln_emu_status_name(KILN_EMU_STATUS_COUNT), "KILN_EMU_STATUS_UNKNOWN") == 0);
  CHECK((double)(clock() - start) / CLOCKS_PER_SEC < 5.0);
  return kiln_check_result("emu.errors");
}
