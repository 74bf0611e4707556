/* kiln_frontend.h: the Kiln frontend's public interface.
 *
 * The frontend turns `.kiln` source text into a typed AST:
 *
 *   KilnCompilation *c = kiln_frontend_create("k.kiln", text, len);
 *   if (kiln_frontend_parse(c)) {
 *       KilnKernel *k;
 *       KilnBinding b[] = {{"BLOCK", 1024}};
 *       if (kiln_sema_check_kernel(c, "bias_gelu_fwd", b, 1, &k)) { ...walk k... }
 *   }
 *   kiln_diag_render(c, stderr);
 *   kiln_frontend_destroy(c);
 *
 * Memory: everything (AST, types, strings, diagnostics) lives in arenas owned by the
 * compilation and dies with kiln_frontend_destroy().  Sema results (types, constant values,
 * declaration links, carried-variable lists) are written into the AST nodes and into a
 * scratch arena that is reset by the next sema call, so a typed KilnKernel is valid until
 * the next kiln_sema_check_* call on the same compilation.  The tuner re-checks one kernel
 * per configuration in one process without growing memory.
 *
 * Nothing here sees MLIR; mlirgen walks the structs below directly.
 */
#ifndef KILN_FRONTEND_H
#define KILN_FRONTEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- spans */

/* A source range, 1-based, inclusive of its last character (end_col is the column of the
 * last character, so a one-character token has col == end_col). */
typedef struct KilnSpan {
  int line, col, end_line, end_col;
} KilnSpan;

/* ---------------------------------------------------------------- types */

/* KilnScalarKind, kiln_scalar_name, kiln_scalar_from_name (a type parameter's binding, -D T=bf16
 * or `T in [f16, bf16]`, is the kind's number) and kiln_scalar_is_float: kiln_base.h. */

typedef enum KilnTypeKind {
  KILN_TYPE_VOID,   /* result of store(), of calls used only for effect */
  KILN_TYPE_SCALAR, /* `scalar` */
  KILN_TYPE_PTR,    /* pointer to `scalar` (pointees are always scalars) */
  KILN_TYPE_TILE,   /* tile of `scalar` (or of pointers to `scalar` when elem_is_ptr) */
  KILN_TYPE_SHAPE,  /* a list literal used as a shape argument: rank + dims */
  KILN_TYPE_DTYPE,  /* a type name used as an argument (zeros(shape, f32)): `scalar` */
  KILN_TYPE_TUPLE,  /* the values of a call of a function that returns several (`return a, b;`),
                         which only an unpacking statement takes: `rank` = how many */
  KILN_TYPE_STRING, /* a string literal, which only static_assert's message takes */
  KILN_TYPE_DESC,   /* a tensor descriptor (make_tensor_descriptor): `desc`, `scalar` its
                         element type, `rank`/`dims` its block shape */
  KILN_TYPE_COUNT
} KilnTypeKind;

#define KILN_MAX_RANK 4

typedef struct KilnTensorDesc KilnTensorDesc;

/* A resolved type.  Types are immutable once made; compare with kiln_type_equal(). */
typedef struct KilnType {
  KilnTypeKind kind;
  KilnScalarKind scalar; /* SCALAR/DTYPE: the scalar; PTR: pointee; TILE: element or pointee */
  bool elem_is_ptr;      /* TILE only: elements are pointers to `scalar` */
  int rank;              /* TILE and SHAPE: number of dims (1..KILN_MAX_RANK) */
  int64_t dims[KILN_MAX_RANK];
  /* Written types only (annotations, casts): the name of a type parameter standing for the
     * scalar (`q: *T`, `x as T`), resolved by sema from T's binding; NULL otherwise. */
  const char *param;
  const KilnTensorDesc *desc; /* DESC only: the descriptor's parts */
} KilnType;

