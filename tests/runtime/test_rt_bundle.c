/* test_rt_bundle.c — the one bundle reader (kiln/bundle.h, runtime/bundle.c) on the cpu and emu
 * devices, with the C saxpy kernel's host object standing in for compiler output.
 *
 * The bundle is a fresh folder of the working directory: the reader must load the image built
 * for the device among images for other devices (garbage cubin, PTX and emu object beside the
 * cpu one: picking any of them would fail to load), and a missing folder, a missing module, a
 * module with images for other devices only, an empty image and a truncated one must each give
 * an error status with a message that names the bundle, never a crash; so must an image that
 * is a link to /dev/zero or a sparse file over KILN_MAX_MODULE_BYTES. */
#include "rt_test.h"
#include "kiln_base.h" /* KILN_MAX_MODULE_BYTES */

#include <kiln/bundle.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char root[] = "bundle-test-XXXXXX"; /* in the working folder (the build's, under ctest) */

/* Writes size bytes of data to root/file. */
static void put(const char *file, const void *data, size_t size) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, file);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "cannot create %s", path);
  if (f) {
    CHECK(fwrite(data, 1, size, f) == size || size == 0);
    fclose(f);
  }
}

static void test_names(void) {
  char buf[64];
  CHECK(kiln_rt_bundle_image_name(buf, sizeof buf, "k", "sm_90", KILN_RT_MODULE_CUBIN) == 0 &&
            !strcmp(buf, "k.sm_90.cubin"),
        "got %s", buf);
  CHECK(kiln_rt_bundle_image_name(buf, sizeof buf, "k", "emu", KILN_RT_MODULE_HOST_OBJECT) == 0 &&
            !strcmp(buf, "k.emu.o"),
        "got %s", buf);
  CHECK(kiln_rt_bundle_image_name(buf, sizeof buf, "a/b", "cpu", KILN_RT_MODULE_HOST_OBJECT) == -1);
  CHECK(kiln_rt_bundle_image_name(buf, sizeof buf, "", "cpu", KILN_RT_MODULE_HOST_OBJECT) == -1);
  CHECK(kiln_rt_bundle_image_name(buf, 8, "kernel", "sm_80", KILN_RT_MODULE_PTX) == -1);
}

/* The cpu image is chosen among images for every other device, and runs. */
static void test_pick(KilnRtDevice *dev, const unsigned char *obj, size_t size) {
  static const char garbage[] = "not an image of any kind";
  put("saxpy.cpu.o", obj, size);
  put("saxpy.emu.o", garbage, sizeof garbage);
  put("saxpy.sm_90.cubin", garbage, sizeof garbage);
  put("saxpy.sm_80.ptx", garbage, sizeof garbage);
  put("saxpy_other.cpu.o", garbage, sizeof garbage); /* a module whose name starts alike */
  KilnRtModule *mod = NULL;
  KilnRtFunction *fn = NULL;
  CHECK_OK(kiln_rt_bundle_load(dev, root, "saxpy", &mod));
  if (!mod) return;
  CHECK_OK(kiln_rt_module_get_function(mod, "saxpy", &fn));
  float a = 2.0f, x[5] = {1, 2, 3, 4, 5}, y[5] = {1, 1, 1, 1, 1};
  float *dx = NULL, *dy = NULL, *dout = NULL;
  int32_t n = 5;
  CHECK_OK(kiln_rt_malloc(dev, sizeof x, (void **)&dx));
  CHECK_OK(kiln_rt_malloc(dev, sizeof y, (void **)&dy));
  CHECK_OK(kiln_rt_malloc(dev, sizeof y, (void **)&dout));
  if (fn && dx && dy && dout) {
    memcpy(dx, x, sizeof x), memcpy(dy, y, sizeof y); /* cpu device memory is host memory */
    void *args[] = {&dx, &dy, &dout, &a, &n};
    KilnRtLaunchConfig cfg = {.grid = {1, 1, 1}, .block_threads = 1};
    CHECK_OK(kiln_rt_launch(fn, &cfg, args, NULL));
    CHECK_OK(kiln_rt_device_synchronize(dev));
    for (int i = 0; i < 5; i++)
      CHECK(dout[i] == 2.0f * x[i] + 1.0f, "out[%d] = %g", i, (double)dout[i]);
  }
  kiln_rt_free(dev, dx);
  kiln_rt_free(dev, dy);
  kiln_rt_free(dev, dout);
  kiln_rt_module_destroy(mod);
}

/* Stands for "any error" where the status comes from the module loader. */
#define ANY_ERROR ((KilnRtStatus) - 1)

