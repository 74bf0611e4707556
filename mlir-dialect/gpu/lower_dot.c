/* lower_dot.c - dot on tensor cores: shared staging, ldmatrix, mma.sync.m16n8k16.
 *
 * How this works.  The layout pass gives a tensor-core dot an mma result and dot_op{0|1}
 * operands, each made by a convert_layout from a blocked tile.  Such a convert is lowered here:
 *   1. every thread writes the elements it owns into a shared-memory tile (row-major, rows of
 *      A are m, rows of B are k) whose 16-byte chunks are swizzled: chunk c of row r goes to
 *      c ^ ((r / perPhase) % maxPhase), perPhase = max(1, 128 / row bytes), maxPhase =
 *      min(8, chunks per row).  ldmatrix reads 8 rows of one logical chunk at a time; the
 *      swizzle spreads them over all 32 banks (row pitch a multiple of 128 bytes would put them
 *      all in the same 4 banks);
 *   2. a barrier, then each warp reads its fragments with ldmatrix: for A, per 16x16 block,
 *      .x4 with lane l addressing row (l & 7) + 8 ((l >> 3) & 1), column 8 (l >> 4) of the block,
 *      which yields a0..a3 of the PTX ISA's m16n8k16 A fragment (register r holds
 *      A[g + 8 (r & 1)][2t + 8 (r >> 1) .. +1]); for B, per 16 k rows and two 8-column blocks,
 *      .x4.trans with lane l addressing k row (l & 7) + 8 ((l >> 3) & 1) of column block
 *      (l >> 4), which yields b0, b1 of both blocks (b_r = B[2t + 8r .. +1][g]); a lone last
 *      block uses .x2.trans.
 * The operand's value is the list of those 32-bit registers: A: [(mi * kb + ki) * 4 + r],
 * B: [(ni * kb + ki) * 2 + r] for the warp's row blocks mi, column blocks ni and k blocks ki.
 * The dot itself is then one mma.sync per (mi, ni, ki) on the accumulator's four floats per
 * 16x8 block (c0..c3 = rows g, g, g + 8, g + 8, columns 2t, 2t + 1, 2t, 2t + 1; see layout.c).
 * Warp w has row index w % WM and column index w / WM; its blocks repeat every 16 WM rows and
 * 8 WN columns.
 *
 * i8 (mma.sync.m16n8k32.row.col.s32.s8.s8.s32, i32 accumulators, wrapping).  Its fragments are
 * the f16 ones in bytes: A register r holds A[g + 8 (r & 1)][4t + 16 (r >> 1) .. +3], B register
 * r holds B[4t + 16 r .. +3][g] (four k in one register, kWidth 4), C/D as above.  Seen as 16-bit
 * pairs of bytes, a 16 x 32 A block with k contiguous is the 16 x 16 b16 block of the f16 path,
 * and B with k contiguous (n rows of 32 bytes) is the f16 B^T read without .trans: the same
 * ldmatrix reads give the s8 fragments.  ldmatrix moves 16-bit elements only, so it cannot
 * transpose bytes: both operands are staged with k contiguous, A as it is (rows m) and B
 * transposed (rows n), each thread storing its bytes one by one at 2 swz(row, k / 2) + (k & 1)
 * with the swizzle of the b16 view (K / 2 columns).  The shapes need K a multiple of 32.
 *
 * tf32 (an f32 dot with the tf32 flag: mma.sync.m16n8k8.row.col.f32.tf32.tf32.f32, one tf32 in
 * each 32-bit register).  A register r holds A[g + 8 (r & 1)][t + 4 (r >> 1)], B register r
 * holds B[t + 4 r][g].  Seen as 16-bit halves, a 16 x 8 f32 A block with k contiguous is the
 * 16 x 16 b16 block of the f16 path: ldmatrix hands lane l of each 8 x 8 b16 matrix row l / 4,
 * b16 columns 2 (l % 4) .. +1, which is f32 column l % 4, so the four matrices of the .x4 read
 * are a0..a3; likewise B with k contiguous (n rows) read as the f16 B^T gives b0, b1.  So both
 * operands are staged with k contiguous, A as it is and B transposed (as i8), each f32 at the
 * b16 view's swizzled place (low_swizzle_f32), and the registers ldmatrix yields are rounded
 * by cvt.rna.tf32.f32 before the mma (the tensor core would truncate: round to nearest, ties
 * away, is what the cpu target computes too).  The shapes need K a multiple of 8. */
#include "lower.h"

#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <string.h>

/* Element offset of (row, col) in a swizzled shared tile with `cols` columns of 16-bit
 * elements; row and col are i32 values, the result an i32 value. */
MlirValue low_swizzle(Low *L, MlirValue row, MlirValue col, int64_t cols) {
  int64_t chunks = cols / 8;
  int64_t per_phase = chunks >= 8 ? 1 : 8 / chunks;
  int64_t max_phase = chunks < 8 ? chunks : 8;
  MlirValue lin = low_bin(L, "arith.muli", row, low_i32(L, cols));
  if (chunks < 1) return low_bin(L, "arith.addi", lin, col);
  MlirValue phase = low_bin(L, "arith.divui", row, low_i32(L, per_phase));
  phase = low_bin(L, "arith.remui", phase, low_i32(L, max_phase));
  MlirValue chunk = low_bin(L, "arith.shrui", col, low_i32(L, 3));
  chunk = low_bin(L, "arith.xori", chunk, phase);
  MlirValue in = low_bin(L, "arith.andi", col, low_i32(L, 7));
  MlirValue off = low_bin(L, "arith.addi", low_bin(L, "arith.shli", chunk, low_i32(L, 3)), in);
  return low_bin(L, "arith.addi", lin, off);
}