/* Bit width of a scalar kind (i1 -> 1, bf16 -> 16). */
int kiln_scalar_bits(KilnScalarKind k);
bool kiln_scalar_is_int(KilnScalarKind k); /* i1 included */
bool kiln_type_equal(const KilnType *a, const KilnType *b);
/* Writes a readable spelling ("tile<64x32xf16>", "*f32", "i32") into buf (always NUL-terminated
 * when cap > 0); returns buf. */
char *kiln_type_str(const KilnType *t, char *buf, size_t cap);

/* ---------------------------------------------------------------- builtins */

/* One id per builtin function, from builtins.def (the X-macro that also feeds the docs). */
typedef enum KilnBuiltin {
  KILN_BUILTIN_NONE = 0,
#define KILN_BUILTIN(id, name, min_args, max_args, sig, doc) KILN_BUILTIN_##id,
#include "builtins.def"
#undef KILN_BUILTIN
  KILN_BUILTIN_COUNT
} KilnBuiltin;

/* The builtin's source name ("load"), signature and doc strings; NULL for bad ids. */
const char *kiln_builtin_name(KilnBuiltin b);
const char *kiln_builtin_signature(KilnBuiltin b);
const char *kiln_builtin_doc(KilnBuiltin b);

/* ---------------------------------------------------------------- AST */

typedef struct KilnExpr KilnExpr;
typedef struct KilnStmt KilnStmt;
typedef struct KilnDecl KilnDecl;

typedef enum KilnDeclKind {
  KILN_DECL_PARAM,       /* non-const kernel parameter; `index` = position among non-const params */
  KILN_DECL_CONST_PARAM, /* `const NAME: i32`; bound per configuration, `value` holds it */
  KILN_DECL_LET,
  KILN_DECL_VAR,
  KILN_DECL_LOOP_VAR, /* the induction variable of a `for` */
  KILN_DECL_COUNT
} KilnDeclKind;

/* A tensor descriptor (make_tensor_descriptor(base, shape, strides, block_shape)): a tensor in
 * global memory and the block its loads and stores move.  Sema binds every run-time part to a
 * `let` of its own, evaluated once where the descriptor is made; load_tensor_descriptor and
 * store_tensor_descriptor expand into pointer arithmetic and bounds masks over those lets
 * (frontend/tensor_desc.c), so every target compiles them as the loads and stores they are. */
struct KilnTensorDesc {
  int rank;
  KilnScalarKind elem;              /* the pointee of base */
  int64_t block[KILN_MAX_RANK];     /* block_shape: compile-time constants */
  KilnDecl *base;                   /* *elem */
  KilnDecl *shape[KILN_MAX_RANK];   /* integer scalars */
  KilnDecl *strides[KILN_MAX_RANK]; /* integer scalars; the last is NULL: the constant 1 */
};

/* A named entity.  Every identifier use (KILN_EXPR_NAME, assignment target) points at one. */
struct KilnDecl {
  KilnDeclKind kind;
  const char *name;
  KilnSpan span;        /* the name at its declaration */
  const KilnType *type; /* after sema */
  bool is_const;        /* compile-time constant (const params; lets of constant exprs) */
  int64_t value;        /* when is_const and integer-typed */
  int index;            /* PARAM: position among non-const params; CONST_PARAM: among consts */
  int param_pos;        /* PARAM / CONST_PARAM: position in the source parameter list */
  int id;               /* unique per kernel, dense from 0: index for mlirgen's value maps */
  bool is_type_param;   /* CONST_PARAM declared `const T: type`: `type` is the bound scalar */
  bool has_annot;       /* LET/VAR/params: a `: TYPE` was written */
  KilnType annot;       /* the written type when has_annot */
};

