/* reference.c — the C references of the numeric tests; see reference.h. */
#include "reference.h"

#include "kiln_base.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- binary16 ---------------------------------------------------------------------------- */

/* The one f16/bf16 conversion (kiln_base.h), which the emulator's intrinsics also use; its bit
 * patterns are checked against known values in reference_test.c. */
uint16_t kiln_ref_f32_to_f16(float f) { return kiln_f32_to_f16(f); }
float kiln_ref_f16_to_f32(uint16_t h) { return kiln_f16_to_f32(h); }
float kiln_ref_round_f16(float f) { return kiln_ref_f16_to_f32(kiln_ref_f32_to_f16(f)); }
uint16_t kiln_ref_f32_to_bf16(float f) { return kiln_f32_to_bf16(f); }
float kiln_ref_bf16_to_f32(uint16_t h) { return kiln_bf16_to_f32(h); }
float kiln_ref_round_bf16(float f) { return kiln_ref_bf16_to_f32(kiln_ref_f32_to_bf16(f)); }

/* ---- Philox4x32-10 ----------------------------------------------------------------------- */

enum { PHILOX_ROUNDS = 10 };
static const uint32_t PHILOX_M0 = 0xD2511F53u, PHILOX_M1 = 0xCD9E8D57u;
static const uint32_t PHILOX_W0 = 0x9E3779B9u, PHILOX_W1 = 0xBB67AE85u;

static void philox_round(uint32_t c[4], const uint32_t k[2]) {
  uint64_t p0 = (uint64_t)PHILOX_M0 * c[0];
  uint64_t p1 = (uint64_t)PHILOX_M1 * c[2];
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t n0 = hi1 ^ c[1] ^ k[0];
  uint32_t n2 = hi0 ^ c[3] ^ k[1];
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}

void kiln_ref_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  uint32_t k[2] = {key[0], key[1]};
  for (int r = 0; r < PHILOX_ROUNDS; r++) {
    if (r > 0) { /* the Weyl key schedule: bumped between rounds, not before the first */
      k[0] += PHILOX_W0;
      k[1] += PHILOX_W1;
    }
    philox_round(c, k);
  }
  memcpy(out, c, sizeof c);
}

uint32_t kiln_ref_rand_bits(int32_t seed, int32_t offset) {
  uint32_t o = (uint32_t)offset;
  uint32_t ctr[4] = {o >> 2, 0u, 0u, 0u};
  uint32_t key[2] = {(uint32_t)seed, 0u};
  uint32_t out[4];
  kiln_ref_philox4x32_10(ctr, key, out);
  return out[o & 3u];
}

float kiln_ref_rand(int32_t seed, int32_t offset) {
  return (float)(kiln_ref_rand_bits(seed, offset) >> 8) * 0x1p-24f;
}

int32_t kiln_ref_attn_drop_threshold(float p) {
  int32_t t = (int32_t)(p * 256.0f + 0.5f);
  return t < 255 ? t : 255;
}

float kiln_ref_attn_keep_scale(float p) {
  return 256.0f / (float)(256 - kiln_ref_attn_drop_threshold(p));
}

/* The counter row of position x: 4 per 16 positions, x's bits 0 and 3 left to the word and byte. */
static uint32_t attn_ctr_row(uint32_t x) { return ((x >> 4) << 2) + ((x & 6u) >> 1); }

bool kiln_ref_attn_keep(int32_t seed, int32_t offset, uint32_t bh, uint32_t S, uint32_t i,
                        uint32_t j, float p) {
  uint32_t qblocks = ((S + 15u) >> 4) << 2;
  uint32_t ctr =
      ((uint32_t)offset >> 2) + (bh * qblocks + attn_ctr_row(i)) * qblocks + attn_ctr_row(j);
  uint32_t word = kiln_ref_rand_bits(seed, (int32_t)(ctr * 4u + 2u * (i & 1u) + (j & 1u)));
  uint32_t byte = (word >> (((i & 8u) << 1) + (j & 8u))) & 0xFFu;
  return (int32_t)byte >= kiln_ref_attn_drop_threshold(p);
}

/* ---- test data --------------------------------------------------------------------------- */

void kiln_ref_rng_init(KilnRefRng *rng, uint64_t seed) { rng->state = seed; }

uint64_t kiln_ref_rng_next(KilnRefRng *rng) {
  uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float kiln_ref_rng_uniform(KilnRefRng *rng, float lo, float hi) {
  float u = (float)(kiln_ref_rng_next(rng) >> 40) * 0x1p-24f;
  return lo + (hi - lo) * u;
}

/* ---- comparison -------------------------------------------------------------------------- */

double kiln_ref_max_error(const float *got, const float *ref, size_t n, double floor,
                          size_t *worst) {
  double max_err = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    double g = got[i], r = ref[i];
    double err;
    if (g == r)
      err = 0.0; /* also equal infinities */
    else if (!isfinite(g) || !isfinite(r))
      err = INFINITY;
    else
      err = fabs(g - r) / fmax(fabs(r), floor);
    if (err > max_err) {
      max_err = err;
      at = i;
    }
  }
  if (worst) *worst = at;
  return max_err;
}

/* ---- kernel references ------------------------------------------------------------------- */

void kiln_ref_vector_add(const float *x, const float *y, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];
}

void kiln_ref_bias_gelu(const uint16_t *x, const uint16_t *bias, float *y, size_t n, size_t cols) {
  for (size_t i = 0; i < n; i++) {
    float v = kiln_ref_f16_to_f32(x[i]) + kiln_ref_f16_to_f32(bias[i % cols]);
    y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  }
}

void kiln_ref_softmax_rows(const float *x, size_t x_stride, float *y, size_t y_stride, size_t rows,
                           size_t cols) {
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * x_stride;
    float *yr = y + r * y_stride;
    float m = -INFINITY;
    for (size_t c = 0; c < cols; c++) m = fmaxf(m, xr[c]);
    double s = 0.0;
    for (size_t c = 0; c < cols; c++) {
      yr[c] = expf(xr[c] - m);
      s += yr[c];
    }
    for (size_t c = 0; c < cols; c++) yr[c] = (float)(yr[c] / s);
  }
}

void kiln_ref_layernorm_fwd(const float *x, size_t x_stride, const float *gamma, const float *beta,
                            float *y, size_t y_stride, float *mean, float *rstd, size_t rows,
                            size_t cols, float eps) {
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * x_stride;
    double s = 0.0;
    for (size_t c = 0; c < cols; c++) s += xr[c];
    double mu = s / (double)cols;
    double ss = 0.0;
    for (size_t c = 0; c < cols; c++) ss += (xr[c] - mu) * (xr[c] - mu);
    double rs = 1.0 / sqrt(ss / (double)cols + (double)eps);
    for (size_t c = 0; c < cols; c++)
      y[r * y_stride + c] = (float)((xr[c] - mu) * rs * gamma[c] + beta[c]);
    mean[r] = (float)mu;
    rstd[r] = (float)rs;
  }
}

