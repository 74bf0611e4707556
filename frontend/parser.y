/* parser.y: the Kiln grammar.
 *
 * A pure (reentrant) bison parser fed by lexer.l.  Actions only build AST nodes in the
 * compilation's arena; every check beyond syntax belongs to sema.  Syntax errors are reported
 * with bison's detailed messages and recovered from at `;` (statements, tune items) and `}`
 * (top-level items), so one run reports several.  Node depths are tracked while building so that
 * no later recursive walk can be driven deeper than KILN_MAX_NESTING.
 *
 * Precedence, loosest first:  ||  &&  |  ^  &  == !=  < <= > >=  << >>  + -  * / %  as  unary
 * **  then postfix indexing and calls.  `**` is right-associative and binds tighter than a unary
 * minus on its left, as in Python: -x ** 2 is -(x ** 2), 2 ** 3 ** 2 is 2 ** 9. */
%define api.pure full
%define api.prefix {kiln_yy}
%define api.token.prefix {TOK_}
%define parse.error detailed
%locations
%param {KilnParseState *ps}

%code requires {
#include "frontend_internal.h"

/* One item of a tune block, gathered by the tune rule. */
typedef enum TuneItemKind { TUNE_ITEM_PARAM, TUNE_ITEM_KEY, TUNE_ITEM_WHERE, TUNE_ITEM_PRESET } TuneItemKind;
typedef struct TuneItem {
    TuneItemKind kind;
    KilnTuneParam param;
    KilnPtrVec names;  /* KEY: KilnExpr* NAME nodes (for their spans) */
    KilnExpr *where;
    KilnTunePreset preset;
} TuneItem;

/* One parameter of a function, gathered by the func rule. */
typedef struct FuncParamItem {
    KilnFuncParam p;
} FuncParamItem;
}

%code provides {
int kiln_lex_raw(KILN_YYSTYPE *yylval_param, KILN_YYLTYPE *yylloc_param, void *yyscanner);
}

%code {
#include <string.h>

/* lexer.h declares flex's own kiln_yylex, which we never define (YY_DECL renames it); keep
 * that declaration out of the way of the wrapper below. */
#define kiln_yylex kiln_yylex_flex_unused
#include "lexer.h"
#undef kiln_yylex

#define SPAN(l) ((KilnSpan){(l).first_line, (l).first_column, (l).last_line, (l).last_column})

static int kiln_yylex(KILN_YYSTYPE *lval, KILN_YYLTYPE *lloc, KilnParseState *ps)
{
    /* Once the nesting limit is hit, the rest of the input is not looked at. */
    if (ps->c->too_deep)
        return TOK_YYEOF;
    return kiln_lex_raw(lval, lloc, ps->scanner);
}

static void kiln_yyerror(KILN_YYLTYPE *loc, KilnParseState *ps, const char *msg)
{
    if (!ps->c->too_deep)
        kiln_diag_error(ps->c, SPAN(*loc), "%s", msg);
}

static KilnDecl *new_decl(KilnParseState *ps, KilnDeclKind kind, const char *name, KilnSpan span)
{
    KilnDecl *d = kiln_arena_alloc(&ps->c->ar, sizeof *d);
    d->kind = kind;
    d->name = name;
    d->span = span;
    return d;
}

/* `let a, b = e;` and its kin: first and the names after it (NAME nodes) bound from e. */
static KilnStmt *unpack_stmt(KilnParseState *ps, KilnDeclKind bind, bool assign, const char *first,
                             KilnSpan first_span, KilnPtrVec *rest, KilnExpr *value, KilnSpan span)
{
    KilnStmt *s = kiln_ast_stmt(ps, KILN_STMT_UNPACK, span);
    KilnExpr *n = kiln_ast_expr(ps, KILN_EXPR_NAME, first_span);
    n->name = first;
    s->nnames = rest->n + 1;
    s->names = kiln_arena_alloc(&ps->c->ar, sizeof *s->names * (size_t)s->nnames);
    s->names[0] = n;
    for (int i = 0; i < rest->n; i++)
        s->names[i + 1] = rest->items[i];
    s->bind = bind;
    s->assign = assign;
    s->value = value;
    return s;
}

static int block_depth(const KilnBlock *b)
{
    int d = 0;
    for (int i = 0; b && i < b->nstmts; i++)
        if (b->stmts[i]->depth > d)
            d = b->stmts[i]->depth;
    return d;
}

/* Evaluates a tune value or preset value: an integer constant expression without names. */
static bool tune_const(KilnParseState *ps, KilnExpr *e, int64_t *out)
{
    const char *err;
    KilnSpan sp;
    if (!e)
        return false;
    if (!kiln_tune_eval(&ps->c->ar, e, NULL, 0, out, &err, &sp)) {
        kiln_diag_error(ps->c, sp, "%s", err);
        return false;
    }
    return true;
}

/* A `preset NAME [for DEVICE] [where COND] { items }` tune item (kw: the word that should be
 * "preset"), or NULL after a diagnostic. COND's names are checked with the block (sema). */
static TuneItem *tune_preset(KilnParseState *ps, const char *kw, KilnSpan kw_span, const char *name,
                             KilnSpan name_span, const char *device, KilnSpan device_span,
                             KilnExpr *cond, KilnPtrVec items)
{
    if (strcmp(kw, "preset") != 0) {
        kiln_diag_error(ps->c, kw_span,
                        "expected 'key', 'where', 'preset' or 'NAME in [...]' in tune block, got '%s'", kw);
        return NULL;
    }
    if (device && strcmp(device, "cpu") != 0 && strcmp(device, "emu") != 0 &&
        strcmp(device, "cuda") != 0) {
        kiln_diag_error(ps->c, device_span,
                        "preset '%s' is for device '%s': the devices are cpu, emu and cuda", name,
                        device);
        return NULL;
    }
    TuneItem *t = kiln_arena_alloc(&ps->c->ar, sizeof *t);
    t->kind = TUNE_ITEM_PRESET;
    t->preset.name = name;
    t->preset.span = name_span;
    t->preset.device = device;
    t->preset.device_span = device_span;
    t->preset.cond = cond;
    t->preset.assigns = kiln_arena_alloc(&ps->c->ar, sizeof(KilnTuneAssign) * (size_t)(items.n + 1));
    for (int i = 0; i < items.n; i++) {
        TuneItem *a = items.items[i];
        t->preset.assigns[t->preset.nassigns++] =
            (KilnTuneAssign){a->param.name, a->param.span, a->param.nvalues ? a->param.values[0] : 0};
    }
    return t;
}
}

