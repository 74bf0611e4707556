/* lower_math.c - math functions per scalar, and kiln.rand (Philox4x32-10).
 *
 * Without the CUDA toolkit there is no libdevice to link, and LLVM's NVPTX backend cannot select
 * llvm.exp / llvm.log and friends, so the transcendental functions become the PTX approximate
 * instructions through inline asm (ex2.approx, lg2.approx, rsqrt.approx, tanh.approx,
 * sin/cos.approx), computed in f32 (f16/bf16 inputs are widened and the result narrowed).  erf
 * is a polynomial (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7) in t = 1 / (1 + p |x|), t taken
 * with rcp.approx (1 ulp, where IEEE division is a multi-instruction sequence): t's relative
 * error 2^-23 moves erf by at most 3.45 * 2^-23 = 4.1e-7 (|d(t p(t))/dt| t e^(-x^2) peaks at
 * 3.45, at x = 0), so erf errs by less than 5.6e-7 besides the f32 rounding of the arithmetic.  sqrt, floor, ceil, abs, fma and
 * copysign stay math ops: the upstream math-to-llvm pass turns them into intrinsics NVPTX
 * selects. */
#include "lower.h"

static MlirValue asm1(Low *L, KilnGpuApprox insn, MlirValue x) {
  char text[64];
  snprintf(text, sizeof text, "%s $0, $1;", kiln_gpu_approx_ptx[insn]);
  return low_asm(L, text, "=f,f", &x, 1, L->f32);
}

static MlirValue mulc(Low *L, MlirValue x, double c) {
  return low_bin(L, "arith.mulf", x, low_f32(L, c));
}

static MlirValue erf_poly(Low *L, MlirValue x) {
  MlirValue ax = low_op1(L, "math.absf", &x, 1, L->f32);
  MlirValue one = low_f32(L, 1.0);
  MlirValue t = asm1(L, KILN_GPU_APPROX_RCP, low_bin(L, "arith.addf", one, mulc(L, ax, 0.3275911)));
  static const double a[5] = {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429};
  MlirValue p = low_f32(L, a[4]);
  for (int i = 3; i >= 0; i--)
    p = low_bin(L, "arith.addf", low_bin(L, "arith.mulf", p, t), low_f32(L, a[i]));
  p = low_bin(L, "arith.mulf", p, t);
  /* exp(-x^2) = 2^(-x^2 * log2(e)) */
  MlirValue e =
      asm1(L, KILN_GPU_APPROX_EX2, mulc(L, low_bin(L, "arith.mulf", ax, ax), -1.4426950408889634));
  MlirValue y = low_bin(L, "arith.subf", one, low_bin(L, "arith.mulf", p, e));
  MlirValue o[2] = {y, x};
  return low_op1(L, "math.copysign", o, 2, L->f32);
}

/* One scalar of a math op, in f32. */
static MlirValue math_f32(Low *L, const char *name, MlirValue *x, int n, bool *ok) {
  *ok = true;
  if (strcmp(name, "math.exp") == 0)
    return asm1(L, KILN_GPU_APPROX_EX2, mulc(L, x[0], 1.4426950408889634));
  if (strcmp(name, "math.exp2") == 0) return asm1(L, KILN_GPU_APPROX_EX2, x[0]);
  if (strcmp(name, "math.log") == 0)
    return mulc(L, asm1(L, KILN_GPU_APPROX_LG2, x[0]), 0.6931471805599453);
  if (strcmp(name, "math.log2") == 0) return asm1(L, KILN_GPU_APPROX_LG2, x[0]);
  if (strcmp(name, "math.rsqrt") == 0) return asm1(L, KILN_GPU_APPROX_RSQRT, x[0]);
  if (strcmp(name, "math.tanh") == 0) return asm1(L, KILN_GPU_APPROX_TANH, x[0]);
  if (strcmp(name, "math.sin") == 0) return asm1(L, KILN_GPU_APPROX_SIN, x[0]);
  if (strcmp(name, "math.cos") == 0) return asm1(L, KILN_GPU_APPROX_COS, x[0]);
  if (strcmp(name, "math.erf") == 0) return erf_poly(L, x[0]);
  if (strcmp(name, "math.sqrt") == 0 || strcmp(name, "math.floor") == 0 ||
      strcmp(name, "math.ceil") == 0 || strcmp(name, "math.absf") == 0 ||
      strcmp(name, "math.fma") == 0 || strcmp(name, "math.copysign") == 0)
    return low_op1(L, name, x, (size_t)n, L->f32);
  *ok = false;
  return x[0];
}

/* f64: the ops PTX has in f64 and rounds exactly (sqrt.rn, cvt.rmi/rpi for floor/ceil, abs,
 * fma.rn, copysign) stay math ops, which NVPTX selects (and the emulator runs as host
 * intrinsics); the transcendentals have no f64 form here (their approximations are f32 only,
 * and there is no libdevice), so they are refused where they are written. */