void kiln_ref_layernorm_bwd(const float *x, const float *dy, size_t stride, const float *gamma,
                            const float *mean, const float *rstd, float *dx, float *dgamma,
                            float *dbeta, float *dgamma_bound, float *dbeta_bound, size_t rows,
                            size_t cols) {
  double *sg = calloc(cols, sizeof *sg), *sb = calloc(cols, sizeof *sb);
  double *ag = calloc(cols, sizeof *ag), *ab = calloc(cols, sizeof *ab);
  for (size_t r = 0; sg && sb && ag && ab && r < rows; r++) {
    const float *xr = x + r * stride, *dr = dy + r * stride;
    double c1 = 0.0, c2 = 0.0;
    for (size_t c = 0; c < cols; c++) {
      double xhat = ((double)xr[c] - mean[r]) * rstd[r], g = (double)gamma[c] * dr[c];
      c1 += xhat * g, c2 += g;
    }
    c1 /= (double)cols, c2 /= (double)cols;
    for (size_t c = 0; c < cols; c++) {
      double xhat = ((double)xr[c] - mean[r]) * rstd[r], g = (double)gamma[c] * dr[c];
      dx[r * stride + c] = (float)(rstd[r] * (g - xhat * c1 - c2));
      sg[c] += dr[c] * xhat, sb[c] += dr[c];
      ag[c] += fabs(dr[c] * xhat), ab[c] += fabs(dr[c]);
    }
  }
  for (size_t c = 0; sg && sb && ag && ab && c < cols; c++) {
    dgamma[c] = (float)sg[c], dbeta[c] = (float)sb[c];
    double k = ((double)rows + 4.0) * 0x1p-24;
    if (dgamma_bound) dgamma_bound[c] = (float)(k * ag[c]);
    if (dbeta_bound) dbeta_bound[c] = (float)(k * ab[c]);
  }
  free(sg), free(sb), free(ag), free(ab);
}

KilnRefLnRow kiln_ref_layernorm_row_kind(size_t row, size_t rows) {
  if (row == 1) return KILN_REF_LN_ROW_TINY;
  return row == 2 && rows >= 3 ? KILN_REF_LN_ROW_CONSTANT : KILN_REF_LN_ROW_NORMAL;
}

void kiln_ref_layernorm_fill_row(float *x, size_t cols, KilnRefLnRow kind, KilnRefRng *rng,
                                 float eps, int parts, float value) {
  float a = (float)sqrt(1.5 * (double)eps / parts);
  float off = kind == KILN_REF_LN_ROW_TINY ? kiln_ref_rng_uniform(rng, -a, a) : 0.0f;
  for (size_t c = 0; c < cols; c++)
    x[c] = kind == KILN_REF_LN_ROW_TINY ? off + kiln_ref_rng_uniform(rng, -a, a) : value;
}

double kiln_ref_variance(const float *x, size_t cols) {
  double mu = 0.0, var = 0.0;
  for (size_t c = 0; c < cols; c++) mu += x[c];
  mu /= (double)cols;
  for (size_t c = 0; c < cols; c++) var += ((double)x[c] - mu) * ((double)x[c] - mu);
  return var / (double)cols;
}

void kiln_ref_matmul_f16(const uint16_t *a, size_t sam, size_t sak, const uint16_t *b, size_t sbk,
                         size_t sbn, float *c, size_t M, size_t N, size_t K) {
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      float acc = 0.0f;
      for (size_t k = 0; k < K; k++)
        acc +=
            kiln_ref_f16_to_f32(a[i * sam + k * sak]) * kiln_ref_f16_to_f32(b[k * sbk + j * sbn]);
      c[i * N + j] = acc;
    }
}

/* Two's complement wrapping without signed overflow in C: through uint32_t, back by value. */
static int32_t wrap_i32(uint32_t u) {
  return u <= INT32_MAX ? (int32_t)u : -(int32_t)(UINT32_MAX - u) - 1;
}

void kiln_ref_int_semantics(const int32_t *x, const int32_t *y, int32_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int32_t a = x[i], b = y[i];
    out[i] = a / b;
    out[n + i] = a % b;
    /* >> of a negative value is implementation-defined in C: floor(a / 8) is the arithmetic shift */
    out[2 * n + i] = a >= 0 ? a / 8 : -(int32_t)((-(int64_t)a + 7) / 8);
    out[3 * n + i] = wrap_i32((uint32_t)a * 65537u);
    int32_t low = (int32_t)((uint32_t)a & 0xFFu); /* the low byte, read as signed */
    out[4 * n + i] = low >= 128 ? low - 256 : low;
    out[5 * n + i] = wrap_i32((uint32_t)a + 6u) / 7;
  }
}

void kiln_ref_matmul_f32(const float *a, const float *b, float *c, size_t M, size_t N, size_t K) {
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double acc = 0.0;
      for (size_t k = 0; k < K; k++) acc += (double)a[i * K + k] * b[k * N + j];
      c[i * N + j] = (float)acc;
    }
}

void kiln_ref_matmul_i8(const int8_t *a, size_t sam, size_t sak, const int8_t *b, size_t sbk,
                        size_t sbn, int32_t *c, size_t M, size_t N, size_t K) {
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      int64_t acc = 0;
      for (size_t k = 0; k < K; k++) acc += (int64_t)a[i * sam + k * sak] * b[k * sbk + j * sbn];
      c[i * N + j] = (int32_t)acc;
    }
}

void kiln_ref_argmax_rows(const float *x, size_t stride, int32_t *out, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; r++) {
    size_t best = 0;
    for (size_t c = 1; c < cols; c++)
      if (x[r * stride + c] > x[r * stride + best]) /* strict: the first maximum wins */
        best = c;
    out[r] = (int32_t)best;
  }
}

void kiln_ref_flash_attention(const uint16_t *q, const uint16_t *k, const uint16_t *v, float *o,
                              size_t bh, size_t S, size_t D, float scale) {
  double *w = malloc(S * sizeof *w);
  if (!w) abort();
  for (size_t h = 0; h < bh; h++) {
    const uint16_t *qh = q + h * S * D, *kh = k + h * S * D, *vh = v + h * S * D;
    for (size_t i = 0; i < S; i++) {
      double m = -INFINITY, l = 0.0;
      for (size_t j = 0; j <= i; j++) {
        double s = 0.0;
        for (size_t d = 0; d < D; d++)
          s += (double)kiln_ref_f16_to_f32(qh[i * D + d]) * kiln_ref_f16_to_f32(kh[j * D + d]);
        w[j] = s * scale;
        if (w[j] > m) m = w[j];
      }
      for (size_t j = 0; j <= i; j++) l += w[j] = exp(w[j] - m);
      for (size_t d = 0; d < D; d++) {
        double acc = 0.0;
        for (size_t j = 0; j <= i; j++) acc += w[j] * kiln_ref_f16_to_f32(vh[j * D + d]);
        o[(h * S + i) * D + d] = (float)(acc / l);
      }
    }
  }
  free(w);
}

