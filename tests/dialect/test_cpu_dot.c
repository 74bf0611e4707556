/* C = A @ B with f16 inputs and an f32 accumulator carried through an scf.for K loop, masked
 * edges (M, N, K not multiples of the block).  Reference: f32 sums of the f16-rounded inputs,
 * relative tolerance 1e-4. */
#include "harness.h"

#include <stdlib.h>

enum { M = 37, N = 29, K = 50, BM = 16, BN = 8, BK = 8 };

static MlirValue col(T *t, MlirValue v, MlirType to) {
  return kiln_ir_build_broadcast(&t->b, t->loc, kiln_ir_build_expand_dims(&t->b, t->loc, v, 1), to);
}
static MlirValue row(T *t, MlirValue v, MlirType to) {
  return kiln_ir_build_broadcast(&t->b, t->loc, kiln_ir_build_expand_dims(&t->b, t->loc, v, 0), to);
}
static MlirValue lt(T *t, MlirValue v, MlirValue bound) {
  return kiln_ir_build_cmpi(&t->b, t->loc, "slt", v,
                            kiln_ir_build_splat(&t->b, t->loc, bound, mlirValueGetType(v)));
}

int main(void) {
  T t;
  t_init(&t);
  MlirType f16 = t_f16(&t), f32 = t_f32(&t), i32 = t_i32(&t), i1 = t_i1(&t);
  MlirType args[6] = {t_ptr(&t, f16), t_ptr(&t, f16), t_ptr(&t, f32), i32, i32, i32};
  t_kernel(&t, "matmul", args, 6);
  MlirValue rm = t_offsets(&t, 0, BM), rn = t_offsets(&t, 1, BN);
  MlirValue rk = kiln_ir_build_range(&t.b, t.loc, 0, BK);
  MlirType acc_t = t_tile(&t, f32, BM, BN);
  MlirValue acc0 = t_cf(&t, acc_t, 0.0);
  KilnIRFor f =
      kiln_ir_build_for(&t.b, t.loc, t_ci(&t, i32, 0), t_arg(&t, 5), t_ci(&t, i32, BK), &acc0, 1);
  KilnIRBuilder outer = t.b;
  kiln_ir_builder_set_end(&t.b, f.body);
  MlirValue kk =
      t_op(&t, "arith.addi", kiln_ir_build_splat(&t.b, t.loc, f.iv, mlirValueGetType(rk)), rk);
  MlirType ta = t_tile(&t, i32, BM, BK), tb = t_tile(&t, i32, BK, BN);
  MlirType ba = t_tile(&t, i1, BM, BK), bb = t_tile(&t, i1, BK, BN);
  MlirValue offa = t_op(&t, "arith.addi", t_op(&t, "arith.muli", col(&t, rm, ta), t_ci(&t, ta, K)),
                        row(&t, kk, ta));
  MlirValue ma = t_op(&t, "arith.andi", col(&t, lt(&t, rm, t_arg(&t, 3)), ba),
                      row(&t, lt(&t, kk, t_arg(&t, 5)), ba));
  MlirValue offb = t_op(&t, "arith.addi", t_op(&t, "arith.muli", col(&t, kk, tb), t_ci(&t, tb, N)),
                        row(&t, rn, tb));
  MlirValue mb = t_op(&t, "arith.andi", col(&t, lt(&t, kk, t_arg(&t, 5)), bb),
                      row(&t, lt(&t, rn, t_arg(&t, 4)), bb));
  MlirValue a = kiln_ir_build_load(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 0), offa), ma,
                                   t_cf(&t, t_tile(&t, f16, BM, BK), 0));
  MlirValue b = kiln_ir_build_load(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 1), offb), mb,
                                   t_cf(&t, t_tile(&t, f16, BK, BN), 0));
  MlirValue acc = kiln_ir_build_dot(&t.b, t.loc, a, b, kiln_ir_for_iter_arg(&f, 0));
  kiln_ir_build_yield(&t.b, t.loc, &acc, 1);
  t.b = outer;
  MlirType tc = t_tile(&t, i32, BM, BN);
  MlirValue offc = t_op(&t, "arith.addi", t_op(&t, "arith.muli", col(&t, rm, tc), t_ci(&t, tc, N)),
                        row(&t, rn, tc));
  MlirType bc = t_tile(&t, i1, BM, BN);
  MlirValue mc = t_op(&t, "arith.andi", col(&t, lt(&t, rm, t_arg(&t, 3)), bc),
                      row(&t, lt(&t, rn, t_arg(&t, 4)), bc));
  kiln_ir_build_store(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 2), offc), kiln_ir_for_result(&f, 0), mc);
  KilnCpuFn fn = t_compile(&t);

  _Float16 *A = malloc(M * K * sizeof *A), *B = malloc(K * N * sizeof *B);
  float *C = malloc(M * N * sizeof *C);
  for (int i = 0; i < M * K; i++) A[i] = (_Float16)((float)((i * 37) % 19) / 8.0f - 1.0f);
  for (int i = 0; i < K * N; i++) B[i] = (_Float16)((float)((i * 11) % 23) / 16.0f - 0.7f);
  for (int i = 0; i < M * N; i++) C[i] = NAN;
  int32_t m_ = M, n_ = N, k_ = K;
  void *argv[6] = {&A, &B, &C, &m_, &n_, &k_};
  t_run(fn, argv, (M + BM - 1) / BM, (N + BN - 1) / BN);
  double worst = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float ref = 0;
      for (int k = 0; k < K; k++) ref += (float)A[i * K + k] * (float)B[k * N + j];
      double err = fabs((double)C[i * N + j] - ref) / (fabs(ref) + 1.0);
      if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
    }
  T_CHECK(&t, worst <= 1e-4, "matmul relative error %g > 1e-4", worst);
  free(A), free(B), free(C);
  int fails = t.failures;
  t_fini(&t);
  return fails ? 1 : 0;
}
