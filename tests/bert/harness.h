/* harness.h — what every BERT kernel test shares: the kernel-test harness of the numeric tests
 * (tests/common/kernel_run.h: compile or load kernels for the device under test, device buffers
 * with sentinels, launches, the checks with stated tolerances) under the names the BERT tests
 * use, plus what only they need: kernels-bert/ sources by file name, element types bound to a
 * kernel's T, finite-difference columns.
 *
 * A KilnBertRun is one test configuration. Every step after the first failure does nothing, so a
 * test reads straight through and kiln_bert_end reports the first failure and frees everything
 * (modules and device buffers) the run acquired.
 */
#ifndef KILN_BERT_HARNESS_H
#define KILN_BERT_HARNESS_H

#include "kernel_run.h"
#include "kiln_driver.h"
#include "kiln_frontend.h" /* KilnScalarKind: the element type bound to a kernel's T */
#include "reference.h"

#include <kiln/kilnrt.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KILN_BERT_COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum {
  KILN_BERT_SENTINEL = KILN_TEST_SENTINEL, /* f32 1.5e16, f16 203.25: no kernel here writes these */
  KILN_BERT_TAIL = KILN_TEST_TAIL,         /* extra elements after every output buffer */
};

/* The device under test: the runtime device and the target its kernels are compiled for
 * (KILN_TARGET_CPU on "cpu", KILN_TARGET_EMU on "emu", KILN_TARGET_SM90 standing for any GPU
 * on "cuda").
 *
 * A GPU machine has no compiler, so its kernels come precompiled in a bundle: with `emit`, every
 * kernel a test asks for is compiled for `target` (sm_80/sm_90: PTX and cubin; emu: a host
 * object) into the folder `bundle` instead of being run (launches, copies back and checks do
 * nothing); with `bundle` alone, kernels are loaded from there (a cubin for the GPU's arch,
 * else PTX; host objects on emu) instead of being compiled. */
typedef struct KilnBertDevice {
  KilnRtDevice *rt;
  KilnTarget target;
  int num_warps; /* kernels are compiled for it and launched with 32 * num_warps threads */
  const char *bundle;
  bool emit;
  const char *cpu; /* --cpu: the CPU target of the cpu device's host code (NULL: native) */
} KilnBertDevice;

/* One configuration (kernel_run.h). */
typedef KilnTestRun KilnBertRun;

/* Whether dev runs the GPU code path (the emulator, a GPU, or a bundle for them): tests then use
 * the shapes and tiles they pick for the emulator (it runs GPU threads as fibers, thousands of
 * times slower than the cpu target), so that a bundle holds what a GPU run asks for. */
bool kiln_bert_on_emu(const KilnBertDevice *dev);
/* Whether a program with `bytes` of shared memory runs on dev: the cpu always; a bundle being
 * emitted for sm_80 up to its 163 KiB, for sm_90 and emu up to 227 KiB; a GPU up to what it
 * reports (its opt-in maximum per block). A configuration that does not fit is skipped, in
 * the emitted bundle and on the GPU alike, rather than failing to compile or to load. */
bool kiln_bert_fits_smem(const KilnBertDevice *dev, size_t bytes);
/* The name of an element type ("bf16"), without the frontend (a GPU machine's build has none). */
const char *kiln_bert_type_name(KilnScalarKind t);
/* Starts a configuration on dev; the printf-style label (prefixed with the target) names it in
 * every message. */
