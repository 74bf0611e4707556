/* cpu_kit.h - the CPU lowering's state and toolkit (cpu_kit.c), what the dispatcher (cpu_lower.c)
 * and the kiln op families (cpu_ops.c) both build with. */
#ifndef KILN_CPU_KIT_H
#define KILN_CPU_KIT_H

#include "kiln_mlir_internal.h"

typedef struct Cpu Cpu;
typedef struct CpuVal CpuVal;

/* Per element of an elementwise op: fn gets the operands' elements, returns the result element. */
typedef MlirValue (*CpuScalarFn)(Cpu *c, const MlirValue *elems, void *user);
/* Element idx of a deferred tile (cpu_kit.c, "Deferred tiles"). */
typedef MlirValue (*CpuElemFn)(Cpu *c, CpuVal *v, const MlirValue *idx);

/* What an old (kiln-level) SSA value became.  A scalar, or a splat tile, is `scalar`; a tile is
 * `buf`, a static-shape memref alloca'd in the function's entry block, or, when both are null,
 * deferred: `elem` computes element idx where a consumer asks for it (kiln_cpu_elem), from the
 * operands of `op` (and, for an elementwise op, `fn` with `user`).  Pointers are i64 addresses. */
struct CpuVal {
  MlirValue old;
  MlirValue scalar;
  MlirValue buf;
  CpuElemFn elem;
  MlirOperation op;
  CpuScalarFn fn;
  void *user; /* points at user_data */
  _Alignas(8) unsigned char user_data[16];
  int cost; /* deferred arithmetic ops that each element read re-computes (views count none) */
};

struct Cpu {
  MlirContext ctx;
  KilnIRBuilder b;         /* where lowered code goes now */
  MlirOperation alloca_at; /* allocas are inserted before this op of the entry block */
  MlirBlock entry;
  KilnPtrMap map; /* old value ptr -> CpuVal* (each allocated alone: stays valid) */
  MlirValue pid[3], nprog[3];
  MlirLocation loc;  /* location of the op being lowered */
  KilnAxisMap *axis; /* of the kernel being lowered (axis_info.c): which accesses vectorize */
  bool failed;
};

/* cpu_kit.c */
CpuVal *kiln_cpu_get(Cpu *c, MlirValue old);
void kiln_cpu_set_scalar(Cpu *c, MlirValue old, MlirValue v);
void kiln_cpu_set_buf(Cpu *c, MlirValue old, MlirValue buf);
void kiln_cpu_map_free(Cpu *c);            /* the map and every CpuVal in it */
MlirType kiln_cpu_scalar_type(MlirType t); /* ptr -> i64, tile -> lowered element type */
MlirValue kiln_cpu_alloc(Cpu *c, MlirType tile_type);
MlirValue kiln_cpu_cidx(Cpu *c, int64_t v);
MlirValue kiln_cpu_op(Cpu *c, const char *name, const MlirValue *ops, size_t n, MlirType rt);
MlirValue kiln_cpu_op_attrs(Cpu *c, const char *name, const MlirValue *ops, size_t n, MlirType rt,
                            const MlirNamedAttribute *attrs, size_t n_attrs);
MlirValue kiln_cpu_elem(Cpu *c, CpuVal *v, const MlirValue *idx);
/* Copies a lowered tile (scalar/splat or buffer) into the buffer dst. */
void kiln_cpu_copy(Cpu *c, CpuVal *src, MlirValue dst);
/* Materializes v into a buffer of its own (a deferred v becomes that buffer); v is read by no
 * other op than the caller (v's only consumer, lowered in v's block), see cpu_kit.c. */
MlirValue kiln_cpu_buf(Cpu *c, CpuVal *v);
/* A lowered tile that is a scalar or a buffer: v itself, or, for a deferred v, a copy made here
 * into a fresh buffer (v stays deferred: other consumers, maybe in other blocks, read it too). */
CpuVal kiln_cpu_stored(Cpu *c, CpuVal *v);
bool kiln_cpu_is_deferred(const CpuVal *v);
/* Materializes op's deferred operands that cost arithmetic (kiln_cpu_buf), for consumers whose
 * loop nests LLVM does not vectorize (cpu_kit.c, "Where arithmetic is not fused"). */
void kiln_cpu_compute_operands(Cpu *c, MlirOperation op);
/* Records old as deferred (see CpuVal), then settles it: materialized at once when it costs
 * arithmetic and is read more than once, from another block, or its expression grew too big. */
CpuVal *kiln_cpu_defer(Cpu *c, MlirValue old, MlirOperation op, CpuElemFn elem, int cost);
void kiln_cpu_store_elem(Cpu *c, MlirValue buf, MlirValue v, const MlirValue *idx, int rank);
MlirValue kiln_cpu_load_elem(Cpu *c, MlirValue buf, const MlirValue *idx, int rank);
MlirValue kiln_cpu_int_const(Cpu *c, MlirType t, int64_t v);
/* The static shape of a tile type (rank 0 for a scalar); shape holds up to 16 dims. */
void kiln_cpu_shape(MlirType t, int64_t *shape, int *rank);
/* Per element of op's (single) result: fn gets the operands' elements, returns the result
 * element.  When every operand is a scalar/splat and `splat_ok`, fn runs once.  kiln_cpu_map
 * emits a loop nest now (ops with effects, in their order); kiln_cpu_map_pure defers the result
 * (pure ops: fn and the user_size bytes at user are kept for later). */
void kiln_cpu_map(Cpu *c, MlirOperation op, CpuScalarFn fn, void *user, bool splat_ok);
void kiln_cpu_map_pure(Cpu *c, MlirOperation op, CpuScalarFn fn, const void *user,
                       size_t user_size);
/* kiln_cpu_map_pure of result `result` of a pure op with several (arith.mulsi_extended's high
 * word): fn returns that result's element. */
void kiln_cpu_map_pure_result(Cpu *c, MlirOperation op, int result, CpuScalarFn fn,
                              const void *user, size_t user_size);

/* A loop nest over `shape` with index induction variables passed to fn. */
typedef void (*CpuNestFn)(Cpu *c, const MlirValue *idx, void *user);
void kiln_cpu_nest(Cpu *c, const int64_t *shape, int rank, CpuNestFn fn, void *user);
/* Marks an scf.for that LLVM must not unroll fully (an outer loop of a nest). */
void kiln_cpu_no_full_unroll(MlirOperation loop);

#endif
