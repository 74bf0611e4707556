/* test_rows_checked.c — the size rules of the BERT libraries whose rows come from the grid
 * (kb_ln_f32, kb_xent_f32, kb_attn_d16_f32 compiled with -DKILN_LIB_CHECKED,
 * runtime/bert/CMakeLists.txt), called directly on the cpu device.
 *
 * layernorm_fwd and xent take no row count and attention no batch count: the grid's x holds the
 * rows and its y the batch times the heads, so their rules name the grid (grid0 * cols, grid0
 * statistics; (cdiv(grid1, H) - 1) * sb + (S - 1) * ss + (H - 1) * sh + D in Q's strides, which
 * K and V, H * D and 2 H * D into the fused QKV buffer as the trainer passes them, also hold)
 * and are checked once the call's grid is known (docs/library.md, "Size rules over the
 * grid"). Per family one call with buffers of exactly those extents over several rows or
 * sequences runs and is compared with a double-precision reference; then calls are refused
 * with KILN_RT_ERROR_INVALID_ARGUMENT and the documented message before anything runs (the
 * output's sentinel untouched): a buffer one element short, and the same exact buffers under a
 * grid of one row or sequence more (the rules of one row used to let both through).
 *
 * Tolerances: |got - ref| <= 1e-5 * max(1, |ref|), the f32 rounding of a sum over at most 16
 * terms and one exp / log / rsqrt (inputs are multiples of 1/8 in [-1, 1]). */
#include "check.h"
#include "kb_attn_d16_f32.h"
#include "kb_ln_f32.h"
#include "kb_xent_f32.h"

#include <kiln/kilnrt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const float SENTINEL = -7.0f;

static void *alloc_bytes(KilnRtDevice *dev, size_t n) {
  void *p = NULL;
  if (kiln_rt_malloc(dev, n, &p) != KILN_RT_OK) return NULL;
  return p;
}

static void fill(float *x, size_t n, int seed) {
  for (size_t i = 0; i < n; i++) x[i] = (float)((int)((i * 5 + (size_t)seed) % 17) - 8) * 0.125f;
}

static void sentinel(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = SENTINEL;
}

static int close_to(double got, double ref) {
  return fabs(got - ref) <= 1e-5 * fmax(1.0, fabs(ref));
}

/* A refused call: INVALID_ARGUMENT, a message holding `words`, out[0] still the sentinel. */
static void refused(const char *what, KilnRtStatus st, const char *words, const float *out) {
  CHECK(st == KILN_RT_ERROR_INVALID_ARGUMENT, "%s: status %s", what, kiln_rt_status_name(st));
  CHECK(strstr(kiln_rt_last_error(), words), "%s: message '%s' lacks '%s'", what,
        kiln_rt_last_error(), words);
  CHECK(out[0] == SENTINEL, "%s: the kernel ran (out[0] = %g)", what, out[0]);
  printf("ok refused %s: %s\n", what, kiln_rt_last_error());
}

/* One program a row: the count of rows at user. */
static void rows_ln(const kb_ln_f32_layernorm_fwd_config *cfg, void *user, uint32_t g[3]) {
  (void)cfg;
  g[0] = *(const uint32_t *)user;
  g[1] = g[2] = 1;
}
static void rows_xent(const kb_xent_f32_xent_fwd_config *cfg, void *user, uint32_t g[3]) {
  (void)cfg;
  g[0] = *(const uint32_t *)user;
  g[1] = g[2] = 1;
}

/* layernorm_fwd over ROWS rows of COLS: every row buffer ROWS * cols, mean and rstd ROWS. */
enum { ROWS = 3, COLS = 20 };

