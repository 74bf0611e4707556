/* lower_math_f64.c - the f64 math functions of the GPU targets (sm_80, sm_90, and emu, which runs
 * the same lowering), built from what PTX rounds exactly in f64.
 *
 * Why.  There is no libdevice here (no CUDA toolkit at build time) and PTX's approximate
 * instructions are f32 only, so each function is written out per scalar from add, sub, mul,
 * fma.rn, div.rn, sqrt.rn, compares, selects and integer operations on the 64 bits.  No
 * table in memory, one branch (sin/cos of |x| >= 2^32): every element runs the same straight
 * code (a GPU's threads stay converged), and special inputs are patched in by selects at the
 * end.
 *
 * Contraction.  The lowering marks every mulf/addf/subf `contract` (lower.c), so a product
 * feeding a sum may become one fma.  Every step below is accurate either way; where an exact
 * product is needed (the error-free transformations) it is an explicit fma: `prod` is
 * fma(a, b, -0), a product that nothing fuses into the next sum, and the error of a product is
 * fma(a, b, -prod).  Sums in the error-free transformations take no products.
 *
 * The constants (hex literals) are the round-to-nearest doubles of the stated values and of the
 * remainders of the split ones (pi/2 = P1 + P2 + P3, ln 2, 1/ln 2, 2/sqrt(pi)), computed with
 * 80-digit arithmetic; the polynomial coefficients are Taylor coefficients computed here (1/n!
 * and 2/(2n + 1) are correctly rounded: n! is exact in a double for n <= 22).
 *
 * Error bounds, in ulp of the exact result (u = 2^-53, the unit roundoff).  "Measured" is the
 * largest error tests/numeric f64_math saw on emu over 2 million inputs of its kinds (its first
 * configuration enlarged ten times; the test runs 200000), with and without the host fusing
 * products into sums (--cpu x86-64-v3 and x86-64-v2).
 *
 *   exp(x).  k = nearest integer to x log2(e), x = k ln2 + r + rlo with ln2 = LN2_HI + LN2_LO:
 *   r = x - k LN2_HI is exact (one fma: k LN2_HI and x are multiples of 2^-53 and |r| < 1), and
 *   rlo = -k LN2_LO (|rlo| < 2^-44, its rounding and LN2_LO's own error below 2^-96).
 *   e^r - 1 = r + q, q = r^2 (1/2! + r/3! + ... + r^11/13!): the truncation is
 *   r^14/14! < 4.2e-18 = 0.04 u for |r| <= 0.347.  e^(r + rlo) = s + (err + q + rlo e^r) with
 *   s + err = 1 + r split exactly (Fast2Sum), so the one large rounding is the last (0.5 ulp);
 *   q (< 0.065, with a relative error of a few u from its Horner steps) adds under 0.3 ulp where
 *   the result is below 1 (whose ulp is u/2).  Scaling by 2^k is exact (two factors, so that each
 *   is a normal number) except in the subnormal range, where it rounds once more.  Bound 1 ulp
 *   (measured 0.73); subnormal results within 1 ulp of the subnormals.  x > 709.78 gives +inf,
 *   x < -745.13 gives 0, NaN stays NaN.
 *
 *   exp2(x).  k = nearest integer to x, f = x - k exact, r + rlo = f ln2 with f LN2_HI split
 *   exactly (fma), then as exp.  Bound 1 ulp (measured 0.63).
 *
 *   log(x).  Subnormals are scaled by 2^54 first.  x = 2^e m with m in [sqrt(1/2), sqrt(2)),
 *   f = m - 1 exact, s = f / (2 + f), z = s^2; log(1 + f) = 2 atanh(s) = 2s + s R(z) with
 *   R = sum_{n=1..10} 2 z^n / (2n + 1): the truncation 2 s^23/23 < 2.2e-19 (|s| <= 0.1716).
 *   With 2s = f - s f it is f - s (f - R): f is exact, and the correction s (f - R) (at most
 *   0.086, a quarter of log(1 + f)) carries the roundings of s (2 u) and of its own products:
 *   together under 0.6 ulp.  e ln2 with LN2_HI42 (42 bits: exact for |e| < 2^11) + LN2_LO42.
 *   Bound 2 ulp (the final sum rounds once more; measured 0.80).  log(0) = -inf,
 *   log(x < 0) = NaN, log(+inf) = +inf.
 *
 *   log2(x).  The same log(m) = f + c (c = -s (f - R)), times 1/ln2 = IL_HI + IL_LO with f IL_HI
 *   split exactly (fma), added to e by a Fast2Sum (|e| >= 1 > |log2 m| when e != 0).  Bound
 *   2 ulp (measured 0.99).
 *
 *   rsqrt(x) = 1 / sqrt.rn(x): two roundings, a relative error below 2u, which is 2 ulp where
 *   the result's significand is near 2 and 1 ulp near 1.  Bound 2 ulp (measured 1.48).
 *
 *   tanh(x).  |x| < 2^-28: x (the next term x^3/3 is below 2^-56 x); |x| > 22: +-1 (1 - tanh 22
 *   < 2^-62); else t = expm1(2|x|) and tanh = t / (t + 2).  expm1(y) = 2^k (r + lo) + (2^k - 1)
 *   with r, lo as in exp (one fma: 2^k (r + lo) is exact, 2^k - 1 exact for k <= 53): r + lo
 *   and the fma round, 1 ulp.  t / (t + 2) has relative sensitivity 2 / (t + 2) <= 1 to t, so
 *   1 ulp of t, and two roundings.  Bound 3 ulp (measured 2.14).
 *
 *   erf(x).  |x| < 0.75: the Taylor series 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1)) to
 *   n = 17 (truncation 0.75^36 / (18! 37) = 2.4e-22); the terms alternate with ratio at most
 *   x^2 = 0.56, so the Horner sum in z = x^2 loses at most 2 ulp, and 2/sqrt(pi) = C0_HI + C0_LO
 *   keeps the leading product at one rounding.  0.75 <= |x| < 6: erf = 1 - erfc(|x|), erfc by
 *   the trapezoidal rule on the Gaussian (Chiarella-Reichel): erfc(x) = (2 h x e^(-x^2) / pi)
 *   (1/(2x^2) + sum_{k>=1} e^(-k^2 h^2) / (x^2 + k^2 h^2)) + 2 / (1 - e^(2 pi x / h)) + E with
 *   h = 1/2, whose error E is e^(-pi^2/h^2) ~ 7e-18 of erfc (measured in 40-digit arithmetic:
 *   below 1e-19 absolutely on [0.3, 6]); the sum stops at k = 13 (e^(-14^2/4) = 5e-22).  Every
 *   term of the sum is positive, so the sum keeps a relative error of a few u; e^(-x^2) is taken
 *   of the exactly split square (x^2 = s + t: e^(-s) (1 - t)); erfc < 0.29 here, so its few u
 *   are under 2 ulp of erf = 1 - erfc >= 0.71 (ulp 2^-53), and the subtraction rounds once.
 *   |x| >= 6: +-1 (erfc(6) = 2.2e-17 < 2^-54).  Bound 4 ulp (measured 1.88).
 *
 *   sin(x), cos(x).  |x| < 2^32: k = nearest integer to x 2/pi, r = x - k pi/2 in double-double
 *   with pi/2 = P1 + P2 + P3 (159 bits): x - k P1 is exact (one fma: both are multiples of the ulp
 *   of the smaller, the difference below 1), k P2 is split exactly (fma), subtracted by a TwoSum,
 *   and k P3 (below 2^-77) is added to the low part.  The error of r is below 2^-126 for
 *   |k| < 2^31, while no double is closer than about 2^-61 to a nonzero multiple of pi/2 (the
 *   worst case of the whole double range, x = 6381956970095103 2^797, a known result of the
 *   argument reduction literature; the test has it), so r is good to 2^-64 relative.
 *   |x| >= 2^32: Payne-Hanek on 64-bit integers, in a branch: |x| = M 2^E (M the 53-bit integer
 *   significand), and x 2/pi mod 4 only needs the 192 bits of 2/pi from bit E - 1 on (the bits
 *   before make multiples of 4, those after add less than 2^(55-192)); they are picked from 19
 *   words of 2/pi's bits by selects on the word index and two shifts, multiplied by M in three
 *   64x64 -> 128-bit products, and of the product's bits 190-191 are the quadrant and bits
 *   64-189 the fraction (the dropped bits 0-63 weigh less than 2^-126).  The fraction, read as
 *   signed (rounding the quadrant to nearest), becomes a double-double from four exact 32-bit
 *   pieces and is multiplied by P1 + P2: r is again good to 2^-64 relative.  inf and NaN give
 *   NaN.  |r| <= pi/4 (a little more when x 2/pi rounded k the other way): sin r = r + r^3 S(z)
 *   to r^17/17! (truncation r^19/19! = 1e-19 r), cos r = 1 - z/2 + z^2 C(z) to r^18/18!, with
 *   1 - z/2 split exactly (w = 1 - z/2 rounded, (1 - w) - z/2 its error) and the low part of r
 *   added through the derivative.  Each is its leading term plus a correction at most 0.3 of it:
 *   under 1 ulp besides the final rounding.  |x| < 2^-27: sin = x, cos = 1.  Bound 2 ulp
 *   (measured 0.78 sin, 0.78 cos, arguments up to 2^64 and of every magnitude).
 *
 *   pow(x, y) (math.powf).  log2 |x| = hh + hl within 2^-66 relative (log2_dd: the atanh
 *   series of log with its first three terms in double-double), th + tl = y hh + y hl with y hh
 *   split exactly (fma), and 2^(th + tl) as exp2 with tl ln2 added to the reduced argument's low
 *   part.  The error of y log2 |x| is then below |y log2 x| 2^-66 + 2^-100 |y log2 x| <= 2^-55.9
 *   over the finite results (|y log2 x| <= 1075), ln2 2^-55.9 = 0.05 ulp of the result, plus
 *   exp2's own: bound 2 ulp, measured 0.75 (no longer growing with |y log2 x|: as
 *   exp2(y log2(x)) it measured 850 ulp near 2^1000).  C's special cases by selects: x < 0 with
 *   an integer y (floor(y) = y) negates for an odd y (floor(y/2) != y/2; |y| >= 2^53 is even),
 *   NaN for another finite y; 0, inf and y = +-inf give 0 or inf by whether |x|^y grows; NaN
 *   in, NaN out; pow(+-1, +-inf) = pow(1, y) = pow(x, 0) = 1.
 *
 *   pow of f32 (low_pow_f32, from lower_math.c) in f64: exp2(y log2 |x|) (log2 within 2 ulp, the
 *   product one rounding: 2^-43 relative at |y log2 x| <= 150, where an f32 result is finite
 *   and nonzero), the same special cases, one rounding to f32: within 0.5 + 2^-19 ulp of f32
 *   (measured 0.50).
 *
 *   sigmoid is 1 / (1 + exp(-x)) (mlirgen): exp's error reaches it with a factor below 1, plus
 *   two roundings: bound 3 ulp (measured 2.27).  Below x = -709.78 exp(-x) overflows and the
 *   result is 0, where the exact value is below 2^-1022.
 */
