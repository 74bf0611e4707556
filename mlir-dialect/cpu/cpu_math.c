/* cpu_math.c - kiln-cpu-math: exp, exp2, erf and tanh of f32 as plain arithmetic, so that the
 * loop vectorizer widens the nests they are in.
 *
 * Why: upstream's math-to-llvm turns math.exp into llvm.exp and math-to-libm turns math.erf and
 * math.tanh into calls of expf/erff/tanhf.  With no vector math library, LLVM keeps every one of
 * them a scalar call, and a call in a loop nest stops the whole nest from vectorizing: GELU's
 * forward and backward ran at 2 GB/s on the cpu, the biggest items of a BERT step, and
 * attention's softmax (exp2) and cross-entropy (exp) the same way.  Here each becomes a
 * branch-free sequence of adds, multiplies, compares, selects and integer operations on the
 * bits, which every x86-64 level (SSE2 included: no rounding instruction, no FMA) and other
 * hosts vectorize.  f16 and bf16 are computed in f32 and rounded once; f64 keeps libm.
 *
 * The functions (bounds in f32 ulp, measured over every f32 input range by the numeric test
 * f32_math; dsl/reference.md, "f32 math on the cpu target"):
 * - exp(x): x clamped to [-104, 88.8] (beyond: 0 and inf), n = round(x log2 e) by adding and
 *   subtracting 1.5 * 2^23 (whose bits then hold n), r = x - n ln2 with ln2 in two parts
 *   (Cody-Waite: 0.693359375 has 9 bits, so n times it is exact), e^r by a degree-7
 *   polynomial (Cephes' expf coefficients), and 2^n applied as two exponent-field factors
 *   2^(n >> 1) 2^(n - (n >> 1)) so that results down in the subnormals round once.  Within 1 ulp.
 * - exp2(x): the same with n = round(x) and r = (x - n) ln2 (x - n exact).
 * - erf(x): below |x| = 1, x P((x^2 - 1/2) 2); from 1 on, 1 - e^(-a^2) R((a - 5/2) 2/3) with a =
 *   min(|x|, 4) (erf rounds to 1 in f32 from 3.92 on), signed as x.  P and R are the Chebyshev
 *   interpolants of degree 7 and 10 of erf(x)/x over x in [0, 1] and of erfc(a) e^(a^2) over
 *   [1, 4], at the Chebyshev nodes of the scaled variable, in long double, then expanded to
 *   monomials of the scaled variable and rounded to f32.  Within 2 ulp.
 * - tanh(x): below |x| = 0.625, x + x z Q(z), z = x^2 (Cephes' tanhf coefficients); from there,
 *   1 - 2 / (e^(2|x|) + 1); both signed as x (tanh(-0) = -0).  Within 1.5 ulp.
 * A NaN input gives a NaN (selected at the end: the integer bits of a NaN's n are meaningless
 * but never poison).  Only scalar ops are rewritten: the cpu lowering emits math per element. */
#include "kiln_cpu.h"
#include "kiln_mlir_internal.h"

typedef struct Mx {
  KilnIRBuilder b;
  MlirLocation loc;
  MlirType f32, i32;
} Mx;

/* Every helper below builds its operands' ops before its own, and takes at most one operand that
 * is still to be built (the others are values or constants made inside), so the order of the
 * ops does not depend on the C compiler's order of evaluating arguments: the same kernel gives
 * the same IR from every build of Kiln. */

static MlirValue cf(Mx *m, double v) { return kiln_ir_build_const_float(&m->b, m->loc, m->f32, v); }
static MlirValue ci(Mx *m, int64_t v) { return kiln_ir_build_const_int(&m->b, m->loc, m->i32, v); }
static MlirValue op2(Mx *m, const char *name, MlirValue a, MlirValue b) {
  MlirValue ops[2] = {a, b};
  return kiln_ir_build_elementwise(&m->b, m->loc, name, ops, 2, mlirValueGetType(a));
}
static MlirValue mul(Mx *m, MlirValue a, MlirValue b) { return op2(m, "arith.mulf", a, b); }
static MlirValue add(Mx *m, MlirValue a, MlirValue b) { return op2(m, "arith.addf", a, b); }
static MlirValue sub(Mx *m, MlirValue a, MlirValue b) { return op2(m, "arith.subf", a, b); }
/* a op c for a constant c (built after a) */
static MlirValue mulc(Mx *m, MlirValue a, double c) { return mul(m, a, cf(m, c)); }
static MlirValue addc(Mx *m, MlirValue a, double c) { return add(m, a, cf(m, c)); }
static MlirValue subc(Mx *m, MlirValue a, double c) { return sub(m, a, cf(m, c)); }
/* c - a */
static MlirValue csub(Mx *m, double c, MlirValue a) { return sub(m, cf(m, c), a); }
static MlirValue inti(Mx *m, const char *name, MlirValue a, int64_t c) {
  return op2(m, name, a, ci(m, c));
}
static MlirValue sel(Mx *m, MlirValue c, MlirValue a, MlirValue b) {
  return kiln_ir_build_select(&m->b, m->loc, c, a, b);
}
static MlirValue cmp(Mx *m, const char *pred, MlirValue a, MlirValue b) {
  return kiln_ir_build_cmpf(&m->b, m->loc, pred, a, b);
}
static MlirValue bits(Mx *m, MlirValue x) {
  return kiln_ir_build_cast(&m->b, m->loc, "arith.bitcast", x, m->i32);
}
static MlirValue from_bits(Mx *m, MlirValue n) {
  return kiln_ir_build_cast(&m->b, m->loc, "arith.bitcast", n, m->f32);
}
/* |mag| with the sign of `sign` */
static MlirValue signed_as(Mx *m, MlirValue mag, MlirValue sign) {
  return op2(m, "math.copysign", mag, sign);
}
static MlirValue absf(Mx *m, MlirValue x) {
  return kiln_ir_build_elementwise(&m->b, m->loc, "math.absf", &x, 1, m->f32);
}

