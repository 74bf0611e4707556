/* Vector add with a masked tail; elementwise math with expand_dims + broadcast; trans;
 * integer division by zero; scf.if yielding a tile.  Compared with C references. */
#include "harness.h"

#include <stdlib.h>

enum { N = 1000, BLOCK = 128 };

static void test_vadd(T *t) {
  MlirType pf = t_ptr(t, t_f32(t));
  MlirType args[4] = {pf, pf, pf, t_i32(t)};
  t_kernel(t, "vadd", args, 4);
  MlirValue offs = t_offsets(t, 0, BLOCK);
  MlirValue n = kiln_ir_build_splat(&t->b, t->loc, t_arg(t, 3), mlirValueGetType(offs));
  MlirValue mask = kiln_ir_build_cmpi(&t->b, t->loc, "slt", offs, n);
  MlirValue zero = t_cf(t, t_tile(t, t_f32(t), BLOCK, 0), 0.0);
  MlirValue x = kiln_ir_build_load(&t->b, t->loc, t_ptrs(t, t_arg(t, 0), offs), mask, zero);
  MlirValue y = kiln_ir_build_load(&t->b, t->loc, t_ptrs(t, t_arg(t, 1), offs), mask, zero);
  kiln_ir_build_store(&t->b, t->loc, t_ptrs(t, t_arg(t, 2), offs), t_op(t, "arith.addf", x, y),
                      mask);
  KilnCpuFn fn = t_compile(t);
  float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *o = malloc((N + 8) * sizeof *o);
  for (int i = 0; i < N; i++) a[i] = (float)i * 0.5f, b[i] = 3.0f - (float)i;
  for (int i = 0; i < N + 8; i++) o[i] = -7.0f;
  int32_t n_ = N;
  void *argv[4] = {&a, &b, &o, &n_};
  t_run(fn, argv, (N + BLOCK - 1) / BLOCK, 1);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += o[i] != a[i] + b[i];
  T_CHECK(t, bad == 0, "%d wrong sums", bad);
  for (int i = N; i < N + 8; i++) T_CHECK(t, o[i] == -7.0f, "masked tail written at %d", i);
  free(a), free(b), free(o);
}