void kiln_ref_transpose(const float *x, size_t x_stride, float *out, size_t out_stride, size_t rows,
                        size_t cols) {
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) out[c * out_stride + r] = x[r * x_stride + c];
}

void kiln_ref_dropout(const float *x, float *r, float *y, size_t n, float p, int32_t seed) {
  float keep = 1.0f - p;
  for (size_t i = 0; i < n; i++) {
    r[i] = kiln_ref_rand(seed, (int32_t)i);
    y[i] = r[i] > p ? x[i] / keep : 0.0f;
  }
}

void kiln_ref_small_int_sum(const int8_t *flags, const int8_t *bytes, const int16_t *shorts,
                            int32_t *counts, int32_t *bits, size_t n, size_t block) {
  for (size_t p = 0; p * block < n; p++) {
    size_t lo = p * block, hi = lo + block < n ? lo + block : n;
    int64_t set = 0, sb = 0, sh = 0, first = -1, top = INT8_MIN;
    for (size_t i = lo; i < hi; i++) {
      if (flags[i]) {
        set++;
        if (first < 0) first = (int64_t)(i - lo);
      }
      sb += bytes[i];
      sh += shorts[i];
      top = bytes[i] > top ? bytes[i] : top;
      bits[i] = flags[i] ? 7 : 0;
    }
    int32_t *c = counts + 8 * p;
    c[0] = (int32_t)set;
    c[1] = (int32_t)sb;
    c[2] = (int32_t)sh;
    c[3] = (int32_t)(hi - lo);
    c[4] = set > 0;
    c[5] = set == (int64_t)(hi - lo);
    c[6] = first < 0 ? 0 : (int32_t)first;
    c[7] = (int32_t)top;
  }
}

void kiln_ref_accum_loop(const float *x, float *sums, int32_t *hashes, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; r++) {
    float s = 0.0f, sq = 0.0f, prod = 1.0f;
    int32_t h = 0;
    for (size_t c = 0; c < cols; c++) {
      float v = x[r * cols + c];
      s += v;
      sq += v * v;
      prod *= 1.0f + v * 0.125f;
      int32_t q = (int32_t)(v * 64.0f);
      /* the kernel's i32 arithmetic wraps: the additions and products in uint32_t */
      h = (int32_t)((uint32_t)h + (uint32_t)q);
      h = (int32_t)((uint32_t)h * 31u);
      h ^= (int32_t)c;
      h &= 0x0FFFFFFF;
      h %= 1000003;
      h |= 1;
      h = (int32_t)((uint32_t)h << 2);
      h >>= 1; /* h is non-negative here: no sign question */
      h -= q;
      h /= 3; /* C and Kiln both truncate toward zero */
    }
    s /= (float)cols;
    sq -= s;
    sums[3 * r] = s;
    sums[3 * r + 1] = sq;
    sums[3 * r + 2] = prod;
    hashes[2 * r] = h;
    hashes[2 * r + 1] = (int32_t)cols;
  }
}

void kiln_ref_pow_countdown(const float *x, float *outf, int32_t *outi, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; r++) {
    const float *row = x + r * cols;
    float horner = 0.0f;
    for (size_t c = cols; c-- > 0;) horner = horner * 0.5f + row[c];
    int32_t every3 = 0;
    for (int64_t c = (int64_t)cols - 1; c > -1; c -= 3)
      every3 += (int32_t)c * 100 + (row[c] > 0.0f);
    float v = row[0];
    int pos = v > 0.0f, big = v > 1.0f;
    outf[4 * r] = horner;
    outf[4 * r + 1] = v * v + v * (v * v);
    outf[4 * r + 2] = 1.0f / (v * v);
    outf[4 * r + 3] = 1025.25f;
    /* as numbers 0 and 1: pos > big, pos >= big, max, min, big < pos */
    outi[4 * r] = (pos > big) + 2 * (pos >= big) + 4 * (pos > big ? pos : big) +
                  8 * (pos < big ? pos : big) + 16 * (big < pos);
    outi[4 * r + 1] = every3;
    outi[4 * r + 2] = (int8_t)((int8_t)(v * 16.0f) ^ (int8_t)-128);
    int32_t m = (int32_t)(r % 7);
    outi[4 * r + 3] = m * m * m - 8;
  }
}

void kiln_ref_early_exit(const float *x, float *out, int32_t *counts, size_t rows, size_t cols,
                         float limit) {
  for (size_t r = 0; r < rows; r++) {
    const float *row = x + r * cols;
    float *o = out + 2 * r;
    int32_t *n = counts + 4 * r;
    o[0] = o[1] = -1.0f;
    n[0] = n[1] = n[2] = n[3] = -1;
    float s = 0.0f, t[16] = {0};
    int32_t visited = 0, stop = -1;
    bool returned = false;
    for (size_t c = 0; c < cols && !returned; c++) {
      float v = row[c];
      if (v > 3.5f) {
        n[2] = (int32_t)c;
        returned = true;
        continue;
      }
      if (v < 0.0f) continue;
      visited++;
      s += v;
      for (int j = 0; j < 16; j++) t[j] += v * (float)j;
      if (s > limit) {
        stop = (int32_t)c;
        break;
      }
    }
    if (returned) continue;
    int32_t pairs = 0;
    for (int a = 0; a < 4; a++) pairs += (int32_t)((size_t)(a + 1) < cols ? (size_t)(a + 1) : cols);
    double ts = 0.0;
    for (int j = 0; j < 16; j++) ts += t[j];
    o[0] = s;
    o[1] = (float)ts;
    n[0] = visited;
    n[1] = stop;
    n[3] = pairs;
  }
}

static int32_t collatz_steps(int32_t n) {
  int32_t steps = 0;
  for (; n != 1; steps++) n = n % 2 == 0 ? n / 2 : 3 * n + 1;
  return steps;
}

void kiln_ref_while_loops(const float *x, float *out, int32_t *counts, size_t rows, size_t cols,
                          float limit) {
  for (size_t r = 0; r < rows; r++) {
    const float *row = x + r * cols;
    size_t c = 0;
    float s = 0.0f, t[16] = {0};
    while (c < cols && s <= limit) {
      float v = row[c++];
      if (v < 0.0f) continue;
      s += v;
      for (int j = 0; j < 16; j++) t[j] += v * (float)j;
    }
    double ts = 0.0;
    for (int j = 0; j < 16; j++) ts += t[j];
    int32_t found = -1, searched = 0;
    for (size_t b = 0; b < cols; b++) {
      searched++;
      if (row[b] > 3.0f) {
        found = (int32_t)b;
        break;
      }
    }
    out[2 * r] = s;
    out[2 * r + 1] = (float)ts;
    int32_t *n = counts + 5 * r;
    n[0] = (int32_t)c;
    n[1] = collatz_steps((int32_t)(fabsf(row[0]) * 100.0f) + 1);
    n[2] = 3 * searched;
    n[3] = found;
    n[4] = (int32_t)cols + 5;
  }
}

