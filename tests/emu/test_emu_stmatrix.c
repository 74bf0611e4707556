/* stmatrix x1/x2/x4 against the PTX ISA's fragment layout: register m of lane l holds elements
 * (l/4, 2(l%4)) and (l/4, 2(l%4)+1) of matrix m, and matrix m's row r goes to the address of
 * lane 8m + r; rows of matrices past num stay untouched. Then ldmatrix of what stmatrix wrote
 * gives every lane its registers back (the epilogue's store and the operand load agree). */
#include "emu_test.h"

enum { STRIDE = 24 }; /* halves per stored row: rows 48 bytes apart, 16-byte aligned */

typedef struct Out {
  uint16_t sh[32 * STRIDE]; /* the arena after the store */
  uint32_t back[32][4];     /* ldmatrix of it */
} Out;

static uint16_t value(uint32_t m, uint32_t r, uint32_t c) {
  return (uint16_t)(0x1000 * (m + 1) + 16 * r + c);
}

static void stm_kernel(void **args) {
  Out *out = *(Out **)args[0];
  uint32_t num = *(uint32_t *)args[1];
  uint32_t lane = kiln_emu_laneid(), g = lane / 4, t = lane % 4;
  uint16_t *sh = kiln_emu_shared_base();
  for (uint32_t i = lane; i < 32 * STRIDE; i += 32) sh[i] = 0x7777; /* sentinels */
  kiln_emu_bar_warp_sync(0xffffffffu);
  uint32_t r[4];
  for (uint32_t m = 0; m < 4; m++)
    r[m] = value(m, g, 2 * t) | (uint32_t)value(m, g, 2 * t + 1) << 16;
  /* lanes past 8*num pass a bogus address: it must be ignored */
  void *addr = lane < 8 * num ? (void *)(sh + lane * STRIDE) : (void *)&out;
  kiln_emu_stmatrix(num, addr, r[0], r[1], r[2], r[3]);
  kiln_emu_bar_warp_sync(0xffffffffu);
  for (uint32_t i = lane; i < 32 * STRIDE; i += 32) out->sh[i] = sh[i];
  uint32_t d[4] = {0xdead, 0xdead, 0xdead, 0xdead};
  kiln_emu_ldmatrix(d, num, 0, addr);
  memcpy(out->back[lane], d, sizeof d);
}

int main(void) {
  const uint32_t nums[] = {1, 2, 4};
  for (int ni = 0; ni < 3; ni++) {
    uint32_t num = nums[ni];
    Out *out = calloc(1, sizeof *out);
    void *args[] = {&out, &num};
    KilnEmuLaunch cfg = emu_cfg(1, 1, 1, 32, 32 * STRIDE * 2, 1);
    CHECK_LAUNCH(KILN_EMU_OK, stm_kernel, &cfg, args);
    for (uint32_t row = 0; row < 32; row++)
      for (uint32_t c = 0; c < STRIDE; c++) {
        uint32_t m = row / 8;
        uint16_t want = m < num && c < 8 ? value(m, row % 8, c) : 0x7777;
        CHECK_EQ_U(out->sh[row * STRIDE + c], want);
      }
    for (uint32_t l = 0; l < 32; l++)
      for (uint32_t m = 0; m < 4; m++) {
        uint32_t g = l / 4, t = l % 4;
        uint32_t want =
            m < num ? value(m, g, 2 * t) | (uint32_t)value(m, g, 2 * t + 1) << 16 : 0xdead;
        CHECK_EQ_U(out->back[l][m], want);
      }
    free(out);
  }
  return kiln_check_result("emu.stmatrix");
}
