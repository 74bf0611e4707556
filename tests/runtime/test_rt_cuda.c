/* The cuda device on a real GPU, with a hand-written PTX kernel; exits 77 (skipped) without one. */
#include "rt_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* out[i] = a * x[i] + y[i] for i < n; one thread per element. */
static const char saxpy_ptx[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    ".visible .entry saxpy(.param .u64 p_x, .param .u64 p_y, .param .u64 p_out,\n"
    "                      .param .f32 p_a, .param .u32 p_n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .f32 %f<5>;\n"
    "  .reg .b64 %rd<10>;\n"
    "  ld.param.u64 %rd1, [p_x];\n"
    "  ld.param.u64 %rd2, [p_y];\n"
    "  ld.param.u64 %rd3, [p_out];\n"
    "  ld.param.f32 %f1, [p_a];\n"
    "  ld.param.u32 %r1, [p_n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.s32 %p1, %r5, %r1;\n"
    "  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd4, %rd1;\n"
    "  cvta.to.global.u64 %rd5, %rd2;\n"
    "  cvta.to.global.u64 %rd6, %rd3;\n"
    "  mul.wide.s32 %rd7, %r5, 4;\n"
    "  add.s64 %rd8, %rd4, %rd7;\n"
    "  ld.global.f32 %f2, [%rd8];\n"
    "  add.s64 %rd8, %rd5, %rd7;\n"
    "  ld.global.f32 %f3, [%rd8];\n"
    "  fma.rn.f32 %f4, %f1, %f2, %f3;\n"
    "  add.s64 %rd9, %rd6, %rd7;\n"
    "  st.global.f32 [%rd9], %f4;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

enum { N = 1000 };

static int check_result(const float *x, const float *y, const float *out, float a) {
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += fabsf(out[i] - (a * x[i] + y[i])) > 1e-5f;
  return wrong;
}

int main(void) {
  KilnRtDevice *dev = NULL;
  KilnRtStatus st = kiln_rt_device_create("cuda", &dev);
  if (st == KILN_RT_ERROR_NO_DEVICE) {
    printf("skipped: %s\n", kiln_rt_last_error());
    return 77;
  }
  CHECK_OK(st);
  if (!dev) return kiln_check_result("test_rt_cuda");

  KilnRtDeviceInfo info;
  CHECK_OK(kiln_rt_device_info(dev, &info));
  CHECK(info.kind == KILN_RT_DEVICE_CUDA && info.sm_count > 0 && info.total_mem > 0);
  CHECK(info.shared_mem_per_block >= 48 * 1024 && info.driver_version > 0);
  printf("%s: sm_%d%d, %d SMs, %zu B shared/block, driver %d\n", info.name, info.cc_major,
         info.cc_minor, info.sm_count, info.shared_mem_per_block, info.driver_version);

  float x[N], y[N], out[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i * 0.5f;
    y[i] = 3.0f - (float)(i % 7);
  }
  void *dx = NULL, *dy = NULL, *dout = NULL;
  CHECK_OK(kiln_rt_malloc(dev, sizeof x, &dx));
  CHECK_OK(kiln_rt_malloc(dev, sizeof y, &dy));
  CHECK_OK(kiln_rt_malloc(dev, sizeof out, &dout));
  CHECK_OK(kiln_rt_memcpy_htod(dev, dx, x, sizeof x, NULL));
  CHECK_OK(kiln_rt_memcpy_htod(dev, dy, y, sizeof y, NULL));
  CHECK_OK(kiln_rt_memset(dev, dout, 0, sizeof out, NULL));
  CHECK_OK(kiln_rt_memcpy_dtod(dev, dout, dx, sizeof x, NULL));
  CHECK_OK(kiln_rt_memcpy_dtoh(dev, out, dout, sizeof out, NULL));
  CHECK(memcmp(out, x, sizeof x) == 0);

  KilnRtModule *mod = NULL;
  CHECK_OK(kiln_rt_module_load(dev, KILN_RT_MODULE_PTX, saxpy_ptx, strlen(saxpy_ptx), &mod));
  KilnRtFunction *fn = NULL;
  if (mod) {
    CHECK_STATUS(kiln_rt_module_get_function(mod, "nope", &fn), KILN_RT_ERROR_NOT_FOUND);
    CHECK_OK(kiln_rt_module_get_function(mod, "saxpy", &fn));
  }
  if (fn) {
    float a = 1.5f;
    int32_t n = N;
    void *args[] = {&dx, &dy, &dout, &a, &n};
    KilnRtLaunchConfig cfg = {{(N + 127) / 128, 1, 1}, 128, 0};
    CHECK_OK(kiln_rt_launch(fn, &cfg, args, NULL));
    CHECK_OK(kiln_rt_memcpy_dtoh(dev, out, dout, sizeof out, NULL));
    CHECK(check_result(x, y, out, a) == 0);

    /* Stream + events + graph: replays use the values captured (a = 2). */
    KilnRtStream *s = NULL;
    KilnRtEvent *e0 = NULL, *e1 = NULL;
    CHECK_OK(kiln_rt_stream_create(dev, &s));
    CHECK_OK(kiln_rt_event_create(dev, &e0));
    CHECK_OK(kiln_rt_event_create(dev, &e1));
    a = 2.0f;
    CHECK_OK(kiln_rt_graph_begin_capture(s));
    CHECK_OK(kiln_rt_memset(dev, dout, 0, sizeof out, s));
    CHECK_OK(kiln_rt_launch(fn, &cfg, args, s));
    KilnRtGraph *g = NULL;
    CHECK_OK(kiln_rt_graph_end_capture(s, &g));
    a = 50.0f;
    if (g) {
      CHECK_OK(kiln_rt_event_record(e0, s));
      CHECK_OK(kiln_rt_graph_launch(g, s));
      CHECK_OK(kiln_rt_event_record(e1, s));
      CHECK_OK(kiln_rt_memcpy_dtoh(dev, out, dout, sizeof out, s));
      CHECK_OK(kiln_rt_stream_synchronize(s));
      CHECK(check_result(x, y, out, 2.0f) == 0);
      float ms = -1;
      CHECK_OK(kiln_rt_event_elapsed_ms(e0, e1, &ms));
      CHECK(ms >= 0.0f);
      kiln_rt_graph_destroy(g);
    }
    kiln_rt_event_destroy(e0);
    kiln_rt_event_destroy(e1);
    kiln_rt_stream_destroy(s);
  }
  kiln_rt_module_destroy(mod);

  static const char bad_ptx[] = ".version 7.0\n.target sm_52\nthis is not ptx\n";
  KilnRtModule *bad = NULL;
  CHECK_STATUS(kiln_rt_module_load(dev, KILN_RT_MODULE_PTX, bad_ptx, sizeof bad_ptx - 1, &bad),
               KILN_RT_ERROR_LOAD);
  CHECK(bad == NULL && kiln_rt_last_error()[0] != '\0');

  CHECK_OK(kiln_rt_free(dev, dx));
  CHECK_OK(kiln_rt_free(dev, dy));
  CHECK_OK(kiln_rt_free(dev, dout));
  KilnRtMemStats ms;
  CHECK_OK(kiln_rt_mem_stats(dev, &ms));
  CHECK(ms.bytes_in_use == 0 && ms.bytes_cached == 3 * 4096);
  kiln_rt_device_destroy(dev);
  return kiln_check_result("test_rt_cuda");
}
