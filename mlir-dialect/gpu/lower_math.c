/* lower_math.c - math functions per scalar, and kiln.rand (Philox4x32-10).
 *
 * Without the CUDA toolkit there is no libdevice to link, and LLVM's NVPTX backend cannot select
 * llvm.exp / llvm.log and friends, so the transcendental functions become the PTX approximate
 * instructions through inline asm (ex2.approx, lg2.approx, rsqrt.approx, tanh.approx,
 * sin/cos.approx), computed in f32 (f16/bf16 inputs are widened and the result narrowed).  erf
 * is a polynomial (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7) in t = 1 / (1 + p |x|), t taken
 * with rcp.approx (1 ulp, where IEEE division is a multi-instruction sequence): t's relative
 * error 2^-23 moves erf by at most 3.45 * 2^-23 = 4.1e-7 (|d(t p(t))/dt| t e^(-x^2) peaks at
 * 3.45, at x = 0), so erf errs by less than 5.6e-7 besides the f32 rounding of the arithmetic.
 * pow is computed in f64 (lower_math_f64.c, low_pow_f32) and rounded once: ex2.approx of
 * y lg2.approx(x) would err by 2^-22 |y log2 x| relative.  sqrt, floor, ceil, abs, fma and
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

/* The math ops PTX rounds exactly in every float type (sqrt.rn, cvt.rmi/rpi, abs, fma.rn,
 * copysign): NVPTX selects them as they are. */
static bool exact_math(const char *name) {
  static const char *const exact[] = {"math.sqrt", "math.floor", "math.ceil",
                                      "math.absf", "math.fma",   "math.copysign"};
  for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
    if (strcmp(name, exact[i]) == 0) return true;
  return false;
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
  if (strcmp(name, "math.powf") == 0) return low_pow_f32(L, x[0], x[1]);
  if (exact_math(name)) return low_op1(L, name, x, (size_t)n, L->f32);
  *ok = false;
  return x[0];
}

/* The op as it is, element by element (math ops NVPTX selects, and the emulator runs, as they
 * are: integer ones and the exact f64 ones). */
static bool low_math_direct(Low *L, const char *name, MlirValue res, Vals **in, intptr_t nops,
                            int64_t n, MlirType et) {
  Vals *out = low_vals(L, n);
  for (int64_t j = 0; j < n; j++) {
    MlirValue x[3];
    for (intptr_t i = 0; i < nops; i++) x[i] = in[i]->v[in[i]->n == 1 ? 0 : j];
    out->v[j] = low_op1(L, name, x, (size_t)nops, et);
  }
  low_set(L, res, out);
  return true;
}

/* f64: the ops PTX has in f64 and rounds exactly (sqrt.rn, cvt.rmi/rpi for floor/ceil, abs,
 * fma.rn, copysign) stay math ops, which NVPTX selects (and the emulator runs as host
 * intrinsics); the transcendentals have no f64 form in PTX (its approximations are f32 only,
 * and there is no libdevice), so each is written out per element from exact f64 arithmetic
 * (lower_math_f64.c). */
