/* lower_pipeline.c - software pipelining: the loads that feed a tensor-core dot inside a loop are
 * issued num_stages - 1 iterations ahead with cp.async, into a ring of shared-memory buffers.
 *
 * Why: without it every iteration waits for its global loads before the mma work can start;
 * with S stages, S - 1 iterations of loads are in flight while the tensor cores run.
 *
 * What qualifies (low_pipe_plan).  A kiln.load directly in the loop body whose only user is a
 * convert_layout to a dot_op layout in the same block (so the tile goes to shared memory
 * anyway), of f16/bf16, whose vector width is 4, 8 or 16 bytes (cp.async's sizes).  A tile
 * contiguous along its last dim is staged as it is (rows of the staged tile are contiguous in
 * shared memory); one contiguous along dim 0 (a column-major operand: the k-major weight of
 * y = x W^T, the m-major X^T of dW) is staged transposed, so the copies stay 16-byte vectors,
 * and its fragments are read with the other ldmatrix form (plain for B, .trans for A);
 * its pointer, mask and `other` must be computable for a future iteration: their definitions
 * inside the body form a slice of pure ops (arith, splat, broadcast, expand_dims, addptr, range)
 * over the induction variable and values from outside the loop.  Loops that store or update
 * memory are left alone (a prefetch could read what an earlier iteration has yet to write).
 *
 * The schedule, with D = S - 1 and buffer b(i) = i mod S for iteration i:
 *   prologue: for s < D: if iteration s exists, copy its tiles into buffer s; commit a group
 *   body i:   at the first pipelined convert: wait until at most D - 1 groups are pending (so
 *             iteration i's group is done), barrier (every thread is past iteration i - 1, so
 *             buffer b(i + D) = b(i - 1) is free), copy iteration i + D's tiles into it if that
 *             iteration exists, commit (an empty group otherwise: the counting stays uniform);
 *             every pipelined convert then reads its fragments from buffer b(i) with ldmatrix
 *   after:    wait for every group and barrier before the arena is used again.
 * A copy is one cp.async per vector when the vector's mask is all true; otherwise each element
 * is loaded under its own mask (yielding `other`) and stored to shared memory (tile edges).
 * The staged tile uses the swizzle of lower_dot.c; a vector never crosses a 16-byte chunk.
 * The ring is budgeted against the target's shared-memory limit (kiln.smem_limit: 227 KiB on
 * sm_90, 163 KiB on sm_80), not the 48 KiB of a static array: a ring that does not fit is an
 * error naming the limit, so that num_stages is always what it says. */
#include "lower.h"

#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <string.h>

#define PIPE_MAX_LOADS 4
#define PIPE_MAX_SLICE 256

typedef struct PipeLoad {
  MlirOperation load, cvt;
  int64_t rows, cols;
  bool trans;    /* contiguous along dim 0: staged transposed (see stage_index) */
  int64_t off;   /* byte offset of this load's buffer in stage 0, from the ring's base */
  int vec;       /* elements per cp.async */
  MlirType et;
} PipeLoad;

struct LowPipe {
  MlirOperation loop;
  MlirValue old_iv;
  int stages;
  PipeLoad loads[PIPE_MAX_LOADS];
  int n;
  MlirOperation slice[PIPE_MAX_SLICE]; /* ops to lower again for a future iteration, in order */
  int nslice;
  int64_t stage_bytes; /* one stage of every load */
  int64_t base;        /* absolute arena offset of the ring */
  MlirValue lo, hi, st, iv, cur; /* lowered bounds; the new loop's iv; b(i) */
  bool issued;         /* this iteration's wait and prefetch are emitted */
  int64_t saved_base;
  LowPipe *outer;
};

/* ---------------------------------------------------------------- planning */

static bool in_block(MlirOperation op, MlirBlock b) {
  return mlirBlockEqual(mlirOperationGetBlock(op), b);
}

static bool slice_has(const LowPipe *p, MlirOperation op) {
  for (int i = 0; i < p->nslice; i++)
    if (mlirOperationEqual(p->slice[i], op))
      return true;
  return false;
}

static bool pure_slice_op(MlirOperation op) {
  if (mlirOperationGetNumRegions(op) != 0 || mlirOperationGetNumResults(op) != 1)
    return false;
  switch (kiln_ir_op_id(op)) {
  case KILN_OP_SPLAT:
  case KILN_OP_BROADCAST:
  case KILN_OP_EXPAND_DIMS:
  case KILN_OP_ADDPTR:
  case KILN_OP_RANGE: return true;
  default: break;
  }
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  return name.length > 6 && memcmp(name.data, "arith.", 6) == 0;
}

