/* pipeline_pass.c - kiln-gpu-pipeline: software pipelining as an IR rewrite.  The loads that
 * feed a tensor-core dot inside a loop become copies issued num_stages - 1 iterations ahead
 * (kiln.async_copy) into a ring of shared buffers (kiln.local_alloc), and their operand converts
 * become reads of the ring (kiln.local_load).
 *
 * Why as IR: the ring, the copies and the waits are then visible in --dump-after and to lit
 * tests, an allocator (smem_alloc.c) can place the buffers with liveness, and the SIMT lowering
 * lowers each op by itself (lower_local.c) instead of being steered by the pipeliner while it
 * lowers a loop.  Runs after kiln-gpu-convert-cse (it needs the layouts: the dot_op converts
 * and the vector widths of the blocked loads), before convert-kiln-gpu-to-llvm.
 *
 * What qualifies.  A kiln.load directly in an scf.for body whose every user (at most
 * PIPE_MAX_USES) is, in the same block, a convert_layout to a dot_op layout (the tile goes to
 * shared memory anyway) or a kiln.trans whose only user is such a convert (K of S = Q K^T: the
 * tile is staged as it is and local_load {transpose} reads the operand as its transpose, as the
 * operand staging of lower_dot.c does), of f16/bf16, f32 (a tf32 dot) or i8 (no trans view),
 * 2-D, whose vector width is 4, 8 or 16 bytes (cp.async's sizes;
 * 8 or 16 for f32).  A tile contiguous along its last dim is staged as it
 * is; one contiguous along dim 0 (a column-major operand) is staged transposed (the buffer's
 * encoding has order [0, 1]), so its copies stay 16-byte vectors.  Its pointer, mask and
 * `other` must be computable for a future iteration: their definitions inside the body form a
 * slice of pure ops (arith, splat, broadcast, expand_dims, addptr, range) over the induction
 * variable and values from outside the loop; the slice is cloned with the induction variable
 * replaced.  Loops that store or update memory are left alone (a prefetch could read what an
 * earlier iteration has yet to write).  At most 4 loads a loop; the induction variable is i32.
 *
 * A load whose one use is a or b of a dot on the FMA path (f32 without tf32, f64, small tiles:
 * its layouts blocked, no convert; directly or through a kiln.trans) is staged too, in a ring
 * of the `fma` encoding (shared.c): no swizzle, the operand's own rows (the tile as it is, or
 * transposed behind a view), which the dot reads in place (lower_shared.c) instead of staging
 * its registers through the arena with two barriers.  Its copies are vectors where the loaded
 * tile's contiguous dim is the staged row, else one element each (4 or 8 bytes; narrower
 * elements must be vectors).  Such rings are optional: one that would take the loop's rings
 * past three quarters of kiln.smem_limit (the rest is the arena's, which the dot's other
 * operand and the loop's converts use) is not made, and the load stays as it was.
 *
 * A load with several such users (the FA2 backward's Q and dO in dK/dV, each B of a dot through
 * a trans view and B of another as it is; K in dQ) is staged once: one ring, one async_copy an
 * iteration, and each of its converts becomes a local_load of the same slot ({transpose} for a
 * view).  The one wait and barrier before the body's first pipelined convert cover every later
 * read of slot b(i), and the allocator (smem_alloc.c) keeps a buffer live to the end of the loop
 * that holds its uses, however many they are.  The ring has one encoding, so its readers are
 * all of one kind (all or nothing, decided per ring before anything is marked):
 *   - every use is B of a dot the layout pass gave wgmma's layout (f16/bf16): the ring is a
 *     wgmma buffer (1024-aligned slots, 64-column panels) and each dot builds its descriptor
 *     for its own view of the one staged tile: through the trans view the staged rows are B's
 *     n rows (k-major, as the forward's K), as it is they are B's k rows (n-major, as the
 *     forward's V).  The FA2 backward's dots all read their staged loads as B (their A is
 *     hoisted or the previous dot's result), so its shared rings are of this kind;
 *   - otherwise every reader takes its fragments with ldmatrix from the one staged layout,
 *     which suits both forms; a wgmma dot whose B is such a ring goes back to mma.sync, and one
 *     whose A is reads A from the registers local_load fills (the RS form).
 *
 * The schedule, with S = kiln.num_stages, D = S - 1 and slot b(i) = i mod S for iteration i:
 *   before:  one local_alloc per load (S slots), a barrier (warps may still read the arena for
 *            an op before the loop), then for s < D: if iteration s exists (lb + s step < ub),
 *            copy its tiles into slot s; commit a group
 *   body i:  at the first pipelined convert: async_wait {pending = D - 1} (iteration i's group
 *            is complete), barrier (every thread is past iteration i - 1, so slot
 *            b(i + D) = b(i - 1) is free), the copies of iteration i + D into that slot if it
 *            exists, commit (an empty group otherwise: the counting stays uniform); each
 *            pipelined convert becomes local_load of slot b(i)
 *   after:   async_wait {pending = 0} and a barrier before the arena is used again.
 * The slots are two counters the loop carries (two more iter_args): the read slot b(i), from 0,
 * stepped by one and wrapped to 0 with a select at S; and the write slot b(i + D) = b(i - 1),
 * from D, which is the previous iteration's read slot, so it is carried as is.  Computing b(i)
 * from the induction variable instead costs a division by the step and a remainder by S (a
 * multiply-high and four more instructions) every iteration. */
