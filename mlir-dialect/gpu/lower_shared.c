/* lower_shared.c - the ops that move tiles through shared memory.
 *
 * convert_layout / trans / flip / reshape: every thread writes the elements it owns at their
 * row-major position in the shared arena (for trans, at the transposed position; for flip, at the
 * position reversed along the axis; for reshape, by the source's shape), a barrier, every thread
 * reads the elements the new layout (and shape) gives it.  A barrier also opens each use of the
 * arena, so readers of the previous use are done before it is overwritten.  Elements narrower
 * than a byte (i1) travel as i8.
 *
 * low_relayout is the same trip for a tile in hand (the scan's operands and results that are
 * not in the layout it runs in, lower_scan.c).
 *
 * dot (FMA path, any layouts): a and b are staged in the arena row-major; each thread then
 * computes its own accumulator elements, acc[m][n] += a[m][k] * b[k][n] for k = 0..K-1, reading
 * the rows and columns it needs from shared memory and widening to the accumulator's type.  An
 * operand that kiln-gpu-pipeline staged (a loaded tile in a loop: cp.async into a ring of the
 * `fma` encoding, this very row-major layout) is read from its slot and not staged again; with
 * both so, the dot has no barrier of its own.  Dots that fit the tensor cores take the mma.sync
 * path instead (lower_dot.c). */
#include "lower.h"

static int bytes_of(MlirType et) {
  int b = kiln_ir_elem_bits(et);
  return b < 8 ? 1 : b / 8;
}

static MlirType mem_type(Low *L, MlirType et) { return kiln_ir_elem_bits(et) < 8 ? L->i8 : et; }

/* Row-major linear index of list position j of `own` (dims permuted by `perm` when non-NULL:
 * element (c0, c1) goes to position (c_perm[0], c_perm[1]) of the target shape; the coordinate
 * along dim `flip` (when >= 0) reversed, c -> size - 1 - c). */
static MlirValue linear(Low *L, const KilnGpuOwn *own, int64_t j, const int64_t *tshape,
                        const int *perm, int flip) {
  MlirValue li = low_i32(L, 0);
  for (int d = 0; d < own->rank; d++) {
    int sd = perm ? perm[d] : d;
    MlirValue c = low_coord(L, own, j, sd);
    if (sd == flip) c = low_bin(L, "arith.subi", low_i32(L, tshape[d] - 1), c);
    li = low_bin(L, "arith.muli", li, low_i32(L, tshape[d]));
    li = low_bin(L, "arith.addi", li, c);
  }
  return li;
}

static void smem_store(Low *L, MlirValue base, MlirValue idx, MlirValue v, MlirType et) {
  MlirType mt = mem_type(L, et);
  if (!mlirTypeEqual(mt, et)) v = low_op1(L, "arith.extui", &v, 1, mt);
  MlirValue o[2] = {v, low_gep(L, base, idx, mt)};
  low_op(L, "llvm.store", o, 2, NULL, 0, NULL, 0);
}

static MlirValue smem_load(Low *L, MlirValue base, MlirValue idx, MlirType et) {
  MlirType mt = mem_type(L, et);
  MlirValue p = low_gep(L, base, idx, mt);
  MlirValue v = low_op1(L, "llvm.load", &p, 1, mt);
  if (!mlirTypeEqual(mt, et)) v = low_op1(L, "arith.trunci", &v, 1, et);
  return v;
}