/* Adds the body ops v depends on to p's slice (unordered for now); false when v depends on
 * something a future iteration cannot recompute. */
static bool collect_slice(LowPipe *p, MlirBlock body, MlirValue v, int depth) {
  if (depth > 64)
    return false;
  if (mlirValueIsABlockArgument(v)) {
    if (!mlirBlockEqual(mlirBlockArgumentGetOwner(v), body))
      return true; /* from outside the loop */
    return mlirBlockArgumentGetArgNumber(v) == 0; /* the iv; iter args are not known ahead */
  }
  MlirOperation def = mlirOpResultGetOwner(v);
  if (!in_block(def, body)) {
    /* Defined outside the loop, or in a region nested in the body (not visible here). */
    return true;
  }
  if (slice_has(p, def))
    return true;
  if (!pure_slice_op(def) || p->nslice == PIPE_MAX_SLICE)
    return false;
  p->slice[p->nslice++] = def;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(def); i++)
    if (!collect_slice(p, body, mlirOperationGetOperand(def, i), depth + 1))
      return false;
  return true;
}

static bool writes_memory(MlirOperation op) {
  KilnOpId id = kiln_ir_op_id(op);
  if (id == KILN_OP_STORE || id == KILN_OP_ATOMIC_RMW || id == KILN_OP_ATOMIC_CAS)
    return true;
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); r++)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
           o = mlirOperationGetNextInBlock(o))
        if (writes_memory(o))
          return true;
  return false;
}

/* The convert to a dot_op layout that is the load's only user, or null. */
static MlirOperation dot_operand_user(MlirOperation load, MlirBlock body) {
  MlirValue res = mlirOperationGetResult(load, 0);
  MlirOpOperand u = mlirValueGetFirstUse(res);
  if (mlirOpOperandIsNull(u) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(u)))
    return (MlirOperation){NULL};
  MlirOperation user = mlirOpOperandGetOwner(u);
  if (kiln_ir_op_id(user) != KILN_OP_CONVERT_LAYOUT || !in_block(user, body) ||
      kiln_gpu_layout_of_type(mlirValueGetType(mlirOperationGetResult(user, 0))).kind !=
          KILN_GPU_LAYOUT_DOT_OP)
    return (MlirOperation){NULL};
  return user;
}

/* Whether load qualifies; fills *pl (but not its offset) and grows p's slice. */
static bool plan_load(Low *L, LowPipe *p, MlirBlock body, MlirOperation load, PipeLoad *pl) {
  MlirOperation cvt = dot_operand_user(load, body);
  if (mlirOperationIsNull(cvt))
    return false;
  MlirType rt = mlirValueGetType(mlirOperationGetResult(load, 0));
  MlirType et = kiln_ir_elem_type(rt);
  if (kiln_ir_rank(rt) != 2 || !(mlirTypeIsAF16(et) || mlirTypeIsABF16(et)))
    return false;
  KilnGpuOwn own = low_own_of(rt);
  bool trans = own.order[0] == 0;
  int64_t contiguous_extent = kiln_ir_dim(rt, trans ? 0 : 1);
  if (contiguous_extent < 8 || (trans && kiln_ir_dim(rt, 1) < 8))
    return false; /* a staged row must hold whole 16-byte chunks (the swizzle's unit) */
  int vec = low_vector_width(L, mlirOperationGetOperand(load, 0), &own);
  if (vec < 2 || vec > 8)
    return false;
  int keep = p->nslice;
  for (intptr_t i = 0; i < 3; i++)
    if (!collect_slice(p, body, mlirOperationGetOperand(load, i), 0)) {
      p->nslice = keep;
      return false;
    }
  *pl = (PipeLoad){.load = load, .cvt = cvt, .rows = kiln_ir_dim(rt, 0),
                   .cols = kiln_ir_dim(rt, 1), .trans = trans, .vec = vec, .et = et};
  return true;
}

/* The slice in the body's order, so each op is lowered after its operands. */
static void order_slice(LowPipe *p, MlirBlock body) {
  MlirOperation sorted[PIPE_MAX_SLICE];
  int n = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    if (slice_has(p, o))
      sorted[n++] = o;
  memcpy(p->slice, sorted, (size_t)n * sizeof *sorted);
  p->nslice = n;
}

