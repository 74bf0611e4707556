/* The cuda device's streams and graphs through the fake driver (fake_cuda.c with
 * KILN_FAKE_CUDA_FREE and KILN_FAKE_CUDA_MODULES=1), which runs no kernel but counts what the
 * device asks of it: that a launch on a stream of the runtime does not wait (only the default
 * stream synchronizes), that a capture runs nothing and its graph replays its launches, and
 * that kiln_rt_graph_recapture updates the instantiated graph in place when only arguments
 * changed (cuGraphExecUpdate) and instantiates anew when the launches did, freeing what it
 * replaces. On a machine whose libcuda is a real driver it skips (exit 77). */
#include "rt_test.h"

#include <dlfcn.h>

static const char ptx[] = ".version 7.8\n.target sm_90\n.address_size 64\n"
                          ".visible .entry k(.param .u32 n)\n{\n ret;\n}\n";

/* The fake driver's counter `name`, or NULL where libcuda is a real driver. */
static int *counter(const char *name) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h ? dlsym(h, name) : NULL;
}

static void launch(KilnRtFunction *fn, KilnRtStream *s, int times) {
  int32_t n = 1;
  void *args[] = {&n};
  KilnRtLaunchConfig cfg = {{1, 1, 1}, 32, 0};
  for (int i = 0; i < times; i++) CHECK_OK(kiln_rt_launch(fn, &cfg, args, s));
}

int main(void) {
  KilnRtDevice *dev = NULL;
  CHECK_OK(kiln_rt_device_create("cuda", &dev));
  int *launches = counter("fake_cuda_launches"), *replays = counter("fake_cuda_graph_launches"),
      *inst = counter("fake_cuda_instantiations"), *updates = counter("fake_cuda_updates"),
      *ctx_syncs = counter("fake_cuda_ctx_syncs"), *alive = counter("fake_cuda_graphs_alive");
  if (!dev || !launches || !replays || !inst || !updates || !ctx_syncs || !alive) {
    printf("skipped: libcuda is not the fake driver\n");
    kiln_rt_device_destroy(dev);
    return dev ? 77 : 1;
  }
  KilnRtModule *mod = NULL;
  KilnRtFunction *fn = NULL;
  CHECK_OK(kiln_rt_module_load(dev, KILN_RT_MODULE_PTX, ptx, sizeof ptx, &mod));
  if (mod) CHECK_OK(kiln_rt_module_get_function(mod, "k", &fn));
  if (!fn) return kiln_check_result("test_rt_fake_graphs");
  KilnRtStream *s = NULL;
  CHECK_OK(kiln_rt_stream_create(dev, &s));

  /* a stream's launches are queued; the default stream's wait for completion */
  int syncs = *ctx_syncs;
  launch(fn, s, 2);
  CHECK(*launches == 2 && *ctx_syncs == syncs, "stream launches: %d run, %d context syncs",
        *launches, *ctx_syncs - syncs);
  launch(fn, NULL, 1);
  CHECK(*launches == 3 && *ctx_syncs == syncs + 1, "default stream: %d run, %d syncs", *launches,
        *ctx_syncs - syncs);

  /* a capture runs nothing; its graph replays the three launches */
  CHECK_OK(kiln_rt_graph_begin_capture(s));
  launch(fn, s, 3);
  KilnRtGraph *g = NULL;
  CHECK_OK(kiln_rt_graph_end_capture(s, &g));
  CHECK(*launches == 3 && *inst == 1, "after the capture: %d run, %d instantiated", *launches,
        *inst);
  CHECK_OK(kiln_rt_graph_launch(g, s));
  CHECK_OK(kiln_rt_graph_launch(g, s));
  CHECK(*launches == 9 && *replays == 2, "two replays: %d run, %d replays", *launches, *replays);

  /* the same launches again (other arguments): updated in place, nothing instantiated */
  CHECK_OK(kiln_rt_graph_begin_capture(s));
  launch(fn, s, 3);
  CHECK_OK(kiln_rt_graph_recapture(s, g));
  CHECK(*updates == 1 && *inst == 1, "same topology: %d updates, %d instantiations", *updates,
        *inst);
  CHECK_OK(kiln_rt_graph_launch(g, s));
  CHECK(*launches == 12, "the updated graph replays 3: %d", *launches);

  /* one launch more: the update is refused, the graph instantiated anew */
  CHECK_OK(kiln_rt_graph_begin_capture(s));
  launch(fn, s, 4);
  CHECK_OK(kiln_rt_graph_recapture(s, g));
  CHECK(*updates == 1 && *inst == 2, "new topology: %d updates, %d instantiations", *updates,
        *inst);
  CHECK_OK(kiln_rt_graph_launch(g, s));
  CHECK(*launches == 16, "the new graph replays 4: %d", *launches);
  CHECK(*alive == 2, "%d driver graphs alive (one graph and its executable expected)", *alive);

  /* misuse */
  CHECK_STATUS(kiln_rt_graph_recapture(s, g), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(kiln_rt_last_error(), "not being captured");

  kiln_rt_graph_destroy(g);
  CHECK(*alive == 0, "%d driver graphs left after destroy", *alive);
  kiln_rt_stream_destroy(s);
  kiln_rt_module_destroy(mod);
  kiln_rt_device_destroy(dev);
  return kiln_check_result("test_rt_fake_graphs");
}