void kiln_bert_begin(KilnBertRun *run, const KilnBertDevice *dev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Compiles `kernel` from kernels-bert/FILE.kiln for the run's target with defs bound and loads
 * it; the module lives until kiln_bert_end. NULL (and the run failed) when it does not compile or load. */
KilnRtFunction *kiln_bert_kernel(KilnBertRun *run, const char *file, const char *kernel,
                                 const KilnDefine *defs, size_t ndefs);
/* The steps of kernel_run.h under the tests' names (see there). */
static inline void *kiln_bert_input(KilnBertRun *run, const void *host, size_t bytes) {
  return kiln_test_input(run, host, bytes);
}
static inline void *kiln_bert_output(KilnBertRun *run, size_t bytes) {
  return kiln_test_output(run, bytes);
}
static inline void kiln_bert_upload(KilnBertRun *run, void *d, const void *host, size_t bytes) {
  kiln_test_upload(run, d, host, bytes);
}
static inline void kiln_bert_launch(KilnBertRun *run, KilnRtFunction *fn, uint32_t gx, uint32_t gy,
                                    void **args) {
  kiln_test_launch(run, fn, gx, gy, args);
}
static inline void kiln_bert_launch3(KilnBertRun *run, KilnRtFunction *fn, uint32_t gx, uint32_t gy,
                                     uint32_t gz, void **args) {
  kiln_test_launch3(run, fn, gx, gy, gz, args);
}
static inline void kiln_bert_fetch(KilnBertRun *run, void *host, const void *d, size_t bytes) {
  kiln_test_fetch(run, host, d, bytes);
}
void kiln_bert_fail(KilnBertRun *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool kiln_bert_end(KilnBertRun *run) { return kiln_test_end(run); }

static inline void kiln_bert_check_untouched(KilnBertRun *run, const char *what, const void *buf,
                                             size_t elem, size_t total, size_t rows, size_t cols,
                                             size_t stride) {
  kiln_test_check_untouched(run, what, buf, elem, total, rows, cols, stride);
}
/* Normalized error max |got - ref| / max(|ref|, floor) must be <= tol (kiln_ref_max_error). */
static inline void kiln_bert_check_close(KilnBertRun *run, const char *what, const float *got,
                                         const float *ref, size_t n, double floor, double tol) {
  kiln_test_check_close(run, what, "ref", got, ref, n, floor, tol);
}

/* The check of an f16 / bf16 result against a bound per element, derived from the error the
 * computation can have at the value it produces (the approach of docs/kernels/attention.md). The
 * kernel computes in f32 and rounds to t once; the test states e32[i], a bound on the f32
 * value's error (the inputs are exact T values, so it comes from the f32 operations, their
 * sums over K terms, a PTX approximation), and every element must satisfy
 *   |got - ref| <= u |ref| + (1 + u) e32 + 2^-24 |ref| + tiny
 * with u = t's unit roundoff (2^-11 f16, 2^-8 bf16): rounding the f32 value y' = ref + e to t
 * errs by u |y'| <= u (|ref| + e); 2^-24 |ref| is the reference's own rounding to f32; tiny is
 * half the spacing of t's subnormals (2^-25 f16, 2^-134 bf16), the absolute error of a result
 * rounded below t's normal range. Unlike a relative tolerance with floor 1, this judges a result
 * of 0.01 by its own rounding, not by 1's. */
void kiln_bert_check_rounded(KilnBertRun *run, const char *what, const float *got, const float *ref,
                             const double *e32, size_t n, KilnScalarKind t);
/* t's unit roundoff: 2^-24 f32, 2^-11 f16, 2^-8 bf16. */
double kiln_bert_unit_roundoff(KilnScalarKind t);

/* Finite differences over the columns of a rows x cols input shift one column at a time, which
 * costs a few launches per column; on emu the tests shift every `step`-th column and the last
 * one (the ragged tail) only. Whether column c is one of them: */
bool kiln_bert_fd_column(size_t c, size_t cols, size_t step);
/* kiln_bert_check_close over the columns kiln_bert_fd_column picks (rows x cols, dense). */
void kiln_bert_check_close_columns(KilnBertRun *run, const char *what, const float *got,
                                   const float *ref, size_t rows, size_t cols, size_t step,
                                   double floor, double tol);

/* Test-sized host allocations, zeroed; exits on failure (a test program, not a library). */
static inline void *kiln_bert_alloc(size_t n, size_t size) { return kiln_test_alloc(n, size); }
static inline float *kiln_bert_random_f32(KilnRefRng *rng, size_t n, float lo, float hi) {
  return kiln_test_random_f32(rng, n, lo, hi);
}
/* Element types of the generic kernels' data (their `const T: type`: f32, f16 or bf16): the
 * size of one element, x rounded to t, random values already rounded to t (as f32, so a
 * reference sees exactly the kernel's input), a device-ready copy of n values (freed by the
 * caller), and element i of such a buffer as f32. */
size_t kiln_bert_elem_size(KilnScalarKind t);
float kiln_bert_round(float x, KilnScalarKind t);
float *kiln_bert_random_t(KilnRefRng *rng, size_t n, float lo, float hi, KilnScalarKind t);
void *kiln_bert_to_elem(const float *x, size_t n, KilnScalarKind t);
float kiln_bert_elem_get(const void *raw, size_t i, KilnScalarKind t);
/* A device copy, as t, of n host values already representable in t. */
void *kiln_bert_input_t(KilnBertRun *run, const float *x, size_t n, KilnScalarKind t);
/* A t buffer of n values plus the sentinel tail fetched, its tail checked (named `what`), and
 * its n values returned as f32. */
float *kiln_bert_fetch_t(KilnBertRun *run, const char *what, const void *d, size_t n,
                         KilnScalarKind t);

/* Random values already rounded to f16, as f32 (so a reference sees exactly the kernel's input). */
float *kiln_bert_random_f16r(KilnRefRng *rng, size_t n, float lo, float hi);
uint16_t *kiln_bert_to_f16(const float *x, size_t n);
float *kiln_bert_from_f16(const uint16_t *h, size_t n);
static inline uint32_t kiln_bert_cdiv(size_t a, size_t b) { return kiln_test_cdiv(a, b); }

#endif /* KILN_BERT_HARNESS_H */
