/* lower_wgmma.c - a dot on sm_90's warpgroup MMA: wgmma.mma_async reading both operands from
 * the pipeliner's shared ring through matrix descriptors (docs/gpu-lowering.md, "wgmma").
 *
 * How this works.  The layout pass gives a dot that the config asks wgmma for (kiln.wgmma) and
 * whose tile fits (layout_pass.c, wgmma_fits) the mma layout with every warp on its own 16 rows
 * (wpc [num_warps, 1]); that is wgmma's accumulator layout: warp w of warpgroup g holds rows
 * 64 g + 16 (w % 4) of each m64 instruction, register 4 j + c of n8 block j at row g8 + 8 (c / 2),
 * column 8 j + 2 t + (c % 2) (g8 = lane / 4, t = lane % 4), as mma.sync's c0..c3.  The
 * pipeliner stages both operands in wgmma buffers (KilnGpuShared.wgmma): the swizzle of
 * lower_dot.c, which for staged rows of 32, 64 and 128 bytes is exactly the 32-, 64- and
 * 128-byte swizzle modes of the descriptors (16-byte chunk c of row r at c ^ (address bits 7..9)
 * on addresses aligned to 1024); rows wider than 128 bytes (an m- or n-major operand of 128 or
 * 256 elements) are cut into panels of 64 elements, each a whole 128-byte swizzled tile.  So:
 *   - k-major operand (A staged as it is: rows m; B staged transposed: rows n), staged rows of
 *     K = 16, 32 or 64 elements: the descriptor's rows are 8-row groups SBO = 8 x row bytes
 *     apart, the k16 step kk starts 32 kk bytes into the row (the hardware swizzles the address
 *     it forms), LBO unused;
 *   - m- or n-major operand (A staged transposed: rows k; B as it is: rows k), panels of 64
 *     elements: 128-byte swizzle, SBO = 1024 (8 k rows), LBO = one panel (K x 128 bytes) to the
 *     next 64 columns, the k16 step kk 2048 bytes further, imm-trans 1.
 * local_load of a wgmma buffer yields one value, the slot's first byte; the dot then runs
 *   wgmma.fence (the accumulator tied through it), for each k16 step and each m64 row block of
 *   the warpgroup one wgmma.mma_async m64nNk16 (N the tile's columns) on that block's registers,
 *   wgmma.commit_group and wgmma.wait_group 0 (the accumulator tied through it, so nothing reads
 *   a register before the wait).  An accumulator of constant zeros is passed undefined and the
 *   first k16 step's MMAs have scale-d false (D = A B; wgmma.c), so no register is zeroed.
 * tf32 (an f32 dot with the tf32 flag): wgmma.mma_async m64nNk8 .tf32, both operands K-major
 * in shared memory (the PTX ISA has no transpose for tf32, and no A from registers here: the
 * layout pass marks only a dot whose A and B loads are contiguous along k, the pipeliner drops
 * the mark unless it stages both, and any other tf32 dot stays on mma.sync).  The f32 staging
 * is lower_dot.c's b16-view swizzle, which on rows of 32, 64 and 128 bytes (K = 8, 16, 32) is
 * again the descriptors' 32-, 64- and 128-byte swizzle; a k8 step is 32 bytes of the row, as a
 * k16 step of f16.  The tensor core reads the f32 bits as tf32: it ignores the 13 low mantissa
 * bits (truncation), where mma.sync's path rounds each register with cvt.rna first, so the two
 * paths may differ by an ulp of tf32 per operand (the emulator truncates as the hardware does).
 * The copies' cp.async writes are generic-proxy writes that wgmma reads through the async
 * proxy: each thread fences (fence.proxy.async.shared::cta) after its cp.async.wait_group and
 * before the barrier that publishes the slot (lower_local.c, low_async_wait). */
#include "lower.h"

#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <stdio.h>
#include <string.h>

/* Elements of a wgmma panel: one 128-byte row of 16-bit elements. */
#define PANEL 64

MlirValue low_swizzle_panel(Low *L, MlirValue row, MlirValue col, int64_t rows, int64_t cols) {
  if (cols <= PANEL) return low_swizzle(L, row, col, cols);
  MlirValue panel = low_bin(L, "arith.shrui", col, low_i32(L, 6));
  MlirValue in = low_bin(L, "arith.andi", col, low_i32(L, PANEL - 1));
  MlirValue at = low_bin(L, "arith.muli", panel, low_i32(L, rows * PANEL));
  return low_bin(L, "arith.addi", at, low_swizzle(L, row, in, PANEL));
}

