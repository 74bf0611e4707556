/* matrix.c — mma.sync, ldmatrix and stmatrix: warp-wide rendezvous that gather every lane's fragment
 * registers into whole matrices, compute, and scatter the results back by the PTX ISA layouts.
 *
 * With groupID g = laneid >> 2 and threadID_in_group t = laneid % 4 (docs/emulator.md has the
 * tables):
 *   m16n8k16 f16/bf16  A (16x16): element i of 8 (register i/2, half i%2):
 *                          row g + 8 * ((i >> 1) & 1), col 2t + (i & 1) + 8 * (i >= 4)
 *                      B (16x8):  element i of 4: row 2t + (i & 1) + 8 * (i >= 2), col g
 *   m16n8k8 tf32       A (16x8):  register i of 4: row g + 8 * (i & 1), col t + 4 * (i >> 1)
 *                      B (8x8):   register i of 2: row t + 4 * i, col g
 *   m16n8k32 s8        A (16x32): byte j of register r: row g + 8 * (r & 1), col 4t + j + 16 * (r >> 1)
 *                      B (32x8):  byte j of register r: row 4t + j + 16 * r, col g
 *   C / D (16x8 f32 or s32)  element i of 4: row g + 8 * (i >> 1), col 2t + (i & 1)
 */
#include "emu_internal.h"
#include "kiln_base.h"

#include <string.h>

enum { MMA_F16, MMA_BF16, MMA_TF32, MMA_S8 };

static float half_value(uint32_t variant, uint32_t reg, uint32_t half) {
  uint16_t h = (uint16_t)(reg >> (16 * half));
  return variant == MMA_BF16 ? kiln_emu_bf16_to_f32(h) : kiln_emu_f16_to_f32(h);
}

/* The 16-bit-operand shapes (K = 16): gather A and B. */
static void gather_k16(const EmuFiber *warp, uint32_t variant, float a[16][16], float b[16][8]) {
  for (uint32_t lane = 0; lane < KILN_EMU_WARP_SIZE; lane++) {
    uint32_t g = lane >> 2, t = lane & 3;
    const uint32_t *in = warp[lane].coll.in;
    for (uint32_t i = 0; i < 8; i++) {
      uint32_t row = g + 8 * ((i >> 1) & 1), col = 2 * t + (i & 1) + 8 * (i >= 4);
      a[row][col] = half_value(variant, in[i / 2], i % 2);
    }
    for (uint32_t i = 0; i < 4; i++) {
      uint32_t row = 2 * t + (i & 1) + 8 * (i >= 2);
      b[row][g] = half_value(variant, in[4 + i / 2], i % 2);
    }
  }
}

float kiln_emu_tf32_value(uint32_t reg) { return kiln_f32_from_bits(reg & 0xffffe000u); }

static void gather_tf32(const EmuFiber *warp, float a[16][16], float b[16][8]) {
  for (uint32_t lane = 0; lane < KILN_EMU_WARP_SIZE; lane++) {
    uint32_t g = lane >> 2, t = lane & 3;
    const uint32_t *in = warp[lane].coll.in;
    for (uint32_t i = 0; i < 4; i++)
      a[g + 8 * (i & 1)][t + 4 * (i >> 1)] = kiln_emu_tf32_value(in[i]);
    for (uint32_t i = 0; i < 2; i++) b[t + 4 * i][g] = kiln_emu_tf32_value(in[4 + i]);
  }
}

static void mma_compute(EmuFiber *warp, uint32_t mask, uint32_t variant) {
  (void)mask;
  float a[16][16], b[16][8], c[16][8];
  uint32_t k = variant == MMA_TF32 ? 8 : 16;
  if (variant == MMA_TF32)
    gather_tf32(warp, a, b);
  else
    gather_k16(warp, variant, a, b);
  for (uint32_t lane = 0; lane < KILN_EMU_WARP_SIZE; lane++) {
    for (uint32_t i = 0; i < 4; i++)
      c[(lane >> 2) + 8 * (i >> 1)][2 * (lane & 3) + (i & 1)] = warp[lane].coll.fin[i];
  }
  for (uint32_t m = 0; m < 16; m++) {
    for (uint32_t n = 0; n < 8; n++) {
      float acc = c[m][n];
      for (uint32_t kk = 0; kk < k; kk++)
        acc += a[m][kk] * b[kk][n]; /* products of 16-bit / tf32 values are exact in f32 */
      c[m][n] = acc;
    }
  }
  for (uint32_t lane = 0; lane < KILN_EMU_WARP_SIZE; lane++) {
    for (uint32_t i = 0; i < 4; i++)
      warp[lane].coll.out[i] =
          kiln_f32_bits(c[(lane >> 2) + 8 * (i >> 1)][2 * (lane & 3) + (i & 1)]);
  }
}

