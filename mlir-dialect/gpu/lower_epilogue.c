/* lower_epilogue.c - the GEMM epilogue's layout conversion: an mma accumulator (or its narrowed
 * copy) to the blocked layout of the store, through padded shared scratch with vector accesses.
 *
 * Why: lower_shared.c's generic convert writes one element at a time to a dense row-major tile.
 * For an mma source the 8 lanes of a quad column (rows g = 0..7, same t) then hit addresses one
 * row pitch apart: with 128 columns of f16 that is 256 bytes, the same 4 banks, an 8-way
 * conflict, and 64 scalar 16-bit shared stores per thread at 128x128 on 8 warps.  Here:
 *   - the scratch is row-major with each row padded by 16 bytes, so consecutive rows start 4
 *     banks apart and the quad's 8 rows x 4 lanes cover all 32 banks once;
 *   - each thread stores runs of the elements it owns that are adjacent in a row as one vector
 *     (mma: the pair c0, c1 = columns 2t, 2t + 1, one 32-bit store for f16), and reads its new
 *     elements as vectors of up to 16 bytes (a blocked layout with 8 f16 per thread along the row:
 *     one 128-bit load, which the row padding keeps aligned).
 * A run is a vector only when the layout guarantees it for every thread: the run lies inside one
 * sizePerThread chunk of consecutive elements, and the chunk's start (lane and warp multipliers,
 * offsets) is a multiple of the vector length.  Converts this does not cover (other layouts,
 * rows not a multiple of 16 bytes, other element sizes) take the generic path. */
#include "lower.h"

#include "mlir-c/BuiltinTypes.h"

#define EPI_ROW_PAD_BYTES 16

/* The vector length (elements, a power of two, at most 16 bytes) of dim d's runs under `own`. */
static int run_vector(const KilnGpuOwn *own, int d, int elem_bytes) {
  const KilnGpuDimMap *m = &own->dim[d];
  for (int v = 16 / elem_bytes; v > 1; v /= 2) {
    bool fits = m->spt % v == 0 && (m->n <= 1 || m->elem_stride == 1) && m->extent % v == 0 &&
                (m->lane_bits == 0 || m->lane_mul % v == 0) &&
                (m->warp_bits == 0 || m->warp_mul % v == 0) && m->size % v == 0;
    if (fits) return v;
  }
  return 1;
}

/* Element offset of list position j's (row, col) in the padded scratch. */
static MlirValue scratch_index(Low *L, const KilnGpuOwn *own, int64_t j, int64_t pitch) {
  MlirValue row = low_coord(L, own, j, 0), col = low_coord(L, own, j, 1);
  return low_bin(L, "arith.addi", low_bin(L, "arith.muli", row, low_i32(L, pitch)), col);
}

static MlirType vector_of(int64_t n, MlirType et) { return mlirVectorTypeGet(1, &n, et); }

/* For each run of v row-adjacent elements of `own` (v a vector length run_vector allows):
 * calls visit with the list positions of the run. */
typedef void RunVisit(Low *L, const int64_t *pos, int v, void *ctx);

static void each_run(Low *L, const KilnGpuOwn *own, int v, RunVisit *visit, void *ctx) {
  for (int64_t j = 0; j < own->count; j++) {
    int local[KILN_GPU_MAX_RANK];
    kiln_gpu_own_local(own, j, local);
    if (local[1] % v != 0) continue; /* not the first element of a run */
    int64_t pos[16];
    for (int e = 0; e < v; e++) {
      int l[KILN_GPU_MAX_RANK] = {local[0], local[1] + e};
      pos[e] = kiln_gpu_own_index(own, l);
    }
    visit(L, pos, v, ctx);
  }
}

typedef struct Scratch {
  MlirValue base;
  const KilnGpuOwn *own;
  int64_t pitch;
  MlirType et;
  Vals *vals; /* stores: the source values; loads: the result list being filled */
} Scratch;

static MlirValue run_address(Low *L, const Scratch *s, int64_t first) {
  return low_gep(L, s->base, scratch_index(L, s->own, first, s->pitch), s->et);
}

/* A run's access is aligned to its whole size (what a GPU vector access requires). */
static MlirNamedAttribute alignment(Low *L, const Scratch *s, int v) {
  int64_t bytes = (int64_t)v * kiln_ir_elem_bits(s->et) / 8;
  return kiln_ir_named(L->ctx, "alignment",
                       mlirIntegerAttrGet(mlirIntegerTypeGet(L->ctx, 64), bytes));
}

static void store_run(Low *L, const int64_t *pos, int v, void *ctx) {
  const Scratch *s = ctx;
  MlirValue p = run_address(L, s, pos[0]);
  MlirValue x;
  if (v == 1) {
    x = s->vals->v[pos[0]];
  } else {
    MlirType vt = vector_of(v, s->et);
    x = low_op1(L, "llvm.mlir.undef", NULL, 0, vt);
    for (int e = 0; e < v; e++) {
      MlirValue o[3] = {x, s->vals->v[pos[e]], low_i32(L, e)};
      x = low_op1(L, "llvm.insertelement", o, 3, vt);
    }
  }
  MlirValue o[2] = {x, p};
  MlirNamedAttribute a = alignment(L, s, v);
  low_op(L, "llvm.store", o, 2, NULL, 0, &a, 1);
}

static void load_run(Low *L, const int64_t *pos, int v, void *ctx) {
  const Scratch *s = ctx;
  MlirValue p = run_address(L, s, pos[0]);
  MlirType t = v == 1 ? s->et : vector_of(v, s->et);
  MlirNamedAttribute a = alignment(L, s, v);
  MlirValue x = mlirOperationGetResult(low_op(L, "llvm.load", &p, 1, &t, 1, &a, 1), 0);
  for (int e = 0; e < v; e++) {
    if (v == 1) {
      s->vals->v[pos[e]] = x;
    } else {
      MlirValue o[2] = {x, low_i32(L, e)};
      s->vals->v[pos[e]] = low_op1(L, "llvm.extractelement", o, 2, s->et);
    }
  }
}

bool low_epilogue_convert(Low *L, MlirOperation op) {
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  MlirType st = mlirValueGetType(src), rt = mlirValueGetType(res);
  KilnGpuLayout sl = kiln_gpu_layout_of_type(st), rl = kiln_gpu_layout_of_type(rt);
  MlirType et = kiln_ir_elem_type(rt);
  if (sl.kind != KILN_GPU_LAYOUT_MMA || rl.kind != KILN_GPU_LAYOUT_BLOCKED ||
      kiln_ir_rank(rt) != 2 || !mlirTypeIsAFloat(et))
    return false;
  int eb = kiln_ir_elem_bits(et) / 8;
  int64_t rows = kiln_ir_dim(rt, 0), cols = kiln_ir_dim(rt, 1);
  if ((eb != 2 && eb != 4) || (cols * eb) % 16 != 0) return false;
  KilnGpuOwn so = kiln_gpu_own_of_type(st), ro = kiln_gpu_own_of_type(rt);
  int64_t pitch = cols + EPI_ROW_PAD_BYTES / eb;
  Vals *X = low_get(L, src);
  Vals *out = low_vals(L, ro.count);
  low_barrier(L);
  MlirValue base = low_smem(L, 0, rows * pitch * eb);
  Scratch s = {base, &so, pitch, et, X};
  each_run(L, &so, run_vector(&so, 1, eb), store_run, &s);
  low_barrier(L);
  s.own = &ro;
  s.vals = out;
  each_run(L, &ro, run_vector(&ro, 1, eb), load_run, &s);
  low_set(L, res, out);
  return true;
}
