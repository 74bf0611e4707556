/* Every thread of a 3-D grid writes its ids: each slot is written once, with the right ids. */
#include "emu_test.h"

typedef struct Rec {
  uint32_t tid[3], ntid[3], ctaid[3], nctaid[3], lane, warp, written;
} Rec;

static void ids_kernel(void **args) {
  Rec *out = *(Rec **)args[0];
  uint32_t bx = kiln_emu_ntid_x(), by = kiln_emu_ntid_y();
  uint32_t lin_t = kiln_emu_tid_x() + bx * (kiln_emu_tid_y() + by * kiln_emu_tid_z());
  uint32_t lin_b =
      kiln_emu_ctaid_x() +
      kiln_emu_nctaid_x() * (kiln_emu_ctaid_y() + kiln_emu_nctaid_y() * kiln_emu_ctaid_z());
  uint32_t threads = bx * by * kiln_emu_ntid_z();
  Rec *r = &out[lin_b * threads + lin_t];
  r->tid[0] = kiln_emu_tid_x(), r->tid[1] = kiln_emu_tid_y(), r->tid[2] = kiln_emu_tid_z();
  r->ntid[0] = bx, r->ntid[1] = by, r->ntid[2] = kiln_emu_ntid_z();
  r->ctaid[0] = kiln_emu_ctaid_x(), r->ctaid[1] = kiln_emu_ctaid_y(),
  r->ctaid[2] = kiln_emu_ctaid_z();
  r->nctaid[0] = kiln_emu_nctaid_x(), r->nctaid[1] = kiln_emu_nctaid_y();
  r->nctaid[2] = kiln_emu_nctaid_z();
  r->lane = kiln_emu_laneid();
  r->warp = kiln_emu_warpid();
  r->written++;
}

static void run(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t tx, uint32_t ty, uint32_t tz,
                uint32_t os) {
  uint32_t threads = tx * ty * tz, blocks = gx * gy * gz;
  Rec *out = calloc((size_t)threads * blocks, sizeof *out);
  void *args[] = {&out};
  KilnEmuLaunch cfg = {.grid = {gx, gy, gz}, .block = {tx, ty, tz}, .num_os_threads = os};
  CHECK_LAUNCH(KILN_EMU_OK, ids_kernel, &cfg, args);
  for (uint32_t b = 0; b < blocks; b++) {
    for (uint32_t t = 0; t < threads; t++) {
      const Rec *r = &out[b * threads + t];
      CHECK_EQ_U(r->written, 1);
      CHECK_EQ_U(r->tid[0], t % tx);
      CHECK_EQ_U(r->tid[1], t / tx % ty);
      CHECK_EQ_U(r->tid[2], t / (tx * ty));
      CHECK_EQ_U(r->ctaid[0], b % gx);
      CHECK_EQ_U(r->ctaid[1], b / gx % gy);
      CHECK_EQ_U(r->ctaid[2], b / (gx * gy));
      CHECK(r->ntid[0] == tx && r->ntid[1] == ty && r->ntid[2] == tz);
      CHECK(r->nctaid[0] == gx && r->nctaid[1] == gy && r->nctaid[2] == gz);
      CHECK_EQ_U(r->lane, t % 32);
      CHECK_EQ_U(r->warp, t / 32);
    }
  }
  free(out);
}

int main(void) {
  run(3, 4, 2, 128, 1, 1, 3); /* a 3-D grid of 128-thread blocks on three OS threads */
  run(2, 1, 3, 8, 4, 2, 1);   /* a 3-D block: warps follow the linear thread id */
  run(1, 1, 1, 1024, 1, 1, 0);
  return kiln_check_result("emu.grid");
}
