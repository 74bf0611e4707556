/* test_rows_checked.c — the size rules of the BERT libraries whose rows come from the grid
 * (kb_ln_f32, kb_xent_f32, kb_attn_d16_f32 compiled with -DKILN_LIB_CHECKED,
 * runtime/bert/CMakeLists.txt), called directly on the cpu device.
 *
 * layernorm_fwd and xent take no row count and attention no batch count (the grid's x and y
 * carry them), so their rules are the lower bound every call touches: one row of `cols` /
 * `classes` and one statistic; one sequence of every head in Q's strides,
 * (S - 1) * ss + (H - 1) * sh + D, which K and V, H * D and 2 H * D into the fused QKV buffer
 * as the trainer passes them, also hold. Per family one call with buffers of exactly those
 * extents runs and is compared with a double-precision reference, and one with a buffer one
 * element short is refused with KILN_RT_ERROR_INVALID_ARGUMENT and the documented message
 * (docs/library.md, "checked mode") before anything runs: the output's sentinel is untouched.
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

/* One program: the one row the buffers hold. */
static void one_row_ln(const kb_ln_f32_layernorm_fwd_config *cfg, void *user, uint32_t g[3]) {
  (void)cfg, (void)user;
  g[0] = g[1] = g[2] = 1;
}
static void one_row_xent(const kb_xent_f32_xent_fwd_config *cfg, void *user, uint32_t g[3]) {
  (void)cfg, (void)user;
  g[0] = g[1] = g[2] = 1;
}

/* layernorm_fwd over one row of COLS: every row buffer `cols`, mean and rstd 1 element. */
enum { COLS = 20 };

static void layernorm_rule(KilnRtDevice *dev, kb_ln_f32 *ln) {
  float *x = alloc_bytes(dev, COLS * 4), *x_short = alloc_bytes(dev, (COLS - 1) * 4);
  float *res = alloc_bytes(dev, COLS * 4), *gamma = alloc_bytes(dev, COLS * 4);
  float *beta = alloc_bytes(dev, COLS * 4), *s = alloc_bytes(dev, COLS * 4);
  float *y = alloc_bytes(dev, COLS * 4), *mean = alloc_bytes(dev, 4), *rstd = alloc_bytes(dev, 4);
  if (!x || !x_short || !res || !gamma || !beta || !s || !y || !mean || !rstd) {
    CHECK(0, "allocations: %s", kiln_rt_last_error());
    return;
  }
  fill(x, COLS, 1);
  fill(x_short, COLS - 1, 1);
  fill(res, COLS, 2);
  fill(gamma, COLS, 3);
  fill(beta, COLS, 4);
  const float eps = 1e-5f;
  sentinel(y, COLS);
  KilnRtStatus st = kb_ln_f32_layernorm_fwd(ln, x, res, gamma, beta, s, y, mean, rstd, COLS, eps,
                                            one_row_ln, NULL, NULL);
  CHECK(st == KILN_RT_OK, "layernorm_fwd: %s", kiln_rt_last_error());
  if (st == KILN_RT_OK) {
    double mu = 0, var = 0;
    for (int c = 0; c < COLS; c++) mu += (double)x[c] + res[c];
    mu /= COLS;
    for (int c = 0; c < COLS; c++) var += ((double)x[c] + res[c] - mu) * (x[c] + res[c] - mu);
    double r = 1.0 / sqrt(var / COLS + eps);
    int wrong = !close_to(mean[0], mu) + !close_to(rstd[0], r);
    for (int c = 0; c < COLS; c++)
      wrong += !close_to(y[c], ((double)x[c] + res[c] - mu) * r * gamma[c] + beta[c]) +
               !close_to(s[c], (double)x[c] + res[c]);
    CHECK(wrong == 0, "layernorm_fwd: %d values differ from the reference", wrong);
    printf("ok ran     layernorm_fwd, every buffer its one-row extent\n");
  }
  sentinel(y, COLS);
  refused("layernorm_fwd, x one element short of a row",
          kb_ln_f32_layernorm_fwd(ln, x_short, res, gamma, beta, s, y, mean, rstd, COLS, eps,
                                  one_row_ln, NULL, NULL),
          "kb_ln_f32_layernorm_fwd: buffer x needs 80 bytes (cols = 20 elements of 4 bytes) but 76 "
          "bytes are registered from x",
          y);
  float *all[] = {x, x_short, res, gamma, beta, s, y, mean, rstd};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kiln_rt_free(dev, all[i]);
}

/* xent_fwd over one row of CLASSES logits, label LABEL. */
enum { CLASSES = 7, LABEL = 3 };

