/* Reductions of a 12x10 f32 tile: row sums (axis 1), column maxima (axis 0), row argmax with
 * ties (first index wins), 1-D sum to a scalar and int argmin.  Tolerance 1e-5 relative for
 * sums, exact otherwise. */
#include "harness.h"

enum { R = 12, C = 10 };

int main(void) {
  T t;
  t_init(&t);
  MlirType f32 = t_f32(&t), i32 = t_i32(&t), i1 = t_i1(&t);
  MlirType pf = t_ptr(&t, f32), pi = t_ptr(&t, i32);
  MlirType args[6] = {pf, pf, pf, pi, pf, pi};
  t_kernel(&t, "red", args, 6);
  MlirType ti = t_tile(&t, i32, R, C);
  MlirValue ri = kiln_ir_build_range(&t.b, t.loc, 0, R),
            rj = kiln_ir_build_range(&t.b, t.loc, 0, C);
  MlirValue ie =
      kiln_ir_build_broadcast(&t.b, t.loc, kiln_ir_build_expand_dims(&t.b, t.loc, ri, 1), ti);
  MlirValue je =
      kiln_ir_build_broadcast(&t.b, t.loc, kiln_ir_build_expand_dims(&t.b, t.loc, rj, 0), ti);
  MlirValue off = t_op(&t, "arith.addi", t_op(&t, "arith.muli", ie, t_ci(&t, ti, C)), je);
  MlirValue x =
      kiln_ir_build_load(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 0), off),
                         t_ci(&t, t_tile(&t, i1, R, C), 1), t_cf(&t, t_tile(&t, f32, R, C), 0));
  MlirValue rows = kiln_ir_build_reduce(&t.b, t.loc, KILN_REDUCE_SUM, 1, x);
  MlirValue cols = kiln_ir_build_reduce(&t.b, t.loc, KILN_REDUCE_MAX, 0, x);
  MlirValue amax = kiln_ir_build_reduce(&t.b, t.loc, KILN_REDUCE_ARGMAX, 1, x);
  MlirValue all_r = t_ci(&t, t_tile(&t, i1, R, 0), 1), all_c = t_ci(&t, t_tile(&t, i1, C, 0), 1);
  kiln_ir_build_store(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 1), ri), rows, all_r);
  kiln_ir_build_store(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 2), rj), cols, all_c);
  kiln_ir_build_store(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 3), ri), amax, all_r);
  /* total = sum(rows) (1-D -> scalar), stored through a scalar pointer */
  MlirValue total = kiln_ir_build_reduce(&t.b, t.loc, KILN_REDUCE_SUM, 0, rows);
  kiln_ir_build_store(&t.b, t.loc, t_arg(&t, 4), total, t_ci(&t, i1, 1));
  /* argmin over the int row indices reversed: min of (R-1-i) is at i = R-1 */
  MlirValue rev = t_op(&t, "arith.subi", t_ci(&t, mlirValueGetType(ri), R - 1), ri);
  MlirValue amin = kiln_ir_build_reduce(&t.b, t.loc, KILN_REDUCE_ARGMIN, 0, rev);
  kiln_ir_build_store(&t.b, t.loc, t_arg(&t, 5), amin, t_ci(&t, i1, 1));
  KilnCpuFn fn = t_compile(&t);

  float in[R * C], rs[R], cm[C], tot = 0;
  int32_t am[R], amn = -1;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++)
      in[i * C + j] = (float)(((i + 3) * (j + 5)) % 7) - 2.5f; /* repeated maxima: ties */
  float *p0 = in, *p1 = rs, *p2 = cm, *p4 = &tot;
  int32_t *p3 = am, *p5 = &amn;
  void *argv[6] = {&p0, &p1, &p2, &p3, &p4, &p5};
  t_run(fn, argv, 1, 1);
  double total_ref = 0;
  for (int i = 0; i < R; i++) {
    double s = 0;
    int best = 0;
    for (int j = 0; j < C; j++) {
      s += in[i * C + j];
      if (in[i * C + j] > in[i * C + best]) best = j;
    }
    total_ref += s;
    T_CHECK(&t, fabs(rs[i] - s) <= 1e-5 * (fabs(s) + 1), "row sum %d: %g vs %g", i, rs[i], s);
    T_CHECK(&t, am[i] == best, "argmax row %d: %d vs %d", i, am[i], best);
  }
  for (int j = 0; j < C; j++) {
    float mx = in[j];
    for (int i = 1; i < R; i++) mx = in[i * C + j] > mx ? in[i * C + j] : mx;
    T_CHECK(&t, cm[j] == mx, "col max %d: %g vs %g", j, cm[j], mx);
  }
  T_CHECK(&t, fabs(tot - total_ref) <= 1e-5 * (fabs(total_ref) + 1), "total %g vs %g", tot,
          total_ref);
  T_CHECK(&t, amn == R - 1, "argmin %d vs %d", amn, R - 1);
  int fails = t.failures;
  t_fini(&t);
  return fails ? 1 : 0;
}
