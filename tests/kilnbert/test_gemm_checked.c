/* test_gemm_checked.c — the BERT gemm libraries' size rules in the checked mode
 * (kb_gemm0_f32 and kb_gemm3_f32 compiled with -DKILN_LIB_CHECKED, runtime/bert/CMakeLists.txt),
 * called directly on the cpu device with the strided layouts the trainer uses.
 *
 * Each buffer's rule is the extent its strides reach, (rows - 1) * row stride + (cols - 1) *
 * col stride + 1, so a buffer of exactly that extent runs and one a single element short is
 * refused with KILN_RT_ERROR_INVALID_ARGUMENT and the documented message (docs/library.md,
 * "checked mode": the bytes needed, the rule and its value, the bytes registered), before
 * anything runs: the output's sentinel is untouched. The short buffers here still hold the
 * dense count M * K (the rule the specs had before), which would not have caught them. Also a
 * pointer in no allocation, the bias and residual of the epilogue that reads them, colsum's row
 * stride, and sizes whose extent is near 2^62 elements (refused, not a crash).
 *
 * The calls that run are compared with a double-precision loop: inputs are multiples of 1/4
 * in [-1, 1] and K = 40, so every product and partial sum is a multiple of 1/16 below 2^10 in
 * magnitude and exact in f32 whatever the order; the tolerance is 0. */
#include "check.h"
#include "kb_gemm0_f32.h"
#include "kb_gemm3_f32.h"

#include <kiln/kilnrt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The dW layout (model.c linear_dw): C[M, N] = A B with A read transposed out of a [K, LDA]
 * buffer (sam = 1, sak = LDA), B out of a [K, LDB] one (sbk = LDB, sbn = 1), C rows LDC apart. */
enum { M = 24, N = 20, K = 40, LDA = 32, LDB = 24, LDC = 23 };
enum {
  A_EXT = (M - 1) * 1 + (K - 1) * LDA + 1, /* 1272 elements; M * K = 960 */
  B_EXT = (K - 1) * LDB + (N - 1) * 1 + 1, /* 956 */
  C_EXT = (M - 1) * LDC + (N - 1) * 1 + 1  /* 549 */
};

static float *alloc_floats(KilnRtDevice *dev, size_t n) {
  void *p = NULL;
  if (kiln_rt_malloc(dev, n * sizeof(float), &p) != KILN_RT_OK) return NULL;
  return p;
}

static void fill(float *x, size_t n, int seed) {
  for (size_t i = 0; i < n; i++) x[i] = (float)((int)((i * 7 + (size_t)seed) % 9) - 4) * 0.25f;
}

static void sentinel(float *c, size_t n) {
  for (size_t i = 0; i < n; i++) c[i] = -7.0f;
}

/* A refused call: INVALID_ARGUMENT, a message holding `words`, c's first element untouched. */
static void refused(const char *what, KilnRtStatus st, const char *words, const float *c) {
  CHECK(st == KILN_RT_ERROR_INVALID_ARGUMENT, "%s: status %s", what, kiln_rt_status_name(st));
  CHECK(strstr(kiln_rt_last_error(), words), "%s: message '%s' lacks '%s'", what,
        kiln_rt_last_error(), words);
  CHECK(c[0] == -7.0f, "%s: the kernel ran (c[0] = %g)", what, c[0]);
  printf("ok refused %s: %s\n", what, kiln_rt_last_error());
}

/* c against the double loop over the dW layout (+ bias[n] + res[m, n] with epi 3). */
static void computed(const char *what, KilnRtStatus st, const float *a, const float *b,
                     const float *c, const float *bias, const float *res) {
  CHECK(st == KILN_RT_OK, "%s: %s", what, kiln_rt_last_error());
  if (st != KILN_RT_OK) return;
  int wrong = 0;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double ref = bias ? (double)bias[n] + (double)res[m * LDC + n] : 0.0;
      for (int k = 0; k < K; k++) ref += (double)a[m + k * LDA] * (double)b[k * LDB + n];
      wrong += (double)c[m * LDC + n] != ref;
    }
  CHECK(wrong == 0, "%s: %d of %d elements differ from the reference", what, wrong, M * N);
  printf("ok ran     %s\n", what);
}