static void layernorm_check(const float *x, const float *res, const float *gamma, const float *beta,
                            const float *s, const float *y, const float *mean, const float *rstd,
                            float eps) {
  int wrong = 0;
  for (int r = 0; r < ROWS; r++) {
    const float *xr = x + r * COLS, *rr = res + r * COLS;
    double mu = 0, var = 0;
    for (int c = 0; c < COLS; c++) mu += (double)xr[c] + rr[c];
    mu /= COLS;
    for (int c = 0; c < COLS; c++) var += ((double)xr[c] + rr[c] - mu) * (xr[c] + rr[c] - mu);
    double rs = 1.0 / sqrt(var / COLS + eps);
    wrong += !close_to(mean[r], mu) + !close_to(rstd[r], rs);
    for (int c = 0; c < COLS; c++)
      wrong += !close_to(y[r * COLS + c], ((double)xr[c] + rr[c] - mu) * rs * gamma[c] + beta[c]) +
               !close_to(s[r * COLS + c], (double)xr[c] + rr[c]);
  }
  CHECK(wrong == 0, "layernorm_fwd: %d values differ from the reference", wrong);
}

static void layernorm_rule(KilnRtDevice *dev, kb_ln_f32 *ln) {
  const size_t n = ROWS * COLS;
  float *x = alloc_bytes(dev, n * 4), *x_short = alloc_bytes(dev, (n - 1) * 4);
  float *res = alloc_bytes(dev, n * 4), *gamma = alloc_bytes(dev, COLS * 4);
  float *beta = alloc_bytes(dev, COLS * 4), *s = alloc_bytes(dev, n * 4);
  float *y = alloc_bytes(dev, n * 4), *mean = alloc_bytes(dev, ROWS * 4);
  float *rstd = alloc_bytes(dev, ROWS * 4);
  if (!x || !x_short || !res || !gamma || !beta || !s || !y || !mean || !rstd) {
    CHECK(0, "allocations: %s", kiln_rt_last_error());
    return;
  }
  fill(x, n, 1);
  fill(x_short, n - 1, 1);
  fill(res, n, 2);
  fill(gamma, COLS, 3);
  fill(beta, COLS, 4);
  const float eps = 1e-5f;
  uint32_t rows = ROWS, more = ROWS + 1;
  sentinel(y, n);
  KilnRtStatus st = kb_ln_f32_layernorm_fwd(ln, x, res, gamma, beta, s, y, mean, rstd, COLS, eps,
                                            0.0f, 0, 0, rows_ln, &rows, NULL);
  CHECK(st == KILN_RT_OK, "layernorm_fwd: %s", kiln_rt_last_error());
  if (st == KILN_RT_OK) {
    layernorm_check(x, res, gamma, beta, s, y, mean, rstd, eps);
    printf("ok ran     layernorm_fwd, every buffer its extent over %d rows\n", ROWS);
  }
  sentinel(y, n);
  refused("layernorm_fwd, x one element short of 3 rows",
          kb_ln_f32_layernorm_fwd(ln, x_short, res, gamma, beta, s, y, mean, rstd, COLS, eps, 0.0f,
                                  0, 0, rows_ln, &rows, NULL),
          "kb_ln_f32_layernorm_fwd: buffer x needs 240 bytes (grid0 * cols = 60 elements of 4 "
          "bytes) but 236 bytes are registered from x",
          y);
  refused("layernorm_fwd, a grid of 4 rows over buffers of 3",
          kb_ln_f32_layernorm_fwd(ln, x, res, gamma, beta, s, y, mean, rstd, COLS, eps, 0.0f, 0, 0,
                                  rows_ln, &more, NULL),
          "kb_ln_f32_layernorm_fwd: buffer x needs 320 bytes (grid0 * cols = 80 elements of 4 "
          "bytes) but 240 bytes are registered from x",
          y);
  float *all[] = {x, x_short, res, gamma, beta, s, y, mean, rstd};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kiln_rt_free(dev, all[i]);
}

/* xent_fwd over ROWS rows of CLASSES logits, row r's label r + 1. */
enum { CLASSES = 7 };