static bool low_math_f64(Low *L, const char *name, MlirValue res, Vals **in, intptr_t nops,
                         int64_t n, MlirType et) {
  if (exact_math(name)) return low_math_direct(L, name, res, in, nops, n, et);
  Vals *out = low_vals(L, n);
  for (int64_t j = 0; j < n; j++) {
    MlirValue x[3];
    for (intptr_t i = 0; i < nops; i++) x[i] = in[i]->v[in[i]->n == 1 ? 0 : j];
    bool ok;
    out->v[j] = low_math_f64_scalar(L, name, x, &ok);
    if (!ok) {
      low_error(L, "GPU lowering: unsupported math op '%s' of f64", name);
      return false;
    }
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
  /* math.absi and friends: nothing target specific. */
  if (mlirTypeIsAInteger(et)) return low_math_direct(L, name, res, in, nops, n, et);
  if (mlirTypeIsAF64(et)) return low_math_f64(L, name, res, in, nops, n, et);
  Vals *out = low_vals(L, n);
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

/* The high word of the 64-bit product of two u32, as NVVM's mul.hi intrinsic.  The emu rewrite
 * (emu_lower.c) knows it by name. */
static MlirValue mul_hi(Low *L, MlirValue a, MlirValue b) {
  MlirValue o[2] = {a, b};
  MlirNamedAttribute at[2] = {
      kiln_ir_named(L->ctx, "intrin",
                    mlirStringAttrGet(L->ctx, mlirStringRefCreateFromCString(KILN_GPU_MULHI))),
      kiln_ir_named(L->ctx, "fastmathFlags", kiln_gpu_parse_attr(L->ctx, "#llvm.fastmath<none>")),
  };
  return mlirOperationGetResult(low_op(L, "llvm.call_intrinsic", o, 2, &L->i32, 1, at, 2), 0);
}

/* m * x as (high, low) words.  Two plain 32-bit products, not a 64-bit one split in two
 * (arith.mului_extended: zext, mul, lshr, trunc): the same two PTX instructions, and O3's
 * InstCombine, which spent half its time on the 64-bit form's 16 Philox blocks, sees a third of
 * the operations. */
static void mulhilo(Low *L, uint32_t m, MlirValue x, MlirValue *hi, MlirValue *lo) {
  MlirValue c = low_i32(L, (int32_t)m);
  *lo = low_bin(L, "arith.muli", c, x);
  *hi = mul_hi(L, c, x);
}

enum { PHILOX_ROUNDS = 10 };

/* One Philox round on the counter c with key k, then the Weyl bump of the key. */
static void philox_round(Low *L, MlirValue c[4], MlirValue k[2]) {
  MlirValue hi0, lo0, hi1, lo1;
  mulhilo(L, 0xD2511F53u, c[0], &hi0, &lo0);
  mulhilo(L, 0xCD9E8D57u, c[2], &hi1, &lo1);
  MlirValue n0 = low_bin(L, "arith.xori", low_bin(L, "arith.xori", hi1, c[1]), k[0]);
  MlirValue n2 = low_bin(L, "arith.xori", low_bin(L, "arith.xori", hi0, c[3]), k[1]);
  c[0] = n0, c[1] = lo1, c[2] = n2, c[3] = lo0;
  k[0] = low_bin(L, "arith.addi", k[0], low_i32(L, (int32_t)0x9E3779B9u));
  k[1] = low_bin(L, "arith.addi", k[1], low_i32(L, (int32_t)0xBB67AE85u));
}

/* Key (seed, 0) and counter (ctr, 0, 0, 0) after `rounds` rounds. */
static void philox_start(Low *L, MlirValue seed, MlirValue ctr, int rounds, MlirValue c[4],
                         MlirValue k[2]) {
  c[0] = ctr, c[1] = c[2] = c[3] = low_i32(L, 0);
  k[0] = seed, k[1] = low_i32(L, 0);
  for (int round = 0; round < rounds; round++) philox_round(L, c, k);
}

/* The four words of the Philox4x32-10 block with key (seed, 0) and counter (ctr, 0, 0, 0). */
static void philox_block(Low *L, MlirValue seed, MlirValue ctr, MlirValue out[4]) {
  MlirValue k[2];
  philox_start(L, seed, ctr, PHILOX_ROUNDS, out, k);
}

static MlirValue select_i32(Low *L, MlirValue c, MlirValue a, MlirValue b) {
  MlirValue o[3] = {c, a, b};
  return low_op1(L, "arith.select", o, 3, L->i32);
}

/* Words 2 hi and 2 hi + 1 of the block (hi an i1: the first or the second half).  Each of the
 * last round's two products makes one half, so only the selected one is computed: its factor,
 * constant and the word and key it is xored with are chosen before it. */
static void philox_half(Low *L, MlirValue seed, MlirValue ctr, MlirValue hi, MlirValue out[2]) {
  MlirValue c[4], k[2];
  philox_start(L, seed, ctr, PHILOX_ROUNDS - 1, c, k);
  MlirValue x = select_i32(L, hi, c[0], c[2]);
  MlirValue m =
      select_i32(L, hi, low_i32(L, (int32_t)0xD2511F53u), low_i32(L, (int32_t)0xCD9E8D57u));
  MlirValue y = select_i32(L, hi, c[3], c[1]), key = select_i32(L, hi, k[1], k[0]);
  MlirValue lo = low_bin(L, "arith.muli", m, x), h = mul_hi(L, m, x);
  out[0] = low_bin(L, "arith.xori", low_bin(L, "arith.xori", h, y), key);
  out[1] = lo;
}

/* The counter of offset o: its bits shifted right by 2, logically. */
static MlirValue counter_of(Low *L, MlirValue o) {
  return low_bin(L, "arith.shrui", o, low_i32(L, 2));
}

/* Bit b of the i32 x as an i1. */
static MlirValue bit_of(Low *L, MlirValue x, int b) {
  MlirValue s = b ? low_bin(L, "arith.shrui", x, low_i32(L, b)) : x;
  return low_op1(L, "arith.trunci", &s, 1, L->i1);
}

/* c[k] for k = x & 3, two levels of selects on x's low bits. */
static MlirValue pick4(Low *L, MlirValue x, const MlirValue c[4]) {
  MlirValue b0 = bit_of(L, x, 0);
  MlirValue lo = select_i32(L, b0, c[1], c[0]), hi = select_i32(L, b0, c[3], c[2]);
  return select_i32(L, bit_of(L, x, 1), hi, lo);
}

/* How a thread's offsets share Philox blocks: runs of `v` offsets (1, 2 or 4) at consecutive
 * list positions.  Consecutive offsets starting at a multiple of `align` (4: the run is one
 * block's words in order; 2: the first or second half of one block; 1: anywhere, so the run
 * may cross into the next block); or, `one_block`, offsets in any order with one counter
 * o >> 2 (each element picks its word by its own low bits). */
typedef struct RandRuns {
  int v, align;
  bool one_block;
} RandRuns;

/* The largest power of two <= min(limit, 4) dividing n. */
static int run_length(int64_t limit, int64_t n) {
  int p = 1;
  while (p * 2 <= limit && p * 2 <= 4 && n % (p * 2) == 0) p *= 2;
  return p;
}

/* Runs along the fastest dim of the offsets' layout, from the axis analysis: a run is v <= 4
 * elements the thread holds next to each other (the layout's contiguous elements along that dim,
 * spt, at stride 1), whose offsets are proven consecutive (contiguity) and start at a multiple of
 * the divisibility.  The chunks a thread holds start at multiples of spt in the tile, and the
 * analysis' runs at multiples of their length, so a chunk of v starts aligned as its run does. */
static RandRuns rand_runs(Low *L, MlirValue offs, int64_t n_vals) {
  RandRuns r = {1, 1, false};
  MlirType t = mlirValueGetType(offs);
  if (!mlirTypeIsARankedTensor(t)) return r;
  KilnGpuOwn own = kiln_gpu_own_of_type(t);
  if (own.rank == 0 || own.count != n_vals) return r;
  int d = own.order[0];
  const KilnGpuDimMap *m = &own.dim[d];
  if (m->elem_stride != 1 && m->n > 1) return r;
  KilnAxisInfo ai = kiln_axis_get(L->axis, offs);
  int64_t run = m->spt < m->n ? m->spt : m->n;
  int p = run_length(ai.contig[d] < run ? ai.contig[d] : run, m->n);
  /* Runs of one counter that are not consecutive offsets (pairs of rows of counters in the
   * attention's transposed tiles): one block for the run, better than a crossing run. */
  int q = run_length(ai.quad[d] < run ? ai.quad[d] : run, m->n);
  r.v = p;
  if (p == 1 && q == 1) return r;
  r.align = ai.divis[d] >= 4 ? 4 : ai.divis[d] >= 2 ? 2 : 1;
  if (p > 1 && r.align > 1) {
    if (r.align == 2) r.v = 2; /* a run of 4 from an even offset may cross: two halves */
    if (r.align > r.v) r.align = r.v;
    return r;
  }
  if (q > 1) return (RandRuns){q, 1, true};
  return r;
}

/* The words of v consecutive offsets from o0 whose alignment is not known: the block of o0, and
 * the next one only when the run crosses into it (a branch that no thread takes when the
 * offsets are in fact aligned).  Element e is word (o0 & 3) + e of the pair of blocks. */
static void rand_run_unaligned(Low *L, MlirValue seed, MlirValue o0, int v, MlirValue *out) {
  MlirValue ctr = counter_of(L, o0);
  MlirValue a[4], w[8];
  philox_block(L, seed, ctr, a);
  MlirValue k = low_bin(L, "arith.andi", o0, low_i32(L, 3));
  MlirValue cross = low_cmpi(L, "sgt", k, low_i32(L, 4 - v));
  MlirType types[4] = {L->i32, L->i32, L->i32, L->i32};
  KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, cross, types, 4);
  KilnIRBuilder saved = L->b;
  kiln_ir_builder_set_end(&L->b, f.then_block);
  MlirValue b[4];
  /* counters are 30 bits: offset -1's block (0x3FFFFFFF) is followed by offset 0's (0) */
  MlirValue next = low_bin(L, "arith.andi", low_bin(L, "arith.addi", ctr, low_i32(L, 1)),
                           low_i32(L, 0x3FFFFFFF));
  philox_block(L, seed, next, b);
  kiln_ir_build_yield(&L->b, L->loc, b, 4);
  kiln_ir_builder_set_end(&L->b, f.else_block);
  kiln_ir_build_yield(&L->b, L->loc, a, 4);
  L->b = saved;
  for (int i = 0; i < 4; i++) w[i] = a[i], w[4 + i] = kiln_ir_if_result(&f, (size_t)i);
  for (int e = 0; e < v; e++) out[e] = pick4(L, k, &w[e]);
}

/* The bits a thread's coordinate along m's dim can have from its lane and warp: a field of
 * `bits` bits times `mul`, a power of two; -1 when that is not so. */
static int64_t base_bits(const KilnGpuDimMap *m) {
  if (!m->base_used) return 0;
  int64_t all = 0;
  int64_t mul[2] = {m->lane_mul, m->warp_mul}, bits[2] = {m->lane_bits, m->warp_bits};
  for (int k = 0; k < 2; k++) {
    if (!bits[k]) continue;
    if (mul[k] <= 0 || (mul[k] & (mul[k] - 1))) return -1;
    int64_t field = (((int64_t)1 << bits[k]) - 1) * mul[k];
    if (all & field) return -1;
    all |= field;
  }
  return all;
}

/* Whether the coordinates of the thread's elements at local indices la and lb differ only in
 * `bits` (per dim): the coordinates are the thread's base (lane and warp bits, base[d]) plus a
 * constant per element, so where the two use disjoint bits the difference is the constants' xor. */
static bool differ_within(const KilnGpuOwn *own, const int64_t *base, const int *la, const int *lb,
                          const int64_t *bits) {
  for (int d = 0; d < own->rank; d++) {
    int64_t a = kiln_gpu_own_offset(own, d, la[d]), b = kiln_gpu_own_offset(own, d, lb[d]);
    if (((a | b) & base[d]) != 0 || ((a ^ b) & ~bits[d]) != 0) return false;
  }
  return true;
}

/* The thread's elements grouped by Philox counter: leader[j] is the first list position with
 * element j's counter (elements whose coordinates differ only in the analysis' ctr_bits), and
 * half[k] of a leader k whether its group is within one half of the block (pair_bits).
 * partner, when not 0, is a lane bit whose flip moves each of the thread's coordinates by an
 * index bit in ctr_bits: lanes l and l ^ partner hold groups of the same counters, element for
 * element (the mma layout's rows g and g + 1, lanes 4 apart, under the attention keep mask's
 * counters, which ignore bit 0 of the query), so each can compute half of the blocks. */
typedef struct RandGroups {
  int64_t *leader;
  bool *half;
  int64_t n; /* groups; the element count when nothing is proven (each element its own) */
  int partner;
} RandGroups;

/* A lane bit (as a lane mask) that flips only counter bits of the thread's coordinates, or 0:
 * one lane field bit of a dim whose index bit is in ctr_bits there and inside the tile, the
 * dim's lane and warp fields disjoint power-of-two multiples (base[d] >= 0) and no element's
 * constant offset using the thread's base bits (so the flip is an xor of that index bit). */
static int rand_partner_lane(const KilnGpuOwn *own, const int64_t *base, const int64_t *ctr_bits) {
  for (int d = 0; d < own->rank; d++) {
    const KilnGpuDimMap *m = &own->dim[d];
    if (!m->base_used || !m->lane_bits || base[d] < 0) continue;
    for (int i = 0; i < own->dim[d].n; i++)
      if (kiln_gpu_own_offset(own, d, i) & base[d]) return 0;
    for (int b = 0; b < m->lane_bits; b++) {
      int64_t bit = (int64_t)m->lane_mul << b;
      if (bit < m->size && (ctr_bits[d] & bit)) return 1 << (m->lane_shift + b);
    }
  }
  return 0;
}

static RandGroups rand_groups(Low *L, MlirValue offs, int64_t n_vals) {
  size_t cap = (size_t)(n_vals ? n_vals : 1);
  RandGroups g = {malloc(cap * sizeof *g.leader), malloc(cap * sizeof *g.half), n_vals, 0};
  KILN_ASSERT(g.leader != NULL && g.half != NULL);
  for (int64_t j = 0; j < n_vals; j++) g.leader[j] = j, g.half[j] = true;
  MlirType t = mlirValueGetType(offs);
  if (!mlirTypeIsARankedTensor(t)) return g;
  KilnGpuOwn own = kiln_gpu_own_of_type(t);
  if (own.rank == 0 || own.count != n_vals) return g;
  KilnAxisInfo ai = kiln_axis_get(L->axis, offs);
  int64_t base[KILN_GPU_MAX_RANK];
  for (int d = 0; d < own.rank; d++) {
    const KilnGpuDimMap *m = &own.dim[d];
    bool pow2 = m->size > 0 && (m->size & (m->size - 1)) == 0;
    base[d] = base_bits(m);
    if (m->n > 1 && (!pow2 || m->size < m->extent || base[d] < 0)) return g;
  }
  g.n = 0;
  for (int64_t j = 0; j < n_vals; j++) {
    int lj[KILN_GPU_MAX_RANK];
    kiln_gpu_own_local(&own, j, lj);
    for (int64_t k = 0; k < j && g.leader[j] == j; k++) {
      if (g.leader[k] != k) continue;
      int lk[KILN_GPU_MAX_RANK];
      kiln_gpu_own_local(&own, k, lk);
      if (!differ_within(&own, base, lj, lk, ai.ctr_bits)) continue;
      g.leader[j] = k;
      g.half[k] = g.half[k] && differ_within(&own, base, lj, lk, ai.pair_bits);
    }
    if (g.leader[j] == j) g.n++;
  }
  g.partner = rand_partner_lane(&own, base, ai.ctr_bits);
  return g;
}

/* The blocks of the thread's groups taken two at a time with its partner lane (g->partner):
 * the lane whose partner bit is 0 computes the first group's whole block, the other lane the
 * second's (the same counters, element for element), and the two trade all four words with
 * shfl.bfly (each lane may need the other half: the flipped index bit can pick the word).  One
 * block and four shuffles where each lane computed two (halves: 9.5 rounds each).  Leaves
 * done[k] set for the leaders it filled; an odd last group is left to the caller. */
static void rand_paired(Low *L, MlirValue seed, const Vals *O, const RandGroups *g,
                        MlirValue (*blk)[4], bool *done) {
  MlirValue bit = low_bin(L, "arith.andi", low_lane(L), low_i32(L, g->partner));
  MlirValue h = low_cmpi(L, "ne", bit, low_i32(L, 0));
  int64_t first = -1;
  for (int64_t j = 0; j < O->n; j++) {
    if (g->leader[j] != j) continue;
    if (first < 0) {
      first = j;
      continue;
    }
    int64_t a = first, b = j;
    first = -1;
    MlirValue ctr = select_i32(L, h, counter_of(L, O->v[b]), counter_of(L, O->v[a]));
    MlirValue mine[4];
    philox_block(L, seed, ctr, mine);
    for (int w = 0; w < 4; w++) {
      MlirValue other = low_shuffle(L, mine[w], "bfly", low_i32(L, g->partner), 0x1f);
      blk[a][w] = select_i32(L, h, other, mine[w]);
      blk[b][w] = select_i32(L, h, mine[w], other);
    }
    done[a] = done[b] = true;
  }
}

/* The Philox words of the thread's offsets O, one block per group of one counter (half a block
 * for a group within one half): each element picks its own word by its offset's low bits. */
static void rand_grouped(Low *L, MlirValue seed, const Vals *O, const RandGroups *g,
                         MlirValue *out) {
  MlirValue(*blk)[4] = malloc((size_t)O->n * sizeof *blk);
  bool *done = calloc((size_t)(O->n ? O->n : 1), 1);
  KILN_ASSERT(blk != NULL && done != NULL);
  if (g->partner) rand_paired(L, seed, O, g, blk, done);
  for (int64_t j = 0; j < O->n; j++) {
    int64_t k = g->leader[j];
    if (done[k]) {
      out[j] = pick4(L, O->v[j], blk[k]);
      continue;
    }
    if (k == j && g->half[j])
      philox_half(L, seed, counter_of(L, O->v[j]), bit_of(L, O->v[j], 1), blk[j]);
    else if (k == j)
      philox_block(L, seed, counter_of(L, O->v[j]), blk[j]);
    out[j] = g->half[k] ? select_i32(L, bit_of(L, O->v[j], 0), blk[k][1], blk[k][0])
                        : pick4(L, O->v[j], blk[k]);
  }
  free(blk);
  free(done);
}

/* The Philox words of the thread's offsets O, one block per run that shares one, or per group
 * of elements with one counter where that takes fewer blocks. */
static void rand_words(Low *L, MlirValue seed, MlirValue offs, const Vals *O, MlirValue *out) {
  RandRuns r = rand_runs(L, offs, O->n);
  RandGroups g = rand_groups(L, offs, O->n);
  /* A run takes one block (half of one costs 9.5 of its 10 rounds; an unaligned run one or
   * two), so groups win when there are fewer of them than runs. */
  bool grouped = g.n < O->n / r.v;
  if (grouped) rand_grouped(L, seed, O, &g, out);
  free(g.leader);
  free(g.half);
  if (grouped) return;
  for (int64_t j = 0; j < O->n; j += r.v) {
    MlirValue o0 = O->v[j], blk[4];
    if (r.one_block) { /* one counter: each element's word by its own offset */
      philox_block(L, seed, counter_of(L, o0), blk);
      for (int e = 0; e < r.v; e++) out[j + e] = pick4(L, O->v[j + e], blk);
      continue;
    }
    if (r.v > 1 && r.align == 1) {
      rand_run_unaligned(L, seed, o0, r.v, &out[j]);
      continue;
    }
    if (r.v == 2) { /* o0 even: bit 1 picks the half */
      philox_half(L, seed, counter_of(L, o0), bit_of(L, o0, 1), &out[j]);
      continue;
    }
    if (r.v == 1) { /* one word: bit 1 picks the half, bit 0 the word in it */
      MlirValue half[2];
      philox_half(L, seed, counter_of(L, o0), bit_of(L, o0, 1), half);
      out[j] = select_i32(L, bit_of(L, o0, 0), half[1], half[0]);
      continue;
    }
    philox_block(L, seed, counter_of(L, o0), blk); /* o0 % 4 == 0: the words in order */
    for (int e = 0; e < 4; e++) out[j + e] = blk[e];
  }
}

/* rand / randint (docs/internals.md): word (o & 3) of the Philox4x32-10 block with key
 * (seed, 0) and counter (o >> 2, 0, 0, 0); rand maps it to [0, 1). */
bool low_rand(Low *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0), offs = mlirOperationGetOperand(op, 1);
  Vals *S = low_get(L, mlirOperationGetOperand(op, 0));
  Vals *O = low_get(L, offs);
  Vals *out = low_vals(L, O->n);
  bool raw = !mlirTypeIsAFloat(kiln_ir_elem_type(mlirValueGetType(res))); /* randint */
  rand_words(L, S->v[0], offs, O, out->v);
  if (!raw)
    for (int64_t j = 0; j < O->n; j++) {
      MlirValue top = low_bin(L, "arith.shrui", out->v[j], low_i32(L, 8));
      MlirValue f = low_op1(L, "arith.uitofp", &top, 1, L->f32);
      out->v[j] = mulc(L, f, 5.9604644775390625e-08); /* 2^-24 */
    }
  low_set(L, res, out);
  return true;
}

