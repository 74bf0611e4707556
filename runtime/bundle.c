/* bundle.c — the reader of Kiln's one bundle format (kiln/bundle.h): the images of a module in a
 * folder, named NAME.ARCH.EXT, gathered and handed to kiln_rt_module_load_best.
 *
 * Why one reader: the numeric and BERT tests, the GPU benchmark and the tuner's runner each
 * used to build "NAME.sm_XY.cubin, else .ptx" paths from the device's compute capability, and
 * the tuner chose the module format by the target it was told. The choice among builds of a
 * module belongs to the runtime (image.c: a cubin of a lower minor of the same major runs, a PTX
 * of an older arch is JIT-compiled, a cubin the driver rejects falls back to PTX), so here the
 * folder only says which images exist and image.c decides. Host images carry the device they
 * were built for in ARCH (cpu and emu objects are both host objects, compiled differently), so
 * the cpu device sees only `cpu` images and emu only `emu` ones. */
#include "device_impl.h"

#include <kiln/bundle.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_base.h" /* kiln_file_read_max, KILN_MAX_MODULE_BYTES */

static const struct {
  const char *ext;
  KilnRtModuleFormat format;
} formats[] = {{"cubin", KILN_RT_MODULE_CUBIN},
               {"ptx", KILN_RT_MODULE_PTX},
               {"o", KILN_RT_MODULE_HOST_OBJECT},
               {"so", KILN_RT_MODULE_HOST_SHARED}};

int kiln_rt_bundle_image_name(char *buf, size_t cap, const char *name, const char *arch,
                              KilnRtModuleFormat format) {
  if (!buf || !name || !*name || strchr(name, '/') || !arch || !*arch) return -1;
  for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
    if (formats[i].format == format) {
      int n = snprintf(buf, cap, "%s.%s.%s", name, arch, formats[i].ext);
      return n > 0 && (size_t)n < cap ? 0 : -1;
    }
  return -1;
}

/* One file of the folder as an image of `name` for a device of `kind`: its format and arch
 * (sm_XY: XY; host images 0). False for another module's file, another device's image, or a
 * name that is not NAME.ARCH.EXT. */
static bool parse_image(const char *file, const char *name, KilnRtDeviceKind kind,
                        KilnRtModuleFormat *format, int *arch) {
  size_t len = strlen(name);
  if (strncmp(file, name, len) != 0 || file[len] != '.') return false;
  const char *a = file + len + 1, *dot = strchr(a, '.');
  if (!dot || dot == a || strchr(dot + 1, '.')) return false;
  size_t alen = (size_t)(dot - a);
  const char *ext = dot + 1;
  for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
    if (strcmp(ext, formats[i].ext) != 0) continue;
    *format = formats[i].format;
    bool host = *format == KILN_RT_MODULE_HOST_OBJECT || *format == KILN_RT_MODULE_HOST_SHARED;
    if (host) {
      const char *want = kind == KILN_RT_DEVICE_EMU   ? "emu"
                         : kind == KILN_RT_DEVICE_CPU ? "cpu"
                                                      : NULL;
      *arch = 0;
      return want && alen == strlen(want) && strncmp(a, want, alen) == 0;
    }
    int sm = 0;
    if (kind != KILN_RT_DEVICE_CUDA || alen < 4 || strncmp(a, "sm_", 3) != 0) return false;
    for (const char *p = a + 3; p < dot; p++) {
      if (*p < '0' || *p > '9' || sm > 10000) return false;
      sm = sm * 10 + (*p - '0');
    }
    *arch = sm;
    return true;
  }
  return false;
}

