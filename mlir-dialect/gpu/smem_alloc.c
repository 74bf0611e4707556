/* smem_alloc.c - kiln-gpu-smem-alloc: byte offsets for the shared buffers of each kernel, with
 * liveness, checked against the target's shared memory.
 *
 * Why: a buffer (kiln.local_alloc) is live from its allocation to the end of its last use, a
 * use inside a loop keeping it live to the end of that loop (the loop comes round again);
 * buffers whose live ranges do not overlap may share bytes (the rings of two loops one after
 * the other both start at 0).  Liveness is measured on the kernel's ops in pre-order: each op
 * gets the index range of its subtree, and a use counts as the whole subtree of its ancestor in
 * the allocation's block.  The unit of placement is a ring (the buffers one loop allocates
 * together, interleaved stage by stage: see Buf); offsets are first fit in allocation order,
 * 128-byte aligned (1024 for a ring that wgmma reads: its swizzle works on absolute addresses).
 *
 * The rest of the lowering's shared memory, the scratch arena of convert_layout, trans, flip,
 * reshape, scan, cross-warp reductions, the FMA dot, atomics' old values, operand staging and
 * the GEMM epilogue (lower_*.c), is not yet made of buffers: it stays one arena that each of
 * those ops uses from its start.  The allocator gives the arena its offset: every scf.for that
 * runs while buffers are live gets `kiln.arena_offset`, the end of those buffers, and the
 * lowering starts the arena there inside that loop; elsewhere the arena starts at 0 (no buffer
 * is live there: the pipeliner's allocations and final barrier enclose only its own ops and the
 * loop).
 *
 * The check: each ring must end within kiln.smem_limit, else the error names the ring's stages and bytes (the tuner
 * prunes such configs with the reason).  The total of buffers and arena is checked again by the
 * lowering, which alone knows the arena's size.  Results: `offset` and `stride` (bytes from one
 * slot to the next) on each local_alloc,
 * `kiln.smem_buffers` (bytes of the buffers at their peak) on the kernel. */
#include "gpu_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct Span {
  int64_t first, last; /* pre-order index of the op and of the last op nested in it */
} Span;

/* A unit of placement: one ring, i.e. the local_allocs that follow each other in one block with
 * the same number of stages (one loop's buffers).  Its buffers are interleaved stage by stage:
 * buffer k of the ring at offset off + (slot bytes of buffers 0 .. k-1), and every buffer's slot
 * s `stride` = the ring's stage bytes further, so that one slot index times one stride addresses
 * the slot of every buffer (one multiply an iteration for all of a loop's loads). */
typedef struct Buf {
  MlirOperation op; /* the ring's first local_alloc */
  size_t nops;      /* its local_allocs: allocs[first .. first + nops) */
  size_t first;
  int64_t stages, stage_bytes;
  int64_t align;      /* 128, or KILN_GPU_WGMMA_ALIGN when a buffer of the ring is read by wgmma */
  int64_t start, end; /* live range, pre-order indices */
  int64_t size, off;
} Buf;

typedef struct Numbering {
  KilnPtrMap index; /* op -> 1 + its position in spans */
  Span *spans;
  size_t n, cap;
  KilnOpList allocs, loops;
} Numbering;

static size_t number(Numbering *nb, MlirOperation op) {
  if (nb->n == nb->cap) {
    nb->cap = nb->cap ? 2 * nb->cap : 256;
    nb->spans = realloc(nb->spans, nb->cap * sizeof *nb->spans);
    KILN_ASSERT(nb->spans);
  }
  size_t me = nb->n++;
  nb->spans[me].first = (int64_t)me;
  kiln_ptr_map_put(&nb->index, op.ptr, (void *)(uintptr_t)(me + 1));
  if (kiln_ir_op_id(op) == KILN_OP_LOCAL_ALLOC) kiln_op_list_push(&nb->allocs, op);
  if (kiln_ir_op_is(op, "scf.for")) kiln_op_list_push(&nb->loops, op);
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); r++)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
           o = mlirOperationGetNextInBlock(o))
        number(nb, o);
  nb->spans[me].last = (int64_t)nb->n - 1;
  return me;
}

