/* gpu_internal.h - shared pieces of the GPU lowering (mlir-dialect/gpu/), not for other folders.
 *
 * Layouts live in the IR as a tensor's encoding, a builtin DictionaryAttr (see layout.c); inside
 * the passes they are decoded into KilnGpuLayout, a plain struct that answers "which elements of
 * the tile does this thread own, and in which order does it keep them". */
#ifndef KILN_GPU_INTERNAL_H
#define KILN_GPU_INTERNAL_H

#include "kiln_gpu.h"
#include "kiln_mlir_internal.h"

#include <stdbool.h>
#include <stdint.h>

#define KILN_GPU_MAX_RANK 4
#define KILN_GPU_WARP     32
/* The most elements of one tile a thread may hold on the GPU targets (sm_80, sm_90, emu). A
 * thread has at most 255 32-bit registers, so beyond a few hundred elements a tile lives in
 * local memory anyway, and the fully unrolled per-thread code grows with the count: a 2^16
 * element tile on one warp (2048 a thread) took 95 s and 800 MB to compile for sm_90, 2^20
 * exhausted memory. 1024 keeps every compile within seconds. */
#define KILN_GPU_MAX_ELEMS_PER_THREAD 1024

/* ---------------------------------------------------------------- layouts */

typedef enum KilnGpuLayoutKind {
  KILN_GPU_LAYOUT_NONE,    /* a scalar, or a tensor without an encoding */
  KILN_GPU_LAYOUT_BLOCKED, /* spt/tpw/wpc/order over `rank` dims */
  KILN_GPU_LAYOUT_SLICE,   /* the parent (rank dims, blocked or mma) with dim `slice_dim` removed */
  KILN_GPU_LAYOUT_MMA,     /* mma.sync m16n8 accumulator fragments; wpc = warpsPerCTA (2-D) */
  KILN_GPU_LAYOUT_DOT_OP,  /* operand `op_idx` (0 = A, 1 = B) of a dot whose result is mma(wpc) */
  KILN_GPU_LAYOUT_KIND_COUNT
} KilnGpuLayoutKind;

/* For SLICE the array fields describe the parent, `parent` says whether it is BLOCKED or MMA,
 * and `rank` is the parent's rank. */
typedef struct KilnGpuLayout {
  KilnGpuLayoutKind kind;
  KilnGpuLayoutKind parent; /* SLICE: the parent's kind (BLOCKED or MMA); NONE otherwise */
  int rank;
  int spt[KILN_GPU_MAX_RANK];   /* sizePerThread */
  int tpw[KILN_GPU_MAX_RANK];   /* threadsPerWarp (product 32) */
  int wpc[KILN_GPU_MAX_RANK];   /* warpsPerCTA (product num_warps) */
  int order[KILN_GPU_MAX_RANK]; /* dims, fastest varying first */
  int slice_dim;
  int op_idx;  /* DOT_OP: 0 (A) or 1 (B) */
  int k_width; /* DOT_OP: consecutive k elements per 32-bit register (2 for f16/bf16, 4 for i8,
                * 1 for tf32) */
} KilnGpuLayout;

/* Encodes a layout as the DictionaryAttr used for tensor encodings. */
MlirAttribute kiln_gpu_layout_attr(MlirContext ctx, const KilnGpuLayout *l);
/* Decodes an encoding attribute; false (and *l zeroed, kind NONE) when attr is null or not ours. */
bool kiln_gpu_layout_parse(MlirAttribute attr, KilnGpuLayout *l);
/* The layout of a value's type (NONE for scalars / unencoded tensors). */
KilnGpuLayout kiln_gpu_layout_of_type(MlirType t);
bool kiln_gpu_layout_equal(const KilnGpuLayout *a, const KilnGpuLayout *b);
/* `t` with its encoding replaced by l's attribute (t itself for scalars). */
MlirType kiln_gpu_type_with_layout(MlirType t, const KilnGpuLayout *l);
/* A blocked layout for `shape`: `vec` contiguous elements per thread along order[0], the 32 lanes
 * and then the warps spread along `order` first.  order NULL means row-major (last dim fastest). */
KilnGpuLayout kiln_gpu_layout_blocked(int rank, const int64_t *shape, int num_warps, int vec,
                                      const int *order);
/* slice{dim, parent}; the parent is blocked or mma. */
KilnGpuLayout kiln_gpu_layout_slice(const KilnGpuLayout *parent, int dim);
/* The parent of a slice (what expand_dims makes of it, what a reduce to it reads). */
KilnGpuLayout kiln_gpu_layout_slice_parent(const KilnGpuLayout *slice);
/* Whether a tile of `shape` may take the mma layout l: every dim either 1 (all threads hold the
 * one row or column, as expand_dims of a slice makes it) or whole 16x8 blocks for every warp. */
