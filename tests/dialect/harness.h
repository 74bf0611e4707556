/* harness.h - builds kiln kernels with the builders, compiles them through the CPU pipeline
 * into a shared object and runs them over a grid, for the dialect tests. */
#ifndef KILN_TEST_HARNESS_H
#define KILN_TEST_HARNESS_H

#include "../common/check.h"
#include "kiln_cpu.h"
#include "kiln_mlir.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

typedef void (*KilnCpuFn)(void **args, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);

typedef struct T {
  KilnMlirContext *k;
  MlirContext ctx;
  MlirModule m;
  KilnIRBuilder b;
  MlirLocation loc;
  KilnIRFunc f;
  char name[64];
  void *dl;
  char dir[64];
  int failures;
} T;

void t_init(T *t);
void t_fini(T *t);
/* Starts kernel `name` with the given argument types; b is positioned in its body. */
void t_kernel(T *t, const char *name, const MlirType *args, size_t n);
MlirValue t_arg(T *t, size_t i);
MlirType t_f32(T *t);
MlirType t_f16(T *t);
MlirType t_i32(T *t);
MlirType t_i1(T *t);
MlirType t_ptr(T *t, MlirType elem);
MlirType t_tile(T *t, MlirType elem, int64_t d0, int64_t d1); /* d1 == 0: rank 1 */
MlirValue t_ci(T *t, MlirType type, int64_t v);
MlirValue t_cf(T *t, MlirType type, double v);
MlirValue t_op(T *t, const char *name, MlirValue a, MlirValue b); /* result type of a */
/* splat(ptr) + offsets */
MlirValue t_ptrs(T *t, MlirValue ptr, MlirValue offsets);
/* pid * block + range(0, block) */
MlirValue t_offsets(T *t, int axis, int64_t block);
/* Ends the kernel, runs the pipeline, emits and loads the object; returns kiln_cpu_<name>. */
KilnCpuFn t_compile(T *t);
void t_run(KilnCpuFn fn, void **args, int gx, int gy);

/* The one CHECK (tests/common/check.h), counted in the test case t. */
#define T_CHECK(t, cond, ...) KILN_CHECK_INTO((t)->failures, cond, __VA_ARGS__)

#endif