#include "gpu_internal.h"

#include <string.h>

#define PIPE_MAX_LOADS 4
#define PIPE_MAX_USES  3 /* operand converts of one staged load */
#define PIPE_MAX_SLICE 256

/* One operand convert of a staged load: it becomes a local_load of the ring. */
typedef struct PipeUse {
  MlirOperation cvt;  /* the convert; for an FMA use, the dot itself */
  MlirOperation view; /* a kiln.trans between the load and the convert, or null */
  int operand;        /* an FMA use: the dot's operand it is (0 or 1); else -1 */
} PipeUse;

typedef struct PipeLoad {
  MlirOperation load;
  PipeUse uses[PIPE_MAX_USES];
  int nuse;
  bool trans; /* contiguous along dim 0: staged transposed */
  int vec;    /* elements per cp.async */
  bool wgmma; /* its dot reads it by wgmma descriptors (KilnGpuShared.wgmma) */
  bool fma;   /* its one use is an operand of a dot on the FMA path (KilnGpuShared.fma) */
  MlirValue buf;
} PipeLoad;

typedef struct Plan {
  MlirOperation loop;
  MlirBlock body;
  int stages;
  int dist; /* D: copies run D iterations ahead (S - 1; S - 2 with a wgmma group in flight) */
  MlirOperation async_dot; /* a wgmma dot that leaves its last group in flight, or null */
  PipeLoad loads[PIPE_MAX_LOADS];
  int n;
  int64_t ring_bytes; /* of the loads planned so far, every stage */
  int64_t fma_limit;  /* the most ring_bytes may reach with an FMA operand's ring */
  MlirOperation slice[PIPE_MAX_SLICE]; /* body ops to clone for a future iteration, in order */
  int nslice;
} Plan;

/* ---------------------------------------------------------------- what qualifies */

static bool in_block(MlirOperation op, MlirBlock b) {
  return mlirBlockEqual(mlirOperationGetBlock(op), b);
}

static bool slice_has(const Plan *p, MlirOperation op) {
  for (int i = 0; i < p->nslice; i++)
    if (mlirOperationEqual(p->slice[i], op)) return true;
  return false;
}

static bool pure_slice_op(MlirOperation op) {
  if (mlirOperationGetNumRegions(op) != 0 || mlirOperationGetNumResults(op) != 1) return false;
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
static bool collect_slice(Plan *p, MlirValue v, int depth) {
  if (depth > 64) return false;
  if (mlirValueIsABlockArgument(v)) {
    if (!mlirBlockEqual(mlirBlockArgumentGetOwner(v), p->body))
      return true;                                /* from outside the loop */
    return mlirBlockArgumentGetArgNumber(v) == 0; /* the iv; iter args are not known ahead */
  }
  MlirOperation def = mlirOpResultGetOwner(v);
  if (!in_block(def, p->body))
    return true; /* defined outside the loop, or nested in the body (not visible here) */
  if (slice_has(p, def)) return true;
  if (!pure_slice_op(def) || p->nslice == PIPE_MAX_SLICE) return false;
  p->slice[p->nslice++] = def;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(def); i++)
    if (!collect_slice(p, mlirOperationGetOperand(def, i), depth + 1)) return false;
  return true;
}

static bool writes_memory(MlirOperation op) {
  KilnOpId id = kiln_ir_op_id(op);
  if (id == KILN_OP_STORE || id == KILN_OP_ATOMIC_RMW || id == KILN_OP_ATOMIC_CAS) return true;
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); r++)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
           o = mlirOperationGetNextInBlock(o))
        if (writes_memory(o)) return true;
  return false;
}

/* The only user of v when it is in `body`, else null. */
static MlirOperation only_user(MlirValue v, MlirBlock body) {
  MlirOpOperand u = mlirValueGetFirstUse(v);
  if (mlirOpOperandIsNull(u) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(u)) ||
      !in_block(mlirOpOperandGetOwner(u), body))
    return (MlirOperation){NULL};
  return mlirOpOperandGetOwner(u);
}

static bool is_dot_operand_convert(MlirOperation op) {
  return !mlirOperationIsNull(op) && kiln_ir_op_id(op) == KILN_OP_CONVERT_LAYOUT &&
         kiln_gpu_layout_of_type(mlirValueGetType(mlirOperationGetResult(op, 0))).kind ==
             KILN_GPU_LAYOUT_DOT_OP;
}

/* Whether `user` of a load, in `body`, is a convert to a dot_op layout or a kiln.trans whose
 * only user is one (K in S = Q K^T); fills *u. */
static bool dot_operand_use(MlirOperation user, MlirBlock body, PipeUse *u) {
  *u = (PipeUse){.cvt = user};
  if (!in_block(user, body)) return false;
  if (kiln_ir_op_id(user) == KILN_OP_TRANS) {
    u->view = user;
    u->cvt = only_user(mlirOperationGetResult(user, 0), body);
  }
  return is_dot_operand_convert(u->cvt);
}

