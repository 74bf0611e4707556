/* gpu_bench.c — speed of Kiln kernels on a GPU, beside the reference points that bound them.
 *
 * Runs where there is a GPU but no compiler: the kernels arrive as cubins compiled on the build
 * machine (bench/gpu/prepare.sh writes them into a bundle directory with a manifest). For each
 * case it checks the result against a C reference first (a fast wrong kernel is worth nothing),
 * then times it with events: warm-up, then the median of repeated runs.
 *
 *   elementwise / row reductions: GB/s, against a device-to-device copy of the same bytes;
 *   f16 matmul (f32 accumulate): TFLOP/s, against cuBLAS (libcublas opened with dlopen here,
 *   in the benchmark only: the runtime never links it).
 *
 * Output: a table on stdout and one JSON document (--json FILE) for bench/results/. Exit codes:
 * 0 all cases ran and matched, 1 a case failed or mismatched, 2 no GPU / environment failure,
 * 64 bad usage. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/bundle.h>
#include <kiln/kilnrt.h>

#include "kiln_base.h"

#include "reference.h"

#define CHECK_RT(expr)                                                                             \
  do {                                                                                             \
    KilnRtStatus st_ = (expr);                                                                     \
    if (st_ != KILN_RT_OK) {                                                                       \
      fprintf(stderr, "gpu-bench: %s: %s: %s\n", #expr, kiln_rt_status_name(st_),                  \
              kiln_rt_last_error());                                                               \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

typedef struct Bench {
  KilnRtDevice *dev;
  KilnRtStream *stream;
  KilnRtEvent *ev0, *ev1;
  const char *bundle;
  const char *arch; /* the report's label only: images are picked by kiln_rt_bundle_load */
  int reps;
  FILE *json;
  int njson;
} Bench;

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* ---------------------------------------------------------------- timing */

typedef int (*LaunchFn)(Bench *b, void *ctx);

/* Median milliseconds of `reps` runs of fn after 3 warm-up runs, each bracketed by events. */
static int time_median(Bench *b, LaunchFn fn, void *ctx, float *median_ms) {
  float *t = calloc((size_t)b->reps, sizeof *t);
  if (!t) return -1;
  for (int i = -3; i < b->reps; i++) {
    if (kiln_rt_event_record(b->ev0, b->stream) != KILN_RT_OK || fn(b, ctx) != 0 ||
        kiln_rt_event_record(b->ev1, b->stream) != KILN_RT_OK ||
        kiln_rt_event_synchronize(b->ev1) != KILN_RT_OK) {
      fprintf(stderr, "gpu-bench: timed run failed: %s\n", kiln_rt_last_error());
      free(t);
      return -1;
    }
    if (i >= 0 && kiln_rt_event_elapsed_ms(b->ev0, b->ev1, &t[i]) != KILN_RT_OK) {
      free(t);
      return -1;
    }
  }
  qsort(t, (size_t)b->reps, sizeof *t, cmp_float);
  *median_ms = t[b->reps / 2];
  free(t);
  return 0;
}

/* ---------------------------------------------------------------- modules from the bundle */

typedef struct Kernel {
  KilnRtModule *mod;
  KilnRtFunction *fn;
  uint32_t block_threads;
} Kernel;

/* Loads module <name> of the bundle (kiln/bundle.h: the runtime picks the cubin for this GPU's
 * arch, else the PTX the driver JIT-compiles). num_warps is part of the name's contract with
 * prepare.sh. */
static int kernel_load(Bench *b, Kernel *k, const char *name, const char *kernel, int num_warps) {
  if (kiln_rt_bundle_load(b->dev, b->bundle, name, &k->mod) != KILN_RT_OK ||
      kiln_rt_module_get_function(k->mod, kernel, &k->fn) != KILN_RT_OK) {
    fprintf(stderr, "gpu-bench: %s (run bench/gpu/prepare.sh)\n", kiln_rt_last_error());
    return -1;
  }
  k->block_threads = (uint32_t)(32 * num_warps);
  return 0;
}

static int launch(Bench *b, Kernel *k, uint32_t gx, uint32_t gy, void **args) {
  KilnRtLaunchConfig lc = {.grid = {gx, gy, 1}, .block_threads = k->block_threads};
  CHECK_RT(kiln_rt_launch(k->fn, &lc, args, b->stream));
  return 0;
}

