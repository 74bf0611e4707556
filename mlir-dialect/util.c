/* util.c - small helpers shared by the files of mlir-dialect/: strings, printing, asserts. */
#include "kiln_mlir_internal.h"

#include <stdio.h>

_Noreturn void kiln_mlir_assert_fail(const char *file, int line, const char *func,
                                     const char *cond) {
  fprintf(stderr, "%s:%d: %s: assertion failed: %s\n", file, line, func, cond);
  fflush(stderr);
  /* A broken invariant is a bug in Kiln itself; continuing would corrupt the IR. */
  abort();
}

void kiln_str_append(KilnStr *s, const char *p, size_t n) {
  if (s->len + n + 1 > s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    while (cap < s->len + n + 1) cap *= 2;
    char *d = realloc(s->data, cap);
    KILN_ASSERT(d != NULL);
    s->data = d;
    s->cap = cap;
  }
  memcpy(s->data + s->len, p, n);
  s->len += n;
  s->data[s->len] = '\0';
}

void kiln_str_appendf(KilnStr *s, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  KILN_ASSERT(n >= 0);
  char *tmp = malloc((size_t)n + 1);
  KILN_ASSERT(tmp != NULL);
  vsnprintf(tmp, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  kiln_str_append(s, tmp, (size_t)n);
  free(tmp);
}

void kiln_str_free(KilnStr *s) {
  free(s->data);
  s->data = NULL;
  s->len = s->cap = 0;
}

void kiln_str_callback(MlirStringRef ref, void *user) {
  kiln_str_append((KilnStr *)user, ref.data, ref.length);
}

KilnStr kiln_print_type(MlirType t) {
  KilnStr s = {0};
  mlirTypePrint(t, kiln_str_callback, &s);
  if (!s.data) kiln_str_append(&s, "", 0);
  return s;
}

KilnStr kiln_print_loc(MlirLocation l) {
  KilnStr s = {0};
  mlirLocationPrint(l, kiln_str_callback, &s);
  if (!s.data) kiln_str_append(&s, "", 0);
  return s;
}

void kiln_ir_error(MlirLocation loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[1024];
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  mlirEmitError(loc, buf);
}

int kiln_ir_rank(MlirType t) {
  if (!mlirTypeIsARankedTensor(t) && !mlirTypeIsAMemRef(t)) return 0;
  return (int)mlirShapedTypeGetRank(t);
}

int64_t kiln_ir_dim(MlirType t, int i) { return mlirShapedTypeGetDimSize(t, i); }