/* Whether the load's only use is a or b of a dot on the FMA path (its result blocked, not
 * mma), directly or through a kiln.trans whose only user is that dot; fills pl's one use. */
static bool fma_operand_use(MlirOperation load, MlirBlock body, PipeLoad *pl) {
  MlirValue v = mlirOperationGetResult(load, 0);
  MlirOperation user = only_user(v, body), view = {NULL};
  if (!mlirOperationIsNull(user) && kiln_ir_op_id(user) == KILN_OP_TRANS) {
    view = user;
    v = mlirOperationGetResult(view, 0);
    user = only_user(v, body);
  }
  if (mlirOperationIsNull(user) || kiln_ir_op_id(user) != KILN_OP_DOT ||
      kiln_gpu_layout_of_type(mlirValueGetType(mlirOperationGetResult(user, 0))).kind ==
          KILN_GPU_LAYOUT_MMA)
    return false;
  int operand = (int)mlirOpOperandGetOperandNumber(mlirValueGetFirstUse(v));
  if (operand > 1) return false; /* the accumulator is not staged */
  pl->uses[0] = (PipeUse){.cvt = user, .view = view, .operand = operand};
  pl->nuse = 1;
  pl->fma = true;
  return true;
}

/* Whether every user of the load is an operand convert (dot_operand_use), at most
 * PIPE_MAX_USES of them; fills pl's uses. */
static bool dot_operand_uses(MlirOperation load, MlirBlock body, PipeLoad *pl) {
  pl->nuse = 0;
  for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(load, 0));
       !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u)) {
    if (pl->nuse == PIPE_MAX_USES ||
        !dot_operand_use(mlirOpOperandGetOwner(u), body, &pl->uses[pl->nuse]))
      return false;
    pl->uses[pl->nuse++].operand = -1;
  }
  return pl->nuse > 0;
}

static bool has_view(const PipeLoad *pl) {
  for (int i = 0; i < pl->nuse; i++)
    if (!mlirOperationIsNull(pl->uses[i].view)) return true;
  return false;
}

/* The slice of the load's pointer, mask and other added to p's; false (and p's slice as it
 * was) when a future iteration cannot compute them. */
static bool slice_load(Plan *p, MlirOperation load) {
  int keep = p->nslice;
  for (intptr_t i = 0; i < 3; i++)
    if (!collect_slice(p, mlirOperationGetOperand(load, i), 0)) {
      p->nslice = keep;
      return false;
    }
  return true;
}

/* The bytes of a ring of p's stages for tiles of type t (a slot rounded up to 128 bytes). */
static int64_t ring_bytes(const Plan *p, MlirType t) {
  int64_t slot = kiln_ir_type_numel(t) * kiln_ir_elem_bytes(kiln_ir_elem_type(t));
  return p->stages * ((slot + 127) / 128 * 128);
}

/* An FMA operand's staging: the operand's own rows, so the tile as it is or (behind a view)
 * transposed.  Copies are vectors where the loaded tile's contiguous dim is the staged row,
 * else one element each (4 or 8 bytes: cp.async has nothing smaller), scattered. */
static bool plan_fma_load(const KilnAxisMap *axis, Plan *p, PipeLoad *pl) {
  MlirType rt = mlirValueGetType(mlirOperationGetResult(pl->load, 0));
  int64_t bytes = kiln_ir_elem_bytes(kiln_ir_elem_type(rt));
  if (kiln_ir_rank(rt) != 2 || kiln_ir_elem_bits(kiln_ir_elem_type(rt)) < 8) return false;
  KilnGpuOwn own = kiln_gpu_own_of_type(rt);
  pl->trans = !mlirOperationIsNull(pl->uses[0].view);
  int staged_row_dim = pl->trans ? 0 : 1;
  pl->vec = own.order[0] == staged_row_dim
                ? kiln_gpu_access_vec(axis, mlirOperationGetOperand(pl->load, 0), &own)
                : 1;
  int64_t copy = pl->vec * bytes;
  if (copy != 4 && copy != 8 && copy != 16) return false;
  if (p->ring_bytes + ring_bytes(p, rt) > p->fma_limit) return false;
  return slice_load(p, pl->load);
}

