/* image.c — choosing, among the builds of one module, the image a device can run.
 *
 * Generated libraries embed a cubin per GPU architecture plus a PTX fallback. The choice is a
 * pure function of the images and the device's compute capability, so that it is unit-tested
 * without a GPU; loading then falls back to PTX when the chosen cubin is rejected (a driver
 * too old for the cubin's format, say), because the PTX JIT works wherever the PTX target is
 * not newer than the device. Host images may record the CPU features their code uses; those
 * are checked against this CPU before loading (host_cpu.c), so a library built for another
 * machine's CPU fails with a message instead of an illegal instruction. */
#include "device_impl.h"

#include <stdlib.h>

static bool is_host(KilnRtModuleFormat f) {
  return f == KILN_RT_MODULE_HOST_OBJECT || f == KILN_RT_MODULE_HOST_SHARED;
}

/* Cubins: exact arch first, then the highest lower minor of the same major. */
static int pick_cubin(const KilnRtImage *im, size_t n, int sm) {
  int best = -1;
  for (size_t i = 0; i < n; i++) {
    if (im[i].format != KILN_RT_MODULE_CUBIN || im[i].arch / 10 != sm / 10 || im[i].arch > sm)
      continue;
    if (best < 0 || im[i].arch > im[best].arch) best = (int)i;
  }
  return best;
}

static int pick_ptx(const KilnRtImage *im, size_t n, int sm) {
  int best = -1;
  for (size_t i = 0; i < n; i++)
    if (im[i].format == KILN_RT_MODULE_PTX && im[i].arch <= sm &&
        (best < 0 || im[i].arch > im[best].arch))
      best = (int)i;
  return best;
}

int kiln_rt_image_select(const KilnRtImage *images, size_t n, KilnRtDeviceKind kind, int sm,
                         int allow_cubin) {
  if (!images) return -1;
  if (kind != KILN_RT_DEVICE_CUDA) {
    for (size_t i = 0; i < n; i++)
      if (is_host(images[i].format)) return (int)i;
    return -1;
  }
  int c = allow_cubin ? pick_cubin(images, n, sm) : -1;
  return c >= 0 ? c : pick_ptx(images, n, sm);
}

KilnRtStatus kiln_rt_module_load_best(KilnRtDevice *dev, const KilnRtImage *images, size_t n,
                                      int *chosen, KilnRtModule **out) {
  if (!dev || !images || !out)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "kiln_rt_module_load_best: device, images and out must not be NULL");
  KilnRtDeviceInfo info;
  KilnRtStatus st = kiln_rt_device_info(dev, &info);
  if (st != KILN_RT_OK) return st;
  int sm = info.cc_major * 10 + info.cc_minor;
  int i = kiln_rt_image_select(images, n, info.kind, sm, 1);
  if (i < 0) {
    if (info.kind == KILN_RT_DEVICE_CUDA)
      return kiln_rt_fail(
          KILN_RT_ERROR_UNSUPPORTED,
          "no image for sm_%d: no cubin of that major and no PTX for sm_%d or older", sm, sm);
    return kiln_rt_fail(KILN_RT_ERROR_UNSUPPORTED,
                        "no host image for the %s device (a GPU-only library?)",
                        info.kind == KILN_RT_DEVICE_EMU ? "emu" : "cpu");
  }
  if (is_host(images[i].format)) {
    st = kiln_rt_host_cpu_check(images[i].cpu, images[i].cpu_features);
    if (st != KILN_RT_OK) return st;
  }
  st = kiln_rt_module_load(dev, images[i].format, images[i].data, images[i].size, out);
  if (st == KILN_RT_ERROR_LOAD && images[i].format == KILN_RT_MODULE_CUBIN) {
    int p = kiln_rt_image_select(images, n, info.kind, sm, 0);
    if (p >= 0 && kiln_rt_module_load(dev, images[p].format, images[p].data, images[p].size, out) ==
                      KILN_RT_OK) {
      i = p;
      st = KILN_RT_OK;
    }
  }
  if (st == KILN_RT_OK && chosen) *chosen = i;
  return st;
}
