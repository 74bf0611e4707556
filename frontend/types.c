/* types.c: scalar kinds' widths and type values (construction, equality, spelling); the kinds
 * and their names are the shared vocabulary's (kiln_base.h). */
#include "frontend_internal.h"

#include <string.h>

static const int scalar_bits[KILN_SCALAR_COUNT] = {1, 8, 16, 32, 64, 16, 16, 32, 64, 8, 16, 32, 64};

static const KilnType scalar_types[KILN_SCALAR_COUNT] = {
    {KILN_TYPE_SCALAR, KILN_SCALAR_I1, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_I8, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_I16, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_I32, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_I64, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_F16, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_BF16, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_F32, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_F64, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_U8, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_U16, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_U32, false, 0, {0}, NULL, NULL},
    {KILN_TYPE_SCALAR, KILN_SCALAR_U64, false, 0, {0}, NULL, NULL},
};
static const KilnType void_type = {KILN_TYPE_VOID, KILN_SCALAR_I1, false, 0, {0}, NULL, NULL};

int kiln_scalar_bits(KilnScalarKind k) {
  return (unsigned)k < KILN_SCALAR_COUNT ? scalar_bits[k] : 0;
}

bool kiln_scalar_is_int(KilnScalarKind k) {
  return k <= KILN_SCALAR_I64 || kiln_scalar_is_unsigned(k);
}

const KilnType *kiln_type_scalar(KilnScalarKind k) {
  KILN_ASSERT((unsigned)k < KILN_SCALAR_COUNT);
  return &scalar_types[k];
}

const KilnType *kiln_type_void(void) { return &void_type; }

KilnType *kiln_type_new(KilnArena *ar, const KilnType *proto) {
  KilnType *t = kiln_arena_alloc(ar, sizeof *t);
  if (t && proto) *t = *proto;
  return t;
}

bool kiln_type_equal(const KilnType *a, const KilnType *b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind) return false;
  switch (a->kind) {
  case KILN_TYPE_VOID:
  case KILN_TYPE_STRING: return true;
  case KILN_TYPE_SCALAR:
  case KILN_TYPE_PTR:
  case KILN_TYPE_DTYPE: return a->scalar == b->scalar;
  case KILN_TYPE_TILE:
    if (a->scalar != b->scalar || a->elem_is_ptr != b->elem_is_ptr) return false;
    /* fallthrough */
  case KILN_TYPE_TUPLE: return a->rank == b->rank;
  case KILN_TYPE_DESC: return a->desc == b->desc;
  case KILN_TYPE_SHAPE:
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
      if (a->dims[i] != b->dims[i]) return false;
    return true;
  case KILN_TYPE_COUNT: break;
  }
  return false;
}

char *kiln_shape_str(const int64_t *dims, int rank, char *buf, size_t cap) {
  size_t n = 0;
  if (!cap) return buf;
  buf[0] = 0;
  n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "[");
  for (int i = 0; i < rank; i++)
    n += (size_t)snprintf(buf + (n < cap ? n : cap - 1), n < cap ? cap - n : 0, "%s%lld",
                          i ? "," : "", (long long)dims[i]);
  snprintf(buf + (n < cap ? n : cap - 1), n < cap ? cap - n : 0, "]");
  return buf;
}

char *kiln_type_str(const KilnType *t, char *buf, size_t cap) {
  if (!cap) return buf;
  if (!t) {
    snprintf(buf, cap, "<error>");
    return buf;
  }
  const char *s = kiln_scalar_name(t->scalar);
  switch (t->kind) {
  case KILN_TYPE_VOID: snprintf(buf, cap, "void"); break;
  case KILN_TYPE_SCALAR: snprintf(buf, cap, "%s", s); break;
  case KILN_TYPE_PTR: snprintf(buf, cap, "*%s", s); break;
  case KILN_TYPE_DTYPE: snprintf(buf, cap, "type %s", s); break;
  case KILN_TYPE_SHAPE: {
    char sh[128];
    snprintf(buf, cap, "shape %s", kiln_shape_str(t->dims, t->rank, sh, sizeof sh));
    break;
  }
  case KILN_TYPE_TILE:
  case KILN_TYPE_DESC: {
    char dims[128];
    size_t n = 0;
    dims[0] = 0;
    for (int i = 0; i < t->rank && n < sizeof dims; i++)
      n += (size_t)snprintf(dims + n, sizeof dims - n, "%lldx", (long long)t->dims[i]);
    snprintf(buf, cap, "%s<%s%s%s>", t->kind == KILN_TYPE_DESC ? "tensor_descriptor" : "tile", dims,
             t->elem_is_ptr ? "*" : "", s);
    break;
  }
  case KILN_TYPE_TUPLE: snprintf(buf, cap, "%d values", t->rank); break;
  case KILN_TYPE_STRING: snprintf(buf, cap, "string"); break;
  case KILN_TYPE_COUNT: snprintf(buf, cap, "?"); break;
  }
  return buf;
}
