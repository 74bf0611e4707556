/* wgmma.mma_async m64nNk16 on the emulator: random f16 / bf16 A (64x16) and B (16xn) are placed
 * in shared memory by a C rendering of the PTX ISA's canonical layouts (K-major and MN-major;
 * interleaved core matrices and the 32-, 64- and 128-byte swizzles), the kernel builds the
 * descriptors from its shared pointers and calls kiln_emu_wgmma on nonzero accumulators, and D
 * must equal a double-precision matmul + C.  Also: two warpgroups with their own descriptors;
 * the K-major 64-byte-swizzled rows the GPU lowering stages (BK = 32, one k16 step per start
 * address); a copy swizzled one way read with another mode must give wrong numbers (the layout
 * matters); and the errors (out-of-bounds descriptor, base_offset, bad n, a block that is not
 * whole warpgroups, unwritten shared memory under initcheck).  The RS form (kiln_emu_wgmma_rs, A
 * from registers built by mma.sync's A fragment formulas) against the same matmul for every n,
 * type, transpose and mode of B on one and two warpgroups; two lanes trading their A registers
 * must give wrong rows; its errors, and a warp whose lanes disagree on n reported as a hang.
 * tf32 (m64nNk8, f32 words read truncated to tf32) K-major in every mode, the lowering's k8
 * steps, against the matmul of the truncated values (and off that of the f32 ones); its errors
 * (a transpose, the RS form). */
#include "emu_test.h"

#include <math.h>

enum { MODE_INTERLEAVE = 0, MODE_128 = 1, MODE_64 = 2, MODE_32 = 3 };
#define MAX_N      256
#define MAX_GROUPS 2
#define ARENA      (96 * 1024)

/* One operand as placed: its element bits by (x, k), its layout and the descriptor fields. */
typedef struct Operand {
  uint32_t trans, mode, base, lbo, sbo; /* bytes */
  uint32_t extent;                      /* x extent: 64 rows of A, or n columns of B */
} Operand;

typedef struct Problem {
  uint32_t n, bf16, groups, threads;
  Operand a[MAX_GROUPS], b[MAX_GROUPS];
  uint16_t av[MAX_GROUPS][64][16];    /* A(m, k) bits */
  uint16_t bv[MAX_GROUPS][16][MAX_N]; /* B(k, n) bits */
  float c[MAX_GROUPS][64][MAX_N], d[MAX_GROUPS][64][MAX_N];
  uint32_t shared_bytes;
  unsigned char image[ARENA]; /* the arena as the kernel copies it in */
} Problem;

static uint32_t width_of(uint32_t mode) {
  static const uint32_t w[4] = {0, 128, 64, 32};
  return w[mode];
}

/* The swizzle of a byte address: in each 128-byte row of 8 chunks of 16 bytes, chunk c of row r
 * moves to c ^ (r % (W / 16)), the pattern repeating every W / 16 rows (8 W bytes). */
static uint32_t swizzle(uint32_t addr, uint32_t width) {
  if (!width) return addr;
  uint32_t chunk = (addr / 16) % 8, row = addr / 128;
  return addr - 16 * chunk + 16 * (chunk ^ (row % (width / 16)));
}

/* Byte address of element (x, k) in the canonical layout of o (PTX ISA, "Shared Memory Matrix
 * Layout"): K-major rows of x hold k contiguously (core matrices of 8 x by 16 bytes of k, or one
 * W-byte swizzled row per x); MN-major rows of k hold x contiguously. */
static uint32_t place_addr(const Operand *o, uint32_t x, uint32_t k) {
  uint32_t W = width_of(o->mode), a;
  if (!o->trans && !W) /* 8x8 core matrices: x groups SBO apart, k halves LBO apart */
    a = o->base + (x / 8) * o->sbo + (k / 8) * o->lbo + (x % 8) * 16 + (k % 8) * 2;
  else if (!o->trans) /* 8 rows of W bytes per atom, atoms SBO apart */
    a = o->base + (x / 8) * o->sbo + (x % 8) * W + k * 2;
  else if (!W) /* core matrices of 8 k rows by 8 x: x groups SBO apart, k halves LBO apart */
    a = o->base + (x / 8) * o->sbo + (k / 8) * o->lbo + (k % 8) * 16 + (x % 8) * 2;
  else /* k rows of W bytes (W / 2 x each); k octets SBO apart, x blocks of W / 2 LBO apart */
    a = o->base + (x / (W / 2)) * o->lbo + (k / 8) * o->sbo + (k % 8) * W + (x % (W / 2)) * 2;
  return swizzle(a, W);
}

/* LBO and SBO for a layout packed from o->base: `alt` picks the other order of the blocks of the
 * interleaved layouts (so that LBO and SBO both matter); returns the bytes used. */