#include "lower.h"

#include <math.h>

/* ---------------------------------------------------------------- the operations */

static MlirType f64_type(Low *L) { return mlirF64TypeGet(L->ctx); }

static MlirValue cf(Low *L, double v) {
  return low_const(L, f64_type(L), mlirFloatAttrDoubleGet(L->ctx, f64_type(L), v));
}

static MlirValue ci(Low *L, int64_t v) {
  return low_const(L, L->i64, mlirIntegerAttrGet(L->i64, v));
}

static MlirValue f_add(Low *L, MlirValue a, MlirValue b) { return low_bin(L, "arith.addf", a, b); }
static MlirValue f_sub(Low *L, MlirValue a, MlirValue b) { return low_bin(L, "arith.subf", a, b); }
static MlirValue f_mul(Low *L, MlirValue a, MlirValue b) { return low_bin(L, "arith.mulf", a, b); }
static MlirValue f_div(Low *L, MlirValue a, MlirValue b) { return low_bin(L, "arith.divf", a, b); }

static MlirValue f_fma(Low *L, MlirValue a, MlirValue b, MlirValue c) {
  MlirValue o[3] = {a, b, c};
  return low_op1(L, "math.fma", o, 3, f64_type(L));
}

/* a * b rounded once and never fused into a following sum (see Contraction above). */
static MlirValue prod(Low *L, MlirValue a, MlirValue b) { return f_fma(L, a, b, cf(L, -0.0)); }

static MlirValue f_abs(Low *L, MlirValue a) { return low_op1(L, "math.absf", &a, 1, f64_type(L)); }
static MlirValue f_sqrt(Low *L, MlirValue a) { return low_op1(L, "math.sqrt", &a, 1, f64_type(L)); }

static MlirValue f_copysign(Low *L, MlirValue mag, MlirValue sign) {
  MlirValue o[2] = {mag, sign};
  return low_op1(L, "math.copysign", o, 2, f64_type(L));
}

static MlirValue sel(Low *L, MlirValue c, MlirValue a, MlirValue b) {
  MlirValue o[3] = {c, a, b};
  return low_op1(L, "arith.select", o, 3, mlirValueGetType(a));
}