static void json_case(Bench *b, const char *name, const char *what, double ms, double rate,
                      const char *unit, double ref_rate, const char *ref_name, double max_err) {
  if (!b->json) return;
  fprintf(b->json,
          "%s    {\"case\": \"%s\", \"shape\": \"%s\", \"median_ms\": %.5f, \"rate\": %.3f, "
          "\"unit\": \"%s\", \"reference\": \"%s\", \"reference_rate\": %.3f, \"max_error\": %.3g}",
          b->njson++ ? ",\n" : "", name, what, ms, rate, unit, ref_name, ref_rate, max_err);
}

/* ---------------------------------------------------------------- device-to-device copy */

typedef struct CopyCtx {
  void *dst, *src;
  size_t bytes;
} CopyCtx;

static int run_copy(Bench *b, void *p) {
  CopyCtx *c = p;
  CHECK_RT(kiln_rt_memcpy_dtod(b->dev, c->dst, c->src, c->bytes, b->stream));
  return 0;
}

/* GB/s of copying `bytes` (read + write counted), the ceiling for a streaming kernel. */
static double copy_gbps(Bench *b, void *dst, void *src, size_t bytes) {
  CopyCtx c = {dst, src, bytes};
  float ms;
  if (time_median(b, run_copy, &c, &ms) != 0) return 0;
  return 2.0 * (double)bytes / (ms * 1e6);
}

/* ---------------------------------------------------------------- one kernel launch */

typedef struct LaunchCtx {
  Kernel k;
  void *args[16];
  uint32_t gx, gy;
} LaunchCtx;

static int run_launch(Bench *b, void *p) {
  LaunchCtx *l = p;
  return launch(b, &l->k, l->gx, l->gy, l->args);
}

/* Runs once, synchronizes: the result is then checked before anything is timed. */
static int run_once(Bench *b, LaunchCtx *l) {
  if (run_launch(b, l) != 0) return -1;
  CHECK_RT(kiln_rt_stream_synchronize(b->stream));
  return 0;
}

static void report(Bench *b, const char *name, const char *shape, float ms, double rate,
                   const char *unit, double ref_rate, const char *ref_name, double err) {
  printf("%-32s %-16s %10.4f %10.1f %-7s %-10s %10.1f  (%3.0f%%)\n", name, shape, ms, rate, unit,
         ref_name, ref_rate, ref_rate > 0 ? 100.0 * rate / ref_rate : 0.0);
  json_case(b, name, shape, ms, rate, unit, ref_rate, ref_name, err);
}

/* ---------------------------------------------------------------- vector add */

static int bench_vector_add(Bench *b, int n) {
  LaunchCtx l = {0};
  size_t bytes = (size_t)n * 4;
  float *hx = malloc(bytes), *hy = malloc(bytes), *hout = malloc(bytes), *ref = malloc(bytes);
  void *x = NULL, *y = NULL, *out = NULL;
  int rc = -1;
  int32_t nn = n;
  float ms;
  if (!hx || !hy || !hout || !ref || kernel_load(b, &l.k, "vector_add", "vector_add", 4) != 0)
    goto done;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, 7);
  for (int i = 0; i < n; i++) {
    hx[i] = kiln_ref_rng_uniform(&rng, -1, 1);
    hy[i] = kiln_ref_rng_uniform(&rng, -1, 1);
  }
  if (kiln_rt_malloc(b->dev, bytes, &x) || kiln_rt_malloc(b->dev, bytes, &y) ||
      kiln_rt_malloc(b->dev, bytes, &out) || kiln_rt_memcpy_htod(b->dev, x, hx, bytes, NULL) ||
      kiln_rt_memcpy_htod(b->dev, y, hy, bytes, NULL))
    goto done;
  l.args[0] = &x, l.args[1] = &y, l.args[2] = &out, l.args[3] = &nn;
  l.gx = (uint32_t)((n + 1023) / 1024), l.gy = 1; /* BLOCK=1024 in prepare.sh */
  if (run_once(b, &l) || kiln_rt_memcpy_dtoh(b->dev, hout, out, bytes, NULL)) goto done;
  kiln_ref_vector_add(hx, hy, ref, (size_t)n);
  double err = kiln_ref_max_error(hout, ref, (size_t)n, 1.0, NULL);
  if (err != 0.0) {
    fprintf(stderr, "gpu-bench: vector_add mismatch (max error %g)\n", err);
    goto done;
  }
  if (time_median(b, run_launch, &l, &ms) != 0) goto done;
  char shape[32];
  snprintf(shape, sizeof shape, "n=%d", n);
  report(b, "vector_add_f32", shape, ms, 3.0 * (double)bytes / (ms * 1e6), "GB/s",
         copy_gbps(b, out, x, bytes), "d2d-copy", err);
  rc = 0;