/* The operand a wgmma dot reads from shared memory: its buffer (as staged), the slot's first
 * byte, and whether the dot reads the staged tile's transpose (local_load {transpose}: K^T of
 * S = Q K^T, K staged as it is). */
typedef struct Operand {
  KilnGpuBuffer bf;
  MlirValue base;
  bool view;
} Operand;

static bool operand_of(Low *L, MlirValue v, Operand *o) {
  if (mlirValueIsABlockArgument(v)) return false;
  MlirOperation def = mlirOpResultGetOwner(v);
  if (kiln_ir_op_id(def) != KILN_OP_LOCAL_LOAD) return false;
  if (!kiln_gpu_buffer_parse(mlirValueGetType(mlirOperationGetOperand(def, 0)), &o->bf) ||
      !o->bf.enc.wgmma)
    return false;
  Vals *b = low_get(L, v);
  if (b->n != 1) return false;
  o->base = b->v[0];
  o->view = !mlirAttributeIsNull(
      mlirOperationGetAttributeByName(def, mlirStringRefCreateFromCString("transpose")));
  return true;
}

/* A in registers (wgmma's RS form): the dot_op fragments of the accumulator's layout, four
 * 32-bit registers per m64 block row of a warp and k16 step, as mma.sync's A. */
static bool a_in_registers(Low *L, MlirValue a, int64_t reps, int64_t kb) {
  KilnGpuLayout al = kiln_gpu_layout_of_type(mlirValueGetType(a));
  return al.kind == KILN_GPU_LAYOUT_DOT_OP && al.op_idx == 0 && low_get(L, a)->n == reps * kb * 4;
}

/* Whether the dot's operands are f32 (a tf32 dot: the layout pass takes no other f32 dot to
 * tensor cores). */
static bool is_tf32(MlirOperation op) {
  return mlirTypeIsAF32(kiln_ir_elem_type(mlirValueGetType(mlirOperationGetOperand(op, 0))));
}

bool low_dot_is_wgmma(Low *L, MlirOperation op) {
  if (mlirAttributeIsNull(mlirOperationGetAttributeByName(
          op, mlirStringRefCreateFromCString(KILN_GPU_WGMMA_DOT_ATTR))))
    return false;
  Operand a, b;
  if (!operand_of(L, mlirOperationGetOperand(op, 1), &b)) return false;
  if (operand_of(L, mlirOperationGetOperand(op, 0), &a)) return true;
  if (is_tf32(op)) return false; /* tf32: no RS form */
  MlirType ct = mlirValueGetType(mlirOperationGetResult(op, 0));
  KilnGpuLayout cl = kiln_gpu_layout_of_type(ct);
  int64_t K = kiln_ir_dim(mlirValueGetType(mlirOperationGetOperand(op, 0)), 1);
  return cl.kind == KILN_GPU_LAYOUT_MMA && cl.wpc[1] == 1 &&
         a_in_registers(L, mlirOperationGetOperand(op, 0), kiln_ir_dim(ct, 0) / (16 * cl.wpc[0]),
                        K / 16);
}

/* The shared address of ptr as the descriptor's 14-bit start field wants it: bits 4..17. */
static MlirValue start_field(Low *L, MlirValue ptr) {
  MlirValue addr = low_op1(L, "llvm.ptrtoint", &ptr, 1, L->i32);
  addr = low_bin(L, "arith.shrui", addr, low_i32(L, 4));
  return low_bin(L, "arith.andi", addr, low_i32(L, 0x3FFF));
}

/* A descriptor: start (an i32 value, already the field), lbo and sbo in bytes, swizzle mode. */
static MlirValue descriptor(Low *L, MlirValue start, int64_t lbo, int64_t sbo, int mode) {
  MlirValue lo = low_bin(L, "arith.ori", start, low_i32(L, (lbo >> 4) << 16));
  uint64_t hi = (uint64_t)(sbo >> 4) | (uint64_t)mode << 30;
  MlirValue lo64 = low_op1(L, "arith.extui", &lo, 1, L->i64);
  MlirAttribute hv = mlirIntegerAttrGet(L->i64, (int64_t)(hi << 32));
  return low_bin(L, "arith.ori", lo64, low_const(L, L->i64, hv));
}

/* The descriptor mode of a k-major staging with rows of `bytes`: 32 -> 3, 64 -> 2, 128 -> 1. */
static int kmajor_mode(int64_t bytes) { return bytes == 32 ? 3 : bytes == 64 ? 2 : 1; }