static MlirValue bits(Low *L, MlirValue a) { return low_op1(L, "arith.bitcast", &a, 1, L->i64); }
static MlirValue from_bits(Low *L, MlirValue i) {
  return low_op1(L, "arith.bitcast", &i, 1, f64_type(L));
}
static MlirValue itof(Low *L, MlirValue i) {
  return low_op1(L, "arith.sitofp", &i, 1, f64_type(L));
}

static MlirValue iadd(Low *L, MlirValue a, MlirValue b) { return low_bin(L, "arith.addi", a, b); }
static MlirValue isub(Low *L, MlirValue a, MlirValue b) { return low_bin(L, "arith.subi", a, b); }
static MlirValue iand(Low *L, MlirValue a, MlirValue b) { return low_bin(L, "arith.andi", a, b); }
static MlirValue ior(Low *L, MlirValue a, MlirValue b) { return low_bin(L, "arith.ori", a, b); }
static MlirValue ishl(Low *L, MlirValue a, int s) { return low_bin(L, "arith.shli", a, ci(L, s)); }
static MlirValue ishr(Low *L, MlirValue a, int s) { return low_bin(L, "arith.shrsi", a, ci(L, s)); }
static MlirValue ishru(Low *L, MlirValue a, int s) {
  return low_bin(L, "arith.shrui", a, ci(L, s));
}

static MlirValue ishlv(Low *L, MlirValue a, MlirValue s) { return low_bin(L, "arith.shli", a, s); }
static MlirValue ishruv(Low *L, MlirValue a, MlirValue s) {
  return low_bin(L, "arith.shrui", a, s);
}
static MlirValue utof(Low *L, MlirValue i) {
  return low_op1(L, "arith.uitofp", &i, 1, f64_type(L));
}

/* The 128-bit product a b of two i64 read unsigned: *lo and *hi words. */
static void mul_wide(Low *L, MlirValue a, MlirValue b, MlirValue *lo, MlirValue *hi) {
  MlirValue o[2] = {a, b};
  MlirType rt[2] = {L->i64, L->i64};
  MlirOperation op = low_op(L, "arith.mului_extended", o, 2, rt, 2, NULL, 0);
  *lo = mlirOperationGetResult(op, 0);
  *hi = mlirOperationGetResult(op, 1);
}

/* ---------------------------------------------------------------- the functions */

/* x rounded to an integer (nearest) by adding and removing 1.5 * 2^52, for |x| < 2^51; the
 * integer itself is the difference of the sum's bits from the shifter's (never a float to
 * integer conversion, which has no defined value for a NaN). */
#define SHIFTER 0x1.8p52
static MlirValue round_shift(Low *L, MlirValue x, MlirValue *k) {
  MlirValue t = f_add(L, x, cf(L, SHIFTER));
  *k = isub(L, bits(L, t), ci(L, (int64_t)0x4338000000000000));
  return f_sub(L, t, cf(L, SHIFTER));
}

/* 2^k for an integer k in [-1022, 1023], from its exponent bits. */
static MlirValue pow2(Low *L, MlirValue k) {
  return from_bits(L, ishl(L, iadd(L, k, ci(L, 1023)), 52));
}

/* y 2^k for k in [-2044, 2046], in two normal factors (one rounding, at the second, when the
 * result is subnormal; inf when it overflows). */
static MlirValue scale2(Low *L, MlirValue y, MlirValue k) {
  MlirValue k1 = ishr(L, k, 1), k2 = isub(L, k, k1);
  return f_mul(L, f_mul(L, y, pow2(L, k1)), pow2(L, k2));
}

/* q with e^r - 1 = r + q for |r| <= 0.35: q = r^2 (1/2! + r/3! + ... + r^11/13!). */
static MlirValue expm1_tail(Low *L, MlirValue r) {
  double fact = 13.0 * 12 * 11 * 10 * 9 * 8 * 7 * 6 * 5 * 4 * 3 * 2;
  MlirValue p = cf(L, 1.0 / fact);
  for (int n = 12; n >= 2; n--) {
    fact /= n + 1; /* n!, exact */
    p = f_add(L, f_mul(L, p, r), cf(L, 1.0 / fact));
  }
  return f_mul(L, f_mul(L, r, r), p);
}

#define LOG2E  0x1.71547652b82fep+0
#define LN2    0x1.62e42fefa39efp-1
#define LN2_HI LN2
#define LN2_LO 0x1.abc9e3b39803fp-56 /* ln 2 - LN2_HI */

/* The reduction of exp: x = k ln2 + r + *rlo, |r| <= 0.35, |*rlo| < 2^-44 (x within
 * [-746, 710] or NaN): r = x - k LN2_HI is exact, *rlo = -k LN2_LO. */
static MlirValue exp_reduce(Low *L, MlirValue x, MlirValue *k, MlirValue *rlo) {
  MlirValue kd = round_shift(L, f_mul(L, x, cf(L, LOG2E)), k);
  MlirValue nk = f_sub(L, cf(L, -0.0), kd);
  *rlo = f_mul(L, nk, cf(L, LN2_LO));
  return f_fma(L, nk, cf(L, LN2_HI), x);
}

/* e^(r + rlo) - 1 = r + lo with lo = q + rlo e^r, e^r = 1 + r + q (|rlo| < 2^-44: its square
 * is far below the last bit). */
static MlirValue expm1_lo(Low *L, MlirValue r, MlirValue rlo) {
  MlirValue q = expm1_tail(L, r);
  return f_add(L, q, f_fma(L, rlo, f_add(L, r, q), rlo));
}

/* e^(r + rlo) = 1 + r + lo with 1 + r split exactly (Fast2Sum: |r| < 1), so that the one big
 * rounding is the last. */
static MlirValue exp_core(Low *L, MlirValue r, MlirValue rlo) {
  MlirValue s = f_add(L, cf(L, 1.0), r);
  MlirValue err = f_add(L, f_sub(L, cf(L, 1.0), s), r);
  return f_add(L, s, f_add(L, err, expm1_lo(L, r, rlo)));
}

/* x kept within [lo, hi] (a NaN stays NaN: both compares are false for it). */
static MlirValue clamp(Low *L, MlirValue x, double lo, double hi) {
  x = sel(L, low_cmpf(L, "ogt", x, cf(L, hi)), cf(L, hi), x);
  return sel(L, low_cmpf(L, "olt", x, cf(L, lo)), cf(L, lo), x);
}

static MlirValue exp_f64(Low *L, MlirValue x) {
  MlirValue k, rlo, r = exp_reduce(L, clamp(L, x, -746.0, 710.0), &k, &rlo);
  return scale2(L, exp_core(L, r, rlo), k);
}

