/* harness.c — compile, load, launch and check for the BERT kernel tests (see harness.h). */
#include "harness.h"
#include "test_files.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if !defined(KILN_BERT_KERNEL_DIR) && !defined(KILN_BERT_NO_COMPILER)
#error "KILN_BERT_KERNEL_DIR must name the kernels-bert folder"
#endif

void *kiln_bert_alloc(size_t n, size_t size) {
  /* The bound also tells gcc the size is sane (-Walloc-size-larger-than). */
  void *p = n <= ((size_t)1 << 32) / size ? calloc(n ? n : 1, size) : NULL;
  if (!p) {
    fprintf(stderr, "bert test: out of memory\n");
    exit(2);
  }
  return p;
}

float *kiln_bert_random_f32(KilnRefRng *rng, size_t n, float lo, float hi) {
  float *p = kiln_bert_alloc(n, sizeof *p);
  for (size_t i = 0; i < n; i++)
    p[i] = kiln_ref_rng_uniform(rng, lo, hi);
  return p;
}

float *kiln_bert_random_f16r(KilnRefRng *rng, size_t n, float lo, float hi) {
  float *p = kiln_bert_random_f32(rng, n, lo, hi);
  for (size_t i = 0; i < n; i++)
    p[i] = kiln_ref_round_f16(p[i]);
  return p;
}

uint16_t *kiln_bert_to_f16(const float *x, size_t n) {
  uint16_t *h = kiln_bert_alloc(n, sizeof *h);
  for (size_t i = 0; i < n; i++)
    h[i] = kiln_ref_f32_to_f16(x[i]);
  return h;
}

float *kiln_bert_from_f16(const uint16_t *h, size_t n) {
  float *x = kiln_bert_alloc(n, sizeof *x);
  for (size_t i = 0; i < n; i++)
    x[i] = kiln_ref_f16_to_f32(h[i]);
  return x;
}

const char *kiln_bert_type_name(KilnScalarKind t) { return kiln_scalar_name(t); }

size_t kiln_bert_elem_size(KilnScalarKind t) {
  return t == KILN_SCALAR_F32 || t == KILN_SCALAR_I32 ? 4 : t == KILN_SCALAR_I64 ? 8 : t == KILN_SCALAR_F16 || t == KILN_SCALAR_BF16 || t == KILN_SCALAR_I16 ? 2 : 1;
}

float kiln_bert_round(float x, KilnScalarKind t) {
  return t == KILN_SCALAR_F16 ? kiln_ref_round_f16(x) : t == KILN_SCALAR_BF16 ? kiln_ref_round_bf16(x) : x;
}

float *kiln_bert_random_t(KilnRefRng *rng, size_t n, float lo, float hi, KilnScalarKind t) {
  float *p = kiln_bert_random_f32(rng, n, lo, hi);
  for (size_t i = 0; i < n; i++)
    p[i] = kiln_bert_round(p[i], t);
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
  if (t == KILN_SCALAR_F32)
    return ((const float *)raw)[i];
  uint16_t h = ((const uint16_t *)raw)[i];
  return t == KILN_SCALAR_F16 ? kiln_ref_f16_to_f32(h) : kiln_ref_bf16_to_f32(h);
}

void *kiln_bert_input_t(KilnBertRun *run, const float *x, size_t n, KilnScalarKind t) {
  void *h = kiln_bert_to_elem(x, n, t);
  void *d = kiln_bert_input(run, h, n * kiln_bert_elem_size(t));
  free(h);
  return d;
}

float *kiln_bert_fetch_t(KilnBertRun *run, const char *what, const void *d, size_t n, KilnScalarKind t) {
  size_t esz = kiln_bert_elem_size(t), total = n + KILN_BERT_TAIL;
  unsigned char *raw = kiln_bert_alloc(total, esz);
  kiln_bert_fetch(run, raw, d, total * esz);
  kiln_bert_check_untouched(run, what, raw, esz, total, 1, n, total);
  float *out = kiln_bert_alloc(n, 4);
  for (size_t i = 0; i < n; i++)
    out[i] = kiln_bert_elem_get(raw, i, t);
  free(raw);
  return out;
}

uint32_t kiln_bert_cdiv(size_t a, size_t b) { return (uint32_t)((a + b - 1) / b); }

double kiln_bert_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void kiln_bert_fail(KilnBertRun *run, const char *fmt, ...) {
  if (run->emit)
    return; /* nothing ran: the checks of zeros mean nothing */
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "  %s: ", run->label);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  run->ok = false;
}

