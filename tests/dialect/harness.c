/* harness.c - see harness.h. */
#include "harness.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void t_init(T *t) {
  memset(t, 0, sizeof *t);
  t->k = kiln_mlir_context_create();
  if (!t->k) {
    fprintf(stderr, "context creation failed\n");
    exit(1);
  }
  t->ctx = kiln_mlir_context_get(t->k);
  t->loc = kiln_ir_loc(t->ctx, "test.kiln", 1, 1);
}

static void cleanup_dir(T *t) {
  if (!t->dir[0]) return;
  char path[128];
  snprintf(path, sizeof path, "%s/k.o", t->dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/k.so", t->dir);
  unlink(path);
  rmdir(t->dir);
  t->dir[0] = '\0';
}

void t_fini(T *t) {
  if (t->dl) dlclose(t->dl);
  cleanup_dir(t);
  if (!mlirModuleIsNull(t->m)) mlirModuleDestroy(t->m);
  kiln_mlir_context_destroy(t->k);
}

void t_kernel(T *t, const char *name, const MlirType *args, size_t n) {
  if (t->dl) dlclose(t->dl);
  t->dl = NULL;
  if (!mlirModuleIsNull(t->m)) mlirModuleDestroy(t->m);
  t->m = mlirModuleCreateEmpty(t->loc);
  snprintf(t->name, sizeof t->name, "%s", name);
  kiln_ir_builder_init(&t->b, t->ctx, kiln_ir_module_body(t->m));
  t->f = kiln_ir_build_kernel(&t->b, t->loc, name, args, n, 4, 2);
  kiln_ir_builder_set_end(&t->b, t->f.entry);
}

MlirValue t_arg(T *t, size_t i) { return kiln_ir_func_arg(&t->f, i); }
MlirType t_f32(T *t) { return mlirF32TypeGet(t->ctx); }
MlirType t_f16(T *t) { return mlirF16TypeGet(t->ctx); }
MlirType t_i32(T *t) { return mlirIntegerTypeGet(t->ctx, 32); }
MlirType t_i1(T *t) { return mlirIntegerTypeGet(t->ctx, 1); }
MlirType t_ptr(T *t, MlirType elem) { return kiln_ir_type_ptr(t->ctx, elem); }

MlirType t_tile(T *t, MlirType elem, int64_t d0, int64_t d1) {
  (void)t;
  int64_t shape[2] = {d0, d1};
  return kiln_ir_type_tensor(elem, shape, d1 ? 2 : 1);
}

MlirValue t_ci(T *t, MlirType type, int64_t v) {
  return kiln_ir_build_const_int(&t->b, t->loc, type, v);
}
MlirValue t_cf(T *t, MlirType type, double v) {
  return kiln_ir_build_const_float(&t->b, t->loc, type, v);
}

MlirValue t_op(T *t, const char *name, MlirValue a, MlirValue b) {
  MlirValue ops[2] = {a, b};
  return kiln_ir_build_elementwise(&t->b, t->loc, name, ops, 2, mlirValueGetType(a));
}

MlirValue t_ptrs(T *t, MlirValue ptr, MlirValue offsets) {
  MlirType pt = kiln_ir_type_like(mlirValueGetType(offsets), mlirValueGetType(ptr));
  MlirValue p = kiln_ir_build_splat(&t->b, t->loc, ptr, pt);
  return kiln_ir_build_addptr(&t->b, t->loc, p, offsets);
}

MlirValue t_offsets(T *t, int axis, int64_t block) {
  MlirValue pid = kiln_ir_build_program_id(&t->b, t->loc, axis);
  MlirValue base = t_op(t, "arith.muli", pid, t_ci(t, t_i32(t), block));
  MlirValue r = kiln_ir_build_range(&t->b, t->loc, 0, (int32_t)block);
  MlirValue bs = kiln_ir_build_splat(&t->b, t->loc, base, mlirValueGetType(r));
  return t_op(t, "arith.addi", bs, r);
}

KilnCpuFn t_compile(T *t) {
  kiln_ir_build_return(&t->b, t->loc);
  KilnPipelineOptions o = {0};
  if (getenv("KILN_TEST_DUMP")) o.dump_after = getenv("KILN_TEST_DUMP");
  void *obj = NULL;
  size_t len = 0;
  if (kiln_pipeline_run(t->m, &kiln_pipeline_cpu, &o) != KILN_MLIR_OK ||
      kiln_mlir_emit_host_object(t->m, 2, NULL, &obj, &len) != KILN_MLIR_OK) {
    kiln_mlir_diag_print(t->k, stderr);
    fprintf(stderr, "compiling %s failed\n", t->name);
    exit(1);
  }
  cleanup_dir(t);
  snprintf(t->dir, sizeof t->dir, "/tmp/kiln-test-XXXXXX");
  if (!mkdtemp(t->dir)) {
    perror("mkdtemp");
    exit(1);
  }
  char o_path[128], so_path[128], cmd[512];
  snprintf(o_path, sizeof o_path, "%s/k.o", t->dir);
  snprintf(so_path, sizeof so_path, "%s/k.so", t->dir);
  FILE *f = fopen(o_path, "wb");
  if (!f || fwrite(obj, 1, len, f) != len) {
    perror("write object");
    exit(1);
  }
  fclose(f);
  kiln_mlir_buffer_free(obj);
  snprintf(cmd, sizeof cmd, "cc -shared -o %s %s -lm", so_path, o_path);
  if (system(cmd) != 0) {
    fprintf(stderr, "link failed: %s\n", cmd);
    exit(1);
  }
  t->dl = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (!t->dl) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    exit(1);
  }
  char sym[96];
  snprintf(sym, sizeof sym, "kiln_cpu_%s", t->name);
  void *p = dlsym(t->dl, sym);
  if (!p) {
    fprintf(stderr, "dlsym %s: %s\n", sym, dlerror());
    exit(1);
  }
  KilnCpuFn fn;
  memcpy(&fn, &p, sizeof fn);
  return fn;
}

void t_run(KilnCpuFn fn, void **args, int gx, int gy) {
  for (int y = 0; y < gy; y++)
    for (int x = 0; x < gx; x++) fn(args, x, y, 0, gx, gy, 1);
}