bool low_convert(Low *L, MlirOperation op) {
  bool trans = kiln_ir_op_id(op) == KILN_OP_TRANS;
  int flip = kiln_ir_op_id(op) == KILN_OP_FLIP ? (int)kiln_gpu_int_attr(op, "axis", 0) : -1;
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  MlirType st = mlirValueGetType(src), rt = mlirValueGetType(res);
  KilnGpuOwn so = kiln_gpu_own_of_type(st), ro = kiln_gpu_own_of_type(rt);
  MlirType et = kiln_ir_elem_type(rt);
  if (kiln_ir_type_is_ptr(et)) {
    low_error(L, "GPU lowering: converting the layout of a pointer tile is not supported");
    return false;
  }
  bool reshape = kiln_ir_op_id(op) == KILN_OP_RESHAPE;
  if (trans && so.rank != 2) {
    low_error(L, "GPU lowering: trans expects a 2-D tile");
    return false;
  }
  Vals *X = low_get(L, src);
  int64_t numel = kiln_ir_type_numel(rt);
  int64_t rshape[KILN_GPU_MAX_RANK];
  for (int d = 0; d < ro.rank; d++) rshape[d] = ro.shape[d];
  static const int swap[2] = {1, 0};
  low_barrier(L);
  MlirValue base = low_smem(L, 0, numel * bytes_of(et));
  /* reshape: stored by the source's shape, read by the result's (one row-major order) */
  for (int64_t j = 0; j < so.count; j++)
    smem_store(L, base, linear(L, &so, j, reshape ? so.shape : rshape, trans ? swap : NULL, flip),
               X->v[j], et);
  low_barrier(L);
  Vals *out = low_vals(L, ro.count);
  for (int64_t j = 0; j < ro.count; j++)
    out->v[j] = smem_load(L, base, linear(L, &ro, j, rshape, NULL, -1), et);
  low_set(L, res, out);
  return true;
}

Vals *low_relayout(Low *L, Vals *X, const KilnGpuOwn *from, const KilnGpuOwn *to, MlirType et) {
  int64_t numel = 1;
  for (int d = 0; d < to->rank; d++) numel *= to->shape[d];
  low_barrier(L);
  MlirValue base = low_smem(L, 0, numel * bytes_of(et));
  for (int64_t j = 0; j < from->count; j++)
    smem_store(L, base, linear(L, from, j, to->shape, NULL, -1), X->v[j], et);
  low_barrier(L);
  Vals *out = low_vals(L, to->count);
  for (int64_t j = 0; j < to->count; j++)
    out->v[j] = smem_load(L, base, linear(L, to, j, to->shape, NULL, -1), et);
  return out;
}

static MlirValue widen(Low *L, MlirValue v, MlirType to) {
  MlirType t = mlirValueGetType(v);
  if (mlirTypeEqual(t, to)) return v;
  bool fi = mlirTypeIsAFloat(t), fo = mlirTypeIsAFloat(to);
  const char *name = fi && fo ? "arith.extf" : (!fi && fo ? "arith.sitofp" : "arith.extsi");
  return low_op1(L, name, &v, 1, to);
}

/* Whether v is a slot of a ring staged for this path (kiln.local_load of a buffer with the fma
 * encoding: the operand's rows as the arena would hold them); *base gets the slot's first
 * byte. */
static bool from_ring(Low *L, MlirValue v, MlirValue *base) {
  if (mlirValueIsABlockArgument(v)) return false;
  MlirOperation def = mlirOpResultGetOwner(v);
  KilnGpuBuffer bf;
  if (kiln_ir_op_id(def) != KILN_OP_LOCAL_LOAD ||
      !kiln_gpu_buffer_parse(mlirValueGetType(mlirOperationGetOperand(def, 0)), &bf) || !bf.enc.fma)
    return false;
  *base = low_get(L, v)->v[0];
  return true;
}