static void mma(uint32_t variant, float *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                uint32_t b0, uint32_t b1, float c0, float c1, float c2, float c3) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  const uint32_t in[6] = {a0, a1, a2, a3, b0, b1};
  const float fin[4] = {c0, c1, c2, c3};
  memcpy(f->coll.in, in, sizeof in);
  memcpy(f->coll.fin, fin, sizeof fin);
  kiln_emu_collective(kiln_emu_worker(), f, EMU_COLL_MMA, variant, 0xffffffffu, mma_compute);
  for (int i = 0; i < 4; i++) d[i] = kiln_f32_from_bits(f->coll.out[i]);
}

void kiln_emu_mma_m16n8k16_f32_f16(float *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                   uint32_t b0, uint32_t b1, float c0, float c1, float c2,
                                   float c3) {
  mma(MMA_F16, d, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3);
}

void kiln_emu_mma_m16n8k16_f32_bf16(float *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                    uint32_t b0, uint32_t b1, float c0, float c1, float c2,
                                    float c3) {
  mma(MMA_BF16, d, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3);
}

void kiln_emu_mma_m16n8k8_f32_tf32(float *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                   uint32_t b0, uint32_t b1, float c0, float c1, float c2,
                                   float c3) {
  mma(MMA_TF32, d, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3);
}

/* The s8 shape: gather A (16x32) and B (32x8) as signed bytes, the i32 accumulators, add in
 * uint32_t (wrapping modulo 2^32 as the PTX .s32 accumulation without .satfinite does; each
 * product of two bytes fits in 16 bits), scatter D. */
static void mma_s8_compute(EmuFiber *warp, uint32_t mask, uint32_t variant) {
  (void)mask;
  (void)variant;
  int32_t a[16][32], b[32][8];
  uint32_t c[16][8];
  for (uint32_t lane = 0; lane < KILN_EMU_WARP_SIZE; lane++) {
    uint32_t g = lane >> 2, t = lane & 3;
    const uint32_t *in = warp[lane].coll.in;
    for (uint32_t r = 0; r < 4; r++)
      for (uint32_t j = 0; j < 4; j++)
        a[g + 8 * (r & 1)][4 * t + j + 16 * (r >> 1)] = (int8_t)(uint8_t)(in[r] >> (8 * j));
    for (uint32_t r = 0; r < 2; r++)
      for (uint32_t j = 0; j < 4; j++)
        b[4 * t + j + 16 * r][g] = (int8_t)(uint8_t)(in[4 + r] >> (8 * j));
    for (uint32_t i = 0; i < 4; i++)
      c[g + 8 * (i >> 1)][2 * t + (i & 1)] = (uint32_t)warp[lane].coll.iin[i];
  }
  for (uint32_t m = 0; m < 16; m++)
    for (uint32_t n = 0; n < 8; n++)
      for (uint32_t kk = 0; kk < 32; kk++) c[m][n] += (uint32_t)(a[m][kk] * b[kk][n]);
  for (uint32_t lane = 0; lane < KILN_EMU_WARP_SIZE; lane++)
    for (uint32_t i = 0; i < 4; i++)
      warp[lane].coll.out[i] = c[(lane >> 2) + 8 * (i >> 1)][2 * (lane & 3) + (i & 1)];
}

void kiln_emu_mma_m16n8k32_s32_s8(int32_t *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                  uint32_t b0, uint32_t b1, int32_t c0, int32_t c1, int32_t c2,
                                  int32_t c3) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  const uint32_t in[6] = {a0, a1, a2, a3, b0, b1};
  const int32_t iin[4] = {c0, c1, c2, c3};
  memcpy(f->coll.in, in, sizeof in);
  memcpy(f->coll.iin, iin, sizeof iin);
  kiln_emu_collective(kiln_emu_worker(), f, EMU_COLL_MMA, MMA_S8, 0xffffffffu, mma_s8_compute);
  for (int i = 0; i < 4; i++) d[i] = (int32_t)f->coll.out[i];
}

