/* ldmatrix x1/x2/x4, with and without .trans, against direct reads of the 8x8 matrices: lane l
 * gets elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1) of each matrix, transposed with .trans. */
#include "emu_test.h"

enum { STRIDE = 24 }; /* halves per stored row: rows 48 bytes apart, 16-byte aligned */

typedef struct Out {
  uint32_t d[32][4];
} Out;

static uint16_t value(uint32_t m, uint32_t r, uint32_t c) {
  return (uint16_t)(0x1000 * (m + 1) + 16 * r + c);
}

static void ldm_kernel(void **args) {
  Out *out = *(Out **)args[0];
  uint32_t num = *(uint32_t *)args[1], trans = *(uint32_t *)args[2];
  uint32_t lane = kiln_emu_laneid();
  uint16_t *sh = kiln_emu_shared_base();
  /* matrix m row r lives at row (8m + r) of a STRIDE-wide array, written by all lanes */
  for (uint32_t i = lane; i < 32 * 8; i += 32) {
    uint32_t row = i / 8, col = i % 8;
    sh[row * STRIDE + col] = value(row / 8, row % 8, col);
  }
  kiln_emu_bar_warp_sync(0xffffffffu);
  /* lanes past 8*num pass a bogus address: it must be ignored */
  const void *addr = lane < 8 * num ? (const void *)(sh + lane * STRIDE) : (const void *)&out;
  uint32_t d[4] = {0xdead, 0xdead, 0xdead, 0xdead};
  kiln_emu_ldmatrix(d, num, trans, addr);
  memcpy(out->d[lane], d, sizeof d);
}

int main(void) {
  const uint32_t nums[] = {1, 2, 4};
  for (int ni = 0; ni < 3; ni++) {
    for (uint32_t trans = 0; trans < 2; trans++) {
      uint32_t num = nums[ni];
      Out *out = calloc(1, sizeof *out);
      void *args[] = {&out, &num, &trans};
      KilnEmuLaunch cfg = emu_cfg(1, 1, 1, 32, 32 * STRIDE * 2, 1);
      CHECK_LAUNCH(KILN_EMU_OK, ldm_kernel, &cfg, args);
      for (uint32_t l = 0; l < 32; l++) {
        uint32_t g = l / 4, t = l % 4;
        for (uint32_t m = 0; m < 4; m++) {
          uint32_t want = 0xdead;
          if (m < num)
            want = trans ? value(m, 2 * t, g) | (uint32_t)value(m, 2 * t + 1, g) << 16
                         : value(m, g, 2 * t) | (uint32_t)value(m, g, 2 * t + 1) << 16;
          CHECK_EQ_U(out->d[l][m], want);
        }
      }
      free(out);
    }
  }
  return kiln_check_result("emu.ldmatrix");
}