static void fail_rt(KilnBertRun *run, const char *what, KilnRtStatus st) {
  kiln_bert_fail(run, "%s failed: %s: %s", what, kiln_rt_status_name(st), kiln_rt_last_error());
}

/* A failure of the harness itself (also while emitting a bundle). */
static void fail_always(KilnBertRun *run, const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "  %s: ", run->label);
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
  run->ok = false;
}

bool kiln_bert_on_emu(const KilnBertDevice *dev) { return dev->target != KILN_TARGET_CPU; }

static const char *target_label(KilnTarget t) { return kiln_target_name(t); }

void kiln_bert_begin(KilnBertRun *run, const KilnBertDevice *dev, const char *fmt, ...) {
  memset(run, 0, sizeof *run);
  run->dev = dev->rt;
  run->target = dev->target;
  run->num_warps = dev->num_warps;
  run->bundle = dev->bundle;
  run->emit = dev->emit;
  run->ok = true;
  run->start = kiln_bert_now();
  const char *where = dev->bundle && !dev->emit && dev->target != KILN_TARGET_EMU ? "cuda"
                                                                                  : target_label(dev->target);
  int pre = snprintf(run->label, sizeof run->label, "[%s w%d] ", where, dev->num_warps);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(run->label + pre, sizeof run->label - (size_t)pre, fmt, ap);
  va_end(ap);
}

/* The file name of a kernel configuration in a bundle: source, kernel, consts, warps. */
static void bundle_name(char *buf, size_t cap, const char *file, const char *kernel,
                        const KilnDefine *defs, size_t ndefs, int num_warps) {
  int len = snprintf(buf, cap, "%s-%s", file, kernel);
  for (size_t i = 0; i < ndefs && len > 0 && (size_t)len < cap; i++)
    len += snprintf(buf + len, cap - (size_t)len, "-%s=%" PRId64, defs[i].name, defs[i].value);
  if (len > 0 && (size_t)len < cap)
    snprintf(buf + len, cap - (size_t)len, "-w%d", num_warps);
}

/* The kernel's image from the bundle: a host object on emu; on a GPU the cubin of its arch,
 * else the PTX (which the driver compiles). */
static KilnRtModule *bundle_load(KilnBertRun *run, const char *name) {
  static const struct { const char *ext; KilnRtModuleFormat fmt; } gpu[] = {
      {"cubin", KILN_RT_MODULE_CUBIN}, {"ptx", KILN_RT_MODULE_PTX}};
  char arch[16] = "emu";
  if (run->target != KILN_TARGET_EMU) {
    KilnRtDeviceInfo info;
    KilnRtStatus st = kiln_rt_device_info(run->dev, &info);
    if (st != KILN_RT_OK) {
      fail_rt(run, "kiln_rt_device_info", st);
      return NULL;
    }
    snprintf(arch, sizeof arch, "sm_%d%d", info.cc_major, info.cc_minor);
  }
  for (size_t i = 0; i < (run->target == KILN_TARGET_EMU ? 1 : 2); i++) {
    char path[1400];
    bool host = run->target == KILN_TARGET_EMU;
    snprintf(path, sizeof path, "%s/%s.%s.%s", run->bundle, name, arch, host ? "o" : gpu[i].ext);
    size_t len = 0;
    void *img = kiln_test_read_file(path, &len);
    if (!img)
      continue;
    KilnRtModule *mod = NULL;
    KilnRtStatus st = kiln_rt_module_load(run->dev, host ? KILN_RT_MODULE_HOST_OBJECT : gpu[i].fmt,
                                          img, len, &mod);
    free(img);
    if (st != KILN_RT_OK)
      fail_rt(run, "kiln_rt_module_load", st);
    return mod;
  }
  fail_always(run, "no image %s.%s.* in the bundle (bench/gpu/prepare.sh makes it)", name, arch);
  return NULL;
}

#ifndef KILN_BERT_NO_COMPILER
/* PATH written whole or not at all (a temp file renamed over it). */
static bool write_atomic(const char *path, const void *data, size_t n) {
  return kiln_file_write_atomic(path, data, n) == 0; /* the shared writer (kiln_base.h) */
}

static bool compile(KilnBertRun *run, const char *file, const char *kernel, const KilnDefine *defs,
                    size_t ndefs, KilnEmit emit, KilnBuffer *out) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.kiln", KILN_BERT_KERNEL_DIR, file);
  KilnCompileOptions opts;
  memset(&opts, 0, sizeof opts);
  opts.path = path;
  opts.kernel = kernel;
  opts.defines = defs;
  opts.num_defines = ndefs;
  opts.target = run->target;
  opts.num_warps = run->num_warps;
  opts.diag = stderr;
  KilnDriverStatus ds = kiln_driver_compile(&opts, emit, out);
  if (ds != KILN_DRIVER_OK) {
    fail_always(run, "%s: compile failed (%s; diagnostics above)", kernel, kiln_emit_name(emit));
    kiln_buffer_free(out);
    return false;
  }
  return true;
}