/* ---------------------------------------------------------------- rand compared to a scalar */

/* The top 24 bits u = word >> 8 of a lowered rand element (rand = u 2^-24, low_rand's
 * mulf(uitofp(shrui(word, 8)), 2^-24)), or a null value when v is not that. */
static MlirValue rand_top_bits(MlirValue v) {
  MlirValue none = {NULL};
  const char *chain[3] = {"arith.mulf", "arith.uitofp", "arith.shrui"};
  for (int i = 0; i < 3; i++) {
    if (!mlirValueIsAOpResult(v)) return none;
    MlirOperation def = mlirOpResultGetOwner(v);
    if (!kiln_ir_op_is(def, chain[i])) return none;
    if (i == 2) return v;
    v = mlirOperationGetOperand(def, 0);
  }
  return none;
}

/* The value every element of X has, or a null value when they differ (a scalar or a splat). */
static MlirValue uniform_of(const Vals *X) {
  for (int64_t j = 1; j < X->n; j++)
    if (!mlirValueEqual(X->v[j], X->v[0])) return (MlirValue){NULL};
  return X->v[0];
}

/* select(c, a, b) of f32 scalars. */
static MlirValue select_f32(Low *L, MlirValue c, MlirValue a, MlirValue b) {
  MlirValue o[3] = {c, a, b};
  return low_op1(L, "arith.select", o, 3, L->f32);
}