bool low_dot(Low *L, MlirOperation op) {
  MlirValue a = mlirOperationGetOperand(op, 0), b = mlirOperationGetOperand(op, 1);
  MlirValue acc = mlirOperationGetOperand(op, 2), res = mlirOperationGetResult(op, 0);
  MlirType at = mlirValueGetType(a), bt = mlirValueGetType(b), ct = mlirValueGetType(res);
  if (kiln_ir_rank(at) != 2 || kiln_ir_rank(bt) != 2 || kiln_ir_rank(ct) != 2) {
    low_error(L, "GPU lowering: dot expects 2-D tiles");
    return false;
  }
  int64_t M = kiln_ir_dim(at, 0), K = kiln_ir_dim(at, 1), N = kiln_ir_dim(bt, 1);
  MlirType ae = kiln_ir_elem_type(at), be = kiln_ir_elem_type(bt), ce = kiln_ir_elem_type(ct);
  bool fl = mlirTypeIsAFloat(ce);
  KilnGpuOwn ao = kiln_gpu_own_of_type(at), bo = kiln_gpu_own_of_type(bt),
             co = kiln_gpu_own_of_type(ct);
  Vals *C = low_get(L, acc);
  /* An operand the pipeliner staged is read from its ring's slot, after the wait and barrier
   * it put before the dot; the others go through the arena. */
  MlirValue abase, bbase;
  bool a_staged = from_ring(L, a, &abase), b_staged = from_ring(L, b, &bbase);
  if (!a_staged || !b_staged) {
    int64_t a_bytes = a_staged ? 0 : M * K * bytes_of(ae);
    int64_t b_off = (a_bytes + 15) / 16 * 16;
    int64_t total = b_off + (b_staged ? 0 : K * N * bytes_of(be));
    int64_t ashape[2] = {M, K}, bshape[2] = {K, N};
    low_barrier(L);
    if (!a_staged) {
      Vals *A = low_get(L, a);
      abase = low_smem(L, 0, total);
      for (int64_t j = 0; j < ao.count; j++)
        smem_store(L, abase, linear(L, &ao, j, ashape, NULL, -1), A->v[j], ae);
    }
    if (!b_staged) {
      Vals *B = low_get(L, b);
      bbase = low_smem(L, b_off, total);
      for (int64_t j = 0; j < bo.count; j++)
        smem_store(L, bbase, linear(L, &bo, j, bshape, NULL, -1), B->v[j], be);
    }
    low_barrier(L);
  }
  /* The rows and columns this thread's accumulator elements sit in. */
  int nr = co.dim[0].n, nc = co.dim[1].n;
  MlirValue *row = low_alloc(L, (size_t)nr * sizeof *row),
            *col = low_alloc(L, (size_t)nc * sizeof *col);
  MlirValue rb = low_coord_base(L, &co, 0), cb = low_coord_base(L, &co, 1);
  for (int i = 0; i < nr; i++) {
    MlirValue off = low_i32(L, kiln_gpu_own_offset(&co, 0, i));
    MlirValue r = mlirValueIsNull(rb) ? off : low_bin(L, "arith.addi", rb, off);
    row[i] = low_bin(L, "arith.muli", r, low_i32(L, K));
  }
  for (int i = 0; i < nc; i++) {
    MlirValue off = low_i32(L, kiln_gpu_own_offset(&co, 1, i));
    col[i] = mlirValueIsNull(cb) ? off : low_bin(L, "arith.addi", cb, off);
  }
  Vals *out = low_vals(L, co.count);
  for (int64_t j = 0; j < co.count; j++) out->v[j] = C->v[j];
  MlirValue *av = low_alloc(L, (size_t)nr * sizeof *av),
            *bv = low_alloc(L, (size_t)nc * sizeof *bv);
  for (int64_t k = 0; k < K; k++) {
    for (int i = 0; i < nr; i++)
      av[i] =
          widen(L, smem_load(L, abase, low_bin(L, "arith.addi", row[i], low_i32(L, k)), ae), ce);
    for (int i = 0; i < nc; i++)
      bv[i] = widen(L, smem_load(L, bbase, low_bin(L, "arith.addi", col[i], low_i32(L, k * N)), be),
                    ce);
    for (int64_t j = 0; j < co.count; j++) {
      int local[KILN_GPU_MAX_RANK];
      kiln_gpu_own_local(&co, j, local);
      MlirValue x = av[local[0]], y = bv[local[1]];
      if (fl) {
        MlirValue o[3] = {x, y, out->v[j]};
        out->v[j] = low_op1(L, "math.fma", o, 3, ce);
      } else {
        out->v[j] = low_bin(L, "arith.addi", out->v[j], low_bin(L, "arith.muli", x, y));
      }
    }
  }
  low_set(L, res, out);
  return true;
}