/* Operand x's descriptor for the m64 (A) or whole-width (B) block whose first row (A: m) or
 * column is x0 (a value, or null for 0) at k step kk (k16, or k8 for tf32).  kmajor: rows of
 * the staging are m or n (K elements a row); otherwise rows are k and panels hold 64 m or n
 * each. */
static MlirValue operand_desc(Low *L, const Operand *o, bool kmajor, int64_t k, MlirValue x0,
                              int64_t kk) {
  MlirValue at;
  int64_t lbo, sbo;
  int mode;
  if (kmajor) { /* a step kk is 32 bytes: k16 of 16-bit elements, k8 of tf32 */
    int64_t row = k * kiln_ir_elem_bytes(o->bf.elem);
    at = low_i32(L, 32 * kk);
    if (!mlirValueIsNull(x0))
      at = low_bin(L, "arith.addi", at, low_bin(L, "arith.muli", x0, low_i32(L, row)));
    lbo = 16, sbo = 8 * row, mode = kmajor_mode(row);
  } else {
    at = low_i32(L, 2048 * kk);
    if (!mlirValueIsNull(x0)) /* x0 is a multiple of 64: its panel */
      at = low_bin(L, "arith.addi", at,
                   low_bin(L, "arith.muli", low_bin(L, "arith.shrui", x0, low_i32(L, 6)),
                           low_i32(L, k * 128)));
    lbo = k * 128, sbo = 1024, mode = 1;
  }
  return descriptor(L, start_field(L, low_gep(L, o->base, at, L->i8)), lbo, sbo, mode);
}

static MlirType struct_of_f32(Low *L, int64_t n) {
  MlirType *f = low_alloc(L, (size_t)n * sizeof *f);
  for (int64_t i = 0; i < n; i++) f[i] = L->f32;
  return mlirLLVMStructTypeLiteralGet(L->ctx, n, f, false);
}

/* The registers v[idx[0..n)] through the side-effect asm `text` with every one tied: they
 * come back as its results (wgmma.fence, wgmma.wait_group).  f32 registers ("=f") and, for
 * the fence before an RS wgmma, A's 32-bit ones ("=r"). */
static void tie_through(Low *L, const char *text, MlirValue *v, const int64_t *idx, int64_t n) {
  MlirValue *ops = low_alloc(L, (size_t)n * sizeof *ops);
  MlirType *types = low_alloc(L, (size_t)n * sizeof *types);
  size_t cap = (size_t)n * 10 + 8, at = 0;
  char *cons = low_alloc(L, cap);
  for (int64_t i = 0; i < n; i++) {
    ops[i] = v[idx[i]];
    types[i] = mlirValueGetType(ops[i]);
    at += (size_t)snprintf(cons + at, cap - at, "%s=%s", i ? "," : "",
                           mlirTypeIsAF32(types[i]) ? "f" : "r");
  }
  for (int64_t i = 0; i < n; i++)
    at += (size_t)snprintf(cons + at, cap - at, ",%lld", (long long)i);
  MlirType st = mlirLLVMStructTypeLiteralGet(L->ctx, n, types, false);
  MlirValue r = mlirOperationGetResult(low_asm_effects(L, text, cons, ops, (size_t)n, &st, 1), 0);
  for (int64_t i = 0; i < n; i++) {
    MlirNamedAttribute a = kiln_ir_named(L->ctx, "position", mlirDenseI64ArrayGet(L->ctx, 1, &i));
    v[idx[i]] =
        mlirOperationGetResult(low_op(L, "llvm.extractvalue", &r, 1, &types[i], 1, &a, 1), 0);
  }
}

/* The 32-bit register of A fragment value x (an i32 already, or two 16-bit floats). */
static MlirValue as_b32(Low *L, MlirValue x) {
  MlirType t = mlirValueGetType(x);
  if (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 32) return x;
  return low_op1(L, "llvm.bitcast", &x, 1, L->i32);
}

/* The registers one m64 block's wgmma takes beside its accumulators: A's descriptor (SS) or
 * A's four fragment registers (RS), then B's descriptor. */
typedef struct Mma {
  bool rs;
  const char *text, *cons;
  const char *text_zero; /* the text with scale-d false: D = A B (a zero accumulator's first) */
  int64_t R, nextra;
  MlirType st;
} Mma;

