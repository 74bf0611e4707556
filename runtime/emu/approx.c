/* approx.c — the PTX approximate math instructions, exact or GPU-pessimistic.
 *
 * Why: the GPU computes tanh.approx, ex2.approx, lg2.approx, sin/cos.approx, rsqrt.approx and
 * rcp.approx
 * with documented worst-case errors (PTX ISA, each instruction's "Notes"), and their .ftz forms
 * flush subnormals. Exact host math makes the emulator pass tolerances a GPU would fail (an f32
 * GELU with tanh.approx at 1e-5 when tanh.approx errs by 2^-11). Under KILN_EMU_MATH_PESSIMISTIC
 * each result is moved by its instruction's bound, the direction picked by a hash of the input,
 * so a test's tolerance must cover the GPU's worst case, not the host's best.
 */
#include "emu_internal.h"

#include <math.h>
#include <string.h>

typedef struct ApproxSpec {
  double bound;  /* the documented worst-case error */
  bool relative; /* of the result's magnitude, else absolute */
  bool ftz;      /* the instruction's .ftz: subnormal inputs and results become signed zero */
} ApproxSpec;

static const ApproxSpec specs[KILN_EMU_APPROX_COUNT] = {
    [KILN_EMU_APPROX_EX2] = {0x1p-22, true, true},
    /* the fractional powers of two rounded up to 8 mantissa bits, so that none is below the bound */
    [KILN_EMU_APPROX_LG2] = {0x1.52p-23 /* 2^-22.6 = 0x1.51cp-23 */, false, true},
    [KILN_EMU_APPROX_SIN] = {0x1.13p-21 /* 2^-20.9 = 0x1.125p-21 */, false, true},
    [KILN_EMU_APPROX_COS] = {0x1.13p-21, false, true},
    [KILN_EMU_APPROX_RSQRT] = {0x1.13p-23 /* 2^-22.9 */, true, true},
    [KILN_EMU_APPROX_TANH] = {0x1.03p-11 /* 2^-10.987 = 0x1.025p-11 */, true, false},
    [KILN_EMU_APPROX_RCP] = {0x1p-23 /* 1 ulp of the result */, true, true},
};

static float flush(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }

static float exact(uint32_t op, float x) {
  switch (op) {
  case KILN_EMU_APPROX_EX2: return exp2f(x);
  case KILN_EMU_APPROX_LG2: return log2f(x);
  case KILN_EMU_APPROX_SIN: return sinf(x);
  case KILN_EMU_APPROX_COS: return cosf(x);
  case KILN_EMU_APPROX_RSQRT: return 1.0f / sqrtf(x);
  case KILN_EMU_APPROX_RCP: return 1.0f / x;
  default: return tanhf(x);
  }
}

/* Up or down, from the input's bits: the same input always errs the same way. */
static double direction(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  return ((bits * 2654435761u) >> 31) ? 1.0 : -1.0;
}

static float pessimistic(uint32_t op, float x) {
  const ApproxSpec *s = &specs[op];
  if (s->ftz) x = flush(x);
  double y = exact(op, x);
  if (isfinite(y) && y != 0.0) /* infinities, NaN and exact zeros are what the GPU gives too */
    y += direction(x) * s->bound * (s->relative ? fabs(y) : 1.0);
  float r = (float)y;
  return s->ftz ? flush(r) : r;
}

float kiln_emu_approx_f32(uint32_t op, float x) {
  EmuWorker *w = kiln_emu_worker();
  if (op >= KILN_EMU_APPROX_COUNT) {
    if (w && w->cur)
      kiln_emu_fail(w, w->cur, KILN_EMU_ERROR_INVALID_OP, "approx: unknown operation %u", op);
    return NAN;
  }
  if (w && w->cfg.math == KILN_EMU_MATH_PESSIMISTIC) return pessimistic(op, x);
  return exact(op, x);
}
