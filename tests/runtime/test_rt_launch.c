/* Kernels on the cpu device: module loading (object and shared object), launches against a C
 * reference, grid coverage, big stacks, events, graph capture and replay (launches, copies and
 * memsets), and the failure paths. The kernels are C files compiled at build time; their paths
 * come in as KILN_TEST_*. */
#include "rt_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

static KilnRtModule *load(KilnRtDevice *dev, KilnRtModuleFormat format, const char *path) {
  size_t size = 0;
  unsigned char *image = rt_test_read_file(path, &size);
  CHECK(image != NULL && size > 0);
  if (!image) return NULL;
  KilnRtModule *mod = NULL;
  CHECK_OK(kiln_rt_module_load(dev, format, image, size, &mod));
  free(image); /* the runtime copied what it needs */
  return mod;
}

/* Runs saxpy over rows x n with the C reference; returns the max abs error (or INFINITY). */
static float run_saxpy(KilnRtDevice *dev, KilnRtFunction *fn, int32_t n, int32_t rows, float a) {
  size_t count = (size_t)n * (size_t)rows, bytes = count * sizeof(float);
  float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
  for (size_t i = 0; i < count; i++) {
    x[i] = (float)(i % 97) * 0.25f - 3.0f;
    y[i] = (float)(i % 13) * -1.5f + 0.5f;
    out[i] = -12345.0f;
  }
  void *dx = NULL, *dy = NULL, *dout = NULL;
  CHECK_OK(kiln_rt_malloc(dev, bytes, &dx));
  CHECK_OK(kiln_rt_malloc(dev, bytes, &dy));
  CHECK_OK(kiln_rt_malloc(dev, bytes + 64, &dout));
  CHECK_OK(kiln_rt_memcpy_htod(dev, dx, x, bytes, NULL));
  CHECK_OK(kiln_rt_memcpy_htod(dev, dy, y, bytes, NULL));
  CHECK_OK(kiln_rt_memset(dev, dout, 0x7F, bytes + 64, NULL)); /* a canary past the end */

  void *args[] = {&dx, &dy, &dout, &a, &n};
  KilnRtLaunchConfig cfg = {{(uint32_t)((n + 63) / 64), (uint32_t)rows, 1}, 128, 0};
  CHECK_OK(kiln_rt_launch(fn, &cfg, args, NULL));
  CHECK_OK(kiln_rt_memcpy_dtoh(dev, out, dout, bytes, NULL));
  unsigned char canary[64];
  CHECK_OK(kiln_rt_memcpy_dtoh(dev, canary, (char *)dout + bytes, 64, NULL));
  for (int i = 0; i < 64; i++) CHECK(canary[i] == 0x7F); /* the tail mask held */

  float max_err = 0.0f;
  for (size_t i = 0; i < count; i++) {
    float want = a * x[i] + y[i];
    float err = fabsf(out[i] - want);
    if (!(err <= max_err)) max_err = err; /* NaN propagates as a failure */
  }
  kiln_rt_free(dev, dx);
  kiln_rt_free(dev, dy);
  kiln_rt_free(dev, dout);
  free(x);
  free(y);
  free(out);
  return max_err;
}

static void test_saxpy_object(KilnRtDevice *dev) {
  KilnRtModule *mod = load(dev, KILN_RT_MODULE_HOST_OBJECT, KILN_TEST_SAXPY_OBJ);
  if (!mod) return;
  KilnRtFunction *fn = NULL, *again = NULL;
  CHECK_OK(kiln_rt_module_get_function(mod, "saxpy", &fn));
  CHECK_OK(kiln_rt_module_get_function(mod, "saxpy", &again));
  CHECK(fn && fn == again);
  if (fn) {
    /* what a library says of the code, and which function this thread launched last */
    CHECK(strcmp(kiln_rt_function_about(fn), "") == 0);
    CHECK(strcmp(kiln_rt_function_name(fn), "saxpy") == 0);
    CHECK_OK(kiln_rt_function_set_about(fn, "BLOCK=64, promises n%16"));
    CHECK_OK(kiln_rt_function_set_about(fn, "BLOCK=64, tuned"));
    CHECK(strcmp(kiln_rt_function_about(fn), "BLOCK=64, tuned") == 0);
    CHECK_STATUS(kiln_rt_function_set_about(fn, NULL), KILN_RT_ERROR_INVALID_ARGUMENT);
    uint64_t before = 0, after = 0;
    kiln_rt_last_launch(&before);
    CHECK(run_saxpy(dev, fn, 1000, 1, 2.5f) == 0.0f); /* 16 programs, the last one partial */
    CHECK(kiln_rt_last_launch(&after) == fn && after == before + 1);
    KilnRtLaunchConfig zero = {{0, 1, 1}, 32, 0};
    CHECK_STATUS(kiln_rt_launch(fn, &zero, NULL, NULL), KILN_RT_ERROR_INVALID_ARGUMENT);
    CHECK(kiln_rt_last_launch(&before) == fn && before == after); /* a refused one is not */
    CHECK(run_saxpy(dev, fn, 64, 1, -1.0f) == 0.0f);              /* exactly one full program */
    CHECK(run_saxpy(dev, fn, 1, 1, 3.0f) == 0.0f);                /* tail only */
    CHECK(run_saxpy(dev, fn, 333, 7, 0.5f) == 0.0f);              /* 2-D grid: rows on y */
  }
  CHECK_STATUS(kiln_rt_module_get_function(mod, "no_such_kernel", &fn), KILN_RT_ERROR_NOT_FOUND);
  CHECK_CONTAINS(kiln_rt_last_error(), "no_such_kernel");
  CHECK_STATUS(kiln_rt_module_get_function(mod, "bad name", &fn), KILN_RT_ERROR_INVALID_ARGUMENT);
  kiln_rt_module_destroy(mod);
}