void kiln_ref_range_steps(const int32_t *params, int32_t *out, size_t n) {
  for (size_t p = 0; p < n; p++) {
    int64_t lo = params[3 * p], hi = params[3 * p + 1], step = params[3 * p + 2];
    int32_t trips = 0, first = -999, last = -999, lanes = 0;
    uint32_t total = 0; /* i32 addition wraps: unsigned here, where wrapping is defined */
    for (int64_t i = lo; step != 0 && (step > 0 ? i < hi : i > hi); i += step) {
      if (trips == 0) first = (int32_t)i;
      last = (int32_t)i;
      trips++;
      total += (uint32_t)i;
      for (int64_t l = 0; l < 8; l++) lanes += (int32_t)((l + i) & 7);
    }
    int32_t *o = out + 6 * p;
    o[0] = trips;
    o[1] = (int32_t)total;
    o[2] = first;
    o[3] = last;
    o[4] = lanes;
    o[5] = trips < 3 ? trips : 3;
  }
}

void kiln_ref_multi_return(const float *x, float *outf, int32_t *outi, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; r++) {
    const float *row = x + r * cols;
    float lo = row[0], hi = row[0];
    int32_t at = 0;
    double s = 0.0;
    for (size_t c = 0; c < cols; c++) {
      lo = row[c] < lo ? row[c] : lo;
      if (row[c] > hi) {
        hi = row[c];
        at = (int32_t)c;
      }
      s += row[c];
    }
    outf[4 * r] = hi; /* three swaps of (lo, hi) */
    outf[4 * r + 1] = lo;
    outf[4 * r + 2] = hi;
    outf[4 * r + 3] = (float)s;
    int32_t q = (int32_t)r * 7 + 3;
    outi[3 * r] = at;
    outi[3 * r + 1] = q / 5;
    outi[3 * r + 2] = q % 5;
  }
}

static float ref_clamp(float v, float lo, float hi) { return fminf(fmaxf(v, lo), hi); }

static float ref_poly(float v) { return 2.0f * (v * (v * v)) + ref_clamp(v, -1.0f, 1.0f); }

void kiln_ref_inline_fns(const float *x, const float *y, float *outf, int32_t *outi, size_t rows,
                         size_t cols) {
  for (size_t r = 0; r < rows; r++) {
    const float *px = x + r * cols, *py = y + r * cols;
    float acc = 0.0f, top = -INFINITY;
    int32_t at = -1, positive = 0;
    for (size_t c = 0; c < cols; c++) {
      acc += px[c] * py[c];
      top = fmaxf(top, ref_poly(px[c]));
      positive += px[c] > 0.0f;
      if (at < 0 && px[c] > 1.5f) at = (int32_t)c;
    }
    /* lanes past cols load 0, and poly(0) = 0 takes part in the maximum */
    outf[4 * r] = acc;
    outf[4 * r + 1] = fmaxf(top, 0.0f);
    outf[4 * r + 2] = ref_poly(px[0]);
    outf[4 * r + 3] = ref_clamp(px[0], -1.0f, 0.5f);
    int32_t ri = (int32_t)r;
    outi[4 * r] = at;
    outi[4 * r + 1] = positive;
    outi[4 * r + 2] = ri * ri * ri;
    outi[4 * r + 3] = 3 * ri + 1;
  }
}

/* The value of the builtins_basic kernel's tile t at (row r, column c): 0 where it is masked. */
static float builtins_tile(const float *x, size_t rows, size_t cols, size_t r, size_t c) {
  return r < rows && c < cols ? x[r * cols + c] : 0.0f;
}

void kiln_ref_builtins_basic(const float *x, const float *y, float *outf, int32_t *outi,
                             size_t rows, size_t cols, size_t block) {
  for (size_t r = 0; r < rows; r++) {
    size_t p = r / block, first = p * block;
    float a = x[r * cols], b = x[r * cols + 1], c = y[r * cols];
    float tmax = -INFINITY, tmin = INFINITY, rowsum = 0.0f;
    int64_t total = 0, positive = 0, live = 0;
    for (size_t i = first; i < first + block; i++) {
      live += i < rows;
      for (size_t j = 0; j < 4; j++) {
        float v = builtins_tile(x, rows, cols, i, j);
        tmax = fmaxf(tmax, v);
        tmin = fminf(tmin, v);
        total += (int32_t)(v * 16.0f);
        positive += v > 0.0f;
      }
    }
    for (size_t j = 0; j < 4; j++) rowsum += a * builtins_tile(x, rows, cols, r, j);
    float rowmax = builtins_tile(x, rows, cols, r, 0), centered = 0.0f;
    int32_t arg = 0;
    for (size_t j = 1; j < 4; j++)
      if (builtins_tile(x, rows, cols, r, j) > rowmax) {
        rowmax = builtins_tile(x, rows, cols, r, j);
        arg = (int32_t)j;
      }
    for (size_t j = 0; j < 4; j++) centered += builtins_tile(x, rows, cols, r, j) - rowmax;
    float ab = a * b;
    float *o = outf + 9 * r;
    o[0] = fmaf(a, b, c);
    o[1] = (float)(((double)a * (double)b - (double)ab) * 1073741824.0);
    o[2] = (float)pow((double)(fabsf(a) + 0.25f), (double)c);
    o[3] = 3.5f;
    o[4] = rowsum;
    o[5] = tmax;
    o[6] = tmin;
    o[7] = fmaxf(tmax, 0.5f) + fminf(tmin, -0.5f);
    o[8] = centered;
    int32_t *oi = outi + 6 * r;
    oi[0] = (int32_t)total;
    oi[1] = (int32_t)((rows > cols ? rows : cols) * 1000 + (p < 3 ? p : 3));
    oi[2] = (int32_t)(3 * r + cols);
    oi[3] = (int32_t)(positive + 1000 * live);
    oi[4] = (int32_t)((total < 0 ? -total : total) + 10000 * (int64_t)(block > 64 ? block : 64));
    oi[5] = arg;
  }
}

void kiln_ref_cas_lock(const int32_t *x, int32_t *sums, int32_t *olds, int32_t *cells, size_t rows,
                       size_t cols, size_t block) {
  for (size_t c = 0; c < cols; c++) {
    int64_t s = 0;
    for (size_t r = 0; r < rows; r++) s += x[r * cols + c];
    sums[c] = (int32_t)s;
  }
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < block; c++) {
      olds[r * block + c] = c < cols ? x[r * cols + c] : 0;
      if (c < cols) cells[r * cols + c] = c % 2 == 0 ? (int32_t)(c * 7) : x[r * cols + c];
    }
}

static float scan_tile(const float *x, size_t rows, size_t cols, size_t r, size_t c) {
  return r < rows && c < cols ? x[r * cols + c] : 0.0f;
}

