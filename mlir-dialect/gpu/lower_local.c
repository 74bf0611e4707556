/* lower_local.c - the shared-memory ops of the GPU IR, each lowered by itself: kiln.local_alloc,
 * kiln.async_copy, kiln.async_commit, kiln.async_wait, kiln.barrier, kiln.local_load (made by
 * kiln-gpu-pipeline, pipeline_pass.c; placed by kiln-gpu-smem-alloc, smem_alloc.c).
 *
 * Why here: the pipeliner decides the schedule in the IR; what is left is instruction
 * selection, op by op.  A buffer lowers to a pointer to its first byte in the arena `kiln_smem`
 * (its `offset`); slot s of it starts s * `stride` bytes further (the allocator interleaves the
 * buffers of one loop stage by stage).  The staged tile uses the swizzle
 * of lower_dot.c (a vector never crosses a 16-byte chunk); a buffer whose encoding has order
 * [0, 1] holds the tile transposed (S[col][row]).
 *   async_copy:  one cp.async per vector of `vec` elements when the vector's whole mask holds
 *                (.cg for 16 bytes, .ca below); where the axis analysis proves the mask one
 *                value over each vector (`k < K` with K % 8 promised; a vector of one
 *                element always) and `other` is zero, one
 *                cp.async whose src-size is 0 under a false mask (it zero-fills: no branch and
 *                no per-element masks in the loop); otherwise (tile edges) each element is
 *                loaded under its own mask, yielding `other`, and stored to shared memory
 *   async_commit, async_wait {pending = N}: cp.async.commit_group, cp.async.wait_group N
 *   barrier:     bar.sync 0
 *   local_load:  the dot_op fragments with ldmatrix: a row-major staging as a convert's
 *                staging is read (low_dot_fragments); a transposed one with the other form
 *                (.x4.trans for A, plain .x4 / .x2 for B); with `transpose` (the operand is
 *                trans(x) and x was staged as it is) as lower_dot.c reads a folded trans; an i8
 *                tile with k contiguous in the staging (A as it is, B transposed) by the same
 *                ldmatrix reads on its b16 view, one with m or n contiguous (B row-major in n,
 *                A column-major) by four byte loads a register (ldmatrix cannot transpose
 *                bytes); a tf32 (f32) tile the same way on its b16 view where k is contiguous,
 *                by one 32-bit load a register where it is not; of a wgmma ring or an
 *                `fma` one (an FMA dot's operand, unswizzled), the slot's first byte, from
 *                which the dot reads (lower_wgmma.c, lower_shared.c). */
#include "lower.h"

#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <stdio.h>

static void cp_async(Low *L, MlirValue dst, MlirValue src, int bytes) {
  MlirValue o[2] = {dst, src};
  MlirNamedAttribute a[2] = {
      kiln_ir_named(L->ctx, "size", kiln_ir_attr_i32(L->ctx, bytes)),
      /* .cg (L2 only) exists for 16-byte copies; smaller ones must use .ca. */
      kiln_ir_named(L->ctx, "modifier",
                    kiln_gpu_parse_attr(L->ctx, bytes == 16 ? "#nvvm<load_cache_modifier cg>"
                                                            : "#nvvm<load_cache_modifier ca>")),
  };
  low_op(L, "nvvm.cp.async.shared.global", o, 2, NULL, 0, a, 2);
}

/* cp.async of `bytes` that reads src_size of them (bytes or 0) and zero-fills the rest: the
 * LLVM intrinsic of the src-size form, since nvvm.cp.async.shared.global's cpSize operand is
 * dropped by MLIR 19's translation (it expects convert-nvvm-to-llvm's inline PTX). The emu
 * rewrite (emu_lower.c) knows the intrinsic by name. */
