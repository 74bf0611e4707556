/* scf.for carrying two tiles that swap every iteration (a, b) = (b, a + b): the yielded tiles
 * alias each other's carried buffers.  Also a carried scalar. */
#include "harness.h"

enum { B = 8, ITERS = 10 };

int main(void) {
  T t;
  t_init(&t);
  MlirType i32 = t_i32(&t), pi = t_ptr(&t, i32);
  MlirType args[3] = {pi, pi, pi};
  t_kernel(&t, "fib", args, 3);
  MlirValue r = kiln_ir_build_range(&t.b, t.loc, 0, B);
  MlirType tt = mlirValueGetType(r);
  MlirValue inits[3] = {r, t_ci(&t, tt, 1), t_ci(&t, i32, 0)};
  KilnIRFor f = kiln_ir_build_for(&t.b, t.loc, t_ci(&t, i32, 0), t_ci(&t, i32, ITERS),
                                  t_ci(&t, i32, 1), inits, 3);
  KilnIRBuilder outer = t.b;
  kiln_ir_builder_set_end(&t.b, f.body);
  MlirValue a = kiln_ir_for_iter_arg(&f, 0), b = kiln_ir_for_iter_arg(&f, 1);
  MlirValue ys[3] = {b, t_op(&t, "arith.addi", a, b),
                     t_op(&t, "arith.addi", kiln_ir_for_iter_arg(&f, 2), f.iv)};
  kiln_ir_build_yield(&t.b, t.loc, ys, 3);
  t.b = outer;
  MlirValue all = t_ci(&t, t_tile(&t, t_i1(&t), B, 0), 1);
  kiln_ir_build_store(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 0), r), kiln_ir_for_result(&f, 0), all);
  kiln_ir_build_store(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 1), r), kiln_ir_for_result(&f, 1), all);
  kiln_ir_build_store(&t.b, t.loc, t_arg(&t, 2), kiln_ir_for_result(&f, 2), t_ci(&t, t_i1(&t), 1));
  KilnCpuFn fn = t_compile(&t);
  int32_t oa[B], ob[B], s = -1, *pa = oa, *pb = ob, *ps = &s;
  void *argv[3] = {&pa, &pb, &ps};
  t_run(fn, argv, 1, 1);
  for (int i = 0; i < B; i++) {
    int32_t x = i, y = 1;
    for (int k = 0; k < ITERS; k++) {
      int32_t nx = y, ny = x + y;
      x = nx, y = ny;
    }
    T_CHECK(&t, oa[i] == x && ob[i] == y, "lane %d: (%d,%d) vs (%d,%d)", i, oa[i], ob[i], x, y);
  }
  T_CHECK(&t, s == ITERS * (ITERS - 1) / 2, "carried scalar %d", s);
  int fails = t.failures;
  t_fini(&t);
  return fails ? 1 : 0;
}
