/* harness.c — what only the BERT kernel tests need on top of the shared kernel-test harness
 * (tests/common/kernel_run.c): kernels-bert/ sources by file name and their bundle names,
 * element-type helpers for the kernels' `const T: type`, finite-difference columns (harness.h). */
#include "harness.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(KILN_BERT_KERNEL_DIR) && !defined(KILN_TEST_NO_COMPILER)
#error "KILN_BERT_KERNEL_DIR must name the kernels-bert folder"
#endif

float *kiln_bert_random_f16r(KilnRefRng *rng, size_t n, float lo, float hi) {
  float *p = kiln_bert_random_f32(rng, n, lo, hi);
  for (size_t i = 0; i < n; i++) p[i] = kiln_ref_round_f16(p[i]);
  return p;
}

uint16_t *kiln_bert_to_f16(const float *x, size_t n) {
  uint16_t *h = kiln_bert_alloc(n, sizeof *h);
  for (size_t i = 0; i < n; i++) h[i] = kiln_ref_f32_to_f16(x[i]);
  return h;
}

float *kiln_bert_from_f16(const uint16_t *h, size_t n) {
  float *x = kiln_bert_alloc(n, sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = kiln_ref_f16_to_f32(h[i]);
  return x;
}

const char *kiln_bert_type_name(KilnScalarKind t) { return kiln_scalar_name(t); }

size_t kiln_bert_elem_size(KilnScalarKind t) {
  return t == KILN_SCALAR_F32 || t == KILN_SCALAR_I32                            ? 4
         : t == KILN_SCALAR_I64                                                  ? 8
         : t == KILN_SCALAR_F16 || t == KILN_SCALAR_BF16 || t == KILN_SCALAR_I16 ? 2
                                                                                 : 1;
}

float kiln_bert_round(float x, KilnScalarKind t) {
  return t == KILN_SCALAR_F16    ? kiln_ref_round_f16(x)
         : t == KILN_SCALAR_BF16 ? kiln_ref_round_bf16(x)
                                 : x;
}

float *kiln_bert_random_t(KilnRefRng *rng, size_t n, float lo, float hi, KilnScalarKind t) {
  float *p = kiln_bert_random_f32(rng, n, lo, hi);
  for (size_t i = 0; i < n; i++) p[i] = kiln_bert_round(p[i], t);
  return p;
}

void *kiln_bert_to_elem(const float *x, size_t n, KilnScalarKind t) {
  if (t == KILN_SCALAR_F32) {
    float *f = kiln_bert_alloc(n, sizeof *f);
    memcpy(f, x, n * sizeof *f);
    return f;
  }
  uint16_t *h = kiln_bert_alloc(n, sizeof *h);
  for (size_t i = 0; i < n; i++)
    h[i] = t == KILN_SCALAR_F16 ? kiln_ref_f32_to_f16(x[i]) : kiln_ref_f32_to_bf16(x[i]);
  return h;
}

float kiln_bert_elem_get(const void *raw, size_t i, KilnScalarKind t) {
  if (t == KILN_SCALAR_F32) return ((const float *)raw)[i];
  uint16_t h = ((const uint16_t *)raw)[i];
  return t == KILN_SCALAR_F16 ? kiln_ref_f16_to_f32(h) : kiln_ref_bf16_to_f32(h);
}

void *kiln_bert_input_t(KilnBertRun *run, const float *x, size_t n, KilnScalarKind t) {
  void *h = kiln_bert_to_elem(x, n, t);
  void *d = kiln_bert_input(run, h, n * kiln_bert_elem_size(t));
  free(h);
  return d;
}

float *kiln_bert_fetch_t(KilnBertRun *run, const char *what, const void *d, size_t n,
                         KilnScalarKind t) {
  size_t esz = kiln_bert_elem_size(t), total = n + KILN_BERT_TAIL;
  unsigned char *raw = kiln_bert_alloc(total, esz);
  kiln_bert_fetch(run, raw, d, total * esz);
  kiln_bert_check_untouched(run, what, raw, esz, total, 1, n, total);
  float *out = kiln_bert_alloc(n, 4);
  for (size_t i = 0; i < n; i++) out[i] = kiln_bert_elem_get(raw, i, t);
  free(raw);
  return out;
}

void kiln_bert_fail(KilnBertRun *run, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_test_vfail(run, fmt, ap);
  va_end(ap);
}

bool kiln_bert_on_emu(const KilnBertDevice *dev) { return dev->target != KILN_TARGET_CPU; }

bool kiln_bert_fits_smem(const KilnBertDevice *dev, size_t bytes) {
  if (dev->target == KILN_TARGET_CPU) return true;
  KilnRtDeviceInfo info;
  if (!dev->emit && dev->rt && kiln_rt_device_kind(dev->rt) == KILN_RT_DEVICE_CUDA &&
      kiln_rt_device_info(dev->rt, &info) == KILN_RT_OK && info.shared_mem_per_block > 0)
    return bytes <= info.shared_mem_per_block;
  return bytes <= (size_t)(dev->target == KILN_TARGET_SM80 ? 163 : 227) * 1024;
}

void kiln_bert_begin(KilnBertRun *run, const KilnBertDevice *dev, const char *fmt, ...) {
  /* Read when the kernel is compiled, during the run this begins. */
  static KilnCompileOptions extra;
  memset(&extra, 0, sizeof extra);
  extra.cpu = dev->cpu;
  KilnTestDevice d = {dev->rt,     dev->target, dev->num_warps, dev->cpu ? &extra : NULL,
                      dev->bundle, dev->emit};
  va_list ap;
  va_start(ap, fmt);
  kiln_test_vbegin(run, &d, fmt, ap);
  va_end(ap);
}

/* The file name of a kernel configuration in a bundle: source, kernel, consts, warps. */
static void bundle_name(char *buf, size_t cap, const char *file, const char *kernel,
                        const KilnDefine *defs, size_t ndefs, int num_warps) {
  int len = snprintf(buf, cap, "%s-%s", file, kernel);
  for (size_t i = 0; i < ndefs && len > 0 && (size_t)len < cap; i++)
    len += snprintf(buf + len, cap - (size_t)len, "-%s=%" PRId64, defs[i].name, defs[i].value);
  if (len > 0 && (size_t)len < cap) snprintf(buf + len, cap - (size_t)len, "-w%d", num_warps);
}

KilnRtFunction *kiln_bert_kernel(KilnBertRun *run, const char *file, const char *kernel,
                                 const KilnDefine *defs, size_t ndefs) {
  char path[1280] = "", name[512];
#ifndef KILN_TEST_NO_COMPILER
  char dir[1024];
  snprintf(path, sizeof path, "%s/%s.kiln",
           kiln_test_source_dir(dir, sizeof dir, KILN_BERT_KERNEL_DIR, "kernels-bert"), file);
#endif
  bundle_name(name, sizeof name, file, kernel, defs, ndefs, run->d.num_warps);
  return kiln_test_kernel(run, path, kernel, defs, ndefs, name);
}

bool kiln_bert_fd_column(size_t c, size_t cols, size_t step) {
  return c % step == 0 || c + 1 == cols;
}

void kiln_bert_check_close_columns(KilnBertRun *run, const char *what, const float *got,
                                   const float *ref, size_t rows, size_t cols, size_t step,
                                   double floor, double tol) {
  float *g = kiln_bert_alloc(rows * cols, 4), *r = kiln_bert_alloc(rows * cols, 4);
  size_t n = 0;
  for (size_t i = 0; i < rows; i++)
    for (size_t c = 0; c < cols; c++)
      if (kiln_bert_fd_column(c, cols, step)) g[n] = got[i * cols + c], r[n++] = ref[i * cols + c];
  kiln_bert_check_close(run, what, g, r, n, floor, tol);
  free(g), free(r);
}

double kiln_bert_unit_roundoff(KilnScalarKind t) {
  return t == KILN_SCALAR_F16 ? 0x1p-11 : t == KILN_SCALAR_BF16 ? 0x1p-8 : 0x1p-24;
}

void kiln_bert_check_rounded(KilnBertRun *run, const char *what, const float *got, const float *ref,
                             const double *e32, size_t n, KilnScalarKind t) {
  double u = kiln_bert_unit_roundoff(t), tiny = t == KILN_SCALAR_F16 ? 0x1p-25 : 0x1p-134;
  float *bound = kiln_bert_alloc(n ? n : 1, sizeof *bound);
  for (size_t i = 0; i < n; i++) {
    double r = fabs((double)ref[i]);
    /* rounded up to f32, so the bound is never below its own derivation */
    bound[i] = nextafterf((float)(u * r + (1 + u) * e32[i] + 0x1p-24 * r + tiny), INFINITY);
  }
  kiln_test_check_bound(run, what, got, ref, bound, n);
  free(bound);
}