void kiln_ref_scan_flip(const float *x, float *outf, int32_t *outi, size_t rows, size_t cols,
                        size_t br, size_t bc) {
  size_t plane = rows * bc;
  for (size_t r = 0; r < rows; r++) {
    size_t first = r / br * br;
    float s = 0.0f, p = 1.0f;
    int32_t n = 0;
    uint32_t q = 1;
    for (size_t c = 0; c < bc; c++) {
      float v = scan_tile(x, rows, cols, r, c);
      s += v;
      p *= v * 0.125f + 1.0f;
      n += v > 0.0f;
      q *= (uint32_t)(v > 0.0f) + 1u;
      float down = 0.0f;
      for (size_t i = first; i <= r; i++) down += scan_tile(x, rows, cols, i, c);
      int32_t up =
          0; /* row r of the flipped column sums: the sum down to row first + (first + br - 1 - r) */
      for (size_t i = first; i <= first + (first + br - 1 - r); i++)
        up += (int32_t)(scan_tile(x, rows, cols, i, c) * 16.0f);
      size_t at = r * bc + c;
      outf[at] = s;
      outf[plane + at] = scan_tile(x, rows, cols, r, bc - 1 - c);
      outf[2 * plane + at] = p;
      outf[3 * plane + at] = down;
      outi[at] = n;
      outi[plane + at] = (int32_t)q;
      outi[2 * plane + at] = up;
      /* reshape: pairs of row-major neighbours (c even, c + 1), and the tile reversed whole */
      outf[4 * plane + at] = c % 2 ? scan_tile(x, rows, cols, r, c - 1) + v : v;
      outi[3 * plane + at] =
          (int32_t)(scan_tile(x, rows, cols, first + (first + br - 1 - r), bc - 1 - c) * 16.0f);
    }
  }
}

static int64_t wrap_bits(uint64_t v, int bits) {
  if (bits >= 64) return (int64_t)v;
  uint64_t m = ((uint64_t)1 << bits) - 1, sign = (uint64_t)1 << (bits - 1);
  v &= m;
  return (int64_t)(v & sign ? v | ~m : v);
}

void kiln_ref_scan_line(const double *x, const double *y, const int64_t *xi, const int64_t *yi,
                        size_t start, size_t stride, size_t len, int bits, double *sum,
                        double *prod, int64_t *isum, int64_t *iprod) {
  double s = 0.0, p = 1.0;
  uint64_t is = 0, ip = 1;
  for (size_t k = 0; k < len; k++) {
    size_t i = start + k * stride;
    s += x[i];
    p *= y[i];
    is += (uint64_t)xi[i];
    ip *= (uint64_t)yi[i];
    sum[i] = s, prod[i] = p;
    isum[i] = wrap_bits(is, bits);
    iprod[i] = wrap_bits(ip, bits);
  }
}

static double gamma_f32(size_t i) {
  double iu = (double)i * ldexp(1.0, -24);
  return iu / (1.0 - iu);
}

void kiln_ref_scan_flip_bound(const float *x, float *bound, size_t rows, size_t cols, size_t br,
                              size_t bc) {
  size_t plane = rows * bc;
  for (size_t r = 0; r < rows; r++) {
    size_t first = r / br * br;
    double s = 0.0, p = 1.0;
    for (size_t c = 0; c < bc; c++) {
      double v = scan_tile(x, rows, cols, r, c);
      s += fabs(v);
      p *= v * 0.125 + 1.0;
      double down = 0.0;
      for (size_t i = first; i <= r; i++) down += fabs(scan_tile(x, rows, cols, i, c));
      size_t at = r * bc + c;
      bound[at] = (float)(2.0 * gamma_f32(c) * s);
      bound[plane + at] = 0.0f;
      bound[2 * plane + at] = (float)(2.0 * gamma_f32(c) * fabs(p) * (1.0 + 1e-6));
      bound[3 * plane + at] = (float)(2.0 * gamma_f32(r - first) * down);
      bound[4 * plane + at] = 0.0f;
    }
  }
}

/* The last nonzero of a sequence so far: the forward fill the kernel's combine makes. */
static int32_t fill_last(int32_t acc, int32_t v) { return v != 0 ? v : acc; }

void kiln_ref_scan_combine(const float *x, float *outf, int32_t *outi, float *outr, float *bound,
                           int32_t *outri, size_t rows, size_t cols, size_t br, size_t bc) {
  size_t plane = rows * bc;
  int levels = 0;
  while (((size_t)1 << levels) < bc) levels++;
  double u = ldexp(1.0, -24), gamma = levels * u / (1.0 - levels * u);
  for (size_t r = 0; r < rows; r++) {
    size_t first = r / br * br;
    float mx = -INFINITY, qs = 0.0f;
    int32_t fill = 0;
    double sum = 0.0, abs_sum = 0.0;
    uint32_t wsum = 0;
    uint8_t bsum = 0;
    uint32_t factor = 1, offset = 0;
    int32_t top_col = 0;
    for (size_t c = 0; c < bc; c++) {
      float v = scan_tile(x, rows, cols, r, c);
      int32_t z = (int32_t)(v * 4.0f) / 3;
      if (c == 0 || v > mx) top_col = (int32_t)c;
      mx = fmaxf(mx, v);
      factor *= (uint32_t)z;
      offset = (uint32_t)z * offset + (uint32_t)(int32_t)(v * 16.0f);
      qs += floorf(v * 16.0f) * 0.0625f;
      fill = fill_last(fill, z);
      sum += v;
      abs_sum += fabs(v);
      wsum += (uint32_t)(int32_t)(v * 268435456.0f);
      bsum = (uint8_t)(bsum + (uint8_t)z);
      float down = -INFINITY;
      int32_t down_fill = 0;
      for (size_t i = first; i <= r; i++) {
        float w = scan_tile(x, rows, cols, i, c);
        down = fmaxf(down, w);
        down_fill = fill_last(down_fill, (int32_t)(w * 4.0f) / 3);
      }
      size_t at = r * bc + c;
      outf[at] = mx;
      outf[plane + at] = qs;
      outf[2 * plane + at] = down;
      outi[at] = fill;
      outi[plane + at] = down_fill;
      outi[2 * plane + at] = (int32_t)offset;
      outi[3 * plane + at] = (int32_t)factor;
    }
    outr[3 * r] = (float)sum;
    bound[3 * r] = (float)(gamma * abs_sum + u * fabs(sum)) + FLT_MIN;
    outr[3 * r + 1] = outr[3 * r + 2] = mx;
    bound[3 * r + 1] = bound[3 * r + 2] = FLT_MIN;
    outri[3 * r] = (int32_t)wsum;
    outri[3 * r + 1] = (int8_t)bsum;
    outri[3 * r + 2] = top_col;
  }
}

