/* rewrite.c - the kit of the lowerings that rebuild the IR: convert-kiln-to-cpu (cpu/), the SIMT
 * lowering and the emu rewrite (gpu/).
 *
 * Each of them walks a module, collects what it replaces, maps every old value to what it became
 * and creates new ops by name.  Those pieces are written here once, so that the three agree:
 *   - a map from pointers (an MlirValue's or MlirOperation's .ptr, an interned string) to
 *     anything, by open addressing;
 *   - growable lists of operations, and the kernels of a module collected into one (a lowering
 *     replaces each kernel as it goes, so it must not walk the block it edits, and a fixed array
 *     would drop the kernels past its size without a word);
 *   - op creation at a builder from operands, result types and attributes;
 *   - the size of an element (one rule for pointers: an address is 64 bits, whatever it points
 *     to; what a pointer points to is kiln_ir_ptr_elem's question, asked by the caller);
 *   - the numbers MLIR's LLVM dialect stores for atomicrmw's operation;
 *   - device_print's pieces of the module: the printf format (so that every target prints the
 *     same lines), its constant string global, and the external printf-like function it calls.
 * The pass wrapper they all use is kiln_pass_make (passes.c). */
#include "kiln_mlir_internal.h"

#include "mlir-c/Dialect/LLVM.h"

#include <stdio.h>

/* ---------------------------------------------------------------- pointer map */

/* Fibonacci hashing of the address: the low bits of allocations are zero. */
static size_t slot_of(const void *key, size_t cap) {
  return (size_t)((((uintptr_t)key >> 4) * 11400714819323198485ull) & (cap - 1));
}

void *kiln_ptr_map_get(const KilnPtrMap *m, const void *key) {
  if (m->cap == 0) return NULL;
  for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) return m->vals[i];
    if (m->keys[i] == NULL) return NULL;
  }
}

/* Doubles the table (at most half full, so a probe always ends at an empty slot). */
static void ptr_map_grow(KilnPtrMap *m) {
  KilnPtrMap g = {0};
  g.cap = m->cap ? m->cap * 2 : 64;
  g.keys = calloc(g.cap, sizeof *g.keys);
  g.vals = calloc(g.cap, sizeof *g.vals);
  KILN_ASSERT(g.keys && g.vals);
  for (size_t i = 0; i < m->cap; i++)
    if (m->keys[i]) kiln_ptr_map_put(&g, m->keys[i], m->vals[i]);
  kiln_ptr_map_free(m);
  *m = g;
}

void kiln_ptr_map_put(KilnPtrMap *m, const void *key, void *val) {
  KILN_ASSERT(key != NULL);
  if ((m->n + 1) * 2 > m->cap) ptr_map_grow(m);
  for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) {
      m->vals[i] = val;
      return;
    }
    if (m->keys[i] == NULL) {
      m->keys[i] = key;
      m->vals[i] = val;
      m->n++;
      return;
    }
  }
}

void kiln_ptr_map_free(KilnPtrMap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- op lists */

void kiln_op_list_push(KilnOpList *l, MlirOperation op) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 64;
    l->ops = realloc(l->ops, l->cap * sizeof *l->ops);
    KILN_ASSERT(l->ops != NULL);
  }
  l->ops[l->n++] = op;
}

void kiln_op_list_free(KilnOpList *l) {
  free(l->ops);
  memset(l, 0, sizeof *l);
}

KilnOpList kiln_ir_kernels(MlirOperation module, const char *func_op, const char *marker) {
  KilnOpList l = {0};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  MlirStringRef attr = mlirStringRefCreateFromCString(marker);
  for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    if (kiln_ir_op_is(o, func_op) && !mlirAttributeIsNull(mlirOperationGetAttributeByName(o, attr)))
      kiln_op_list_push(&l, o);
  return l;
}

/* ---------------------------------------------------------------- op creation */

MlirOperation kiln_ir_make(KilnIRBuilder *b, MlirLocation loc, const char *name,
                           const MlirValue *ops, size_t n, const MlirType *res, size_t nres,
                           const MlirNamedAttribute *attrs, size_t nattrs) {
  KilnOpSpec s = {.name = name,
                  .loc = loc,
                  .operands = ops,
                  .n_operands = n,
                  .results = res,
                  .n_results = nres,
                  .attrs = attrs,
                  .n_attrs = nattrs};
  return kiln_ir_create(b, &s);
}

MlirValue kiln_ir_make1(KilnIRBuilder *b, MlirLocation loc, const char *name, const MlirValue *ops,
                        size_t n, MlirType res, const MlirNamedAttribute *attrs, size_t nattrs) {
  return mlirOperationGetResult(kiln_ir_make(b, loc, name, ops, n, &res, 1, attrs, nattrs), 0);
}

/* ---------------------------------------------------------------- element sizes */

int kiln_ir_elem_bits(MlirType t) {
  MlirType e = kiln_ir_elem_type(t);
  if (!mlirTypeIsNull(kiln_ir_ptr_elem(e)) || mlirTypeIsALLVMPointerType(e)) return 64;
  if (mlirTypeIsAInteger(e)) return (int)mlirIntegerTypeGetWidth(e);
  if (mlirTypeIsAF16(e) || mlirTypeIsABF16(e)) return 16;
  if (mlirTypeIsAF32(e)) return 32;
  if (mlirTypeIsAF64(e)) return 64;
  return 0;
}

int64_t kiln_ir_elem_bytes(MlirType t) { return (kiln_ir_elem_bits(t) + 7) / 8; }

/* ---------------------------------------------------------------- atomics */