/* Whether load qualifies; fills *pl and grows p's slice. */
static bool plan_load(const KilnAxisMap *axis, Plan *p, MlirOperation load, PipeLoad *pl) {
  *pl = (PipeLoad){.load = load};
  if (fma_operand_use(load, p->body, pl)) return plan_fma_load(axis, p, pl);
  if (!dot_operand_uses(load, p->body, pl)) return false;
  MlirType rt = mlirValueGetType(mlirOperationGetResult(load, 0));
  MlirType et = kiln_ir_elem_type(rt);
  bool i8 = mlirTypeIsAInteger(et) && mlirIntegerTypeGetWidth(et) == 8;
  /* f32: only a tf32 dot's operand has a dot_op layout */
  if (kiln_ir_rank(rt) != 2 ||
      !(mlirTypeIsAF16(et) || mlirTypeIsABF16(et) || i8 || mlirTypeIsAF32(et)))
    return false;
  int chunk = (int)(16 / kiln_ir_elem_bytes(et)); /* elements in 16 bytes */
  KilnGpuOwn own = kiln_gpu_own_of_type(rt);
  bool trans = own.order[0] == 0;
  int64_t contiguous_extent = kiln_ir_dim(rt, trans ? 0 : 1);
  if (contiguous_extent < chunk || (trans && kiln_ir_dim(rt, 1) < chunk))
    return false; /* a staged row must hold whole 16-byte chunks (the swizzle's unit) */
  if ((trans || i8) && has_view(pl))
    return false; /* the transpose of a column-major or i8 tile: not yet */
  int vec = kiln_gpu_access_vec(axis, mlirOperationGetOperand(load, 0), &own);
  if (vec < chunk / 4 || vec > chunk) return false; /* cp.async of 4, 8 or 16 bytes */
  /* f32 (tf32): a copy of one element is a cp.async, its address and its zero-fill per element,
   * and the ring keeps the tile as it lies (B n-major read by 32-bit loads); staged through
   * registers the tile is k-contiguous (ldmatrix) and the loop smaller (the BERT gemm's generic
   * copy at 128x128x32: 439 instructions and 222 registers against 637 and 44 bytes of spills) */
  if (mlirTypeIsAF32(et) && vec < 2) return false;
  if (!slice_load(p, load)) return false;
  pl->trans = trans;
  pl->vec = vec;
  return true;
}

/* The slice in the body's order, so each clone comes after its operands' clones. */
static void order_slice(Plan *p) {
  MlirOperation sorted[PIPE_MAX_SLICE];
  int n = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(p->body); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    if (slice_has(p, o)) sorted[n++] = o;
  memcpy(p->slice, sorted, (size_t)n * sizeof *sorted);
  p->nslice = n;
}

/* The planned load one of whose operand converts yields v, or -1; with a kiln.trans view between
 * them only when `view_ok`, and only a load of one use when `single` (a descriptor reads A only
 * from a ring of its own; the header comment). */
static int load_feeding(const Plan *p, MlirValue v, bool view_ok, bool single) {
  for (int i = 0; i < p->n; i++) {
    const PipeLoad *pl = &p->loads[i];
    if ((single && pl->nuse != 1) || pl->fma) continue;
    for (int u = 0; u < pl->nuse; u++)
      if (mlirValueEqual(mlirOperationGetResult(pl->uses[u].cvt, 0), v) &&
          (view_ok || mlirOperationIsNull(pl->uses[u].view)))
        return i;
  }
  return -1;
}

static bool marked_wgmma(MlirOperation dot) {
  return !mlirAttributeIsNull(mlirOperationGetAttributeByName(
      dot, mlirStringRefCreateFromCString(KILN_GPU_WGMMA_DOT_ATTR)));
}

/* Whether the only user of an operand convert's result is a dot the layout pass marked for
 * wgmma, reading it as B. */
static bool wgmma_b_use(MlirOperation cvt) {
  MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(cvt, 0));
  if (mlirOpOperandIsNull(u) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(u))) return false;
  MlirOperation dot = mlirOpOperandGetOwner(u);
  return kiln_ir_op_id(dot) == KILN_OP_DOT && mlirOpOperandGetOperandNumber(u) == 1 &&
         marked_wgmma(dot);
}

/* Whether every reader of pl's ring would be a wgmma descriptor: each of its uses is B of a
 * wgmma dot (of f16/bf16), so one encoding suits them all.  A ring read once is its one dot's
 * question; a shared ring with any other reader (an ldmatrix one: A, or a dot on mma.sync) is
 * read by ldmatrix only, all of its readers together. */
static bool descriptors_only(const PipeLoad *pl) {
  if (pl->nuse == 1) return true;
  MlirType et = kiln_ir_elem_type(mlirValueGetType(mlirOperationGetResult(pl->load, 0)));
  if (!mlirTypeIsAF16(et) && !mlirTypeIsABF16(et)) return false;
  for (int u = 0; u < pl->nuse; u++)
    if (!wgmma_b_use(pl->uses[u].cvt)) return false;
  return true;
}

/* Whether the dot's only use is the loop's yield (the accumulator carried to the next
 * iteration): then nothing in the body reads it, and its last group may stay in flight. */
static bool yielded_only(MlirOperation dot, MlirBlock body) {
  MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(dot, 0));
  return !mlirOpOperandIsNull(u) && mlirOpOperandIsNull(mlirOpOperandGetNextUse(u)) &&
         mlirOperationEqual(mlirOpOperandGetOwner(u), mlirBlockGetTerminator(body));
}