/* f = x - k exactly, then r + rlo = f ln2 (the product split exactly by an fma). */
static MlirValue exp2_f64(Low *L, MlirValue x) {
  MlirValue xc = clamp(L, x, -1080.0, 1030.0), k;
  MlirValue f = f_sub(L, xc, round_shift(L, xc, &k));
  MlirValue r = prod(L, f, cf(L, LN2_HI));
  MlirValue rlo = f_fma(L, f, cf(L, LN2_HI), f_sub(L, cf(L, -0.0), r));
  rlo = f_fma(L, f, cf(L, LN2_LO), rlo);
  return scale2(L, exp_core(L, r, rlo), k);
}

/* e^y - 1 for y in [0, 50]: 2^k (r + lo) + (2^k - 1), one rounding in the fma for k = 0. */
static MlirValue expm1_pos(Low *L, MlirValue y) {
  MlirValue k, rlo, r = exp_reduce(L, y, &k, &rlo);
  MlirValue p = pow2(L, k);
  return f_fma(L, p, f_add(L, r, expm1_lo(L, r, rlo)), f_sub(L, p, cf(L, 1.0)));
}

static MlirValue tanh_f64(Low *L, MlirValue x) {
  MlirValue a = f_abs(L, x);
  MlirValue t = expm1_pos(L, clamp(L, f_add(L, a, a), 0.0, 50.0));
  MlirValue th = f_div(L, t, f_add(L, t, cf(L, 2.0)));
  th = sel(L, low_cmpf(L, "ogt", a, cf(L, 22.0)), cf(L, 1.0), th);
  th = sel(L, low_cmpf(L, "olt", a, cf(L, 0x1p-28)), a, th);
  return f_copysign(L, th, x);
}

/* x = 2^e m with m in [sqrt(1/2), sqrt(2)): *e (an f64 integer) and f = m - 1, exact
 * (subnormals scaled by 2^54 first). */
static void log_split(Low *L, MlirValue x, MlirValue *e, MlirValue *f) {
  MlirValue sub = low_cmpf(L, "olt", x, cf(L, 0x1p-1022));
  MlirValue xs = sel(L, sub, f_mul(L, x, cf(L, 0x1p54)), x);
  MlirValue b = bits(L, xs);
  MlirValue ei = isub(L, iand(L, ishru(L, b, 52), ci(L, 0x7ff)), ci(L, 1023));
  ei = isub(L, ei, sel(L, sub, ci(L, 54), ci(L, 0)));
  MlirValue m =
      from_bits(L, ior(L, iand(L, b, ci(L, 0x000FFFFFFFFFFFFF)), ci(L, 0x3FF0000000000000)));
  MlirValue big = low_cmpf(L, "ogt", m, cf(L, 0x1.6a09e667f3bcdp+0)); /* sqrt(2) */
  m = sel(L, big, f_mul(L, m, cf(L, 0.5)), m);
  ei = sel(L, big, iadd(L, ei, ci(L, 1)), ei);
  *e = itof(L, ei);
  *f = f_sub(L, m, cf(L, 1.0));
}

/* log(m) = f + c for the x = 2^e m of log and log2 (e an f64 integer), m in [sqrt(1/2),
 * sqrt(2)): f = m - 1 exactly and c = -s (f - R(s^2)), s = f / (2 + f). */
static void log_reduce(Low *L, MlirValue x, MlirValue *e, MlirValue *f, MlirValue *c) {
  log_split(L, x, e, f);
  MlirValue s = f_div(L, *f, f_add(L, cf(L, 2.0), *f));
  MlirValue z = f_mul(L, s, s);
  MlirValue R = cf(L, 2.0 / 21.0);
  for (int n = 9; n >= 1; n--) R = f_add(L, f_mul(L, R, z), cf(L, 2.0 / (2 * n + 1)));
  R = f_mul(L, R, z);
  *c = f_mul(L, f_sub(L, cf(L, -0.0), s), f_sub(L, *f, R));
}

/* The special cases of log and log2: +inf at +inf, NaN below 0, -inf at 0, NaN at NaN. */
static MlirValue log_special(Low *L, MlirValue x, MlirValue y) {
  y = sel(L, low_cmpf(L, "oeq", x, cf(L, INFINITY)), x, y);
  y = sel(L, low_cmpf(L, "olt", x, cf(L, 0.0)), cf(L, NAN), y);
  y = sel(L, low_cmpf(L, "oeq", x, cf(L, 0.0)), cf(L, -INFINITY), y);
  return sel(L, low_cmpf(L, "uno", x, x), x, y);
}

#define LN2_HI42 0x1.62e42fefa3800p-1 /* ln 2 to 42 bits: e LN2_HI42 is exact */
#define LN2_LO42 0x1.ef35793c76730p-45

static MlirValue log_f64(Low *L, MlirValue x) {
  MlirValue e, f, c;
  log_reduce(L, x, &e, &f, &c);
  MlirValue lo = f_add(L, c, f_mul(L, e, cf(L, LN2_LO42)));
  MlirValue y = f_add(L, f_mul(L, e, cf(L, LN2_HI42)), f_add(L, f, lo));
  return log_special(L, x, y);
}

#define IL_HI 0x1.71547652b82fep+0 /* 1/ln 2 */
#define IL_LO 0x1.777d0ffda0d24p-56

static MlirValue log2_f64(Low *L, MlirValue x) {
  MlirValue e, f, c;
  log_reduce(L, x, &e, &f, &c);
  MlirValue u = prod(L, f, cf(L, IL_HI));
  MlirValue ue = f_fma(L, f, cf(L, IL_HI), f_sub(L, cf(L, -0.0), u)); /* f IL_HI - u, exact */
  MlirValue v = f_add(L, f_fma(L, f, cf(L, IL_LO), ue), f_mul(L, c, cf(L, IL_HI)));
  MlirValue hi = f_add(L, e, u);
  MlirValue lo = f_add(L, f_sub(L, u, f_sub(L, hi, e)), v); /* Fast2Sum: |e| >= |u| or e = 0 */
  return log_special(L, x, f_add(L, hi, lo));
}

static MlirValue rsqrt_f64(Low *L, MlirValue x) { return f_div(L, cf(L, 1.0), f_sqrt(L, x)); }

/* TwoSum: s + *err = a + b exactly (no products among a, b). */
static MlirValue two_sum(Low *L, MlirValue a, MlirValue b, MlirValue *err) {
  MlirValue s = f_add(L, a, b);
  MlirValue bb = f_sub(L, s, a);
  *err = f_add(L, f_sub(L, a, f_sub(L, s, bb)), f_sub(L, b, bb));
  return s;
}

#define C0_HI 0x1.20dd750429b6dp+0 /* 2/sqrt(pi) */
#define C0_LO 0x1.1ae3a914fed80p-56

