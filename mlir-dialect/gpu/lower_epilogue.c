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
 * rows not a multiple of 16 bytes, other element sizes) take the generic path.
 *
 * On sm_90 a 16-bit accumulator goes to the scratch by stmatrix instead (one instruction per
 * four 8x8 blocks, where the vector path needs one 32-bit st.shared per block): the pair
 * (c0, c1) a thread holds of a 16x8 mma block is exactly its register of an m8n8 matrix, rows g
 * and g + 8 of the block are two matrices, and the next 16x8 block of the same warp along N two
 * more.  Lane l gives the address of row l % 8 of matrix l / 8, so only the address depends on
 * the lane; every row is 16 bytes at a 16-byte aligned place (the padded pitch keeps them so,
 * and the 8 rows of a matrix land 4 banks apart: no conflict). */
#include "lower.h"

#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <string.h>

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

/* ---------------------------------------------------------------- stmatrix (sm_90) */

/* The warp's share of dim d's coordinate (the lane's is left out). */
static MlirValue warp_part(Low *L, const KilnGpuDimMap *m) {
  if (m->warp_bits == 0) return low_i32(L, 0);
  MlirValue w = low_warp(L);
  if (m->warp_shift) w = low_bin(L, "arith.shrui", w, low_i32(L, m->warp_shift));
  w = low_bin(L, "arith.andi", w, low_i32(L, (1 << m->warp_bits) - 1));
  return low_bin(L, "arith.muli", w, low_i32(L, m->warp_mul));
}

/* The element offset, in the padded scratch, of the row this lane addresses for a group's
 * matrix l / 8 (matrix 2q + h: rows g + 8h of column block q), less the group's constant. */
static MlirValue lane_row_offset(Low *L, const KilnGpuOwn *own, int64_t pitch) {
  MlirValue lane = low_lane(L);
  MlirValue r = low_bin(L, "arith.andi", lane, low_i32(L, 7));
  MlirValue h =
      low_bin(L, "arith.andi", low_bin(L, "arith.shrui", lane, low_i32(L, 3)), low_i32(L, 1));
  MlirValue q = low_bin(L, "arith.shrui", lane, low_i32(L, 4));
  MlirValue row = low_bin(L, "arith.addi", warp_part(L, &own->dim[0]),
                          low_bin(L, "arith.addi", r, low_bin(L, "arith.shli", h, low_i32(L, 3))));
  MlirValue col = low_bin(L, "arith.addi", warp_part(L, &own->dim[1]),
                          low_bin(L, "arith.muli", q, low_i32(L, own->dim[1].extent)));
  return low_bin(L, "arith.addi", low_bin(L, "arith.muli", row, low_i32(L, pitch)), col);
}

/* The b32 register of the pair at local (row i, column 2 run) of X: the low half first. */
static MlirValue pair_register(Low *L, const KilnGpuOwn *own, Vals *X, int i, int run,
                               MlirType et) {
  MlirType vt = vector_of(2, et);
  MlirValue x = low_op1(L, "llvm.mlir.undef", NULL, 0, vt);
  for (int e = 0; e < 2; e++) {
    int local[KILN_GPU_MAX_RANK] = {i, 2 * run + e};
    MlirValue o[3] = {x, X->v[kiln_gpu_own_index(own, local)], low_i32(L, e)};
    x = low_op1(L, "llvm.insertelement", o, 3, vt);
  }
  return low_op1(L, "llvm.bitcast", &x, 1, L->i32);
}

static void stmatrix(Low *L, MlirValue addr, const MlirValue *regs, int num) {
  char text[128], cons[32] = "l";
  snprintf(text, sizeof text, "%s%d.shared.b16 [$0], {", KILN_GPU_STMATRIX_PTX, num);
  for (int i = 0; i < num; i++) {
    snprintf(text + strlen(text), sizeof text - strlen(text), "%s$%d", i ? ", " : "", i + 1);
    strcat(cons, ",r");
  }
  strcat(text, "};");
  strcat(cons, ",~{memory}");
  MlirValue ops[5] = {addr};
  for (int i = 0; i < num; i++) ops[1 + i] = regs[i];
  low_asm_effects(L, text, cons, ops, (size_t)(1 + num), NULL, 0);
}

/* The accumulator's stores to the scratch as stmatrix: per pair of rows (g, g + 8) of a 16-row
 * block and pair of the warp's 16x8 blocks along N, one .x4 (an odd last block: one .x2). */
static void store_stmatrix(Low *L, const KilnGpuOwn *own, Vals *X, MlirValue base, int64_t pitch,
                           MlirType et) {
  MlirValue lane_off = lane_row_offset(L, own, pitch);
  int runs = own->dim[1].n / 2;
  for (int i = 0; i < own->dim[0].n; i += 2) {
    for (int run = 0; run < runs; run += 2) {
      int num = run + 1 < runs ? 4 : 2;
      MlirValue regs[4];
      for (int m = 0; m < num; m++)
        regs[m] = pair_register(L, own, X, i + (m & 1), run + m / 2, et);
      int64_t at = kiln_gpu_own_offset(own, 0, i) * pitch + kiln_gpu_own_offset(own, 1, 2 * run);
      MlirValue idx = low_bin(L, "arith.addi", lane_off, low_i32(L, at));
      stmatrix(L, low_gep(L, base, idx, et), regs, num);
    }
  }
}

/* Whether the source may go by stmatrix: sm_90, 16-bit elements, an mma tile of more than one
 * element along each dim (the layout maps then hold: pairs of columns, rows g and g + 8). */
static bool stmatrix_fits(const Low *L, const KilnGpuOwn *so, int eb) {
  return L->sm >= 90 && eb == 2 && so->dim[0].base_used && so->dim[1].base_used &&
         so->dim[0].n % 2 == 0;
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
  if (stmatrix_fits(L, &so, eb))
    store_stmatrix(L, &so, X, base, pitch, et);
  else
    each_run(L, &so, run_vector(&so, 1, eb), store_run, &s);
  low_barrier(L);
  s.own = &ro;
  s.vals = out;
  each_run(L, &ro, run_vector(&ro, 1, eb), load_run, &s);
  low_set(L, res, out);
  return true;
}