bool kiln_gpu_mma_fits(const KilnGpuLayout *l, int rank, const int64_t *shape);
/* mma (version 2, instrShape 16x8) with wm x wn warps, and its dot operands. */
KilnGpuLayout kiln_gpu_layout_mma(int wm, int wn);
KilnGpuLayout kiln_gpu_layout_dot_op(const KilnGpuLayout *mma, int op_idx, int k_width);
/* The dot_op kWidth of an mma operand's element type: 4 for i8, 2 for f16/bf16, 1 for f32 (a
 * tf32 dot). */
int kiln_gpu_dot_k_width(MlirType elem);

/* ---- what a thread owns.  A tile of shape S (rank r, r == the layout's tensor rank) under a
 * layout gives each thread n_d elements along each dim d; the thread keeps their product in one
 * list, ordered with the layout's order[0] dim varying fastest.  The coordinate of local index
 * i along dim d is (base_d(thread) + off) where off is a constant; base_d depends only on the lane
 * and warp ids (see KilnGpuDimMap). */
typedef struct KilnGpuDimMap {
  int n;                     /* elements per thread along the dim */
  int spt;                   /* contiguous run length inside one repetition */
  int64_t extent;            /* spt*tpw*wpc: elements covered by the CTA per repetition */
  int64_t size;              /* tile size along the dim */
  bool base_used;            /* false when the coordinate does not depend on the thread */
  int lane_shift, lane_bits; /* lane id bits that select the chunk along this dim */
  int warp_shift, warp_bits; /* warp id bits likewise */
  int tpw, wpc;
  /* base = lane_field * lane_mul + warp_field * warp_mul; the offset of local index i is
   * (i % spt) * elem_stride + (i / spt) * extent.  Blocked: lane_mul = spt, warp_mul =
   * tpw * spt, elem_stride = 1; mma rows: 1, 16, 8 (rows g and g + 8 of each 16-row block). */
  int lane_mul, warp_mul, elem_stride;
} KilnGpuDimMap;

typedef struct KilnGpuOwn {
  int rank; /* the tensor's rank (parent rank - 1 for slices) */
  int64_t shape[KILN_GPU_MAX_RANK];
  KilnGpuDimMap dim[KILN_GPU_MAX_RANK];
  int order[KILN_GPU_MAX_RANK]; /* fastest first, in tensor dims */
  int64_t count;                /* elements per thread */
} KilnGpuOwn;

/* Fills *o for a tile of shape[rank] under layout l (rank 0 / NONE: one element). */
void kiln_gpu_own(const KilnGpuLayout *l, int rank, const int64_t *shape, KilnGpuOwn *o);
/* The same for a laid-out tile type (its shape and layout attribute). */
KilnGpuOwn kiln_gpu_own_of_type(MlirType t);
/* Local indices (per tensor dim) of list position j. */
void kiln_gpu_own_local(const KilnGpuOwn *o, int64_t j, int *local);
/* List position of local indices. */
int64_t kiln_gpu_own_index(const KilnGpuOwn *o, const int *local);
/* Constant part of the coordinate of local index i along dim d (add base_d when base_used). */
int64_t kiln_gpu_own_offset(const KilnGpuOwn *o, int d, int i);

/* ---------------------------------------------------------------- shared buffers (shared.c)
 * A staged ring is a memref<stages x rows x cols x T, {kind = "shared", ...}>: the memory space
 * is the shared encoding (swizzle, and whether the tile is staged transposed). */
typedef struct KilnGpuShared {
  int vec, per_phase, max_phase; /* 16-byte chunk c of staged row r at c ^ ((r / pp) % mp) */
  bool trans;                    /* order [0, 1]: staged S[col][row] */
  bool wgmma; /* read by wgmma descriptors: staged rows wider than 128 bytes are cut into
               * panels of 128-byte rows (low_swizzle_panel), slots 1024-byte aligned */
  bool fma;   /* read element by element by the FMA path's dot (lower_shared.c): no swizzle,
               * the operand's rows (A: m, B: k) staged row-major */
} KilnGpuShared;
/* Who reads a ring, which decides its encoding. */
typedef enum KilnGpuReader {
  KILN_GPU_READ_LDMATRIX, /* mma.sync fragments: swizzled 16-byte chunks */
  KILN_GPU_READ_WGMMA,    /* wgmma descriptors: swizzled 128-byte panels */
  KILN_GPU_READ_FMA,      /* the FMA dot: plain row-major operand rows */
} KilnGpuReader;
typedef struct KilnGpuBuffer {
  KilnGpuShared enc;
  int64_t stages, rows, cols;
  int64_t slot_bytes; /* one stage, rounded up to 128 bytes */
  MlirType elem;
} KilnGpuBuffer;
/* The swizzle of a rows x cols tile of 16-bit elements staged as it is or transposed. */
KilnGpuShared kiln_gpu_shared_swizzled(int64_t rows, int64_t cols, bool trans);
/* The alignment wgmma needs of a buffer's slots: a 128-byte swizzle repeats every 8 rows of 128
 * bytes, and the hardware swizzles absolute shared addresses. */