void kiln_ref_scan_reverse(const float *x, float *outf, int32_t *outi, float *outr, float *outp,
                           int32_t *outpi, size_t rows, size_t cols, size_t br, size_t bc) {
  size_t plane = rows * bc;
  for (size_t r = 0; r < rows; r++) {
    size_t first = r / br * br;
    float qs = 0.0f, mx = -INFINITY, row_max = -INFINITY;
    int32_t fill = 0;
    uint32_t prod = 1, factor = 1, offset = 0;
    for (size_t c = bc; c-- > 0;) { /* from the row's end */
      float v = scan_tile(x, rows, cols, r, c);
      int32_t z = (int32_t)(v * 4.0f) / 3;
      qs += floorf(v * 16.0f) * 0.0625f;
      mx = fmaxf(mx, v);
      fill = fill_last(fill, z);
      prod *= (uint32_t)(int32_t)(int8_t)z;
      factor *= (uint32_t)z;
      offset = (uint32_t)z * offset + (uint32_t)(int32_t)(v * 16.0f);
      float up = 0.0f, flat = 0.0f;
      for (size_t i = first + br; i-- > r;)
        up += floorf(scan_tile(x, rows, cols, i, c) * 16.0f) * 0.0625f;
      for (size_t k = br * bc; k-- > (r - first) * bc + c;) /* the tile as one line, from its end */
        flat += floorf(scan_tile(x, rows, cols, first + k / bc, k % bc) * 16.0f) * 0.0625f;
      size_t at = r * bc + c;
      outf[at] = qs;
      outf[plane + at] = up;
      outf[2 * plane + at] = mx;
      outf[3 * plane + at] = flat;
      outi[at] = fill;
      outi[plane + at] = (int32_t)prod;
      outi[2 * plane + at] = (int32_t)offset;
      outi[3 * plane + at] = (int32_t)factor;
      row_max = fmaxf(row_max, v);
    }
    outr[r] = row_max;
  }
  for (size_t p = 0; p * br < rows; p++) {
    float qs = 0.0f, mx = -INFINITY, top = 0.0f;
    int32_t fill = 0, top_at = 0;
    for (size_t k = 0; k < br * bc; k++) { /* row-major over the tile */
      float v = scan_tile(x, rows, cols, p * br + k / bc, k % bc);
      qs += floorf(v * 16.0f) * 0.0625f;
      mx = fmaxf(mx, v);
      fill = fill_last(fill, (int32_t)(v * 4.0f) / 3);
      float h = floorf(v * 2.0f) * 0.5f;
      if (k == 0 || h > top) top = h, top_at = (int32_t)k;
    }
    outp[5 * p] = outp[5 * p + 2] = outp[5 * p + 3] = outp[5 * p + 4] = qs;
    outp[5 * p + 1] = mx;
    outpi[2 * p] = fill;
    outpi[2 * p + 1] = top_at;
  }
}

void kiln_ref_argmax_all(const float *x, int32_t *out, size_t rows, size_t cols, size_t br,
                         size_t bc) {
  for (size_t p = 0; p * br < rows; p++) {
    size_t amax = 0, amin = 0, imax = 0, first_off = SIZE_MAX;
    int32_t sum = 0;
    for (size_t k = 0; k < br * bc; k++) { /* row-major over the tile; strict: the first wins */
      float v = scan_tile(x, rows, cols, p * br + k / bc, k % bc);
      float bmax = scan_tile(x, rows, cols, p * br + amax / bc, amax % bc);
      float bmin = scan_tile(x, rows, cols, p * br + amin / bc, amin % bc);
      int32_t bi = (int32_t)scan_tile(x, rows, cols, p * br + imax / bc, imax % bc);
      if (v > bmax) amax = k;
      if (v < bmin) amin = k;
      if ((int32_t)v > bi) imax = k;
      if (!(v > 0.0f) && first_off == SIZE_MAX) first_off = k;
      sum += (int32_t)v;
    }
    int32_t *o = out + 8 * p;
    o[0] = o[4] = o[6] = (int32_t)amax;
    o[1] = o[7] = (int32_t)amin;
    o[2] = (int32_t)imax;
    o[3] =
        first_off == SIZE_MAX ? 0 : (int32_t)first_off; /* every lane true: argmin of all 1s is 0 */
    o[5] = sum;
  }
}

