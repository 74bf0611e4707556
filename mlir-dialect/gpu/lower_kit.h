/* lower_kit.h - the SIMT lowering's state and toolkit (lower_kit.c): what the dispatcher
 * (lower.c) and the op families (lower_*.c, declared in lower.h) all build with.  Nothing here
 * calls into them. */
#ifndef KILN_GPU_LOWER_KIT_H
#define KILN_GPU_LOWER_KIT_H

#include "gpu_internal.h"

typedef struct Vals {
  int64_t n;
  MlirValue *v;
} Vals;

typedef struct Low {
  MlirContext ctx;
  MlirLocation loc; /* of the op being lowered */
  KilnIRBuilder b;
  KilnPtrMap vals; /* kiln value ptr -> Vals* */
  void **allocs;
  size_t n_allocs, cap_allocs;
  int num_warps;
  int64_t smem_bytes; /* the most any op needs at once */
  int64_t smem_base;  /* where the arena starts: kiln.arena_offset of the enclosing loop */
  int64_t smem_limit; /* kiln.smem_limit: the most shared memory a program may have */
  int sm;             /* kiln.sm: the architecture (80, 90) whose instructions it may use */
  void *dot_stage;    /* lower_dot.c: the last dot operand tile staged, for reuse (or NULL) */
  bool wgmma_bufs;    /* the kernel stages operands for wgmma (its cp.async waits fence) */
  bool wgmma;         /* a dot ran on wgmma: the arena is 1024-aligned, the PTX targets sm_90a */
  KilnAxisMap *axis;
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
bool low_is_zero(MlirValue v); /* a constant integer 0 or float +0 (all bits clear) */
MlirValue low_cmpi(Low *L, const char *pred, MlirValue a, MlirValue b);
/* arith.cmpf with a predicate by name: the ordered ones ("oeq", "olt", ...: false for a NaN
 * operand), the unordered ones ("uno", "une", ...: true for it), "false", "true". */
MlirValue low_cmpf(Low *L, const char *pred, MlirValue a, MlirValue b);
/* Inline PTX with one result of type rt: constraints like "=f,f". */
MlirValue low_asm(Low *L, const char *text, const char *constraints, const MlirValue *ops, size_t n,
                  MlirType rt);
/* Inline PTX with side effects (kept in its place among loads, stores and barriers, never
 * dropped): nres (0 or 1) results of types res. */
MlirOperation low_asm_effects(Low *L, const char *text, const char *constraints,
                              const MlirValue *ops, size_t n, const MlirType *res, size_t nres);
MlirValue low_gep(Low *L, MlirValue base, MlirValue index, MlirType elem);
MlirValue low_barrier(Low *L);

/* Thread ids. */
MlirValue low_lane(Low *L);
MlirValue low_warp(Low *L);
/* The coordinate along tensor dim d of list position j of `own` (an i32 value). */
MlirValue low_coord(Low *L, const KilnGpuOwn *own, int64_t j, int d);
/* The part of low_coord that depends on the thread (null when it does not), and the constant. */
MlirValue low_coord_base(Low *L, const KilnGpuOwn *own, int d);

/* The shared-memory arena: a pointer to byte `offset` of it (addrspace 3), growing the arena to
 * at least `bytes`.  Both count from L->smem_base (inside a loop that runs while shared buffers
 * are live, the allocator puts the arena after them); low_smem_at takes absolute offsets. */
MlirValue low_smem(Low *L, int64_t offset, int64_t bytes);
MlirValue low_smem_at(Low *L, int64_t offset, int64_t bytes);

#endif
