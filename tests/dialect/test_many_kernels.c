/* A module of 300 kernels through every target's pipeline (cpu, sm_80, emu): each lowering must
 * rebuild all of them.  The lowerings once collected a module's kernels into a fixed array of 256
 * and silently left the rest as they were; the cpu, the SIMT and the emu lowerings now share one
 * growable list (kiln_ir_kernels, mlir-dialect/rewrite.c).  Also checks the rewrite kit's
 * element sizes (one rule for pointers: 64 bits, whatever they point to) and its pointer map.
 *
 * The expected numbers are counts: N entry points of each kind after the pipeline, none of the
 * kiln functions left. */
#include "harness.h"
#include "kiln_gpu.h"
#include "kiln_mlir_internal.h" /* the rewrite kit under test */

#include <stdlib.h>
#include <string.h>

enum { N = 300, BLOCK = 32 };

/* N kernels k0..k{N-1}, each storing its number into out[0..BLOCK). */
static void build_module(T *t) {
  if (!mlirModuleIsNull(t->m)) mlirModuleDestroy(t->m);
  t->m = mlirModuleCreateEmpty(t->loc);
  MlirType pf = t_ptr(t, t_f32(t));
  for (int i = 0; i < N; i++) {
    char name[16];
    snprintf(name, sizeof name, "k%d", i);
    kiln_ir_builder_init(&t->b, t->ctx, kiln_ir_module_body(t->m));
    t->f = kiln_ir_build_kernel(&t->b, t->loc, name, &pf, 1, 1, 1);
    kiln_ir_builder_set_end(&t->b, t->f.entry);
    MlirValue offs = kiln_ir_build_range(&t->b, t->loc, 0, BLOCK);
    MlirType ft = t_tile(t, t_f32(t), BLOCK, 0);
    MlirValue v = t_cf(t, ft, (double)i);
    MlirValue mask = kiln_ir_build_const_int(&t->b, t->loc, t_tile(t, t_i1(t), BLOCK, 0), 1);
    kiln_ir_build_store(&t->b, t->loc, t_ptrs(t, t_arg(t, 0), offs), v, mask);
    kiln_ir_build_return(&t->b, t->loc);
  }
}

typedef struct Count {
  const char *prefix; /* symbol name prefix of the entry points */
  const char *marker; /* or: a unit attribute they carry (NULL: by prefix) */
  int entries;
  int kiln_left; /* functions still carrying kiln.kernel */
} Count;

static MlirWalkResult count_op(MlirOperation op, void *user) {
  Count *c = user;
  if (!kiln_ir_op_is(op, "func.func") && !kiln_ir_op_is(op, "llvm.func"))
    return MlirWalkResultAdvance;
  char name[64] = "";
  kiln_ir_get_str_attr(op, "sym_name", name, sizeof name);
  bool marked = c->marker && !mlirAttributeIsNull(mlirOperationGetAttributeByName(
                                 op, mlirStringRefCreateFromCString(c->marker)));
  if (marked || (!c->marker && strncmp(name, c->prefix, strlen(c->prefix)) == 0)) c->entries++;
  if (!mlirAttributeIsNull(
          mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("kiln.kernel"))))
    c->kiln_left++;
  return MlirWalkResultAdvance;
}

static void check_pipeline(T *t, const KilnPipeline *p, Count c) {
  build_module(t);
  KilnPipelineOptions o = {0};
  if (kiln_pipeline_run(t->m, p, &o) != KILN_MLIR_OK) {
    kiln_mlir_diag_print(t->k, stderr);
    T_CHECK(t, false, "%s pipeline failed on %d kernels", p->name, N);
    return;
  }
  mlirOperationWalk(mlirModuleGetOperation(t->m), count_op, &c, MlirWalkPreOrder);
  T_CHECK(t, c.entries == N, "%s: %d of %d kernels lowered", p->name, c.entries, N);
  T_CHECK(t, c.kiln_left == 0, "%s: %d kiln kernels left unlowered", p->name, c.kiln_left);
}

static void test_elem_sizes(T *t) {
  MlirType f32 = t_f32(t), f16 = t_f16(t), i1 = t_i1(t);
  MlirType pf16 = t_ptr(t, f16);
  T_CHECK(t, kiln_ir_elem_bits(f32) == 32, "f32: %d bits", kiln_ir_elem_bits(f32));
  T_CHECK(t, kiln_ir_elem_bits(t_tile(t, f16, 8, 4)) == 16, "f16 tile: %d bits",
          kiln_ir_elem_bits(t_tile(t, f16, 8, 4)));
  T_CHECK(t, kiln_ir_elem_bits(i1) == 1 && kiln_ir_elem_bytes(i1) == 1, "i1: %d bits, %lld bytes",
          kiln_ir_elem_bits(i1), (long long)kiln_ir_elem_bytes(i1));
  /* a pointer is an address: 64 bits whatever it points to (the copies disagreed here) */
  T_CHECK(t, kiln_ir_elem_bits(pf16) == 64, "ptr<f16>: %d bits", kiln_ir_elem_bits(pf16));
  T_CHECK(t, kiln_ir_elem_bytes(t_tile(t, pf16, 16, 0)) == 8, "ptr<f16> tile: %lld bytes",
          (long long)kiln_ir_elem_bytes(t_tile(t, pf16, 16, 0)));
  T_CHECK(t, kiln_ir_elem_bits(kiln_ir_ptr_elem(pf16)) == 16, "pointee of ptr<f16>: %d bits",
          kiln_ir_elem_bits(kiln_ir_ptr_elem(pf16)));
}

/* 10000 keys, every other one overwritten: each get returns the last put. */
static void test_ptr_map(T *t) {
  enum { K = 10000 };
  static char keys[K];
  KilnPtrMap m = {0};
  for (int i = 0; i < K; i++) kiln_ptr_map_put(&m, &keys[i], (void *)(intptr_t)(i + 1));
  for (int i = 0; i < K; i += 2) kiln_ptr_map_put(&m, &keys[i], (void *)(intptr_t)(-i - 1));
  int bad = 0;
  for (int i = 0; i < K; i++)
    bad += (intptr_t)kiln_ptr_map_get(&m, &keys[i]) != (i % 2 ? i + 1 : -i - 1);
  T_CHECK(t, bad == 0 && m.n == K, "%d wrong values, %zu entries", bad, m.n);
  T_CHECK(t, kiln_ptr_map_get(&m, &bad) == NULL, "a key never put is found");
  kiln_ptr_map_free(&m);
}

int main(void) {
  T t;
  t_init(&t);
  test_elem_sizes(&t);
  test_ptr_map(&t);
  check_pipeline(&t, &kiln_pipeline_cpu, (Count){"kiln_cpu_k", NULL, 0, 0});
  check_pipeline(&t, &kiln_gpu_pipeline, (Count){NULL, "nvvm.kernel", 0, 0});
  check_pipeline(&t, &kiln_gpu_pipeline_emu, (Count){"kiln_emu_entry_k", NULL, 0, 0});
  int failures = t.failures;
  t_fini(&t);
  if (failures)
    fprintf(stderr, "%d failures\n", failures);
  else
    printf("ok\n");
  return failures ? 1 : 0;
}
