/* mma.sync: 32 lanes load their fragments from row-major A and B by the ISA's layout formulas,
 * run mma, and store D by the accumulator layout; D must match a plain matmul. The same check
 * run on a permuted A layout must fail, so the comparison can tell layouts apart. Also an
 * ldmatrix-fed mma (x4 for A, x2.trans for B) as generated code does it, and the s8 m16n8k32
 * mma (exact, wrapping i32) against a plain C loop, by the ISA's formulas and through ldmatrix
 * of k-contiguous byte tiles as the GPU lowering stages them. */
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

/* ---- s8 m16n8k32: i32 accumulation, wrapping ------------------------------------------------ */

typedef struct ProblemS8 {
  int permute;  /* load A's bytes in reverse order inside each register: must give wrong sums */
  int ldmatrix; /* fragments through ldmatrix from k-contiguous shared tiles (as generated) */
  int8_t a[16][32], b[32][8];
  int32_t c[16][8], d[16][8];
} ProblemS8;

static uint32_t pack4(const int8_t *p, int step, int reverse) {
  uint32_t v = 0;
  for (int j = 0; j < 4; j++) v |= (uint32_t)(uint8_t)p[(reverse ? 3 - j : j) * step] << (8 * j);
  return v;
}

static void mma_s8_kernel(void **args) {
  ProblemS8 *P = *(ProblemS8 **)args[0];
  uint32_t lane = kiln_emu_laneid(), g = lane >> 2, t = lane & 3;
  uint32_t a[4], b[2];
  if (P->ldmatrix) {
    /* A as it is (16 rows of 32 bytes = 16 b16), B transposed (8 rows n of 32 bytes k): the b16
     * views read as the f16 A and B^T are the s8 fragments */
    uint16_t *sa = kiln_emu_shared_base(), *sb = sa + 16 * 16;
    int8_t *ba = (int8_t *)sa, *bb = (int8_t *)sb;
    for (uint32_t i = lane; i < 16 * 32; i += 32) ba[i] = P->a[i / 32][i % 32];
    for (uint32_t i = lane; i < 8 * 32; i += 32) bb[i] = P->b[i % 32][i / 32];
    kiln_emu_bar_warp_sync(0xffffffffu);
    uint32_t m = lane / 8, r = lane % 8;
    kiln_emu_ldmatrix(a, 4, 0, sa + (r + 8 * (m & 1)) * 16 + 8 * (m >> 1));
    kiln_emu_ldmatrix(b, 2, 0, sb + r * 16 + 8 * (m & 1));
  } else {
    for (uint32_t r = 0; r < 4; r++) /* row g + 8 (r & 1), cols 4t .. 4t + 3 (+16 for r >= 2) */
      a[r] = pack4(&P->a[g + 8 * (r & 1)][4 * t + 16 * (r >> 1)], 1, P->permute);
    for (uint32_t r = 0; r < 2; r++) /* rows 4t .. 4t + 3 (+16 for register 1), col g */
      b[r] = pack4(&P->b[4 * t + 16 * r][g], 8, 0);
  }
  int32_t c[4], d[4];
  for (uint32_t i = 0; i < 4; i++) c[i] = P->c[g + 8 * (i >> 1)][2 * t + (i & 1)];
  kiln_emu_mma_m16n8k32_s32_s8(d, a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], c[2], c[3]);
  for (uint32_t i = 0; i < 4; i++) P->d[g + 8 * (i >> 1)][2 * t + (i & 1)] = d[i];
}

/* Elements of D that differ from the plain loop (sums in uint32_t: wrapping modulo 2^32). */
static int run_s8(int permute, int ldmatrix, uint32_t seed) {
  ProblemS8 *P = calloc(1, sizeof *P);
  P->permute = permute;
  P->ldmatrix = ldmatrix;
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 32; k++) P->a[i][k] = (int8_t)(emu_rand(&seed) & 0xff);
  for (int k = 0; k < 32; k++)
    for (int j = 0; j < 8; j++) P->b[k][j] = (int8_t)(emu_rand(&seed) & 0xff);
  P->a[0][0] = P->b[0][0] = -128; /* the extreme product, 2^14 */
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 8; j++) P->c[i][j] = (int32_t)(emu_rand(&seed) % 2001) - 1000;
  /* accumulators at the ends of the i32 range: row 0 must wrap past INT32_MAX, row 8 below
   * INT32_MIN (no saturation without .satfinite) */
  for (int j = 0; j < 8; j++) {
    P->c[0][j] = INT32_MAX - 100;
    P->c[8][j] = INT32_MIN + 100;
  }
  for (int k = 0; k < 32; k++) {
    P->a[0][k] = 100;
    P->a[8][k] = -100;
    P->b[k][0] = 100;
  }
  void *args[] = {&P};
  KilnEmuLaunch cfg = emu_cfg(1, 1, 1, 32, 16 * 32 + 8 * 32, 1);
  CHECK_LAUNCH(KILN_EMU_OK, mma_s8_kernel, &cfg, args);
  int bad = 0;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 8; j++) {
      uint32_t ref = (uint32_t)P->c[i][j];
      for (int k = 0; k < 32; k++) ref += (uint32_t)((int32_t)P->a[i][k] * P->b[k][j]);
      bad += (int32_t)ref != P->d[i][j];
    }
  /* the wrapped corners: C + 32 * 100 * 100 past either end of the range */
  CHECK(P->d[0][0] == (int32_t)((uint32_t)INT32_MAX - 100 + 320000u));
  CHECK(P->d[8][0] == (int32_t)((uint32_t)INT32_MIN + 100 - 320000u));
  free(P);
  return bad;
}

int main(void) {
  for (uint32_t seed = 1; seed <= 3; seed++) {
    CHECK(run_s8(0, 0, seed) == 0);
    CHECK(run_s8(0, 1, seed) == 0);
    /* the teeth: bytes of a register in the wrong k order change most sums */
    CHECK(run_s8(1, 0, seed) > 64);
  }
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
