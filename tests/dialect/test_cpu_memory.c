/* load with mask + other, store, and atomic add/max from many programs into shared slots. */
#include "harness.h"

#include <stdlib.h>

enum { N = 300, BLOCK = 64, SLOTS = 5 };

int main(void) {
  T t;
  t_init(&t);
  MlirType f32 = t_f32(&t), i32 = t_i32(&t), i1 = t_i1(&t);
  MlirType args[5] = {t_ptr(&t, f32), t_ptr(&t, f32), t_ptr(&t, f32), t_ptr(&t, i32), i32};
  t_kernel(&t, "mem", args, 5);
  MlirValue offs = t_offsets(&t, 0, BLOCK);
  MlirType tt = mlirValueGetType(offs);
  MlirValue mask = kiln_ir_build_cmpi(&t.b, t.loc, "slt", offs,
                                      kiln_ir_build_splat(&t.b, t.loc, t_arg(&t, 4), tt));
  /* odd lanes are masked off the load and read `other` = -1 */
  MlirValue odd = kiln_ir_build_cmpi(
      &t.b, t.loc, "eq", t_op(&t, "arith.andi", offs, t_ci(&t, tt, 1)), t_ci(&t, tt, 1));
  MlirValue even = t_op(&t, "arith.xori", odd, t_ci(&t, t_tile(&t, i1, BLOCK, 0), 1));
  MlirValue lm = t_op(&t, "arith.andi", mask, even);
  MlirValue v = kiln_ir_build_load(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 0), offs), lm,
                                   t_cf(&t, t_tile(&t, f32, BLOCK, 0), -1.0));
  kiln_ir_build_store(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 1), offs), v, mask);
  /* sums[offs % SLOTS] += v (atomic), hits[offs % SLOTS] max= offs */
  MlirValue slot = t_op(&t, "arith.remsi", offs, t_ci(&t, tt, SLOTS));
  kiln_ir_build_atomic_rmw(&t.b, t.loc, KILN_RMW_ADD, t_ptrs(&t, t_arg(&t, 2), slot), v, mask);
  kiln_ir_build_atomic_rmw(&t.b, t.loc, KILN_RMW_MAX, t_ptrs(&t, t_arg(&t, 3), slot), offs, mask);
  KilnCpuFn fn = t_compile(&t);

  float *in = malloc(N * sizeof *in), *out = malloc((N + BLOCK) * sizeof *out), sums[SLOTS] = {0};
  int32_t hits[SLOTS], n_ = N;
  for (int i = 0; i < N; i++) in[i] = (float)(i % 13) * 0.5f;
  for (int i = 0; i < N + BLOCK; i++) out[i] = 99.0f;
  for (int s = 0; s < SLOTS; s++) hits[s] = -1;
  float *h = sums;
  int32_t *ph = hits;
  void *argv[5] = {&in, &out, &h, &ph, &n_};
  t_run(fn, argv, (N + BLOCK - 1) / BLOCK, 1);
  double ref[SLOTS] = {0};
  int32_t href[SLOTS] = {-1, -1, -1, -1, -1};
  int bad = 0;
  for (int i = 0; i < N; i++) {
    float want = i % 2 ? -1.0f : in[i];
    bad += out[i] != want;
    ref[i % SLOTS] += want;
    href[i % SLOTS] = i;
  }
  for (int i = N; i < N + BLOCK; i++) bad += out[i] != 99.0f;
  T_CHECK(&t, bad == 0, "load/store: %d wrong", bad);
  for (int s = 0; s < SLOTS; s++) {
    T_CHECK(&t, fabs(sums[s] - ref[s]) <= 1e-4 * (fabs(ref[s]) + 1), "atomic add slot %d: %g vs %g",
            s, sums[s], ref[s]);
    T_CHECK(&t, hits[s] == href[s], "atomic max slot %d: %d vs %d", s, hits[s], href[s]);
  }
  free(in), free(out);
  int fails = t.failures;
  t_fini(&t);
  return fails ? 1 : 0;
}