done:
  kiln_rt_free(b->dev, x), kiln_rt_free(b->dev, y), kiln_rt_free(b->dev, out);
  free(hx), free(hy), free(hout), free(ref);
  kiln_rt_module_destroy(l.k.mod);
  return rc;
}

/* ---------------------------------------------------------------- row softmax */

static int bench_softmax(Bench *b, int rows, int cols) {
  LaunchCtx l = {0};
  size_t n = (size_t)rows * (size_t)cols, bytes = n * 4;
  float *hx = malloc(bytes), *hy = malloc(bytes), *ref = malloc(bytes);
  void *x = NULL, *y = NULL;
  int rc = -1;
  int32_t c = cols;
  float ms;
  if (!hx || !hy || !ref || kernel_load(b, &l.k, "softmax_rows", "softmax_rows", 8) != 0) goto done;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, 11);
  for (size_t i = 0; i < n; i++) hx[i] = kiln_ref_rng_uniform(&rng, -4, 4);
  if (kiln_rt_malloc(b->dev, bytes, &x) || kiln_rt_malloc(b->dev, bytes, &y) ||
      kiln_rt_memcpy_htod(b->dev, x, hx, bytes, NULL))
    goto done;
  /* softmax_rows(x, y, cols, x_stride, y_stride), one program per row, BLOCK=cols */
  l.args[0] = &x, l.args[1] = &y, l.args[2] = &c, l.args[3] = &c, l.args[4] = &c;
  l.gx = (uint32_t)rows, l.gy = 1;
  if (run_once(b, &l) || kiln_rt_memcpy_dtoh(b->dev, hy, y, bytes, NULL)) goto done;
  kiln_ref_softmax_rows(hx, (size_t)cols, ref, (size_t)cols, (size_t)rows, (size_t)cols);
  double err = kiln_ref_max_error(hy, ref, n, 1e-3, NULL);
  if (err > 1e-4) { /* approximate exp on the GPU: 1e-4 of the row's largest value */
    fprintf(stderr, "gpu-bench: softmax_rows mismatch (max error %g)\n", err);
    goto done;
  }
  if (time_median(b, run_launch, &l, &ms) != 0) goto done;
  char shape[32];
  snprintf(shape, sizeof shape, "%dx%d", rows, cols);
  report(b, "softmax_rows_f32", shape, ms, 2.0 * (double)bytes / (ms * 1e6), "GB/s",
         copy_gbps(b, y, x, bytes), "d2d-copy", err);
  rc = 0;
done:
  kiln_rt_free(b->dev, x), kiln_rt_free(b->dev, y);
  free(hx), free(hy), free(ref);
  kiln_rt_module_destroy(l.k.mod);
  return rc;
}

/* ---------------------------------------------------------------- cuBLAS, for reference */

/* The few cuBLAS entry points and constants used, declared by the documented ABI so that no
 * CUDA header is needed: cublasStatus_t is an int, handles are pointers. */
typedef int (*CublasCreate)(void **handle);
typedef int (*CublasDestroy)(void *handle);
typedef int (*CublasSetStream)(void *handle, void *stream);
typedef int (*CublasGemmEx)(void *handle, int transa, int transb, int m, int n, int k,
                            const void *alpha, const void *a, int atype, int lda, const void *b,
                            int btype, int ldb, const void *beta, void *c, int ctype, int ldc,
                            int compute, int algo);
enum { CUBLAS_OP_N = 0, CUDA_R_16F = 2, CUBLAS_COMPUTE_32F = 68, CUBLAS_GEMM_DEFAULT = -1 };

typedef struct Cublas {
  void *lib, *handle;
  CublasCreate create;
  CublasDestroy destroy;
  CublasGemmEx gemm;
} Cublas;

static int cublas_open(Cublas *cb) {
  const char *names[] = {"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"};
  for (size_t i = 0; i < sizeof names / sizeof *names && !cb->lib; i++)
    cb->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!cb->lib) return -1;
  cb->create = (CublasCreate)dlsym(cb->lib, "cublasCreate_v2");
  cb->destroy = (CublasDestroy)dlsym(cb->lib, "cublasDestroy_v2");
  cb->gemm = (CublasGemmEx)dlsym(cb->lib, "cublasGemmEx");
  if (!cb->create || !cb->destroy || !cb->gemm || cb->create(&cb->handle) != 0) {
    dlclose(cb->lib);
    cb->lib = NULL;
    return -1;
  }
  return 0;
}