static Span span_of(const Numbering *nb, MlirOperation op) {
  uintptr_t i = (uintptr_t)kiln_ptr_map_get(&nb->index, op.ptr);
  KILN_ASSERT(i > 0);
  return nb->spans[i - 1];
}

/* The live range of a buffer: its allocation to the end of the last subtree, in its block,
 * that holds a use. */
static void live_range(const Numbering *nb, Buf *b, MlirOperation alloc) {
  MlirBlock home = mlirOperationGetBlock(alloc);
  if (b->end < span_of(nb, alloc).first) b->end = span_of(nb, alloc).first;
  MlirValue v = mlirOperationGetResult(alloc, 0);
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation o = mlirOpOperandGetOwner(u);
    while (!mlirOperationIsNull(o) && !mlirBlockEqual(mlirOperationGetBlock(o), home))
      o = mlirOperationGetParentOperation(o);
    if (mlirOperationIsNull(o)) continue;
    int64_t last = span_of(nb, o).last;
    if (last > b->end) b->end = last;
  }
}

static bool overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1) { return a0 < b1 && b0 < a1; }

static bool live_together(const Buf *a, const Buf *b) {
  return a->start <= b->end && b->start <= a->end;
}

/* First fit: the lowest offset aligned to the ring's alignment, among 0 and the ends of the
 * buffers placed so far that are live with it, where it overlaps none of them. */
static void place(Buf *bufs, size_t i) {
  Buf *b = &bufs[i];
  int64_t best = -1;
  for (size_t c = 0; c <= i; c++) {
    int64_t at = c == i ? 0 : (bufs[c].off + bufs[c].size + b->align - 1) / b->align * b->align;
    if (c < i && !live_together(&bufs[c], b)) continue;
    bool fits = true;
    for (size_t j = 0; j < i && fits; j++)
      if (live_together(&bufs[j], b) &&
          overlap(at, at + b->size, bufs[j].off, bufs[j].off + bufs[j].size))
        fits = false;
    if (fits && (best < 0 || at < best)) best = at;
  }
  b->off = best;
}

static bool check_rings(const Buf *bufs, size_t n, int64_t limit) {
  bool ok = true;
  for (size_t i = 0; i < n; i++) {
    const Buf *b = &bufs[i];
    if (b->off + b->size <= limit) continue;
    kiln_ir_error(mlirOperationGetLocation(b->op),
                  "limit: shared memory: the %lld-stage pipeline of this loop needs %lld x %lld "
                  "= %lld bytes, more than the %lld a program may have on this target (fewer "
                  "num_stages or smaller tiles)",
                  (long long)b->stages, (long long)b->stages, (long long)b->stage_bytes,
                  (long long)b->size, (long long)(limit - b->off));
    ok = false;
  }
  return ok;
}

/* kiln.arena_offset on each loop that runs while buffers are live: the end of those buffers. */
static void place_arena(const Numbering *nb, const Buf *bufs, size_t n, MlirContext ctx) {
  for (size_t i = 0; i < nb->loops.n; i++) {
    Span s = span_of(nb, nb->loops.ops[i]);
    int64_t base = 0;
    for (size_t k = 0; k < n; k++)
      if (bufs[k].start < s.first && bufs[k].end >= s.last && bufs[k].off + bufs[k].size > base)
        base = bufs[k].off + bufs[k].size;
    if (base > 0)
      mlirOperationSetAttributeByName(nb->loops.ops[i],
                                      mlirStringRefCreateFromCString("kiln.arena_offset"),
                                      kiln_ir_attr_i32(ctx, (int32_t)base));
  }
}

/* The bytes local_alloc j takes in one stage of ring b: its slot, rounded up to the ring's
 * alignment, so that every slot of every buffer of a ring read by wgmma starts 1024-aligned. */
static int64_t slot_step(const Numbering *nb, const Buf *b, size_t j) {
  KilnGpuBuffer t;
  kiln_gpu_buffer_parse(mlirValueGetType(mlirOperationGetResult(nb->allocs.ops[j], 0)), &t);
  return (t.slot_bytes + b->align - 1) / b->align * b->align;
}