/* out[i][j] = exp(x[i]) * y[j] + 1 for i < M, j < NC; 2-D grid of BMxBN programs. */
static void test_outer(T *t) {
  enum { M = 37, NC = 29, BM = 16, BN = 8 };
  MlirType f32 = t_f32(t), pf = t_ptr(t, f32), i32 = t_i32(t);
  MlirType args[5] = {pf, pf, pf, i32, i32};
  t_kernel(t, "outer", args, 5);
  MlirValue ri = t_offsets(t, 0, BM), rj = t_offsets(t, 1, BN);
  MlirValue mi =
      kiln_ir_build_cmpi(&t->b, t->loc, "slt", ri,
                         kiln_ir_build_splat(&t->b, t->loc, t_arg(t, 3), mlirValueGetType(ri)));
  MlirValue mj =
      kiln_ir_build_cmpi(&t->b, t->loc, "slt", rj,
                         kiln_ir_build_splat(&t->b, t->loc, t_arg(t, 4), mlirValueGetType(rj)));
  MlirValue x = kiln_ir_build_load(&t->b, t->loc, t_ptrs(t, t_arg(t, 0), ri), mi,
                                   t_cf(t, t_tile(t, f32, BM, 0), 0));
  MlirValue y = kiln_ir_build_load(&t->b, t->loc, t_ptrs(t, t_arg(t, 1), rj), mj,
                                   t_cf(t, t_tile(t, f32, BN, 0), 0));
  MlirValue ex = kiln_ir_build_elementwise(&t->b, t->loc, "math.exp", &x, 1, mlirValueGetType(x));
  MlirType full_f = t_tile(t, f32, BM, BN), full_i = t_tile(t, i32, BM, BN),
           full_b = t_tile(t, t_i1(t), BM, BN);
  MlirValue xe = kiln_ir_build_broadcast(&t->b, t->loc,
                                         kiln_ir_build_expand_dims(&t->b, t->loc, ex, 1), full_f);
  MlirValue ye = kiln_ir_build_broadcast(&t->b, t->loc,
                                         kiln_ir_build_expand_dims(&t->b, t->loc, y, 0), full_f);
  MlirValue v = t_op(t, "arith.addf", t_op(t, "arith.mulf", xe, ye), t_cf(t, full_f, 1.0));
  MlirValue ie = kiln_ir_build_broadcast(&t->b, t->loc,
                                         kiln_ir_build_expand_dims(&t->b, t->loc, ri, 1), full_i);
  MlirValue je = kiln_ir_build_broadcast(&t->b, t->loc,
                                         kiln_ir_build_expand_dims(&t->b, t->loc, rj, 0), full_i);
  MlirValue off = t_op(t, "arith.addi", t_op(t, "arith.muli", ie, t_ci(t, full_i, NC)), je);
  MlirValue m2 = t_op(t, "arith.andi",
                      kiln_ir_build_broadcast(
                          &t->b, t->loc, kiln_ir_build_expand_dims(&t->b, t->loc, mi, 1), full_b),
                      kiln_ir_build_broadcast(
                          &t->b, t->loc, kiln_ir_build_expand_dims(&t->b, t->loc, mj, 0), full_b));
  kiln_ir_build_store(&t->b, t->loc, t_ptrs(t, t_arg(t, 2), off), v, m2);
  KilnCpuFn fn = t_compile(t);
  float xs[M], ys[NC], out[M * NC];
  for (int i = 0; i < M; i++) xs[i] = (float)(i % 7) * 0.25f - 0.5f;
  for (int j = 0; j < NC; j++) ys[j] = (float)j * 0.1f - 1.0f;
  for (int i = 0; i < M * NC; i++) out[i] = NAN;
  float *px = xs, *py = ys, *po = out;
  int32_t m_ = M, n_ = NC;
  void *argv[5] = {&px, &py, &po, &m_, &n_};
  t_run(fn, argv, (M + BM - 1) / BM, (NC + BN - 1) / BN);
  double worst = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < NC; j++) {
      double ref = exp((double)xs[i]) * ys[j] + 1.0;
      double err = fabs(out[i * NC + j] - ref) / (fabs(ref) + 1e-6);
      worst = err > worst || isnan(err) ? (isnan(err) ? INFINITY : err) : worst;
    }
  T_CHECK(t, worst <= 1e-5, "outer: relative error %g > 1e-5", worst);
}

