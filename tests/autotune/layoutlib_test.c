/* layoutlib_test.c — the layouts of an untuned library: `kiln lib` on the BERT gemm (f16, no
 * epilogue) with no cache and three --args naming the kernel, the three ways a linear layer's
 * step calls it: the forward y = x W^T (sak = 1, sbk = 1, sbn = K), dX = dY W (sak = 1,
 * sbk = N, sbn = 1) and dW = dY^T X (sam = 1, sak = M, sbk = N, sbn = 1). Built twice: for emu
 * (gemmlayout, LAYOUT_DEVICE "emu") and for the host (gemmlayoutcpu, LAYOUT_LIB_CPU defined).
 * The first spec gives the key, the generic copy and its %16 / %8 copies; each further one
 * adds one copy with its own promises. A call of each layout must run its own copy (read back
 * through `_pick`'s signature), a call that keeps no copy's promises the generic one, and every
 * result must match a C loop over the same f16 inputs (exact products, f32 sums, one f16
 * rounding: |got - ref| <= 2e-3 max(1, |ref|)). Before the layouts the dX and dW calls ran the
 * generic copy: the test fails on their signatures. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef LAYOUT_LIB_CPU
#include "gemmlayoutcpu.h"
#define LAYOUT(name)  gemmlayoutcpu##name
#define LAYOUT_DEVICE "cpu"
#else
#include "gemmlayout.h"
#define LAYOUT(name)  gemmlayout##name
#define LAYOUT_DEVICE "emu"
#endif
#include "reference.h"
#include "libcall_util.h"

/* The copies' promises, as `kiln lib` writes them for the specs of CMakeLists.txt (M=128,
 * N=64, K=64): the parameters M, N, K, sam, sak, sbk, sbn, scm, scn, splits in order. */
#define SIG_FWD  "M%16,N%16,K%16,sam%16,sak=1,sbk=1,sbn%16,scm%16,scn=1,splits=1"
#define SIG_FWD8 "M%8,N%8,K%8,sam%8,sak=1,sbk=1,sbn%8,scm%8,scn=1,splits=1"
#define SIG_DX   "M%16,N%16,K%16,sam%16,sak=1,sbk%16,sbn=1,scm%16,scn=1,splits=1"
#define SIG_DW   "M%16,N%16,K%16,sam=1,sak%16,sbk%16,sbn=1,scm%16,scn=1,splits=1"

typedef enum Layout { FWD, DX, DW, AT_BK } Layout;

typedef struct Case {
  const char *what;
  Layout layout;
  int32_t M, N, K;
  const char *copy; /* the signature of the copy the call must run ("": the generic one) */
} Case;

static int failures;

/* The strides of A (M x K) and B (K x N) for a layout: A row-major or (dW) column-major, B
 * k-major (the forward's W[N][K]) or n-major. AT_BK: A column-major and B k-major, a form
 * none of the three layouts has. */
static void strides_of(const Case *c, int32_t s[4]) {
  bool a_cols = c->layout == DW || c->layout == AT_BK;
  bool b_kmajor = c->layout == FWD || c->layout == AT_BK;
  s[0] = a_cols ? 1 : c->K;
  s[1] = a_cols ? c->M : 1;
  s[2] = b_kmajor ? 1 : c->N;
  s[3] = b_kmajor ? c->K : 1;
}

static void reference(const Case *c, const int32_t s[4], const uint16_t *a, const uint16_t *b,
                      float *ref) {
  for (size_t m = 0; m < (size_t)c->M; m++)
    for (size_t n = 0; n < (size_t)c->N; n++) {
      double acc = 0.0;
      for (size_t k = 0; k < (size_t)c->K; k++)
        acc += (double)kiln_ref_f16_to_f32(a[m * (size_t)s[0] + k * (size_t)s[1]]) *
               kiln_ref_f16_to_f32(b[k * (size_t)s[2] + n * (size_t)s[3]]);
      ref[m * (size_t)c->N + n] = (float)acc;
    }
}