LowPipe *low_pipe_plan(Low *L, MlirOperation for_op) {
  if (L->num_stages < 2 || writes_memory(for_op))
    return NULL;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(for_op, 0));
  MlirType ivt = mlirValueGetType(mlirBlockGetArgument(body, 0));
  if (!mlirTypeIsAInteger(ivt) || mlirIntegerTypeGetWidth(ivt) != 32)
    return NULL; /* the schedule's arithmetic is in i32 */
  LowPipe *p = low_alloc(L, sizeof *p);
  for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o) && p->n < PIPE_MAX_LOADS;
       o = mlirOperationGetNextInBlock(o)) {
    if (kiln_ir_op_id(o) != KILN_OP_LOAD)
      continue;
    PipeLoad pl;
    if (plan_load(L, p, body, o, &pl))
      p->loads[p->n++] = pl;
  }
  if (p->n == 0)
    return NULL;
  order_slice(p, body);
  for (int i = 0; i < p->n; i++) {
    p->loads[i].off = p->stage_bytes;
    p->stage_bytes += (p->loads[i].rows * p->loads[i].cols * 2 + 127) / 128 * 128;
  }
  /* The ring takes what num_stages says or the kernel does not compile: a silently shallower
   * pipeline would time as another config than the one asked for.  Above 48 KiB the arena
   * becomes dynamic shared memory (lower.c); the target's limit is the real bound. */
  p->stages = L->num_stages;
  int64_t ring = p->stages * p->stage_bytes;
  if (L->smem_base + ring > L->smem_limit) {
    low_error(L, "limit: shared memory: the %d-stage pipeline of this loop needs %d x %lld = "
                 "%lld bytes, more than the %lld a program may have on this target (fewer "
                 "num_stages or smaller tiles)",
              p->stages, p->stages, (long long)p->stage_bytes, (long long)ring,
              (long long)(L->smem_limit - L->smem_base));
    return NULL;
  }
  p->loop = for_op;
  p->old_iv = mlirBlockGetArgument(body, 0);
  p->base = L->smem_base;
  p->lo = low_get(L, mlirOperationGetOperand(for_op, 0))->v[0];
  p->hi = low_get(L, mlirOperationGetOperand(for_op, 1))->v[0];
  p->st = low_get(L, mlirOperationGetOperand(for_op, 2))->v[0];
  return p;
}

bool low_pipe_owns_load(const Low *L, MlirOperation load) {
  if (!L->pipe)
    return false;
  for (int i = 0; i < L->pipe->n; i++)
    if (mlirOperationEqual(L->pipe->loads[i].load, load))
      return true;
  return false;
}

/* ---------------------------------------------------------------- copies */

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

static void commit_group(Low *L) { low_op(L, "nvvm.cp.async.commit.group", NULL, 0, NULL, 0, NULL, 0); }

static void wait_group(Low *L, int n) {
  MlirNamedAttribute a = kiln_ir_named(L->ctx, "n", kiln_ir_attr_i32(L->ctx, n));
  low_op(L, "nvvm.cp.async.wait.group", NULL, 0, NULL, 0, &a, 1);
}

/* Buffer `buf` (an i32 value) of load pl: a pointer to its first element. */
static MlirValue buffer(Low *L, const LowPipe *p, const PipeLoad *pl, MlirValue buf) {
  MlirValue ring = low_smem_at(L, p->base + pl->off, p->base + p->stages * p->stage_bytes);
  MlirValue at = low_bin(L, "arith.muli", buf, low_i32(L, p->stage_bytes));
  return low_gep(L, ring, at, L->i8);
}

