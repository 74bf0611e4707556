/* lower.h - state shared by the files of the SIMT lowering (convert-kiln-gpu-to-llvm).
 *
 * A lowered tile is the list of scalars its layout gives the running thread (KilnGpuOwn order);
 * a scalar is a list of one.  `Low` keeps the map from each kiln value to that list and an
 * insertion point in the new llvm.func (lower_kit.h, the toolkit every file builds with).  One
 * file per op family: lower.c (dispatcher, control flow, elementwise and shape ops),
 * lower_memory.c (global loads/stores/atomics), lower_reduce.c (reductions), lower_shared.c
 * (everything through shared memory: convert_layout, trans, dot), lower_scan.c (cumsum and
 * cumprod), lower_math.c (math functions and rand). */
#ifndef KILN_GPU_LOWER_H
#define KILN_GPU_LOWER_H

#include "lower_kit.h"

/* Global memory helpers (lower_memory.c).  Elements per vector access through pointer tile
 * ptrs (what the axis analysis proves, what the layout keeps in one thread, at most 128 bits);
 * the and of v masks (null when all are constant true); one element under its own mask (the
 * loaded value, or `other`). */
int low_vector_width(Low *L, MlirValue ptrs, const KilnGpuOwn *own);
MlirValue low_all_true(Low *L, const MlirValue *m, int v);
/* Whether the mask operand (a kiln value) is provably one value over every vector of v elements
 * along own's fastest dim (a scalar, or constant in aligned runs of at least v). */
bool low_mask_uniform(Low *L, MlirValue mask, const KilnGpuOwn *own, int v);
MlirValue low_load_masked(Low *L, MlirValue p, MlirValue m, MlirValue other, MlirType et,
                          int64_t align);

/* Lowers one op of the old body at L->b (lower.c's dispatcher). */
bool low_lower_op(Low *L, MlirOperation op);

/* The shared-memory ops of the GPU IR (lower_local.c), each by itself: a buffer is a pointer
 * to its bytes in the arena; copies are cp.async (element by element at tile edges); waits and
 * commits the cp.async group instructions; local_load reads dot_op fragments with ldmatrix. */
bool low_local_alloc(Low *L, MlirOperation op);
bool low_async_copy(Low *L, MlirOperation op);
bool low_async_commit(Low *L, MlirOperation op);
bool low_async_wait(Low *L, MlirOperation op);
bool low_local_load(Low *L, MlirOperation op);

/* The GEMM epilogue's convert from an mma layout to a blocked one through padded shared scratch
 * with vector stores and loads (lower_epilogue.c).  False, with nothing emitted, when the
 * convert is not one it covers (low_convert then lowers it). */
bool low_epilogue_convert(Low *L, MlirOperation op);

/* Op families: each returns false after reporting an error. */
bool low_load(Low *L, MlirOperation op);
bool low_store(Low *L, MlirOperation op);
/* atomic_rmw: relaxed llvm.atomicrmw per owned element, each replicated element updated once. */
bool low_atomic(Low *L, MlirOperation op);
/* The predicate that picks one holder of each element of `own` (null when no element has
 * several holders); *replicated tells whether some element has (lower_memory.c). */
MlirValue low_owner(Low *L, const KilnGpuOwn *own, bool *replicated);
/* device_print: one vprintf per element the running thread owns (lower_print.c). */
bool low_print(Low *L, MlirOperation op);
bool low_assert(Low *L, MlirOperation op);
bool low_reduce(Low *L, MlirOperation op);
/* shfl.sync of a scalar over the whole warp (lower_reduce.c): kind "bfly", "up", "down" or "idx",
 * b the lane operand (offset or source lane), c the clamp operand (0x1f for bfly/down/idx, 0 for
 * up).  8- and 16-bit values travel as 32 bits (f16/bf16 as f32, i8/i16 as i32), 64-bit ones as
 * two 32-bit words. */
MlirValue low_shuffle(Low *L, MlirValue v, const char *kind, MlirValue b, int c);
/* The tile X, whose elements this thread holds as `from` says, held as `to` says (the same shape):
 * through the shared arena, row-major, between barriers (lower_shared.c). */
Vals *low_relayout(Low *L, Vals *X, const KilnGpuOwn *from, const KilnGpuOwn *to, MlirType et);
bool low_convert(Low *L, MlirOperation op); /* convert_layout, trans and flip */
bool low_scan(Low *L, MlirOperation op);    /* cumsum / cumprod: shuffles (lower_scan.c) */
bool low_dot(Low *L, MlirOperation op);
bool low_math(Low *L, MlirOperation op); /* math.* */
/* One f64 element of a math op that PTX has no f64 instruction for (exp, exp2, log, log2,
 * rsqrt, tanh, erf, sin, cos, powf; lower_math_f64.c); *ok false for any other op. */