typedef enum KilnExprKind {
  KILN_EXPR_INT,    /* ival; weak i32 unless context gives another int type (see `type`) */
  KILN_EXPR_FLOAT,  /* fval; weak f32 likewise */
  KILN_EXPR_BOOL,   /* ival 0/1, type i1 */
  KILN_EXPR_NAME,   /* name -> decl */
  KILN_EXPR_UNARY,  /* unop, lhs */
  KILN_EXPR_BINARY, /* binop, lhs, rhs, operand_type */
  KILN_EXPR_CALL,   /* name, builtin, args[nargs], operand_type */
  KILN_EXPR_INDEX,  /* lhs, index[nindex] (each ':' or None) */
  KILN_EXPR_CAST,   /* lhs, cast_to (a scalar; tiles cast element-wise) */
  KILN_EXPR_LIST,   /* args[nargs]: a list literal (shapes) */
  KILN_EXPR_TYPE,   /* a scalar type name as a value: cast_to */
  KILN_EXPR_STRING, /* a string literal: name holds its text (static_assert's message) */
  KILN_EXPR_COUNT
} KilnExprKind;

typedef enum KilnUnOp { KILN_UN_NEG, KILN_UN_NOT, KILN_UN_BITNOT, KILN_UN_COUNT } KilnUnOp;

typedef enum KilnBinOp {
  KILN_BIN_ADD,
  KILN_BIN_SUB,
  KILN_BIN_MUL,
  KILN_BIN_DIV,
  KILN_BIN_MOD,
  KILN_BIN_SHL,
  KILN_BIN_SHR,
  KILN_BIN_LT,
  KILN_BIN_LE,
  KILN_BIN_GT,
  KILN_BIN_GE,
  KILN_BIN_EQ,
  KILN_BIN_NE,
  KILN_BIN_BITAND,
  KILN_BIN_BITOR,
  KILN_BIN_BITXOR,
  KILN_BIN_AND,
  KILN_BIN_OR,
  KILN_BIN_POW, /* x ** n: n is a compile-time integer (sema), lowered to multiplications */
  KILN_BIN_COUNT
} KilnBinOp;

typedef enum KilnIndexKind { KILN_INDEX_SLICE, KILN_INDEX_NONE } KilnIndexKind;

/* An expression.  Fields by kind (others are zero/NULL):
 *   INT/BOOL: ival.  FLOAT: fval.
 *   NAME:     name, decl (after sema).
 *   UNARY:    unop, lhs.  operand_type = type the operand is converted to first (same as `type`
 *             for - and ~; i1 for !).
 *   BINARY:   binop, lhs, rhs.  operand_type = common type both operands are converted and
 *             broadcast to before the operation (for comparisons the result `type` is i1 of the
 *             broadcast shape; for ptr + int it is the int type of the broadcast shape and
 *             `type` is the pointer (tile)).
 *   CALL:     name, builtin, args/nargs.  operand_type: for elementwise builtins (where's a/b,
 *             maximum, minimum, math functions) the common type the value arguments are converted
 *             and broadcast to; for load/store/atomics the pointer operand's shape with the
 *             pointee element type (mask is broadcast to that shape; `other`/`value` converted to
 *             it); for dot the accumulator type; for a reduction of an i1/i8/i16 tile the
 *             input's shape in i32, the type it is reduced in (sum's result stays i32, max/min
 *             narrow back); NULL otherwise.  Optional builtin arguments that were not written
 *             are simply absent (nargs is smaller).
 *   INDEX:    lhs, index/nindex.
 *   CAST:     lhs, cast_to (scalar kind in cast_to->scalar).
 *   LIST:     args/nargs.
 *   TYPE:     cast_to (kind DTYPE).
 * After sema every node has `type`; `is_const` marks compile-time constant integer (or bool)
 * expressions whose value is in `ival` (for INT literals ival is the literal).  Literals take
 * the type they were converted to: an INT node may have a float type (emit a float constant).
 * A node's own `type` may differ from the `operand_type` its parent wants only in element type
 * and/or shape: the parent converts (cast) and broadcasts (splat / expand) it. */