static void gemm_rules(KilnRtDevice *dev, kb_gemm0_f32 *g0, kb_gemm3_f32 *g3) {
  float *a = alloc_floats(dev, A_EXT), *a_short = alloc_floats(dev, A_EXT - 1);
  float *b = alloc_floats(dev, B_EXT), *b_short = alloc_floats(dev, B_EXT - 1);
  float *c = alloc_floats(dev, C_EXT), *c_short = alloc_floats(dev, C_EXT - 1);
  float *bias = alloc_floats(dev, N), *bias_short = alloc_floats(dev, N - 1);
  float *res = alloc_floats(dev, C_EXT), *res_short = alloc_floats(dev, C_EXT - 1);
  if (!a || !a_short || !b || !b_short || !c || !c_short || !bias || !bias_short || !res ||
      !res_short) {
    CHECK(0, "allocations: %s", kiln_rt_last_error());
    return;
  }
  fill(a, A_EXT, 1);
  fill(a_short, A_EXT - 1, 1);
  fill(b, B_EXT, 2);
  fill(b_short, B_EXT - 1, 2);
  fill(bias, N, 3);
  fill(res, C_EXT, 4);
  fill(res_short, C_EXT - 1, 4);
  float *zero = bias; /* EPI 0 reads neither bias nor res: its rule for them is 1 element */

  sentinel(c, C_EXT);
  computed("dW layout, every buffer its extent",
           kb_gemm0_f32_gemm(g0, a, b, c, zero, zero, M, N, K, 1, LDA, LDB, 1, LDC, 1, 1, NULL,
                             NULL, NULL),
           a, b, c, NULL, NULL);
  sentinel(c, C_EXT);
  refused("a one element short of its extent",
          kb_gemm0_f32_gemm(g0, a_short, b, c, zero, zero, M, N, K, 1, LDA, LDB, 1, LDC, 1, 1, NULL,
                            NULL, NULL),
          "kb_gemm0_f32_gemm: buffer a needs 5088 bytes ((M - 1) * sam + (K - 1) * sak + 1 = 1272 "
          "elements of 4 bytes) but 5084 bytes are registered from a",
          c);
  refused("b one element short of its extent",
          kb_gemm0_f32_gemm(g0, a, b_short, c, zero, zero, M, N, K, 1, LDA, LDB, 1, LDC, 1, 1, NULL,
                            NULL, NULL),
          "buffer b needs 3824 bytes ((K - 1) * sbk + (N - 1) * sbn + 1 = 956 elements of 4 "
          "bytes) but 3820 bytes are registered from b",
          c);
  sentinel(c_short, C_EXT - 1);
  refused("c one element short of its extent",
          kb_gemm0_f32_gemm(g0, a, b, c_short, zero, zero, M, N, K, 1, LDA, LDB, 1, LDC, 1, 1, NULL,
                            NULL, NULL),
          "buffer c needs 2196 bytes ((splits - 1) * M * scm + (M - 1) * scm + (N - 1) * scn + 1 = "
          "549 elements of 4 bytes) but 2192 bytes are registered from c",
          c_short);
  /* K in two parts: a C per part, M * LDC elements apart (model.c linear_dw's scratch) */
  refused("c one part of a split product",
          kb_gemm0_f32_gemm(g0, a, b, c, zero, zero, M, N, K, 1, LDA, LDB, 1, LDC, 1, 2, NULL, NULL,
                            NULL),
          "buffer c needs 4404 bytes ((splits - 1) * M * scm + (M - 1) * scm + (N - 1) * scn + 1 "
          "= 1101 elements of 4 bytes) but 2196 bytes are registered from c",
          c);
  float on_stack[4] = {0};
  refused("a pointer in no allocation",
          kb_gemm0_f32_gemm(g0, on_stack, b, c, zero, zero, M, N, K, 1, LDA, LDB, 1, LDC, 1, 1,
                            NULL, NULL, NULL),
          "kb_gemm0_f32_gemm: pointer a = ", c);
  /* M and sam at INT32_MAX: an extent of about 2^62 elements, refused before any arithmetic
   * on the pointers (and the grid of 2^31 / BM blocks is never computed) */
  refused("an extent near 2^62 elements",
          kb_gemm0_f32_gemm(g0, a, b, c, zero, zero, INT32_MAX, N, 2, INT32_MAX, 1, LDB, 1, LDC, 1,
                            1, NULL, NULL, NULL),
          "buffer a needs", c);

  /* EPI 3 (+ bias + res, res with c's strides) */
  sentinel(c, C_EXT);
  computed("EPI 3, bias and res their extents",
           kb_gemm3_f32_gemm(g3, a, b, c, bias, res, M, N, K, 1, LDA, LDB, 1, LDC, 1, 1, NULL, NULL,
                             NULL),
           a, b, c, bias, res);
  sentinel(c, C_EXT);
  refused("EPI 3, bias one element short",
          kb_gemm3_f32_gemm(g3, a, b, c, bias_short, res, M, N, K, 1, LDA, LDB, 1, LDC, 1, 1, NULL,
                            NULL, NULL),
          "buffer bias needs 80 bytes (N = 20 elements of 4 bytes) but 76 bytes are registered", c);
  refused("EPI 3, res one element short",
          kb_gemm3_f32_gemm(g3, a, b, c, bias, res_short, M, N, K, 1, LDA, LDB, 1, LDC, 1, 1, NULL,
                            NULL, NULL),
          "buffer res needs 2196 bytes ((M - 1) * scm + (N - 1) * scn + 1 = 549 elements of 4 "
          "bytes) but 2192 bytes are registered from res",
          c);
  float *all[] = {a, a_short, b, b_short, c, c_short, bias, bias_short, res, res_short};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kiln_rt_free(dev, all[i]);
}