static MlirValue struct_get_as(Low *L, MlirValue s, int64_t i, MlirType t) {
  MlirNamedAttribute a = kiln_ir_named(L->ctx, "position", mlirDenseI64ArrayGet(L->ctx, 1, &i));
  return mlirOperationGetResult(low_op(L, "llvm.extractvalue", &s, 1, &t, 1, &a, 1), 0);
}

static bool is_i8(MlirType et) {
  return mlirTypeIsAInteger(et) && mlirIntegerTypeGetWidth(et) == 8;
}

/* f32 element offset of (row, col) in a swizzled tile of `cols` f32 columns: the b16 view's
 * swizzle (2 cols halves a row) of its first half, halved.  A 16-byte chunk holds 4 f32 and
 * never splits one. */
MlirValue low_swizzle_f32(Low *L, MlirValue row, MlirValue col, int64_t cols) {
  MlirValue half = low_swizzle(L, row, low_bin(L, "arith.shli", col, low_i32(L, 1)), 2 * cols);
  return low_bin(L, "arith.shrui", half, low_i32(L, 1));
}

static MlirType struct_of(Low *L, MlirType t, int n) {
  MlirType f[4] = {t, t, t, t};
  return mlirLLVMStructTypeLiteralGet(L->ctx, n, f, false);
}

/* ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16 at p; out[0..num-1] get the registers. */
static void ldmatrix(Low *L, MlirValue p, int num, bool trans, MlirValue *out) {
  MlirNamedAttribute a[2] = {
      kiln_ir_named(L->ctx, "num", kiln_ir_attr_i32(L->ctx, num)),
      kiln_ir_named(
          L->ctx, "layout",
          kiln_gpu_parse_attr(L->ctx, trans ? "#nvvm.mma_layout<col>" : "#nvvm.mma_layout<row>")),
  };
  MlirType rt = num == 1 ? L->i32 : struct_of(L, L->i32, num);
  MlirValue r = mlirOperationGetResult(low_op(L, "nvvm.ldmatrix", &p, 1, &rt, 1, a, 2), 0);
  for (int i = 0; i < num; i++) out[i] = num == 1 ? r : struct_get_as(L, r, i, L->i32);
}

/* The warp's row (d = 0) or column (d = 1) index in the mma layout's warp grid. */
/* B's fragments ni and, with x4, ni + 1 at k block ki (of kb) by one ldmatrix at p: two
 * registers each, fragment-major in out. */
static void load_b_fragments(Low *L, MlirValue p, bool x4, bool trans, int64_t ni, int64_t ki,
                             int64_t kb, Vals *out) {
  MlirValue r[4];
  ldmatrix(L, p, x4 ? 4 : 2, trans, r);
  for (int64_t j = 0; j < (x4 ? 2 : 1); j++) {
    out->v[((ni + j) * kb + ki) * 2] = r[2 * j];
    out->v[((ni + j) * kb + ki) * 2 + 1] = r[2 * j + 1];
  }
}

static MlirValue warp_index(Low *L, const KilnGpuLayout *l, int d) {
  int wm = l->wpc[0], wn = l->wpc[1];
  MlirValue w = low_warp(L);
  if (d == 0) return low_bin(L, "arith.andi", w, low_i32(L, wm - 1));
  int shift = 0;
  while ((1 << shift) < wm) shift++;
  return low_bin(L, "arith.andi", low_bin(L, "arith.shrui", w, low_i32(L, shift)),
                 low_i32(L, wn - 1));
}

/* Byte offset of the staging tile of operand op_idx: A first, B after it (so A's ldmatrix reads
 * and B's writes never overlap). */
static int64_t operand_offset(MlirOperation cvt, int op_idx, int64_t *a_bytes) {
  *a_bytes = 0;
  MlirValue res = mlirOperationGetResult(cvt, 0);
  for (MlirOpOperand u = mlirValueGetFirstUse(res); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (kiln_ir_op_id(user) == KILN_OP_DOT) {
      MlirType at = mlirValueGetType(mlirOperationGetOperand(user, 0));
      *a_bytes =
          kiln_ir_dim(at, 0) * kiln_ir_dim(at, 1) * kiln_ir_elem_bytes(kiln_ir_elem_type(at));
      break;
    }
  }
  return op_idx == 0 ? 0 : (*a_bytes + 127) / 128 * 128;
}