static void xent_rule(KilnRtDevice *dev, kb_xent_f32 *xe) {
  float *x = alloc_bytes(dev, CLASSES * 4), *x_short = alloc_bytes(dev, (CLASSES - 1) * 4);
  int32_t *labels = alloc_bytes(dev, 4);
  float *loss = alloc_bytes(dev, 4), *lse = alloc_bytes(dev, 4);
  if (!x || !x_short || !labels || !loss || !lse) {
    CHECK(0, "allocations: %s", kiln_rt_last_error());
    return;
  }
  fill(x, CLASSES, 5);
  fill(x_short, CLASSES - 1, 5);
  labels[0] = LABEL;
  sentinel(loss, 1);
  KilnRtStatus st =
      kb_xent_f32_xent_fwd(xe, x, labels, loss, lse, CLASSES, -100, one_row_xent, NULL, NULL);
  CHECK(st == KILN_RT_OK, "xent_fwd: %s", kiln_rt_last_error());
  if (st == KILN_RT_OK) {
    double sum = 0;
    for (int c = 0; c < CLASSES; c++) sum += exp((double)x[c]);
    double ref_lse = log(sum);
    CHECK(close_to(lse[0], ref_lse), "xent_fwd: lse %g, reference %g", lse[0], ref_lse);
    CHECK(close_to(loss[0], ref_lse - x[LABEL]), "xent_fwd: loss %g, reference %g", loss[0],
          ref_lse - x[LABEL]);
    printf("ok ran     xent_fwd, every buffer its one-row extent\n");
  }
  sentinel(loss, 1);
  refused(
      "xent_fwd, x one element short of a row",
      kb_xent_f32_xent_fwd(xe, x_short, labels, loss, lse, CLASSES, -100, one_row_xent, NULL, NULL),
      "kb_xent_f32_xent_fwd: buffer x needs 28 bytes (classes = 7 elements of 4 bytes) but "
      "24 bytes are registered from x",
      loss);
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, x_short);
  kiln_rt_free(dev, labels);
  kiln_rt_free(dev, loss);
  kiln_rt_free(dev, lse);
}

/* attn_fwd on one sequence (B = 1) of S positions, H heads of D = 16, Q, K, V read in place
 * from a fused [S, 3, H, D] buffer as model.c passes them, O dense [S, H, D]. */
enum { S = 8, H = 2, D = 16, SS = 3 * H * D, OSS = H * D };
enum { Q_EXT = (S - 1) * SS + (H - 1) * D + D /* 704; the buffer is S * SS = 768 */ };

static void attn_grid(const kb_attn_d16_f32_attn_fwd_config *cfg, void *user, uint32_t g[3]) {
  (void)user;
  g[0] = (uint32_t)((S + cfg->BM - 1) / cfg->BM);
  g[1] = H; /* B * H, B = 1 */
  g[2] = 1;
}

/* o against softmax(scale Q K^T) V per head, in double. */
static void attn_reference_check(const float *qkv, const float *o, const float *lse) {
  int wrong = 0;
  for (int h = 0; h < H; h++)
    for (int i = 0; i < S; i++) {
      double sc[S], mx = -1e300, sum = 0;
      for (int j = 0; j < S; j++) {
        double dot = 0;
        for (int d = 0; d < D; d++)
          dot += (double)qkv[i * SS + h * D + d] * qkv[j * SS + H * D + h * D + d];
        sc[j] = dot * 0.25;
        mx = fmax(mx, sc[j]);
      }
      for (int j = 0; j < S; j++) sum += exp(sc[j] - mx);
      wrong += !close_to(lse[h * S + i], mx + log(sum));
      for (int d = 0; d < D; d++) {
        double ref = 0;
        for (int j = 0; j < S; j++)
          ref += exp(sc[j] - mx) / sum * qkv[j * SS + 2 * H * D + h * D + d];
        wrong += !close_to(o[i * OSS + h * D + d], ref);
      }
    }
  CHECK(wrong == 0, "attn_fwd: %d values differ from the reference", wrong);
}

static void attention_rule(KilnRtDevice *dev, kb_attn_d16_f32 *at) {
  float *qkv = alloc_bytes(dev, S * SS * 4), *q_short = alloc_bytes(dev, (Q_EXT - 1) * 4);
  float *o = alloc_bytes(dev, S * OSS * 4), *lse = alloc_bytes(dev, H * S * 4);
  int32_t *kv_len = alloc_bytes(dev, 4);
  if (!qkv || !q_short || !o || !lse || !kv_len) {
    CHECK(0, "allocations: %s", kiln_rt_last_error());
    return;
  }
  fill(qkv, S * SS, 6);
  fill(q_short, Q_EXT - 1, 6);
  kv_len[0] = S;
  float *k = qkv + H * D, *v = qkv + 2 * H * D;
  sentinel(o, S * OSS);
  KilnRtStatus st =
      kb_attn_d16_f32_attn_fwd(at, qkv, k, v, o, lse, kv_len, S, H, S * SS, D, SS, S * OSS, D, OSS,
                               0.25f, 0.0f, 12345, 0, attn_grid, NULL, NULL);
  CHECK(st == KILN_RT_OK, "attn_fwd: %s", kiln_rt_last_error());
  if (st == KILN_RT_OK) {
    attn_reference_check(qkv, o, lse);
    printf("ok ran     attn_fwd, K and V H*D and 2*H*D into the fused buffer\n");
  }
  sentinel(o, S * OSS);
  refused("attn_fwd, q one element short of a sequence",
          kb_attn_d16_f32_attn_fwd(at, q_short, k, v, o, lse, kv_len, S, H, S * SS, D, SS, S * OSS,
                                   D, OSS, 0.25f, 0.0f, 12345, 0, attn_grid, NULL, NULL),
          "kb_attn_d16_f32_attn_fwd: buffer q needs 2816 bytes ((S - 1) * ss + (H - 1) * sh + 16 "
          "= 704 elements of 4 bytes) but 2812 bytes are registered from q",
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