/* colsum_f32 over one of three column blocks of rows 3 * COLS apart (the query/key/value
 * gradient's bias sums, model.c): x's rule is (rows - 1) * ld + cols. */
enum { ROWS = 12, COLS = 20, LD = 3 * COLS, X_EXT = (ROWS - 1) * LD + COLS /* 680 */ };

static void colsum_rule(KilnRtDevice *dev, kb_gemm0_f32 *g0) {
  float *qkv = alloc_floats(dev, ROWS * LD), *x_short = alloc_floats(dev, X_EXT - 1);
  float *out = alloc_floats(dev, COLS);
  if (!qkv || !x_short || !out) {
    CHECK(0, "allocations: %s", kiln_rt_last_error());
    return;
  }
  fill(qkv, ROWS * LD, 5);
  fill(x_short, X_EXT - 1, 5);
  float *x = qkv + 2 * COLS; /* the last block: exactly X_EXT elements to the end */
  sentinel(out, COLS);
  KilnRtStatus st = kb_gemm0_f32_colsum_f32(g0, x, out, ROWS, COLS, LD, 1, NULL, NULL, NULL);
  CHECK(st == KILN_RT_OK, "colsum: %s", kiln_rt_last_error());
  int wrong = 0;
  for (int c = 0; c < COLS && st == KILN_RT_OK; c++) {
    double ref = 0;
    for (int r = 0; r < ROWS; r++) ref += (double)x[r * LD + c];
    wrong += (double)out[c] != ref;
  }
  CHECK(wrong == 0, "colsum: %d of %d sums differ from the reference", wrong, COLS);
  printf("ok ran     colsum over the last of three column blocks\n");
  sentinel(out, COLS);
  refused("colsum, x one element short of its extent",
          kb_gemm0_f32_colsum_f32(g0, x_short, out, ROWS, COLS, LD, 1, NULL, NULL, NULL),
          "buffer x needs 2720 bytes ((rows - 1) * ld + cols = 680 elements of 4 bytes) but "
          "2716 bytes are registered from x",
          out);
  kiln_rt_free(dev, qkv);
  kiln_rt_free(dev, x_short);
  kiln_rt_free(dev, out);
}

int main(void) {
  KilnRtDevice *dev = NULL;
  kb_gemm0_f32 *g0 = NULL;
  kb_gemm3_f32 *g3 = NULL;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK || kb_gemm0_f32_create(dev, &g0) ||
      kb_gemm3_f32_create(dev, &g3)) {
    printf("FAIL setup: %s\n", kiln_rt_last_error());
    return 1;
  }
  gemm_rules(dev, g0, g3);
  colsum_rule(dev, g0);
  kb_gemm0_f32_destroy(g0);
  kb_gemm3_f32_destroy(g3);
  kiln_rt_device_destroy(dev);
  if (failures) printf("FAIL: %d checks\n", failures);
  return failures != 0;
}
