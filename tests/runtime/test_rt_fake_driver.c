/* With a libcuda.so.1 whose cuInit finds no GPU (fake_cuda.c, found through LD_LIBRARY_PATH), the
 * cuda device reports NO_DEVICE with the driver's error text; and twice in a row, since the
 * driver is loaded once per process. */
#include "rt_test.h"

int main(void) {
  for (int round = 0; round < 2; round++) {
    KilnRtDevice *dev = NULL;
    CHECK_STATUS(kiln_rt_device_create("cuda:0", &dev), KILN_RT_ERROR_NO_DEVICE);
    CHECK(dev == NULL);
    CHECK_CONTAINS(kiln_rt_last_error(), "cuInit: fake driver: no CUDA-capable device is detected");
  }
  /* The cpu device is unaffected. */
  KilnRtDevice *cpu = NULL;
  CHECK_OK(kiln_rt_device_create("cpu", &cpu));
  kiln_rt_device_destroy(cpu);
  return kiln_check_result("test_rt_fake_driver");
}
