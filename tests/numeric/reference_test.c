/* reference_test.c — checks the references themselves, before any kernel is compared with them:
 * binary16 conversions exhaustively and at every rounding tie, Philox4x32-10 against the
 * published Random123 known-answer vectors, and each kernel reference on hand-computed cases. */
#include "../common/check.h"
#include "reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---- binary16 ---------------------------------------------------------------------------- */

static void test_f16_known_values(void) {
  static const struct {
    float f;
    uint16_t h;
  } cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.5f, 0x3800},
      {65504.0f, 0x7bff}, /* largest finite */
      {65519.0f, 0x7bff},
      {65520.0f, 0x7c00}, /* the tie above 65504 goes to even = inf */
      {1e6f, 0x7c00},
      {-1e6f, 0xfc00},
      {0x1p-14f, 0x0400}, /* smallest normal */
      {0x1p-24f, 0x0001}, /* smallest subnormal */
      {0x1p-25f, 0x0000}, /* tie between 0 and 2^-24: even is 0 */
      {0x1.8p-25f, 0x0001},
      {0x1.8p-24f, 0x0002}, /* 1.5 units: tie, goes to even 2 */
      {0x1.4p-24f, 0x0001},
      {0.1f, 0x2e66},
      {3.14159265f, 0x4248},
      {1.0f + 0x1p-11f, 0x3c00}, /* tie at 1: stays on even 1.0 */
      {1.0f + 0x1.8p-11f, 0x3c01},
      {1.0f + 3 * 0x1p-11f, 0x3c02}, /* tie between 0x3c01 and 0x3c02: even is 0x3c02 */
      {INFINITY, 0x7c00},
      {-INFINITY, 0xfc00},
      {1e-30f, 0x0000},
      {-1e-45f, 0x8000}, /* an f32 subnormal */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint16_t h = kiln_ref_f32_to_f16(cases[i].f);
    CHECK(h == cases[i].h, "f32_to_f16(%a) = 0x%04x, expected 0x%04x", (double)cases[i].f, h,
          cases[i].h);
  }
  CHECK(isnan(kiln_ref_f16_to_f32(kiln_ref_f32_to_f16(NAN))), "NaN must stay NaN");
  CHECK((kiln_ref_f32_to_f16(float_of(0x7f800001u)) & 0x7e00u) == 0x7e00u,
        "a signalling NaN must become a quiet f16 NaN, not inf");
}

/* Every f16 value survives f16 -> f32 -> f16, and f16 -> f32 agrees with the formula
 * (-1)^s * 2^(e-15) * (1 + m/1024) (subnormals: 2^-14 * m/1024). */
static void test_f16_exhaustive_roundtrip(void) {
  int bad = 0;
  for (uint32_t h = 0; h <= 0xffffu; h++) {
    float f = kiln_ref_f16_to_f32((uint16_t)h);
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    double sign = (h & 0x8000u) ? -1.0 : 1.0;
    if (e == 0x1fu) {
      if (m == 0u ? !(isinf(f) && (signbit(f) != 0) == (sign < 0)) : !isnan(f)) bad++;
      continue;
    }
    double expect = e == 0u ? sign * ldexp(m, -24) : sign * ldexp(1024 + m, (int)e - 25);
    if ((double)f != expect || kiln_ref_f32_to_f16(f) != h) bad++;
  }
  CHECK(bad == 0, "%d f16 values did not round-trip", bad);
}

/* At the midpoint of every pair of neighbouring positive f16 values the conversion must pick
 * the even one; one f32 ulp either side must pick the nearer one. Midpoints need 12 significant
 * bits, so they are exact in f32. Negative values mirror positive ones. */