/* erf(x) for |x| < 0.75: x (C0 + z (c1 + z (c2 + ...))), c_n = C0 (-1)^n / (n! (2n+1)). */
static MlirValue erf_taylor(Low *L, MlirValue x) {
  enum { TERMS = 17 };
  double fact = 1.0;
  double c[TERMS + 1];
  for (int n = 1; n <= TERMS; n++) {
    fact *= n;
    c[n] = (n % 2 ? -C0_HI : C0_HI) / (fact * (2 * n + 1));
  }
  MlirValue z = f_mul(L, x, x), p = cf(L, c[TERMS]);
  for (int n = TERMS - 1; n >= 1; n--) p = f_add(L, f_mul(L, p, z), cf(L, c[n]));
  p = f_add(L, f_mul(L, p, z), cf(L, C0_LO));
  return f_fma(L, x, cf(L, C0_HI), f_mul(L, x, p));
}

/* e^(-k^2/4), k = 1..13 (the trapezoidal weights of erfc with h = 1/2). */
static const double erfc_weight[13] = {
    0x1.8ebef9eac820bp-1,  0x1.78b56362cef38p-2,  0x1.afb718e8457f7p-4,  0x1.2c155b8213cf4p-6,
    0x1.fa0e9586aebc7p-10, 0x1.02cf22526545ap-13, 0x1.411fb0da07713p-18, 0x1.e355bbaee85cbp-24,
    0x1.b93de1e27ca3bp-30, 0x1.e8a37a45fc32ep-37, 0x1.4835bd010a41bp-44, 0x1.0b6c3afdde064p-52,
    0x1.0851945bd91fcp-61};

#define INV_PI  0x1.45f306dc9c883p-2
#define FOUR_PI 0x1.921fb54442d18p+3

/* erfc(a) for a in [0.75, 6] (outside it: a finite value or NaN, replaced by the caller). */
static MlirValue erfc_trapezoid(Low *L, MlirValue a) {
  MlirValue s = prod(L, a, a);
  MlirValue t = f_fma(L, a, a, f_sub(L, cf(L, -0.0), s)); /* a^2 = s + t exactly */
  MlirValue g = exp_f64(L, f_sub(L, cf(L, -0.0), s));
  g = f_fma(L, f_sub(L, cf(L, -0.0), t), g, g); /* e^(-a^2) = e^(-s) (1 - t) */
  MlirValue sum = cf(L, 0.0);
  for (int k = 13; k >= 1; k--) /* the small terms first */
    sum = f_add(L, sum, f_div(L, cf(L, erfc_weight[k - 1]), f_add(L, s, cf(L, k * k * 0.25))));
  sum = f_add(L, sum, f_div(L, cf(L, 0.5), s));
  MlirValue lead = f_mul(L, f_mul(L, f_mul(L, a, g), cf(L, INV_PI)), sum); /* 2h = 1 */
  /* 2 / (1 - e^(4 pi a)): -2 e^(-4 pi a) / (1 - e^(-4 pi a)) */
  MlirValue q = exp_f64(L, f_mul(L, a, cf(L, -FOUR_PI)));
  MlirValue corr = f_div(L, f_mul(L, cf(L, -2.0), q), f_sub(L, cf(L, 1.0), q));
  return f_add(L, lead, corr);
}

static MlirValue erf_f64(Low *L, MlirValue x) {
  MlirValue a = f_abs(L, x);
  MlirValue y = f_sub(L, cf(L, 1.0), erfc_trapezoid(L, clamp(L, a, 0.75, 6.0)));
  y = sel(L, low_cmpf(L, "oge", a, cf(L, 6.0)), cf(L, 1.0), y);
  y = f_copysign(L, y, x);
  return sel(L, low_cmpf(L, "olt", a, cf(L, 0.75)), erf_taylor(L, x), y);
}

#define TWO_OVER_PI 0x1.45f306dc9c883p-1
#define PIO2_1      0x1.921fb54442d18p+0 /* pi/2 = PIO2_1 + PIO2_2 + PIO2_3 + 5.6e-50 */
#define PIO2_2      0x1.1a62633145c07p-54
#define PIO2_3      -0x1.f1976b7ed8fbcp-110
#define TRIG_LIMIT  0x1p32 /* Cody-Waite below it, Payne-Hanek from it on */

/* x = k pi/2 + r + rl (|r| <= pi/4 + 2^-40, |rl| <= ulp(r) / 2) for |x| < 2^32; *k the
 * quadrant's integer. */
static MlirValue trig_reduce(Low *L, MlirValue x, MlirValue *k, MlirValue *rl) {
  MlirValue kd = round_shift(L, f_mul(L, x, cf(L, TWO_OVER_PI)), k);
  MlirValue nk = f_sub(L, cf(L, -0.0), kd);
  MlirValue a = f_fma(L, nk, cf(L, PIO2_1), x); /* exact */
  MlirValue t2 = prod(L, kd, cf(L, PIO2_2));
  MlirValue l2 = f_fma(L, kd, cf(L, PIO2_2), f_sub(L, cf(L, -0.0), t2)); /* k P2 = t2 + l2 */
  MlirValue e, s = two_sum(L, a, f_sub(L, cf(L, -0.0), t2), &e);
  MlirValue c = f_fma(L, nk, cf(L, PIO2_3), f_sub(L, e, l2));
  return two_sum(L, s, c, rl);
}

/* The bits of 2/pi after the binary point, 64 a word, most significant first (1216 bits), from
 * floor(2/pi 2^1216) in 500-digit arithmetic. */
static const uint64_t two_over_pi_bits[19] = {
    0xA2F9836E4E441529ULL, 0xFC2757D1F534DDC0ULL, 0xDB6295993C439041ULL, 0xFE5163ABDEBBC561ULL,
    0xB7246E3A424DD2E0ULL, 0x06492EEA09D1921CULL, 0xFE1DEB1CB129A73EULL, 0xE88235F52EBB4484ULL,
    0xE99C7026B45F7E41ULL, 0x3991D639835339F4ULL, 0x9C845F8BBDF9283BULL, 0x1FF897FFDE05980FULL,
    0xEF2F118B5A0A6D1FULL, 0x6D367ECF27CB09B7ULL, 0x4F463F669E5FEA2DULL, 0x7527BAC7EBE5F17BULL,
    0x3D0739F78A5292EAULL, 0x6BFB5FB11F8D5D08ULL, 0x56033046FC7B6BABULL};

/* Word q + d (q an i64 in [0, 16]) of the stream of 64 zero bits followed by 2/pi's bits: a
 * chain of selects (no table in memory). */
static MlirValue two_over_pi_word(Low *L, MlirValue q, int d) {
  MlirValue w = ci(L, 0);
  for (int j = d; j <= 16 + d; j++)
    if (j >= 1)
      w = sel(L, low_cmpi(L, "eq", q, ci(L, j - d)), ci(L, (int64_t)two_over_pi_bits[j - 1]), w);
  return w;
}

