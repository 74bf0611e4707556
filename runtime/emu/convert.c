/* convert.c — the emulator's f16/bf16 conversion intrinsics, which kernel modules call: the one
 * conversion of the shared vocabulary (kiln_base.h, bit manipulation, so the result does not
 * depend on the host compiler's _Float16 support), under the emulator's exported names. */
#include "kiln_base.h"
#include "kiln_emu.h"

float kiln_emu_f16_to_f32(uint16_t h) { return kiln_f16_to_f32(h); }
uint16_t kiln_emu_f32_to_f16(float f) { return kiln_f32_to_f16(f); }
float kiln_emu_bf16_to_f32(uint16_t h) { return kiln_bf16_to_f32(h); }
uint16_t kiln_emu_f32_to_bf16(float f) { return kiln_f32_to_bf16(f); }