#define KILN_GPU_WGMMA_ALIGN 1024
MlirAttribute kiln_gpu_shared_attr(MlirContext ctx, const KilnGpuShared *s);
MlirType kiln_gpu_buffer_type(MlirContext ctx, int64_t stages, int64_t rows, int64_t cols,
                              MlirType elem, bool trans, KilnGpuReader reader);
/* Decodes a buffer type; false when t is not one. */
bool kiln_gpu_buffer_parse(MlirType t, KilnGpuBuffer *b);

/* Elements per vector access through pointer tile `ptrs` whose elements a thread holds as `own`
 * says: what the analysis proves, what the layout keeps contiguous in one thread, <= 128 bits
 * (the SIMT lowering's loads and stores, and the pipeliner's copies). */
int kiln_gpu_access_vec(const KilnAxisMap *m, MlirValue ptrs, const KilnGpuOwn *own);

/* ---------------------------------------------------------------- helpers */

/* (passes: kiln_pass_make; the pointer map, op lists, kernels, element sizes: the rewrite kit
 * of kiln_mlir_internal.h) */
/* An operation parsed from text (generic or pretty form); null on a parse error. */
MlirOperation kiln_gpu_parse_op(MlirContext ctx, const char *text);
MlirAttribute kiln_gpu_parse_attr(MlirContext ctx, const char *text);
MlirType kiln_gpu_parse_type(MlirContext ctx, const char *text);
int64_t kiln_gpu_int_attr(MlirOperation op, const char *name, int64_t dflt);
/* floor(log2(v)), 0 for v <= 1: the bits of a power-of-two count of lanes, warps or runs. */
static inline int kiln_gpu_ilog2(int64_t v) {
  int n = 0;
  for (; v > 1; v >>= 1) n++;
  return n;
}

/* MLIR 19's nvvm.mma.sync verifier rejects bf16 m16n8k16, so that mma is inline PTX starting
 * with this text (lower_dot.c writes it, emu_lower.c recognizes it). */
#define KILN_GPU_MMA_BF16_PTX "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"

/* The integer mma (i8 dot, i32 accumulators, wrapping: no .satfinite) is inline PTX too: one
 * form for the two targets and the emulator, which recognizes this text. */
#define KILN_GPU_MMA_S8_PTX "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"

/* The TF32 mma (an f32 dot with the tf32 flag; one tf32 a register, k blocks of 8) is inline PTX
 * as the others, and so is the rounding of its operands, cvt.rna.tf32.f32 (ties away from zero;
 * emu_lower.c computes both on the host). */
#define KILN_GPU_MMA_TF32_PTX "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
#define KILN_GPU_CVT_TF32_PTX "cvt.rna.tf32.f32"
/* Two f32 rounded to f16 (bf16) and packed in one 32-bit register, the first operand in the
 * upper half: one instruction for a pair of P or dS where two cvt and a mov would be (sm_80+;
 * lower_dot.c's A operands from accumulators; emu_lower.c rounds on the host the same way). */
#define KILN_GPU_CVT_F16X2_PTX  "cvt.rn.f16x2.f32"
#define KILN_GPU_CVT_BF16X2_PTX "cvt.rn.bf16x2.f32"

/* stmatrix (sm_90) has no NVVM intrinsic in LLVM 19, so the epilogue's is inline PTX starting
 * with this text, then the count (1, 2 or 4) and ".shared.b16 [$0], {$1, ...};" (lower_epilogue.c
 * writes it, emu_lower.c recognizes it). */
#define KILN_GPU_STMATRIX_PTX "stmatrix.sync.aligned.m8n8.x"

/* The unit attribute the layout pass puts on a dot it gives wgmma's accumulator layout (the
 * config asks for wgmma and the tile fits); the pipeliner drops it when it cannot stage both
 * operands for descriptors, and the dot then runs on mma.sync. */
