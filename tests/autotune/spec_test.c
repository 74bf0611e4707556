/* spec_test.c — a library made by `kiln lib` from a cache that `kiln tune` filled with row-major
 * arguments (tests/numeric matmul_f16, 64x64x64: sak = sbn = scn = 1, every other integer a
 * multiple of 16), so its tuned winner is specialized to that signature. Run on SPEC_DEVICE
 * (cpu or emu), it must use the specialized winner when a call keeps every promise and the
 * generic fallback when a call breaks one (odd K, a transposed operand, a padded row stride,
 * odd sizes): the specialized code has sak = 1 compiled in and would read the wrong elements.
 * Every call is compared with a C reference.
 *
 * Built with SPEC_ROW_BM/SPEC_ROW_BN, the library is an untuned one to which kiln-tune-runner
 * --tuned-libs added one row (NAME.tuned.h: the winner of a bundle pinned to that tile): the
 * calls that keep its promises must run that row, the others one of the library's own
 * variants (its %8 copy serves the padded rows).
 *
 * Tolerance: inputs are multiples of 1/8 in [-1, 1], exact in f16, and their products and sums
 * are exact in f32 for these sizes; only the f16 rounding of the output remains, at most 2^-11
 * relative, so |got - ref| <= 1e-3 * max(1, |ref|). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include SPEC_HEADER
#include "kiln_base.h"

#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#define FN(x)      CAT(SPEC_LIB, x)
typedef FN(_matmul_f16_config) Config;

static int failures;

typedef struct Case {
  const char *what;
  int M, N, K;
  int a_transposed; /* A stored column-major: sam = 1, sak = M */
  int c_pad;        /* extra elements per row of C */
  int want_specialized;
} Case;

static void *dev_alloc(KilnRtDevice *dev, size_t bytes) {
  void *p = NULL;
  return kiln_rt_malloc(dev, bytes, &p) == KILN_RT_OK ? p : NULL;
}

static int compare(const Case *cs, const float *a, const float *b, const uint16_t *c, int scm) {
  for (int i = 0; i < cs->M; i++)
    for (int j = 0; j < cs->N; j++) {
      float ref = 0.0f;
      for (int k = 0; k < cs->K; k++) ref += a[i * cs->K + k] * b[k * cs->N + j];
      float got = kiln_f16_to_f32(c[i * scm + j]);
      if (fabsf(got - ref) > 1e-3f * fmaxf(1.0f, fabsf(ref))) {
        printf("FAIL %s: c[%d][%d] = %g, want %g\n", cs->what, i, j, got, ref);
        return 1;
      }
    }
  return 0;
}

static void run_case(SPEC_LIB *lib, KilnRtDevice *dev, const Case *cs) {
  int M = cs->M, N = cs->N, K = cs->K, scm = N + cs->c_pad;
  int sam = cs->a_transposed ? 1 : K, sak = cs->a_transposed ? M : 1;
  size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * scm;
  float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
  uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2), *hc = malloc(nc * 2);
  void *da = dev_alloc(dev, na * 2), *db = dev_alloc(dev, nb * 2), *dc = dev_alloc(dev, nc * 2);
  if (!a || !b || !ha || !hb || !hc || !da || !db || !dc) {
    printf("FAIL %s: out of memory\n", cs->what);
    failures++;
    goto out;
  }
  for (int i = 0; i < M; i++)
    for (int k = 0; k < K; k++) {
      a[i * K + k] = (float)((i * 7 + k * 3) % 17 - 8) / 8.0f;
      ha[(size_t)i * sam + (size_t)k * sak] = kiln_f32_to_f16(a[i * K + k]);
    }
  for (size_t i = 0; i < nb; i++)
    hb[i] = kiln_f32_to_f16(b[i] = (float)((int)(i * 5 % 13) - 6) / 8.0f);
  for (size_t i = 0; i < nc; i++) hc[i] = 0x7e00; /* NaN: an element never written shows */
  kiln_rt_memcpy_htod(dev, da, ha, na * 2, NULL);
  kiln_rt_memcpy_htod(dev, db, hb, nb * 2, NULL);
  kiln_rt_memcpy_htod(dev, dc, hc, nc * 2, NULL);
  KilnRtStatus st =
      FN(_matmul_f16)(lib, da, db, dc, M, N, K, sam, sak, N, 1, scm, 1, NULL, NULL, NULL);
  if (st == KILN_RT_OK) st = kiln_rt_device_synchronize(dev);
  if (st == KILN_RT_OK) st = kiln_rt_memcpy_dtoh(dev, hc, dc, nc * 2, NULL);
  Config cfg = FN(_matmul_f16_pick)(M, N, K, sam, sak, N, 1, scm, 1);
  int bad = st != KILN_RT_OK;
  if (bad)
    printf("FAIL %s: %s (%s)\n", cs->what, kiln_rt_status_name(st), kiln_rt_last_error());
  else
    bad = compare(cs, a, b, hc, scm);