static void test_saxpy_shared(KilnRtDevice *dev) {
  KilnRtModule *mod = load(dev, KILN_RT_MODULE_HOST_SHARED, KILN_TEST_SAXPY_SO);
  if (!mod) return;
  KilnRtFunction *fn = NULL;
  CHECK_OK(kiln_rt_module_get_function(mod, "saxpy", &fn));
  if (fn) CHECK(run_saxpy(dev, fn, 4097, 3, 1.25f) == 0.0f);
  kiln_rt_module_destroy(mod);
}

static void check_grid(KilnRtDevice *dev, KilnRtFunction *probe, uint32_t gx, uint32_t gy,
                       uint32_t gz) {
  size_t total = (size_t)gx * gy * gz;
  int32_t *hits = NULL, *bad = NULL, *want = NULL;
  CHECK_OK(kiln_rt_malloc(dev, total * sizeof *hits, (void **)&hits));
  CHECK_OK(kiln_rt_malloc(dev, sizeof *bad, (void **)&bad));
  CHECK_OK(kiln_rt_malloc(dev, 3 * sizeof *want, (void **)&want));
  if (!hits || !bad || !want) return;
  CHECK_OK(kiln_rt_memset(dev, hits, 0, total * sizeof *hits, NULL));
  CHECK_OK(kiln_rt_memset(dev, bad, 0, sizeof *bad, NULL));
  int32_t grid[3] = {(int32_t)gx, (int32_t)gy, (int32_t)gz};
  CHECK_OK(kiln_rt_memcpy_htod(dev, want, grid, sizeof grid, NULL));
  void *args[] = {&hits, &bad, &want};
  KilnRtLaunchConfig cfg = {{gx, gy, gz}, 32, 0};
  CHECK_OK(kiln_rt_launch(probe, &cfg, args, NULL));
  /* cpu device addresses are host addresses: read them directly. */
  size_t wrong = 0;
  for (size_t i = 0; i < total; i++) wrong += hits[i] != 1;
  CHECK(wrong == 0);
  CHECK(*bad == 0);
  kiln_rt_free(dev, hits);
  kiln_rt_free(dev, bad);
  kiln_rt_free(dev, want);
}

/* Back-to-back launches of small grids (fewer programs than workers, then more): the pool hands
 * each to as many workers as it has programs, and a worker late for one launch may serve the
 * next; every program of every launch must still run exactly once, from two launching threads. */
typedef struct SmallLaunches {
  KilnRtDevice *dev;
  KilnRtFunction *probe;
  int seed;
  size_t wrong;
} SmallLaunches;

static void *small_launches(void *arg) {
  SmallLaunches *s = arg;
  enum { MAXP = 9, ROUNDS = 1500 };
  int32_t *hits = NULL, *bad = NULL, *want = NULL;
  if (kiln_rt_malloc(s->dev, MAXP * sizeof *hits, (void **)&hits) ||
      kiln_rt_malloc(s->dev, sizeof *bad, (void **)&bad) ||
      kiln_rt_malloc(s->dev, 3 * sizeof *want, (void **)&want)) {
    s->wrong = 1;
    return NULL;
  }
  for (int r = 0; r < ROUNDS; r++) {
    uint32_t gx = 1 + (uint32_t)((r * 7 + s->seed) % MAXP);
    memset(hits, 0, MAXP * sizeof *hits);
    *bad = 0;
    want[0] = (int32_t)gx, want[1] = want[2] = 1;
    void *args[] = {&hits, &bad, &want};
    KilnRtLaunchConfig cfg = {{gx, 1, 1}, 32, 0};
    if (kiln_rt_launch(s->probe, &cfg, args, NULL) != KILN_RT_OK) s->wrong++;
    for (uint32_t i = 0; i < MAXP; i++) s->wrong += hits[i] != (i < gx);
    s->wrong += *bad != 0;
  }
  kiln_rt_free(s->dev, hits);
  kiln_rt_free(s->dev, bad);
  kiln_rt_free(s->dev, want);
  return NULL;
}