#define KILN_GPU_WGMMA_DOT_ATTR "kiln.wgmma_dot"
/* The unit attribute the pipeliner puts on a wgmma dot whose loop keeps one wgmma group in
 * flight (num_stages >= 4 and the accumulator only carried to the next iteration): the dot
 * waits with wgmma.wait_group 1, and a kiln.wgmma_wait {pending = 0} after the loop. */
#define KILN_GPU_WGMMA_PENDING_ATTR "kiln.wgmma_pending"
/* On the module once a dot of it lowers to wgmma (an i32 1): its PTX targets sm_90a. */
#define KILN_GPU_WGMMA_MODULE_ATTR "kiln.gpu.wgmma"

/* ---------------------------------------------------------------- wgmma (wgmma.c)
 * sm_90's warpgroup MMA as inline PTX: the lowering writes these texts, emu_lower.c recognizes
 * them (kiln_gpu_wgmma_parse for the MMA), so the two agree by construction.  All are
 * llvm.inline_asm ops with has_side_effects. */

/* The MMA m64n<n>k16, f32 accumulators, A and B from shared-memory descriptors (bf16: .bf16
 * operands, else .f16; trans_a / trans_b the immediate transposes, 0 = K-major, 1 = MN-major):
 * R = n / 2 results "=f" tied to the R accumulator operands "0".."R-1", then the descriptors
 * "l,l"; the result is an LLVM struct of R f32.  n a multiple of 8 in 8..256.  Writes the text
 * into buf; returns its length, or -1 when it does not fit in cap or an argument is out of
 * range. */
int kiln_gpu_wgmma_ptx(char *buf, size_t cap, int n, bool bf16, int trans_a, int trans_b);
/* Whether text is exactly what kiln_gpu_wgmma_ptx writes for some arguments; if so they go to
 * the out-parameters (untouched otherwise). */
bool kiln_gpu_wgmma_parse(const char *text, int *n, bool *bf16, int *trans_a, int *trans_b);
/* The constraints of `regs` tied f32 registers ("=f" x regs, then "0".."regs-1"), followed by
 * the two descriptors ",l,l" when `descriptors` (the MMA; without them: the fence and the wait).
 * Returns the length, or -1 when it does not fit. */
int kiln_gpu_wgmma_constraints(char *buf, size_t cap, int regs, bool descriptors);
/* The RS form of the MMA: A (64 x 16, always K-major) from four 32-bit registers per thread,
 * each two 16-bit elements in mma.sync's m16n8k16 A fragment of its warp's 16 rows; B from its
 * descriptor, trans_b its immediate transpose.  Operands: R tied accumulators, then the A
 * registers $2R..$2R+3 ("r") and B's descriptor $2R+4 ("l").  Returns the length, or -1 as
 * kiln_gpu_wgmma_ptx. */
int kiln_gpu_wgmma_rs_ptx(char *buf, size_t cap, int n, bool bf16, int trans_b);
/* Whether text is exactly what kiln_gpu_wgmma_rs_ptx writes for some arguments; if so they go to
 * the out-parameters (untouched otherwise). */
bool kiln_gpu_wgmma_rs_parse(const char *text, int *n, bool *bf16, int *trans_b);
/* The tf32 MMA m64n<n>k8 (f32 operands read as tf32, f32 accumulators), A and B from
 * shared-memory descriptors, both K-major (tf32 has no immediate transposes): the operands and
 * constraints of kiln_gpu_wgmma_ptx.  Returns the length, or -1 as kiln_gpu_wgmma_ptx. */
int kiln_gpu_wgmma_tf32_ptx(char *buf, size_t cap, int n);
/* Whether text is exactly what kiln_gpu_wgmma_tf32_ptx writes for some n; if so it goes to *n
 * (untouched otherwise). */
bool kiln_gpu_wgmma_tf32_parse(const char *text, int *n);
/* The RS form's constraints: "=f" x regs, "0".."regs-1", then "r,r,r,r,l".  Returns the length,
 * or -1 when it does not fit. */
int kiln_gpu_wgmma_rs_constraints(char *buf, size_t cap, int regs);
/* Makes an MMA text (any of the three forms, as written above) its scale-d-false variant in
 * place: D = A B, the accumulator operands not read (they may be undefined).  False, text
 * unchanged, when text does not start as the MMA texts do. */
bool kiln_gpu_wgmma_set_zero_d(char *text);
/* Whether text is an MMA text's scale-d-false variant; if so the text with scale-d true (what
 * the parsers above read) goes into buf (cap bytes). */