#ifndef SPEC_ROW_BM
  if ((cfg.signature[0] != '\0') != cs->want_specialized) {
    printf("FAIL %s: ran the %s variant '%s'\n", cs->what,
           cfg.signature[0] ? "specialized" : "generic", cfg.signature);
    bad = 1;
  }
#else
  if ((cfg.BM == SPEC_ROW_BM && cfg.BN == SPEC_ROW_BN) != cs->want_specialized) {
    printf("FAIL %s: the added row %s\n", cs->what, cs->want_specialized ? "did not run" : "ran");
    bad = 1;
  }
#endif
  printf("%s %s: BM=%lld BN=%lld BK=%lld num_warps=%d signature '%s'\n", bad ? "FAIL" : "ok",
         cs->what, (long long)cfg.BM, (long long)cfg.BN, (long long)cfg.BK, cfg.num_warps,
         cfg.signature);
  failures += bad;
out:
  free(a), free(b), free(ha), free(hb), free(hc);
  kiln_rt_free(dev, da), kiln_rt_free(dev, db), kiln_rt_free(dev, dc);
}

/* GPU code (cuda, emu) was compiled on the promise of 16-byte aligned pointers: a view one f16
 * into C is refused with the parameter named, before anything runs (on emu it used to kill the
 * process with SIGSEGV). Host code makes no such promise, so a cpu library runs it. */
static void run_misaligned(SPEC_LIB *lib, KilnRtDevice *dev) {
  if (strcmp(SPEC_DEVICE, "cpu") == 0) return;
  uint16_t *da = dev_alloc(dev, 64 * 64 * 2), *dc = dev_alloc(dev, 64 * 64 * 2 + 16);
  if (!da || !dc) {
    printf("FAIL misaligned C: out of memory\n");
    failures++;
  } else {
    KilnRtStatus st =
        FN(_matmul_f16)(lib, da, da, dc + 1, 64, 64, 64, 64, 1, 64, 1, 64, 1, NULL, NULL, NULL);
    int bad = st != KILN_RT_ERROR_INVALID_ARGUMENT ||
              !strstr(kiln_rt_last_error(), "pointer c = ") ||
              !strstr(kiln_rt_last_error(), "16-byte aligned");
    printf("%s misaligned C (one f16 in): %s: %s\n", bad ? "FAIL" : "ok", kiln_rt_status_name(st),
           kiln_rt_last_error());
    failures += bad;
  }
  kiln_rt_free(dev, da), kiln_rt_free(dev, dc);
}

int main(void) {
  KilnRtDevice *dev;
  SPEC_LIB *lib;
  if (kiln_rt_device_create(SPEC_DEVICE, &dev) != KILN_RT_OK) {
    printf("FAIL: device %s: %s\n", SPEC_DEVICE, kiln_rt_last_error());
    return 1;
  }
  if (FN(_create)(dev, &lib) != KILN_RT_OK) {
    printf("FAIL: create: %s\n", kiln_rt_last_error());
    return 1;
  }
  static const Case cases[] = {
      {"row-major 64x64x64 (the tuned call)", 64, 64, 64, 0, 0, 1},
      {"row-major 48x32x96 (keeps every promise)", 48, 32, 96, 0, 0, 1},
      {"odd K = 61 (K, sam not multiples of 16)", 64, 64, 61, 0, 0, 0},
      {"transposed A (sak = M, not 1)", 64, 64, 64, 1, 0, 0},
      {"C rows padded by 8 (scm = 72)", 64, 64, 64, 0, 8, 0},
      {"odd sizes 50x40x33", 50, 40, 33, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(lib, dev, &cases[i]);
  run_misaligned(lib, dev);
  FN(_destroy)(lib);
  kiln_rt_device_destroy(dev);
  printf("%s\n", failures ? "FAILED" : "all ok");
  return failures != 0;
}