static void cp_async_fill(Low *L, MlirValue dst, MlirValue src, int bytes, MlirValue src_size) {
  char name[64];
  snprintf(name, sizeof name, "llvm.nvvm.cp.async.%s.shared.global.%d.s", bytes == 16 ? "cg" : "ca",
           bytes);
  MlirValue o[3] = {dst, src, src_size};
  MlirNamedAttribute a[2] = {
      kiln_ir_named(L->ctx, "intrin",
                    mlirStringAttrGet(L->ctx, mlirStringRefCreateFromCString(name))),
      kiln_ir_named(L->ctx, "fastmathFlags", kiln_gpu_parse_attr(L->ctx, "#llvm.fastmath<none>")),
  };
  low_op(L, "llvm.call_intrinsic", o, 3, NULL, 0, a, 2);
}

static void commit_group(Low *L) {
  low_op(L, "nvvm.cp.async.commit.group", NULL, 0, NULL, 0, NULL, 0);
}

static void wait_group(Low *L, int n) {
  MlirNamedAttribute a = kiln_ir_named(L->ctx, "n", kiln_ir_attr_i32(L->ctx, n));
  low_op(L, "nvvm.cp.async.wait.group", NULL, 0, NULL, 0, &a, 1);
}

/* Whether every element of the vector at j yields +0 where masked off. */
static bool other_is_zero(const Vals *O, int64_t j, int v) {
  for (int e = 0; e < v; e++)
    if (!low_is_zero(O->v[O->n == 1 ? 0 : j + e])) return false;
  return true;
}

/* One vector of the tile: cp.async when its whole mask holds; a zero-filling cp.async under the
 * first element's mask when the mask is one value over the vector (`uniform`) and masked-off
 * elements are zeros; else element by element. */
static void copy_vector(Low *L, const KilnGpuBuffer *bf, int vec, MlirValue dst, const Vals *P,
                        const Vals *M, const Vals *O, int64_t j, bool uniform) {
  int v = vec, bytes = vec * kiln_ir_elem_bits(bf->elem) / 8;
  MlirValue m[16];
  for (int e = 0; e < v; e++) m[e] = M->v[M->n == 1 ? 0 : j + e];
  MlirValue all = low_all_true(L, m, v);
  if (mlirValueIsNull(all)) {
    cp_async(L, dst, P->v[j], bytes);
    return;
  }
  if (uniform && other_is_zero(O, j, v)) {
    MlirValue o[3] = {m[0], low_i32(L, bytes), low_i32(L, 0)};
    cp_async_fill(L, dst, P->v[j], bytes, low_op1(L, "llvm.select", o, 3, L->i32));
    return;
  }
  KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, all, NULL, 0);
  KilnIRBuilder saved = L->b;
  kiln_ir_builder_set_end(&L->b, f.then_block);
  cp_async(L, dst, P->v[j], bytes);
  kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
  kiln_ir_builder_set_end(&L->b, f.else_block);
  for (int e = 0; e < v; e++) {
    MlirValue x = low_load_masked(L, P->v[j + e], m[e], O->v[O->n == 1 ? 0 : j + e], bf->elem,
                                  kiln_ir_elem_bytes(bf->elem));
    MlirValue o[2] = {x, e ? low_gep(L, dst, low_i32(L, e), bf->elem) : dst};
    low_op(L, "llvm.store", o, 2, NULL, 0, NULL, 0);
  }
  kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
  L->b = saved;
}

/* Element offset of tile element (row, col) in a staged buffer.  A tile contiguous along its
 * last dim (A row-major in k, B row-major in n) is staged as it is; one contiguous along dim 0
 * (A = X^T read with sam = 1, B = W^T read with sbk = 1: the k-major B of y = x W^T) is staged
 * transposed, so that every vector of the copy is one row segment of the staged tile and the
 * 16-byte cp.async never scatters. */