struct KilnExpr {
  KilnExprKind kind;
  KilnSpan span;
  const KilnType *type;         /* sema */
  const KilnType *operand_type; /* sema, see above */
  bool is_const;                /* sema */
  int64_t ival;
  double fval;
  const char *name;
  KilnDecl *decl;      /* sema, NAME only */
  KilnDecl *part;      /* NAME made by sema for a tensor descriptor's expansion: bound to this
                          hidden `let`, never looked up by name */
  KilnBuiltin builtin; /* CALL only; NONE for unknown names (an error) */
  KilnUnOp unop;
  KilnBinOp binop;
  KilnExpr *lhs, *rhs;
  KilnExpr **args;
  int nargs;
  KilnIndexKind *index;
  int nindex;
  const KilnType *cast_to;
  const char *kw; /* an argument written `kw = value` (a keyword argument) */
  KilnSpan kw_span;
  struct KilnBlock *inlined; /* sema, CALL of a function: its parameters as `let`s bound to
                                      the arguments, then its body, checked for this call */
  KilnExpr *result;          /* sema, CALL of a function: the returned value (NULL: none); for
                                      a function that returns several, a LIST marked `tuple` whose
                                      args are the values (the call's type is then TUPLE);
                                      for a scan/reduce of k > 1 tiles, a `tuple` LIST of
                                      placeholders of its k result types (its combine's call,
                                      inlined for tiles of x's types, is in `lhs`; mlirgen
                                      binds the parameters' values itself) */
  bool tuple;                /* LIST only: the values of `return a, b;`, not a shape */
  bool weak;                 /* sema: an untyped constant (literal, const param) that took
                                      its type from the other operand, like Triton's constexprs */
  int depth;                 /* internal: nesting depth, bounded by the parser */
};

/* Whether a call of a builtin with an optional axis (sum, max, min, argmax, argmin, sort) has
 * one in args[1]: false when none is written, or when only a later argument (keep_dims,
 * descending) is given by keyword.  A reduction without an axis reduces every axis; a sort sorts
 * along the last. */
bool kiln_call_has_axis(const KilnExpr *e);

typedef enum KilnStmtKind {
  KILN_STMT_LET,      /* decl, init */
  KILN_STMT_VAR,      /* decl, init */
  KILN_STMT_ASSIGN,   /* target (decl of the var; name_span its use), value */
  KILN_STMT_EXPR,     /* value */
  KILN_STMT_FOR,      /* decl (loop var, i32), lo, hi, step (NULL = 1), body, carried[ncarried];
                         a `while` is parsed into one (exits.c) */
  KILN_STMT_IF,       /* cond, body (then), else_body (NULL if absent), carried[ncarried] */
  KILN_STMT_RETURN,   /* value: the returned expression (functions only), else NULL; `return a, b;`
                         returns a LIST marked `tuple` */
  KILN_STMT_UNPACK,   /* `let a, b = f(...);` (bind LET), `var a, b = ...` (VAR), `a, b = ...`
                         (VAR, assign): names[nnames] (NAME nodes), value (a call of a function
                         returning that many values); sema fills decls[nnames], the declared
                         names or, for an assignment, the vars assigned */
  KILN_STMT_BREAK,    /* parsed only: the parser's exit lowering (exits.c) turns break, continue */
  KILN_STMT_CONTINUE, /* and every return but a final one into flags, so sema never sees them */
  KILN_STMT_COUNT
} KilnStmtKind;

typedef struct KilnBlock {
  KilnStmt **stmts;
  int nstmts;
  KilnSpan span;
} KilnBlock;

/* A statement.  LET/VAR: decl->type may differ from init->type in element type only when the
 * init is `weak` or an annotation asked for it: convert.  ASSIGN likewise converts value to
 * target->type (shapes always match).  For FOR and IF, `carried` lists (once each, in order of first assignment)
 * the `var`s declared outside the statement that are assigned anywhere inside it: loop-carried
 * values for scf.for and results for scf.if.  An `else if` is an else_body holding one IF. */
