/* mma.sync: 32 lanes load their fragments from row-major A and B by the ISA's layout formulas,
 * run mma, and store D by the accumulator layout; D must match a plain matmul. The same check
 * run on a permuted A layout must fail, so the comparison can tell layouts apart. Also an
 * ldmatrix-fed mma (x4 for A, x2.trans for B) as generated code does it. */
#include "emu_test.h"

#include <math.h>

typedef enum { KIND_F16, KIND_BF16, KIND_TF32 } Kind;

typedef struct Problem {
  Kind kind;
  int permute_a;        /* load A with the row halves swapped: must give wrong numbers */
  uint16_t a16[16][16]; /* f16 / bf16 bits */
  uint16_t b16[16][8];
  float a32[16][8]; /* tf32 values (already representable) */
  float b32[8][8];
  float c[16][8], d[16][8];
} Problem;

static uint32_t pack(uint16_t lo, uint16_t hi) { return (uint32_t)lo | (uint32_t)hi << 16; }

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static void mma_kernel(void **args) {
  Problem *P = *(Problem **)args[0];
  uint32_t lane = kiln_emu_laneid(), g = lane >> 2, t = lane & 3;
  uint32_t a[4], b[2];
  float c[4], d[4];
  if (P->kind == KIND_TF32) {
    for (uint32_t i = 0; i < 4; i++) /* row g + 8 (i & 1), col t + 4 (i >> 1) */
      a[i] = fbits(P->a32[g + 8 * (i & 1)][t + 4 * (i >> 1)]);
    for (uint32_t i = 0; i < 2; i++) /* row t + 4 i, col g */
      b[i] = fbits(P->b32[t + 4 * i][g]);
  } else {
    for (uint32_t r = 0; r < 4; r++) {
      /* elements 2r, 2r+1: row g (+8 for registers 1 and 3), cols 2t, 2t+1 (+8 for 2 and 3) */
      uint32_t row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
      if (P->permute_a) row = g + 8 * !(r & 1);
      a[r] = pack(P->a16[row][col], P->a16[row][col + 1]);
    }
    for (uint32_t r = 0; r < 2; r++) /* rows 2t, 2t+1 (+8 for register 1), col g */
      b[r] = pack(P->b16[2 * t + 8 * r][g], P->b16[2 * t + 8 * r + 1][g]);
  }
  for (uint32_t i = 0; i < 4; i++) /* row g + 8 (i >> 1), col 2t + (i & 1) */
    c[i] = P->c[g + 8 * (i >> 1)][2 * t + (i & 1)];
  if (P->kind == KIND_F16)
    kiln_emu_mma_m16n8k16_f32_f16(d, a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], c[2], c[3]);
  else if (P->kind == KIND_BF16)
    kiln_emu_mma_m16n8k16_f32_bf16(d, a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], c[2], c[3]);
  else
    kiln_emu_mma_m16n8k8_f32_tf32(d, a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], c[2], c[3]);
  for (uint32_t i = 0; i < 4; i++) P->d[g + 8 * (i >> 1)][2 * t + (i & 1)] = d[i];
}

static float rnd(uint32_t *s) { return (float)(emu_rand(s) % 20001) / 10000.0f - 1.0f; }

static void fill(Problem *P, Kind kind, uint32_t seed) {
  memset(P, 0, sizeof *P);
  P->kind = kind;
  for (int i = 0; i < 16; i++) {
    for (int k = 0; k < 16; k++) {
      float v = rnd(&seed);
      P->a16[i][k] = kind == KIND_BF16 ? kiln_emu_f32_to_bf16(v) : kiln_emu_f32_to_f16(v);
      if (k < 8)
        P->a32[i][k] = kiln_emu_f16_to_f32(kiln_emu_f32_to_f16(v)); /* 11 bits: a tf32 value */
    }
  }
  for (int k = 0; k < 16; k++) {
    for (int j = 0; j < 8; j++) {
      float v = rnd(&seed);
      P->b16[k][j] = kind == KIND_BF16 ? kiln_emu_f32_to_bf16(v) : kiln_emu_f32_to_f16(v);
      if (k < 8) P->b32[k][j] = kiln_emu_f16_to_f32(kiln_emu_f32_to_f16(v));
    }
  }
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 8; j++) P->c[i][j] = rnd(&seed);
}

static float elem_a(const Problem *P, int i, int k) {
  if (P->kind == KIND_TF32) return P->a32[i][k];
  return P->kind == KIND_BF16 ? kiln_emu_bf16_to_f32(P->a16[i][k])
                              : kiln_emu_f16_to_f32(P->a16[i][k]);
}

static float elem_b(const Problem *P, int k, int j) {
  if (P->kind == KIND_TF32) return P->b32[k][j];
  return P->kind == KIND_BF16 ? kiln_emu_bf16_to_f32(P->b16[k][j])
                              : kiln_emu_f16_to_f32(P->b16[k][j]);
}