static uint32_t choose_strides(Operand *o, int alt) {
  uint32_t W = width_of(o->mode), groups = (o->extent + 7) / 8;
  if (!W) { /* two core matrices along k per x group, or all x groups of one k half first */
    o->lbo = alt ? groups * 128 : 128;
    o->sbo = alt ? 128 : 256;
    return groups * 256;
  }
  if (!o->trans) { /* atoms of 8 rows one after the other; LBO unused */
    o->lbo = 16;
    o->sbo = 8 * W;
    return groups * 8 * W;
  }
  uint32_t blocks = (o->extent + W / 2 - 1) / (W / 2); /* x blocks, each two k octets */
  o->sbo = 8 * W;
  o->lbo = 16 * W;
  return blocks * 16 * W;
}

static uint64_t descriptor(uint32_t start, const Operand *o) {
  return (uint64_t)((start >> 4) & 0x3fff) | (uint64_t)((o->lbo >> 4) & 0x3fff) << 16 |
         (uint64_t)((o->sbo >> 4) & 0x3fff) << 32 | (uint64_t)o->mode << 62;
}

static float value(const Problem *P, uint16_t h) {
  return P->bf16 ? kiln_emu_bf16_to_f32(h) : kiln_emu_f16_to_f32(h);
}

/* A shared store as lowered code makes it: bracketed by the checkers' calls, so that initcheck
 * and racecheck see the bytes the MMA reads as written before the barrier. */
static void store_shared(void *dst, const void *src, uint32_t bytes) {
  kiln_emu_shared_access(dst, bytes, bytes, KILN_EMU_ACCESS_STORE);
  memcpy(dst, src, bytes);
  kiln_emu_shared_access(dst, bytes, bytes, KILN_EMU_ACCESS_STORED);
}

/* Each thread copies its share of the image in, the block meets, then each thread runs the MMA
 * on its fragment of C (register 4j + i: row 16w + g + 8 (i / 2), column 8j + 2q + (i % 2)) with
 * its warpgroup's descriptors, whose start is the low 18 bits of a shared pointer. */
static void wgmma_kernel(void **args) {
  Problem *P = *(Problem **)args[0];
  unsigned char *smem = kiln_emu_shared_base();
  uint32_t tid = kiln_emu_tid_x(), nt = P->threads;
  for (uint32_t i = tid; i < P->shared_bytes / 4; i += nt)
    store_shared(smem + 4 * i, P->image + 4 * i, 4);
  kiln_emu_barrier0();
  uint32_t grp = tid / 128, tw = tid % 128, w = tw / 32, l = tw % 32, g = l / 4, q = l % 4;
  float acc[MAX_N / 2];
  for (uint32_t r = 0; r < P->n / 2; r++)
    acc[r] = P->c[grp][16 * w + g + 8 * (r % 4 / 2)][8 * (r / 4) + 2 * q + r % 2];
  const Operand *a = &P->a[grp], *b = &P->b[grp];
  uint64_t da = descriptor((uint32_t)((uintptr_t)(smem + a->base) & 0x3ffff), a);
  uint64_t db = descriptor((uint32_t)((uintptr_t)(smem + b->base) & 0x3ffff), b);
  kiln_emu_wgmma(acc, P->n, P->bf16, a->trans, b->trans, da, db);
  for (uint32_t r = 0; r < P->n / 2; r++)
    P->d[grp][16 * w + g + 8 * (r % 4 / 2)][8 * (r / 4) + 2 * q + r % 2] = acc[r];
}

static float rnd(uint32_t *s) { return (float)(emu_rand(s) % 20001) / 10000.0f - 1.0f; }

static uint16_t narrow(const Problem *P, float v) {
  return P->bf16 ? kiln_emu_f32_to_bf16(v) : kiln_emu_f32_to_f16(v);
}

/* Random A, B and C for every warpgroup; operands placed one after the other, 1024-aligned. */
static void fill(Problem *P, uint32_t seed, int alt) {
  uint32_t at = 0;
  for (uint32_t grp = 0; grp < P->groups; grp++) {
    for (uint32_t m = 0; m < 64; m++)
      for (uint32_t k = 0; k < 16; k++) P->av[grp][m][k] = narrow(P, rnd(&seed));
    for (uint32_t k = 0; k < 16; k++)
      for (uint32_t j = 0; j < P->n; j++) P->bv[grp][k][j] = narrow(P, rnd(&seed));
    for (uint32_t m = 0; m < 64; m++)
      for (uint32_t j = 0; j < P->n; j++) P->c[grp][m][j] = rnd(&seed);
    Operand *ops[2] = {&P->a[grp], &P->b[grp]};
    for (int o = 0; o < 2; o++) {
      ops[o]->extent = o ? P->n : 64;
      ops[o]->base = at;
      at += (choose_strides(ops[o], alt) + 1023) / 1024 * 1024;
    }
    for (uint32_t m = 0; m < 64; m++)
      for (uint32_t k = 0; k < 16; k++)
        memcpy(P->image + place_addr(&P->a[grp], m, k), &P->av[grp][m][k], 2);
    for (uint32_t k = 0; k < 16; k++)
      for (uint32_t j = 0; j < P->n; j++)
        memcpy(P->image + place_addr(&P->b[grp], j, k), &P->bv[grp][k][j], 2);
  }
  P->shared_bytes = at;
}