static void test_small_launches(KilnRtDevice *dev) {
  KilnRtModule *mod = load(dev, KILN_RT_MODULE_HOST_OBJECT, KILN_TEST_GRID_OBJ);
  if (!mod) return;
  KilnRtFunction *probe = NULL;
  CHECK_OK(kiln_rt_module_get_function(mod, "grid_probe", &probe));
  if (probe) {
    SmallLaunches a = {dev, probe, 0, 0}, b = {dev, probe, 4, 0};
    pthread_t t;
    bool threaded = pthread_create(&t, NULL, small_launches, &b) == 0;
    small_launches(&a);
    if (threaded) pthread_join(t, NULL);
    CHECK(a.wrong == 0);
    CHECK(!threaded || b.wrong == 0);
  }
  kiln_rt_module_destroy(mod);
}

static void test_grid_and_stack(KilnRtDevice *dev) {
  KilnRtModule *mod = load(dev, KILN_RT_MODULE_HOST_OBJECT, KILN_TEST_GRID_OBJ);
  if (!mod) return;
  KilnRtFunction *probe = NULL, *big = NULL;
  CHECK_OK(kiln_rt_module_get_function(mod, "grid_probe", &probe));
  CHECK_OK(kiln_rt_module_get_function(mod, "big_stack", &big));
  if (probe) {
    check_grid(dev, probe, 1, 1, 1);
    check_grid(dev, probe, 37, 1, 1);
    check_grid(dev, probe, 13, 11, 1);
    check_grid(dev, probe, 5, 7, 9);
    check_grid(dev, probe, 1, 1, 300);
    KilnRtLaunchConfig zero = {{4, 0, 1}, 32, 0};
    void *args[3] = {0};
    CHECK_STATUS(kiln_rt_launch(probe, &zero, args, NULL), KILN_RT_ERROR_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_rt_last_error(), "grid[1] = 0");
  }
  if (big) {
    enum { P = 6 };
    int64_t *out = NULL;
    CHECK_OK(kiln_rt_malloc(dev, P * sizeof *out, (void **)&out));
    void *args[] = {&out};
    KilnRtLaunchConfig cfg = {{P, 1, 1}, 32, 0};
    CHECK_OK(kiln_rt_launch(big, &cfg, args, NULL));
    const int64_t n = 4 * 1024 * 1024;
    for (int i = 0; i < P; i++) CHECK(out[i] == n * (n - 1) / 2);
    kiln_rt_free(dev, out);
  }
  kiln_rt_module_destroy(mod);
}