/* Largest |D - ref| over the allowed error (f32 rounding of K + 1 additions); > 1 is a mismatch. */
static double mma_error(const Problem *P) {
  int K = P->kind == KIND_TF32 ? 8 : 16;
  double worst = 0;
  for (int i = 0; i < 16; i++) {
    for (int j = 0; j < 8; j++) {
      double ref = P->c[i][j], mag = fabs(P->c[i][j]);
      for (int k = 0; k < K; k++) {
        ref += (double)elem_a(P, i, k) * elem_b(P, k, j);
        mag += fabs((double)elem_a(P, i, k) * elem_b(P, k, j));
      }
      double tol = (K + 1) * 0x1p-24 * mag + 1e-30;
      double e = fabs(P->d[i][j] - ref) / tol;
      worst = e > worst ? e : worst;
    }
  }
  return worst;
}

static double run(Kind kind, int permute, uint32_t seed) {
  Problem *P = malloc(sizeof *P);
  fill(P, kind, seed);
  P->permute_a = permute;
  void *args[] = {&P};
  KilnEmuLaunch cfg = emu_cfg(1, 1, 1, 32, 0, 1);
  CHECK_LAUNCH(KILN_EMU_OK, mma_kernel, &cfg, args);
  double e = mma_error(P);
  free(P);
  return e;
}

/* ---- ldmatrix-fed mma: A (16x16, row-major) and B (16x8, stored k-major) in shared memory --- */

typedef struct Staged {
  uint16_t a[16][16], b[16][8];
  float d[16][8];
} Staged;

static void ldmatrix_mma_kernel(void **args) {
  Staged *S = *(Staged **)args[0];
  uint32_t lane = kiln_emu_laneid(), g = lane >> 2, t = lane & 3;
  uint16_t *sa = kiln_emu_shared_base(); /* A rows, 16 halves each */
  uint16_t *sb = sa + 16 * 16;           /* B rows k = 0..15, 8 halves each */
  for (uint32_t i = lane; i < 16 * 16; i += 32) sa[i] = S->a[i / 16][i % 16];
  for (uint32_t i = lane; i < 16 * 8; i += 32) sb[i] = S->b[i / 8][i % 8];
  kiln_emu_bar_warp_sync(0xffffffffu);
  /* x4: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15)
   * are exactly registers a0..a3 of the A fragment */
  uint32_t m = lane / 8, r = lane % 8;
  uint32_t a[4], b[2];
  kiln_emu_ldmatrix(a, 4, 0, sa + (r + 8 * (m & 1)) * 16 + 8 * (m >> 1));
  /* x2.trans over B stored k-major: matrix 0 = k 0-7, matrix 1 = k 8-15 */
  kiln_emu_ldmatrix(b, 2, 1, sb + (lane % 16) * 8);
  float d[4];
  kiln_emu_mma_m16n8k16_f32_f16(d, a[0], a[1], a[2], a[3], b[0], b[1], 0, 0, 0, 0);
  for (uint32_t i = 0; i < 4; i++) S->d[g + 8 * (i >> 1)][2 * t + (i & 1)] = d[i];
}

static void run_staged(void) {
  Staged *S = malloc(sizeof *S);
  uint32_t seed = 99;
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 16; k++) S->a[i][k] = kiln_emu_f32_to_f16(rnd(&seed));
  for (int k = 0; k < 16; k++)
    for (int j = 0; j < 8; j++) S->b[k][j] = kiln_emu_f32_to_f16(rnd(&seed));
  void *args[] = {&S};
  KilnEmuLaunch cfg = emu_cfg(1, 1, 1, 32, (16 * 16 + 16 * 8) * 2, 1);
  CHECK_LAUNCH(KILN_EMU_OK, ldmatrix_mma_kernel, &cfg, args);
  for (int i = 0; i < 16; i++) {
    for (int j = 0; j < 8; j++) {
      double ref = 0, mag = 0;
      for (int k = 0; k < 16; k++) {
        double p = (double)kiln_emu_f16_to_f32(S->a[i][k]) * kiln_emu_f16_to_f32(S->b[k][j]);
        ref += p;
        mag += fabs(p);
      }
      CHECK(fabs(S->d[i][j] - ref) <= 17 * 0x1p-24 * mag + 1e-30);
    }
  }
  free(S);
}

int main(void) {
  for (uint32_t seed = 1; seed <= 3; seed++) {
    double e16 = run(KIND_F16, 0, seed), ebf = run(KIND_BF16, 0, seed),
           e32 = run(KIND_TF32, 0, seed);
    if (e16 > 1 || ebf > 1 || e32 > 1)
      fprintf(stderr, "seed %u: error/tolerance f16 %g bf16 %g tf32 %g\n", seed, e16, ebf, e32);
    CHECK(e16 <= 1);
    CHECK(ebf <= 1);
    CHECK(e32 <= 1);
    /* the teeth: a wrong fragment layout must be caught by the same comparison */
    CHECK(run(KIND_F16, 1, seed) > 100);
  }
  run_staged();
  return kiln_check_result("emu.mma");
}