/* Payne-Hanek for a = |x| >= 2^32 (finite; anything else gives some finite value): a = M 2^E
 * with M the 53-bit significand, and a 2/pi mod 4 = M W 2^-190 mod 4 where W is the 192 bits of
 * 2/pi from bit E - 1 on (the earlier bits make multiples of 4; the later ones add below
 * 2^55 2^-192).  Of the 245-bit product, bits 190-191 are the quadrant and bits 64-189 the
 * fraction (the dropped bits 0-63 are below 2^-126): read as a signed fraction in [-1/2, 1/2)
 * (rounding the quadrant to nearest), turned into a double-double and multiplied by pi/2. */
static MlirValue trig_reduce_big(Low *L, MlirValue a, MlirValue *n, MlirValue *rl) {
  MlirValue b = bits(L, a);
  MlirValue m = ior(L, iand(L, b, ci(L, 0x000FFFFFFFFFFFFF)), ci(L, (int64_t)1 << 52));
  MlirValue s = isub(L, ishru(L, b, 52), ci(L, 1013)); /* the window's first stream bit */
  MlirValue q = ishru(L, s, 6), o = iand(L, s, ci(L, 63)), t[4], w[3];
  for (int d = 0; d < 4; d++) t[d] = two_over_pi_word(L, q, d);
  for (int d = 0; d < 3; d++) /* t[d] t[d+1] from bit o (two shifts: o may be 0) */
    w[d] = ior(L, ishlv(L, t[d], o), ishruv(L, ishru(L, t[d + 1], 1), isub(L, ci(L, 63), o)));
  MlirValue lo1, hi1, lo2, hi2;
  mul_wide(L, m, w[2], &lo2, &hi2);
  mul_wide(L, m, w[1], &lo1, &hi1);
  MlirValue bw = iadd(L, hi2, lo1); /* product bits 64-127 */
  MlirValue carry =
      low_op1(L, "arith.extui", (MlirValue[]){low_cmpi(L, "ult", bw, hi2)}, 1, L->i64);
  MlirValue aw = iadd(L, iadd(L, hi1, low_bin(L, "arith.muli", m, w[0])), carry); /* 128-191 */
  MlirValue fh = ior(L, ishl(L, aw, 2), ishru(L, bw, 62)), fl = ishl(L, bw, 2);
  *n = iadd(L, ishru(L, aw, 62), ishru(L, fh, 63));
  /* the fraction fh 2^-64 (signed) + fl 2^-128 from four exact pieces of 32 bits */
  MlirValue h = f_mul(L, itof(L, ishr(L, fh, 32)), cf(L, 0x1p-32));
  MlirValue mid = f_mul(L, utof(L, iand(L, fh, ci(L, 0xFFFFFFFF))), cf(L, 0x1p-64));
  MlirValue l1 = f_mul(L, utof(L, ishru(L, fl, 32)), cf(L, 0x1p-96));
  MlirValue l2 = f_mul(L, utof(L, iand(L, fl, ci(L, 0xFFFFFFFF))), cf(L, 0x1p-128));
  MlirValue e, f = two_sum(L, h, mid, &e), flo;
  f = two_sum(L, f, f_add(L, e, f_add(L, l1, l2)), &flo);
  /* (f + flo) (P1 + P2) */
  MlirValue r = prod(L, f, cf(L, PIO2_1));
  MlirValue err = f_fma(L, f, cf(L, PIO2_1), f_sub(L, cf(L, -0.0), r));
  err = f_add(L, err, f_fma(L, f, cf(L, PIO2_2), f_mul(L, flo, cf(L, PIO2_1))));
  return two_sum(L, r, err, rl);
}

/* sin(r + rl) for |r| <= pi/4 + 2^-40: r + (r z S(z) + rl (1 - z/2)). */
static MlirValue sin_poly(Low *L, MlirValue r, MlirValue rl, MlirValue z) {
  double fact = 17.0 * 16 * 15 * 14 * 13 * 12 * 11 * 10 * 9 * 8 * 7 * 6 * 5 * 4 * 3 * 2;
  MlirValue p = cf(L, 1.0 / fact);
  for (int n = 15; n >= 3; n -= 2) {
    fact /= (n + 1) * (n + 2); /* n! */
    p = f_add(L, f_mul(L, p, z), cf(L, ((n - 1) / 2 % 2 ? -1.0 : 1.0) / fact));
  }
  MlirValue corr = f_fma(L, f_mul(L, rl, cf(L, -0.5)), z, rl);
  return f_add(L, r, f_add(L, f_mul(L, f_mul(L, r, z), p), corr));
}

/* cos(r + rl): w + (((1 - w) - z/2) + (z^2 C(z) - r rl)), w = 1 - z/2 rounded. */
static MlirValue cos_poly(Low *L, MlirValue r, MlirValue rl, MlirValue z) {
  double fact = 18.0 * 17 * 16 * 15 * 14 * 13 * 12 * 11 * 10 * 9 * 8 * 7 * 6 * 5 * 4 * 3 * 2;
  MlirValue p = cf(L, -1.0 / fact); /* (-1)^9 r^18 / 18! */
  for (int n = 16; n >= 4; n -= 2) {
    fact /= (n + 1) * (n + 2); /* n! */
    p = f_add(L, f_mul(L, p, z), cf(L, (n / 2 % 2 ? -1.0 : 1.0) / fact));
  }
  MlirValue hz = f_mul(L, z, cf(L, 0.5));
  MlirValue w = f_sub(L, cf(L, 1.0), hz);
  MlirValue tail = f_sub(L, f_sub(L, cf(L, 1.0), w), hz);
  MlirValue small = f_sub(L, f_mul(L, f_mul(L, z, z), p), f_mul(L, r, rl));
  return f_add(L, w, f_add(L, tail, small));
}