/* Elements of D off the double-precision A B + C by more than 1e-5 of their magnitude
 * |C| + sum |A B|: the products are exact in f32 and the 16 additions onto C each round by at
 * most 2^-24 of a partial sum, so f32 stays within 17 * 2^-24 = 1.0e-6 of that magnitude (a
 * tenth of the tolerance), while a wrong element or a lost product moves D by a sizable part
 * of it (the values are in [-1, 1]). */
static int mismatches(const Problem *P) {
  int bad = 0;
  for (uint32_t grp = 0; grp < P->groups; grp++)
    for (uint32_t m = 0; m < 64; m++)
      for (uint32_t j = 0; j < P->n; j++) {
        double ref = P->c[grp][m][j], mag = fabs(ref);
        for (uint32_t k = 0; k < 16; k++) {
          double p = (double)value(P, P->av[grp][m][k]) * value(P, P->bv[grp][k][j]);
          ref += p;
          mag += fabs(p);
        }
        bad += !(fabs(P->d[grp][m][j] - ref) <= 1e-5 * mag);
      }
  return bad;
}

static Problem *problem(uint32_t n, uint32_t bf16, uint32_t groups) {
  Problem *P = calloc(1, sizeof *P);
  P->n = n;
  P->bf16 = bf16;
  P->groups = groups;
  P->threads = 128 * groups;
  return P;
}

/* A problem of n columns on `groups` warpgroups with A and B placed as a and b say (every
 * group alike), filled from seed. */
static Problem *placed(uint32_t n, uint32_t bf16, uint32_t groups, Operand a, Operand b, int alt,
                       uint32_t seed) {
  Problem *P = problem(n, bf16, groups);
  for (uint32_t grp = 0; grp < groups; grp++) P->a[grp] = a, P->b[grp] = b;
  fill(P, seed, alt);
  return P;
}

/* The mismatching elements of a launch with status st (-1 when it failed); frees P. */
static int mismatches_freed(Problem *P, KilnEmuStatus st) {
  int bad = st == KILN_EMU_OK ? mismatches(P) : -1;
  free(P);
  return bad;
}

static KilnEmuStatus launch(Problem *P, uint32_t checks) {
  void *args[] = {&P};
  KilnEmuLaunch cfg = emu_cfg(1, 1, 1, P->threads, P->shared_bytes, 1);
  cfg.checks = checks;
  return kiln_emu_launch(wgmma_kernel, &cfg, args);
}

/* Places and runs one case; returns the mismatching elements (-1 when the launch failed).
 * `read_mode` >= 0 reads A and B with that mode instead of the one they were placed with. */
static int run_case(uint32_t n, uint32_t bf16, uint32_t groups, const uint32_t trans[2],
                    const uint32_t mode[2], int alt, uint32_t seed, int read_mode) {
  Problem *P = placed(n, bf16, groups, (Operand){.trans = trans[0], .mode = mode[0]},
                      (Operand){.trans = trans[1], .mode = mode[1]}, alt, seed);
  for (uint32_t grp = 0; read_mode >= 0 && grp < groups; grp++)
    P->a[grp].mode = P->b[grp].mode = (uint32_t)read_mode;
  if (read_mode >= 0) P->shared_bytes = ARENA; /* another layout may reach further */
  KilnEmuStatus st = launch(P, KILN_EMU_CHECK_ALL);
  CHECK(st == KILN_EMU_OK, "n %u bf16 %u trans %u%u modes %u%u: %s", n, bf16, trans[0], trans[1],
        mode[0], mode[1], kiln_emu_last_error());
  return mismatches_freed(P, st);
}

/* Every n, type, pair of transposes and pair of modes on one warpgroup; the interleaved layouts
 * in both orders of their blocks. */