struct KilnStmt {
  KilnStmtKind kind;
  KilnSpan span;
  KilnDecl *decl;
  KilnExpr *init;
  KilnDecl *target;
  KilnSpan name_span;
  KilnExpr *value;
  KilnExpr *lo, *hi, *step;
  KilnExpr *cond;
  KilnBlock *body;
  KilnBlock *else_body;
  KilnDecl **carried;
  int ncarried;
  bool guard; /* IF made by the exit lowering: runs the rest of a block after a statement that
                   may break, continue or return; its body continues that block's scope */
  /* FOR only.  `exit_name`: the loop's break flag (a `var` declared just before it, exits.c),
     * set by every break and by every return inside the loop; NULL when nothing leaves the loop
     * early.  Sema resolves it into `exit_flag` and puts it first in `carried`, and mlirgen marks
     * the scf.for so that the loop stops as soon as the flag is set (kiln-exit-loops).
     * `unbounded`: the loop a `while` became, whose range only counts: it ends through its flag. */
  const char *exit_name;
  KilnDecl *exit_flag;
  bool unbounded;
  /* FOR only: `for i in static_range(lo, hi[, step])`: constant bounds, unrolled by sema into
     * `copies` (one per iteration: a `let` of the loop variable as that constant, then a copy of
     * the body), which mlirgen emits one after another */
  bool unroll;
  KilnBlock **copies;
  int ncopies;
  /* IF only: the test of a `while` (exits.c), for messages that name the loop */
  bool while_test;
  /* UNPACK only (see KILN_STMT_UNPACK) */
  KilnExpr **names;
  int nnames;
  KilnDeclKind bind;
  bool assign;
  KilnDecl **decls;
  int depth; /* internal */
};

/* A function: `def NAME(a, b: f32, c = 1.0) { ... return e; }`.  Parameters are untyped unless
 * annotated; each call is checked on its own (sema inlines a copy of the body with the
 * parameters bound as `let`s), so one function serves tiles and scalars of any type. */
typedef struct KilnFuncParam {
  const char *name;
  KilnSpan span;
  bool has_annot;
  KilnType annot;
  KilnExpr *def; /* default value, or NULL */
} KilnFuncParam;

typedef struct KilnFunc {
  const char *name;
  KilnSpan span;
  KilnFuncParam *params;
  int nparams;
  KilnBlock *body;
  KilnExpr *result; /* the value of its final `return e;`, or NULL (no value); `return a, b;`
                         makes a LIST marked `tuple` */
} KilnFunc;

typedef struct KilnKernel {
  const char *name;
  KilnSpan span;     /* the kernel's name */
  KilnDecl **params; /* in source order, const ones included */
  int nparams;
  KilnBlock *body;
  int ndecls;            /* after sema: decl ids are 0..ndecls-1 */
  struct KilnTune *tune; /* the kernel's tune block, or NULL */
  int num_warps;         /* from the bindings given to sema ("num_warps"), default 4 */
  int num_stages;        /* likewise ("num_stages"), default 2 */
  int min_blocks;        /* likewise ("min_blocks"): blocks per SM promised to ptxas
                            (.minnctapersm, which caps registers); 0 when not bound */
  int wgmma;             /* likewise ("wgmma"): 1 asks the sm_90 lowering for warpgroup MMA
                            (the func's kiln.wgmma); 0, the default, keeps mma.sync */
} KilnKernel;

/* ---------------------------------------------------------------- tune blocks */

typedef struct KilnTuneParam {
  const char *name; /* a const param, or a meta name ("num_warps", "wgmma"...) */
  KilnSpan span;
  int64_t *values;
  int nvalues;
} KilnTuneParam;

typedef struct KilnTuneAssign {
  const char *name;
  KilnSpan span;
  int64_t value;
} KilnTuneAssign;

