/* With KILN_CC naming a compiler that does not exist, loading a host object fails cleanly. */
#include "rt_test.h"

#include <stdlib.h>

int main(void) {
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
