/* cpu_lower.h - state shared by the files of the CPU lowering (convert-kiln-to-cpu). */
#ifndef KILN_CPU_LOWER_H
#define KILN_CPU_LOWER_H

#include "kiln_mlir_internal.h"

/* What an old (kiln-level) SSA value became.  A scalar, or a splat tile, is `scalar`; any other
 * tile is `buf`, a static-shape memref alloca'd in the function's entry block.  Pointers are i64
 * addresses. */
typedef struct CpuVal {
  MlirValue old;
  MlirValue scalar;
  MlirValue buf;
} CpuVal;

/* Open addressing over pointers to individually allocated values: a CpuVal* handed out by
 * kiln_cpu_get stays valid while the map grows (lowerings hold one across later inserts). */
typedef struct CpuMap {
  CpuVal **slots;
  size_t cap, n;
} CpuMap;

typedef struct Cpu {
  MlirContext ctx;
  KilnIRBuilder b;          /* where lowered code goes now */
  MlirOperation alloca_at;  /* allocas are inserted before this op of the entry block */
  MlirBlock entry;
  CpuMap map;
  MlirValue pid[3], nprog[3];
  MlirLocation loc;         /* location of the op being lowered */
  bool failed;
} Cpu;

typedef MlirValue (*CpuScalarFn)(Cpu *c, const MlirValue *elems, void *user);

/* cpu_lower.c */
CpuVal *kiln_cpu_get(Cpu *c, MlirValue old);
void kiln_cpu_set_scalar(Cpu *c, MlirValue old, MlirValue v);
void kiln_cpu_set_buf(Cpu *c, MlirValue old, MlirValue buf);
MlirType kiln_cpu_scalar_type(MlirType t);        /* ptr -> i64, tile -> lowered element type */
MlirValue kiln_cpu_alloc(Cpu *c, MlirType tile_type);
MlirValue kiln_cpu_cidx(Cpu *c, int64_t v);
MlirValue kiln_cpu_op(Cpu *c, const char *name, const MlirValue *ops, size_t n, MlirType rt);
MlirValue kiln_cpu_op_attrs(Cpu *c, const char *name, const MlirValue *ops, size_t n,
                            MlirType rt, const MlirNamedAttribute *attrs, size_t n_attrs);
MlirValue kiln_cpu_elem(Cpu *c, CpuVal *v, const MlirValue *idx);
/* Copies a lowered tile (scalar/splat or buffer) into the buffer dst. */
void kiln_cpu_copy(Cpu *c, CpuVal *src, MlirValue dst);
MlirValue kiln_cpu_buf(Cpu *c, CpuVal *v, MlirType tile_type); /* materialize */
void kiln_cpu_store_elem(Cpu *c, MlirValue buf, MlirValue v, const MlirValue *idx, int rank);
MlirValue kiln_cpu_load_elem(Cpu *c, MlirValue buf, const MlirValue *idx, int rank);
MlirValue kiln_cpu_int_const(Cpu *c, MlirType t, int64_t v);
/* Per element of op's (single) result: fn gets the operands' elements, returns the result
 * element.  When every operand is a scalar/splat and `splat_ok`, fn runs once. */
void kiln_cpu_map(Cpu *c, MlirOperation op, CpuScalarFn fn, void *user, bool splat_ok);

/* A loop nest over `shape` with index induction variables passed to fn. */
typedef void (*CpuNestFn)(Cpu *c, const MlirValue *idx, void *user);
void kiln_cpu_nest(Cpu *c, const int64_t *shape, int rank, CpuNestFn fn, void *user);

/* cpu_ops.c: the kiln op families. */
bool kiln_cpu_lower_kiln_op(Cpu *c, MlirOperation op, KilnOpId id);

/* cpu_lower.c: the pass's body, on a whole module. */
MlirLogicalResult kiln_cpu_lower_module(MlirOperation module);

#endif
