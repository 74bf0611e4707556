/* emu_device.c — the `emu` device (the GPU emulator): not built yet.
 *
 * Its slot in device.c's table is kept so that the emulator only has to fill in a
 * KilnRtDeviceOps table here; until then opening it reports UNSUPPORTED.
 */
#include "device_impl.h"

KilnRtStatus kiln_rt_emu_device_init(KilnRtDevice *dev, int ordinal) {
  (void)dev;
  (void)ordinal;
  return kiln_rt_fail(KILN_RT_ERROR_UNSUPPORTED, "the emu device is not built yet");
}