/* A dot the layout pass gave wgmma's layout reads B by a descriptor, so B must be staged here
 * (in wgmma's panels; behind a kiln.trans view too: K^T of attention's S = Q K^T), in a ring
 * that only descriptors read (descriptors_only: a ring shared by several dots is staged for
 * wgmma when each of them reads it as B; the backward's Q and dO, and K); A is read by a
 * descriptor too when it is staged here in a ring of its own without a view, else from the
 * registers its fragments are in (wgmma's RS form: Q hoisted, P from the previous dot).
 * Otherwise the dot stays on mma.sync.  The decision for a shared ring needs no fixed point:
 * a dot loses its mark here only when its own B does not qualify, and B is one ring, so no
 * ring's other readers change.  Only a dot with both operands in shared memory may leave its
 * group in flight: A's registers would have to outlive the iteration. */
static void plan_wgmma(Plan *p) {
  MlirStringRef attr = mlirStringRefCreateFromCString(KILN_GPU_WGMMA_DOT_ATTR);
  for (MlirOperation o = mlirBlockGetFirstOperation(p->body); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o)) {
    if (kiln_ir_op_id(o) != KILN_OP_DOT || !marked_wgmma(o)) continue;
    int a = load_feeding(p, mlirOperationGetOperand(o, 0), false, true);
    int b = load_feeding(p, mlirOperationGetOperand(o, 1), true, false);
    /* tf32: no RS form, A is staged too or the dot stays on mma.sync */
    bool f32 = mlirTypeIsAF32(kiln_ir_elem_type(mlirValueGetType(mlirOperationGetOperand(o, 0))));
    if (b < 0 || !descriptors_only(&p->loads[b]) || (f32 && a < 0)) {
      mlirOperationRemoveAttributeByName(o, attr);
      continue;
    }
    p->loads[b].wgmma = true;
    if (a < 0) continue; /* A from registers */
    p->loads[a].wgmma = true;
    if (p->stages >= 4 && mlirOperationIsNull(p->async_dot) && yielded_only(o, p->body))
      p->async_dot = o;
  }
  /* One wgmma group in flight across iterations: the copies of iteration i + D go to the slot
   * that iteration i - 2 read (its group is retired by iteration i - 1's wait_group 1), so the
   * ring has one stage more than the copies run ahead. */
  if (!mlirOperationIsNull(p->async_dot)) {
    p->dist = p->stages - 2;
    mlirOperationSetAttributeByName(p->async_dot,
                                    mlirStringRefCreateFromCString(KILN_GPU_WGMMA_PENDING_ATTR),
                                    mlirUnitAttrGet(mlirOperationGetContext(p->async_dot)));
  }
}

static bool plan_loop(const KilnAxisMap *axis, MlirOperation loop, int stages, int64_t smem_limit,
                      Plan *p) {
  memset(p, 0, sizeof *p);
  if (stages < 2 || writes_memory(loop)) return false;
  p->loop = loop;
  p->fma_limit = smem_limit / 4 * 3;
  p->body = mlirRegionGetFirstBlock(mlirOperationGetRegion(loop, 0));
  p->stages = stages;
  p->dist = stages - 1;
  MlirType ivt = mlirValueGetType(mlirBlockGetArgument(p->body, 0));
  if (!mlirTypeIsAInteger(ivt) || mlirIntegerTypeGetWidth(ivt) != 32)
    return false; /* the schedule's arithmetic is in i32 */
  for (MlirOperation o = mlirBlockGetFirstOperation(p->body);
       !mlirOperationIsNull(o) && p->n < PIPE_MAX_LOADS; o = mlirOperationGetNextInBlock(o)) {
    PipeLoad pl;
    if (kiln_ir_op_id(o) != KILN_OP_LOAD || !plan_load(axis, p, o, &pl)) continue;
    p->loads[p->n++] = pl;
    p->ring_bytes += ring_bytes(p, mlirValueGetType(mlirOperationGetResult(o, 0)));
  }
  if (p->n == 0) return false;
  order_slice(p);
  plan_wgmma(p);
  return true;
}

/* ---------------------------------------------------------------- the rewrite */

typedef struct Rw {
  MlirContext ctx;
  MlirLocation loc; /* the loop's: every op the schedule adds */
  MlirType i32;
  KilnIRBuilder b;
  MlirValue lo, hi, st, iv; /* the loop's bounds and induction variable */
  MlirValue rd, wr;         /* the carried slots: b(i) read, b(i + D) written */
} Rw;

static MlirValue cst(Rw *w, int64_t v) { return kiln_ir_build_const_int(&w->b, w->loc, w->i32, v); }

static MlirValue bin(Rw *w, const char *name, MlirValue x, MlirValue y) {
  MlirValue o[2] = {x, y};
  return kiln_ir_build_elementwise(&w->b, w->loc, name, o, 2, w->i32);
}

static void bare_op(Rw *w, const char *name, const MlirNamedAttribute *a, size_t na) {
  kiln_ir_make(&w->b, w->loc, name, NULL, 0, NULL, 0, a, na);
}

static void async_wait(Rw *w, int pending) {
  MlirNamedAttribute a = kiln_ir_named(w->ctx, "pending", kiln_ir_attr_i32(w->ctx, pending));
  bare_op(w, KILN_OP_NAME_ASYNC_WAIT, &a, 1);
}

