/* f16 / bf16 conversions: every half survives a round trip, and float -> half picks the nearest
 * half (ties to even), judged by comparing against the neighbouring halves. */
#include "emu_test.h"

#include <math.h>

static int is_nan16(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

/* The finite halves adjacent to h in value order (as f32), for the nearest check. */
static double value16(uint16_t h) { return kiln_emu_f16_to_f32(h); }

int main(void) {
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = kiln_emu_f16_to_f32((uint16_t)h);
    if (is_nan16((uint16_t)h)) {
      CHECK(isnan(f));
      CHECK(is_nan16(kiln_emu_f32_to_f16(f)));
      continue;
    }
    CHECK_EQ_U(kiln_emu_f32_to_f16(f), h);
    CHECK_EQ_U(kiln_emu_f32_to_bf16(kiln_emu_bf16_to_f32((uint16_t)h)),
               is_nan16((uint16_t)h) ? 0 : h);
  }
  /* spot values */
  CHECK(kiln_emu_f16_to_f32(0x3c00) == 1.0f);
  CHECK(kiln_emu_f16_to_f32(0xc000) == -2.0f);
  CHECK(kiln_emu_f16_to_f32(0x0001) == 0x1p-24f);
  CHECK(kiln_emu_f16_to_f32(0x7bff) == 65504.0f);
  CHECK_EQ_U(kiln_emu_f32_to_f16(65520.0f), 0x7c00); /* rounds up to inf */
  CHECK_EQ_U(kiln_emu_f32_to_f16(65519.0f), 0x7bff);
  CHECK_EQ_U(kiln_emu_f32_to_f16(0x1p-25f), 0x0000);        /* tie to even: 0 */
  CHECK_EQ_U(kiln_emu_f32_to_f16(0x1.8p-24f), 0x0002);      /* tie to even: 2 */
  CHECK_EQ_U(kiln_emu_f32_to_f16(1.0f + 0x1p-11f), 0x3c00); /* tie to even */
  CHECK_EQ_U(kiln_emu_f32_to_f16(1.0f + 0x1.8p-10f), 0x3c02);
  CHECK(kiln_emu_bf16_to_f32(0x3f80) == 1.0f);
  CHECK_EQ_U(kiln_emu_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80); /* tie to even */
  CHECK_EQ_U(kiln_emu_f32_to_bf16(1.0f + 0x1.8p-7f), 0x3f82);

  /* nearest: no finite neighbour half is closer than the chosen one */
  uint32_t seed = 5;
  for (int i = 0; i < 200000; i++) {
    uint32_t bits = emu_rand(&seed) << 8 ^ emu_rand(&seed);
    float f;
    memcpy(&f, &bits, 4);
    if (!isfinite(f) || fabsf(f) > 65504.0f) continue;
    uint16_t h = kiln_emu_f32_to_f16(f);
    double err = fabs(value16(h) - f);
    uint16_t mag = h & 0x7fff, sign = h & 0x8000;
    if (mag < 0x7bff) CHECK(fabs(value16((uint16_t)(sign | (mag + 1))) - f) >= err);
    if (mag > 0)
      CHECK(fabs(value16((uint16_t)(sign | (mag - 1))) - f) >= err);
    else
      CHECK(fabs(value16((uint16_t)(sign ^ 0x8001)) - f) >= err);
  }
  return kiln_check_result("emu.convert");
}
