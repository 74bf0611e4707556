/* lower.h - state shared by the files of the SIMT lowering (convert-kiln-gpu-to-llvm).
 *
 * A lowered tile is the list of scalars its layout gives the running thread (KilnGpuOwn order);
 * a scalar is a list of one.  `Low` keeps the map from each kiln value to that list and an
 * insertion point in the new llvm.func.  One file per op family: lower.c (driver, control flow,
 * elementwise and shape ops), lower_memory.c (global loads/stores/atomics), lower_reduce.c
 * (reductions), lower_shared.c (everything through shared memory: convert_layout, trans, dot),
 * lower_math.c (math functions and rand). */
#ifndef KILN_GPU_LOWER_H
#define KILN_GPU_LOWER_H

#include "gpu_internal.h"

typedef struct Vals {
  int64_t n;
  MlirValue *v;
} Vals;

typedef struct LowPipe LowPipe;

typedef struct Low {
  MlirContext ctx;
  MlirLocation loc; /* of the op being lowered */
  KilnIRBuilder b;
  KilnGpuMap vals; /* kiln value ptr -> Vals* */
  void **allocs;
  size_t n_allocs, cap_allocs;
  int num_warps;
  int num_stages;     /* kiln.num_stages: shared buffers per pipelined load */
  int64_t smem_bytes; /* the most any op needs at once */
  int64_t smem_base;  /* bytes of the arena held by enclosing pipelines; low_smem starts above */
  int64_t smem_limit; /* kiln.smem_limit: the most shared memory a program may have */
  LowPipe *pipe;      /* the innermost pipelined loop being lowered, or NULL */
  KilnGpuAxisMap *axis;
  bool failed;
  MlirType i1, i8, i32, i64, f32, ptr1, ptr3;
} Low;

/* Memory owned by the lowering of one kernel (freed together at its end). */
void *low_alloc(Low *L, size_t size);
Vals *low_vals(Low *L, int64_t n);
void low_set(Low *L, MlirValue old, Vals *v);
Vals *low_get(Low *L, MlirValue old); /* fails the lowering (error) when missing */
void low_error(Low *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Scalar type of a lowered element: !kiln.ptr<T> -> !llvm.ptr<1>, others unchanged. */
MlirType low_scalar_type(Low *L, MlirType t);

/* Op creation at L->b. */
MlirOperation low_op(Low *L, const char *name, const MlirValue *ops, size_t n, const MlirType *res,
                     size_t nres, const MlirNamedAttribute *attrs, size_t nattrs);
MlirValue low_op1(Low *L, const char *name, const MlirValue *ops, size_t n, MlirType res);
MlirValue low_bin(Low *L, const char *name, MlirValue a, MlirValue b);
MlirValue low_i32(Low *L, int64_t v);
MlirValue low_f32(Low *L, double v);
MlirValue low_const(Low *L, MlirType t, MlirAttribute value);
bool low_is_true(MlirValue v); /* an arith.constant true */
MlirValue low_cmpi(Low *L, const char *pred, MlirValue a, MlirValue b);
/* Inline PTX with one result of type rt: constraints like "=f,f". */
MlirValue low_asm(Low *L, const char *text, const char *constraints, const MlirValue *ops, size_t n,
                  MlirType rt);
MlirValue low_gep(Low *L, MlirValue base, MlirValue index, MlirType elem);
MlirValue low_barrier(Low *L);

/* Thread ids. */
MlirValue low_lane(Low *L);
MlirValue low_warp(Low *L);
/* The coordinate along tensor dim d of list position j of `own` (an i32 value). */
MlirValue low_coord(Low *L, const KilnGpuOwn *own, int64_t j, int d);
/* The part of low_coord that depends on the thread (null when it does not), and the constant. */
MlirValue low_coord_base(Low *L, const KilnGpuOwn *own, int d);
KilnGpuOwn low_own_of(MlirType t);

/* The shared-memory arena: a pointer to byte `offset` of it (addrspace 3), growing the arena to
 * at least `bytes`.  Both count from L->smem_base (ops inside a pipelined loop must not touch
 * its buffers); low_smem_at takes absolute offsets. */
MlirValue low_smem(Low *L, int64_t offset, int64_t bytes);
MlirValue low_smem_at(Low *L, int64_t offset, int64_t bytes);

/* Global memory helpers (lower_memory.c).  Elements per vector access through pointer tile
 * ptrs (what the axis analysis proves, what the layout keeps in one thread, at most 128 bits);
 * the and of v masks (null when all are constant true); one element under its own mask (the
 * loaded value, or `other`). */
int low_vector_width(Low *L, MlirValue ptrs, const KilnGpuOwn *own);
MlirValue low_all_true(Low *L, const MlirValue *m, int v);
MlirValue low_load_masked(Low *L, MlirValue p, MlirValue m, MlirValue other, MlirType et,
                          int64_t align);

/* Lowers one op of the old body at L->b (lower.c's dispatcher; the pipeliner re-lowers the
 * address computations of future iterations with it). */
bool low_lower_op(Low *L, MlirOperation op);

/* Software pipelining (lower_pipeline.c): loads inside an scf.for that feed a tensor-core dot
 * operand are issued num_stages - 1 iterations ahead with cp.async into a ring of shared
 * buffers.  lower_for asks for a plan; with one it calls prologue before building the new
 * loop, body_begin at the top of the new body and end after the loop.  Inside the body,
 * low_load skips the loads the plan owns and low_dot_operand's convert reads the ring. */
LowPipe *low_pipe_plan(Low *L, MlirOperation for_op); /* NULL: nothing to pipeline */
void low_pipe_prologue(Low *L, LowPipe *p);
void low_pipe_body_begin(Low *L, LowPipe *p, MlirValue new_iv);
void low_pipe_end(Low *L, LowPipe *p);
bool low_pipe_owns_load(const Low *L, MlirOperation load);
/* A convert to a dot_op layout whose source is a pipelined load: the fragments come from the
 * ring.  False (nothing emitted) when the source is not pipelined. */
bool low_pipe_operand(Low *L, MlirOperation cvt);

/* Op families: each returns false after reporting an error. */
bool low_load(Low *L, MlirOperation op);
bool low_store(Low *L, MlirOperation op);
/* atomic_rmw: relaxed llvm.atomicrmw per owned element, each replicated element updated once. */
bool low_atomic(Low *L, MlirOperation op);
bool low_reduce(Low *L, MlirOperation op);
bool low_convert(Low *L, MlirOperation op); /* convert_layout and trans */
bool low_dot(Low *L, MlirOperation op);
bool low_math(Low *L, MlirOperation op);    /* math.* */
bool low_rand(Low *L, MlirOperation op);
/* Tensor cores (lower_dot.c): a convert to a dot_op layout (shared staging + ldmatrix), and a
 * dot with an mma result (mma.sync). */
bool low_dot_operand(Low *L, MlirOperation op);
bool low_dot_mma(Low *L, MlirOperation op);
/* Element offset of (row, col) in a swizzled shared tile of 16-bit elements with `cols` columns. */
MlirValue low_swizzle(Low *L, MlirValue row, MlirValue col, int64_t cols);
/* The dot_op fragments (registers) of a staged, swizzled rows x cols tile at base, into out. */
void low_dot_fragments(Low *L, const KilnGpuLayout *dl, MlirValue base, int64_t rows,
                       int64_t cols, Vals *out);

int low_elem_bits(MlirType t);

#endif
