/* cp.async: copies are not visible before the wait that covers their group, are visible after
 * it, and bytes past src-size are zero-filled. */
#include "emu_test.h"

enum { THREADS = 64 };

typedef struct Seen {
  uint32_t before[4], after_wait1[4], after_wait0[4]; /* group 0 slot words, then group 1 */
  uint8_t zf[16];
  uint32_t empty_group_ok;
} Seen;

static void cp_kernel(void **args) {
  const uint32_t *src = *(const uint32_t **)args[0];
  Seen *seen = *(Seen **)args[1];
  uint32_t t = kiln_emu_tid_x();
  uint32_t *sh = kiln_emu_shared_base(); /* per thread: 4 words group 0, 4 words group 1, 4 zf */
  uint32_t *g0 = sh + t * 12, *g1 = g0 + 4, *zf = g0 + 8;
  for (int i = 0; i < 12; i++) g0[i] = 0xabababab;
  Seen *s = &seen[t];
  kiln_emu_cp_async(g0, src + t * 8, 16, 16, 1); /* .cg, 16 bytes */
  kiln_emu_cp_async_commit_group();
  kiln_emu_cp_async(g1, src + t * 8 + 4, 8, 8, 0); /* .ca, two 8-byte copies */
  kiln_emu_cp_async(g1 + 2, src + t * 8 + 6, 8, 8, 0);
  kiln_emu_cp_async(zf, src + t * 8, 16, 6, 0); /* 6 bytes copied, 10 zero-filled */
  kiln_emu_cp_async_commit_group();
  s->before[0] = g0[0], s->before[1] = g0[3], s->before[2] = g1[0], s->before[3] = g1[3];
  kiln_emu_cp_async_wait_group(1); /* group 0 done, group 1 may still be in flight */
  s->after_wait1[0] = g0[0], s->after_wait1[1] = g0[3], s->after_wait1[2] = g1[0];
  s->after_wait1[3] = g1[3];
  kiln_emu_cp_async_wait_group(0);
  s->after_wait0[0] = g0[0], s->after_wait0[1] = g0[3], s->after_wait0[2] = g1[0];
  s->after_wait0[3] = g1[3];
  memcpy(s->zf, zf, 16);
  /* an empty group, then wait_all on a copy issued without commit */
  kiln_emu_cp_async_commit_group();
  kiln_emu_cp_async(g0, src, 4, 4, 0);
  uint32_t stale = g0[0];
  kiln_emu_cp_async_wait_all();
  s->empty_group_ok = stale == src[t * 8] && g0[0] == src[0];
}

int main(void) {
  uint32_t *src = aligned_alloc(16, THREADS * 8 * sizeof *src);
  for (uint32_t i = 0; i < THREADS * 8; i++) src[i] = 0x01000000u * (i % 7 + 1) + i;
  Seen *seen = calloc(THREADS, sizeof *seen);
  void *args[] = {&src, &seen};
  KilnEmuLaunch cfg = emu_cfg(1, 1, 1, THREADS, THREADS * 12 * 4, 1);
  CHECK_LAUNCH(KILN_EMU_OK, cp_kernel, &cfg, args);
  for (uint32_t t = 0; t < THREADS; t++) {
    const Seen *s = &seen[t];
    const uint32_t *w = src + t * 8;
    for (int i = 0; i < 4; i++) CHECK_EQ_U(s->before[i], 0xabababab);
    CHECK_EQ_U(s->after_wait1[0], w[0]);
    CHECK_EQ_U(s->after_wait1[1], w[3]);
    CHECK_EQ_U(s->after_wait1[2], 0xabababab);
    CHECK_EQ_U(s->after_wait1[3], 0xabababab);
    CHECK_EQ_U(s->after_wait0[0], w[0]);
    CHECK_EQ_U(s->after_wait0[1], w[3]);
    CHECK_EQ_U(s->after_wait0[2], w[4]);
    CHECK_EQ_U(s->after_wait0[3], w[7]);
    CHECK(memcmp(s->zf, w, 6) == 0);
    for (int i = 6; i < 16; i++) CHECK_EQ_U(s->zf[i], 0);
    CHECK_EQ_U(s->empty_group_ok, 1);
  }
  free(src);
  free(seen);
  return kiln_check_result("emu.cp_async");
}