%union {
    int64_t ival;
    double fval;
    const char *str;
    KilnScalarKind scalar;
    KilnExpr *expr;
    KilnStmt *stmt;
    KilnBlock *block;
    KilnType *type;
    KilnDecl *decl;
    KilnPtrVec vec;
    KilnIndexKind idx;
    TuneItem *titem;
    int binop; /* KilnBinOp of a compound assignment */
    FuncParamItem *fparam;
}

%token <ival> INT "integer literal"
%token <fval> FLOAT "float literal"
%token <str> IDENT "identifier"
%token <str> STRING "string literal"
%token <scalar> SCALAR "type name"
%token KERNEL "'kernel'" TUNE "'tune'" CONST "'const'" LET "'let'" VAR "'var'"
%token FOR "'for'" IN "'in'" RANGE "'range'" IF "'if'" ELSE "'else'" RETURN "'return'"
%token WHILE "'while'" BREAK "'break'" CONTINUE "'continue'" POW "'**'" DEF "'def'"
%token AS "'as'" TRUE "'true'" FALSE "'false'" NONE "'None'" WHERE "'where'"
%token <binop> OPASSIGN "compound assignment"
%token OROR "'||'" ANDAND "'&&'" EQ "'=='" NE "'!='" LE "'<='" GE "'>='" SHL "'<<'" SHR "'>>'"

%left OROR
%left ANDAND
%left '|'
%left '^'
%left '&'
%left EQ NE
%left '<' LE '>' GE
%left SHL SHR
%left '+' '-'
%left '*' '/' '%'
%precedence AS
%precedence UNARY
%right POW
%precedence '['

%type <expr> expr primary arg
%type <vec> fparams fparam_list
%type <fparam> fparam
%type <vec> expr_list args params param_list stmts index_list name_list preset_items tune_items
%type <vec> value_list
%type <decl> param
%type <type> type
%type <stmt> stmt if_stmt
%type <block> block
%type <idx> index
%type <titem> tune_item preset_item

%%

program
    : %empty
    | program item
    ;

item
    : kernel
    | func
    | tune
    | error '}'         { yyerrok; }
    ;

/* kernel = "kernel" IDENT "(" [param {"," param} [","]] ")" block */
kernel
    : KERNEL IDENT '(' param_list ')' block
        {
            KilnKernel *k = kiln_arena_alloc(&ps->c->ar, sizeof *k);
            k->name = $2;
            k->span = SPAN(@2);
            k->params = (KilnDecl **)$4.items;
            k->nparams = $4.n;
            k->body = $6;
            k->num_warps = 4;
            k->num_stages = 2;
            kiln_exits_lower(ps, k);
            kiln_vec_push(&ps->c->ar, &ps->c->kernels, k);
        }
    ;