static void all_layouts(void) {
  static const uint32_t ns[4] = {8, 64, 128, 256};
  uint32_t seed = 1, cases = 0;
  for (int ni = 0; ni < 4; ni++)
    for (uint32_t bf16 = 0; bf16 < 2; bf16++)
      for (uint32_t t = 0; t < 4; t++)
        for (uint32_t m = 0; m < 16; m++)
          for (int alt = 0; alt < 2; alt++) {
            uint32_t trans[2] = {t & 1, t >> 1}, mode[2] = {m & 3, m >> 2};
            if (alt && mode[0] && mode[1]) continue; /* alt only changes interleaved layouts */
            int bad = run_case(ns[ni], bf16, 1, trans, mode, alt, seed++, -1);
            CHECK(bad == 0, "n %u %s trans_a %u trans_b %u mode_a %u mode_b %u alt %d: %d wrong",
                  ns[ni], bf16 ? "bf16" : "f16", trans[0], trans[1], mode[0], mode[1], alt, bad);
            cases++;
          }
  printf("wgmma: %u layouts on one warpgroup match the matmul\n", cases);
}

/* Two warpgroups, each its own A, B, C and descriptors (its 64 rows). */
static void two_warpgroups(void) {
  uint32_t seed = 1000;
  for (uint32_t t = 0; t < 4; t++)
    for (uint32_t m = 0; m < 4; m++) {
      uint32_t trans[2] = {t & 1, t >> 1}, mode[2] = {m, 3 - m};
      int bad = run_case(t % 2 ? 64 : 128, t / 2, 2, trans, mode, 0, seed++, -1);
      CHECK(bad == 0, "two warpgroups trans %u%u modes %u%u: %d wrong", trans[0], trans[1], mode[0],
            mode[1], bad);
    }
}

/* The teeth: a copy swizzled one way read with another mode gives wrong numbers. */
static void wrong_swizzle(void) {
  uint32_t trans[2] = {0, 1}, mode[2] = {MODE_128, MODE_128};
  for (int read = 0; read < 4; read++) {
    if (read == MODE_128) continue;
    int bad = run_case(64, 0, 1, trans, mode, 0, 77, read);
    CHECK(bad > 64 * 64 / 2, "placed 128-byte swizzled, read as mode %d: only %d wrong", read, bad);
  }
  uint32_t inter[2] = {MODE_INTERLEAVE, MODE_INTERLEAVE};
  CHECK(run_case(64, 1, 1, trans, inter, 1, 78, MODE_32) > 64 * 64 / 2);
}

/* ---- the lowering's staging: K-major, 64-byte rows of BK = 32 f16, chunk c of row r at
 * c ^ ((r / 2) % 4); the k16 step kk starts 32 kk bytes into the rows. ---------------------- */

typedef struct Staged {
  uint32_t n, kk;
  uint16_t a[64][32], b[64][32]; /* A(m, k) and B^T(n, k), k < 32 */
  float d[64][64];
} Staged;

static uint32_t row_sw64(uint32_t r, uint32_t c) {
  return r * 64 + ((c / 8) ^ ((r / 2) % 4)) * 16 + (c % 8) * 2;
}

static void staged_kernel(void **args) {
  Staged *S = *(Staged **)args[0];
  unsigned char *smem = kiln_emu_shared_base(); /* A at 0, B at 4096: both 512-byte aligned */
  uint32_t tid = kiln_emu_tid_x();
  for (uint32_t i = tid; i < 64 * 32; i += 128) {
    store_shared(smem + row_sw64(i / 32, i % 32), &S->a[i / 32][i % 32], 2);
    store_shared(smem + 4096 + row_sw64(i / 32, i % 32), &S->b[i / 32][i % 32], 2);
  }
  kiln_emu_barrier0();
  uint32_t w = tid / 32, l = tid % 32, g = l / 4, q = l % 4;
  /* mode 2 (64-byte swizzle), SBO 512 (8 rows of 64 bytes), LBO 1 (unused) */
  uint64_t fields = (uint64_t)1 << 16 | (uint64_t)(512 >> 4) << 32 | (uint64_t)MODE_64 << 62;
  uint64_t da = fields | (((uintptr_t)smem + 32 * S->kk) & 0x3ffff) >> 4;
  uint64_t db = fields | (((uintptr_t)smem + 4096 + 32 * S->kk) & 0x3ffff) >> 4;
  float acc[32] = {0};
  kiln_emu_wgmma(acc, S->n, 0, 0, 0, da, db);
  for (uint32_t r = 0; r < S->n / 2; r++)
    S->d[16 * w + g + 8 * (r % 4 / 2)][8 * (r / 4) + 2 * q + r % 2] = acc[r];
}

