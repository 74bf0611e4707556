/* frontend.c: the compilation object and the parse entry point.
 *
 * Pipeline, in order:  kiln_frontend_create (copy the source)  ->  kiln_frontend_parse (lex +
 * parse into the arena, link tune blocks to kernels)  ->  kiln_sema_check_kernel per
 * configuration (sema.c)  ->  the caller walks the typed kernel. */
#include "frontend_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

KilnCompilation *kiln_frontend_create(const char *path, const char *text, size_t len) {
  KilnCompilation *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  kiln_arena_init(&c->ar);
  kiln_arena_init(&c->scratch);
  if (!path) path = "<input>";
  c->path = kiln_arena_strndup(&c->ar, path, strlen(path));
  c->text = kiln_arena_alloc(&c->ar, len + 2);
  if (!c->path || !c->text) {
    kiln_frontend_destroy(c);
    return NULL;
  }
  if (len) memcpy(c->text, text, len);
  c->len = len;
  return c;
}

void kiln_frontend_destroy(KilnCompilation *c) {
  if (!c) return;
  kiln_arena_free(&c->ar);
  kiln_arena_free(&c->scratch);
  free(c->diags);
  free(c);
}

const char *kiln_frontend_path(const KilnCompilation *c) { return c->path; }

/* Links each tune block to its kernel; duplicate kernels and tune blocks are errors. */
static void link_items(KilnCompilation *c) {
  for (int i = 0; i < c->kernels.n; i++) {
    KilnKernel *k = c->kernels.items[i];
    int first = kiln_names_get(&c->kernel_index, k->name);
    if (first >= 0) {
      KilnKernel *o = c->kernels.items[first];
      kiln_diag_error(c, k->span, "kernel '%s' is already defined at line %d", k->name,
                      o->span.line);
    } else {
      kiln_names_set(&c->ar, &c->kernel_index, k->name, i);
    }
  }
  for (int i = 0; i < c->funcs.n; i++) {
    KilnFunc *f = c->funcs.items[i];
    int first = kiln_names_get(&c->func_index, f->name);
    if (first >= 0) {
      KilnFunc *o = c->funcs.items[first];
      kiln_diag_error(c, f->span, "function '%s' is already defined at line %d", f->name,
                      o->span.line);
      continue;
    }
    for (int b = 1; b < KILN_BUILTIN_COUNT; b++)
      if (strcmp(kiln_builtin_name((KilnBuiltin)b), f->name) == 0)
        kiln_diag_error(c, f->span, "'%s' is a builtin function: choose another name", f->name);
    kiln_names_set(&c->ar, &c->func_index, f->name, i);
  }
  for (int i = 0; i < c->tunes.n; i++) {
    KilnTune *t = c->tunes.items[i];
    t->kernel = kiln_kernel_find(c, t->kernel_name);
    if (!t->kernel) {
      kiln_diag_error(c, t->span, "tune block for unknown kernel '%s'", t->kernel_name);
      continue;
    }
    if (t->kernel->tune) {
      kiln_diag_error(c, t->span, "kernel '%s' already has a tune block at line %d", t->kernel_name,
                      t->kernel->tune->span.line);
      continue;
    }
    t->kernel->tune = t;
  }
}

const KilnSpan kiln_span_none = {0, 0, 0, 0};

bool kiln_frontend_parse(KilnCompilation *c) {
  KILN_ASSERT(!c->parsed);
  c->parsed = true;
  jmp_buf oom;
  if (setjmp(oom)) {
    c->ar.oom = NULL;
    kiln_diag_error(c, kiln_span_none, "out of memory while parsing");
    c->nparse_diags = c->ndiags;
    c->nparse_errors = c->nerrors;
    return false;
  }
  c->ar.oom = &oom;
  if (c->len > INT_MAX / 2) {
    kiln_diag_error(c, kiln_span_none, "source file is too large");
  } else {
    kiln_parse_run(c);
    if (!c->too_deep) link_items(c);
  }
  c->ar.oom = NULL;
  c->nparse_diags = c->ndiags;
  c->nparse_errors = c->nerrors;
  c->parse_ok = c->nerrors == 0;
  return c->parse_ok;
}

int kiln_kernel_count(const KilnCompilation *c) { return c->kernels.n; }

KilnKernel *kiln_kernel_get(const KilnCompilation *c, int i) {
  return i >= 0 && i < c->kernels.n ? c->kernels.items[i] : NULL;
}

KilnKernel *kiln_kernel_find(const KilnCompilation *c, const char *name) {
  if (c->kernel_index.cap) { /* indexed once parsed */
    int i = kiln_names_get(&c->kernel_index, name);
    return i >= 0 ? c->kernels.items[i] : NULL;
  }
  for (int i = 0; i < c->kernels.n; i++) {
    KilnKernel *k = c->kernels.items[i];
    if (strcmp(k->name, name) == 0) return k;
  }
  return NULL;
}

int kiln_tune_count(const KilnCompilation *c) { return c->tunes.n; }

KilnTune *kiln_tune_get(const KilnCompilation *c, int i) {
  return i >= 0 && i < c->tunes.n ? c->tunes.items[i] : NULL;
}

/* Each builtin's name, signature and doc, one row per entry of builtins.def (row 0: no
 * builtin). */
typedef struct BuiltinInfo {
  const char *name, *sig, *doc;
} BuiltinInfo;

static const BuiltinInfo *builtin_info(KilnBuiltin b) {
  static const BuiltinInfo rows[] = {
      {NULL, NULL, NULL},
#define KILN_BUILTIN(id, name, min_args, max_args, sig, doc) {name, sig, doc},
#include "builtins.def"
#undef KILN_BUILTIN
  };
  return (unsigned)b < KILN_BUILTIN_COUNT ? &rows[b] : NULL;
}

const char *kiln_builtin_name(KilnBuiltin b) {
  const BuiltinInfo *r = builtin_info(b);
  return r ? r->name : NULL;
}

const char *kiln_builtin_signature(KilnBuiltin b) {
  const BuiltinInfo *r = builtin_info(b);
  return r ? r->sig : NULL;
}

const char *kiln_builtin_doc(KilnBuiltin b) {
  const BuiltinInfo *r = builtin_info(b);
  return r ? r->doc : NULL;
}

KilnFunc *kiln_func_find(const KilnCompilation *c, const char *name) {
  int i = kiln_names_get(&c->func_index, name);
  return i >= 0 ? c->funcs.items[i] : NULL;
}