static void cublas_close(Cublas *cb) {
  if (cb->lib) {
    cb->destroy(cb->handle);
    dlclose(cb->lib);
  }
}

typedef struct GemmCtx {
  Cublas *cb;
  int m, n, k;
  void *a, *b, *c;
} GemmCtx;

/* C (row-major MxN) = A (MxK) . B (KxN), computed as the column-major Cᵀ = Bᵀ.Aᵀ. The default
 * stream: cuBLAS runs on it, and the events bracket it there too when b->stream is NULL. */
static int run_cublas(Bench *b, void *p) {
  (void)b;
  GemmCtx *g = p;
  float one = 1.0f, zero = 0.0f;
  int st = g->cb->gemm(g->cb->handle, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->m, g->k, &one, g->b,
                       CUDA_R_16F, g->n, g->a, CUDA_R_16F, g->k, &zero, g->c, CUDA_R_16F, g->n,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != 0) fprintf(stderr, "gpu-bench: cublasGemmEx returned %d\n", st);
  return st == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------- f16 matmul */

static int bench_matmul(Bench *b, int m, int n, int k, const char *name, int bm, int bn,
                        int num_warps) {
  LaunchCtx l = {0};
  size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
  uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2), *hc = malloc(nc * 2);
  float *got = malloc(nc * 4), *ref = malloc(nc * 4);
  void *a = NULL, *bb = NULL, *c = NULL;
  int rc = -1;
  float ms;
  int32_t M = m, N = n, K = k, one = 1;
  if (!ha || !hb || !hc || !got || !ref || kernel_load(b, &l.k, name, "matmul_f16", num_warps) != 0)
    goto done;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, 13);
  for (size_t i = 0; i < na; i++) ha[i] = kiln_ref_f32_to_f16(kiln_ref_rng_uniform(&rng, -1, 1));
  for (size_t i = 0; i < nb; i++) hb[i] = kiln_ref_f32_to_f16(kiln_ref_rng_uniform(&rng, -1, 1));
  if (kiln_rt_malloc(b->dev, na * 2, &a) || kiln_rt_malloc(b->dev, nb * 2, &bb) ||
      kiln_rt_malloc(b->dev, nc * 2, &c) || kiln_rt_memcpy_htod(b->dev, a, ha, na * 2, NULL) ||
      kiln_rt_memcpy_htod(b->dev, bb, hb, nb * 2, NULL))
    goto done;
  /* matmul_f16(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn), row-major operands */
  void *args[12] = {&a, &bb, &c, &M, &N, &K, &K, &one, &N, &one, &N, &one};
  memcpy(l.args, args, sizeof args);
  l.gx = (uint32_t)((m + bm - 1) / bm), l.gy = (uint32_t)((n + bn - 1) / bn);
  if (run_once(b, &l) || kiln_rt_memcpy_dtoh(b->dev, hc, c, nc * 2, NULL)) goto done;
  /* The reference costs M*N*K on the host: check a band of 64 rows, enough to catch a wrong
   * fragment layout (which breaks every row) without minutes of host time. */
  size_t rows = (size_t)(m < 64 ? m : 64);
  kiln_ref_matmul_f16(ha, (size_t)k, 1, hb, (size_t)n, 1, ref, rows, (size_t)n, (size_t)k);
  for (size_t i = 0; i < rows * (size_t)n; i++) got[i] = kiln_ref_f16_to_f32(hc[i]);
  double err = kiln_ref_max_error(got, ref, rows * (size_t)n, 1.0, NULL);
  if (err > 4e-3) {
    fprintf(stderr, "gpu-bench: %s mismatch (max error %g)\n", name, err);
    goto done;
  }
  if (time_median(b, run_launch, &l, &ms) != 0) goto done;
  double flops = 2.0 * m * n * (double)k;
  double ref_tflops = 0;
  Cublas cb = {0};
  if (cublas_open(&cb) == 0) {
    GemmCtx g = {&cb, m, n, k, a, bb, c};
    float cms;
    KilnRtStream *saved = b->stream;
    b->stream = NULL; /* cuBLAS runs on the default stream */
    if (time_median(b, run_cublas, &g, &cms) == 0) ref_tflops = flops / (cms * 1e9);
    b->stream = saved;
    cublas_close(&cb);
  } else {
    fprintf(stderr, "gpu-bench: cuBLAS not found; matmul has no reference point\n");
  }
  char shape[48];
  snprintf(shape, sizeof shape, "%dx%dx%d", m, n, k);
  report(b, name, shape, ms, flops / (ms * 1e9), "TFLOP/s", ref_tflops, "cublas", err);
  rc = 0;