static void lowering_rows(void) {
  Staged *S = calloc(1, sizeof *S);
  uint32_t seed = 4242;
  for (uint32_t r = 0; r < 64; r++)
    for (uint32_t c = 0; c < 32; c++) {
      S->a[r][c] = kiln_emu_f32_to_f16(rnd(&seed));
      S->b[r][c] = kiln_emu_f32_to_f16(rnd(&seed));
    }
  S->n = 64;
  for (S->kk = 0; S->kk < 2; S->kk++) {
    void *args[] = {&S};
    KilnEmuLaunch cfg = emu_cfg(1, 1, 1, 128, 8192, 1);
    cfg.checks = KILN_EMU_CHECK_ALL;
    CHECK_LAUNCH(KILN_EMU_OK, staged_kernel, &cfg, args);
    int bad = 0;
    for (uint32_t m = 0; m < 64; m++)
      for (uint32_t j = 0; j < 64; j++) {
        double ref = 0, mag = 0;
        for (uint32_t k = 16 * S->kk; k < 16 * S->kk + 16; k++) {
          double p = (double)kiln_emu_f16_to_f32(S->a[m][k]) * kiln_emu_f16_to_f32(S->b[j][k]);
          ref += p;
          mag += fabs(p);
        }
        bad += !(fabs(S->d[m][j] - ref) <= 1e-5 * mag);
      }
    CHECK(bad == 0, "SW64 rows of the lowering, k step %u: %d wrong", S->kk, bad);
  }
  free(S);
}

/* ---- tf32 (m64nNk8): 4-byte words, K-major only ------------------------------------------
 * A (64 x BK) and B^T (n x BK) in rows of BK f32, W = 4 BK bytes: the 128-, 64- and 32-byte
 * swizzles for BK = 32, 16, 8 (the lowering's staging: lower_dot.c's b16-view swizzle on those
 * rows), the k8 step kk starting 32 kk bytes into the rows; and the interleaved layout (BK = 8:
 * two core matrices of 16 bytes along k, LBO = 128 apart, x groups SBO = 256 apart).  The values
 * are full f32: the MMA must read them truncated to tf32 (13 low mantissa bits ignored), so D
 * matches the matmul of the truncated values and not that of the f32 ones. */

typedef struct Tf32 {
  uint32_t n, bk, kk, mode, b_at;
  float a[64][32], b[MAX_N][32]; /* A(m, k) and B^T(n, k) */
  float c[64][MAX_N], d[64][MAX_N];
} Tf32;

/* Byte address of word (x, k) of an operand based at `base` (Tf32's layouts). */
static uint32_t tf32_addr(const Tf32 *T, uint32_t base, uint32_t x, uint32_t k) {
  uint32_t W = width_of(T->mode), kb = 4 * k;
  if (!W) return base + (x / 8) * 256 + (kb / 16) * 128 + (x % 8) * 16 + kb % 16;
  return swizzle(base + (x / 8) * 8 * W + (x % 8) * W + kb, W);
}

static void tf32_kernel(void **args) {
  Tf32 *T = *(Tf32 **)args[0];
  unsigned char *smem = kiln_emu_shared_base();
  uint32_t tid = kiln_emu_tid_x(), w = tid / 32, l = tid % 32, g = l / 4, q = l % 4;
  for (uint32_t i = tid; i < 64 * T->bk; i += 128)
    store_shared(smem + tf32_addr(T, 0, i / T->bk, i % T->bk), &T->a[i / T->bk][i % T->bk], 4);
  for (uint32_t i = tid; i < T->n * T->bk; i += 128)
    store_shared(smem + tf32_addr(T, T->b_at, i / T->bk, i % T->bk), &T->b[i / T->bk][i % T->bk],
                 4);
  kiln_emu_barrier0();
  uint32_t W = width_of(T->mode);
  uint64_t fields = (uint64_t)((W ? 16 : 128) >> 4) << 16 |
                    (uint64_t)((W ? 8 * W : 256) >> 4) << 32 | (uint64_t)T->mode << 62;
  uint64_t da = fields | (((uintptr_t)smem + 32 * T->kk) & 0x3ffff) >> 4;
  uint64_t db = fields | (((uintptr_t)smem + T->b_at + 32 * T->kk) & 0x3ffff) >> 4;
  float acc[MAX_N / 2];
  for (uint32_t r = 0; r < T->n / 2; r++)
    acc[r] = T->c[16 * w + g + 8 * (r % 4 / 2)][8 * (r / 4) + 2 * q + r % 2];
  kiln_emu_wgmma(acc, T->n, KILN_EMU_WGMMA_TF32, 0, 0, da, db);
  for (uint32_t r = 0; r < T->n / 2; r++)
    T->d[16 * w + g + 8 * (r % 4 / 2)][8 * (r / 4) + 2 * q + r % 2] = acc[r];
}