bool kiln_ir_atomic_bin_op(MlirOperation op, MlirType elem, int64_t *out) {
  char kind[16] = "";
  kiln_ir_get_str_attr(op, "kind", kind, sizeof kind);
  bool f = mlirTypeIsAFloat(elem);
  if (strcmp(kind, "add") == 0)
    *out = f ? KILN_LLVM_ATOMIC_FADD : KILN_LLVM_ATOMIC_ADD;
  else if (strcmp(kind, "max") == 0)
    *out = f ? KILN_LLVM_ATOMIC_FMAX : KILN_LLVM_ATOMIC_MAX;
  else if (strcmp(kind, "min") == 0)
    *out = f ? KILN_LLVM_ATOMIC_FMIN : KILN_LLVM_ATOMIC_MIN;
  else if (strcmp(kind, "xchg") == 0)
    *out = KILN_LLVM_ATOMIC_XCHG;
  else if (strcmp(kind, "umax") == 0 && !f)
    *out = KILN_LLVM_ATOMIC_UMAX;
  else if (strcmp(kind, "umin") == 0 && !f)
    *out = KILN_LLVM_ATOMIC_UMIN;
  else
    return false;
  return true;
}

/* ---------------------------------------------------------------- device_print's module pieces */

char *kiln_ir_print_format(MlirStringRef text, int rank, MlirType elem) {
  size_t cap = 2 * text.length + 64 + 4 * (size_t)rank;
  char *f = malloc(cap), *o = f;
  if (!f) return NULL;
  o += sprintf(o, "pid (%%d, %%d, %%d) ");
  if (rank > 0) {
    o += sprintf(o, "idx (");
    for (int i = 0; i < rank; i++) o += sprintf(o, i ? ", %%d" : "%%d");
    o += sprintf(o, ") ");
  }
  for (size_t i = 0; i < text.length; i++) {
    if (text.data[i] == '%') *o++ = '%';
    *o++ = text.data[i];
  }
  bool wide = mlirTypeIsAInteger(elem) && mlirIntegerTypeGetWidth(elem) == 64;
  sprintf(o, ": %s\n", mlirTypeIsAFloat(elem) ? "%.9g" : wide ? "%lld" : "%d");
  return f;
}

static bool module_has_symbol(MlirOperation module, const char *name) {
  MlirSymbolTable st = mlirSymbolTableCreate(module);
  bool have = !mlirOperationIsNull(mlirSymbolTableLookup(st, mlirStringRefCreateFromCString(name)));
  mlirSymbolTableDestroy(st);
  return have;
}

/* Creates `spec` at the top of the module's body (symbols before the functions that use them). */
static void at_module_top(MlirOperation module, const KilnOpSpec *spec) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  KilnIRBuilder mb;
  kiln_ir_builder_init(&mb, mlirOperationGetContext(module), body);
  kiln_ir_builder_set_before(&mb, mlirBlockGetFirstOperation(body));
  kiln_ir_create(&mb, spec);
}

static MlirAttribute linkage(MlirContext ctx, const char *which) {
  char text[64];
  snprintf(text, sizeof text, "#llvm.linkage<%s>", which);
  return mlirAttributeParseGet(ctx, mlirStringRefCreateFromCString(text));
}

void kiln_ir_declare_external_func(MlirOperation module, MlirLocation loc, const char *name,
                                   MlirType fnty) {
  if (module_has_symbol(module, name)) return;
  MlirContext ctx = mlirOperationGetContext(module);
  MlirNamedAttribute a[3] = {
      kiln_ir_named(ctx, "sym_name", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(name))),
      kiln_ir_named(ctx, "function_type", mlirTypeAttrGet(fnty)),
      kiln_ir_named(ctx, "linkage", linkage(ctx, "external")),
  };
  MlirRegion body = mlirRegionCreate();
  KilnOpSpec s = {
      .name = "llvm.func", .loc = loc, .attrs = a, .n_attrs = 3, .regions = &body, .n_regions = 1};
  at_module_top(module, &s);
}

MlirValue kiln_ir_module_string(KilnIRBuilder *b, MlirLocation loc, MlirOperation module,
                                const char *prefix, const char *text) {
  MlirContext ctx = mlirOperationGetContext(module);
  char name[96];
  for (int n = 0;; n++) {
    snprintf(name, sizeof name, "%s_%d", prefix, n);
    if (!module_has_symbol(module, name)) break;
  }
  size_t len = strlen(text) + 1; /* with its NUL */
  MlirNamedAttribute g[5] = {
      kiln_ir_named(ctx, "sym_name", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(name))),
      kiln_ir_named(
          ctx, "global_type",
          mlirTypeAttrGet(mlirLLVMArrayTypeGet(mlirIntegerTypeGet(ctx, 8), (unsigned)len))),
      kiln_ir_named(ctx, "linkage", linkage(ctx, "internal")),
      kiln_ir_named(ctx, "constant", mlirUnitAttrGet(ctx)),
      kiln_ir_named(ctx, "value", mlirStringAttrGet(ctx, mlirStringRefCreate(text, len))),
  };
  MlirRegion init = mlirRegionCreate();
  KilnOpSpec s = {.name = "llvm.mlir.global",
                  .loc = loc,
                  .attrs = g,
                  .n_attrs = 5,
                  .regions = &init,
                  .n_regions = 1};
  at_module_top(module, &s);
  MlirNamedAttribute ga = kiln_ir_named(
      ctx, "global_name", mlirFlatSymbolRefAttrGet(ctx, mlirStringRefCreateFromCString(name)));
  MlirType ptr = mlirLLVMPointerTypeGet(ctx, 0);
  return kiln_ir_make1(b, loc, "llvm.mlir.addressof", NULL, 0, ptr, &ga, 1);
}