/* One vector of the tile: cp.async when its whole mask holds, else element by element. */
static void copy_vector(Low *L, const PipeLoad *pl, MlirValue dst, const Vals *P, const Vals *M,
                        const Vals *O, int64_t j) {
  int v = pl->vec;
  MlirValue m[8];
  for (int e = 0; e < v; e++)
    m[e] = M->v[M->n == 1 ? 0 : j + e];
  MlirValue all = low_all_true(L, m, v);
  if (mlirValueIsNull(all)) {
    cp_async(L, dst, P->v[j], v * 2);
    return;
  }
  KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, all, NULL, 0);
  KilnIRBuilder saved = L->b;
  kiln_ir_builder_set_end(&L->b, f.then_block);
  cp_async(L, dst, P->v[j], v * 2);
  kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
  kiln_ir_builder_set_end(&L->b, f.else_block);
  for (int e = 0; e < v; e++) {
    MlirValue x = low_load_masked(L, P->v[j + e], m[e], O->v[O->n == 1 ? 0 : j + e], pl->et, 2);
    MlirValue o[2] = {x, e ? low_gep(L, dst, low_i32(L, e), pl->et) : dst};
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
static MlirValue stage_index(Low *L, const PipeLoad *pl, MlirValue row, MlirValue col) {
  return pl->trans ? low_swizzle(L, col, row, pl->rows) : low_swizzle(L, row, col, pl->cols);
}

/* Copies load pl's tile, as lowered in the value map now, into buffer buf. */
static void copy_tile(Low *L, const LowPipe *p, const PipeLoad *pl, MlirValue buf) {
  MlirType rt = mlirValueGetType(mlirOperationGetResult(pl->load, 0));
  KilnGpuOwn own = low_own_of(rt);
  Vals *P = low_get(L, mlirOperationGetOperand(pl->load, 0));
  Vals *M = low_get(L, mlirOperationGetOperand(pl->load, 1));
  Vals *O = low_get(L, mlirOperationGetOperand(pl->load, 2));
  MlirValue base = buffer(L, p, pl, buf);
  for (int64_t j = 0; j < own.count; j += pl->vec) {
    MlirValue idx = stage_index(L, pl, low_coord(L, &own, j, 0), low_coord(L, &own, j, 1));
    copy_vector(L, pl, low_gep(L, base, idx, pl->et), P, M, O, j);
  }
}

/* If iteration `iv` (an i32 value) exists, lowers the slice for it and copies every pipelined
 * tile into buffer buf; the value map is left as it was. */
static void prefetch(Low *L, LowPipe *p, MlirValue iv, MlirValue buf) {
  MlirLocation loc = L->loc;
  MlirValue exists = low_cmpi(L, "slt", iv, p->hi);
  KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, exists, NULL, 0);
  KilnIRBuilder saved = L->b;
  kiln_ir_builder_set_end(&L->b, f.then_block);
  /* Re-lowering overwrites map entries; remember them (the iv's and each slice result's). */
  const void *keys[PIPE_MAX_SLICE + 1];
  void *olds[PIPE_MAX_SLICE + 1];
  int nk = 0;
  keys[nk] = p->old_iv.ptr;
  olds[nk++] = kiln_ptr_map_get(&L->vals, p->old_iv.ptr);
  Vals *ivv = low_vals(L, 1);
  ivv->v[0] = iv;
  low_set(L, p->old_iv, ivv);
  for (int i = 0; i < p->nslice && !L->failed; i++) {
    MlirValue r = mlirOperationGetResult(p->slice[i], 0);
    keys[nk] = r.ptr;
    olds[nk++] = kiln_ptr_map_get(&L->vals, r.ptr);
    low_lower_op(L, p->slice[i]);
  }
  L->loc = loc;
  for (int i = 0; i < p->n && !L->failed; i++)
    copy_tile(L, p, &p->loads[i], buf);
  for (int i = 0; i < nk; i++)
    kiln_ptr_map_put(&L->vals, keys[i], olds[i]);
  kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
  kiln_ir_builder_set_end(&L->b, f.else_block);
  kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
  L->b = saved;
}

/* ---------------------------------------------------------------- the schedule */

void low_pipe_prologue(Low *L, LowPipe *p) {
  /* Warps may still be reading the arena for an op before the loop. */
  low_barrier(L);
  for (int s = 0; s < p->stages - 1; s++) {
    MlirValue iv = s ? low_bin(L, "arith.addi", p->lo, low_bin(L, "arith.muli", p->st, low_i32(L, s)))
                     : p->lo;
    prefetch(L, p, iv, low_i32(L, s));
    commit_group(L);
  }
  p->outer = L->pipe;
  p->saved_base = L->smem_base;
}

void low_pipe_body_begin(Low *L, LowPipe *p, MlirValue new_iv) {
  p->iv = new_iv;
  p->issued = false;
  MlirValue it = low_bin(L, "arith.divsi", low_bin(L, "arith.subi", new_iv, p->lo), p->st);
  p->cur = low_bin(L, "arith.remsi", it, low_i32(L, p->stages));
  L->pipe = p;
  L->smem_base = p->base + p->stages * p->stage_bytes;
}

void low_pipe_end(Low *L, LowPipe *p) {
  wait_group(L, 0);
  low_barrier(L);
  L->pipe = p->outer;
  L->smem_base = p->saved_base;
}