/* x as the tensor core reads it: the 13 low mantissa bits dropped. */
static double tf32_of(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  u &= 0xffffe000u;
  memcpy(&x, &u, 4);
  return x;
}

/* Elements of D off C + A B over the k8 step (with A and B truncated to tf32 when `truncated`)
 * by more than 1e-5 of |C| + sum |A B|: products of tf32 are exact in f32 and the 8 additions
 * round by at most 9 * 2^-24 = 5e-7 of that, while reading the words as f32 (or rounding them)
 * moves a product by up to 2^-10 of it. */
static int tf32_mismatches(const Tf32 *T, bool truncated) {
  int bad = 0;
  for (uint32_t m = 0; m < 64; m++)
    for (uint32_t j = 0; j < T->n; j++) {
      double ref = T->c[m][j], mag = fabs(ref);
      for (uint32_t k = 8 * T->kk; k < 8 * T->kk + 8; k++) {
        double p =
            truncated ? tf32_of(T->a[m][k]) * tf32_of(T->b[j][k]) : (double)T->a[m][k] * T->b[j][k];
        ref += p;
        mag += fabs(p);
      }
      bad += !(fabs(T->d[m][j] - ref) <= 1e-5 * mag);
    }
  return bad;
}

static void tf32_layouts(void) {
  static const uint32_t modes[4] = {MODE_128, MODE_64, MODE_32, MODE_INTERLEAVE};
  static const uint32_t ns[3] = {8, 64, 256};
  Tf32 *T = calloc(1, sizeof *T);
  uint32_t seed = 5151, cases = 0;
  for (int mi = 0; mi < 4; mi++)
    for (int ni = 0; ni < 3; ni++) {
      T->mode = modes[mi], T->n = ns[ni];
      T->bk = T->mode == MODE_INTERLEAVE ? 8 : width_of(T->mode) / 4;
      T->b_at = (64 * 4 * T->bk + 1023) / 1024 * 1024;
      for (uint32_t x = 0; x < 64; x++)
        for (uint32_t k = 0; k < T->bk; k++) T->a[x][k] = rnd(&seed);
      for (uint32_t x = 0; x < T->n; x++)
        for (uint32_t k = 0; k < T->bk; k++) T->b[x][k] = rnd(&seed);
      for (uint32_t m = 0; m < 64; m++)
        for (uint32_t j = 0; j < T->n; j++) T->c[m][j] = rnd(&seed);
      for (T->kk = 0; T->kk < T->bk / 8; T->kk++) {
        void *args[] = {&T};
        KilnEmuLaunch cfg = emu_cfg(1, 1, 1, 128, T->b_at + T->n * 4 * T->bk, 1);
        cfg.checks = KILN_EMU_CHECK_ALL;
        CHECK_LAUNCH(KILN_EMU_OK, tf32_kernel, &cfg, args);
        int bad = tf32_mismatches(T, true), f32 = tf32_mismatches(T, false);
        CHECK(bad == 0, "tf32 mode %u n %u k step %u: %d wrong", T->mode, T->n, T->kk, bad);
        CHECK(f32 > (int)(64 * T->n / 2), "tf32 mode %u n %u k step %u: only %d off the f32 matmul",
              T->mode, T->n, T->kk, f32);
        cases++;
      }
    }
  free(T);
  printf("wgmma: %u tf32 layouts and k steps match the matmul of the truncated values\n", cases);
}

/* ---- the RS form: A from registers --------------------------------------------------------
 * Register i of lane l (g = l / 4, q = l % 4) of warp w holds A(16w + g + 8 (i % 2), 2q + 8 (i / 2))
 * in its low half and the next column in its high half (mma.sync's m16n8k16 A fragment); B is
 * placed in shared memory as for the SS form. */

static uint32_t rs_register(const uint16_t av[64][16], uint32_t w, uint32_t lane, uint32_t i) {
  uint32_t row = 16 * w + lane / 4 + 8 * (i % 2), col = 2 * (lane % 4) + 8 * (i / 2);
  return av[row][col] | (uint32_t)av[row][col + 1] << 16;
}