static void test_events(KilnRtDevice *dev) {
  KilnRtEvent *start = NULL, *end = NULL;
  KilnRtStream *s = NULL;
  CHECK_OK(kiln_rt_event_create(dev, &start));
  CHECK_OK(kiln_rt_event_create(dev, &end));
  CHECK_OK(kiln_rt_stream_create(dev, &s));
  float ms = -1.0f;
  CHECK_STATUS(kiln_rt_event_elapsed_ms(start, end, &ms), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(kiln_rt_last_error(), "never recorded");
  CHECK_OK(kiln_rt_event_synchronize(start)); /* never recorded: nothing to wait for */
  CHECK_OK(kiln_rt_event_record(start, s));
  volatile double sink = 0;
  for (int i = 0; i < 2000000; i++) sink += i * 0.5;
  CHECK_OK(kiln_rt_event_record(end, s));
  CHECK_OK(kiln_rt_event_synchronize(end));
  CHECK_OK(kiln_rt_event_elapsed_ms(start, end, &ms));
  CHECK(ms >= 0.0f && ms < 60000.0f);
  CHECK_OK(kiln_rt_event_record(start, NULL));
  CHECK_OK(kiln_rt_event_record(end, NULL));
  CHECK_OK(kiln_rt_event_elapsed_ms(start, end, &ms));
  CHECK(ms >= 0.0f);
  kiln_rt_stream_destroy(s);
  kiln_rt_event_destroy(start);
  kiln_rt_event_destroy(end);
}

static void test_graph(KilnRtDevice *dev) {
  KilnRtModule *mod = load(dev, KILN_RT_MODULE_HOST_OBJECT, KILN_TEST_SAXPY_OBJ);
  if (!mod) return;
  KilnRtFunction *fn = NULL;
  CHECK_OK(kiln_rt_module_get_function(mod, "saxpy", &fn));
  if (!fn) {
    kiln_rt_module_destroy(mod);
    return;
  }
  enum { N = 300 };
  float *x = NULL, *y = NULL, *out = NULL;
  CHECK_OK(kiln_rt_malloc(dev, N * sizeof(float), (void **)&x));
  CHECK_OK(kiln_rt_malloc(dev, N * sizeof(float), (void **)&y));
  CHECK_OK(kiln_rt_malloc(dev, N * sizeof(float), (void **)&out));
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }
  KilnRtStream *s = NULL;
  CHECK_OK(kiln_rt_stream_create(dev, &s));
  float a = 2.0f;
  int32_t n = N;
  void *args[] = {&x, &y, &out, &a, &n};
  KilnRtLaunchConfig cfg = {{(N + 63) / 64, 1, 1}, 128, 0};

  /* Without argument sizes a launch cannot be captured. */
  CHECK_OK(kiln_rt_graph_begin_capture(s));
  CHECK_STATUS(kiln_rt_launch(fn, &cfg, args, s), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(kiln_rt_last_error(), "kiln_rt_function_set_arg_sizes");
  KilnRtGraph *g = NULL;
  CHECK_OK(kiln_rt_graph_end_capture(s, &g));
  kiln_rt_graph_destroy(g);
  g = NULL;

  size_t sizes[] = {sizeof(float *), sizeof(float *), sizeof(float *), sizeof(float),
                    sizeof(int32_t)};
  CHECK_OK(kiln_rt_function_set_arg_sizes(fn, sizes, 5));
  CHECK_STATUS(kiln_rt_graph_begin_capture(NULL), KILN_RT_ERROR_INVALID_ARGUMENT);
  for (int i = 0; i < N; i++) out[i] = -1.0f;
  CHECK_OK(kiln_rt_graph_begin_capture(s));
  CHECK_STATUS(kiln_rt_graph_begin_capture(s), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_OK(kiln_rt_memset(dev, out, 0, N * sizeof(float), s));
  CHECK_OK(kiln_rt_launch(fn, &cfg, args, s));
  a = 100.0f; /* changed after capture: the graph must keep 2.0 */
  CHECK_OK(kiln_rt_graph_end_capture(s, &g));
  CHECK_STATUS(kiln_rt_graph_end_capture(s, &g), KILN_RT_ERROR_INVALID_ARGUMENT);
  int untouched = 0; /* nothing ran during the capture */
  for (int i = 0; i < N; i++) untouched += out[i] == -1.0f;
  CHECK(untouched == N);

  for (int rep = 0; rep < 3; rep++) {
    for (int i = 0; i < N; i++) out[i] = -1.0f;
    y[0] = (float)rep; /* buffers are read at replay time, values at capture time */
    CHECK_OK(kiln_rt_graph_launch(g, rep == 1 ? NULL : s));
    CHECK_OK(kiln_rt_stream_synchronize(s));
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += out[i] != 2.0f * (float)i + y[i];
    CHECK(wrong == 0);
  }
  /* An eager launch sees the new value. */
  CHECK_OK(kiln_rt_launch(fn, &cfg, args, s));
  CHECK(out[3] == 100.0f * 3 + 1.0f);

  /* A recapture replaces the graph's work: the new value of a, then a stream not capturing. */
  a = 3.0f;
  CHECK_OK(kiln_rt_graph_begin_capture(s));
  CHECK_OK(kiln_rt_launch(fn, &cfg, args, s));
  CHECK_OK(kiln_rt_graph_recapture(s, g));
  for (int i = 0; i < N; i++) out[i] = -1.0f;
  CHECK_OK(kiln_rt_graph_launch(g, s));
  CHECK_OK(kiln_rt_stream_synchronize(s));
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += out[i] != 3.0f * (float)i + y[i];
  CHECK(wrong == 0, "%d elements not from the recaptured launch", wrong);
  CHECK_STATUS(kiln_rt_graph_recapture(s, g), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_rt_graph_recapture(NULL, g), KILN_RT_ERROR_INVALID_ARGUMENT);

  kiln_rt_graph_destroy(g);
  /* Destroying a stream in the middle of a capture drops the partial graph. */
  CHECK_OK(kiln_rt_graph_begin_capture(s));
  CHECK_OK(kiln_rt_launch(fn, &cfg, args, s));
  KilnRtEvent *ev = NULL;
  CHECK_OK(kiln_rt_event_create(dev, &ev));
  CHECK_STATUS(kiln_rt_event_record(ev, s), KILN_RT_ERROR_UNSUPPORTED);
  kiln_rt_event_destroy(ev);
  kiln_rt_stream_destroy(s);
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, y);
  kiln_rt_free(dev, out);
  kiln_rt_module_destroy(mod);
}

/* Copies and memsets are captured like launches: nothing runs during the capture, and each
 * replay runs them in order (the memset first, then a copy over half of what it cleared). */
static void test_graph_copies(KilnRtDevice *dev) {
  enum { N = 64 };
  int32_t *src = NULL, *dst = NULL;
  CHECK_OK(kiln_rt_malloc(dev, N * sizeof(int32_t), (void **)&src));
  CHECK_OK(kiln_rt_malloc(dev, N * sizeof(int32_t), (void **)&dst));
  KilnRtStream *s = NULL;
  CHECK_OK(kiln_rt_stream_create(dev, &s));
  if (!src || !dst || !s) return;
  for (int i = 0; i < N; i++) src[i] = i, dst[i] = -1;
  KilnRtGraph *g = NULL;
  CHECK_OK(kiln_rt_graph_begin_capture(s));
  CHECK_OK(kiln_rt_memset(dev, dst, 0, N * sizeof(int32_t), s));
  CHECK_OK(kiln_rt_memcpy_dtod(dev, dst + N / 2, src, N / 2 * sizeof(int32_t), s));
  CHECK_OK(kiln_rt_graph_end_capture(s, &g));
  int untouched = 0;
  for (int i = 0; i < N; i++) untouched += dst[i] == -1;
  CHECK(untouched == N, "%d of %d elements changed during the capture", N - untouched, N);
  for (int rep = 0; rep < 2; rep++) {
    for (int i = 0; i < N; i++) dst[i] = -1;
    CHECK_OK(kiln_rt_graph_launch(g, s));
    CHECK_OK(kiln_rt_stream_synchronize(s));
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += dst[i] != (i < N / 2 ? 0 : i - N / 2);
    CHECK(wrong == 0, "replay %d: %d elements wrong", rep, wrong);
  }
  kiln_rt_graph_destroy(g);
  kiln_rt_stream_destroy(s);
  kiln_rt_free(dev, src);
  kiln_rt_free(dev, dst);
}

static void test_bad_modules(KilnRtDevice *dev) {
  KilnRtModule *mod = NULL;
  static const char garbage[] = "this is not an ELF object \x01\x02\x03\x7f";
  CHECK_STATUS(kiln_rt_module_load(dev, KILN_RT_MODULE_HOST_OBJECT, garbage, sizeof garbage, &mod),
               KILN_RT_ERROR_LOAD);
  CHECK(mod == NULL);
  CHECK_CONTAINS(kiln_rt_last_error(), "linking the host object failed");
  CHECK_STATUS(kiln_rt_module_load(dev, KILN_RT_MODULE_HOST_SHARED, garbage, sizeof garbage, &mod),
               KILN_RT_ERROR_LOAD);
  CHECK_CONTAINS(kiln_rt_last_error(), "cannot load the module");
  CHECK_STATUS(kiln_rt_module_load(dev, KILN_RT_MODULE_PTX, garbage, sizeof garbage, &mod),
               KILN_RT_ERROR_UNSUPPORTED);
  CHECK_STATUS(kiln_rt_module_load(dev, KILN_RT_MODULE_HOST_OBJECT, garbage, 0, &mod),
               KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK(mod == NULL);
}

int main(void) {
  KilnRtDevice *dev = NULL;
  CHECK_OK(kiln_rt_device_create("cpu", &dev));
  if (!dev) return kiln_check_result("test_rt_launch");
  test_saxpy_object(dev);
  test_saxpy_shared(dev);
  test_grid_and_stack(dev);
  test_small_launches(dev);
  test_events(dev);
  test_graph(dev);
  test_graph_copies(dev);
  test_bad_modules(dev);
  KilnRtMemStats st;
  CHECK_OK(kiln_rt_mem_stats(dev, &st));
  CHECK(st.bytes_in_use == 0); /* every test freed what it allocated */
  kiln_rt_device_destroy(dev);
  return kiln_check_result("test_rt_launch");
}
