/* half.c - IEEE binary16 and bfloat16 to and from float, by bit manipulation so that the result
 * does not depend on the host compiler's _Float16 support.  The one copy: the emulator's
 * conversion intrinsics, the tuner's input fills and the tests' references all call these, so
 * a kernel's f16 result and the reference it is compared with round the same way. */
#include "kiln_base.h"

float kiln_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = h >> 10 & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) /* inf / NaN: keep the payload in the high mantissa bits */
    return kiln_f32_from_bits(sign | 0x7f800000u | man << 13);
  if (exp == 0) {
    /* zero or subnormal: man * 2^-24 is exact in float */
    float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
  }
  return kiln_f32_from_bits(sign | (exp + 112) << 23 | man << 13);
}

/* Rounds the 32-bit pattern `v`'s magnitude to nearest even at bit `shift`. */
static uint32_t round_shift(uint32_t v, uint32_t shift) {
  uint32_t half = 1u << (shift - 1), rest = v & ((1u << shift) - 1);
  uint32_t q = v >> shift;
  if (rest > half || (rest == half && (q & 1))) q++;
  return q;
}

uint16_t kiln_f32_to_f16(float f) {
  uint32_t u = kiln_f32_bits(f);
  uint16_t sign = (uint16_t)(u >> 16 & 0x8000);
  uint32_t exp = u >> 23 & 0xff, man = u & 0x7fffff;
  if (exp == 0xff) /* inf / NaN (a NaN stays a quiet NaN) */
    return sign | 0x7c00 | (man ? (uint16_t)(0x200 | man >> 13) : 0);
  int32_t e = (int32_t)exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    /* subnormal half (or zero): value = (1.man) * 2^(e-15) = mant24 * 2^(e-15-23) */
    if (e < -10) return sign;
    uint32_t mant = man | 0x800000u;
    return sign | (uint16_t)round_shift(mant, (uint32_t)(14 - e));
  }
  /* a carry out of the mantissa correctly bumps the exponent, up to inf */
  return sign | (uint16_t)round_shift((uint32_t)e << 23 | man, 13);
}

float kiln_bf16_to_f32(uint16_t h) { return kiln_f32_from_bits((uint32_t)h << 16); }

uint16_t kiln_f32_to_bf16(float f) {
  uint32_t u = kiln_f32_bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffff))
    return (uint16_t)(u >> 16 | 0x40); /* keep NaN a quiet NaN */
  return (uint16_t)round_shift(u, 16);
}