/* As wgmma_kernel, with A in registers; when *swap, lanes 5 and 6 of every warp trade theirs. */
static void rs_kernel(void **args) {
  Problem *P = *(Problem **)args[0];
  int swap = *(int *)args[1];
  unsigned char *smem = kiln_emu_shared_base();
  uint32_t tid = kiln_emu_tid_x(), nt = P->threads;
  for (uint32_t i = tid; i < P->shared_bytes / 4; i += nt)
    store_shared(smem + 4 * i, P->image + 4 * i, 4);
  kiln_emu_barrier0();
  uint32_t grp = tid / 128, tw = tid % 128, w = tw / 32, l = tw % 32, g = l / 4, q = l % 4;
  uint32_t from = swap && (l == 5 || l == 6) ? 11 - l : l, r[4];
  for (uint32_t i = 0; i < 4; i++) r[i] = rs_register(P->av[grp], w, from, i);
  float acc[MAX_N / 2];
  for (uint32_t k = 0; k < P->n / 2; k++)
    acc[k] = P->c[grp][16 * w + g + 8 * (k % 4 / 2)][8 * (k / 4) + 2 * q + k % 2];
  const Operand *b = &P->b[grp];
  uint64_t db = descriptor((uint32_t)((uintptr_t)(smem + b->base) & 0x3ffff), b);
  kiln_emu_wgmma_rs(acc, P->n, P->bf16, b->trans, r[0], r[1], r[2], r[3], db);
  for (uint32_t k = 0; k < P->n / 2; k++)
    P->d[grp][16 * w + g + 8 * (k % 4 / 2)][8 * (k / 4) + 2 * q + k % 2] = acc[k];
}

/* One RS case (B with trans_b and mode, A's shared copy unused); the mismatching elements, or
 * -1 when the launch failed. */
static int run_rs_case(uint32_t n, uint32_t bf16, uint32_t groups, uint32_t trans_b, uint32_t mode,
                       int alt, uint32_t seed, int swap) {
  Problem *P = placed(n, bf16, groups, (Operand){.trans = 0, .mode = MODE_INTERLEAVE},
                      (Operand){.trans = trans_b, .mode = mode}, alt, seed);
  void *args[] = {&P, &swap};
  KilnEmuLaunch cfg = emu_cfg(1, 1, 1, P->threads, P->shared_bytes, 1);
  cfg.checks = KILN_EMU_CHECK_ALL;
  KilnEmuStatus st = kiln_emu_launch(rs_kernel, &cfg, args);
  CHECK(st == KILN_EMU_OK, "RS n %u bf16 %u trans_b %u mode %u: %s", n, bf16, trans_b, mode,
        kiln_emu_last_error());
  return mismatches_freed(P, st);
}

/* Every n, type, transpose and mode of B on one and on two warpgroups; then the teeth: lanes 5
 * and 6 trading their A registers put rows g = 1 and 9 of every warp wrong. */
static void rs_layouts(void) {
  static const uint32_t ns[4] = {8, 64, 128, 256};
  uint32_t seed = 5000, cases = 0;
  for (int ni = 0; ni < 4; ni++)
    for (uint32_t bf16 = 0; bf16 < 2; bf16++)
      for (uint32_t tb = 0; tb < 2; tb++)
        for (uint32_t mode = 0; mode < 4; mode++)
          for (int alt = 0; alt < 2; alt++)
            for (uint32_t groups = 1; groups <= 2; groups++) {
              if (alt && mode) continue; /* alt only changes the interleaved layout */
              int bad = run_rs_case(ns[ni], bf16, groups, tb, mode, alt, seed++, 0);
              CHECK(bad == 0, "RS n %u %s trans_b %u mode %u alt %d groups %u: %d wrong", ns[ni],
                    bf16 ? "bf16" : "f16", tb, mode, alt, groups, bad);
              cases++;
            }
  printf("wgmma RS: %u layouts of B on one and two warpgroups match the matmul\n", cases);
  for (uint32_t bf16 = 0; bf16 < 2; bf16++) {
    int bad = run_rs_case(64, bf16, 1, 1, MODE_128, 0, 99 + bf16, 1);
    CHECK(bad > 8 * 64 / 2, "A registers of lanes 5 and 6 swapped (%s): only %d wrong",
          bf16 ? "bf16" : "f16", bad);
  }
}

/* ---- errors -------------------------------------------------------------------------------- */

typedef struct Bad {
  uint32_t n;
  uint64_t da, db;
} Bad;

static void bad_kernel(void **args) {
  Bad *B = *(Bad **)args[0];
  float acc[128] = {0};
  kiln_emu_wgmma(acc, B->n, 0, 0, 0, B->da, B->db);
}

/* The RS form with B's descriptor db (da unused) and A registers of ones. */
static void bad_rs_kernel(void **args) {
  Bad *B = *(Bad **)args[0];
  float acc[128] = {0};
  kiln_emu_wgmma_rs(acc, B->n, 0, 0, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u, B->db);
}

/* tf32 with A transposed (tf32 is K-major only), and tf32 in the RS form (none). */
static void bad_tf32_kernel(void **args) {
  Bad *B = *(Bad **)args[0];
  float acc[128] = {0};
  kiln_emu_wgmma(acc, B->n, KILN_EMU_WGMMA_TF32, 1, 0, B->da, B->db);
}

