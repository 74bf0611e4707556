/* tierlib_test.c — the promise tiers of an untuned library: `kiln lib` on the BERT bias+GELU
 * kernels (f16) with no cache, built twice: for emu (gelutier, TIER_DEVICE "emu") and for the
 * host (gelutiercpu, TIER_LIB_CPU defined, TIER_DEVICE "cpu"), from --args whose cols (128) is a multiple of 16. The
 * library holds the default config three times: promising cols%16, promising cols%8 and
 * generic. A call runs the most specialized copy whose promises it keeps: cols = 1024 the %16
 * copy, cols = 1000 and 24 (multiples of 8, not of 16) the %8 copy, cols = 1001 and 12 the
 * generic one; without the %8 tier the calls of 1000 and 24 columns fell to the generic copy.
 * Every result is checked against a C loop over the same f16 inputs: y = gelu(x + bias) with
 * erf, and dx = dy gelu'(x + bias); the kernels compute in f32 and round once to f16, the
 * erf polynomial errs by < 1.5e-7, so |got - ref| <= 2e-3 max(1, |ref|) covers the one
 * rounding (2^-11 relative) and the f32 arithmetic. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TIER_LIB_CPU
#include "gelutiercpu.h"
#define TIER(name)  gelutiercpu##name
#define TIER_DEVICE "cpu"
#else
#include "gelutier.h"
#define TIER(name)  gelutier##name
#define TIER_DEVICE "emu"
#endif
#include "reference.h"
#include "libcall_util.h"

static int failures;

typedef struct Case {
  int32_t rows, cols;
  const char *tier; /* the signature of the copy the call must run */
} Case;

static float input(size_t i, unsigned salt) {
  return kiln_ref_round_f16((float)((i * 2654435761u + salt) % 4001u) / 1000.0f - 2.0f);
}

static double gelu_ref(double v) { return 0.5 * v * (1.0 + erf(v / sqrt(2.0))); }

static double gelu_grad_ref(double v) {
  return 0.5 * (1.0 + erf(v / sqrt(2.0))) + v * exp(-0.5 * v * v) / sqrt(2.0 * M_PI);
}

/* The largest error relative to max(1, |ref|) of got (f16) against ref. */
static double worst_error(const uint16_t *got, const double *ref, size_t n) {
  double worst = 0.0;
  for (size_t i = 0; i < n; i++)
    worst = fmax(worst, fabs(kiln_ref_f16_to_f32(got[i]) - ref[i]) / fmax(1.0, fabs(ref[i])));
  return worst;
}

static int run_case(TIER() * lib, KilnRtDevice *dev, const Case *c) {
  size_t R = (size_t)c->rows, C = (size_t)c->cols, n = R * C;
  uint16_t *x = calloc(n, 2), *bias = calloc(C, 2), *dy = calloc(n, 2), *out = calloc(n, 2);
  double *yref = calloc(n, sizeof *yref), *dxref = calloc(n, sizeof *dxref);
  if (!x || !bias || !dy || !out || !yref || !dxref) return printf("FAIL: out of memory\n"), 1;
  for (size_t i = 0; i < n; i++) x[i] = kiln_ref_f32_to_f16(input(i, 1));
  for (size_t i = 0; i < n; i++) dy[i] = kiln_ref_f32_to_f16(input(i, 2));
  for (size_t i = 0; i < C; i++) bias[i] = kiln_ref_f32_to_f16(input(i, 3));
  for (size_t i = 0; i < n; i++) {
    double v = (double)kiln_ref_f16_to_f32(x[i]) + kiln_ref_f16_to_f32(bias[i % C]);
    yref[i] = gelu_ref(v);
    dxref[i] = kiln_ref_f16_to_f32(dy[i]) * gelu_grad_ref(v);
  }
  void *dx_ = libcall_to_device(dev, x, n), *db = libcall_to_device(dev, bias, C),
       *ddy = libcall_to_device(dev, dy, n);
  void *dout = libcall_to_device(dev, out, n);
  int bad = !dx_ || !db || !ddy || !dout;
  KilnRtStatus st =
      bad ? KILN_RT_ERROR_OUT_OF_MEMORY
          : TIER(_bias_gelu_fwd)(lib, dx_, db, dout, c->rows, c->cols, NULL, NULL, NULL);
  if (st == KILN_RT_OK) st = kiln_rt_memcpy_dtoh(dev, out, dout, n * 2, NULL);
  double werr_f = st == KILN_RT_OK ? worst_error(out, yref, n) : INFINITY;
  if (st == KILN_RT_OK)
    st = TIER(_bias_gelu_bwd)(lib, dx_, db, ddy, dout, c->rows, c->cols, NULL, NULL, NULL);
  if (st == KILN_RT_OK) st = kiln_rt_memcpy_dtoh(dev, out, dout, n * 2, NULL);
  double werr_b = st == KILN_RT_OK ? worst_error(out, dxref, n) : INFINITY;
  bad |= st != KILN_RT_OK || !(werr_f <= 2e-3) || !(werr_b <= 2e-3);
  TIER(_bias_gelu_fwd_config) cf = TIER(_bias_gelu_fwd_pick)(c->rows, c->cols);
  TIER(_bias_gelu_bwd_config) cb = TIER(_bias_gelu_bwd_pick)(c->rows, c->cols);
  const char *sf = cf.signature ? cf.signature : "", *sb = cb.signature ? cb.signature : "";
  bad |= strcmp(sf, c->tier) != 0 || strcmp(sb, c->tier) != 0;
  printf("%s " TIER_DEVICE
         " rows=%d cols=%d: copies '%s' / '%s' (want '%s'), max rel err fwd %.2e bwd %.2e "
         "(tol 2e-3), status %s\n",
         bad ? "FAIL" : "ok", c->rows, c->cols, sf, sb, c->tier, werr_f, werr_b,
         kiln_rt_status_name(st));
  kiln_rt_free(dev, dx_), kiln_rt_free(dev, db), kiln_rt_free(dev, ddy), kiln_rt_free(dev, dout);
  free(x), free(bias), free(dy), free(out), free(yref), free(dxref);
  return bad;
}

int main(void) {
  KilnRtDevice *dev;
  TIER() * lib;
  if (kiln_rt_device_create(TIER_DEVICE, &dev) != KILN_RT_OK ||
      TIER(_create)(dev, &lib) != KILN_RT_OK) {
    printf("FAIL: %s\n", kiln_rt_last_error());
    return 1;
  }
  static const Case cases[] = {
      {3, 1024, "cols%16"}, {5, 1000, "cols%8"}, {4, 24, "cols%8"}, {3, 1001, ""}, {2, 12, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    failures += run_case(lib, dev, &cases[i]);
  TIER(_destroy)(lib);
  kiln_rt_device_destroy(dev);
  printf("%s\n", failures ? "FAILED" : "all ok");
  return failures != 0;
}