static bool low_math_f64(Low *L, const char *name, MlirValue res, Vals **in, intptr_t nops,
                         int64_t n, MlirType et) {
  if (strcmp(name, "math.sqrt") != 0 && strcmp(name, "math.floor") != 0 &&
      strcmp(name, "math.ceil") != 0 && strcmp(name, "math.absf") != 0 &&
      strcmp(name, "math.fma") != 0 && strcmp(name, "math.copysign") != 0) {
    low_error(L,
              "GPU lowering: %s of f64 is not supported on the GPU targets yet (sqrt, floor, "
              "ceil, abs and fma are; every f64 math function runs on the cpu target)",
              name + 5);
    return false;
  }
  Vals *out = low_vals(L, n);
  for (int64_t j = 0; j < n; j++) {
    MlirValue x[3];
    for (intptr_t i = 0; i < nops; i++) x[i] = in[i]->v[in[i]->n == 1 ? 0 : j];
    out->v[j] = low_op1(L, name, x, (size_t)nops, et);
  }
  low_set(L, res, out);
  return true;
}

bool low_math(Low *L, MlirOperation op) {
  char name[64];
  kiln_ir_op_name(op, name, sizeof name);
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirType rt = mlirValueGetType(res);
  MlirType et = kiln_ir_elem_type(rt);
  intptr_t nops = mlirOperationGetNumOperands(op);
  if (nops > 3 || mlirOperationGetNumResults(op) != 1) {
    low_error(L, "GPU lowering: unsupported math op '%s'", name);
    return false;
  }
  Vals *in[3];
  int64_t n = 1;
  for (intptr_t i = 0; i < nops; i++) {
    in[i] = low_get(L, mlirOperationGetOperand(op, i));
    if (in[i]->n > n) n = in[i]->n;
  }
  Vals *out = low_vals(L, n);
  if (mlirTypeIsAInteger(et)) {
    /* math.absi and friends: nothing target specific. */
    for (int64_t j = 0; j < n; j++) {
      MlirValue x[3];
      for (intptr_t i = 0; i < nops; i++) x[i] = in[i]->v[in[i]->n == 1 ? 0 : j];
      out->v[j] = low_op1(L, name, x, (size_t)nops, et);
    }
    low_set(L, res, out);
    return true;
  }
  if (mlirTypeIsAF64(et)) return low_math_f64(L, name, res, in, nops, n, et);
  bool narrow = !mlirTypeIsAF32(et);
  for (int64_t j = 0; j < n; j++) {
    MlirValue x[3];
    for (intptr_t i = 0; i < nops; i++) {
      x[i] = in[i]->v[in[i]->n == 1 ? 0 : j];
      if (narrow) x[i] = low_op1(L, "arith.extf", &x[i], 1, L->f32);
    }
    bool ok;
    MlirValue r = math_f32(L, name, x, (int)nops, &ok);
    if (!ok) {
      low_error(L, "GPU lowering: unsupported math op '%s'", name);
      return false;
    }
    out->v[j] = narrow ? low_op1(L, "arith.truncf", &r, 1, et) : r;
  }
  low_set(L, res, out);
  return true;
}

/* ---------------------------------------------------------------- rand */

static void mulhilo(Low *L, uint32_t m, MlirValue x, MlirValue *hi, MlirValue *lo) {
  MlirValue o[2] = {low_i32(L, (int32_t)m), x};
  MlirType rt[2] = {L->i32, L->i32};
  MlirOperation op = low_op(L, "arith.mului_extended", o, 2, rt, 2, NULL, 0);
  *lo = mlirOperationGetResult(op, 0);
  *hi = mlirOperationGetResult(op, 1);
}

/* Philox4x32-10 with key (seed, 0) and counter (offset, 0, 0, 0); the first output word. */
static MlirValue philox(Low *L, MlirValue seed, MlirValue off) {
  MlirValue c0 = off, c1 = low_i32(L, 0), c2 = low_i32(L, 0), c3 = low_i32(L, 0);
  MlirValue k0 = seed, k1 = low_i32(L, 0);
  for (int round = 0; round < 10; round++) {
    MlirValue hi0, lo0, hi1, lo1;
    mulhilo(L, 0xD2511F53u, c0, &hi0, &lo0);
    mulhilo(L, 0xCD9E8D57u, c2, &hi1, &lo1);
    MlirValue n0 = low_bin(L, "arith.xori", low_bin(L, "arith.xori", hi1, c1), k0);
    MlirValue n2 = low_bin(L, "arith.xori", low_bin(L, "arith.xori", hi0, c3), k1);
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 = low_bin(L, "arith.addi", k0, low_i32(L, (int32_t)0x9E3779B9u));
    k1 = low_bin(L, "arith.addi", k1, low_i32(L, (int32_t)0xBB67AE85u));
  }
  return c0;
}

bool low_rand(Low *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  Vals *S = low_get(L, mlirOperationGetOperand(op, 0));
  Vals *O = low_get(L, mlirOperationGetOperand(op, 1));
  Vals *out = low_vals(L, O->n);
  bool raw = !mlirTypeIsAFloat(kiln_ir_elem_type(mlirValueGetType(res))); /* randint: r0 itself */
  for (int64_t j = 0; j < O->n; j++) {
    MlirValue r = philox(L, S->v[0], O->v[j]);
    if (raw) {
      out->v[j] = r;
      continue;
    }
    MlirValue top = low_bin(L, "arith.shrui", r, low_i32(L, 8));
    MlirValue f = low_op1(L, "arith.uitofp", &top, 1, L->f32);
    out->v[j] = mulc(L, f, 5.9604644775390625e-08); /* 2^-24 */
  }
  low_set(L, res, out);
  return true;
}