static void test_f16_ties(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 0x7c00u; h++) {
    double lo = kiln_ref_f16_to_f32((uint16_t)h);
    double hi = h + 1 == 0x7c00u ? 65536.0 : kiln_ref_f16_to_f32((uint16_t)(h + 1));
    float mid = (float)((lo + hi) / 2);
    CHECK((double)mid == (lo + hi) / 2, "midpoint of 0x%04x not exact", h);
    uint16_t even = (h & 1u) ? (uint16_t)(h + 1) : (uint16_t)h;
    uint16_t below = kiln_ref_f32_to_f16(nextafterf(mid, 0.0f));
    uint16_t above = kiln_ref_f32_to_f16(nextafterf(mid, INFINITY));
    if (kiln_ref_f32_to_f16(mid) != even || below != h || above != h + 1) bad++;
    if (kiln_ref_f32_to_f16(-mid) != (uint16_t)(0x8000u | even)) bad++;
  }
  CHECK(bad == 0, "%d rounding ties or near-ties went the wrong way", bad);
}

#ifdef __FLT16_MAX__
/* Where the compiler has _Float16, its conversion (libgcc / compiler-rt) is an independent
 * implementation: compare with it on random f32 bit patterns of every exponent. */
static void test_f16_against_compiler(void) {
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, 16);
  int bad = 0;
  for (int i = 0; i < 2000000; i++) {
    float f = float_of((uint32_t)kiln_ref_rng_next(&rng));
    if (isnan(f)) continue;
    _Float16 c = (_Float16)f;
    uint16_t ch;
    memcpy(&ch, &c, sizeof ch);
    if (kiln_ref_f32_to_f16(f) != ch) bad++;
  }
  CHECK(bad == 0, "%d conversions differ from the compiler's _Float16", bad);
}
#endif

/* ---- Philox ------------------------------------------------------------------------------ */

static void test_philox_known_answers(void) {
  /* Random123 kat_vectors, philox4x32 with 10 rounds. */
  static const struct {
    uint32_t ctr[4], key[2], out[4];
  } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
    uint32_t out[4];
    kiln_ref_philox4x32_10(kat[i].ctr, kat[i].key, out);
    CHECK(memcmp(out, kat[i].out, sizeof out) == 0,
          "philox4x32-10 vector %zu: got %08x %08x %08x %08x", i, out[0], out[1], out[2], out[3]);
  }
}