/* func = "def" IDENT "(" [fparam {"," fparam} [","]] ")" block
 * fparam = IDENT [":" type] ["=" expr] */
func
    : DEF IDENT '(' fparam_list ')' block
        {
            KilnFunc *f = kiln_arena_alloc(&ps->c->ar, sizeof *f);
            f->name = $2;
            f->span = SPAN(@2);
            f->nparams = $4.n;
            f->params = kiln_arena_alloc(&ps->c->ar, sizeof *f->params * (size_t)($4.n + 1));
            for (int i = 0; i < $4.n; i++) {
                f->params[i] = ((FuncParamItem *)$4.items[i])->p;
                for (int j = 0; j < i; j++)
                    if (strcmp(f->params[j].name, f->params[i].name) == 0)
                        kiln_diag_error(ps->c, f->params[i].span, "parameter '%s' is declared twice",
                                        f->params[i].name);
                if (i > 0 && f->params[i - 1].def && !f->params[i].def)
                    kiln_diag_error(ps->c, f->params[i].span,
                                    "parameter '%s' without a default follows one with a default",
                                    f->params[i].name);
            }
            f->body = $6;
            kiln_exits_lower_func(ps, f);
            kiln_vec_push(&ps->c->ar, &ps->c->funcs, f);
        }
    ;

fparam_list
    : %empty            { $$ = (KilnPtrVec){0}; }
    | fparams           { $$ = $1; }
    | fparams ','       { $$ = $1; }
    ;

fparams
    : fparam            { $$ = (KilnPtrVec){0}; kiln_vec_push(&ps->c->ar, &$$, $1); }
    | fparams ',' fparam { $$ = $1; kiln_vec_push(&ps->c->ar, &$$, $3); }
    ;

fparam
    : IDENT
        {
            FuncParamItem *it = kiln_arena_alloc(&ps->c->ar, sizeof *it);
            it->p.name = $1;
            it->p.span = SPAN(@1);
            $$ = it;
        }
    | IDENT ':' type
        {
            FuncParamItem *it = kiln_arena_alloc(&ps->c->ar, sizeof *it);
            it->p.name = $1;
            it->p.span = SPAN(@1);
            it->p.has_annot = true;
            it->p.annot = *$3;
            $$ = it;
        }
    | IDENT '=' expr
        {
            FuncParamItem *it = kiln_arena_alloc(&ps->c->ar, sizeof *it);
            it->p.name = $1;
            it->p.span = SPAN(@1);
            it->p.def = $3;
            $$ = it;
        }
    | IDENT ':' type '=' expr
        {
            FuncParamItem *it = kiln_arena_alloc(&ps->c->ar, sizeof *it);
            it->p.name = $1;
            it->p.span = SPAN(@1);
            it->p.has_annot = true;
            it->p.annot = *$3;
            it->p.def = $5;
            $$ = it;
        }
    ;

param_list
    : %empty            { $$ = (KilnPtrVec){0}; }
    | params            { $$ = $1; }
    | params ','        { $$ = $1; }
    ;

params
    : param             { $$ = (KilnPtrVec){0}; kiln_vec_push(&ps->c->ar, &$$, $1); }
    | params ',' param  { $$ = $1; kiln_vec_push(&ps->c->ar, &$$, $3); }
    ;

/* param = ["const"] IDENT ":" type */
param
    : IDENT ':' type
        {
            $$ = new_decl(ps, KILN_DECL_PARAM, $1, SPAN(@1));
            $$->has_annot = true;
            $$->annot = *$3;
        }
    | CONST IDENT ':' type
        {
            $$ = new_decl(ps, KILN_DECL_CONST_PARAM, $2, SPAN(@2));
            $$->has_annot = true;
            $$->annot = *$4;
        }
    ;

/* type = scalar | "*" scalar | IDENT | "*" IDENT   (IDENT: a type parameter, or `type` itself in
   `const T: type`; sema resolves it) */
type
    : SCALAR            { $$ = kiln_ast_type(ps, KILN_TYPE_SCALAR, $1); }
    | '*' SCALAR        { $$ = kiln_ast_type(ps, KILN_TYPE_PTR, $2); }
    | IDENT             { $$ = kiln_ast_type(ps, KILN_TYPE_SCALAR, KILN_SCALAR_F32); $$->param = $1; }
    | '*' IDENT         { $$ = kiln_ast_type(ps, KILN_TYPE_PTR, KILN_SCALAR_F32); $$->param = $2; }
    ;

block
    : '{' stmts '}'     { $$ = kiln_ast_block(ps, &$2, SPAN(@$)); }
    ;