/* ---- ldmatrix ------------------------------------------------------------------------------ */

static uint16_t load_b16(const void *row, uint32_t col) {
  uint16_t v;
  memcpy(&v, (const unsigned char *)row + 2 * col, 2);
  return v;
}

/* sub = num | trans << 3. Matrix m's row r comes from lane 8m + r; lane l receives, for each
 * matrix, elements (g, 2t) and (g, 2t + 1) — or (2t, g) and (2t + 1, g) with .trans. */
static void ldmatrix_compute(EmuFiber *warp, uint32_t mask, uint32_t sub) {
  (void)mask;
  uint32_t num = sub & 7, trans = sub >> 3;
  for (uint32_t m = 0; m < num; m++) {
    for (uint32_t lane = 0; lane < KILN_EMU_WARP_SIZE; lane++) {
      uint32_t g = lane >> 2, t = lane & 3;
      uint16_t lo, hi;
      if (trans) {
        lo = load_b16(warp[8 * m + 2 * t].coll.addr, g);
        hi = load_b16(warp[8 * m + 2 * t + 1].coll.addr, g);
      } else {
        lo = load_b16(warp[8 * m + g].coll.addr, 2 * t);
        hi = load_b16(warp[8 * m + g].coll.addr, 2 * t + 1);
      }
      warp[lane].coll.out[m] = (uint32_t)lo | (uint32_t)hi << 16;
    }
  }
}

void kiln_emu_ldmatrix(uint32_t *d, uint32_t num, uint32_t trans, const void *row_addr) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  EmuWorker *w = kiln_emu_worker();
  if (num != 1 && num != 2 && num != 4)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP, "ldmatrix: .x%u is not .x1, .x2 or .x4", num);
  /* Each lane checks its own row address, so a failure names the lane that supplied it. */
  if (f->tid % KILN_EMU_WARP_SIZE < 8 * num) {
    kiln_emu_check_shared_range(w, f, row_addr, 16, 16, "ldmatrix row address");
    kiln_emu_check_shadow(w, f, row_addr, 16, KILN_EMU_ACCESS_LOAD, "ldmatrix row");
  }
  f->coll.addr = row_addr;
  kiln_emu_collective(w, f, EMU_COLL_LDMATRIX, num | (trans ? 8u : 0u), 0xffffffffu,
                      ldmatrix_compute);
  for (uint32_t m = 0; m < num; m++) d[m] = f->coll.out[m];
}

/* ---- stmatrix ------------------------------------------------------------------------------ */

/* sub = num. Matrix m's row r goes to lane 8m + r's address; its 16 bytes are the registers m of
 * lanes 4r .. 4r + 3 (two b16 each, the low half first). The row is written by the lane that
 * gave its address, as far as racecheck and initcheck are told. */
static void stmatrix_compute(EmuFiber *warp, uint32_t mask, uint32_t num) {
  (void)mask;
  EmuWorker *w = kiln_emu_worker();
  for (uint32_t m = 0; m < num; m++) {
    for (uint32_t r = 0; r < 8; r++) {
      EmuFiber *owner = &warp[8 * m + r];
      unsigned char *row = (unsigned char *)(uintptr_t)owner->coll.addr;
      kiln_emu_check_shadow(w, owner, row, 16, KILN_EMU_ACCESS_STORE, "stmatrix row");
      for (uint32_t t = 0; t < 4; t++) memcpy(row + 4 * t, &warp[4 * r + t].coll.in[m], 4);
      kiln_emu_check_shadow(w, owner, row, 16, KILN_EMU_ACCESS_STORED, "stmatrix row");
    }
  }
}

void kiln_emu_stmatrix(uint32_t num, void *row_addr, uint32_t r0, uint32_t r1, uint32_t r2,
                       uint32_t r3) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  EmuWorker *w = kiln_emu_worker();
  if (num != 1 && num != 2 && num != 4)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP, "stmatrix: .x%u is not .x1, .x2 or .x4", num);
  if (f->tid % KILN_EMU_WARP_SIZE < 8 * num)
    kiln_emu_check_shared_range(w, f, row_addr, 16, 16, "stmatrix row address");
  const uint32_t in[4] = {r0, r1, r2, r3};
  memcpy(f->coll.in, in, sizeof in);
  f->coll.addr = row_addr;
  kiln_emu_collective(w, f, EMU_COLL_STMATRIX, num, 0xffffffffu, stmatrix_compute);
}