static MlirValue stage_index(Low *L, const KilnGpuBuffer *bf, MlirValue row, MlirValue col) {
  if (bf->enc.fma) /* the FMA dot's operand rows, unswizzled */
    return bf->enc.trans
               ? low_bin(L, "arith.addi", low_bin(L, "arith.muli", col, low_i32(L, bf->rows)), row)
               : low_bin(L, "arith.addi", low_bin(L, "arith.muli", row, low_i32(L, bf->cols)), col);
  if (kiln_ir_elem_bits(bf->elem) == 8) /* i8: the byte swizzle of lower_dot.c's i8 staging */
    return bf->enc.trans ? low_swizzle_i8(L, col, row, bf->rows)
                         : low_swizzle_i8(L, row, col, bf->cols);
  if (kiln_ir_elem_bits(bf->elem) == 32) /* tf32: the b16 view's swizzle, as lower_dot.c's */
    return bf->enc.trans ? low_swizzle_f32(L, col, row, bf->rows)
                         : low_swizzle_f32(L, row, col, bf->cols);
  if (bf->enc.wgmma) /* 128-byte panels (lower_wgmma.c) */
    return bf->enc.trans ? low_swizzle_panel(L, col, row, bf->cols, bf->rows)
                         : low_swizzle_panel(L, row, col, bf->rows, bf->cols);
  return bf->enc.trans ? low_swizzle(L, col, row, bf->rows) : low_swizzle(L, row, col, bf->cols);
}

/* ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16 at ptr; out[0..num-1] get the registers. */
static void pipe_ldmatrix(Low *L, MlirValue ptr, int num, bool trans, MlirValue *out) {
  MlirNamedAttribute a[2] = {
      kiln_ir_named(L->ctx, "num", kiln_ir_attr_i32(L->ctx, num)),
      kiln_ir_named(
          L->ctx, "layout",
          kiln_gpu_parse_attr(L->ctx, trans ? "#nvvm.mma_layout<col>" : "#nvvm.mma_layout<row>")),
  };
  MlirType f[4] = {L->i32, L->i32, L->i32, L->i32};
  MlirType rt = mlirLLVMStructTypeLiteralGet(L->ctx, num, f, false);
  MlirValue r = mlirOperationGetResult(low_op(L, "nvvm.ldmatrix", &ptr, 1, &rt, 1, a, 2), 0);
  for (int64_t i = 0; i < num; i++) {
    MlirNamedAttribute pos = kiln_ir_named(L->ctx, "position", mlirDenseI64ArrayGet(L->ctx, 1, &i));
    out[i] = mlirOperationGetResult(low_op(L, "llvm.extractvalue", &r, 1, &L->i32, 1, &pos, 1), 0);
  }
}

/* The warp's row (d = 0) or column (d = 1) index in the mma layout's warp grid (w % WM, w / WM). */
static MlirValue pipe_warp_index(Low *L, const KilnGpuLayout *l, int d) {
  MlirValue w = low_warp(L);
  if (d == 0) return low_bin(L, "arith.remui", w, low_i32(L, l->wpc[0]));
  return low_bin(L, "arith.remui", low_bin(L, "arith.divui", w, low_i32(L, l->wpc[0])),
                 low_i32(L, l->wpc[1]));
}

/* The A fragments of a tile staged transposed (S[k][m], m contiguous): per 16x16 block one
 * ldmatrix.x4.trans.  Lane l addresses k row (l & 7) + 8 (l >> 4) at m column 8 ((l >> 3) & 1)
 * of the block, so the four 8x8 matrices are (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15),
 * (m 8-15, k 8-15): transposed, each gives a0, a1, a2, a3 of the PTX ISA's m16n8k16 A fragment
 * (register r = A[g + 8 (r & 1)][2t + 8 (r >> 1) .. +1]). */