static bool mma_text(Low *L, Mma *m, int64_t N, MlirType elem, bool a_k, bool b_k) {
  char *text = low_alloc(L, 2048);
  size_t cap = (size_t)m->R * 10 + 16;
  char *cons = low_alloc(L, cap);
  bool bf16 = mlirTypeIsABF16(elem);
  int ok = mlirTypeIsAF32(elem) ? kiln_gpu_wgmma_tf32_ptx(text, 2048, (int)N)
           : m->rs              ? kiln_gpu_wgmma_rs_ptx(text, 2048, (int)N, bf16, !b_k)
                                : kiln_gpu_wgmma_ptx(text, 2048, (int)N, bf16, !a_k, !b_k);
  int okc = m->rs ? kiln_gpu_wgmma_rs_constraints(cons, cap, (int)m->R)
                  : kiln_gpu_wgmma_constraints(cons, cap, (int)m->R, true);
  if (ok < 0 || okc < 0) {
    low_error(L, "GPU lowering: wgmma m64n%lld does not fit its text", (long long)N);
    return false;
  }
  char *text_zero = low_alloc(L, 2048);
  memcpy(text_zero, text, (size_t)ok + 1);
  KILN_ASSERT(kiln_gpu_wgmma_set_zero_d(text_zero));
  m->text = text, m->cons = cons, m->text_zero = text_zero;
  m->nextra = m->rs ? 5 : 2;
  m->st = struct_of_f32(L, m->R);
  return true;
}