/* sin (cosine = false) or cos of x: quadrant n = k mod 4 picks +-sin r or +-cos r. */
static MlirValue sincos_f64(Low *L, MlirValue x, bool cosine) {
  MlirValue k, rl, r = trig_reduce(L, x, &k, &rl);
  MlirValue a = f_abs(L, x);
  /* |x| >= 2^32 (and inf, NaN): Payne-Hanek on |x| in a branch that threads seldom take, the
   * result mirrored for x < 0 (sin(-x) = -sin x: r and the quadrant negated) */
  MlirType types[3] = {f64_type(L), f64_type(L), L->i64};
  KilnIRIf big =
      kiln_ir_build_if(&L->b, L->loc, low_cmpf(L, "oge", a, cf(L, TRIG_LIMIT)), types, 3);
  KilnIRBuilder saved = L->b;
  kiln_ir_builder_set_end(&L->b, big.then_block);
  MlirValue nb, rlb, rb = trig_reduce_big(L, a, &nb, &rlb);
  MlirValue xneg = low_cmpf(L, "olt", x, cf(L, 0.0));
  MlirValue yb[3] = {sel(L, xneg, f_sub(L, cf(L, -0.0), rb), rb),
                     sel(L, xneg, f_sub(L, cf(L, -0.0), rlb), rlb),
                     sel(L, xneg, isub(L, ci(L, 0), nb), nb)};
  kiln_ir_build_yield(&L->b, L->loc, yb, 3);
  kiln_ir_builder_set_end(&L->b, big.else_block);
  MlirValue ys[3] = {r, rl, k};
  kiln_ir_build_yield(&L->b, L->loc, ys, 3);
  L->b = saved;
  r = kiln_ir_if_result(&big, 0), rl = kiln_ir_if_result(&big, 1), k = kiln_ir_if_result(&big, 2);
  MlirValue z = f_mul(L, r, r);
  MlirValue s = sin_poly(L, r, rl, z), c = cos_poly(L, r, rl, z);
  MlirValue n = iand(L, cosine ? iadd(L, k, ci(L, 1)) : k, ci(L, 3)); /* cos x = sin(x + pi/2) */
  MlirValue odd = low_op1(L, "arith.trunci", &n, 1, L->i1);
  MlirValue y = sel(L, odd, c, s);
  MlirValue neg = low_cmpi(L, "uge", n, ci(L, 2));
  y = sel(L, neg, f_sub(L, cf(L, -0.0), y), y);
  MlirValue tiny = low_cmpf(L, "olt", a, cf(L, 0x1p-27));
  y = sel(L, tiny, cosine ? cf(L, 1.0) : x, y);
  return sel(L, low_cmpf(L, "olt", a, cf(L, INFINITY)), y, cf(L, NAN)); /* inf and NaN */
}

/* ---------------------------------------------------------------- pow */

/* Fast2Sum: s + *err = a + b exactly when |a| >= |b| or a = 0. */
static MlirValue fast_two_sum(Low *L, MlirValue a, MlirValue b, MlirValue *err) {
  MlirValue s = f_add(L, a, b);
  *err = f_add(L, f_sub(L, a, s), b);
  return s;
}

/* a b = p + *err exactly (p = a b rounded, never fused). */
static MlirValue two_prod(Low *L, MlirValue a, MlirValue b, MlirValue *err) {
  MlirValue p = prod(L, a, b);
  *err = f_fma(L, a, b, f_sub(L, cf(L, -0.0), p));
  return p;
}

/* (h + l) (c + clo) as a double-double, for a constant c + clo (l, clo small). */
static MlirValue dd_mul_const(Low *L, MlirValue h, MlirValue l, double c, double clo,
                              MlirValue *lo) {
  MlirValue e, p = two_prod(L, h, cf(L, c), &e);
  *lo = f_add(L, e, f_add(L, f_mul(L, h, cf(L, clo)), f_mul(L, l, cf(L, c))));
  return p;
}

/* log2(a) as hi + *lo for a finite a > 0 (anything else gives some value, replaced by pow's
 * selects), relative error below 2^-66: a = 2^e m, f = m - 1 exact, s = f / (2 + f) in
 * double-double (2 + f split by a Fast2Sum, the quotient's remainder exact by an fma), and
 * log(m) = 2 atanh(s) = 2s + (2/3) s^3 + (2/5) s^5 + s^7 Q(s^2) with the first three terms in
 * double-double and only s^7 Q (at most 3.7e-6 of log m, |s| <= 0.1716) in double.  Q runs to
 * s^26 / 27: the truncation is below 2^-70 of log m.  The terms are summed largest first by
 * Fast2Sums into one double and their errors, times 1/ln2 = IL_HI + IL_LO, added to e by a
 * Fast2Sum (|e| >= 1 > |log2 m| or e = 0), and the pair renormalized.  Measured against a
 * 113-bit log2 over 3 million inputs around 1, over [0.7, 1.5) and 2^-100..2^100: 2^-67.2 (with
 * s^5 in the double part it was 2^-61.9: 1.1 ulp of pow at y log2 x = 1021). */
static MlirValue log2_dd(Low *L, MlirValue a, MlirValue *lo) {
  MlirValue e, f, dl, sl, zl, cl, fl, t2l, t5l, e1, e2, e3, pl, rem;
  log_split(L, a, &e, &f);
  MlirValue dh = fast_two_sum(L, cf(L, 2.0), f, &dl); /* 2 + f = dh + dl */
  MlirValue sh = f_div(L, f, dh);
  rem = f_fma(L, f_sub(L, cf(L, -0.0), sh), dh, f); /* f - sh dh, exact */
  sl = f_div(L, f_sub(L, rem, f_mul(L, sh, dl)), dh);
  MlirValue zh = two_prod(L, sh, sh, &zl); /* s^2 */
  zl = f_add(L, zl, f_mul(L, f_add(L, sh, sh), sl));
  MlirValue ch = two_prod(L, sh, zh, &cl); /* s^3 */
  cl = f_add(L, cl, f_add(L, f_mul(L, sh, zl), f_mul(L, sl, zh)));
  MlirValue fh = two_prod(L, ch, zh, &fl); /* s^5 */
  fl = f_add(L, fl, f_add(L, f_mul(L, ch, zl), f_mul(L, cl, zh)));
  double c23 = 2.0 / 3.0, c25 = 2.0 / 5.0; /* their low parts: the exact remainders / 3, 5 */
  MlirValue t2h = dd_mul_const(L, ch, cl, c23, fma(-3.0, c23, 2.0) / 3.0, &t2l);
  MlirValue t5h = dd_mul_const(L, fh, fl, c25, fma(-5.0, c25, 2.0) / 5.0, &t5l);
  MlirValue q = cf(L, 2.0 / 27.0);
  for (int n = 12; n >= 3; n--) q = f_add(L, f_mul(L, q, zh), cf(L, 2.0 / (2 * n + 1)));
  MlirValue rest = f_mul(L, prod(L, fh, zh), q);
  MlirValue lh = fast_two_sum(L, f_add(L, sh, sh), t2h, &e1); /* log m = lh + ll */
  lh = fast_two_sum(L, lh, t5h, &e2);
  lh = fast_two_sum(L, lh, rest, &e3);
  MlirValue ll =
      f_add(L, f_add(L, e1, f_add(L, e2, e3)), f_add(L, f_add(L, sl, sl), f_add(L, t2l, t5l)));
  MlirValue ph = dd_mul_const(L, lh, ll, IL_HI, IL_LO, &pl); /* log2 m = ph + pl */
  MlirValue hl, hh = fast_two_sum(L, e, ph, &hl);
  return fast_two_sum(L, hh, f_add(L, hl, pl), lo);
}