static void fragments_a_trans(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t m, int64_t k,
                              Vals *out) {
  MlirType f16 = mlirF16TypeGet(L->ctx);
  MlirValue lane = low_lane(L);
  MlirValue krow = low_bin(
      L, "arith.addi", low_bin(L, "arith.andi", lane, low_i32(L, 7)),
      low_bin(L, "arith.shli", low_bin(L, "arith.shrui", lane, low_i32(L, 4)), low_i32(L, 3)));
  MlirValue mcol =
      low_bin(L, "arith.andi", low_bin(L, "arith.shrui", lane, low_i32(L, 3)), low_i32(L, 1));
  mcol = low_bin(L, "arith.addi", low_bin(L, "arith.shli", mcol, low_i32(L, 3)),
                 low_bin(L, "arith.muli", pipe_warp_index(L, dl, 0), low_i32(L, 16)));
  int wm = dl->wpc[0];
  int64_t rm = m / (16 * wm), kb = k / 16;
  for (int64_t mi = 0; mi < rm; mi++)
    for (int64_t ki = 0; ki < kb; ki++) {
      MlirValue row = low_bin(L, "arith.addi", krow, low_i32(L, 16 * ki));
      MlirValue col = low_bin(L, "arith.addi", mcol, low_i32(L, 16 * wm * mi));
      MlirValue ptr = low_gep(L, base, low_swizzle(L, row, col, m), f16);
      pipe_ldmatrix(L, ptr, 4, true, &out->v[(mi * kb + ki) * 4]);
    }
}

/* The B fragments of a tile staged transposed (S[n][k], k contiguous: the weight of y = x W^T
 * as it lies in memory): no transpose needed, b_r = B[2t + 8r .. +1][g] = S[g][8r + 2t .. +1]
 * is what a plain ldmatrix gives.  Per 16 k and two of the warp's 8-column blocks one .x4: lane
 * l addresses n row (l & 7) of block (l >> 4) (8 WN columns further) at k column
 * 8 ((l >> 3) & 1); the matrices are b0, b1 of the first block and b0, b1 of the second.  A lone
 * last block takes .x2 (lanes 0-15). */
static void fragments_b_trans(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t k, int64_t n,
                              Vals *out) {
  MlirType f16 = mlirF16TypeGet(L->ctx);
  MlirValue lane = low_lane(L);
  int wn = dl->wpc[1];
  int64_t rn = n / (8 * wn), kb = k / 16;
  MlirValue nrow = low_bin(L, "arith.addi", low_bin(L, "arith.andi", lane, low_i32(L, 7)),
                           low_bin(L, "arith.muli", pipe_warp_index(L, dl, 1), low_i32(L, 8)));
  MlirValue next =
      low_bin(L, "arith.muli", low_bin(L, "arith.shrui", lane, low_i32(L, 4)), low_i32(L, 8 * wn));
  MlirValue kcol = low_bin(
      L, "arith.shli",
      low_bin(L, "arith.andi", low_bin(L, "arith.shrui", lane, low_i32(L, 3)), low_i32(L, 1)),
      low_i32(L, 3));
  for (int64_t ki = 0; ki < kb; ki++)
    for (int64_t ni = 0; ni < rn; ni += 2) {
      bool x4 = ni + 1 < rn;
      MlirValue row = low_bin(L, "arith.addi", x4 ? low_bin(L, "arith.addi", nrow, next) : nrow,
                              low_i32(L, 8 * wn * ni));
      MlirValue col = low_bin(L, "arith.addi", kcol, low_i32(L, 16 * ki));
      MlirValue ptr = low_gep(L, base, low_swizzle(L, row, col, k), f16);
      MlirValue r[4];
      pipe_ldmatrix(L, ptr, x4 ? 4 : 2, false, r);
      for (int b = 0; b < (x4 ? 2 : 1); b++) {
        out->v[((ni + b) * kb + ki) * 2] = r[2 * b];
        out->v[((ni + b) * kb + ki) * 2 + 1] = r[2 * b + 1];
      }
    }
}

/* The buffer operand's type, decoded; false after an error. */
static bool buffer_of(Low *L, MlirValue buf, KilnGpuBuffer *bf) {
  if (kiln_gpu_buffer_parse(mlirValueGetType(buf), bf)) return true;
  low_error(L, "GPU lowering: not a shared buffer (memref<stages x rows x cols> with a shared "
               "encoding)");
  return false;
}