/* Reads the fragments of a staged, swizzled operand tile at `base` (rows x cols) into out. */
void low_dot_fragments(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t rows, int64_t cols,
                       Vals *out) {
  MlirType f16 = mlirF16TypeGet(L->ctx);
  MlirValue lane = low_lane(L);
  MlirValue r8 = low_bin(L, "arith.andi", lane, low_i32(L, 7));
  MlirValue half =
      low_bin(L, "arith.andi", low_bin(L, "arith.shrui", lane, low_i32(L, 3)), low_i32(L, 1));
  MlirValue quad = low_bin(L, "arith.shrui", lane, low_i32(L, 4));
  /* Row of the block this lane addresses, inside the block: (l & 7) + 8 ((l >> 3) & 1). */
  MlirValue in_row = low_bin(L, "arith.addi", r8, low_bin(L, "arith.shli", half, low_i32(L, 3)));
  MlirValue col8 = low_bin(L, "arith.shli", quad, low_i32(L, 3));
  if (dl->op_idx == 0) {
    int wm = dl->wpc[0];
    int64_t rm = rows / (16 * wm), kb = cols / 16;
    MlirValue wrow = low_bin(L, "arith.muli", warp_index(L, dl, 0), low_i32(L, 16));
    MlirValue lrow = low_bin(L, "arith.addi", wrow, in_row);
    for (int64_t mi = 0; mi < rm; mi++) {
      MlirValue row = low_bin(L, "arith.addi", lrow, low_i32(L, 16 * wm * mi));
      for (int64_t ki = 0; ki < kb; ki++) {
        MlirValue col = low_bin(L, "arith.addi", col8, low_i32(L, 16 * ki));
        MlirValue p = low_gep(L, base, low_swizzle(L, row, col, cols), f16);
        ldmatrix(L, p, 4, false, &out->v[(mi * kb + ki) * 4]);
      }
    }
    return;
  }
  int wn = dl->wpc[1];
  int64_t rn = cols / (8 * wn), kb = rows / 16;
  MlirValue wcol = low_bin(L, "arith.muli", warp_index(L, dl, 1), low_i32(L, 8));
  /* x4: lanes 16..31 address the next column block (8 WN columns further). */
  MlirValue next = low_bin(L, "arith.muli", quad, low_i32(L, 8 * wn));
  MlirValue lcol4 = low_bin(L, "arith.addi", wcol, next);
  for (int64_t ki = 0; ki < kb; ki++) {
    MlirValue row = low_bin(L, "arith.addi", in_row, low_i32(L, 16 * ki));
    for (int64_t ni = 0; ni < rn; ni += 2) {
      bool x4 = ni + 1 < rn;
      MlirValue col = low_bin(L, "arith.addi", x4 ? lcol4 : wcol, low_i32(L, 8 * wn * ni));
      MlirValue p = low_gep(L, base, low_swizzle(L, row, col, cols), f16);
      load_b_fragments(L, p, x4, true, ni, ki, kb, out);
    }
  }
}

/* The f32 that v (an f16 or bf16 scalar) was rounded from by arith.truncf, or a null value. */
static MlirValue rounded_from_f32(MlirValue v) {
  if (!mlirValueIsAOpResult(v)) return (MlirValue){NULL};
  MlirOperation def = mlirOpResultGetOwner(v);
  if (!kiln_ir_op_is(def, "arith.truncf")) return (MlirValue){NULL};
  MlirValue x = mlirOperationGetOperand(def, 0);
  return mlirTypeIsAF32(mlirValueGetType(x)) ? x : (MlirValue){NULL};
}

/* Two 16-bit values as one 32-bit register, lo in bits 0..15 (the lower column: how mma.sync
 * and ldmatrix pack a pair).  Two f32 rounded to f16 (bf16), as P and dS are, take one
 * cvt.rn.f16x2.f32 (bf16x2) from the f32 values instead of two cvt and a mov; as inline PTX,
 * which also keeps LLVM from moving a select that feeds the rounding (dropout's
 * where(keep, p, 0)) past it into integer selects on the halves. */
static MlirValue pack_pair(Low *L, MlirValue lo, MlirValue hi) {
  MlirValue flo = rounded_from_f32(lo), fhi = rounded_from_f32(hi);
  MlirType et = mlirValueGetType(lo);
  if (flo.ptr && fhi.ptr && (mlirTypeIsAF16(et) || mlirTypeIsABF16(et))) {
    MlirValue o[2] = {fhi, flo};
    const char *text = mlirTypeIsAF16(et) ? KILN_GPU_CVT_F16X2_PTX " $0, $1, $2;"
                                          : KILN_GPU_CVT_BF16X2_PTX " $0, $1, $2;";
    return low_asm(L, text, "=r,f,f", o, 2, L->i32);
  }
  MlirType i16 = mlirIntegerTypeGet(L->ctx, 16);
  MlirValue l16 = low_op1(L, "arith.bitcast", &lo, 1, i16),
            h16 = low_op1(L, "arith.bitcast", &hi, 1, i16);
  MlirValue l32 = low_op1(L, "arith.extui", &l16, 1, L->i32),
            h32 = low_op1(L, "arith.extui", &h16, 1, L->i32);
  return low_bin(L, "arith.ori", l32, low_bin(L, "arith.shli", h32, low_i32(L, 16)));
}

/* Whether a convert from `sl` to the A operand `dl` can stay in registers: the source is the
 * accumulator layout of warps split along rows only, with the same warps.  Then the m16n8
 * C fragments of column blocks 2 ki and 2 ki + 1 are, pair by pair, the m16n8k16 A fragment of
 * k block ki: a0 = (c0, c1) of block 2 ki (row g, columns 2t, 2t + 1), a1 = (c2, c3) of it (row
 * g + 8), a2, a3 the same of block 2 ki + 1 (columns 8 + 2t, 8 + 2t + 1). */