/* Emit mode: the kernel's images for the bundle (written once: tests ask for some twice). */
static void bundle_write(KilnBertRun *run, const char *file, const char *kernel,
                         const KilnDefine *defs, size_t ndefs, const char *name) {
  static const struct { const char *ext; KilnEmit emit; } gpu[] = {
      {"ptx", KILN_EMIT_PTX}, {"cubin", KILN_EMIT_CUBIN}}, host[] = {{"o", KILN_EMIT_OBJ}};
  bool is_emu = run->target == KILN_TARGET_EMU;
  for (size_t i = 0; i < (is_emu ? 1 : 2) && run->ok; i++) {
    const char *ext = is_emu ? host[i].ext : gpu[i].ext;
    char path[1400];
    snprintf(path, sizeof path, "%s/%s.%s.%s", run->bundle, name, target_label(run->target), ext);
    FILE *probe = fopen(path, "rb");
    if (probe) {
      fclose(probe);
      continue;
    }
    KilnBuffer out = {0};
    if (!compile(run, file, kernel, defs, ndefs, is_emu ? host[i].emit : gpu[i].emit, &out))
      return;
    bool ok = write_atomic(path, out.data, out.size);
    kiln_buffer_free(&out);
    if (!ok)
      fail_always(run, "cannot write %s%s", path, "");
    else
      run->emitted++;
  }
}
#endif

KilnRtFunction *kiln_bert_kernel(KilnBertRun *run, const char *file, const char *kernel,
                                 const KilnDefine *defs, size_t ndefs) {
  if (!run->ok)
    return NULL;
  if (run->nmods == KILN_BERT_MAX_MODS) {
    kiln_bert_fail(run, "more than %d modules", KILN_BERT_MAX_MODS);
    return NULL;
  }
  char name[512];
  bundle_name(name, sizeof name, file, kernel, defs, ndefs, run->num_warps);
  KilnRtModule *mod = NULL;
  if (run->bundle && !run->emit) {
    if (!(mod = bundle_load(run, name)))
      return NULL;
  } else {
#ifdef KILN_BERT_NO_COMPILER
    fail_always(run, "%s%s: this build has no compiler: give --bundle DIR", kernel, "");
    return NULL;
#else
    if (run->emit) {
      bundle_write(run, file, kernel, defs, ndefs, name);
      return NULL; /* nothing runs */
    }
    KilnBuffer obj = {0};
    if (!compile(run, file, kernel, defs, ndefs, KILN_EMIT_OBJ, &obj))
      return NULL;
    KilnRtStatus st = kiln_rt_module_load(run->dev, KILN_RT_MODULE_HOST_OBJECT, obj.data, obj.size, &mod);
    kiln_buffer_free(&obj);
    if (st != KILN_RT_OK) {
      fail_rt(run, "kiln_rt_module_load", st);
      return NULL;
    }
#endif
  }
  run->mods[run->nmods++] = mod;
  KilnRtFunction *fn = NULL;
  KilnRtStatus st = kiln_rt_module_get_function(mod, kernel, &fn);
  if (st != KILN_RT_OK) {
    fail_rt(run, "kiln_rt_module_get_function", st);
    return NULL;
  }
  return fn;
}

static void *alloc_dev(KilnBertRun *run, size_t bytes) {
  if (!run->ok)
    return NULL;
  if (run->nbufs == KILN_BERT_MAX_BUFS) {
    kiln_bert_fail(run, "more than %d buffers", KILN_BERT_MAX_BUFS);
    return NULL;
  }
  void *d = NULL;
  KilnRtStatus st = kiln_rt_malloc(run->dev, bytes ? bytes : 1, &d);
  if (st != KILN_RT_OK) {
    fail_rt(run, "kiln_rt_malloc", st);
    return NULL;
  }
  run->bufs[run->nbufs++] = d;
  return d;
}

void kiln_bert_upload(KilnBertRun *run, void *d, const void *host, size_t bytes) {
  if (!run->ok)
    return;
  KilnRtStatus st = kiln_rt_memcpy_htod(run->dev, d, host, bytes, NULL);
  if (st != KILN_RT_OK)
    fail_rt(run, "kiln_rt_memcpy_htod", st);
}

void *kiln_bert_input(KilnBertRun *run, const void *host, size_t bytes) {
  void *d = alloc_dev(run, bytes);
  if (d)
    kiln_bert_upload(run, d, host, bytes);
  return d;
}

