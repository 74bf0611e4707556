/* kernel_run.h — one configuration of a kernel test, shared by the numeric tests
 * (tests/numeric) and the BERT kernel tests (tests/bert): compile a kernel for the device under
 * test (or load it precompiled from a bundle, or compile it into one), device buffers with
 * sentinels, launches, copies back, and the checks with stated tolerances.
 *
 * A KilnTestRun is one configuration. Every step after the first failure does nothing, so a test
 * reads straight through and kiln_test_end reports the first failure and frees every module and
 * device buffer the run acquired. In emit mode (a bundle being written for a GPU machine, which
 * has no compiler) kernels are compiled into the bundle instead of loaded, and launches, copies
 * back and checks do nothing: only a failure of the harness itself (a kernel that does not
 * compile, a file that cannot be written) fails the run.
 *
 * Built into each test program (not a library), with KILN_TEST_NO_COMPILER in a runtime-only
 * tree, where kernels only come from a bundle. */
#ifndef KILN_TEST_KERNEL_RUN_H
#define KILN_TEST_KERNEL_RUN_H

#include "kiln_driver.h" /* KilnTarget, KilnCompileOptions (types only without the compiler) */
#include "reference.h"

#include <kiln/kilnrt.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
  KILN_TEST_SENTINEL =
      0x5A,            /* f32 1.5e16, f16 203.25, i32 0x5A5A5A5A: no tested kernel writes these */
  KILN_TEST_TAIL = 67, /* extra elements after every output: odd, to catch off-by-a-vector too */
  KILN_TEST_MAX_BUFS = 512,
  KILN_TEST_MAX_MODS = 8
};

/* Where a run's kernels come from and go (copied into the run by kiln_test_begin). */
typedef struct KilnTestDevice {
  KilnRtDevice *rt;
  KilnTarget target; /* KILN_TARGET_CPU on "cpu", KILN_TARGET_EMU on "emu", a GPU arch on "cuda" */
  int num_warps;     /* kernels are compiled for it and launched with 32 * num_warps threads */
  const KilnCompileOptions
      *extra;         /* cpu, specialize, multiple_of for every compile (may be NULL) */
  const char *bundle; /* precompiled kernels: read from here, or written here with emit */
  bool emit;
} KilnTestDevice;

typedef struct KilnTestRun {
  KilnTestDevice d;
  KilnRtDevice *dev;  /* d.rt */
  KilnRtFunction *fn; /* the kernel kiln_test_kernel loaded last */
  int emitted;        /* images written (emit mode) */
  double start;       /* kiln_test_now() at kiln_test_begin */
  KilnRtModule *mods[KILN_TEST_MAX_MODS];
  int nmods;
  void *bufs[KILN_TEST_MAX_BUFS];
  int nbufs;
  bool ok;
  char label[192]; /* "[cpu w4] " then the configuration */
  const char *key; /* the label without its device prefix: the same on every device */
} KilnTestRun;

/* Starts a configuration on d; the printf-style label (prefixed with the device and warps) names
 * it in every message. */
