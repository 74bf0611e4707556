/* test_rt_cc.c — the host object linker (runtime/cpu_module.c) with a KILN_CC that misbehaves.
 * Without an argument (runtime.missing_cc: KILN_CC names a compiler that does not exist),
 * loading a host object fails cleanly. With --huge (runtime.huge_cc: KILN_CC is huge_cc.sh,
 * whose output is a sparse 300 MiB file), kiln_rt_host_object_link refuses to read the linked
 * shared object whole, naming KILN_MAX_MODULE_BYTES (it used to read any size into memory). */
#include "rt_test.h"

#include <stdlib.h>
#include <string.h>

static int huge_output(void) {
  size_t size = 0;
  unsigned char *image = rt_test_read_file(KILN_TEST_SAXPY_OBJ, &size);
  CHECK(image != NULL);
  void *so = NULL;
  size_t so_size = 0;
  if (image) {
    CHECK_STATUS(kiln_rt_host_object_link(image, size, &so, &so_size), KILN_RT_ERROR_IO);
    CHECK_CONTAINS(kiln_rt_last_error(), "is larger than KILN_MAX_MODULE_BYTES (256 MiB); refused");
    CHECK(so == NULL && so_size == 0);
  }
  free(so);
  free(image);
  return kiln_check_result("test_rt_cc --huge");
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--huge")) return huge_output();
  KilnRtDevice *dev = NULL;
  CHECK_OK(kiln_rt_device_create("cpu", &dev));
  if (!dev) return kiln_check_result("test_rt_cc");
  size_t size = 0;
  unsigned char *image = rt_test_read_file(KILN_TEST_SAXPY_OBJ, &size);
  CHECK(image != NULL);
  KilnRtModule *mod = NULL;
  if (image) {
    CHECK_STATUS(kiln_rt_module_load(dev, KILN_RT_MODULE_HOST_OBJECT, image, size, &mod),
                 KILN_RT_ERROR_LOAD);
    CHECK_CONTAINS(kiln_rt_last_error(), "kiln-no-such-compiler");
    CHECK(mod == NULL);
  }
  free(image);
  kiln_rt_device_destroy(dev);
  return kiln_check_result("test_rt_cc");
}