/* c where x `pred` c, else x (a NaN x stays NaN: ordered compares are false for it). */
static MlirValue cap(Mx *m, MlirValue x, const char *pred, double c) {
  MlirValue k = cf(m, c);
  return sel(m, cmp(m, pred, x, k), k, x);
}

/* c[0] + s (c[1] + s (... c[n-1])): Horner's scheme, a multiply and an add a step. */
static MlirValue horner(Mx *m, MlirValue s, const float *c, int n) {
  MlirValue p = cf(m, c[n - 1]);
  for (int i = n - 2; i >= 0; i--) p = addc(m, mul(m, p, s), c[i]);
  return p;
}

/* 1.5 * 2^23: v + it rounds v (|v| < 2^22) to an integer n, whose two's complement is then the
 * low bits of the sum's bit pattern less the constant's. */
#define ROUND_MAGIC      12582912.0
#define ROUND_MAGIC_BITS 0x4B400000

/* v rounded to the nearest integer, as f32 (*nf) and i32 (returned); |v| < 2^22. */
static MlirValue round_magic(Mx *m, MlirValue v, MlirValue *nf) {
  MlirValue t = addc(m, v, ROUND_MAGIC);
  *nf = subc(m, t, ROUND_MAGIC);
  return inti(m, "arith.subi", bits(m, t), ROUND_MAGIC_BITS);
}

/* e^r for |r| <= ln2 / 2 + a little: 1 + r + r^2 p(r) (Cephes expf). */
static MlirValue exp_reduced(Mx *m, MlirValue r) {
  static const float p[6] = {5.0000001201e-1f, 1.6666665459e-1f, 4.1665795894e-2f,
                             8.3334519073e-3f, 1.3981999507e-3f, 1.9875691500e-4f};
  MlirValue q = horner(m, r, p, 6);
  MlirValue r2 = mul(m, r, r);
  return addc(m, add(m, mul(m, q, r2), r), 1.0);
}

/* y 2^n for n in [-151, 129], as y 2^(n >> 1) 2^(n - (n >> 1)): each factor is a normal
 * number made from its exponent field, and the product rounds once where it is subnormal. */
static MlirValue scale_pow2(Mx *m, MlirValue y, MlirValue n) {
  MlirValue n1 = inti(m, "arith.shrsi", n, 1);
  MlirValue k[2] = {n1, op2(m, "arith.subi", n, n1)};
  for (int i = 0; i < 2; i++)
    y = mul(m, y, from_bits(m, inti(m, "arith.shli", inti(m, "arith.addi", k[i], 127), 23)));
  return y;
}

/* result, or x itself where x is NaN. */
static MlirValue nan_through(Mx *m, MlirValue x, MlirValue result) {
  return sel(m, cmp(m, "uno", x, x), x, result);
}

static MlirValue exp_f32(Mx *m, MlirValue x) {
  MlirValue xc = cap(m, cap(m, x, "ogt", 88.8), "olt", -104.0), nf;
  MlirValue n = round_magic(m, mulc(m, xc, 1.4426950408889634), &nf);
  MlirValue hi = sub(m, xc, mulc(m, nf, 0.693359375));
  MlirValue r = sub(m, hi, mulc(m, nf, -2.12194440e-4));
  return nan_through(m, x, scale_pow2(m, exp_reduced(m, r), n));
}

static MlirValue exp2_f32(Mx *m, MlirValue x) {
  MlirValue xc = cap(m, cap(m, x, "ogt", 129.0), "olt", -151.0), nf;
  MlirValue n = round_magic(m, xc, &nf);
  MlirValue r = mulc(m, sub(m, xc, nf), 0.6931471805599453);
  return nan_through(m, x, scale_pow2(m, exp_reduced(m, r), n));
}