static int ascending_f32(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static int ascending_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

void kiln_ref_sort_rows(const float *x, float *outf, int32_t *outi, size_t rows, size_t cols,
                        size_t bc) {
  size_t plane = rows * bc;
  for (size_t r = 0; r < rows; r++) {
    float *up = outf + r * bc, *down = outf + plane + r * bc;
    int32_t *halves = outi + r * bc, *mask = outi + plane + r * bc;
    for (size_t c = 0; c < bc; c++) {
      float v = scan_tile(x, rows, cols, r, c);
      up[c] = v;
      halves[c] = (int32_t)(v * 4.0f);
      mask[c] = v > 0.0f;
    }
    qsort(up, bc, sizeof *up, ascending_f32);
    for (size_t c = 0; c < bc; c++) down[c] = up[bc - 1 - c];
    qsort(halves, bc / 2, sizeof *halves, ascending_i32);
    qsort(halves + bc / 2, bc / 2, sizeof *halves, ascending_i32);
    qsort(mask, bc, sizeof *mask, ascending_i32);
  }
}

/* The n values of tile t's line from `first` with stride `step` (0 past rows and cols; tile
 * elements are r, c over its br x bc) sorted ascending into line. */
static void sorted_line_f32(const float *x, size_t rows, size_t cols, size_t bc, size_t first,
                            size_t step, size_t n, size_t row0, float *line) {
  for (size_t i = 0; i < n; i++) {
    size_t e = first + i * step;
    line[i] = scan_tile(x, rows, cols, row0 + e / bc, e % bc);
  }
  qsort(line, n, sizeof *line, ascending_f32);
}

void kiln_ref_sort_axes(const float *x, float *outf, int32_t *outi, size_t rows, size_t cols,
                        size_t br, size_t bc, size_t q) {
  size_t plane = rows * bc, mid = bc / q, n = br > mid ? br : mid;
  float *line = malloc(n * sizeof *line);
  int32_t *ints = malloc(n * sizeof *ints);
  if (!line || !ints) abort();
  for (size_t row0 = 0; row0 < rows; row0 += br) {
    for (size_t c = 0; c < bc; c++) { /* axis 0: each column of the program's tile */
      sorted_line_f32(x, rows, cols, bc, c, bc, br, row0, line);
      for (size_t i = 0; i < br && row0 + i < rows; i++) {
        outf[(row0 + i) * bc + c] = line[i];
        outf[plane + (row0 + i) * bc + c] = line[br - 1 - i];
      }
    }
    for (size_t i = 0; i < br && row0 + i < rows; i++) /* the middle axis of [br, bc / q, q] */
      for (size_t j = 0; j < q; j++) {
        sorted_line_f32(x, rows, cols, bc, i * bc + j, q, mid, row0, line);
        for (size_t m = 0; m < mid; m++) {
          float v = scan_tile(x, rows, cols, row0 + i, m * q + j);
          ints[m] = (int32_t)(v * 4.0f);
        }
        qsort(ints, mid, sizeof *ints, ascending_i32);
        for (size_t m = 0; m < mid; m++) {
          size_t at = (row0 + i) * bc + m * q + j;
          outf[2 * plane + at] = line[m];
          outi[at] = ints[mid - 1 - m];
        }
      }
  }
  free(line), free(ints);
}

void kiln_ref_trans3d(const float *x, float *outf, int32_t *outi, size_t progs, size_t a, size_t b,
                      size_t c) {
  static const int perms[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {1, 0, 2}, {2, 1, 0}};
  size_t n = a * b * c, plane = progs * n, dims[3] = {a, b, c};
  for (size_t p = 0; p < progs; p++) {
    const float *blk = x + p * n;
    for (int k = 0; k < 6; k++) {
      const int *pm = perms[k];
      size_t od[3] = {dims[pm[0]], dims[pm[1]], dims[pm[2]]};
      for (size_t i = 0; i < od[0]; i++)
        for (size_t j = 0; j < od[1]; j++)
          for (size_t l = 0; l < od[2]; l++) {
            size_t src[3], o[3] = {i, j, l};
            for (int q = 0; q < 3; q++) src[pm[q]] = o[q];
            float v = blk[(src[0] * b + src[1]) * c + src[2]];
            outf[k * plane + p * n + (i * od[1] + j) * od[2] + l] = v;
            if (k == 5) outi[p * n + (i * od[1] + j) * od[2] + l] = (int8_t)(int32_t)(v * 4.0f);
          }
    }
    for (size_t i = 0; i < b; i++)
      for (size_t j = 0; j < a; j++) outf[6 * plane + p * n + i * a + j] = blk[j * b + i];
  }
}

void kiln_ref_rand_normal(int32_t *bits, float *normal, size_t n, int32_t seed, int32_t first) {
  for (size_t i = 0; i < n; i++) {
    int32_t o = (int32_t)((uint32_t)first + (uint32_t)i);
    bits[i] = (int32_t)kiln_ref_rand_bits(seed, o);
    double u1 = 1.0 - (double)kiln_ref_rand(seed, o);
    double u2 = (double)kiln_ref_rand((int32_t)((uint32_t)seed ^ 0x6A09E667u), o);
    normal[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
  }
}

void kiln_ref_join_split(const float *x, const float *y, float *outf, int32_t *outi, size_t progs,
                         size_t r, size_t c) {
  size_t n = r * c, plane = progs * 2 * n, half = r / 2;
  for (size_t p = 0; p < progs; p++) {
    size_t base = p * 2 * n;
    const float *a = x + base, *b = y + base;
    float *o = outf + base;
    for (size_t i = 0; i < r; i++)
      for (size_t j = 0; j < c; j++)
        for (size_t t = 0; t < 2; t++) {
          float v = t ? b[i * c + j] : a[i * c + j];
          o[(i * c + j) * 2 + t] = v;                                /* join */
          o[plane + i * 2 * c + 2 * j + t] = v;                      /* interleave */
          o[2 * plane + t * n + i * c + j] = v;                      /* cat along 0 */
          o[3 * plane + i * 2 * c + t * c + j] = v;                  /* cat along 1 */
          o[4 * plane + t * n + i * c + j] = a[(i * c + j) * 2 + t]; /* split: evens, odds */
        }
    float *o5 = o + 5 * plane;
    for (size_t j = 0; j < c; j++) {
      o5[j] = a[j], o5[c + j] = b[j];
      o5[2 * c + 2 * j] = a[j], o5[2 * c + 2 * j + 1] = b[j];
      o5[4 * c + 2 * j] = a[j], o5[4 * c + 2 * j + 1] = 0.25f;
    }
    o5[6 * c] = a[0], o5[6 * c + 1] = b[0];
    for (size_t i = 0; i < 2; i++)
      for (size_t k = 0; k < half; k++)
        for (size_t j = 0; j < c; j++)
          for (size_t t = 0; t < 2; t++) {
            float v = (t ? b : a)[(i * half + k) * c + j];
            o[6 * plane + (i * half + k) * 2 * c + t * c + j] = v;
            o[7 * plane + (i * r + t * half + k) * c + j] = v;
          }
    for (size_t k = 0; k < n; k++) {
      outi[base + k] = (int8_t)(int)(4.0f * a[k]);
      outi[base + n + k] = (int8_t)(int)(4.0f * b[k]);
      outi[plane + base + k] = a[k] > b[k];
      outi[plane + base + n + k] = (a[k] <= b[k]) * 2;
    }
  }
}

void kiln_ref_swizzle2d(size_t si, size_t sj, size_t sg, int32_t *i2, int32_t *j2) {
  size_t k = 0;
  for (size_t first = 0; first < si; first += sg) {
    size_t rows = si - first < sg ? si - first : sg;
    for (size_t j = 0; j < sj; j++)
      for (size_t i = 0; i < rows; i++, k++) i2[k] = (int32_t)(first + i), j2[k] = (int32_t)j;
  }
}

/* IEEE maximum and minimum (arith.maximumf/minimumf): NaN if either is, -0 below +0. */
static float ref_maximum(float a, float b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}

static float ref_minimum(float a, float b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}

void kiln_ref_int_helpers(const int32_t *a, const int32_t *b, const float *f, size_t n,
                          size_t progs, size_t si, size_t sj, size_t sg, int32_t *outi,
                          uint32_t *outu, float *outf) {
  for (size_t k = 0; k < n; k++) {
    outi[k] = (int32_t)(uint32_t)((uint64_t)((int64_t)a[k] * b[k]) >> 32);
    outu[k] = (uint32_t)(((uint64_t)(uint32_t)a[k] * (uint32_t)b[k]) >> 32);
    outu[n + k] = (uint32_t)(((uint64_t)(uint32_t)a[k] * 4000000000u) >> 32);
    outf[k] = ref_minimum(ref_maximum(f[k], -1.5f), 2.0f);
    float h = kiln_f16_to_f32(kiln_f32_to_f16(f[k]));
    float lo = kiln_f16_to_f32(kiln_f32_to_f16(f[k] * 0.5f));
    outf[n + k] = ref_minimum(ref_maximum(h, lo), 1.0f);
    int32_t hi = (int32_t)((uint32_t)b[k] + 1000000u);
    int32_t up = a[k] > b[k] ? a[k] : b[k];
    outi[n + k] = up < hi ? up : hi;
  }
  size_t cells = si * sj < n ? si * sj : n;
  int32_t *i2 = malloc(si * sj * sizeof *i2), *j2 = malloc(si * sj * sizeof *j2);
  kiln_ref_swizzle2d(si, sj, sg, i2, j2);
  for (size_t k = 0; k < cells; k++) outi[2 * n + k] = i2[k], outi[3 * n + k] = j2[k];
  free(i2), free(j2);
  int32_t *pi = malloc(progs * 3 * sizeof *pi), *pj = malloc(progs * 3 * sizeof *pj);
  kiln_ref_swizzle2d(progs, 3, 2, pi, pj);
  for (size_t p = 0; p < progs; p++)
    outi[4 * n + 2 * p] = pi[p * 3 + 2], outi[4 * n + 2 * p + 1] = pj[p * 3 + 2];
  free(pi), free(pj);
}

/* src[k] for k in [0, len), else the lowest value (gather's rule for an index outside the axis) */
static float pick_f(const float *src, int64_t k, size_t len, size_t stride) {
  return k >= 0 && (size_t)k < len ? src[(size_t)k * stride] : -INFINITY;
}

void kiln_ref_gather_hist(const float *x, const int32_t *idx, const int32_t *lab, float *outf,
                          int32_t *outi, size_t r, size_t c, size_t bins, size_t n_lab, size_t n) {
  size_t rc = r * c, h = r / 2;
  const int32_t *ia = idx, *ib = idx + 2 * rc, *j = idx + 4 * rc, *ic = idx + 4 * rc + c;
  for (size_t q = 0; q < 2 * r; q++) /* along axis 0: [2r, c] */
    for (size_t k = 0; k < c; k++) {
      int32_t i = ia[q * c + k];
      bool in = i >= 0 && (size_t)i < r;
      outf[q * c + k] = pick_f(x + k, i, r, c);
      int32_t iu = (uint8_t)i; /* i as u8: -1 is 255 */
      outi[2 * rc + q * c + k] =
          iu < (int32_t)r ? (uint8_t)(int)((x[(size_t)iu * c + k] + 8.0f) * 16.0f) : 0;
      outi[4 * rc + q * c + k] =
          in ? (int32_t)(uint32_t)(int64_t)(x[(size_t)i * c + k] * 100000000.0f) : 0;
    }
  for (size_t q = 0; q < r; q++) /* along axis 1: [r, 2c] */
    for (size_t k = 0; k < 2 * c; k++) {
      int32_t i = ib[q * 2 * c + k];
      bool in = i >= 0 && (size_t)i < c;
      outf[2 * rc + q * 2 * c + k] = pick_f(x + q * c, i, c, 1);
      outi[q * 2 * c + k] = in ? (int8_t)(int)(4.0f * x[q * c + (size_t)i]) : -128;
    }
  for (size_t k = 0; k < c; k++) outf[4 * rc + k] = pick_f(x, j[k], c, 1);
  for (size_t a = 0; a < 2; a++) /* [2, r/2, c] along axis 1 */
    for (size_t q = 0; q < h; q++)
      for (size_t k = 0; k < c; k++) {
        size_t o = (a * h + q) * c + k;
        outf[4 * rc + c + o] = pick_f(x + a * h * c + k, ic[o], h, c);
      }
  int32_t *hist = outi + 6 * rc, *masked = hist + bins;
  for (size_t b = 0; b < 2 * bins; b++) hist[b] = 0;
  for (size_t k = 0; k < n_lab; k++)
    if (lab[k] >= 0 && (size_t)lab[k] < bins) {
      hist[lab[k]]++;
      if (k < n) masked[lab[k]]++;
    }
}

void kiln_ref_rope(const float *x, float *out, size_t rows, size_t seq, size_t heads, size_t stride,
                   size_t d) {
  for (size_t r = 0; r < rows; r++) {
    double pos = (double)((r / heads) % seq);
    for (size_t i = 0; i < d / 2; i++) {
      double a = pos * pow(10000.0, -2.0 * (double)i / (double)d);
      double x0 = x[r * stride + 2 * i], x1 = x[r * stride + 2 * i + 1];
      out[r * stride + 2 * i] = (float)(x0 * cos(a) - x1 * sin(a));
      out[r * stride + 2 * i + 1] = (float)(x0 * sin(a) + x1 * cos(a));
    }
  }
}

/* One element of a tensor as a tensor descriptor reads it: 0 outside [0, extent) in any dim. */
static float desc_elem(const float *t, const long *idx, const long *extent, const long *stride,
                       int rank) {
  long off = 0;
  for (int k = 0; k < rank; k++) {
    if (idx[k] < 0 || idx[k] >= extent[k]) return 0.0f;
    off += idx[k] * stride[k];
  }
  return t[off];
}

void kiln_ref_tensor_desc(const KilnRefTensorDesc *g, const float *x, const float *u,
                          const float *z, float *seen, float *y, uint8_t *ywrote, float *seen1,
                          float *seen3, float *w, uint8_t *wwrote) {
  const long ext2[2] = {g->m, g->n}, str2[2] = {g->sx, 1};
  const long ext3[3] = {g->d0, g->d1, g->d2}, str3[3] = {g->s0, g->s1, 1};
  for (long p = 0; p < g->gp; p++)
    for (long q = 0; q < g->gq; q++) {
      long k = p * g->gq + q;
      for (long i = 0; i < g->bm; i++)
        for (long j = 0; j < g->bn; j++) {
          long at[2] = {p * g->bm - g->sm + i, q * g->bn - g->sn + j};
          float t = desc_elem(x, at, ext2, str2, 2);
          seen[(k * g->bm + i) * g->bn + j] = t;
          if (at[0] >= 0 && at[0] < g->m && at[1] >= 0 && at[1] < g->n) {
            y[at[0] * g->sy + at[1]] = t * 2.0f + 1.0f;
            ywrote[at[0] * g->sy + at[1]] = 1;
          }
        }
      for (long i = 0; i < g->b1; i++) {
        long at = k * g->b1 - 5 + i, one = 1;
        seen1[k * g->b1 + i] = desc_elem(u, &at, &g->len, &one, 1);
      }
      for (long a = 0; a < 2; a++)
        for (long b = 0; b < 4; b++)
          for (long c = 0; c < 8; c++) {
            long at[3] = {2 * k - 1 + a, 1 + b, 3 + c};
            float t = desc_elem(z, at, ext3, str3, 3);
            seen3[k * 64 + a * 32 + b * 8 + c] = t;
            if (at[0] >= 0 && at[0] < g->d0 && at[1] < g->d1 && at[2] < g->d2) {
              long off = at[0] * g->s0 + at[1] * g->s1 + at[2];
              w[off] = t * 3.0f;
              wwrote[off] = 1;
            }
          }
    }
}

void kiln_ref_static_range(const float *x, float *out, size_t n, size_t b) {
  size_t g = (n + b - 1) / b;
  for (size_t i = 0; i < n; i++) {
    float acc = 0.0f;
    for (int k = 0; k < 4; k++) acc = acc + x[i] * (float)(k + 1);
    out[i] = acc;
  }
  for (size_t p = 0; p < g; p++)
    for (int j = 3; j >= 0; j--) {
      size_t w = (size_t)1 << j;
      for (size_t t = 0; t < w; t++) {
        float v = p * b + t < n ? x[p * b + t] : 0.0f;
        out[n + p * 15 + (w - 1) + t] = v * (float)j;
      }
    }
  for (size_t i = 0; i < g * b; i++) {
    float v = i < n ? x[i] : 0.0f, acc = 0.0f;
    for (int r = 0; r < 3; r++)
      for (int k = 0; k < 8; k += 2)
        if (k != 4) acc = acc + v * (float)(10 * r + k);
    out[n + 15 * g + i] = acc;
  }
}