static bool a_in_registers(const KilnGpuLayout *sl, const KilnGpuLayout *dl) {
  return sl->kind == KILN_GPU_LAYOUT_MMA && dl->op_idx == 0 && dl->k_width == 2 &&
         sl->wpc[1] == 1 && dl->wpc[1] == 1 && sl->wpc[0] == dl->wpc[0];
}

static void a_from_accumulator(Low *L, MlirType st, Vals *X, Vals *out) {
  KilnGpuOwn so = kiln_gpu_own_of_type(st);
  int64_t rm = so.dim[0].n / 2, kb = kiln_ir_dim(st, 1) / 16;
  for (int64_t mi = 0; mi < rm; mi++)
    for (int64_t ki = 0; ki < kb; ki++)
      for (int r = 0; r < 4; r++) {
        int lo[2] = {(int)(2 * mi + (r & 1)), (int)(2 * (2 * ki + (r >> 1)))};
        int hi[2] = {lo[0], lo[1] + 1};
        out->v[(mi * kb + ki) * 4 + r] =
            pack_pair(L, X->v[kiln_gpu_own_index(&so, lo)], X->v[kiln_gpu_own_index(&so, hi)]);
      }
}

bool low_trans_feeds_operand(MlirValue v) {
  if (mlirValueIsABlockArgument(v) || kiln_ir_op_id(mlirOpResultGetOwner(v)) != KILN_OP_TRANS)
    return false;
  MlirOpOperand u = mlirValueGetFirstUse(v);
  if (mlirOpOperandIsNull(u) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(u))) return false;
  MlirOperation user = mlirOpOperandGetOwner(u);
  /* the user may have no result (a store of the transposed tile): ask for its kind first */
  if (kiln_ir_op_id(user) != KILN_OP_CONVERT_LAYOUT) return false;
  KilnGpuLayout l = kiln_gpu_layout_of_type(mlirValueGetType(mlirOperationGetResult(user, 0)));
  MlirType et = kiln_ir_elem_type(mlirValueGetType(v));
  /* i8 and tf32: only B = x^T, whose x (rows n, k contiguous) is already the staging they want
   * for B; A = x^T would need a transpose (bytes: ldmatrix cannot; f32: not yet) */
  return l.kind == KILN_GPU_LAYOUT_DOT_OP && (mlirTypeIsAF16(et) || mlirTypeIsABF16(et) ||
                                              ((is_i8(et) || mlirTypeIsAF32(et)) && l.op_idx == 1));
}

void low_dot_fragments_at(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t rows,
                          int64_t cols, Vals *out) {
  MlirType f16 = mlirF16TypeGet(L->ctx);
  int wm = dl->wpc[0];
  int64_t rm = cols / (16 * wm), kb = rows / 16;
  MlirValue lane = low_lane(L);
  MlirValue r8 = low_bin(L, "arith.andi", lane, low_i32(L, 7));
  MlirValue half =
      low_bin(L, "arith.andi", low_bin(L, "arith.shrui", lane, low_i32(L, 3)), low_i32(L, 1));
  MlirValue quad = low_bin(L, "arith.shrui", lane, low_i32(L, 4));
  /* Matrix i = l >> 3 is register a_i: x rows (k) 8 (i >> 1) + (l & 7), columns (m) 8 (i & 1)
   * of the block; .trans hands lane (g, t) x[k0 + 2t .. +1][m0 + g] = A[m0 + g][k0 + 2t .. +1]. */
  MlirValue krow = low_bin(L, "arith.addi", r8, low_bin(L, "arith.shli", quad, low_i32(L, 3)));
  MlirValue mcol =
      low_bin(L, "arith.addi", low_bin(L, "arith.muli", warp_index(L, dl, 0), low_i32(L, 16)),
              low_bin(L, "arith.shli", half, low_i32(L, 3)));
  for (int64_t mi = 0; mi < rm; mi++) {
    MlirValue col = low_bin(L, "arith.addi", mcol, low_i32(L, 16 * wm * mi));
    for (int64_t ki = 0; ki < kb; ki++) {
      MlirValue row = low_bin(L, "arith.addi", krow, low_i32(L, 16 * ki));
      MlirValue p = low_gep(L, base, low_swizzle(L, row, col, cols), f16);
      ldmatrix(L, p, 4, true, &out->v[(mi * kb + ki) * 4]);
    }
  }
}