typedef struct KilnTunePreset {
  const char *name;
  KilnSpan span;
  /* `preset NAME for DEVICE { ... }`: a candidate of the default mode on that device kind
     * only ("cpu", "emu", "cuda"), never an untuned library's default; NULL: every device */
  const char *device;
  KilnSpan device_span;
  /* `preset NAME ... where COND { ... }`: the preset is a candidate, and can be the default,
     * only for configurations where COND (over the block's parameters, pinned values included)
     * is non-zero: `where T != f32` keeps a tensor-core tile off the f32 FMA path. NULL: always */
  KilnExpr *cond;
  KilnTuneAssign *assigns;
  int nassigns;
} KilnTunePreset;

typedef struct KilnTune {
  const char *kernel_name;
  KilnSpan span;     /* the kernel name after `tune` */
  const char **keys; /* `key` parameters (non-const params) */
  KilnSpan *key_spans;
  int nkeys;
  KilnTuneParam *params; /* in source order; num_warps / num_stages included if written */
  int nparams;
  KilnExpr **wheres; /* `where` conditions (all must hold) */
  int nwheres;
  KilnTunePreset *presets;
  int npresets;
  KilnKernel *kernel; /* the kernel it tunes, after parse (NULL if unknown: an error) */
} KilnTune;

/* KilnBinding (a name -> integer binding for a const parameter, or num_warps / num_stages):
 * kiln_base.h. */

/* ---------------------------------------------------------------- diagnostics */

typedef enum KilnSeverity { KILN_SEV_ERROR, KILN_SEV_WARNING, KILN_SEV_NOTE } KilnSeverity;

typedef struct KilnDiag {
  KilnSeverity severity;
  KilnSpan span;
  const char *message; /* without the "file:line:col: error: " prefix */
} KilnDiag;

/* At most this many errors are kept per compilation; later ones are counted but dropped. */
#define KILN_MAX_ERRORS 50
/* Brackets/blocks and expression trees deeper than this are rejected with an error. */
#define KILN_MAX_NESTING 256

/* ---------------------------------------------------------------- compilation */

typedef struct KilnCompilation KilnCompilation;

/* Creates a compilation over a copy of text[0..len) (may hold NULs; need not be terminated).
 * path is used in diagnostics only and copied.  Returns NULL only when memory runs out.
 * Destroy with kiln_frontend_destroy(). */
KilnCompilation *kiln_frontend_create(const char *path, const char *text, size_t len);
/* Frees the compilation and everything it handed out (AST, types, diagnostics). NULL is ok. */
void kiln_frontend_destroy(KilnCompilation *c);

/* Lexes and parses the whole file, collecting syntax errors (several per run); links each tune
 * block to its kernel.  Returns true when there were no errors.  Call once. */
bool kiln_frontend_parse(KilnCompilation *c);

/* Kernels and tune blocks in source order (valid after parse, owned by c). */
int kiln_kernel_count(const KilnCompilation *c);
KilnKernel *kiln_kernel_get(const KilnCompilation *c, int i);
KilnKernel *kiln_kernel_find(const KilnCompilation *c, const char *name); /* NULL if none */
KilnFunc *kiln_func_find(const KilnCompilation *c, const char *name);     /* NULL if none */
int kiln_tune_count(const KilnCompilation *c);
KilnTune *kiln_tune_get(const KilnCompilation *c, int i);

/* Type-checks kernel `kernel_name` with its const params bound from bindings (entries named
 * num_warps / num_stages / min_blocks / wgmma set the kernel's fields of those names; unknown
 * names are an error).  On success stores the typed kernel in *out (owned by c; valid until
 * the next sema call) and returns true.  On failure returns false with errors in the
 * diagnostics list.  Each call first drops the diagnostics of the previous sema call (parse
 * diagnostics stay) and resets the scratch arena, so it may be called once per tuning
 * configuration. */
bool kiln_sema_check_kernel(KilnCompilation *c, const char *kernel_name,
                            const KilnBinding *bindings, size_t nbindings, KilnKernel **out);

/* For `kiln check`: checks every kernel (and every tune block against its kernel), binding each
 * kernel's consts from the first configuration of its tune block; a const with no value there is
 * an error naming it.  Returns true when there were no errors. */
