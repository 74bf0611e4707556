/* types.c - !kiln.ptr<T> and tile type helpers.
 *
 * MLIR 19's C API cannot read a dynamic (IRDL) type's parameters, so every pointer type we
 * create or meet is remembered in a small process-wide table {context, elem, ptr}.  A pointer
 * type that arrives from parsed text is recognised by its printed form once and then added. */
#include "kiln_mlir_internal.h"

#include <pthread.h>

typedef struct PtrEntry {
  const void *ctx;
  MlirType elem, ptr;
} PtrEntry;

static pthread_mutex_t ptr_lock = PTHREAD_MUTEX_INITIALIZER;
static PtrEntry *ptr_table;
static size_t n_ptr, cap_ptr;

static void table_add(MlirContext ctx, MlirType elem, MlirType ptr) {
  if (n_ptr == cap_ptr) {
    size_t cap = cap_ptr ? cap_ptr * 2 : 32;
    PtrEntry *t = realloc(ptr_table, cap * sizeof *t);
    KILN_ASSERT(t != NULL);
    ptr_table = t;
    cap_ptr = cap;
  }
  ptr_table[n_ptr++] = (PtrEntry){ctx.ptr, elem, ptr};
}

void kiln_types_forget_context(MlirContext ctx) {
  pthread_mutex_lock(&ptr_lock);
  size_t j = 0;
  for (size_t i = 0; i < n_ptr; i++)
    if (ptr_table[i].ctx != ctx.ptr) ptr_table[j++] = ptr_table[i];
  n_ptr = j;
  if (n_ptr == 0) {
    free(ptr_table);
    ptr_table = NULL;
    cap_ptr = 0;
  }
  pthread_mutex_unlock(&ptr_lock);
}

MlirType kiln_ir_type_ptr(MlirContext ctx, MlirType elem) {
  pthread_mutex_lock(&ptr_lock);
  for (size_t i = 0; i < n_ptr; i++)
    if (ptr_table[i].ctx == ctx.ptr && mlirTypeEqual(ptr_table[i].elem, elem)) {
      MlirType t = ptr_table[i].ptr;
      pthread_mutex_unlock(&ptr_lock);
      return t;
    }
  pthread_mutex_unlock(&ptr_lock);
  KilnStr es = kiln_print_type(elem);
  KilnStr s = {0};
  kiln_str_appendf(&s, "!kiln.ptr<%s>", es.data);
  MlirType t = mlirTypeParseGet(ctx, mlirStringRefCreate(s.data, s.len));
  kiln_str_free(&es);
  kiln_str_free(&s);
  KILN_ASSERT(!mlirTypeIsNull(t));
  pthread_mutex_lock(&ptr_lock);
  table_add(ctx, elem, t);
  pthread_mutex_unlock(&ptr_lock);
  return t;
}

static bool lookup_ptr(MlirType t, MlirType *elem) {
  pthread_mutex_lock(&ptr_lock);
  for (size_t i = 0; i < n_ptr; i++)
    if (mlirTypeEqual(ptr_table[i].ptr, t)) {
      *elem = ptr_table[i].elem;
      pthread_mutex_unlock(&ptr_lock);
      return true;
    }
  pthread_mutex_unlock(&ptr_lock);
  return false;
}

MlirType kiln_ir_ptr_elem(MlirType t) {
  MlirType elem = {NULL};
  if (mlirTypeIsNull(t) || lookup_ptr(t, &elem)) return elem;
  MlirStringRef ns = mlirDialectGetNamespace(mlirTypeGetDialect(t));
  if (ns.length != 4 || memcmp(ns.data, "kiln", 4) != 0) return elem;
  KilnStr s = kiln_print_type(t);
  static const char prefix[] = "!kiln.ptr<";
  if (s.len > sizeof prefix && memcmp(s.data, prefix, sizeof prefix - 1) == 0 &&
      s.data[s.len - 1] == '>') {
    MlirContext ctx = mlirTypeGetContext(t);
    elem = mlirTypeParseGet(ctx,
                            mlirStringRefCreate(s.data + sizeof prefix - 1, s.len - sizeof prefix));
    if (!mlirTypeIsNull(elem)) {
      pthread_mutex_lock(&ptr_lock);
      table_add(ctx, elem, t);
      pthread_mutex_unlock(&ptr_lock);
    }
  }
  kiln_str_free(&s);
  return elem;
}

bool kiln_ir_type_is_ptr(MlirType t) { return !mlirTypeIsNull(kiln_ir_ptr_elem(t)); }

MlirType kiln_ir_type_tensor(MlirType elem, const int64_t *shape, int rank) {
  KILN_ASSERT(rank >= 1);
  return mlirRankedTensorTypeGet(rank, shape, elem, mlirAttributeGetNull());
}

MlirType kiln_ir_type_like(MlirType shaped, MlirType elem) {
  if (!mlirTypeIsARankedTensor(shaped)) return elem;
  int rank = kiln_ir_rank(shaped);
  int64_t shape[16];
  KILN_ASSERT(rank <= 16);
  for (int i = 0; i < rank; i++) shape[i] = kiln_ir_dim(shaped, i);
  return kiln_ir_type_tensor(elem, shape, rank);
}

MlirType kiln_ir_elem_type(MlirType t) {
  return mlirTypeIsARankedTensor(t) ? mlirShapedTypeGetElementType(t) : t;
}

bool kiln_ir_type_is_tile(MlirType t) { return mlirTypeIsARankedTensor(t); }

int64_t kiln_ir_type_numel(MlirType t) {
  int64_t n = 1;
  for (int i = 0; i < kiln_ir_rank(t); i++) n *= kiln_ir_dim(t, i);
  return n;
}

bool kiln_ir_type_is_float(MlirType t) { return mlirTypeIsAFloat(kiln_ir_elem_type(t)); }
bool kiln_ir_type_is_int(MlirType t) { return mlirTypeIsAInteger(kiln_ir_elem_type(t)); }