stmts
    : %empty            { $$ = (KilnPtrVec){0}; }
    | stmts stmt        { $$ = $1; if ($2) kiln_vec_push(&ps->c->ar, &$$, $2); }
    ;

stmt
    : LET IDENT '=' expr ';'
        {
            $$ = kiln_ast_stmt(ps, KILN_STMT_LET, SPAN(@$));
            $$->decl = new_decl(ps, KILN_DECL_LET, $2, SPAN(@2));
            $$->init = $4;
        }
    | LET IDENT ':' type '=' expr ';'
        {
            $$ = kiln_ast_stmt(ps, KILN_STMT_LET, SPAN(@$));
            $$->decl = new_decl(ps, KILN_DECL_LET, $2, SPAN(@2));
            $$->decl->has_annot = true;
            $$->decl->annot = *$4;
            $$->init = $6;
        }
    | VAR IDENT '=' expr ';'
        {
            $$ = kiln_ast_stmt(ps, KILN_STMT_VAR, SPAN(@$));
            $$->decl = new_decl(ps, KILN_DECL_VAR, $2, SPAN(@2));
            $$->init = $4;
        }
    | VAR IDENT ':' type '=' expr ';'
        {
            $$ = kiln_ast_stmt(ps, KILN_STMT_VAR, SPAN(@$));
            $$->decl = new_decl(ps, KILN_DECL_VAR, $2, SPAN(@2));
            $$->decl->has_annot = true;
            $$->decl->annot = *$4;
            $$->init = $6;
        }
    | IDENT '=' expr ';'
        {
            $$ = kiln_ast_stmt(ps, KILN_STMT_ASSIGN, SPAN(@$));
            $$->name_span = SPAN(@1);
            $$->value = $3;
            /* the target's name waits in a NAME node until sema resolves it */
            $$->init = kiln_ast_expr(ps, KILN_EXPR_NAME, SPAN(@1));
            $$->init->name = $1;
        }
    | LET IDENT ',' name_list '=' expr ';'
        { $$ = unpack_stmt(ps, KILN_DECL_LET, false, $2, SPAN(@2), &$4, $6, SPAN(@$)); }
    | VAR IDENT ',' name_list '=' expr ';'
        { $$ = unpack_stmt(ps, KILN_DECL_VAR, false, $2, SPAN(@2), &$4, $6, SPAN(@$)); }
    | IDENT ',' name_list '=' expr ';'
        { $$ = unpack_stmt(ps, KILN_DECL_VAR, true, $1, SPAN(@1), &$3, $5, SPAN(@$)); }
    | IDENT OPASSIGN expr ';'
        {
            /* x op= e is x = x op e: the same checks and code as the assignment written out */
            $$ = kiln_ast_stmt(ps, KILN_STMT_ASSIGN, SPAN(@$));
            $$->name_span = SPAN(@1);
            KilnExpr *cur = kiln_ast_expr(ps, KILN_EXPR_NAME, SPAN(@1));
            cur->name = $1;
            $$->value = kiln_ast_binary(ps, (KilnBinOp)$2, cur, $3);
            $$->init = kiln_ast_expr(ps, KILN_EXPR_NAME, SPAN(@1));
            $$->init->name = $1;
        }
    | expr ';'
        {
            $$ = kiln_ast_stmt(ps, KILN_STMT_EXPR, SPAN(@$));
            $$->value = $1;
        }
    | FOR IDENT IN RANGE '(' args ')' block
        {
            $$ = kiln_ast_stmt(ps, KILN_STMT_FOR, SPAN(@$));
            $$->decl = new_decl(ps, KILN_DECL_LOOP_VAR, $2, SPAN(@2));
            for (int i = 0; i < $6.n; i++)
                if (((KilnExpr *)$6.items[i])->kw)
                    kiln_diag_error(ps->c, ((KilnExpr *)$6.items[i])->kw_span,
                                    "range() takes no keyword arguments");
            if ($6.n < 2 || $6.n > 3) {
                kiln_diag_error(ps->c, SPAN(@4), "range() takes 2 or 3 arguments, got %d", $6.n);
            } else {
                $$->lo = $6.items[0];
                $$->hi = $6.items[1];
                $$->step = $6.n == 3 ? $6.items[2] : NULL;
            }
            $$->body = $8;
            $$->depth = 1 + block_depth($8);
            kiln_ast_check_depth(ps, $$->depth, SPAN(@1));
        }
    | FOR IDENT IN IDENT '(' args ')' block
        {
            /* static_range: unrolled by sema; any other name is not a loop */
            $$ = kiln_ast_stmt(ps, KILN_STMT_FOR, SPAN(@$));
            $$->unroll = true;
            if (strcmp($4, "static_range") != 0)
                kiln_diag_error(ps->c, SPAN(@4),
                                "a for loop takes range(...) or static_range(...), not '%s'", $4);
            $$->decl = new_decl(ps, KILN_DECL_LOOP_VAR, $2, SPAN(@2));
            for (int i = 0; i < $6.n; i++)
                if (((KilnExpr *)$6.items[i])->kw)
                    kiln_diag_error(ps->c, ((KilnExpr *)$6.items[i])->kw_span,
                                    "static_range() takes no keyword arguments");
            if ($6.n < 2 || $6.n > 3) {
                kiln_diag_error(ps->c, SPAN(@4), "static_range() takes 2 or 3 arguments, got %d", $6.n);
            } else {
                $$->lo = $6.items[0];
                $$->hi = $6.items[1];
                $$->step = $6.n == 3 ? $6.items[2] : NULL;
            }
            $$->body = $8;
            $$->depth = 1 + block_depth($8);
            kiln_ast_check_depth(ps, $$->depth, SPAN(@1));
        }
    | if_stmt           { $$ = $1; }
    | RETURN ';'        { $$ = kiln_ast_stmt(ps, KILN_STMT_RETURN, SPAN(@$)); }
    | RETURN expr ';'
        {
            $$ = kiln_ast_stmt(ps, KILN_STMT_RETURN, SPAN(@$));
            $$->value = $2;
        }
    | RETURN expr ',' value_list ';'
        {
            /* several values: a LIST marked `tuple`, which only unpacking takes (sema) */
            $$ = kiln_ast_stmt(ps, KILN_STMT_RETURN, SPAN(@$));
            KilnExpr *t = kiln_ast_expr(ps, KILN_EXPR_LIST, kiln_span_join(SPAN(@2), SPAN(@4)));
            t->tuple = true;
            t->nargs = $4.n + 1;
            t->args = kiln_arena_alloc(&ps->c->ar, sizeof *t->args * (size_t)t->nargs);
            t->args[0] = $2;
            for (int i = 0; i < $4.n; i++)
                t->args[i + 1] = $4.items[i];
            for (int i = 0; i < t->nargs; i++)
                if (t->args[i]->depth + 1 > t->depth)
                    t->depth = t->args[i]->depth + 1;
            $$->value = t;
        }
    | BREAK ';'         { $$ = kiln_ast_stmt(ps, KILN_STMT_BREAK, SPAN(@$)); }
    | CONTINUE ';'      { $$ = kiln_ast_stmt(ps, KILN_STMT_CONTINUE, SPAN(@$)); }
    | WHILE expr block
        {
            /* a counting loop that ends through its break flag (exits.c) */
            $$ = kiln_exits_while(ps, $2, $3, SPAN(@$));
            $$->depth = 2 + block_depth($3);
            kiln_ast_check_depth(ps, $$->depth, SPAN(@1));
        }
    | error ';'         { $$ = NULL; yyerrok; }
    ;