void *kiln_bert_output(KilnBertRun *run, size_t bytes) {
  void *d = alloc_dev(run, bytes);
  if (!d)
    return NULL;
  KilnRtStatus st = kiln_rt_memset(run->dev, d, KILN_BERT_SENTINEL, bytes, NULL);
  if (st != KILN_RT_OK)
    fail_rt(run, "kiln_rt_memset", st);
  return d;
}

void kiln_bert_launch(KilnBertRun *run, KilnRtFunction *fn, uint32_t gx, uint32_t gy, void **args) {
  if (!run->ok || run->emit)
    return;
  KilnRtLaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.grid[0] = gx;
  cfg.grid[1] = gy;
  cfg.grid[2] = 1;
  cfg.block_threads = 32 * (uint32_t)run->num_warps;
  KilnRtStatus st = kiln_rt_launch(fn, &cfg, args, NULL);
  if (st != KILN_RT_OK) {
    fail_rt(run, "kiln_rt_launch", st);
    return;
  }
  st = kiln_rt_device_synchronize(run->dev);
  if (st != KILN_RT_OK)
    fail_rt(run, "kiln_rt_device_synchronize", st);
}

void kiln_bert_fetch(KilnBertRun *run, void *host, const void *d, size_t bytes) {
  if (!run->ok || run->emit)
    return;
  KilnRtStatus st = kiln_rt_memcpy_dtoh(run->dev, host, d, bytes, NULL);
  if (st != KILN_RT_OK)
    fail_rt(run, "kiln_rt_memcpy_dtoh", st);
}

bool kiln_bert_end(KilnBertRun *run) {
  for (int i = 0; i < run->nbufs; i++)
    kiln_rt_free(run->dev, run->bufs[i]);
  for (int i = 0; i < run->nmods; i++)
    kiln_rt_module_destroy(run->mods[i]);
  if (run->emit)
    printf("  %-4s %s: %d image(s) written\n", run->ok ? "ok" : "FAIL", run->label, run->emitted);
  else
    printf("  %-4s %s (%.1f s)\n", run->ok ? "ok" : "FAIL", run->label, kiln_bert_now() - run->start);
  fflush(stdout);
  return run->ok;
}

void kiln_bert_check_untouched(KilnBertRun *run, const char *what, const void *buf, size_t elem,
                               size_t total, size_t rows, size_t cols, size_t stride) {
  if (!run->ok || run->emit)
    return;
  const unsigned char *bytes = buf;
  size_t clobbered = 0, first = 0;
  for (size_t i = 0; i < total; i++) {
    if (i / stride < rows && i % stride < cols)
      continue;
    for (size_t b = 0; b < elem; b++)
      if (bytes[i * elem + b] != KILN_BERT_SENTINEL) {
        if (clobbered++ == 0)
          first = i;
        break;
      }
  }
  if (clobbered)
    kiln_bert_fail(run, "%s: %zu element(s) outside the result were written (first at %zu)", what,
                   clobbered, first);
}

void kiln_bert_check_close(KilnBertRun *run, const char *what, const float *got, const float *ref,
                           size_t n, double floor, double tol) {
  if (!run->ok || run->emit)
    return;
  size_t worst = 0;
  double err = kiln_ref_max_error(got, ref, n, floor, &worst);
  printf("       %-10s max err %.3e (tol %.1e, floor %.0e)", what, err, tol, floor);
  if (n)
    printf(" worst [%zu] got %.9g want %.9g", worst, (double)got[worst], (double)ref[worst]);
  printf("\n");
  if (!(err <= tol))
    kiln_bert_fail(run, "%s: max normalized error %.3e above the tolerance %.1e at element %zu",
                   what, err, tol, worst);
}

bool kiln_bert_fd_column(size_t c, size_t cols, size_t step) { return c % step == 0 || c + 1 == cols; }

void kiln_bert_check_close_columns(KilnBertRun *run, const char *what, const float *got,
                                   const float *ref, size_t rows, size_t cols, size_t step,
                                   double floor, double tol) {
  float *g = kiln_bert_alloc(rows * cols, 4), *r = kiln_bert_alloc(rows * cols, 4);
  size_t n = 0;
  for (size_t i = 0; i < rows; i++)
    for (size_t c = 0; c < cols; c++)
      if (kiln_bert_fd_column(c, cols, step))
        g[n] = got[i * cols + c], r[n++] = ref[i * cols + c];
  kiln_bert_check_close(run, what, g, r, n, floor, tol);
  free(g), free(r);
}