/* This iteration's wait, barrier and prefetch of iteration i + D (see the top of the file). */
static void issue_ahead(Low *L, LowPipe *p) {
  int d = p->stages - 1;
  wait_group(L, d - 1);
  low_barrier(L);
  MlirValue ahead = low_bin(L, "arith.addi", p->iv, low_bin(L, "arith.muli", p->st, low_i32(L, d)));
  MlirValue buf = low_bin(L, "arith.remsi", low_bin(L, "arith.addi", p->cur, low_i32(L, d)),
                          low_i32(L, p->stages));
  prefetch(L, p, ahead, buf);
  commit_group(L);
  p->issued = true;
}

/* ---------------------------------------------------------------- fragments of transposed tiles */

/* ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16 at ptr; out[0..num-1] get the registers. */
static void pipe_ldmatrix(Low *L, MlirValue ptr, int num, bool trans, MlirValue *out) {
  MlirNamedAttribute a[2] = {
      kiln_ir_named(L->ctx, "num", kiln_ir_attr_i32(L->ctx, num)),
      kiln_ir_named(L->ctx, "layout", kiln_gpu_parse_attr(L->ctx, trans ? "#nvvm.mma_layout<col>"
                                                                          : "#nvvm.mma_layout<row>")),
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
  if (d == 0)
    return low_bin(L, "arith.remui", w, low_i32(L, l->wpc[0]));
  return low_bin(L, "arith.remui", low_bin(L, "arith.divui", w, low_i32(L, l->wpc[0])),
                 low_i32(L, l->wpc[1]));
}

/* The A fragments of a tile staged transposed (S[k][m], m contiguous): per 16x16 block one
 * ldmatrix.x4.trans.  Lane l addresses k row (l & 7) + 8 (l >> 4) at m column 8 ((l >> 3) & 1)
 * of the block, so the four 8x8 matrices are (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15),
 * (m 8-15, k 8-15): transposed, each gives a0, a1, a2, a3 of the PTX ISA's m16n8k16 A fragment
 * (register r = A[g + 8 (r & 1)][2t + 8 (r >> 1) .. +1]). */
static void fragments_a_trans(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t m,
                              int64_t k, Vals *out) {
  MlirType f16 = mlirF16TypeGet(L->ctx);
  MlirValue lane = low_lane(L);
  MlirValue krow = low_bin(L, "arith.addi", low_bin(L, "arith.andi", lane, low_i32(L, 7)),
                           low_bin(L, "arith.shli", low_bin(L, "arith.shrui", lane, low_i32(L, 4)),
                                   low_i32(L, 3)));
  MlirValue mcol = low_bin(L, "arith.andi", low_bin(L, "arith.shrui", lane, low_i32(L, 3)), low_i32(L, 1));
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
static void fragments_b_trans(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t k,
                              int64_t n, Vals *out) {
  MlirType f16 = mlirF16TypeGet(L->ctx);
  MlirValue lane = low_lane(L);
  int wn = dl->wpc[1];
  int64_t rn = n / (8 * wn), kb = k / 16;
  MlirValue nrow = low_bin(L, "arith.addi", low_bin(L, "arith.andi", lane, low_i32(L, 7)),
                           low_bin(L, "arith.muli", pipe_warp_index(L, dl, 1), low_i32(L, 8)));
  MlirValue next = low_bin(L, "arith.muli", low_bin(L, "arith.shrui", lane, low_i32(L, 4)),
                           low_i32(L, 8 * wn));
  MlirValue kcol = low_bin(L, "arith.shli",
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

bool low_pipe_operand(Low *L, MlirOperation cvt) {
  LowPipe *p = L->pipe;
  if (!p)
    return false;
  const PipeLoad *pl = NULL;
  for (int i = 0; i < p->n && !pl; i++)
    if (mlirOperationEqual(p->loads[i].cvt, cvt))
      pl = &p->loads[i];
  if (!pl)
    return false;
  if (!p->issued)
    issue_ahead(L, p);
  MlirValue res = mlirOperationGetResult(cvt, 0);
  KilnGpuLayout dl = kiln_gpu_layout_of_type(mlirValueGetType(res));
  Vals *out = low_vals(L, low_own_of(mlirValueGetType(res)).count);
  MlirValue base = buffer(L, p, pl, p->cur);
  if (!pl->trans)
    low_dot_fragments(L, &dl, base, pl->rows, pl->cols, out);
  else if (dl.op_idx == 0)
    fragments_a_trans(L, &dl, base, pl->rows, pl->cols, out);
  else
    fragments_b_trans(L, &dl, base, pl->rows, pl->cols, out);
  low_set(L, res, out);
  return true;
}