/* if = "if" expr block ["else" (block | if)] */
if_stmt
    : IF expr block
        {
            $$ = kiln_ast_stmt(ps, KILN_STMT_IF, SPAN(@$));
            $$->cond = $2;
            $$->body = $3;
            $$->depth = 1 + block_depth($3);
            kiln_ast_check_depth(ps, $$->depth, SPAN(@1));
        }
    | IF expr block ELSE block
        {
            $$ = kiln_ast_stmt(ps, KILN_STMT_IF, SPAN(@$));
            $$->cond = $2;
            $$->body = $3;
            $$->else_body = $5;
            int d1 = block_depth($3), d2 = block_depth($5);
            $$->depth = 1 + (d1 > d2 ? d1 : d2);
            kiln_ast_check_depth(ps, $$->depth, SPAN(@1));
        }
    | IF expr block ELSE if_stmt
        {
            $$ = kiln_ast_stmt(ps, KILN_STMT_IF, SPAN(@$));
            $$->cond = $2;
            $$->body = $3;
            KilnPtrVec one = {0};
            kiln_vec_push(&ps->c->ar, &one, $5);
            $$->else_body = kiln_ast_block(ps, &one, SPAN(@5));
            int d1 = block_depth($3), d2 = $5->depth;
            $$->depth = 1 + (d1 > d2 ? d1 : d2);
            kiln_ast_check_depth(ps, $$->depth, SPAN(@1));
        }
    ;

