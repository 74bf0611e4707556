/* speclib_test.c — the promises of an untuned library: `kiln lib` on the BERT gemm (f16, bias
 * epilogue, device emu) with no cache, from --args whose strides are the forward's
 * (y = x W^T: sak = 1, sbk = 1, scn = 1, row strides and sizes multiples of 16). The library
 * then holds the default config twice: specialized on those promises (unit strides compiled
 * in, 16-byte cp.async pipelines) and generic. Calls that keep every promise must run the
 * specialized copy, calls that break one (a row-major B: sbk = N; a ragged M) the generic one,
 * chosen per call; every result is checked against a C loop over the same f16 inputs (the
 * products are exact in f32, the sum is f32, the result is rounded to f16 once: relative
 * 2e-3 of max(1, |ref|) covers that one rounding and the summation order). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmspec.h"
#include "reference.h"
#include "libcall_util.h"

static int failures;

/* A (M x K) by strides, B (K x N) by strides, C (M x N) row-major, bias[N]. */
typedef struct Case {
  const char *what;
  int32_t M, N, K;
  int b_kmajor;    /* B lies as W[N][K] (the forward's weight): sbk = 1, sbn = K */
  int specialized; /* whether the call keeps every promise of the specialized copy */
} Case;

static int run_case(gemmspec *lib, KilnRtDevice *dev, const Case *c) {
  size_t M = (size_t)c->M, N = (size_t)c->N, K = (size_t)c->K;
  int32_t sam = c->K, sak = 1, sbk = c->b_kmajor ? 1 : c->N, sbn = c->b_kmajor ? c->K : 1;
  int32_t scm = c->N, scn = 1;
  uint16_t *a = calloc(M * K, 2), *b = calloc(K * N, 2), *bias = calloc(N, 2),
           *y = calloc(M * N, 2);
  float *ref = calloc(M * N, sizeof *ref);
  if (!a || !b || !bias || !y || !ref) return printf("FAIL %s: out of memory\n", c->what), 1;
  for (size_t i = 0; i < M * K; i++) a[i] = kiln_ref_f32_to_f16(libcall_input(i, 1));
  for (size_t i = 0; i < K * N; i++) b[i] = kiln_ref_f32_to_f16(libcall_input(i, 2));
  for (size_t i = 0; i < N; i++) bias[i] = kiln_ref_f32_to_f16(libcall_input(i, 3));
  for (size_t m = 0; m < M; m++)
    for (size_t n = 0; n < N; n++) {
      double acc = kiln_ref_f16_to_f32(bias[n]);
      for (size_t k = 0; k < K; k++)
        acc += (double)kiln_ref_f16_to_f32(a[m * (size_t)sam + k * (size_t)sak]) *
               kiln_ref_f16_to_f32(b[k * (size_t)sbk + n * (size_t)sbn]);
      ref[m * N + n] = (float)acc;
    }
  void *da = libcall_to_device(dev, a, M * K), *db = libcall_to_device(dev, b, K * N);
  void *dbias = libcall_to_device(dev, bias, N), *dy = libcall_to_device(dev, y, M * N);
  int bad = !da || !db || !dbias || !dy;
  KilnRtStatus st = bad ? KILN_RT_ERROR_OUT_OF_MEMORY
                        : gemmspec_gemm(lib, da, db, dy, dbias, dy, c->M, c->N, c->K, sam, sak, sbk,
                                        sbn, scm, scn, 1, NULL, NULL, NULL);
  if (st == KILN_RT_OK) st = kiln_rt_memcpy_dtoh(dev, y, dy, M * N * 2, NULL);
  bad |= st != KILN_RT_OK;
  double worst = 0.0;
  for (size_t i = 0; i < M * N && !bad; i++) {
    double err = fabs(kiln_ref_f16_to_f32(y[i]) - ref[i]) / fmax(1.0, fabs(ref[i]));
    worst = fmax(worst, err);
  }
  bad |= !(worst <= 2e-3);
  gemmspec_gemm_config cfg = gemmspec_gemm_pick(c->M, c->N, c->K, sam, sak, sbk, sbn, scm, scn, 1);
  int specialized = cfg.signature && cfg.signature[0];
  bad |= specialized != c->specialized;
  printf("%s %s: %dx%dx%d, %s variant (promises '%s'), max rel err %.2e (tol 2e-3), status %s\n",
         bad ? "FAIL" : "ok", c->what, c->M, c->N, c->K, specialized ? "specialized" : "generic",
         cfg.signature ? cfg.signature : "", worst, kiln_rt_status_name(st));
  kiln_rt_free(dev, da), kiln_rt_free(dev, db), kiln_rt_free(dev, dbias), kiln_rt_free(dev, dy);
  free(a), free(b), free(bias), free(y), free(ref);
  return bad;
}

int main(void) {
  KilnRtDevice *dev;
  gemmspec *lib;
  if (kiln_rt_device_create("emu", &dev) != KILN_RT_OK ||
      gemmspec_create(dev, &lib) != KILN_RT_OK) {
    printf("FAIL: %s\n", kiln_rt_last_error());
    return 1;
  }
  static const Case cases[] = {
      {"forward (W k-major), every promise kept", 160, 96, 80, 1, 1},
      {"row-major B (sbk = N breaks sbk=1)", 160, 96, 80, 0, 0},
      {"ragged M (77 breaks M%16)", 77, 96, 80, 1, 0},
      {"K tail inside the promises (K = 48 < BK steps)", 128, 64, 48, 1, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    failures += run_case(lib, dev, &cases[i]);
  gemmspec_destroy(lib);
  kiln_rt_device_destroy(dev);
  printf("%s\n", failures ? "FAILED" : "all ok");
  return failures != 0;
}