/* `rand(seed, o) PRED p` with p the same f32 in every element (dropout's keep mask) as one
 * integer compare per element instead of four instructions (shift, convert, scale, compare):
 * rand is u 2^-24 with u = word >> 8 an integer in [0, 2^24), both exact in f32, so with
 * T = p 2^24 (exact: a power-of-two scale) r > p iff u >= floor(T) + 1, r >= p iff
 * u >= ceil(T), r < p iff u < ceil(T), r <= p iff u < floor(T) + 1.  The bound c is computed once
 * from p, clamped to [0, 2^24] (then every u compares as it should: c = 0 is always >=, 2^24
 * never), and a NaN p gives c = 2^24 for the ordered `>`/`>=` (never true) and the unordered
 * `<`/`<=` (always true: u < 2^24), 0 for the others.  So the result is exactly the f32
 * compare's.  Returns false (emitting nothing) when the op is not such a compare. */
bool low_rand_compare(Low *L, MlirOperation cmp) {
  /* cmpf predicates (arith): 2 ogt, 3 oge, 4 olt, 5 ole, 9 ugt, 10 uge, 11 ult, 12 ule */
  int64_t pred = kiln_gpu_int_attr(cmp, "predicate", -1);
  bool swap = false;
  MlirValue a = mlirOperationGetOperand(cmp, 0), b = mlirOperationGetOperand(cmp, 1);
  if (!mlirValueIsAOpResult(a) || kiln_ir_op_id(mlirOpResultGetOwner(a)) != KILN_OP_RAND) {
    if (!mlirValueIsAOpResult(b) || kiln_ir_op_id(mlirOpResultGetOwner(b)) != KILN_OP_RAND)
      return false;
    swap = true; /* p PRED r is r PRED' p */
  }
  static const int swapped[13] = {
      [2] = 4, [3] = 5, [4] = 2, [5] = 3, [9] = 11, [10] = 12, [11] = 9, [12] = 10};
  if (pred < 0 || pred > 12 || !swapped[pred]) return false;
  if (swap) pred = swapped[pred];
  Vals *R = low_get(L, swap ? b : a), *P = low_get(L, swap ? a : b);
  MlirValue p = uniform_of(P);
  if (!p.ptr || !mlirTypeIsAF32(mlirValueGetType(p))) return false;
  MlirValue *u = low_alloc(L, (size_t)R->n * sizeof *u);
  for (int64_t j = 0; j < R->n; j++)
    if (!(u[j] = rand_top_bits(R->v[j])).ptr) return false;
  bool greater = pred == 2 || pred == 3 || pred == 9 || pred == 10;
  bool floor_plus_one = pred == 2 || pred == 5 || pred == 9 || pred == 12; /* strict > or <= */
  bool ordered = pred <= 5;
  MlirValue t = mulc(L, p, 16777216.0);
  MlirValue c = floor_plus_one ? low_bin(L, "arith.addf", low_op1(L, "math.floor", &t, 1, L->f32),
                                         low_f32(L, 1.0))
                               : low_op1(L, "math.ceil", &t, 1, L->f32);
  MlirValue zero = low_f32(L, 0.0), top = low_f32(L, 16777216.0);
  c = select_f32(L, low_cmpf(L, "olt", c, zero), zero, c);
  c = select_f32(L, low_cmpf(L, "ogt", c, top), top, c);
  /* NaN p: the compare is `ordered` false or unordered true */
  MlirValue nan_bound = greater == ordered ? top : zero;
  c = select_f32(L, low_cmpf(L, "uno", p, p), nan_bound, c);
  MlirValue ci = low_op1(L, "arith.fptoui", &c, 1, L->i32);
  Vals *out = low_vals(L, R->n);
  for (int64_t j = 0; j < R->n; j++) out->v[j] = low_cmpi(L, greater ? "uge" : "ult", u[j], ci);
  low_set(L, mlirOperationGetResult(cmp, 0), out);
  return true;
}