/* The message lists every file of the module when none suits the device. */
KilnRtStatus kiln_rt_bundle_read_images(const char *dir, const char *name, KilnRtDeviceKind kind,
                                        KilnRtImage *images, char **files, size_t *n) {
  *n = 0;
  DIR *d = opendir(dir);
  if (!d)
    return kiln_rt_fail(KILN_RT_ERROR_NOT_FOUND, "bundle '%s': cannot read the folder: %s", dir,
                        strerror(errno));
  char seen[512] = "";
  size_t seen_len = 0;
  KilnRtStatus st = KILN_RT_OK;
  struct dirent *e;
  while (st == KILN_RT_OK && (e = readdir(d)) != NULL) {
    size_t len = strlen(name);
    if (strncmp(e->d_name, name, len) == 0 && e->d_name[len] == '.' && seen_len + 2 < sizeof seen)
      seen_len += (size_t)snprintf(seen + seen_len, sizeof seen - seen_len, "%s%s",
                                   seen_len ? ", " : "", e->d_name);
    KilnRtModuleFormat format;
    int arch;
    if (!parse_image(e->d_name, name, kind, &format, &arch)) continue;
    if (*n == KILN_RT_BUNDLE_MAX_IMAGES) {
      st = kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT, "bundle '%s': more than %d images of '%s'",
                        dir, KILN_RT_BUNDLE_MAX_IMAGES, name);
      break;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t size = 0;
    char *data = kiln_file_read_max(path, &size, KILN_MAX_MODULE_BYTES);
    if (!data && errno == EFBIG)
      st = kiln_rt_fail(KILN_RT_ERROR_IO,
                        "bundle '%s': %s is larger than KILN_MAX_MODULE_BYTES (%zu MiB); refused",
                        dir, e->d_name, KILN_MAX_MODULE_BYTES >> 20);
    else if (!data)
      st = kiln_rt_fail(KILN_RT_ERROR_IO, "bundle '%s': cannot read %s: %s", dir, e->d_name,
                        strerror(errno));
    else if (size == 0)
      st = kiln_rt_fail(KILN_RT_ERROR_LOAD, "bundle '%s': %s is empty (a truncated bundle?)", dir,
                        e->d_name);
    files[*n] = strdup(e->d_name);
    images[*n] = (KilnRtImage){format, arch, data, size, NULL, NULL};
    (*n)++;
  }
  closedir(d);
  if (st == KILN_RT_OK && *n == 0) {
    const char *device = kind == KILN_RT_DEVICE_CUDA  ? "a GPU (sm_XY)"
                         : kind == KILN_RT_DEVICE_EMU ? "emu"
                                                      : "cpu";
    st = kiln_rt_fail(KILN_RT_ERROR_NOT_FOUND, "bundle '%s': no image of '%s' for %s (it has: %s)",
                      dir, name, device, seen_len ? seen : "none");
  }
  return st;
}

KilnRtStatus kiln_rt_bundle_load(KilnRtDevice *dev, const char *dir, const char *name,
                                 KilnRtModule **out) {
  if (!dev || !dir || !*dir || !name || !*name || !out)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "kiln_rt_bundle_load: device, folder, name and out must be given");
  *out = NULL;
  KilnRtDeviceInfo info;
  KilnRtStatus st = kiln_rt_device_info(dev, &info);
  if (st != KILN_RT_OK) return st;
  KilnRtImage images[KILN_RT_BUNDLE_MAX_IMAGES];
  char *files[KILN_RT_BUNDLE_MAX_IMAGES];
  size_t n = 0;
  st = kiln_rt_bundle_read_images(dir, name, info.kind, images, files, &n);
  int chosen = -1;
  if (st == KILN_RT_OK) {
    st = kiln_rt_module_load_best(dev, images, n, &chosen, out);
    if (st != KILN_RT_OK) {
      char why[512];
      snprintf(why, sizeof why, "%s", kiln_rt_last_error());
      st = kiln_rt_fail(st, "bundle '%s': module '%s' (%zu image(s) for this device, first %s): %s",
                        dir, name, n, files[0] ? files[0] : "?", why);
    }
  }
  kiln_rt_bundle_images_free(images, files, n);
  return st;
}

void kiln_rt_bundle_images_free(KilnRtImage *images, char **files, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free((void *)images[i].data);
    images[i].data = NULL;
    free(files[i]);
    files[i] = NULL;
  }
}