/* 2^(th + tl), |tl| <= 2^-40 where |th| < 2048: exp2_f64 with tl ln2 added to the low part of
 * the reduced argument (where |th| >= 2048, or NaN, tl is dropped: the result is 0, inf or NaN
 * by th alone). */
static MlirValue exp2_dd(Low *L, MlirValue th, MlirValue tl) {
  tl = sel(L, low_cmpf(L, "olt", f_abs(L, th), cf(L, 2048.0)), tl, cf(L, 0.0));
  MlirValue xc = clamp(L, th, -1080.0, 1030.0), k;
  MlirValue f = f_sub(L, xc, round_shift(L, xc, &k));
  MlirValue r = prod(L, f, cf(L, LN2_HI));
  MlirValue rlo = f_fma(L, f, cf(L, LN2_HI), f_sub(L, cf(L, -0.0), r));
  rlo = f_fma(L, f, cf(L, LN2_LO), rlo);
  rlo = f_fma(L, tl, cf(L, LN2_HI), rlo);
  return scale2(L, exp_core(L, r, rlo), k);
}

static MlirValue band(Low *L, MlirValue a, MlirValue b) { return low_bin(L, "arith.andi", a, b); }
static MlirValue bor(Low *L, MlirValue a, MlirValue b) { return low_bin(L, "arith.ori", a, b); }

/* C's special cases of pow(x, y) around r = |x|^y (computed for finite |x| > 0):
 * 0, inf and y = +-inf give 0 or inf by whether |x|^y grows (|x| > 1 and y > 0, or |x| < 1
 * and y < 0; |x| = 0 counts as below 1, inf as above); x < 0 (-0 and -inf too) with an odd
 * integer y negates; x < 0 finite with y not an integer is NaN; NaN in, NaN out; and last
 * pow(+-1, +-inf) = 1, pow(1, y) = 1, pow(x, +-0) = 1, even for a NaN. */
static MlirValue pow_special(Low *L, MlirValue x, MlirValue y, MlirValue r) {
  MlirValue a = f_abs(L, x), ya = f_abs(L, y), inf = cf(L, INFINITY);
  MlirValue fl = low_op1(L, "math.floor", &y, 1, f64_type(L));
  MlirValue is_int = low_cmpf(L, "oeq", fl, y); /* inf too; NaN not */
  MlirValue half = f_mul(L, y, cf(L, 0.5));
  MlirValue hfl = low_op1(L, "math.floor", &half, 1, f64_type(L));
  MlirValue odd = band(L, is_int, low_cmpf(L, "one", hfl, half)); /* |y| >= 2^53: even */
  MlirValue edge = bor(L, bor(L, low_cmpf(L, "oeq", a, cf(L, 0.0)), low_cmpf(L, "oeq", a, inf)),
                       low_cmpf(L, "oeq", ya, inf));
  MlirValue grows =
      low_cmpi(L, "eq", low_cmpf(L, "ogt", a, cf(L, 1.0)), low_cmpf(L, "ogt", y, cf(L, 0.0)));
  r = sel(L, edge, sel(L, grows, inf, cf(L, 0.0)), r);
  MlirValue neg = low_cmpi(L, "slt", bits(L, x), ci(L, 0)); /* the sign bit */
  r = sel(L, band(L, neg, odd), f_sub(L, cf(L, -0.0), r), r);
  MlirValue neg_finite = band(L, low_cmpf(L, "olt", x, cf(L, 0.0)), low_cmpf(L, "olt", a, inf));
  r = sel(L, band(L, neg_finite, low_cmpf(L, "une", fl, y)), cf(L, NAN), r); /* y not an integer */
  r = sel(L, low_cmpf(L, "uno", x, y), cf(L, NAN), r);
  r = sel(L, band(L, low_cmpf(L, "oeq", a, cf(L, 1.0)), low_cmpf(L, "oeq", ya, inf)), cf(L, 1.0),
          r);
  r = sel(L, low_cmpf(L, "oeq", x, cf(L, 1.0)), cf(L, 1.0), r);
  return sel(L, low_cmpf(L, "oeq", y, cf(L, 0.0)), cf(L, 1.0), r);
}

/* pow(x, y) = 2^(y log2 |x|) with y log2 |x| a double-double: th + tl = y (hh + hl) with
 * y hh split exactly by an fma, then exp2 of the pair, and C's special cases. */
static MlirValue pow_f64(Low *L, MlirValue x, MlirValue y) {
  MlirValue hl, hh = log2_dd(L, f_abs(L, x), &hl), tl;
  MlirValue th = two_prod(L, y, hh, &tl);
  tl = f_add(L, tl, f_mul(L, y, hl));
  return pow_special(L, x, y, exp2_dd(L, th, tl));
}

/* f32 pow in f64: y log2 |x| of the widened inputs (log2 within 2 ulp, the product one
 * rounding: at most 5 2^-53 |y log2 x|, with |y log2 x| <= 150 where an f32 result is finite
 * and nonzero), exp2 and the special cases in f64, and one rounding to f32: the f64 value is
 * within 2^-43 relative of x^y, so the f32 result is within 0.5 + 2^-19 ulp. */
MlirValue low_pow_f32(Low *L, MlirValue x, MlirValue y) {
  MlirValue xd = low_op1(L, "arith.extf", &x, 1, f64_type(L));
  MlirValue yd = low_op1(L, "arith.extf", &y, 1, f64_type(L));
  MlirValue t = f_mul(L, yd, log2_f64(L, f_abs(L, xd)));
  MlirValue r = pow_special(L, xd, yd, exp2_f64(L, t));
  return low_op1(L, "arith.truncf", &r, 1, L->f32);
}

/* ---------------------------------------------------------------- dispatch */

MlirValue low_math_f64_scalar(Low *L, const char *name, MlirValue *x, bool *ok) {
  *ok = true;
  if (strcmp(name, "math.exp") == 0) return exp_f64(L, x[0]);
  if (strcmp(name, "math.exp2") == 0) return exp2_f64(L, x[0]);
  if (strcmp(name, "math.log") == 0) return log_f64(L, x[0]);
  if (strcmp(name, "math.log2") == 0) return log2_f64(L, x[0]);
  if (strcmp(name, "math.rsqrt") == 0) return rsqrt_f64(L, x[0]);
  if (strcmp(name, "math.tanh") == 0) return tanh_f64(L, x[0]);
  if (strcmp(name, "math.erf") == 0) return erf_f64(L, x[0]);
  if (strcmp(name, "math.sin") == 0) return sincos_f64(L, x[0], false);
  if (strcmp(name, "math.cos") == 0) return sincos_f64(L, x[0], true);
  if (strcmp(name, "math.powf") == 0) return pow_f64(L, x[0], x[1]);
  *ok = false;
  return x[0];
}