/* A pointer to the first byte of slot `slot` (a lowered i32) of buffer buf: `stride` bytes
 * (the allocator's; the slot's own size when absent) per slot. */
static MlirValue slot_base(Low *L, MlirValue buf, const KilnGpuBuffer *bf, MlirValue slot) {
  int64_t stride = bf->slot_bytes;
  if (!mlirValueIsABlockArgument(buf))
    stride = kiln_gpu_int_attr(mlirOpResultGetOwner(buf), "stride", stride);
  MlirValue at = low_bin(L, "arith.muli", slot, low_i32(L, stride));
  return low_gep(L, low_get(L, buf)->v[0], at, L->i8);
}

bool low_local_alloc(Low *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  KilnGpuBuffer bf;
  if (!buffer_of(L, res, &bf)) return false;
  int64_t off;
  if (!kiln_ir_get_int_attr(op, "offset", &off)) {
    low_error(L, "GPU lowering: kiln.local_alloc has no offset (kiln-gpu-smem-alloc places "
                 "buffers)");
    return false;
  }
  int64_t stride = kiln_gpu_int_attr(op, "stride", bf.slot_bytes);
  Vals *v = low_vals(L, 1);
  v->v[0] = low_smem_at(L, off, off + (bf.stages - 1) * stride + bf.slot_bytes);
  low_set(L, res, v);
  return true;
}

/* Copies the tile (pointer, mask and other as lowered) into one slot, vector by vector. */
bool low_async_copy(Low *L, MlirOperation op) {
  MlirValue buf = mlirOperationGetOperand(op, 0);
  KilnGpuBuffer bf;
  if (!buffer_of(L, buf, &bf)) return false;
  int64_t vec = kiln_gpu_int_attr(op, "vec", 1);
  KilnGpuOwn own = kiln_gpu_own_of_type(mlirValueGetType(mlirOperationGetOperand(op, 4)));
  if (vec < 1 || vec * kiln_ir_elem_bytes(bf.elem) > 16 || own.rank != 2 || own.count % vec != 0) {
    low_error(L, "GPU lowering: kiln.async_copy needs a 2-D tile and vec of 1 to 16 bytes "
                 "dividing each thread's elements");
    return false;
  }
  MlirValue base = slot_base(L, buf, &bf, low_get(L, mlirOperationGetOperand(op, 1))->v[0]);
  Vals *P = low_get(L, mlirOperationGetOperand(op, 2));
  Vals *M = low_get(L, mlirOperationGetOperand(op, 3));
  Vals *O = low_get(L, mlirOperationGetOperand(op, 4));
  /* one element's mask is one value over its copy */
  bool uniform = vec == 1 || low_mask_uniform(L, mlirOperationGetOperand(op, 3), &own, (int)vec);
  for (int64_t j = 0; j < own.count; j += vec) {
    MlirValue idx = stage_index(L, &bf, low_coord(L, &own, j, 0), low_coord(L, &own, j, 1));
    copy_vector(L, &bf, (int)vec, low_gep(L, base, idx, bf.elem), P, M, O, j, uniform);
  }
  return !L->failed;
}

bool low_async_commit(Low *L, MlirOperation op) {
  (void)op;
  commit_group(L);
  return true;
}

bool low_async_wait(Low *L, MlirOperation op) {
  wait_group(L, (int)kiln_gpu_int_attr(op, "pending", 0));
  /* this thread's copies are done; wgmma reads them through the async proxy */
  if (L->wgmma_bufs) low_asm_effects(L, KILN_GPU_FENCE_PROXY_ASYNC_PTX, "", NULL, 0, NULL, 0);
  return true;
}

/* A tf32 operand's fragments (f32 bits; low_dot_mma rounds them).  The staging's rows are k
 * when A is staged transposed or read with `transpose` (A = x^T, x rows k), or B is staged as it
 * is (rows k): 32-bit gathers; otherwise k is contiguous (A as it is; B transposed, or B = x^T
 * with x rows n): the ldmatrix reads of the b16 view, 2 cols halves a row. */