static void bad_tf32_rs_kernel(void **args) {
  Bad *B = *(Bad **)args[0];
  float acc[128] = {0};
  kiln_emu_wgmma_rs(acc, B->n, KILN_EMU_WGMMA_TF32, 0, 0, 0, 0, 0, B->db);
}

/* As bad_rs_kernel, but lane 0 of every warp asks for n + 8: its warp never meets. */
static void split_rs_kernel(void **args) {
  Bad *B = *(Bad **)args[0];
  float acc[128] = {0};
  uint32_t n = B->n + (kiln_emu_tid_x() % 32 == 0 ? 8 : 0);
  kiln_emu_wgmma_rs(acc, n, 0, 0, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u, B->db);
}

static void expect_error_in(KilnEmuKernelFn kernel, uint32_t threads, uint32_t shared,
                            uint32_t checks, Bad B, KilnEmuStatus want, const char *needle) {
  Bad *p = &B;
  void *args[] = {&p};
  KilnEmuLaunch cfg = emu_cfg(1, 1, 1, threads, shared, 1);
  cfg.checks = checks;
  CHECK_LAUNCH(want, kernel, &cfg, args);
  CHECK(strstr(kiln_emu_last_error(), needle) != NULL, "message '%s' lacks '%s'",
        kiln_emu_last_error(), needle);
}

static void expect_error(uint32_t threads, uint32_t shared, uint32_t checks, Bad B,
                         KilnEmuStatus want, const char *needle) {
  expect_error_in(bad_kernel, threads, shared, checks, B, want, needle);
}

static void errors(void) {
  /* K-major interleaved, SBO 256: rows up to 63 reach 7 * 256 + 128 + ... past a 1024 arena */
  uint64_t ok = (uint64_t)(128 >> 4) << 16 | (uint64_t)(256 >> 4) << 32;
  expect_error(128, 1024, 0, (Bad){8, ok, ok}, KILN_EMU_ERROR_MEMORY, "outside the 1024-byte");
  expect_error(128, 4096, 0, (Bad){8, ok | (uint64_t)3 << 49, ok}, KILN_EMU_ERROR_INVALID_OP,
               "base_offset 3");
  expect_error(128, 4096, 0, (Bad){12, ok, ok}, KILN_EMU_ERROR_INVALID_OP, "n = 12");
  expect_error(64, 4096, 0, (Bad){8, ok, ok}, KILN_EMU_ERROR_INVALID_OP, "warpgroups");
  /* nothing written: initcheck names the operand */
  expect_error(128, 4096, KILN_EMU_CHECK_INIT, (Bad){8, ok, ok}, KILN_EMU_ERROR_UNINIT,
               "wgmma A element");
  /* the RS form: B's descriptor, n and the block checked as in the SS form */
  expect_error_in(bad_rs_kernel, 128, 1024, 0, (Bad){64, 0, ok}, KILN_EMU_ERROR_MEMORY,
                  "wgmma: B element"); /* columns 32.. start 4 SBO = 1024 bytes in */
  expect_error_in(bad_rs_kernel, 128, 4096, 0, (Bad){8, 0, ok | (uint64_t)1 << 50},
                  KILN_EMU_ERROR_INVALID_OP, "descriptor of B");
  expect_error_in(bad_rs_kernel, 128, 4096, 0, (Bad){264, 0, ok}, KILN_EMU_ERROR_INVALID_OP,
                  "n = 264");
  expect_error_in(bad_rs_kernel, 96, 4096, 0, (Bad){8, 0, ok}, KILN_EMU_ERROR_INVALID_OP,
                  "warpgroups");
  expect_error_in(bad_rs_kernel, 128, 4096, KILN_EMU_CHECK_INIT, (Bad){8, 0, ok},
                  KILN_EMU_ERROR_UNINIT, "wgmma B element");
  expect_error_in(bad_tf32_kernel, 128, 4096, 0, (Bad){8, ok, ok}, KILN_EMU_ERROR_INVALID_OP,
                  "K-major only");
  expect_error_in(bad_tf32_rs_kernel, 128, 4096, 0, (Bad){8, 0, ok}, KILN_EMU_ERROR_INVALID_OP,
                  "no RS form for tf32");
  expect_error_in(split_rs_kernel, 128, 4096, 0, (Bad){8, 0, ok}, KILN_EMU_ERROR_DEADLOCK,
                  "wgmma.mma_async.sync.aligned (A from registers)");
}

int main(void) {
  all_layouts();
  two_warpgroups();
  wrong_swizzle();
  lowering_rows();
  tf32_layouts();
  rs_layouts();
  errors();
  return kiln_check_result("emu.wgmma");
}