/* Every bad bundle: an error status, a message naming the bundle, *out NULL. */
static void expect_error(KilnRtDevice *dev, const char *dir, const char *name, KilnRtStatus want,
                         const char *needle) {
  KilnRtModule *mod = (KilnRtModule *)(uintptr_t)1;
  KilnRtStatus st = kiln_rt_bundle_load(dev, dir, name, &mod);
  if (want == ANY_ERROR)
    CHECK(st != KILN_RT_OK, "%s: loaded", name);
  else
    CHECK_STATUS(st, want);
  CHECK(mod == NULL, "%s: *out not cleared", name);
  CHECK_CONTAINS(kiln_rt_last_error(), needle);
  if (st == KILN_RT_OK && mod) kiln_rt_module_destroy(mod);
}

/* Images are read whole, so each is bounded by KILN_MAX_MODULE_BYTES: a `.cpu.o` that is a link
 * to /dev/zero is refused once the read passes the bound (it used to be read until memory ran
 * out), and a sparse file one byte over it is refused from its size before a byte is read. */
static void test_huge_images(KilnRtDevice *dev) {
  char path[600];
  snprintf(path, sizeof path, "%s/zero.cpu.o", root);
  CHECK(symlink("/dev/zero", path) == 0, "symlink %s", path);
  expect_error(dev, root, "zero", KILN_RT_ERROR_IO,
               "zero.cpu.o is larger than KILN_MAX_MODULE_BYTES (256 MiB); refused");
  snprintf(path, sizeof path, "%s/sparse.cpu.o", root);
  FILE *f = fopen(path, "wb");
  CHECK(f && ftruncate(fileno(f), (off_t)KILN_MAX_MODULE_BYTES + 1) == 0, "sparse %s", path);
  if (f) fclose(f);
  expect_error(dev, root, "sparse", KILN_RT_ERROR_IO,
               "sparse.cpu.o is larger than KILN_MAX_MODULE_BYTES (256 MiB); refused");
}

static void test_errors(KilnRtDevice *dev, const unsigned char *obj, size_t size) {
  KilnRtModule *mod = NULL;
  CHECK_STATUS(kiln_rt_bundle_load(NULL, root, "saxpy", &mod), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_rt_bundle_load(dev, NULL, "saxpy", &mod), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_rt_bundle_load(dev, root, "", &mod), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_rt_bundle_load(dev, root, "saxpy", NULL), KILN_RT_ERROR_INVALID_ARGUMENT);
  char missing[600];
  snprintf(missing, sizeof missing, "%s/no-such-folder", root);
  expect_error(dev, missing, "saxpy", KILN_RT_ERROR_NOT_FOUND, "no-such-folder");
  expect_error(dev, root, "nothere", KILN_RT_ERROR_NOT_FOUND,
               "no image of 'nothere' for cpu (it has: none)");
  static const char ptx[] = "// PTX";
  put("gpuonly.sm_90.ptx", ptx, sizeof ptx);
  expect_error(dev, root, "gpuonly", KILN_RT_ERROR_NOT_FOUND, "gpuonly.sm_90.ptx");
  put("empty.cpu.o", "", 0);
  expect_error(dev, root, "empty", KILN_RT_ERROR_LOAD, "empty.cpu.o is empty");
  put("trunc.cpu.o", obj, size / 3);
  expect_error(dev, root, "trunc", ANY_ERROR, "module 'trunc'");
  test_huge_images(dev);
}

/* On emu the cpu object is not an image for the device: the emu one is wanted. */
static void test_emu(void) {
  KilnRtDevice *emu = NULL;
  if (kiln_rt_device_create("emu", &emu) != KILN_RT_OK) {
    printf("no emu device here: %s\n", kiln_rt_last_error());
    return;
  }
  expect_error(emu, root, "saxpy_other", KILN_RT_ERROR_NOT_FOUND,
               "no image of 'saxpy_other' for emu");
  expect_error(emu, root, "saxpy", ANY_ERROR, "saxpy"); /* saxpy.emu.o is garbage */
  kiln_rt_device_destroy(emu);
}

int main(void) {
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    return 1;
  }
  size_t size = 0;
  unsigned char *obj = rt_test_read_file(KILN_TEST_SAXPY_OBJ, &size);
  CHECK(obj != NULL && size > 0, "cannot read %s", KILN_TEST_SAXPY_OBJ);
  KilnRtDevice *dev = NULL;
  CHECK_OK(kiln_rt_device_create("cpu", &dev));
  if (obj && dev) {
    test_names();
    test_pick(dev, obj, size);
    test_errors(dev, obj, size);
    test_emu();
  }
  kiln_rt_device_destroy(dev);
  free(obj);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
  return kiln_check_result("test_rt_bundle");
}