static void test_rand_mapping(void) {
  /* rand(0, 0) comes from the first word of the all-zero vector: 0x6627e8d5 >> 8 = 0x6627e8. */
  CHECK(kiln_ref_rand(0, 0) == (float)0x6627e8 * 0x1p-24f, "rand(0,0) = %a",
        (double)kiln_ref_rand(0, 0));
  /* Offsets 0..3 are the four words of that block, in order. */
  static const uint32_t zero_block[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
  for (int32_t w = 0; w < 4; w++)
    CHECK(kiln_ref_rand_bits(0, w) == zero_block[w], "randint(0, %d) = %08x", w,
          kiln_ref_rand_bits(0, w));
  /* Seed -1 is key word 0xffffffff; offset 7 is word 3 of counter 1. */
  uint32_t ctr[4] = {1, 0, 0, 0}, key[2] = {0xffffffffu, 0}, out[4];
  kiln_ref_philox4x32_10(ctr, key, out);
  CHECK(kiln_ref_rand(-1, 7) == (float)(out[3] >> 8) * 0x1p-24f, "seed bits not used as key");
  /* A negative offset is its bit pattern shifted logically: -1 is word 3 and -4 word 0 of counter
   * 0x3FFFFFFF (no offset of 0..2^31-1 reaches that counter). */
  uint32_t top[4], top_ctr[4] = {0x3FFFFFFFu, 0, 0, 0}, key5[2] = {5, 0};
  kiln_ref_philox4x32_10(top_ctr, key5, top);
  CHECK(kiln_ref_rand_bits(5, -1) == top[3] && kiln_ref_rand_bits(5, -4) == top[0],
        "negative offsets: %08x %08x", kiln_ref_rand_bits(5, -1), kiln_ref_rand_bits(5, -4));
  /* Uniform in [0, 1): over many offsets the mean is near 1/2 (stddev of the mean 0.0009). */
  double s = 0.0;
  int out_of_range = 0;
  for (int32_t i = 0; i < 100000; i++) {
    float r = kiln_ref_rand(1234, i);
    out_of_range += !(r >= 0.0f && r < 1.0f);
    s += r;
  }
  CHECK(out_of_range == 0, "%d values outside [0, 1)", out_of_range);
  CHECK(fabs(s / 100000 - 0.5) < 0.005, "mean %g", s / 100000);
}

/* The byte the attention mask compares for P[i, j], read back from the reference's keep
 * decisions: p = h / 256 has threshold h exactly, so the element is kept at h and dropped at
 * h + 1 iff its byte is h (255: kept at 255). */
static bool attn_byte_is(int32_t seed, int32_t offset, uint32_t bh, uint32_t S, uint32_t i,
                         uint32_t j, uint32_t h) {
  bool at = kiln_ref_attn_keep(seed, offset, bh, S, i, j, (float)h * 0x1p-8f);
  bool above = h < 255 && kiln_ref_attn_keep(seed, offset, bh, S, i, j, (float)(h + 1) * 0x1p-8f);
  return at && !above;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The counter row of position x in the attention mask: 4 per 16 positions. */
static uint32_t ctr_row(uint32_t x) { return 4 * (x >> 4) + ((x >> 1) & 3u); }

/* The attention dropout mask (kernels-bert/attention.kiln): its threshold and scale, which word
 * and byte each element takes, that no two elements share one within the counter budget, and
 * the keep rate 1 - t / 256. */
static void test_attn_keep_reference(void) {
  CHECK(kiln_ref_attn_drop_threshold(0.0f) == 0 && kiln_ref_attn_drop_threshold(0.1f) == 26 &&
            kiln_ref_attn_drop_threshold(0.5f) == 128 &&
            kiln_ref_attn_drop_threshold(0x1p-9f) == 1 &&
            kiln_ref_attn_drop_threshold(0.999f) == 255,
        "thresholds %d %d %d %d %d", kiln_ref_attn_drop_threshold(0.0f),
        kiln_ref_attn_drop_threshold(0.1f), kiln_ref_attn_drop_threshold(0.5f),
        kiln_ref_attn_drop_threshold(0x1p-9f), kiln_ref_attn_drop_threshold(0.999f));
  CHECK(kiln_ref_attn_keep_scale(0.0f) == 1.0f && kiln_ref_attn_keep_scale(0.5f) == 2.0f &&
            kiln_ref_attn_keep_scale(0.1f) == 256.0f / 230.0f &&
            kiln_ref_attn_keep_scale(0.999f) == 256.0f,
        "keep scales %g %g %g %g", (double)kiln_ref_attn_keep_scale(0.0f),
        (double)kiln_ref_attn_keep_scale(0.5f), (double)kiln_ref_attn_keep_scale(0.1f),
        (double)kiln_ref_attn_keep_scale(0.999f));
  /* S = 32: 8 counter rows of queries and of keys per head. Block (bh 1, queries 18, 19, 26,
   * 27, keys 4, 5, 12, 13) is counter (1 * 8 + 5) * 8 + 2 = 106 past offset 40's counter 10:
   * query 19 takes words 2 and 3, key 5 the odd words, query 26 bytes 2 and 3, key 12 the odd
   * bytes. */
  uint32_t ctr[4] = {10 + 106, 0, 0, 0}, key[2] = {77, 0}, w[4];
  kiln_ref_philox4x32_10(ctr, key, w);
  static const struct {
    uint32_t i, j, word, byte;
  } elems[] = {{18, 4, 0, 0},  {18, 5, 1, 0},  {19, 4, 2, 0},  {19, 5, 3, 0},
               {18, 12, 0, 1}, {19, 13, 3, 1}, {26, 4, 0, 2},  {27, 5, 3, 2},
               {26, 12, 0, 3}, {26, 13, 1, 3}, {27, 12, 2, 3}, {27, 13, 3, 3}};
  for (size_t e = 0; e < sizeof elems / sizeof elems[0]; e++) {
    uint32_t h = (w[elems[e].word] >> (8 * elems[e].byte)) & 0xFFu;
    CHECK(attn_byte_is(77, 40, 1, 32, elems[e].i, elems[e].j, h),
          "P[%u, %u] is not byte %u of word %u", elems[e].i, elems[e].j, elems[e].byte,
          elems[e].word);
  }
  /* S = 77 (odd: 5 blocks of 16 positions, 20 counter rows), 3 heads: every element its own
   * (word, byte), all within the 3 * 4 * 20 * 20 words past the offset (runtime/bert's budget). */
  enum { S = 77, BH = 3 };
  static uint64_t slot[BH * S * S];
  size_t n = 0;
  for (uint32_t bh = 0; bh < BH; bh++)
    for (uint32_t i = 0; i < S; i++)
      for (uint32_t j = 0; j < S; j++) {
        uint64_t word =
            4ull * ((bh * 20u + ctr_row(i)) * 20u + ctr_row(j)) + 2 * (i & 1u) + (j & 1u);
        slot[n++] = 4 * word + 2 * ((i >> 3) & 1u) + ((j >> 3) & 1u);
      }
  qsort(slot, n, sizeof slot[0], cmp_u64);
  size_t dup = 0;
  for (size_t k = 1; k < n; k++) dup += slot[k] == slot[k - 1];
  CHECK(dup == 0 && slot[n - 1] < 4ull * BH * 4 * 20 * 20, "%zu shared bytes, last %llu", dup,
        (unsigned long long)slot[n - 1]);
  for (uint32_t i = 0; i < S; i += 5)
    for (uint32_t j = 0; j < S; j += 3) {
      uint32_t o = 4 * ((2 * 20 + ctr_row(i)) * 20 + ctr_row(j)) + 2 * (i & 1u) + (j & 1u);
      uint32_t shift = 16 * ((i >> 3) & 1u) + 8 * ((j >> 3) & 1u);
      uint32_t h = (kiln_ref_rand_bits(5, (int32_t)o) >> shift) & 0xFFu;
      CHECK(attn_byte_is(5, 0, 2, S, i, j, h), "S = 77: P[%u, %u] of head 2", i, j);
    }
  /* The keep rate over 4 heads of 512 x 512 at p = 0.1 is 1 - 26 / 256 (p rounded to 8 bits)
   * within 5 binomial standard deviations (3e-4 each over 2^20 draws). */
  size_t kept = 0, total = 0;
  for (uint32_t bh = 0; bh < 4; bh++)
    for (uint32_t i = 0; i < 512; i++)
      for (uint32_t j = 0; j < 512; j++, total++)
        kept += kiln_ref_attn_keep(9, 1024, bh, 512, i, j, 0.1f);
  double q = 1.0 - 26.0 / 256.0, rate = (double)kept / (double)total;
  CHECK(fabs(rate - q) <= 5 * sqrt(q * (1 - q) / (double)total), "keep rate %.6f, expected %.6f",
        rate, q);
}

/* ---- comparison and kernel references ---------------------------------------------------- */

static void test_max_error(void) {
  float ref[4] = {1.0f, -2.0f, 0.0f, 100.0f};
  float got[4] = {1.0f, -2.002f, 1e-4f, 100.0f};
  size_t worst;
  double e = kiln_ref_max_error(got, ref, 4, 1e-3, &worst);
  /* 0.002 / 2 = 1e-3 at index 1; 1e-4 / max(0, 1e-3) = 0.1 at index 2. */
  CHECK(fabs(e - 0.1) < 1e-6 && worst == 2, "max error %g at %zu", e, worst);
  got[3] = NAN;
  CHECK(isinf(kiln_ref_max_error(got, ref, 4, 1e-3, &worst)) && worst == 3, "NaN not caught");
}

static void test_gelu_reference(void) {
  /* GELU(v) = v * Phi(v); Phi(1) = 0.841344746, Phi(-1) = 0.158655254, Phi(2) = 0.977249868. */
  uint16_t x[4] = {kiln_ref_f32_to_f16(1.0f), kiln_ref_f32_to_f16(-0.5f), kiln_ref_f32_to_f16(0.0f),
                   kiln_ref_f32_to_f16(2.5f)};
  uint16_t bias[2] = {kiln_ref_f32_to_f16(0.0f), kiln_ref_f32_to_f16(-0.5f)};
  float y[4];
  kiln_ref_bias_gelu(x, bias, y, 4, 2);
  const double expect[4] = {0.841344746, -0.158655254, 0.0, 1.954499736};
  for (int i = 0; i < 4; i++) /* f32 erf: a few ulps */
    CHECK(fabs(y[i] - expect[i]) <= 1e-6 * fmax(1.0, fabs(expect[i])), "gelu %d: %.9g", i,
          (double)y[i]);
}

static void test_softmax_reference(void) {
  /* Row 0: [0, ln 2, pad] -> [1/3, 2/3]; row 1: [-1000, -1000, pad] -> [1/2, 1/2] (needs the
   * max subtraction: exp(-1000) underflows). */
  float x[6] = {0.0f, 0.69314718f, 99.0f, -1000.0f, -1000.0f, 99.0f};
  float y[4];
  kiln_ref_softmax_rows(x, 3, y, 2, 2, 2);
  CHECK(fabsf(y[0] - 1.0f / 3) < 1e-6f && fabsf(y[1] - 2.0f / 3) < 1e-6f, "%g %g", (double)y[0],
        (double)y[1]);
  CHECK(y[2] == 0.5f && y[3] == 0.5f, "%g %g", (double)y[2], (double)y[3]);
}

static void test_layernorm_reference(void) {
  float x[4] = {1, 2, 3, 4}, g[4] = {1, 1, 2, 1}, b[4] = {0, 0, 0, 10}, y[4], mean, rstd;
  kiln_ref_layernorm_fwd(x, 4, g, b, y, 4, &mean, &rstd, 1, 4, 0.0f);
  double rs = 1.0 / sqrt(1.25); /* var of 1..4 is 1.25 */
  CHECK(mean == 2.5f && fabs(rstd - rs) < 1e-7, "mean %g rstd %g", (double)mean, (double)rstd);
  CHECK(fabs(y[0] + 1.5 * rs) < 1e-6 && fabs(y[2] - 1.0 * rs) < 1e-6 &&
            fabs(y[3] - (10 + 1.5 * rs)) < 1e-5,
        "%g %g %g", (double)y[0], (double)y[2], (double)y[3]);
}

static void test_matmul_reference(void) {
  /* [1 2; 3 4] @ [5 6; 7 8] = [19 22; 43 50], with B given transposed through its strides. */
  uint16_t a[4], bt[4];
  const float av[4] = {1, 2, 3, 4}, btv[4] = {5, 7, 6, 8};
  for (int i = 0; i < 4; i++) {
    a[i] = kiln_ref_f32_to_f16(av[i]);
    bt[i] = kiln_ref_f32_to_f16(btv[i]);
  }
  float c[4];
  kiln_ref_matmul_f16(a, 2, 1, bt, 1, 2, c, 2, 2, 2);
  CHECK(c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50, "%g %g %g %g", (double)c[0],
        (double)c[1], (double)c[2], (double)c[3]);
}

static void test_argmax_reference(void) {
  float x[6] = {1, 3, 3, -5, -4, -5};
  int32_t out[2];
  kiln_ref_argmax_rows(x, 3, out, 2, 3);
  CHECK(out[0] == 1 && out[1] == 1, "%d %d (ties go to the first maximum)", out[0], out[1]);
}

/* Two programs of 4 lanes over 6 elements: the second is ragged, its lanes all set. */
static void test_small_int_sum_reference(void) {
  int8_t flags[6] = {0, 1, 0, 1, 2, -1}, bytes[6] = {127, 127, -128, 1, -128, -128};
  int16_t shorts[6] = {32767, 32767, 32767, -32768, 5, -6};
  int32_t c[16], bits[6];
  kiln_ref_small_int_sum(flags, bytes, shorts, c, bits, 6, 4);
  static const int32_t want[16] = {2, 127, 65533, 4, 1, 0, 1, 127, 2, -256, -1, 2, 1, 1, 0, -128};
  for (int i = 0; i < 16; i++) CHECK(c[i] == want[i], "counts[%d] = %d, want %d", i, c[i], want[i]);
  for (int i = 0; i < 6; i++) CHECK(bits[i] == (flags[i] ? 7 : 0), "bits[%d] = %d", i, bits[i]);
}

static void test_dropout_reference(void) {
  float x[64], r[64], y[64];
  for (int i = 0; i < 64; i++) x[i] = (float)i;
  kiln_ref_dropout(x, r, y, 64, 0.25f, 42);
  int kept = 0;
  for (int i = 0; i < 64; i++) {
    CHECK(r[i] == kiln_ref_rand(42, i), "r[%d]", i);
    if (r[i] > 0.25f) {
      kept++;
      CHECK(y[i] == x[i] / 0.75f, "y[%d] = %g", i, (double)y[i]);
    } else {
      CHECK(y[i] == 0.0f, "y[%d] = %g", i, (double)y[i]);
    }
  }
  CHECK(kept > 32 && kept < 64, "kept %d of 64 at p = 0.25", kept);
}

/* bf16 rounding: exact values stay, halfway cases go to even, carries reach the exponent and
 * inf, NaN stays NaN; every bf16 survives bf16 -> f32 -> bf16. */
static void test_bf16(void) {
  static const struct {
    uint32_t f; /* f32 bits */
    uint16_t h;
  } cases[] = {
      {0x3f800000u, 0x3f80u}, /* 1.0 */
      {0xc0490fdbu, 0xc049u}, /* -pi: low half 0x0fdb < half, rounds down */
      {0x3f808000u, 0x3f80u}, /* 1 + 2^-8 exactly halfway: to even (down) */
      {0x3f818000u, 0x3f82u}, /* halfway above an odd mantissa: to even (up) */
      {0x3f808001u, 0x3f81u}, /* just above halfway: up */
      {0x3fffffffu, 0x4000u}, /* carry into the exponent: 2.0 */
      {0x7f7fffffu, 0x7f80u}, /* FLT_MAX rounds to inf */
      {0x00000001u, 0x0000u}, /* the smallest subnormal rounds to zero */
      {0x80000000u, 0x8000u}, /* -0 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint16_t h = kiln_ref_f32_to_bf16(float_of(cases[i].f));
    CHECK(h == cases[i].h, "f32_to_bf16(0x%08x) = 0x%04x, expected 0x%04x", cases[i].f, h,
          cases[i].h);
  }
  CHECK(isnan(kiln_ref_bf16_to_f32(kiln_ref_f32_to_bf16(NAN))), "NaN must stay NaN");
  CHECK(isnan(kiln_ref_round_bf16(float_of(0x7f800001u))), "a signalling NaN must not become inf");
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000u; h++) {
    float f = kiln_ref_bf16_to_f32((uint16_t)h);
    if (!isnan(f) && kiln_ref_f32_to_bf16(f) != h) bad++;
  }
  CHECK(bad == 0, "%d bf16 values changed through f32", bad);
}

/* A 3 x 2 matrix in two programs of 2 rows with BC = 4: the columns past cols and the row past
 * rows are zeros; scans run along the row, the column sums down a program's rows. */
static void test_scan_flip_reference(void) {
  const float x[6] = {1, 2, -3, 4, 0.5f, 8};
  float f[5 * 12];
  int32_t i[4 * 12];
  kiln_ref_scan_flip(x, f, i, 3, 2, 2, 4);
  static const float sums[12] = {1, 3, 3, 3, -3, 1, 1, 1, 0.5f, 8.5f, 8.5f, 8.5f};
  static const float flip[12] = {0, 0, 2, 1, 0, 0, 4, -3, 0, 0, 8, 0.5f};
  static const float down[12] = {1, 2, 0, 0, -2, 6, 0, 0, 0.5f, 8, 0, 0};
  static const int32_t count[12] = {1, 2, 2, 2, 0, 1, 1, 1, 1, 2, 2, 2};
  static const int32_t pow2[12] = {2, 4, 4, 4, 1, 2, 2, 2, 2, 4, 4, 4};
  /* row r of the flipped (16 t) column sums is the sum down to row first + (first + 1 - r) */
  static const int32_t up[12] = {-32, 96, 0, 0, 16, 32, 0, 0, 8, 128, 0, 0};
  for (int k = 0; k < 12; k++) {
    CHECK(f[k] == sums[k] && f[12 + k] == flip[k] && f[36 + k] == down[k], "f32 element %d", k);
    CHECK(i[k] == count[k] && i[12 + k] == pow2[k] && i[24 + k] == up[k], "i32 element %d", k);
  }
  CHECK(f[24] == 1.125f && f[25] == 1.125f * 1.25f && f[26] == f[25], "cumprod %g %g",
        (double)f[24], (double)f[25]);
  static const float pairs[12] = {1, 3, 0, 0, -3, 1, 0, 0, 0.5f, 8.5f, 0, 0};
  static const int32_t reversed[12] = {0, 0, 64, -48, 0, 0, 32, 16, 0, 0, 0, 0};
  for (int k = 0; k < 12; k++)
    CHECK(f[48 + k] == pairs[k] && i[36 + k] == reversed[k], "reshape element %d", k);
}

/* Two rows of three columns, BLOCK 4: the column sums, the CAS's old values and cells. */
static void test_cas_lock_reference(void) {
  const int32_t x[6] = {1, -2, 3, 10, 20, -30};
  int32_t sums[3], olds[8], cells[6];
  memcpy(cells, x, sizeof x);
  kiln_ref_cas_lock(x, sums, olds, cells, 2, 3, 4);
  CHECK(sums[0] == 11 && sums[1] == 18 && sums[2] == -27, "sums %d %d %d", sums[0], sums[1],
        sums[2]);
  static const int32_t want_olds[8] = {1, -2, 3, 0, 10, 20, -30, 0};
  static const int32_t want_cells[6] = {0, -2, 14, 0, 20, 14};
  for (int k = 0; k < 8; k++) CHECK(olds[k] == want_olds[k], "olds[%d] = %d", k, olds[k]);
  for (int k = 0; k < 6; k++) CHECK(cells[k] == want_cells[k], "cells[%d] = %d", k, cells[k]);
}

/* randint is the Philox word itself; the normal numbers of 4096 draws have mean ~0, variance ~1. */
static void test_rand_normal_reference(void) {
  int32_t bits[4096];
  float normal[4096];
  kiln_ref_rand_normal(bits, normal, 4096, 99, 0);
  uint32_t ctr[4] = {1, 0, 0, 0}, key[2] = {99, 0}, out[4];
  kiln_ref_philox4x32_10(ctr, key, out);
  CHECK((uint32_t)bits[7] == out[3], "bits[7] is word 3 of counter 1");
  CHECK((float)(((uint32_t)bits[7]) >> 8) * 0x1p-24f == kiln_ref_rand(99, 7),
        "rand is randint's top 24 bits");
  double mean = 0, var = 0;
  for (int k = 0; k < 4096; k++) mean += normal[k];
  mean /= 4096;
  for (int k = 0; k < 4096; k++) var += (normal[k] - mean) * (normal[k] - mean);
  var /= 4096;
  CHECK(fabs(mean) < 5.0 / 64 && fabs(var - 1) < 5 * sqrt(2.0 / 4096), "mean %g variance %g", mean,
        var);
}

/* argmax_all over a 3 x 2 matrix in programs of 2 rows, BC = 2: the tile of the second program is
 * {0.5, 0.5, 0, 0} (the row past rows is zeros). */
static void test_argmax_all_reference(void) {
  const float x[6] = {1, 3, 3, -2, 0.5f, 0.5f};
  int32_t o[16];
  kiln_ref_argmax_all(x, o, 3, 2, 2, 2);
  static const int32_t want[16] = {1, 3, 1, 3, 1, 5, 1, 3, 0, 2, 0, 2, 0, 0, 0, 2};
  for (int k = 0; k < 16; k++)
    CHECK(o[k] == want[k], "argmax_all output %d: %d, want %d", k, o[k], want[k]);
}

/* sort_rows over one row of 3 values with BC = 4 (a zero past cols). */
static void test_sort_rows_reference(void) {
  const float x[3] = {2.5f, -1, 0.75f};
  float f[8];
  int32_t i[8];
  kiln_ref_sort_rows(x, f, i, 1, 3, 4);
  static const float up[4] = {-1, 0, 0.75f, 2.5f}, down[4] = {2.5f, 0.75f, 0, -1};
  static const int32_t halves[4] = {-4, 10, 0, 3}, mask[4] = {0, 0, 1, 1};
  for (int k = 0; k < 4; k++)
    CHECK(f[k] == up[k] && f[4 + k] == down[k] && i[k] == halves[k] && i[4 + k] == mask[k],
          "sort element %d", k);
}

/* trans3d of one 1 x 2 x 3 block 0..5: [2, 1, 0] gives the 3 x 2 x 1 block 0 3 1 4 2 5. */
static void test_trans3d_reference(void) {
  const float x[6] = {0, 1, 2, 3, 4, 5};
  float f[7 * 6];
  int32_t i[6];
  kiln_ref_trans3d(x, f, i, 1, 1, 2, 3);
  static const float p120[6] = {0, 1, 2, 3, 4, 5}, p021[6] = {0, 3, 1, 4, 2, 5},
                     p210[6] = {0, 3, 1, 4, 2, 5};
  static const float p201[6] = {0, 3, 1, 4, 2, 5}, p102[6] = {0, 1, 2, 3, 4, 5};
  for (int k = 0; k < 6; k++) {
    CHECK(f[k] == x[k] && f[6 + k] == p120[k] && f[12 + k] == p201[k] && f[18 + k] == p021[k] &&
              f[24 + k] == p102[k] && f[30 + k] == p210[k],
          "trans3d element %d", k);
    CHECK(i[k] == (int32_t)(4 * p210[k]), "trans3d i8 element %d", k);
  }
  CHECK(f[36] == 0 && f[37] == 1, "trans3d 2-D: %g %g", (double)f[36], (double)f[37]);
}

int main(void) {
  test_bf16();
  test_f16_known_values();
  test_f16_exhaustive_roundtrip();
  test_f16_ties();
#ifdef __FLT16_MAX__
  test_f16_against_compiler();
#endif
  test_philox_known_answers();
  test_rand_mapping();
  test_max_error();
  test_gelu_reference();
  test_softmax_reference();
  test_layernorm_reference();
  test_matmul_reference();
  test_argmax_reference();
  test_small_int_sum_reference();
  test_dropout_reference();
  test_scan_flip_reference();
  test_cas_lock_reference();
  test_rand_normal_reference();
  test_attn_keep_reference();
  test_argmax_all_reference();
  test_sort_rows_reference();
  test_trans3d_reference();
  if (failures) {
    fprintf(stderr, "reference_test: %d check(s) failed\n", failures);
    return 1;
  }
  printf("reference_test: all checks passed\n");
  return 0;
}