static void xent_rule(KilnRtDevice *dev, kb_xent_f32 *xe) {
  const size_t n = ROWS * CLASSES;
  float *x = alloc_bytes(dev, n * 4), *x_short = alloc_bytes(dev, (n - 1) * 4);
  int32_t *labels = alloc_bytes(dev, ROWS * 4);
  float *loss = alloc_bytes(dev, ROWS * 4), *lse = alloc_bytes(dev, ROWS * 4);
  if (!x || !x_short || !labels || !loss || !lse) {
    CHECK(0, "allocations: %s", kiln_rt_last_error());
    return;
  }
  fill(x, n, 5);
  fill(x_short, n - 1, 5);
  for (int r = 0; r < ROWS; r++) labels[r] = r + 1;
  uint32_t rows = ROWS, more = ROWS + 1;
  sentinel(loss, ROWS);
  KilnRtStatus st =
      kb_xent_f32_xent_fwd(xe, x, labels, loss, lse, CLASSES, -100, rows_xent, &rows, NULL);
  CHECK(st == KILN_RT_OK, "xent_fwd: %s", kiln_rt_last_error());
  if (st == KILN_RT_OK) {
    for (int r = 0; r < ROWS; r++) {
      double sum = 0;
      for (int c = 0; c < CLASSES; c++) sum += exp((double)x[r * CLASSES + c]);
      double ref_lse = log(sum), ref_loss = ref_lse - x[r * CLASSES + labels[r]];
      CHECK(close_to(lse[r], ref_lse), "xent_fwd row %d: lse %g, reference %g", r, lse[r], ref_lse);
      CHECK(close_to(loss[r], ref_loss), "xent_fwd row %d: loss %g, reference %g", r, loss[r],
            ref_loss);
    }
    printf("ok ran     xent_fwd, every buffer its extent over %d rows\n", ROWS);
  }
  sentinel(loss, ROWS);
  refused(
      "xent_fwd, x one element short of 3 rows",
      kb_xent_f32_xent_fwd(xe, x_short, labels, loss, lse, CLASSES, -100, rows_xent, &rows, NULL),
      "kb_xent_f32_xent_fwd: buffer x needs 84 bytes (grid0 * classes = 21 elements of 4 bytes) "
      "but 80 bytes are registered from x",
      loss);
  refused("xent_fwd, a grid of 4 rows over buffers of 3",
          kb_xent_f32_xent_fwd(xe, x, labels, loss, lse, CLASSES, -100, rows_xent, &more, NULL),
          "kb_xent_f32_xent_fwd: buffer x needs 112 bytes (grid0 * classes = 28 elements of 4 "
          "bytes) but 84 bytes are registered from x",
          loss);
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, x_short);
  kiln_rt_free(dev, labels);
  kiln_rt_free(dev, loss);
  kiln_rt_free(dev, lse);
}

/* attn_fwd on B sequences of S positions, H heads of D = 16, Q, K, V read in place from a fused
 * [B, S, 3, H, D] buffer as model.c passes them, O dense [B, S, H, D]. */
enum { B = 2, S = 8, H = 2, D = 16, SS = 3 * H * D, SB = S * SS, OSS = H * D, OSB = S * OSS };
enum {
  Q_EXT = (B - 1) * SB + (S - 1) * SS + (H - 1) * D + D /* 1472; the buffer is B * SB = 1536 */
};

/* The batch at user: the grid's y is B * H. */
static void attn_grid(const kb_attn_d16_f32_attn_fwd_config *cfg, void *user, uint32_t g[3]) {
  g[0] = (uint32_t)((S + cfg->BM - 1) / cfg->BM);
  g[1] = *(const uint32_t *)user * H;
  g[2] = 1;
}

/* o against softmax(scale Q K^T) V per sequence and head, in double. */
static void attn_reference_check(const float *qkv, const float *o, const float *lse) {
  int wrong = 0;
  for (int b = 0; b < B; b++)
    for (int h = 0; h < H; h++)
      for (int i = 0; i < S; i++) {
        const float *sq = qkv + b * SB;
        double sc[S], mx = -1e300, sum = 0;
        for (int j = 0; j < S; j++) {
          double dot = 0;
          for (int d = 0; d < D; d++)
            dot += (double)sq[i * SS + h * D + d] * sq[j * SS + H * D + h * D + d];
          sc[j] = dot * 0.25;
          mx = fmax(mx, sc[j]);
        }
        for (int j = 0; j < S; j++) sum += exp(sc[j] - mx);
        wrong += !close_to(lse[(b * H + h) * S + i], mx + log(sum));
        for (int d = 0; d < D; d++) {
          double ref = 0;
          for (int j = 0; j < S; j++)
            ref += exp(sc[j] - mx) / sum * sq[j * SS + 2 * H * D + h * D + d];
          wrong += !close_to(o[b * OSB + i * OSS + h * D + d], ref);
        }
      }
  CHECK(wrong == 0, "attn_fwd: %d values differ from the reference", wrong);
}