static MlirValue erf_f32(Mx *m, MlirValue x) {
  /* erf(x) / x on [0, 1] in u = (x^2 - 1/2) 2 */
  static const float small[8] = {9.654687643e-01f,  -1.405360848e-01f, 1.985249855e-02f,
                                 -2.285485622e-03f, 2.175119880e-04f,  -1.753691504e-05f,
                                 1.231639544e-06f,  -7.552378634e-08f};
  /* erfc(a) e^(a^2) on [1, 4] in s = (a - 5/2) 2/3 */
  static const float big[11] = {2.108063698e-01f,  -1.115213931e-01f, 5.611062795e-02f,
                                -2.699793689e-02f, 1.248669997e-02f,  -5.611233413e-03f,
                                2.418384189e-03f,  -9.162725764e-04f, 3.764772846e-04f,
                                -2.451864420e-04f, 9.294974006e-05f};
  MlirValue a = absf(m, x);
  MlirValue u = mulc(m, subc(m, mul(m, x, x), 0.5), 2.0);
  MlirValue lo = mul(m, x, horner(m, u, small, 8));
  MlirValue ac = cap(m, a, "ogt", 4.0);
  MlirValue s = mulc(m, subc(m, ac, 2.5), 2.0 / 3.0);
  MlirValue e = exp_f32(m, csub(m, 0.0, mul(m, ac, ac)));
  MlirValue hi = signed_as(m, csub(m, 1.0, mul(m, e, horner(m, s, big, 11))), x);
  MlirValue below1 = cmp(m, "olt", a, cf(m, 1.0));
  return nan_through(m, x, sel(m, below1, lo, hi));
}

static MlirValue tanh_f32(Mx *m, MlirValue x) {
  static const float q[5] = {-3.33332819422e-1f, 1.33314422036e-1f, -5.37397155531e-2f,
                             2.06390887954e-2f, -5.70498872745e-3f};
  MlirValue a = absf(m, x), z = mul(m, x, x);
  MlirValue xz = mul(m, x, z);
  MlirValue lo = add(m, x, mul(m, xz, horner(m, z, q, 5)));
  MlirValue e1 = addc(m, exp_f32(m, mulc(m, a, 2.0)), 1.0);
  MlirValue hi = csub(m, 1.0, op2(m, "arith.divf", cf(m, 2.0), e1));
  MlirValue small = cmp(m, "olt", a, cf(m, 0.625));
  return nan_through(m, x, signed_as(m, sel(m, small, lo, hi), x));
}

typedef MlirValue (*MathFn)(Mx *m, MlirValue x);

static MathFn expansion(MlirOperation op) {
  if (kiln_ir_op_is(op, "math.exp")) return exp_f32;
  if (kiln_ir_op_is(op, "math.exp2")) return exp2_f32;
  if (kiln_ir_op_is(op, "math.erf")) return erf_f32;
  if (kiln_ir_op_is(op, "math.tanh")) return tanh_f32;
  return NULL;
}

/* Scalar f32, f16 and bf16 (vector and f64 ops are left to math-to-llvm and libm). */
static bool expands(MlirOperation op) {
  if (!expansion(op) || mlirOperationGetNumResults(op) != 1) return false;
  MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0));
  return mlirTypeIsAF32(t) || mlirTypeIsAF16(t) || mlirTypeIsABF16(t);
}

static MlirWalkResult collect(MlirOperation op, void *user) {
  if (expands(op)) kiln_op_list_push(user, op);
  return MlirWalkResultAdvance;
}

static void expand(MlirContext ctx, MlirOperation op) {
  Mx m = {.loc = mlirOperationGetLocation(op),
          .f32 = mlirF32TypeGet(ctx),
          .i32 = mlirIntegerTypeGet(ctx, 32)};
  kiln_ir_builder_init(&m.b, ctx, mlirOperationGetBlock(op));
  kiln_ir_builder_set_before(&m.b, op);
  MlirValue res = mlirOperationGetResult(op, 0), x = mlirOperationGetOperand(op, 0);
  MlirType t = mlirValueGetType(res);
  bool narrow = !mlirTypeIsAF32(t);
  if (narrow) x = kiln_ir_build_cast(&m.b, m.loc, "arith.extf", x, m.f32);
  MlirValue y = expansion(op)(&m, x);
  if (narrow) y = kiln_ir_build_cast(&m.b, m.loc, "arith.truncf", y, t);
  mlirValueReplaceAllUsesOfWith(res, y);
  mlirOperationDestroy(op);
}

static MlirLogicalResult cpu_math_module(MlirOperation module, void *opts) {
  (void)opts;
  KilnOpList ops = {0};
  mlirOperationWalk(module, collect, &ops, MlirWalkPreOrder);
  MlirContext ctx = mlirOperationGetContext(module);
  for (size_t i = 0; i < ops.n; i++) expand(ctx, ops.ops[i]);
  kiln_op_list_free(&ops);
  return mlirLogicalResultSuccess();
}

static _Alignas(8) char cpu_math_id;

MlirPass kiln_pass_create_cpu_math(void) {
  return kiln_pass_make(mlirTypeIDCreate(&cpu_math_id), "KilnCpuMath", "kiln-cpu-math",
                        "exp, exp2, erf and tanh of f32 as vectorizable arithmetic",
                        cpu_math_module, NULL, 0);
}