static MlirValue mapped(KilnPtrMap *m, MlirValue v) {
  void *n = kiln_ptr_map_get(m, v.ptr);
  return n ? (MlirValue){n} : v;
}

/* If iteration `iv` exists, the slice cloned for it and the copies of every pipelined tile into
 * `slot`, under one scf.if. */
static void prefetch(Rw *w, const Plan *p, MlirValue iv, MlirValue slot) {
  MlirValue exists = kiln_ir_build_cmpi(&w->b, w->loc, "slt", iv, w->hi);
  KilnIRIf f = kiln_ir_build_if(&w->b, w->loc, exists, NULL, 0);
  KilnIRBuilder saved = w->b;
  kiln_ir_builder_set_end(&w->b, f.then_block);
  KilnPtrMap map = {0};
  kiln_ptr_map_put(&map, w->iv.ptr, (void *)iv.ptr);
  for (int i = 0; i < p->nslice; i++) {
    MlirOperation c = mlirOperationClone(p->slice[i]);
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(c); k++)
      mlirOperationSetOperand(c, k, mapped(&map, mlirOperationGetOperand(c, k)));
    kiln_ir_builder_insert(&w->b, c);
    kiln_ptr_map_put(&map, mlirOperationGetResult(p->slice[i], 0).ptr,
                     (void *)mlirOperationGetResult(c, 0).ptr);
  }
  for (int i = 0; i < p->n; i++) {
    const PipeLoad *pl = &p->loads[i];
    MlirValue ops[5] = {pl->buf, slot, mapped(&map, mlirOperationGetOperand(pl->load, 0)),
                        mapped(&map, mlirOperationGetOperand(pl->load, 1)),
                        mapped(&map, mlirOperationGetOperand(pl->load, 2))};
    MlirNamedAttribute a = kiln_ir_named(w->ctx, "vec", kiln_ir_attr_i32(w->ctx, pl->vec));
    kiln_ir_make(&w->b, w->loc, KILN_OP_NAME_ASYNC_COPY, ops, 5, NULL, 0, &a, 1);
  }
  kiln_ptr_map_free(&map);
  kiln_ir_build_yield(&w->b, w->loc, NULL, 0);
  kiln_ir_builder_set_end(&w->b, f.else_block);
  kiln_ir_build_yield(&w->b, w->loc, NULL, 0);
  w->b = saved;
}

/* Before the loop: the ring, a barrier, the copies of iterations 0 .. D - 1. */
static void prologue(Rw *w, Plan *p) {
  kiln_ir_builder_set_before(&w->b, p->loop);
  for (int i = 0; i < p->n; i++) {
    PipeLoad *pl = &p->loads[i];
    MlirType rt = mlirValueGetType(mlirOperationGetResult(pl->load, 0));
    KilnGpuReader reader = pl->fma     ? KILN_GPU_READ_FMA
                           : pl->wgmma ? KILN_GPU_READ_WGMMA
                                       : KILN_GPU_READ_LDMATRIX;
    MlirType bt = kiln_gpu_buffer_type(w->ctx, p->stages, kiln_ir_dim(rt, 0), kiln_ir_dim(rt, 1),
                                       kiln_ir_elem_type(rt), pl->trans, reader);
    pl->buf = kiln_ir_make1(&w->b, w->loc, KILN_OP_NAME_LOCAL_ALLOC, NULL, 0, bt, NULL, 0);
  }
  bare_op(w, KILN_OP_NAME_BARRIER, NULL, 0);
  for (int s = 0; s < p->dist; s++) {
    MlirValue iv = s ? bin(w, "arith.addi", w->lo, bin(w, "arith.muli", w->st, cst(w, s))) : w->lo;
    prefetch(w, p, iv, cst(w, s));
    bare_op(w, KILN_OP_NAME_ASYNC_COMMIT, NULL, 0);
  }
}

static MlirOperation first_convert(const Plan *p) {
  for (MlirOperation o = mlirBlockGetFirstOperation(p->body); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    for (int i = 0; i < p->n; i++)
      for (int u = 0; u < p->loads[i].nuse; u++)
        if (mlirOperationEqual(o, p->loads[i].uses[u].cvt)) return o;
  return (MlirOperation){NULL};
}

static bool unused(MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++)
    if (!mlirOpOperandIsNull(mlirValueGetFirstUse(mlirOperationGetResult(op, i)))) return false;
  return true;
}

/* One operand convert of a staged tile replaced by a local_load of slot `slot` (behind a
 * kiln.trans, {transpose}: the operand is the staged tile's transpose); the view goes too. */