/* out[j][i] = in[i][j] for a 16x8 tile, plus q = a / b and r = a % b with zero divisors. */
static void test_trans_div(T *t) {
  enum { R = 16, C = 8 };
  MlirType i32 = t_i32(t), pi = t_ptr(t, i32);
  MlirType args[5] = {pi, pi, pi, pi, pi};
  t_kernel(t, "trans_div", args, 5);
  MlirType ti = t_tile(t, i32, R, C), tt = t_tile(t, i32, C, R);
  MlirValue ri = kiln_ir_build_range(&t->b, t->loc, 0, R),
            rj = kiln_ir_build_range(&t->b, t->loc, 0, C);
  MlirValue ie =
      kiln_ir_build_broadcast(&t->b, t->loc, kiln_ir_build_expand_dims(&t->b, t->loc, ri, 1), ti);
  MlirValue je =
      kiln_ir_build_broadcast(&t->b, t->loc, kiln_ir_build_expand_dims(&t->b, t->loc, rj, 0), ti);
  MlirValue off = t_op(t, "arith.addi", t_op(t, "arith.muli", ie, t_ci(t, ti, C)), je);
  MlirValue all = t_ci(t, t_tile(t, t_i1(t), R, C), 1);
  MlirValue v = kiln_ir_build_load(&t->b, t->loc, t_ptrs(t, t_arg(t, 0), off), all, t_ci(t, ti, 0));
  MlirValue vt = kiln_ir_build_trans(&t->b, t->loc, v);
  MlirValue offt = kiln_ir_build_trans(&t->b, t->loc, off); /* offt[j][i] = i*C + j */
  /* store position j*R + i */
  MlirValue it = kiln_ir_build_trans(&t->b, t->loc, ie),
            jt = kiln_ir_build_trans(&t->b, t->loc, je);
  MlirValue pos = t_op(t, "arith.addi", t_op(t, "arith.muli", jt, t_ci(t, tt, R)), it);
  MlirValue allt = t_ci(t, t_tile(t, t_i1(t), C, R), 1);
  kiln_ir_build_store(&t->b, t->loc, t_ptrs(t, t_arg(t, 1), pos), vt, allt);
  MlirValue a =
      kiln_ir_build_load(&t->b, t->loc, t_ptrs(t, t_arg(t, 0), offt), allt, t_ci(t, tt, 0));
  MlirValue d =
      t_op(t, "arith.subi", kiln_ir_build_trans(&t->b, t->loc, ie), t_ci(t, tt, 3)); /* i - 3 */
  kiln_ir_build_store(&t->b, t->loc, t_ptrs(t, t_arg(t, 2), offt), t_op(t, "arith.divsi", a, d),
                      allt);
  kiln_ir_build_store(&t->b, t->loc, t_ptrs(t, t_arg(t, 3), offt), t_op(t, "arith.remsi", a, d),
                      allt);
  KilnCpuFn fn = t_compile(t);
  int32_t in[R * C], out[R * C], q[R * C], r[R * C];
  for (int i = 0; i < R * C; i++) in[i] = i * 7 - 100, out[i] = q[i] = r[i] = 12345;
  int32_t *pin = in, *pout = out, *pq = q, *pr = r, *unused = NULL;
  void *argv[5] = {&pin, &pout, &pq, &pr, &unused};
  t_run(fn, argv, 1, 1);
  int bad = 0, badq = 0;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      bad += out[j * R + i] != in[i * C + j];
      int32_t av = in[i * C + j], dv = i - 3;
      int32_t wq = dv ? av / dv : 0, wr = dv ? av % dv : av;
      badq += q[i * C + j] != wq || r[i * C + j] != wr;
    }
  T_CHECK(t, bad == 0, "trans: %d wrong", bad);
  T_CHECK(t, badq == 0, "div/rem (x/0 == 0, x%%0 == x): %d wrong", badq);
}

/* if (flag > 0) t = range*2 else t = range+100; out = t (tile result of scf.if) */
static void test_if(T *t) {
  enum { B = 8 };
  MlirType i32 = t_i32(t), pi = t_ptr(t, i32);
  MlirType args[2] = {pi, i32};
  t_kernel(t, "ifk", args, 2);
  MlirValue r = kiln_ir_build_range(&t->b, t->loc, 0, B);
  MlirType tt = mlirValueGetType(r);
  MlirValue c = kiln_ir_build_cmpi(&t->b, t->loc, "sgt", t_arg(t, 1), t_ci(t, i32, 0));
  KilnIRIf f = kiln_ir_build_if(&t->b, t->loc, c, &tt, 1);
  KilnIRBuilder saved = t->b;
  kiln_ir_builder_set_end(&t->b, f.then_block);
  MlirValue v1 = t_op(t, "arith.muli", r, t_ci(t, tt, 2));
  kiln_ir_build_yield(&t->b, t->loc, &v1, 1);
  kiln_ir_builder_set_end(&t->b, f.else_block);
  MlirValue v2 = t_op(t, "arith.addi", r, t_ci(t, tt, 100));
  kiln_ir_build_yield(&t->b, t->loc, &v2, 1);
  t->b = saved;
  kiln_ir_build_store(&t->b, t->loc, t_ptrs(t, t_arg(t, 0), r), kiln_ir_if_result(&f, 0),
                      t_ci(t, t_tile(t, t_i1(t), B, 0), 1));
  KilnCpuFn fn = t_compile(t);
  int32_t out[B], *po = out;
  for (int32_t flag = -1; flag <= 1; flag += 2) {
    void *argv[2] = {&po, &flag};
    t_run(fn, argv, 1, 1);
    for (int i = 0; i < B; i++)
      T_CHECK(t, out[i] == (flag > 0 ? i * 2 : i + 100), "if: flag %d out[%d] = %d", flag, i,
              out[i]);
  }
}

int main(void) {
  T t;
  t_init(&t);
  test_vadd(&t);
  test_outer(&t);
  test_trans_div(&t);
  test_if(&t);
  int f = t.failures;
  t_fini(&t);
  if (f) fprintf(stderr, "%d checks failed\n", f);
  return f ? 1 : 0;
}