done:
  kiln_rt_free(b->dev, a), kiln_rt_free(b->dev, bb), kiln_rt_free(b->dev, c);
  free(ha), free(hb), free(hc), free(got), free(ref);
  kiln_rt_module_destroy(l.k.mod);
  return rc;
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *f) {
  fputs("usage: gpu-bench --bundle DIR [--device cuda:0] [--arch sm_90] [--reps N] [--json FILE]\n"
        "Times Kiln kernels (cubins from bench/gpu/prepare.sh) against a device copy and cuBLAS.\n"
        "The runtime picks each kernel's image for this GPU; --arch only labels the report.\n"
        "Exit: 0 ok, 1 a case failed, 2 no GPU, 64 bad usage.\n",
        f);
}

int main(int argc, char **argv) {
  Bench b = {.reps = 20};
  const char *device = "cuda:0", *json_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--bundle") && i + 1 < argc)
      b.bundle = argv[++i];
    else if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = argv[++i];
    else if (!strcmp(argv[i], "--arch") && i + 1 < argc)
      b.arch = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      b.reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc)
      json_path = argv[++i];
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 64;
    }
  }
  if (!b.bundle || b.reps < 1) {
    usage(stderr);
    return 64;
  }
  if (kiln_rt_device_create(device, &b.dev) != KILN_RT_OK) {
    fprintf(stderr, "gpu-bench: %s: %s\n", device, kiln_rt_last_error());
    return 2;
  }
  KilnRtDeviceInfo info;
  kiln_rt_device_info(b.dev, &info);
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%d", info.cc_major, info.cc_minor);
  if (!b.arch) b.arch = arch;
  if (kiln_rt_stream_create(b.dev, &b.stream) || kiln_rt_event_create(b.dev, &b.ev0) ||
      kiln_rt_event_create(b.dev, &b.ev1)) {
    fprintf(stderr, "gpu-bench: %s\n", kiln_rt_last_error());
    return 2;
  }
  if (json_path && !(b.json = fopen(json_path, "w"))) {
    perror(json_path);
    return 2;
  }
  if (b.json)
    fprintf(b.json,
            "{\n  \"device\": \"%s\", \"arch\": \"%s\", \"sm_count\": %d, \"driver\": %d,\n  "
            "\"cases\": [\n",
            info.name, b.arch, info.sm_count, info.driver_version);
  printf("device: %s (%s, %d SMs)\n\n%-32s %-16s %10s %10s %-7s %-10s %10s\n", info.name, b.arch,
         info.sm_count, "case", "shape", "median ms", "rate", "unit", "reference", "ref rate");
  int failures = 0;
  failures += bench_vector_add(&b, 1 << 26) != 0;
  failures += bench_softmax(&b, 32768, 4096) != 0;
  failures += bench_matmul(&b, 4096, 4096, 4096, "matmul_f16_128x128x32", 128, 128, 8) != 0;
  failures += bench_matmul(&b, 4096, 4096, 4096, "matmul_f16_64x64x32", 64, 64, 4) != 0;
  failures +=
      bench_matmul(&b, 4096, 4096, 4096, "matmul_f16_128x128x32_pipelined", 128, 128, 8) != 0;
  failures += bench_matmul(&b, 4096, 4096, 4096, "matmul_f16_64x64x32_pipelined", 64, 64, 4) != 0;
  failures += bench_matmul(&b, 4096, 4096, 4096, "matmul_f16_128x128x32_wgmma", 128, 128, 8) != 0;
  failures += bench_matmul(&b, 4096, 4096, 4096, "matmul_f16_128x128x64_wgmma4", 128, 128, 8) != 0;
  if (b.json) {
    fprintf(b.json, "\n  ],\n  \"failures\": %d\n}\n", failures);
    fclose(b.json);
  }
  kiln_rt_event_destroy(b.ev0);
  kiln_rt_event_destroy(b.ev1);
  kiln_rt_stream_destroy(b.stream);
  kiln_rt_device_destroy(b.dev);
  return failures ? 1 : 0;
}