MlirValue low_math_f64_scalar(Low *L, const char *name, MlirValue *x, bool *ok);
/* pow of two f32 scalars, computed in f64 and rounded once (lower_math_f64.c). */
MlirValue low_pow_f32(Low *L, MlirValue x, MlirValue y);
bool low_rand(Low *L, MlirOperation op);
/* arith.cmpf of a rand tile against one f32 in every element, as integer compares of the
 * Philox words (exact); false, emitting nothing, for any other compare. */
bool low_rand_compare(Low *L, MlirOperation cmp);
/* Tensor cores (lower_dot.c): a convert to a dot_op layout (shared staging + ldmatrix), and a
 * dot with an mma result (mma.sync). */
bool low_dot_operand(Low *L, MlirOperation op);
bool low_dot_mma(Low *L, MlirOperation op);
/* sm_90's warpgroup MMA (lower_wgmma.c): whether dot op reads both operands from wgmma
 * buffers (KilnGpuShared.wgmma) and so runs on wgmma.mma_async, and its lowering. */
bool low_dot_is_wgmma(Low *L, MlirOperation op);
bool low_dot_wgmma(Low *L, MlirOperation op);
/* kiln.wgmma_wait: the accumulator tied through wgmma.wait_group `pending`. */
bool low_wgmma_wait(Low *L, MlirOperation op);
/* Element offset of (row, col) in a wgmma buffer's staging of rows x cols 16-bit elements: the
 * swizzle of low_swizzle within panels of 64 columns (128-byte rows), panel after panel. */
MlirValue low_swizzle_panel(Low *L, MlirValue row, MlirValue col, int64_t rows, int64_t cols);
/* Whether v is a kiln.trans of an f16/bf16 tile (of an i8 tile: to the B operand only) whose one
 * use converts it to a dot operand:
 * then the trans itself emits nothing, and the convert stages trans's operand as it is and
 * reads B = x^T with ldmatrix without .trans, A = x^T with ldmatrix .trans (one trip through
 * shared memory, not two). */
bool low_trans_feeds_operand(MlirValue v);
/* The B fragments of B = x^T from a staged, swizzled x (rows = n, cols = k) at base, into out. */
void low_dot_fragments_bt(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t rows,
                          int64_t cols, Vals *out);
/* The A fragments of A = x^T from a staged, swizzled x (rows = k, cols = m) at base, into out. */
void low_dot_fragments_at(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t rows,
                          int64_t cols, Vals *out);
/* Element offset of (row, col) in a swizzled shared tile of 16-bit elements with `cols` columns. */
MlirValue low_swizzle(Low *L, MlirValue row, MlirValue col, int64_t cols);
/* Byte offset of i8 element (row, k) in a swizzled tile of kcols bytes a row: the 16-bit
 * swizzle of its pair k / 2 (kcols / 2 columns), byte k & 1 of the pair. */
MlirValue low_swizzle_i8(Low *L, MlirValue row, MlirValue k, int64_t kcols);
/* The fragments of an i8 operand from a swizzled byte tile staged with rows k (kext of them) and
 * the operand's m (A) or n (B) contiguous (xext bytes a row): ldmatrix cannot transpose bytes, so
 * each register is four byte loads (the pipelined B of a row-major K x N weight). */
void low_dot_fragments_i8_gather(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t kext,
                                 int64_t xext, Vals *out);
/* f32 element offset of (row, col) in a swizzled tile of `cols` f32 columns: the 16-bit swizzle
 * of its b16 view (2 cols halves a row), halved (a tf32 operand's staging). */
MlirValue low_swizzle_f32(Low *L, MlirValue row, MlirValue col, int64_t cols);
/* The fragments of a tf32 operand (f32 bits, not yet rounded) from a swizzled f32 tile staged with
 * rows k (kext of them) and the operand's m (A) or n (B) contiguous (xext f32 a row): one 32-bit
 * load a register (ldmatrix would hand out halves of the wrong f32s). */
void low_dot_fragments_tf32_gather(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t kext,
                                   int64_t xext, Vals *out);
/* The dot_op fragments (registers) of a staged, swizzled rows x cols tile at base, into out. */
void low_dot_fragments(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t rows, int64_t cols,
                       Vals *out);

#endif