void low_dot_fragments_bt(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t rows,
                          int64_t cols, Vals *out) {
  MlirType f16 = mlirF16TypeGet(L->ctx);
  int wn = dl->wpc[1];
  int64_t rn = rows / (8 * wn), kb = cols / 16;
  MlirValue lane = low_lane(L);
  MlirValue r8 = low_bin(L, "arith.andi", lane, low_i32(L, 7));
  MlirValue khalf = low_bin(
      L, "arith.shli",
      low_bin(L, "arith.andi", low_bin(L, "arith.shrui", lane, low_i32(L, 3)), low_i32(L, 1)),
      low_i32(L, 3));
  MlirValue quad = low_bin(L, "arith.shrui", lane, low_i32(L, 4));
  /* Row (n) this lane addresses: its column block's first row + (l & 7); x4: lanes 16..31 the
   * next column block (8 WN rows further). */
  MlirValue wrow =
      low_bin(L, "arith.addi", low_bin(L, "arith.muli", warp_index(L, dl, 1), low_i32(L, 8)), r8);
  MlirValue wrow4 =
      low_bin(L, "arith.addi", wrow, low_bin(L, "arith.muli", quad, low_i32(L, 8 * wn)));
  for (int64_t ki = 0; ki < kb; ki++) {
    MlirValue col = low_bin(L, "arith.addi", khalf, low_i32(L, 16 * ki));
    for (int64_t ni = 0; ni < rn; ni += 2) {
      bool x4 = ni + 1 < rn;
      MlirValue row = low_bin(L, "arith.addi", x4 ? wrow4 : wrow, low_i32(L, 8 * wn * ni));
      MlirValue p = low_gep(L, base, low_swizzle(L, row, col, cols), f16);
      load_b_fragments(L, p, x4, false, ni, ki, kb, out);
    }
  }
}

/* The last operand tile staged: its source value, its arena offset, and the barrier after its
 * stores.  A later convert of the same tile (dO as the B operand of both dP^T = V dO^T and
 * dV += P^T dO) reads it again where it is when no barrier came in between in the same block:
 * every other use of the arena opens with a barrier, so none has overwritten it. */
typedef struct StageMemo {
  const void *src;
  int64_t off;
  bool transposed; /* an i8 or tf32 B staged with k contiguous (rows n) */
  MlirOperation barrier;
} StageMemo;

static MlirWalkResult find_barrier(MlirOperation op, void *found) {
  if (!kiln_ir_op_is(op, "nvvm.barrier0")) return MlirWalkResultAdvance;
  *(bool *)found = true;
  return MlirWalkResultInterrupt;
}

/* Whether op is a barrier or holds one in its regions (an scf.if between two converts). */
static bool has_barrier(MlirOperation op) {
  bool found = false;
  mlirOperationWalk(op, find_barrier, &found, MlirWalkPreOrder);
  return found;
}