static void read_ring(Rw *w, MlirValue buf, MlirValue slot, const PipeUse *u) {
  if (u->operand >= 0) { /* an FMA dot's operand: the slot's base, read by the dot */
    bool view = !mlirOperationIsNull(u->view);
    MlirValue old = mlirOperationGetOperand(u->cvt, u->operand);
    kiln_ir_builder_set_before(&w->b, u->cvt);
    MlirValue ops[2] = {buf, slot};
    MlirValue ll = kiln_ir_make1(&w->b, mlirOperationGetLocation(u->cvt), KILN_OP_NAME_LOCAL_LOAD,
                                 ops, 2, mlirValueGetType(old), NULL, 0);
    mlirOperationSetOperand(u->cvt, u->operand, ll);
    if (view) mlirOperationDestroy(u->view);
    return;
  }
  MlirValue res = mlirOperationGetResult(u->cvt, 0);
  kiln_ir_builder_set_before(&w->b, u->cvt);
  MlirValue ops[2] = {buf, slot};
  MlirNamedAttribute tr = kiln_ir_named(w->ctx, "transpose", mlirUnitAttrGet(w->ctx));
  bool view = !mlirOperationIsNull(u->view);
  MlirValue ll = kiln_ir_make1(&w->b, mlirOperationGetLocation(u->cvt), KILN_OP_NAME_LOCAL_LOAD,
                               ops, 2, mlirValueGetType(res), &tr, view ? 1 : 0);
  mlirValueReplaceAllUsesOfWith(res, ll);
  mlirOperationDestroy(u->cvt);
  if (view) mlirOperationDestroy(u->view);
}

/* The body: slot b(i) at the top, the wait / barrier / copies of i + D / commit before the
 * first pipelined convert in the body's order (once for every ring: a later convert of the same
 * buffer reads the slot that wait made ready), each convert read from slot b(i); the loads and
 * the slice ops only they used are erased. */
static void body(Rw *w, Plan *p) {
  int d = p->dist;
  MlirValue cur = w->rd;
  kiln_ir_builder_set_before(&w->b, first_convert(p));
  async_wait(w, d - 1);
  bare_op(w, KILN_OP_NAME_BARRIER, NULL, 0);
  MlirValue ahead = bin(w, "arith.addi", w->iv, bin(w, "arith.muli", w->st, cst(w, d)));
  prefetch(w, p, ahead, w->wr);
  bare_op(w, KILN_OP_NAME_ASYNC_COMMIT, NULL, 0);
  for (int i = 0; i < p->n; i++) {
    PipeLoad *pl = &p->loads[i];
    for (int u = 0; u < pl->nuse; u++) read_ring(w, pl->buf, cur, &pl->uses[u]);
    mlirOperationDestroy(pl->load);
  }
  for (int i = p->nslice - 1; i >= 0; i--)
    if (unused(p->slice[i])) mlirOperationDestroy(p->slice[i]);
}

/* After the loop, the in-flight wgmma group's accumulator: the loop's result that carries the
 * dot, through kiln.wgmma_wait {pending = 0} for every later use. */
static void retire_async_dot(Rw *w, const Plan *p) {
  MlirOperation yield = mlirBlockGetTerminator(p->body);
  MlirValue acc = mlirOperationGetResult(p->async_dot, 0);
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(yield); i++) {
    if (!mlirValueEqual(mlirOperationGetOperand(yield, i), acc)) continue;
    MlirValue r = mlirOperationGetResult(p->loop, i);
    MlirNamedAttribute a = kiln_ir_named(w->ctx, "pending", kiln_ir_attr_i32(w->ctx, 0));
    MlirValue waited =
        kiln_ir_make1(&w->b, w->loc, KILN_OP_NAME_WGMMA_WAIT, &r, 1, mlirValueGetType(r), &a, 1);
    mlirValueReplaceAllUsesOfWith(r, waited);
    mlirOperationSetOperand(mlirOpResultGetOwner(waited), 0, r);
  }
}

static void epilogue(Rw *w, const Plan *p) {
  kiln_ir_builder_set_before(&w->b, mlirOperationGetNextInBlock(p->loop));
  if (!mlirOperationIsNull(p->async_dot)) retire_async_dot(w, p);
  async_wait(w, 0);
  bare_op(w, KILN_OP_NAME_BARRIER, NULL, 0);
}

/* The loop rebuilt with the two slot counters as its last iter_args (inits 0 and D; the
 * yield passes b(i + 1) = b(i) + 1 wrapped at S, and b(i) as the next write slot): the old
 * body's ops move over, its arguments and the loop's results are replaced, its attributes
 * copied.  p->loop, p->body and w->iv then name the new loop's. */