static void tf32_fragments(Low *L, const KilnGpuLayout *dl, const KilnGpuBuffer *bf, bool transpose,
                           MlirValue base, Vals *out) {
  /* the staging as it lies in memory: prow rows of pcol f32 */
  int64_t prow = bf->enc.trans ? bf->cols : bf->rows, pcol = bf->enc.trans ? bf->rows : bf->cols;
  bool k_contiguous = dl->op_idx == 0 ? !bf->enc.trans && !transpose : bf->enc.trans || transpose;
  if (k_contiguous && dl->op_idx == 0)
    low_dot_fragments(L, dl, base, prow, 2 * pcol, out);
  else if (k_contiguous)
    low_dot_fragments_bt(L, dl, base, prow, 2 * pcol, out);
  else
    low_dot_fragments_tf32_gather(L, dl, base, prow, pcol, out);
}

bool low_local_load(Low *L, MlirOperation op) {
  MlirValue buf = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  KilnGpuBuffer bf;
  if (!buffer_of(L, buf, &bf)) return false;
  KilnGpuLayout dl = kiln_gpu_layout_of_type(mlirValueGetType(res));
  if (dl.kind != KILN_GPU_LAYOUT_DOT_OP && !bf.enc.fma) {
    low_error(L, "GPU lowering: kiln.local_load yields a dot operand layout");
    return false;
  }
  MlirValue base = slot_base(L, buf, &bf, low_get(L, mlirOperationGetOperand(op, 1))->v[0]);
  /* the dot reads it from its first byte: by descriptors (lower_wgmma.c), or element by element
   * on the FMA path (lower_shared.c) */
  if (bf.enc.wgmma || bf.enc.fma) {
    Vals *p = low_vals(L, 1);
    p->v[0] = base;
    low_set(L, res, p);
    return true;
  }
  Vals *out = low_vals(L, kiln_gpu_own_of_type(mlirValueGetType(res)).count);
  bool transpose = !mlirAttributeIsNull(
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("transpose")));
  if (transpose && bf.enc.trans) {
    low_error(L, "GPU lowering: kiln.local_load {transpose} of a transposed staging");
    return false;
  }
  if (kiln_ir_elem_bits(bf.elem) == 8) {
    if (transpose) {
      low_error(L, "GPU lowering: kiln.local_load {transpose} of an i8 staging (not yet)");
      return false;
    }
    /* k contiguous (A as it is, B staged transposed): the b16 view's ldmatrix reads; m or n
     * contiguous (B as it is, A staged transposed): byte gathers */
    bool k_rows = dl.op_idx == 0 ? bf.enc.trans : !bf.enc.trans;
    if (!k_rows && dl.op_idx == 0)
      low_dot_fragments(L, &dl, base, bf.rows, bf.cols / 2, out);
    else if (!k_rows)
      low_dot_fragments_bt(L, &dl, base, bf.cols, bf.rows / 2, out);
    else
      low_dot_fragments_i8_gather(L, &dl, base, dl.op_idx == 0 ? bf.cols : bf.rows,
                                  dl.op_idx == 0 ? bf.rows : bf.cols, out);
    low_set(L, res, out);
    return true;
  }
  if (kiln_ir_elem_bits(bf.elem) == 32) {
    tf32_fragments(L, &dl, &bf, transpose, base, out);
    low_set(L, res, out);
    return true;
  }
  if (transpose && dl.op_idx == 0)
    low_dot_fragments_at(L, &dl, base, bf.rows, bf.cols, out);
  else if (transpose)
    low_dot_fragments_bt(L, &dl, base, bf.rows, bf.cols, out);
  else if (!bf.enc.trans)
    low_dot_fragments(L, &dl, base, bf.rows, bf.cols, out);
  else if (dl.op_idx == 0)
    fragments_a_trans(L, &dl, base, bf.rows, bf.cols, out);
  else
    fragments_b_trans(L, &dl, base, bf.rows, bf.cols, out);
  low_set(L, res, out);
  return true;
}