/* Groups the kernel's local_allocs into rings (see Buf); false after an error. */
static bool make_units(const Numbering *nb, Buf *bufs, size_t *nbufs) {
  size_t n = 0;
  int64_t prev_stages = 0;
  for (size_t i = 0; i < nb->allocs.n; i++) {
    MlirOperation op = nb->allocs.ops[i];
    KilnGpuBuffer t;
    if (!kiln_gpu_buffer_parse(mlirValueGetType(mlirOperationGetResult(op, 0)), &t)) {
      kiln_ir_error(mlirOperationGetLocation(op),
                    "kiln.local_alloc: the result must be a memref<stages x rows x cols> with a "
                    "shared encoding");
      return false;
    }
    bool joins = n > 0 && t.stages == prev_stages &&
                 mlirOperationEqual(mlirOperationGetNextInBlock(nb->allocs.ops[i - 1]), op);
    if (!joins)
      bufs[n++] = (Buf){.op = op,
                        .first = i,
                        .stages = t.stages,
                        .start = span_of(nb, op).first,
                        .end = span_of(nb, op).first};
    Buf *b = &bufs[n - 1];
    b->nops++;
    if (t.enc.wgmma) b->align = KILN_GPU_WGMMA_ALIGN;
    live_range(nb, b, op);
    prev_stages = t.stages;
  }
  for (size_t k = 0; k < n; k++) {
    Buf *b = &bufs[k];
    if (b->align < 128) b->align = 128;
    for (size_t j = b->first; j < b->first + b->nops; j++) b->stage_bytes += slot_step(nb, b, j);
    b->size = b->stages * b->stage_bytes;
  }
  *nbufs = n;
  return true;
}

/* `offset` and `stride` on each local_alloc of the ring b. */
static void mark_ring(MlirContext ctx, const Numbering *nb, const Buf *b) {
  int64_t at = b->off;
  for (size_t k = b->first; k < b->first + b->nops; k++) {
    MlirOperation op = nb->allocs.ops[k];
    mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString("offset"),
                                    kiln_ir_attr_i32(ctx, (int32_t)at));
    mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString("stride"),
                                    kiln_ir_attr_i32(ctx, (int32_t)b->stage_bytes));
    at += slot_step(nb, b, k);
  }
}

static bool alloc_kernel(MlirOperation func) {
  MlirContext ctx = mlirOperationGetContext(func);
  Numbering nb = {0};
  number(&nb, func);
  Buf *bufs = calloc(nb.allocs.n ? nb.allocs.n : 1, sizeof *bufs);
  KILN_ASSERT(bufs);
  size_t n = 0;
  bool ok = make_units(&nb, bufs, &n);
  int64_t peak = 0;
  for (size_t i = 0; i < n && ok; i++) {
    place(bufs, i);
    if (bufs[i].off + bufs[i].size > peak) peak = bufs[i].off + bufs[i].size;
  }
  if (ok)
    ok = check_rings(bufs, n, kiln_gpu_int_attr(func, "kiln.smem_limit", KILN_GPU_SMEM_LIMIT_SM90));
  if (ok) {
    for (size_t i = 0; i < n; i++) mark_ring(ctx, &nb, &bufs[i]);
    place_arena(&nb, bufs, n, ctx);
    if (n > 0)
      mlirOperationSetAttributeByName(func, mlirStringRefCreateFromCString("kiln.smem_buffers"),
                                      kiln_ir_attr_i32(ctx, (int32_t)peak));
  }
  free(bufs);
  free(nb.spans);
  kiln_ptr_map_free(&nb.index);
  kiln_op_list_free(&nb.allocs);
  kiln_op_list_free(&nb.loops);
  return ok;
}

MlirLogicalResult kiln_gpu_smem_alloc_module(MlirOperation module, void *opts) {
  (void)opts;
  KilnOpList kernels = kiln_ir_kernels(module, "func.func", "kiln.kernel");
  bool ok = true;
  for (size_t i = 0; i < kernels.n; i++) ok = alloc_kernel(kernels.ops[i]) && ok;
  kiln_op_list_free(&kernels);
  return ok ? mlirLogicalResultSuccess() : mlirLogicalResultFailure();
}