bool low_dot_wgmma(Low *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0), acc = mlirOperationGetOperand(op, 2);
  MlirType at = mlirValueGetType(mlirOperationGetOperand(op, 0)), ct = mlirValueGetType(res);
  KilnGpuLayout cl = kiln_gpu_layout_of_type(ct);
  MlirType elem = kiln_ir_elem_type(at);
  bool tf32 = mlirTypeIsAF32(elem);
  int64_t M = kiln_ir_dim(ct, 0), N = kiln_ir_dim(ct, 1), K = kiln_ir_dim(at, 1);
  int64_t reps = M / (16 * cl.wpc[0]), nb = N / 8, kb = K / (tf32 ? 8 : 16);
  Operand A = {0}, B;
  Mma m = {.R = N / 2};
  if (!operand_of(L, mlirOperationGetOperand(op, 1), &B)) {
    low_error(L, "GPU lowering: a wgmma dot needs B from a wgmma buffer");
    return false;
  }
  m.rs = !operand_of(L, mlirOperationGetOperand(op, 0), &A);
  Vals *Areg = m.rs ? low_get(L, mlirOperationGetOperand(op, 0)) : NULL;
  if (m.rs && !a_in_registers(L, mlirOperationGetOperand(op, 0), reps, kb)) {
    low_error(L, "GPU lowering: a wgmma dot's A is neither a wgmma buffer nor fragments");
    return false;
  }
  KilnGpuOwn co = kiln_gpu_own_of_type(ct);
  Vals *C = low_get(L, acc);
  if (cl.wpc[1] != 1 || C->n != co.count || co.count != reps * nb * 4) {
    low_error(L, "GPU lowering: a wgmma dot's accumulator is not wgmma's layout");
    return false;
  }
  /* A k-major when staged as it is (rows m); B k-major when its staged rows are n: staged
   * transposed, or staged as it is and read through a transpose (K^T) */
  bool a_k = !A.bf.enc.trans, b_k = B.bf.enc.trans != B.view;
  if (tf32 && (m.rs || !a_k || !b_k)) {
    low_error(L, "GPU lowering: a tf32 wgmma dot needs A and B K-major in wgmma buffers");
    return false;
  }
  if (!mma_text(L, &m, N, elem, a_k, b_k)) return false;
  L->wgmma = true;
  /* the accumulator, then in the RS form A's registers: v[idx[i]] */
  int64_t na = m.rs ? Areg->n : 0, nv = co.count + na;
  Vals *out = low_vals(L, nv);
  int64_t *idx = low_alloc(L, (size_t)nv * sizeof *idx);
  /* An accumulator of zeros (a dot that starts one: S = Q K^T in every KV block) is not
   * materialized: its registers go in undefined and each m64 block's first MMA has scale-d
   * false (D = A B), where moving 0 into each register took an instruction. */
  bool zero = true;
  for (int64_t j = 0; j < co.count && zero; j++) zero = low_is_zero(C->v[j]);
  MlirValue undef = zero ? low_op1(L, "llvm.mlir.undef", NULL, 0, L->f32) : (MlirValue){NULL};
  for (int64_t j = 0; j < co.count; j++) out->v[j] = zero ? undef : C->v[j];
  for (int64_t j = 0; j < na; j++) out->v[co.count + j] = as_b32(L, Areg->v[j]);
  /* idx[(r nb + j) 4 + c]: the list position of register 4 j + c of m64 block r */
  for (int64_t r = 0; r < reps; r++)
    for (int64_t j = 0; j < nb; j++)
      for (int c = 0; c < 4; c++) {
        int local[2] = {(int)(2 * r + (c >> 1)), (int)(2 * j + (c & 1))};
        idx[(r * nb + j) * 4 + c] = kiln_gpu_own_index(&co, local);
      }
  for (int64_t j = 0; j < na; j++) idx[co.count + j] = co.count + j;
  MlirValue g64 = low_bin(L, "arith.muli", low_bin(L, "arith.shrui", low_warp(L), low_i32(L, 2)),
                          low_i32(L, 64));
  /* the fence orders every register write the MMAs read before them: the accumulator's, and in
   * the RS form A's (so that nothing computing A sinks below it) */
  tie_through(L, KILN_GPU_WGMMA_FENCE_PTX, out->v, idx, nv);
  MlirValue *ops = low_alloc(L, (size_t)(m.R + m.nextra) * sizeof *ops);
  for (int64_t kk = 0; kk < kb; kk++) {
    MlirValue db = operand_desc(L, &B, b_k, K, (MlirValue){NULL}, kk);
    for (int64_t r = 0; r < reps; r++) {
      const int64_t *ri = idx + r * nb * 4;
      for (int64_t i = 0; i < m.R; i++) ops[i] = out->v[ri[i]];
      if (m.rs) {
        for (int q = 0; q < 4; q++) ops[m.R + q] = out->v[co.count + (r * kb + kk) * 4 + q];
      } else {
        MlirValue m0 = low_bin(L, "arith.addi", g64, low_i32(L, 16 * cl.wpc[0] * r));
        ops[m.R] = operand_desc(L, &A, a_k, K, m0, kk);
      }
      ops[m.R + m.nextra - 1] = db;
      const char *text = zero && kk == 0 ? m.text_zero : m.text;
      MlirValue d = mlirOperationGetResult(
          low_asm_effects(L, text, m.cons, ops, (size_t)(m.R + m.nextra), &m.st, 1), 0);
      for (int64_t i = 0; i < m.R; i++) {
        MlirNamedAttribute a =
            kiln_ir_named(L->ctx, "position", mlirDenseI64ArrayGet(L->ctx, 1, &i));
        out->v[ri[i]] =
            mlirOperationGetResult(low_op(L, "llvm.extractvalue", &d, 1, &L->f32, 1, &a, 1), 0);
      }
    }
  }
  low_asm_effects(L, KILN_GPU_WGMMA_COMMIT_PTX, "", NULL, 0, NULL, 0);
  bool in_flight = !mlirAttributeIsNull(mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString(KILN_GPU_WGMMA_PENDING_ATTR)));
  tie_through(L, in_flight ? KILN_GPU_WGMMA_WAIT_PTX "1;" : KILN_GPU_WGMMA_WAIT_PTX "0;", out->v,
              idx, co.count);
  Vals *result = low_vals(L, co.count);
  for (int64_t j = 0; j < co.count; j++) result->v[j] = out->v[j];
  low_set(L, res, result);
  return true;
}

bool low_wgmma_wait(Low *L, MlirOperation op) {
  MlirValue x = mlirOperationGetOperand(op, 0);
  Vals *in = low_get(L, x);
  int64_t pending = kiln_gpu_int_attr(op, "pending", 0);
  if (pending < 0 || pending > 1) {
    low_error(L, "GPU lowering: kiln.wgmma_wait with pending %lld (0 or 1)", (long long)pending);
    return false;
  }
  Vals *out = low_vals(L, in->n);
  int64_t *idx = low_alloc(L, (size_t)in->n * sizeof *idx);
  for (int64_t i = 0; i < in->n; i++) out->v[i] = in->v[i], idx[i] = i;
  tie_through(L, pending ? KILN_GPU_WGMMA_WAIT_PTX "1;" : KILN_GPU_WGMMA_WAIT_PTX "0;", out->v, idx,
              in->n);
  low_set(L, mlirOperationGetResult(op, 0), out);
  return true;
}