void kiln_test_begin(KilnTestRun *run, const KilnTestDevice *d, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void kiln_test_vbegin(KilnTestRun *run, const KilnTestDevice *d, const char *fmt, va_list ap);
/* Compiles `kernel` of the source `path` with defs bound for the run's target (emit mode: into
 * the bundle, as `name`.<arch>.{ptx,cubin} or .o) and loads it, or loads `name` from the bundle.
 * The module lives until kiln_test_end; the function is also run->fn. NULL (the run failed, or
 * emit mode) when there is nothing to launch. */
KilnRtFunction *kiln_test_kernel(KilnTestRun *run, const char *path, const char *kernel,
                                 const KilnDefine *defs, size_t ndefs, const char *name);
/* A device copy of host[0..bytes). */
void *kiln_test_input(KilnTestRun *run, const void *host, size_t bytes);
/* A device buffer of `bytes` filled with the sentinel byte. */
void *kiln_test_output(KilnTestRun *run, size_t bytes);
/* Replaces the contents of a device buffer with host[0..bytes). */
void kiln_test_upload(KilnTestRun *run, void *d, const void *host, size_t bytes);
/* Runs fn on a gx x gy grid of 32 * num_warps threads each and waits for it. */
void kiln_test_launch(KilnTestRun *run, KilnRtFunction *fn, uint32_t gx, uint32_t gy, void **args);
/* The same over a 3-D grid (gz programs along z). */
void kiln_test_launch3(KilnTestRun *run, KilnRtFunction *fn, uint32_t gx, uint32_t gy, uint32_t gz,
                       void **args);
void kiln_test_fetch(KilnTestRun *run, void *host, const void *d, size_t bytes);
/* Marks the run failed with a message (nothing in emit mode: no check means anything there). */
void kiln_test_fail(KilnTestRun *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kiln_test_vfail(KilnTestRun *run, const char *fmt, va_list ap);
void kiln_test_fail_rt(KilnTestRun *run, const char *what, KilnRtStatus st);
/* Frees what the run acquired, prints its verdict and time and returns it. */
bool kiln_test_end(KilnTestRun *run);

/* Every element of buf (total elements of elem bytes) outside rows x cols at row stride
 * `stride` must still hold the sentinel. */
void kiln_test_check_untouched(KilnTestRun *run, const char *what, const void *buf, size_t elem,
                               size_t total, size_t rows, size_t cols, size_t stride);
/* The normalized error max |got - ref| / max(|ref|, floor) (kiln_ref_max_error) must be <= tol;
 * printed with the worst element. `against` names ref ("ref", "cpu"). */
void kiln_test_check_close(KilnTestRun *run, const char *what, const char *against,
                           const float *got, const float *ref, size_t n, double floor, double tol);
/* Per-element error bounds: max |got - ref| / bound must be <= 1 (a NaN or infinity where ref is
 * finite is an infinite error); printed with the worst element and its bound. For results whose
 * error the test derives element by element (docs/kernels/attention.md). */
void kiln_test_check_bound(KilnTestRun *run, const char *what, const float *got, const float *ref,
                           const float *bound, size_t n);
/* The eps a LayerNorm kernel used, read back from its rstd: 1/rstd^2 - var, with var the row's
 * variance in double. Checked on the rows whose var <= eps (where eps is at least half of what
 * rstd depends on) against eps within 1e-3 relative: an rstd right to a relative d gives the
 * implied eps to 2 d (var + eps) <= 4 d eps, so 1e-3 holds for any rstd within 2.5e-4, 25 times
 * the rstd tolerance; a doubled (or dropped, or squared) eps is off by 100% or more. */
void kiln_test_check_eps(KilnTestRun *run, const float *rstd, const double *var, size_t rows,
                         float eps);
/* Integers compared exactly. */
void kiln_test_check_equal_i32(KilnTestRun *run, const char *what, const char *against,
                               const int32_t *got, const int32_t *ref, size_t n);

/* A folder of kernel sources: `configured` (the path compiled in), or ROOT/rel when the
 * environment variable KILN_TEST_SOURCE_ROOT names another copy of the tree (the planted-bug
 * runner's mutated scratch copy, tests/planted/). Returns buf. */
const char *kiln_test_source_dir(char *buf, size_t cap, const char *configured, const char *rel);
/* Test-sized host allocations, zeroed; exit(2) when memory runs out (a test program, not a
 * library). The bound also tells gcc the size is sane (-Walloc-size-larger-than). */
void *kiln_test_alloc(size_t n, size_t size);
float *kiln_test_random_f32(KilnRefRng *rng, size_t n, float lo, float hi);
uint32_t kiln_test_cdiv(size_t a, size_t b);
const char *kiln_test_target_label(KilnTarget t);
/* Monotonic seconds. */
double kiln_test_now(void);

#endif /* KILN_TEST_KERNEL_RUN_H */