expr
    : expr OROR expr    { $$ = kiln_ast_binary(ps, KILN_BIN_OR, $1, $3); }
    | expr ANDAND expr  { $$ = kiln_ast_binary(ps, KILN_BIN_AND, $1, $3); }
    | expr '|' expr     { $$ = kiln_ast_binary(ps, KILN_BIN_BITOR, $1, $3); }
    | expr '^' expr     { $$ = kiln_ast_binary(ps, KILN_BIN_BITXOR, $1, $3); }
    | expr '&' expr     { $$ = kiln_ast_binary(ps, KILN_BIN_BITAND, $1, $3); }
    | expr EQ expr      { $$ = kiln_ast_binary(ps, KILN_BIN_EQ, $1, $3); }
    | expr NE expr      { $$ = kiln_ast_binary(ps, KILN_BIN_NE, $1, $3); }
    | expr '<' expr     { $$ = kiln_ast_binary(ps, KILN_BIN_LT, $1, $3); }
    | expr LE expr      { $$ = kiln_ast_binary(ps, KILN_BIN_LE, $1, $3); }
    | expr '>' expr     { $$ = kiln_ast_binary(ps, KILN_BIN_GT, $1, $3); }
    | expr GE expr      { $$ = kiln_ast_binary(ps, KILN_BIN_GE, $1, $3); }
    | expr SHL expr     { $$ = kiln_ast_binary(ps, KILN_BIN_SHL, $1, $3); }
    | expr SHR expr     { $$ = kiln_ast_binary(ps, KILN_BIN_SHR, $1, $3); }
    | expr '+' expr     { $$ = kiln_ast_binary(ps, KILN_BIN_ADD, $1, $3); }
    | expr '-' expr     { $$ = kiln_ast_binary(ps, KILN_BIN_SUB, $1, $3); }
    | expr '*' expr     { $$ = kiln_ast_binary(ps, KILN_BIN_MUL, $1, $3); }
    | expr '/' expr     { $$ = kiln_ast_binary(ps, KILN_BIN_DIV, $1, $3); }
    | expr '%' expr     { $$ = kiln_ast_binary(ps, KILN_BIN_MOD, $1, $3); }
    | expr POW expr     { $$ = kiln_ast_binary(ps, KILN_BIN_POW, $1, $3); }
    | expr AS type
        {
            $$ = kiln_ast_expr(ps, KILN_EXPR_CAST, SPAN(@$));
            $$->lhs = $1;
            $$->cast_to = $3;
            $$->depth = $1->depth + 1;
            kiln_ast_check_depth(ps, $$->depth, SPAN(@$));
        }
    | '-' expr %prec UNARY  { $$ = kiln_ast_unary(ps, KILN_UN_NEG, $2, SPAN(@$)); }
    | '!' expr %prec UNARY  { $$ = kiln_ast_unary(ps, KILN_UN_NOT, $2, SPAN(@$)); }
    | '~' expr %prec UNARY  { $$ = kiln_ast_unary(ps, KILN_UN_BITNOT, $2, SPAN(@$)); }
    | expr '[' index_list ']'
        {
            $$ = kiln_ast_expr(ps, KILN_EXPR_INDEX, SPAN(@$));
            $$->lhs = $1;
            $$->nindex = $3.n;
            $$->index = kiln_arena_alloc(&ps->c->ar, sizeof(KilnIndexKind) * (size_t)($3.n + 1));
            for (int i = 0; i < $3.n; i++)
                $$->index[i] = (KilnIndexKind)(intptr_t)$3.items[i];
            $$->depth = $1->depth + 1;
            kiln_ast_check_depth(ps, $$->depth, SPAN(@$));
        }
    | primary           { $$ = $1; }
    ;

value_list
    : expr              { $$ = (KilnPtrVec){0}; kiln_vec_push(&ps->c->ar, &$$, $1); }
    | value_list ',' expr { $$ = $1; kiln_vec_push(&ps->c->ar, &$$, $3); }
    ;

index_list
    : index             { $$ = (KilnPtrVec){0}; kiln_vec_push(&ps->c->ar, &$$, (void *)(intptr_t)$1); }
    | index_list ',' index { $$ = $1; kiln_vec_push(&ps->c->ar, &$$, (void *)(intptr_t)$3); }
    ;

index
    : ':'               { $$ = KILN_INDEX_SLICE; }
    | NONE              { $$ = KILN_INDEX_NONE; }
    ;