/* attn_fwd with Q at q, K and V in the fused buffer qkv, the batch at *batch (the grid's y). */
static KilnRtStatus attn_call(kb_attn_d16_f32 *at, float *q, float *qkv, float *o, float *lse,
                              int32_t *kv_len, uint32_t *batch) {
  return kb_attn_d16_f32_attn_fwd(at, q, qkv + H * D, qkv + 2 * H * D, o, lse, kv_len, S, H, SB, D,
                                  SS, OSB, D, OSS, 0.25f, 0.0f, 12345, 0, attn_grid, batch, NULL);
}

static void attention_rule(KilnRtDevice *dev, kb_attn_d16_f32 *at) {
  float *qkv = alloc_bytes(dev, B * SB * 4), *q_short = alloc_bytes(dev, (Q_EXT - 1) * 4);
  float *o = alloc_bytes(dev, B * OSB * 4), *lse = alloc_bytes(dev, B * H * S * 4);
  int32_t *kv_len = alloc_bytes(dev, B * 4);
  if (!qkv || !q_short || !o || !lse || !kv_len) {
    CHECK(0, "allocations: %s", kiln_rt_last_error());
    return;
  }
  fill(qkv, B * SB, 6);
  fill(q_short, Q_EXT - 1, 6);
  for (int b = 0; b < B; b++) kv_len[b] = S;
  uint32_t batch = B, more = B + 1;
  sentinel(o, B * OSB);
  KilnRtStatus st = attn_call(at, qkv, qkv, o, lse, kv_len, &batch);
  CHECK(st == KILN_RT_OK, "attn_fwd: %s", kiln_rt_last_error());
  if (st == KILN_RT_OK) {
    attn_reference_check(qkv, o, lse);
    printf("ok ran     attn_fwd, %d sequences, K and V H*D and 2*H*D into the fused buffer\n", B);
  }
  sentinel(o, B * OSB);
  refused("attn_fwd, q one element short of 2 sequences",
          attn_call(at, q_short, qkv, o, lse, kv_len, &batch),
          "kb_attn_d16_f32_attn_fwd: buffer q needs 5888 bytes ((cdiv(grid1, H) - 1) * sb + "
          "(S - 1) * ss + (H - 1) * sh + 16 = 1472 elements of 4 bytes) but 5884 bytes are "
          "registered from q",
          o);
  refused("attn_fwd, a grid of 3 sequences over buffers of 2",
          attn_call(at, qkv, qkv, o, lse, kv_len, &more),
          "kb_attn_d16_f32_attn_fwd: buffer q needs 8960 bytes ((cdiv(grid1, H) - 1) * sb + "
          "(S - 1) * ss + (H - 1) * sh + 16 = 2240 elements of 4 bytes) but 6144 bytes are "
          "registered from q",
          o);
  kiln_rt_free(dev, qkv);
  kiln_rt_free(dev, q_short);
  kiln_rt_free(dev, o);
  kiln_rt_free(dev, lse);
  kiln_rt_free(dev, kv_len);
}

int main(void) {
  KilnRtDevice *dev = NULL;
  kb_ln_f32 *ln = NULL;
  kb_xent_f32 *xe = NULL;
  kb_attn_d16_f32 *at = NULL;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK || kb_ln_f32_create(dev, &ln) ||
      kb_xent_f32_create(dev, &xe) || kb_attn_d16_f32_create(dev, &at)) {
    printf("FAIL setup: %s\n", kiln_rt_last_error());
    return 1;
  }
  layernorm_rule(dev, ln);
  xent_rule(dev, xe);
  attention_rule(dev, at);
  kb_ln_f32_destroy(ln);
  kb_xent_f32_destroy(xe);
  kb_attn_d16_f32_destroy(at);
  kiln_rt_device_destroy(dev);
  if (failures) printf("FAIL: %d checks\n", failures);
  return failures != 0;
}