bool kiln_sema_check_all(KilnCompilation *c);
/* The same with values given on the command line (`kiln check -D NAME=VALUE`): each kernel that
 * has a const parameter NAME (or any kernel, for a meta name such as num_warps) takes the value
 * over its tune block's; a NAME no kernel has is an error. */
bool kiln_sema_check_all_bound(KilnCompilation *c, const KilnBinding *defines, size_t ndefines);

size_t kiln_diag_count(const KilnCompilation *c);
size_t kiln_diag_count_errors(const KilnCompilation *c);
const KilnDiag *kiln_diag_get(const KilnCompilation *c, size_t i);
/* Prints every diagnostic gcc-style: `file:line:col: error: msg`, the source line, and a caret
 * line (`^~~~`) under the span. */
void kiln_diag_render(const KilnCompilation *c, FILE *out);
/* Same as one rendered diagnostic, for other stages that report at a source span (mlirgen). */
void kiln_diag_render_one(const KilnCompilation *c, const KilnDiag *d, FILE *out);
/* Records a diagnostic from a later stage (message copied).  Returns false if the error limit
 * was reached (the diagnostic was counted but dropped). */
bool kiln_diag_add(KilnCompilation *c, KilnSeverity sev, KilnSpan span, const char *message);
const char *kiln_frontend_path(const KilnCompilation *c);

/* Prints a typed kernel as an indented tree with each expression's type (for --emit ast). */
void kiln_ast_dump(const KilnKernel *k, FILE *out);

/* ---------------------------------------------------------------- tuning configurations */

/* KilnTuneConfig (one point of a tune block's space): kiln_base.h, since the tuner's runner,
 * which has no frontend, reads and times configs too. */

/* Number of points in the cross product of the block's value lists (before `where`). */
size_t kiln_tune_config_count(const KilnTune *t);
/* Fills *out with point i (0 <= i < count; the last listed parameter varies fastest).
 * Returns false if i is out of range or the block has more than 30 parameters. */
bool kiln_tune_config_get(const KilnTune *t, size_t i, KilnTuneConfig *out);

/* The reserved tune names (num_warps, num_stages, min_blocks, wgmma) and their ranges:
 * kiln_meta_param_is, kiln_meta_param_min and kiln_meta_param_max, in kiln_base.h (the tuner's
 * runner, which has no frontend, needs them too). */
/* Fills *out from preset `name`, parameters it does not set taking their first listed value.
 * Returns false if there is no such preset. */
bool kiln_tune_preset_get(const KilnTune *t, const char *name, KilnTuneConfig *out);
/* Whether preset number i applies to cfg (normally its own config, from kiln_tune_preset_get
 * on the block with its pins): true without a `where`, else the condition's value over cfg.
 * An evaluation error (division by zero) makes it false. */
bool kiln_tune_preset_applies(const KilnTune *t, int i, const KilnTuneConfig *cfg);
/* True when every `where` of the block holds for cfg.  Evaluation errors (division by zero, an
 * unbound name) make it false and, when c is non-NULL, add a diagnostic.  Conditions on the
 * call (a `where` naming a `key` parameter) are not checked here: see kiln_tune_where_ok_call. */
bool kiln_tune_where_ok(KilnCompilation *c, const KilnTune *t, const KilnTuneConfig *cfg);
/* Whether `where` number i names one of the block's `key` parameters: a condition on the call
 * (`where BLOCK >= cols`), which holds or not per call, not per config. */
bool kiln_tune_where_is_call(const KilnTune *t, int i);
/* Like kiln_tune_where_ok, with the call's key values (args, by name) for the conditions on
 * the call as well. */
bool kiln_tune_where_ok_call(KilnCompilation *c, const KilnTune *t, const KilnTuneConfig *cfg,
                             const KilnBinding *args, int nargs);

#ifdef __cplusplus
}
#endif

#endif /* KILN_FRONTEND_H */
