/* frontend_internal.h: what the frontend's own files share (arena, compilation state,
 * diagnostics helpers, AST constructors).  Not for other folders: they use kiln_frontend.h. */
#ifndef KILN_FRONTEND_INTERNAL_H
#define KILN_FRONTEND_INTERNAL_H

#include "kiln_frontend.h"

#include <setjmp.h>
#include <stdarg.h>

/* Broken internal invariant: always on, never a user error. */
#define KILN_ASSERT(cond)                                                                          \
  do {                                                                                             \
    if (!(cond)) kiln_assert_fail(__FILE__, __LINE__, __func__, #cond);                            \
  } while (0)
_Noreturn void kiln_assert_fail(const char *file, int line, const char *func, const char *cond);

/* ---------------------------------------------------------------- arena */

/* The span of diagnostics that belong to no source position. A named object, not a compound
 * literal, because the functions that report through it also call setjmp, and gcc warns that a
 * compound literal temporary "might be clobbered". */
extern const KilnSpan kiln_span_none;

typedef struct KilnArenaChunk KilnArenaChunk;

/* Bump allocator: memory comes from chunks and is released all at once.  When malloc fails
 * and `oom` is set, alloc longjmps there (the compile entry turns it into an error);
 * without `oom` it returns NULL. */
typedef struct KilnArena {
  KilnArenaChunk *head;
  size_t used_bytes; /* total handed out since init/reset, for tests */
  jmp_buf *oom;
} KilnArena;

void kiln_arena_init(KilnArena *ar);
/* Zeroed, 16-byte aligned memory living until reset/free. */
void *kiln_arena_alloc(KilnArena *ar, size_t size);
/* Frees every chunk but the first and rewinds it: memory handed out before is invalid. */
void kiln_arena_reset(KilnArena *ar);
void kiln_arena_free(KilnArena *ar);
char *kiln_arena_strndup(KilnArena *ar, const char *s, size_t n);
char *kiln_arena_printf(KilnArena *ar, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *kiln_arena_vprintf(KilnArena *ar, const char *fmt, va_list ap);

/* A growable array of pointers in an arena (old storage is simply abandoned). */
typedef struct KilnPtrVec {
  void **items;
  int n, cap;
} KilnPtrVec;
void kiln_vec_push(KilnArena *ar, KilnPtrVec *v, void *item);

/* A map from names (strings that outlive it) to non-negative ints, open addressing in an arena,
 * so that name lookups stay constant-time in programs with many kernels or declarations. A name
 * is never removed; setting it to -1 makes it absent. Zero-initialize before use. */
typedef struct KilnNameMap {
  const char **keys;
  int *vals;
  int cap, used;
} KilnNameMap;
int kiln_names_get(const KilnNameMap *m, const char *name); /* -1 when absent */
void kiln_names_set(KilnArena *ar, KilnNameMap *m, const char *name, int value);

/* ---------------------------------------------------------------- compilation */

struct KilnCompilation {
  KilnArena ar;      /* source, AST, parse diagnostics: lives as long as the compilation */
  KilnArena scratch; /* sema results of the latest sema call */
  char *path;
  char *text;
  size_t len;

  KilnDiag *diags; /* malloc'ed vector; message texts live in ar or scratch */
  size_t ndiags, diag_cap;
  size_t nerrors;      /* including dropped ones */
  size_t nparse_diags; /* diagnostics from parsing, kept across sema calls */
  size_t nparse_errors;
  bool in_sema; /* new diagnostics' text goes to scratch */

  KilnPtrVec kernels;       /* KilnKernel* */
  KilnNameMap kernel_index; /* name -> index in kernels of its first definition */
  KilnPtrVec tunes;         /* KilnTune* */
  KilnPtrVec funcs;         /* KilnFunc* */
  KilnNameMap func_index;   /* name -> index in funcs of its first definition */
  bool parsed;
  bool parse_ok;
  bool too_deep; /* nesting limit hit: stop lexing, suppress follow-up syntax errors */
  jmp_buf *oom;
};

/* Adds an error/warning with a printf-style message.  Never fails: past KILN_MAX_ERRORS the
 * error is counted and dropped. */
void kiln_diag_error(KilnCompilation *c, KilnSpan span, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void kiln_diag_warning(KilnCompilation *c, KilnSpan span, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void kiln_diag_vadd(KilnCompilation *c, KilnSeverity sev, KilnSpan span, const char *fmt,
                    va_list ap);
/* Drops the diagnostics added since parsing (start of a new sema call). */
void kiln_diag_reset_sema(KilnCompilation *c);

KilnSpan kiln_span_join(KilnSpan a, KilnSpan b);

/* ---------------------------------------------------------------- parser glue */

/* State the reentrant lexer and parser share (flex's yyextra and bison's parse-param). */
typedef struct KilnParseState {
  KilnCompilation *c;
  int line, col; /* position of the next character */
  int nesting;   /* open ( [ { */
  KilnSpan comment_start;
  void *scanner;
} KilnParseState;

KilnExpr *kiln_ast_expr(KilnParseState *ps, KilnExprKind kind, KilnSpan span);
KilnExpr *kiln_ast_unary(KilnParseState *ps, KilnUnOp op, KilnExpr *e, KilnSpan span);
KilnExpr *kiln_ast_binary(KilnParseState *ps, KilnBinOp op, KilnExpr *l, KilnExpr *r);
KilnExpr *kiln_ast_call(KilnParseState *ps, const char *name, KilnSpan name_span, KilnPtrVec *args,
                        KilnSpan span);
KilnStmt *kiln_ast_stmt(KilnParseState *ps, KilnStmtKind kind, KilnSpan span);
KilnBlock *kiln_ast_block(KilnParseState *ps, KilnPtrVec *stmts, KilnSpan span);
KilnType *kiln_ast_type(KilnParseState *ps, KilnTypeKind kind, KilnScalarKind s);
/* Records the depth of a node and reports (once) when it passes KILN_MAX_NESTING. */
void kiln_ast_check_depth(KilnParseState *ps, int depth, KilnSpan span);

/* Rewrites break, continue and early returns of kernel k into flag vars and guard ifs (exits.c);
 * run once per kernel right after it is parsed.  An exit outside a loop is reported. */
void kiln_exits_lower(KilnParseState *ps, KilnKernel *k);
/* The same for a function's body; its final `return e;` becomes f->result. */
void kiln_exits_lower_func(KilnParseState *ps, KilnFunc *f);
/* `while cond body` as the loop it is lowered to (exits.c): a counting `for` that ends through its
 * break flag. */
KilnStmt *kiln_exits_while(KilnParseState *ps, KilnExpr *cond, KilnBlock *body, KilnSpan span);

/* Deep copies (into ar) of a function body and expression, for inlining one call: sema writes
 * types into the copy, so each call is checked on its own.  Declarations are copied too. */
KilnBlock *kiln_ast_clone_block(KilnArena *ar, const KilnBlock *b);
KilnExpr *kiln_ast_clone_expr(KilnArena *ar, const KilnExpr *e);

/* A tensor descriptor's load or store as the AST a user would write (tensor_desc.c), unchecked:
 * the indices of dim k (`offset + arange(0, block[k])`, offset a hidden `let`), and the load
 * (value NULL) or store of the block at the indices idx[k] (hidden `let`s of those), masked to
 * the tensor's shape. */
KilnExpr *kiln_tensor_desc_indices(KilnArena *ar, const KilnTensorDesc *d, int k, KilnDecl *offset,
                                   KilnSpan span);
KilnExpr *kiln_tensor_desc_access(KilnArena *ar, const KilnTensorDesc *d, KilnDecl *const *idx,
                                  KilnDecl *value, KilnSpan span);
/* device_assert(stride % align == 0, ...) and multiple_of(stride, align): a run-time stride is
 * checked to be a multiple of 16 bytes (align elements), then promised to be one. */
KilnExpr *kiln_tensor_desc_stride_check(KilnArena *ar, KilnDecl *stride, int align, KilnSpan span);
KilnExpr *kiln_tensor_desc_stride_hint(KilnArena *ar, KilnDecl *stride, int align, KilnSpan span);

/* The parser entry (parser.y); returns true on success. */
bool kiln_parse_run(KilnCompilation *c);

/* ---------------------------------------------------------------- types (types.c) */

const KilnType *kiln_type_scalar(KilnScalarKind k); /* static singletons */
const KilnType *kiln_type_void(void);
KilnType *kiln_type_new(KilnArena *ar, const KilnType *proto);
/* Formats a shape as "[64,32]". */
char *kiln_shape_str(const int64_t *dims, int rank, char *buf, size_t cap);

/* ---------------------------------------------------------------- tune (tune.c) */

/* Evaluates an integer constant expression of a tune block (literals, names from bindings,
 * arithmetic, comparisons, logic).  On failure stores a message in *err (arena-allocated) and
 * the offending span in *err_span and returns false. */
bool kiln_tune_eval(KilnArena *ar, const KilnExpr *e, const KilnBinding *b, int nb, int64_t *out,
                    const char **err, KilnSpan *err_span);
/* Checks a tune block against its kernel (sema side of kiln_sema_check_all). */
void kiln_tune_check(KilnCompilation *c, KilnTune *t);

#endif /* KILN_FRONTEND_INTERNAL_H */