static void carry_slots(Rw *w, Plan *p) {
  MlirOperation old = p->loop;
  intptr_t nops = mlirOperationGetNumOperands(old), niter = nops - 3;
  MlirValue *inits = calloc((size_t)niter + 2, sizeof *inits);
  KILN_ASSERT(inits);
  for (intptr_t i = 0; i < niter; i++) inits[i] = mlirOperationGetOperand(old, 3 + i);
  kiln_ir_builder_set_before(&w->b, old);
  inits[niter] = cst(w, 0);
  inits[niter + 1] = cst(w, p->dist);
  KilnIRFor f = kiln_ir_build_for(&w->b, w->loc, w->lo, w->hi, w->st, inits, (size_t)niter + 2);
  free(inits);
  /* the old body's ops, yield included, moved in front of a placeholder yield */
  KilnIRBuilder in = w->b;
  kiln_ir_builder_set_end(&in, f.body);
  MlirOperation hold = kiln_ir_build_yield(&in, w->loc, NULL, 0);
  for (MlirOperation o = mlirBlockGetFirstOperation(p->body); !mlirOperationIsNull(o);) {
    MlirOperation next = mlirOperationGetNextInBlock(o);
    mlirOperationMoveBefore(o, hold);
    o = next;
  }
  mlirOperationDestroy(hold);
  mlirValueReplaceAllUsesOfWith(mlirBlockGetArgument(p->body, 0), f.iv);
  for (intptr_t i = 0; i < niter; i++) {
    mlirValueReplaceAllUsesOfWith(mlirBlockGetArgument(p->body, 1 + i),
                                  kiln_ir_for_iter_arg(&f, (size_t)i));
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(old, i),
                                  kiln_ir_for_result(&f, (size_t)i));
  }
  for (intptr_t i = 0; i < mlirOperationGetNumAttributes(old); i++) {
    MlirNamedAttribute a = mlirOperationGetAttribute(old, i);
    mlirOperationSetAttributeByName(f.op, mlirIdentifierStr(a.name), a.attribute);
  }
  mlirOperationDestroy(old);
  p->loop = f.op;
  p->body = f.body;
  w->iv = f.iv;
  w->rd = kiln_ir_for_iter_arg(&f, (size_t)niter);
  w->wr = kiln_ir_for_iter_arg(&f, (size_t)niter + 1);
  /* the yield: the old values, then b(i + 1) and b(i) */
  MlirOperation yield = mlirBlockGetTerminator(f.body);
  kiln_ir_builder_set_before(&w->b, yield);
  MlirValue inc = bin(w, "arith.addi", w->rd, cst(w, 1));
  MlirValue wrap = kiln_ir_build_cmpi(&w->b, w->loc, "eq", inc, cst(w, p->stages));
  MlirValue next = kiln_ir_build_select(&w->b, w->loc, wrap, cst(w, 0), inc);
  MlirValue *vals = calloc((size_t)niter + 2, sizeof *vals);
  KILN_ASSERT(vals);
  for (intptr_t i = 0; i < niter; i++) vals[i] = mlirOperationGetOperand(yield, i);
  vals[niter] = next;
  vals[niter + 1] = w->rd;        /* b(i + D + 1) = b(i) when D = S - 1 */
  if (p->dist != p->stages - 1) { /* else the write slot steps as the read slot does */
    MlirValue winc = bin(w, "arith.addi", w->wr, cst(w, 1));
    MlirValue wwrap = kiln_ir_build_cmpi(&w->b, w->loc, "eq", winc, cst(w, p->stages));
    vals[niter + 1] = kiln_ir_build_select(&w->b, w->loc, wwrap, cst(w, 0), winc);
  }
  mlirOperationSetOperands(yield, niter + 2, vals);
  free(vals);
}

static void rewrite(MlirContext ctx, Plan *p) {
  Rw w = {.ctx = ctx, .loc = mlirOperationGetLocation(p->loop), .i32 = mlirIntegerTypeGet(ctx, 32)};
  kiln_ir_builder_init(&w.b, ctx, mlirOperationGetBlock(p->loop));
  w.lo = mlirOperationGetOperand(p->loop, 0);
  w.hi = mlirOperationGetOperand(p->loop, 1);
  w.st = mlirOperationGetOperand(p->loop, 2);
  w.iv = mlirBlockGetArgument(p->body, 0);
  prologue(&w, p);
  carry_slots(&w, p);
  body(&w, p);
  epilogue(&w, p);
}

/* ---------------------------------------------------------------- the pass */

static MlirWalkResult collect_loops(MlirOperation op, void *u) {
  if (kiln_ir_op_is(op, "scf.for")) kiln_op_list_push(u, op);
  return MlirWalkResultAdvance;
}

static void pipeline_kernel(MlirOperation func) {
  int stages = (int)kiln_gpu_int_attr(func, "kiln.num_stages", 2);
  int64_t smem_limit = kiln_gpu_int_attr(func, "kiln.smem_limit", KILN_GPU_SMEM_LIMIT_SM90);
  KilnAxisMap *axis = kiln_axis_analyze(func);
  KilnOpList loops = {0};
  /* Post-order: an inner loop is planned before the loop around it, whose plan only looks at
   * ops directly in its own body. */
  mlirOperationWalk(func, collect_loops, &loops, MlirWalkPostOrder);
  Plan *p = malloc(sizeof *p);
  KILN_ASSERT(p);
  for (size_t i = 0; i < loops.n; i++)
    if (plan_loop(axis, loops.ops[i], stages, smem_limit, p))
      rewrite(mlirOperationGetContext(func), p);
  free(p);
  kiln_op_list_free(&loops);
  kiln_axis_free(axis);
}

MlirLogicalResult kiln_gpu_pipeline_module(MlirOperation module, void *opts) {
  (void)opts;
  KilnOpList kernels = kiln_ir_kernels(module, "func.func", "kiln.kernel");
  for (size_t i = 0; i < kernels.n; i++) pipeline_kernel(kernels.ops[i]);
  kiln_op_list_free(&kernels);
  return mlirLogicalResultSuccess();
}