primary
    : INT               { $$ = kiln_ast_expr(ps, KILN_EXPR_INT, SPAN(@$)); $$->ival = $1; }
    | FLOAT             { $$ = kiln_ast_expr(ps, KILN_EXPR_FLOAT, SPAN(@$)); $$->fval = $1; }
    | TRUE              { $$ = kiln_ast_expr(ps, KILN_EXPR_BOOL, SPAN(@$)); $$->ival = 1; }
    | FALSE             { $$ = kiln_ast_expr(ps, KILN_EXPR_BOOL, SPAN(@$)); $$->ival = 0; }
    | IDENT             { $$ = kiln_ast_expr(ps, KILN_EXPR_NAME, SPAN(@$)); $$->name = $1; }
    | STRING            { $$ = kiln_ast_expr(ps, KILN_EXPR_STRING, SPAN(@$)); $$->name = $1; }
    | SCALAR
        {
            $$ = kiln_ast_expr(ps, KILN_EXPR_TYPE, SPAN(@$));
            $$->cast_to = kiln_ast_type(ps, KILN_TYPE_DTYPE, $1);
        }
    | IDENT '(' args ')'  { $$ = kiln_ast_call(ps, $1, SPAN(@1), &$3, SPAN(@$)); }
    | WHERE '(' args ')'  { $$ = kiln_ast_call(ps, "where", SPAN(@1), &$3, SPAN(@$)); }
    | '(' expr ')'
        {
            $$ = $2;
            /* the span grows to the parentheses so carets cover what was written */
            $$->span = SPAN(@$);
        }
    | '[' args ']'
        {
            $$ = kiln_ast_expr(ps, KILN_EXPR_LIST, SPAN(@$));
            $$->args = (KilnExpr **)$2.items;
            $$->nargs = $2.n;
            for (int i = 0; i < $2.n; i++)
                if ($$->args[i]->depth + 1 > $$->depth)
                    $$->depth = $$->args[i]->depth + 1;
            kiln_ast_check_depth(ps, $$->depth, SPAN(@$));
        }
    ;

args
    : %empty            { $$ = (KilnPtrVec){0}; }
    | expr_list         { $$ = $1; }
    | expr_list ','     { $$ = $1; }
    ;

expr_list
    : arg               { $$ = (KilnPtrVec){0}; kiln_vec_push(&ps->c->ar, &$$, $1); }
    | expr_list ',' arg { $$ = $1; kiln_vec_push(&ps->c->ar, &$$, $3); }
    ;

/* arg = [IDENT "="] expr: a keyword argument names the parameter it binds (sema checks that
 * the callee takes one by that name) */
arg
    : expr              { $$ = $1; }
    | IDENT '=' expr
        {
            $$ = $3;
            $$->kw = $1;
            $$->kw_span = SPAN(@1);
        }
    ;

/* tune = "tune" IDENT "{" {tune_item} "}" */
tune
    : TUNE IDENT '{' tune_items '}'
        {
            KilnTune *t = kiln_arena_alloc(&ps->c->ar, sizeof *t);
            KilnArena *ar = &ps->c->ar;
            t->kernel_name = $2;
            t->span = SPAN(@2);
            int nkeys = 0, nparams = 0, nwheres = 0, npresets = 0;
            for (int i = 0; i < $4.n; i++) {
                TuneItem *it = $4.items[i];
                nkeys += it->kind == TUNE_ITEM_KEY ? it->names.n : 0;
                nparams += it->kind == TUNE_ITEM_PARAM;
                nwheres += it->kind == TUNE_ITEM_WHERE;
                npresets += it->kind == TUNE_ITEM_PRESET;
            }
            t->keys = kiln_arena_alloc(ar, sizeof(char *) * (size_t)(nkeys + 1));
            t->key_spans = kiln_arena_alloc(ar, sizeof(KilnSpan) * (size_t)(nkeys + 1));
            t->params = kiln_arena_alloc(ar, sizeof(KilnTuneParam) * (size_t)(nparams + 1));
            t->wheres = kiln_arena_alloc(ar, sizeof(KilnExpr *) * (size_t)(nwheres + 1));
            t->presets = kiln_arena_alloc(ar, sizeof(KilnTunePreset) * (size_t)(npresets + 1));
            for (int i = 0; i < $4.n; i++) {
                TuneItem *it = $4.items[i];
                switch (it->kind) {
                case TUNE_ITEM_KEY:
                    for (int j = 0; j < it->names.n; j++) {
                        KilnExpr *n = it->names.items[j];
                        t->keys[t->nkeys] = n->name;
                        t->key_spans[t->nkeys++] = n->span;
                    }
                    break;
                case TUNE_ITEM_PARAM: t->params[t->nparams++] = it->param; break;
                case TUNE_ITEM_WHERE: t->wheres[t->nwheres++] = it->where; break;
                case TUNE_ITEM_PRESET: t->presets[t->npresets++] = it->preset; break;
                }
            }
            kiln_vec_push(ar, &ps->c->tunes, t);
        }
    ;

tune_items
    : %empty            { $$ = (KilnPtrVec){0}; }
    | tune_items tune_item { $$ = $1; if ($2) kiln_vec_push(&ps->c->ar, &$$, $2); }
    ;