static bool stage_still_there(Low *L, MlirValue src, bool transposed, int64_t *off) {
  StageMemo *m = L->dot_stage;
  if (!m || m->src != src.ptr || m->transposed != transposed || !mlirOperationIsNull(L->b.before) ||
      !mlirBlockEqual(mlirOperationGetBlock(m->barrier), L->b.block))
    return false;
  for (MlirOperation o = mlirOperationGetNextInBlock(m->barrier); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    if (has_barrier(o)) return false;
  *off = m->off;
  return true;
}

/* Byte offset of i8 element (row, k) in a swizzled tile of kcols bytes a row seen as 16-bit
 * pairs: pair k / 2 of the b16 view, byte k & 1 of it (the low byte is the lower k, as mma.sync
 * packs four k into a register). */
MlirValue low_swizzle_i8(Low *L, MlirValue row, MlirValue k, int64_t kcols) {
  MlirValue pair = low_swizzle(L, row, low_bin(L, "arith.shrui", k, low_i32(L, 1)), kcols / 2);
  return low_bin(L, "arith.addi", low_bin(L, "arith.shli", pair, low_i32(L, 1)),
                 low_bin(L, "arith.andi", k, low_i32(L, 1)));
}

/* Stores the tile src (its owned elements) into the swizzled tile at base, between barriers;
 * with `transposed` (an i8 or tf32 B), element (r, c) goes to row c, column r. */
static void stage(Low *L, MlirValue src, int64_t off, MlirValue base, bool transposed) {
  MlirType st = mlirValueGetType(src), et = kiln_ir_elem_type(st);
  int64_t cols = kiln_ir_dim(st, transposed ? 0 : 1);
  bool bytes = is_i8(et);
  KilnGpuOwn so = kiln_gpu_own_of_type(st);
  Vals *X = low_get(L, src);
  low_barrier(L);
  for (int64_t j = 0; j < so.count; j++) {
    MlirValue r = low_coord(L, &so, j, 0), c = low_coord(L, &so, j, 1);
    if (transposed) {
      MlirValue t = r;
      r = c;
      c = t;
    }
    MlirValue idx = bytes                ? low_swizzle_i8(L, r, c, cols)
                    : mlirTypeIsAF32(et) ? low_swizzle_f32(L, r, c, cols)
                                         : low_swizzle(L, r, c, cols);
    MlirValue o[2] = {X->v[j], low_gep(L, base, idx, et)};
    low_op(L, "llvm.store", o, 2, NULL, 0, NULL, 0);
  }
  StageMemo *m = L->dot_stage;
  if (!m) L->dot_stage = m = low_alloc(L, sizeof *m);
  m->src = src.ptr;
  m->off = off;
  m->transposed = transposed;
  m->barrier = low_op(L, "nvvm.barrier0", NULL, 0, NULL, 0, NULL, 0);
}

/* Four bytes (k .. k + 3 at index x) of a tile staged with rows k, as one register: byte j in
 * bits 8j .. 8j + 7 (the lowest k lowest, as mma.sync takes them). */
static MlirValue gather4(Low *L, MlirValue base, MlirValue k, MlirValue x, int64_t xext) {
  MlirValue acc = low_i32(L, 0);
  for (int j = 0; j < 4; j++) {
    MlirValue kj = low_bin(L, "arith.addi", k, low_i32(L, j));
    MlirValue p = low_gep(L, base, low_swizzle_i8(L, kj, x, xext), L->i8);
    MlirValue b = low_op1(L, "llvm.load", &p, 1, L->i8);
    MlirValue w = low_op1(L, "arith.extui", &b, 1, L->i32);
    acc = low_bin(L, "arith.ori", acc, j ? low_bin(L, "arith.shli", w, low_i32(L, 8 * j)) : w);
  }
  return acc;
}

/* The one register (k .. k + per - 1 at index x, per = 4 bytes or 1 f32) of an operand staged with
 * rows k, read from shared memory: four byte loads packed, or one 32-bit load. */
static MlirValue gather_reg(Low *L, MlirValue base, MlirValue k, MlirValue x, int64_t xext,
                            bool bytes) {
  if (bytes) return gather4(L, base, k, x, xext);
  MlirValue p = low_gep(L, base, low_swizzle_f32(L, k, x, xext), L->i32);
  return low_op1(L, "llvm.load", &p, 1, L->i32);
}

/* The walk both gathers share: an mma.sync fragment whose register r of k block ki holds k
 * elements per consecutive ones (4 bytes of s8 in m16n8k32, 1 f32 of tf32 in m16n8k8; a k block
 * is 8 registers' worth along k): A rows g + 8 (r & 1), k per (t + 4 (r >> 1)); B column g,
 * k per (t + 4 r); lane = 4 g + t. */
static void gather_fragments(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t kext,
                             int64_t xext, int per, Vals *out) {
  bool b = dl->op_idx == 1;
  int w = b ? dl->wpc[1] : dl->wpc[0];
  int64_t blk = b ? 8 : 16, reps = xext / (blk * w), kblk = 8 * per, kb = kext / kblk;
  MlirValue lane = low_lane(L);
  MlirValue g = low_bin(L, "arith.shrui", lane, low_i32(L, 2));
  MlirValue t =
      low_bin(L, "arith.muli", low_bin(L, "arith.andi", lane, low_i32(L, 3)), low_i32(L, per));
  MlirValue x0 =
      low_bin(L, "arith.addi", low_bin(L, "arith.muli", warp_index(L, dl, b), low_i32(L, blk)), g);
  int nregs = b ? 2 : 4;
  for (int64_t i = 0; i < reps; i++)
    for (int64_t ki = 0; ki < kb; ki++)
      for (int r = 0; r < nregs; r++) {
        int64_t xoff = blk * w * i + (b ? 0 : 8 * (r & 1));
        int64_t koff = kblk * ki + 4 * per * (b ? r : r >> 1);
        MlirValue x = low_bin(L, "arith.addi", x0, low_i32(L, xoff));
        MlirValue k = low_bin(L, "arith.addi", t, low_i32(L, koff));
        out->v[(i * kb + ki) * nregs + r] = gather_reg(L, base, k, x, xext, per == 4);
      }
}

void low_dot_fragments_i8_gather(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t kext,
                                 int64_t xext, Vals *out) {
  gather_fragments(L, dl, base, kext, xext, 4, out);
}

void low_dot_fragments_tf32_gather(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t kext,
                                   int64_t xext, Vals *out) {
  gather_fragments(L, dl, base, kext, xext, 1, out);
}

/* An i8 or tf32 operand (elem_bytes 1 or 4): staged with k contiguous (A as it is, B transposed
 * to rows n; with `folded`, src is x of B = x^T, already rows n) and read by the f16 path's
 * ldmatrix on the b16 view, K * elem_bytes / 2 halves a row (A: the plain A read; B: the read of
 * a B^T tile). The registers hold the bytes, or the f32 bits that low_dot_mma rounds to tf32. */
static void staged_operand(Low *L, MlirOperation op, const KilnGpuLayout *dl, MlirValue src,
                           bool folded, int64_t elem_bytes, Vals *out) {
  MlirType st = mlirValueGetType(src);
  bool b = dl->op_idx == 1, transposed = b && !folded;
  int64_t rows = kiln_ir_dim(st, transposed ? 1 : 0), kcols = kiln_ir_dim(st, transposed ? 0 : 1);
  int64_t a_bytes, off = operand_offset(op, dl->op_idx, &a_bytes);
  bool again = stage_still_there(L, src, transposed, &off);
  MlirValue base = low_smem(L, off, off + rows * kcols * elem_bytes);
  if (!again) stage(L, src, off, base, transposed);
  int64_t halves = kcols * elem_bytes / 2;
  if (b)
    low_dot_fragments_bt(L, dl, base, rows, halves, out);
  else
    low_dot_fragments(L, dl, base, rows, halves, out);
}

bool low_dot_operand(Low *L, MlirOperation op) {
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  MlirType st = mlirValueGetType(src), rt = mlirValueGetType(res);
  KilnGpuLayout dl = kiln_gpu_layout_of_type(rt);
  MlirType et = kiln_ir_elem_type(st);
  bool tf32 = mlirTypeIsAF32(et);
  if (kiln_ir_rank(st) != 2 || !(mlirTypeIsAF16(et) || mlirTypeIsABF16(et) || is_i8(et) || tf32)) {
    low_error(L, "GPU lowering: dot operands for mma must be 2-D f16/bf16/i8/f32 (tf32) tiles");
    return false;
  }
  if (is_i8(et) || tf32) {
    Vals *out = low_vals(L, kiln_gpu_own_of_type(rt).count);
    bool folded = low_trans_feeds_operand(src);
    if (folded) src = mlirOperationGetOperand(mlirOpResultGetOwner(src), 0);
    staged_operand(L, op, &dl, src, folded, tf32 ? 4 : 1, out);
    low_set(L, res, out);
    return true;
  }
  KilnGpuLayout sl = kiln_gpu_layout_of_type(st);
  if (a_in_registers(&sl, &dl)) {
    Vals *out = low_vals(L, kiln_gpu_own_of_type(rt).count);
    a_from_accumulator(L, st, low_get(L, src), out);
    low_set(L, res, out);
    return true;
  }
  /* B = trans(x): x is staged as it is (rows n, columns k) and read without .trans; A =
   * trans(x): x staged as it is (rows k, columns m), read with .trans. */
  bool bt = low_trans_feeds_operand(src);
  if (bt) {
    src = mlirOperationGetOperand(mlirOpResultGetOwner(src), 0);
    st = mlirValueGetType(src);
  }
  int64_t rows = kiln_ir_dim(st, 0), cols = kiln_ir_dim(st, 1), a_bytes;
  int64_t off = operand_offset(op, dl.op_idx, &a_bytes);
  bool again = stage_still_there(L, src, false, &off);
  MlirValue base = low_smem(L, off, off + rows * cols * 2);
  if (!again) stage(L, src, off, base, false);
  KilnGpuOwn ro = kiln_gpu_own_of_type(rt);
  Vals *out = low_vals(L, ro.count);
  if (bt && dl.op_idx == 0)
    low_dot_fragments_at(L, &dl, base, rows, cols, out);
  else if (bt)
    low_dot_fragments_bt(L, &dl, base, rows, cols, out);
  else
    low_dot_fragments(L, &dl, base, rows, cols, out);
  low_set(L, res, out);
  return true;
}

/* The operands of an m16n8 mma as inline PTX: 4 results, 4 A and 2 B registers, 4 accumulators. */
#define MMA_ASM_OPERANDS " {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};"

/* bf16 m16n8k16 as inline PTX (see KILN_GPU_MMA_BF16_PTX): ops are 4 A and 2 B registers (i32)
 * and 4 f32 accumulators; the result is a struct of 4 f32. */
static MlirValue mma_bf16_asm(Low *L, const MlirValue *ops, MlirType rt) {
  return low_asm(L, KILN_GPU_MMA_BF16_PTX MMA_ASM_OPERANDS, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", ops,
                 10, rt);
}

/* s8 m16n8k32 as inline PTX (KILN_GPU_MMA_S8_PTX): 4 A and 2 B registers and 4 i32
 * accumulators; the result is a struct of 4 i32. */
static MlirValue mma_s8_asm(Low *L, const MlirValue *ops, MlirType rt) {
  return low_asm(L, KILN_GPU_MMA_S8_PTX MMA_ASM_OPERANDS, "=r,=r,=r,=r,r,r,r,r,r,r,r,r,r,r", ops,
                 10, rt);
}

/* tf32 m16n8k8 as inline PTX (KILN_GPU_MMA_TF32_PTX): 4 A and 2 B registers (one tf32 each)
 * and 4 f32 accumulators; the result is a struct of 4 f32. */
static MlirValue mma_tf32_asm(Low *L, const MlirValue *ops, MlirType rt) {
  return low_asm(L, KILN_GPU_MMA_TF32_PTX MMA_ASM_OPERANDS, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", ops,
                 10, rt);
}

/* An f32 register (as its bits) rounded to tf32 by cvt.rna.tf32.f32: the 13 low bits zero. */
static MlirValue cvt_tf32(Low *L, MlirValue bits) {
  return low_asm(L, KILN_GPU_CVT_TF32_PTX " $0, $1;", "=r,r", &bits, 1, L->i32);
}

/* v[i], rounded to tf32 the first time it is asked for (done[i] records it). */
static MlirValue rounded(Low *L, MlirValue *v, bool *done, int64_t i) {
  if (!done[i]) v[i] = cvt_tf32(L, v[i]), done[i] = true;
  return v[i];
}

bool low_dot_mma(Low *L, MlirOperation op) {
  MlirValue a = mlirOperationGetOperand(op, 0), b = mlirOperationGetOperand(op, 1);
  MlirValue acc = mlirOperationGetOperand(op, 2), res = mlirOperationGetResult(op, 0);
  MlirType at = mlirValueGetType(a), bt = mlirValueGetType(b), ct = mlirValueGetType(res);
  KilnGpuLayout al = kiln_gpu_layout_of_type(at), bl = kiln_gpu_layout_of_type(bt);
  KilnGpuLayout cl = kiln_gpu_layout_of_type(ct);
  if (al.kind != KILN_GPU_LAYOUT_DOT_OP || bl.kind != KILN_GPU_LAYOUT_DOT_OP || al.op_idx != 0 ||
      bl.op_idx != 1) {
    low_error(L, "GPU lowering: an mma dot needs dot_op operands");
    return false;
  }
  bool bf16 = mlirTypeIsABF16(kiln_ir_elem_type(at)), s8 = is_i8(kiln_ir_elem_type(at));
  bool tf32 = mlirTypeIsAF32(kiln_ir_elem_type(at));
  MlirType et = bf16 ? mlirBF16TypeGet(L->ctx) : mlirF16TypeGet(L->ctx);
  int64_t two = 2;
  MlirType vt = mlirVectorTypeGet(1, &two, et);
  int64_t M = kiln_ir_dim(ct, 0), N = kiln_ir_dim(ct, 1), K = kiln_ir_dim(at, 1);
  int64_t rm = M / (16 * cl.wpc[0]), rn = N / (8 * cl.wpc[1]), kb = K / (s8 ? 32 : tf32 ? 8 : 16);
  KilnGpuOwn co = kiln_gpu_own_of_type(ct);
  Vals *A = low_get(L, a), *B = low_get(L, b), *C = low_get(L, acc);
  if (A->n != rm * kb * 4 || B->n != rn * kb * 2 || C->n != co.count) {
    low_error(L, "GPU lowering: mma operand fragments do not match the tile");
    return false;
  }
  Vals *out = low_vals(L, co.count);
  for (int64_t j = 0; j < co.count; j++) out->v[j] = C->v[j];
  /* Fragments as the registers mma.sync takes: vector<2 x f16> for f16; for bf16 the NVVM op
   * takes the raw 32-bit registers (two bf16 each), as ldmatrix produced them. */
  MlirValue *av = low_alloc(L, (size_t)A->n * sizeof *av),
            *bv = low_alloc(L, (size_t)B->n * sizeof *bv);
  bool raw = bf16 || s8 || tf32;
  for (int64_t i = 0; i < A->n; i++)
    av[i] = raw ? A->v[i] : low_op1(L, "llvm.bitcast", &A->v[i], 1, vt);
  for (int64_t i = 0; i < B->n; i++)
    bv[i] = raw ? B->v[i] : low_op1(L, "llvm.bitcast", &B->v[i], 1, vt);
  /* tf32: each f32 register rounded once, just before the first mma that reads it (so the
   * rounded copies live no longer than the k block that uses them) */
  bool *a_rounded = low_alloc(L, (size_t)A->n), *b_rounded = low_alloc(L, (size_t)B->n);
  memset(a_rounded, !tf32, (size_t)A->n);
  memset(b_rounded, !tf32, (size_t)B->n);
  const char *ty = bf16 ? "#nvvm.mma_type<bf16>" : "#nvvm.mma_type<f16>";
  int32_t seg[3] = {4, 2, 4};
  MlirNamedAttribute attrs[6] = {
      kiln_ir_named(L->ctx, "layoutA", kiln_gpu_parse_attr(L->ctx, "#nvvm.mma_layout<row>")),
      kiln_ir_named(L->ctx, "layoutB", kiln_gpu_parse_attr(L->ctx, "#nvvm.mma_layout<col>")),
      kiln_ir_named(L->ctx, "multiplicandAPtxType", kiln_gpu_parse_attr(L->ctx, ty)),
      kiln_ir_named(L->ctx, "multiplicandBPtxType", kiln_gpu_parse_attr(L->ctx, ty)),
      kiln_ir_named(L->ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(L->ctx, 3, seg)),
      kiln_ir_named(L->ctx, "shape",
                    kiln_gpu_parse_attr(L->ctx, "#nvvm.shape<m = 16, n = 8, k = 16>")),
  };
  MlirType acc_t = s8 ? L->i32 : L->f32;
  MlirType rt = struct_of(L, acc_t, 4);
  for (int64_t ki = 0; ki < kb; ki++)
    for (int64_t mi = 0; mi < rm; mi++)
      for (int64_t ni = 0; ni < rn; ni++) {
        int64_t pos[4];
        for (int c = 0; c < 4; c++) {
          int local[2] = {(int)(2 * mi + (c >> 1)), (int)(2 * ni + (c & 1))};
          pos[c] = kiln_gpu_own_index(&co, local);
        }
        MlirValue ops[10];
        for (int r = 0; r < 4; r++) ops[r] = rounded(L, av, a_rounded, (mi * kb + ki) * 4 + r);
        for (int r = 0; r < 2; r++) ops[4 + r] = rounded(L, bv, b_rounded, (ni * kb + ki) * 2 + r);
        for (int c = 0; c < 4; c++) ops[6 + c] = out->v[pos[c]];
        MlirValue d =
            s8     ? mma_s8_asm(L, ops, rt)
            : tf32 ? mma_tf32_asm(L, ops, rt)
            : bf16
                ? mma_bf16_asm(L, ops, rt)
                : mlirOperationGetResult(low_op(L, "nvvm.mma.sync", ops, 10, &rt, 1, attrs, 6), 0);
        for (int c = 0; c < 4; c++) out->v[pos[c]] = struct_get_as(L, d, c, acc_t);
      }
  low_set(L, res, out);
  return true;
}