static int run_case(LAYOUT() * lib, KilnRtDevice *dev, const Case *c) {
  size_t M = (size_t)c->M, N = (size_t)c->N, K = (size_t)c->K;
  int32_t s[4];
  strides_of(c, s);
  uint16_t *a = calloc(M * K, 2), *b = calloc(K * N, 2), *y = calloc(M * N, 2);
  float *ref = calloc(M * N, sizeof *ref);
  if (!a || !b || !y || !ref) return printf("FAIL %s: out of memory\n", c->what), 1;
  for (size_t i = 0; i < M * K; i++) a[i] = kiln_ref_f32_to_f16(libcall_input(i, 1));
  for (size_t i = 0; i < K * N; i++) b[i] = kiln_ref_f32_to_f16(libcall_input(i, 2));
  reference(c, s, a, b, ref);
  void *da = libcall_to_device(dev, a, M * K), *db = libcall_to_device(dev, b, K * N),
       *dy = libcall_to_device(dev, y, M * N);
  int bad = !da || !db || !dy;
  KilnRtStatus st = bad ? KILN_RT_ERROR_OUT_OF_MEMORY
                        : LAYOUT(_gemm)(lib, da, db, dy, NULL, NULL, c->M, c->N, c->K, s[0], s[1],
                                        s[2], s[3], c->N, 1, 1, NULL, NULL, NULL);
  if (st == KILN_RT_OK) st = kiln_rt_memcpy_dtoh(dev, y, dy, M * N * 2, NULL);
  bad |= st != KILN_RT_OK;
  double worst = 0.0;
  for (size_t i = 0; i < M * N && !bad; i++)
    worst = fmax(worst, fabs(kiln_ref_f16_to_f32(y[i]) - ref[i]) / fmax(1.0, fabs(ref[i])));
  bad |= !(worst <= 2e-3);
  LAYOUT(_gemm_config)
  cfg = LAYOUT(_gemm_pick)(c->M, c->N, c->K, s[0], s[1], s[2], s[3], c->N, 1, 1);
  const char *sig = cfg.signature ? cfg.signature : "";
  bad |= strcmp(sig, c->copy) != 0;
  printf("%s %s: %dx%dx%d strides %d,%d,%d,%d ran '%s' (want '%s'), max rel err %.2e (tol "
         "2e-3), status %s\n",
         bad ? "FAIL" : "ok", c->what, c->M, c->N, c->K, s[0], s[1], s[2], s[3], sig, c->copy,
         worst, kiln_rt_status_name(st));
  kiln_rt_free(dev, da), kiln_rt_free(dev, db), kiln_rt_free(dev, dy);
  free(a), free(b), free(y), free(ref);
  return bad;
}

int main(void) {
  KilnRtDevice *dev;
  LAYOUT() * lib;
  if (kiln_rt_device_create(LAYOUT_DEVICE, &dev) != KILN_RT_OK ||
      LAYOUT(_create)(dev, &lib) != KILN_RT_OK) {
    printf("FAIL: %s\n", kiln_rt_last_error());
    return 1;
  }
  static const Case cases[] = {
      {"forward", FWD, 160, 96, 80, SIG_FWD},
      {"forward, sizes multiples of 8 only", FWD, 72, 40, 24, SIG_FWD8},
      {"dX = dY W", DX, 160, 96, 80, SIG_DX},
      {"dW = dY^T X", DW, 96, 64, 160, SIG_DW},
      {"dX with a ragged M (72 breaks M%16; sbk = N breaks sbk=1)", DX, 72, 96, 80, ""},
      {"dW with a ragged N (40 breaks N%16 and sbk%16)", DW, 96, 40, 160, ""},
      {"A column-major, B k-major (no layout has both)", AT_BK, 96, 64, 80, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    failures += run_case(lib, dev, &cases[i]);
  LAYOUT(_destroy)(lib);
  kiln_rt_device_destroy(dev);
  printf("%s\n", failures ? "FAILED" : "all ok");
  return failures != 0;
}