/* tune_item = IDENT "in" "[" values "]" ";" | "key" names ";" | "where" expr ";"
 *           | "preset" IDENT ["for" IDENT] ["where" expr] "{" {IDENT "=" value ";"} "}"
 * `key` and `preset` are not reserved words: they only mean something here. */
tune_item
    : IDENT IN '[' args ']' ';'
        {
            $$ = kiln_arena_alloc(&ps->c->ar, sizeof *$$);
            $$->kind = TUNE_ITEM_PARAM;
            $$->param.name = $1;
            $$->param.span = SPAN(@1);
            $$->param.values = kiln_arena_alloc(&ps->c->ar, sizeof(int64_t) * (size_t)($4.n + 1));
            for (int i = 0; i < $4.n; i++) {
                int64_t v;
                if (tune_const(ps, $4.items[i], &v))
                    $$->param.values[$$->param.nvalues++] = v;
            }
            if ($4.n == 0)
                kiln_diag_error(ps->c, SPAN(@3), "'%s' needs at least one value", $1);
        }
    | IDENT name_list ';'
        {
            $$ = NULL;
            if (strcmp($1, "key") != 0) {
                kiln_diag_error(ps->c, SPAN(@1),
                                "expected 'key', 'where', 'preset' or 'NAME in [...]' in tune block, got '%s'", $1);
            } else {
                $$ = kiln_arena_alloc(&ps->c->ar, sizeof *$$);
                $$->kind = TUNE_ITEM_KEY;
                $$->names = $2;
            }
        }
    | WHERE expr ';'
        {
            $$ = kiln_arena_alloc(&ps->c->ar, sizeof *$$);
            $$->kind = TUNE_ITEM_WHERE;
            $$->where = $2;
        }
    | IDENT IDENT '{' preset_items '}'
        {
            $$ = tune_preset(ps, $1, SPAN(@1), $2, SPAN(@2), NULL, SPAN(@2), NULL, $4);
        }
    | IDENT IDENT FOR IDENT '{' preset_items '}'
        {
            $$ = tune_preset(ps, $1, SPAN(@1), $2, SPAN(@2), $4, SPAN(@4), NULL, $6);
        }
    | IDENT IDENT WHERE expr '{' preset_items '}'
        {
            $$ = tune_preset(ps, $1, SPAN(@1), $2, SPAN(@2), NULL, SPAN(@2), $4, $6);
        }
    | IDENT IDENT FOR IDENT WHERE expr '{' preset_items '}'
        {
            $$ = tune_preset(ps, $1, SPAN(@1), $2, SPAN(@2), $4, SPAN(@4), $6, $8);
        }
    | error ';'         { $$ = NULL; yyerrok; }
    ;

name_list
    : IDENT
        {
            $$ = (KilnPtrVec){0};
            KilnExpr *n = kiln_ast_expr(ps, KILN_EXPR_NAME, SPAN(@1));
            n->name = $1;
            kiln_vec_push(&ps->c->ar, &$$, n);
        }
    | name_list ',' IDENT
        {
            $$ = $1;
            KilnExpr *n = kiln_ast_expr(ps, KILN_EXPR_NAME, SPAN(@3));
            n->name = $3;
            kiln_vec_push(&ps->c->ar, &$$, n);
        }
    ;

preset_items
    : %empty            { $$ = (KilnPtrVec){0}; }
    | preset_items preset_item { $$ = $1; if ($2) kiln_vec_push(&ps->c->ar, &$$, $2); }
    ;

preset_item
    : IDENT '=' expr ';'
        {
            $$ = NULL;
            int64_t v;
            if (tune_const(ps, $3, &v)) {
                $$ = kiln_arena_alloc(&ps->c->ar, sizeof *$$);
                $$->param.name = $1;
                $$->param.span = SPAN(@1);
                $$->param.values = kiln_arena_alloc(&ps->c->ar, sizeof(int64_t));
                $$->param.values[0] = v;
                $$->param.nvalues = 1;
            }
        }
    | error ';'         { $$ = NULL; yyerrok; }
    ;

%%

bool kiln_parse_run(KilnCompilation *c)
{
    KilnParseState ps = {.c = c, .line = 1, .col = 1};
    void *scanner = NULL;
    if (kiln_yylex_init_extra(&ps, &scanner) != 0)
        return false;
    ps.scanner = scanner;
    void *buf = kiln_yy_scan_bytes(c->text, (int)c->len, scanner);
    int rc = buf ? kiln_yyparse(&ps) : 2;
    kiln_yylex_destroy(scanner);
    return rc == 0;
}