bool kiln_gpu_wgmma_zero_d(const char *text, char *buf, size_t cap);
/* Orders the accumulator's register writes before the next MMA reads them: R tied f32 operands
 * and a struct of R f32 as the result, as the wait. */
#define KILN_GPU_WGMMA_FENCE_PTX "wgmma.fence.sync.aligned;"
/* Closes the group of the MMAs issued since the last commit: no operands, no results. */
#define KILN_GPU_WGMMA_COMMIT_PTX "wgmma.commit_group.sync.aligned;"
/* Waits until at most K groups are pending: this prefix, then K and ";".  R tied f32 operands,
 * the result (a struct of R f32) is the accumulator after the wait. */
#define KILN_GPU_WGMMA_WAIT_PTX "wgmma.wait_group.sync.aligned "
/* Whether text is the wait with some K (0..63), into *k. */
bool kiln_gpu_wgmma_wait_parse(const char *text, int *k);
/* Makes the generic proxy's shared-memory writes (st.shared, cp.async) visible to the async
 * proxy that wgmma reads through: no operands, no results. */
#define KILN_GPU_FENCE_PROXY_ASYNC_PTX "fence.proxy.async.shared::cta;"

/* LLVM 19's NVPTX backend selects no llvm.fence and MLIR 19 has no nvvm.membar, so the fence
 * around atomic_cas is inline PTX (lower_memory.c writes it; emu_lower.c makes it a host fence). */
#define KILN_GPU_FENCE_PTX "fence.acq_rel.gpu;"

/* The LLVM intrinsic of PTX's mul.hi.u32 (lower_math.c's Philox; emu_lower.c computes it). */
#define KILN_GPU_MULHI "llvm.nvvm.mulhi.ui"

/* A global access of 1, 2 or 4 words of word_bits (32: b32 words; 16: one b16 word) under one
 * predicate, as inline PTX: LLVM turns an access guarded by a branch into several narrower ones
 * (and a branch), while one predicated `@p ld.global.v4.b32` is what the hardware runs; a lone
 * masked element likewise costs LLVM a branch and two blocks, and the hardware one predicated
 * instruction.  lower_memory.c writes it, emu_lower.c recognizes the same text.  Load operands:
 * $0..$(words-1) the results, then the address, the predicate (i1, constraint "b") and the
 * words a masked-off load yields; store operands: the address, the predicate, the words.  Writes
 * the asm text and its constraints. */
void kiln_gpu_pred_access_ptx(bool store, int words, int word_bits, char *text, size_t text_cap,
                              char *cons, size_t cons_cap);

/* The PTX approximate instructions of the SIMT math lowering (lower_math.c), all f32, in the
 * order of the emulator's KilnEmuApprox (runtime/emu/kiln_emu.h): the emu rewrite (emu_lower.c)
 * turns the one at index i into kiln_emu_approx_f32(i, x).  One list, so that an instruction
 * the lowering emits is one the emulator knows. */
typedef enum KilnGpuApprox {
  KILN_GPU_APPROX_EX2,
  KILN_GPU_APPROX_LG2,
  KILN_GPU_APPROX_SIN,
  KILN_GPU_APPROX_COS,
  KILN_GPU_APPROX_RSQRT,
  KILN_GPU_APPROX_TANH,
  KILN_GPU_APPROX_RCP,
  KILN_GPU_APPROX_COUNT
} KilnGpuApprox;
extern const char *const kiln_gpu_approx_ptx[KILN_GPU_APPROX_COUNT]; /* "ex2.approx.ftz.f32" */

/* The passes' bodies. */
MlirLogicalResult kiln_gpu_layouts_module(MlirOperation module, void *opts);
/* One convert_layout per (value, layout) in each kernel (convert_cse.c); opts unused. */
MlirLogicalResult kiln_gpu_convert_cse_module(MlirOperation module, void *opts);
/* kiln-gpu-pipeline (pipeline_pass.c): the loads feeding tensor-core operands in loops become
 * rings of shared buffers with async copies; kiln-gpu-smem-alloc (smem_alloc.c): byte offsets of
 * the buffers, with liveness, checked against kiln.smem_limit. */
MlirLogicalResult kiln_gpu_pipeline_module(MlirOperation module, void *opts);
MlirLogicalResult kiln_gpu_smem_alloc_module(MlirOperation module, void *opts);
MlirLogicalResult kiln_gpu_to_llvm_module(MlirOperation module, void *opts);
MlirLogicalResult kiln_gpu_to_emu_module(MlirOperation module, void *opts); /* emu_lower.c */

#endif
