/* test_frontend: unit tests of the frontend on good programs: the sketch kernels parse and
 * type-check under bindings, resolved types/shapes/constants are what the rules say (reduction
 * result types included), tune blocks enumerate and prune, re-checking per configuration reuses
 * memory, the renderer shows the line and a caret, bad input never crashes, and the language
 * reference lists every builtin; functions are checked per call under each binding.
 *   test_frontend SOURCE_DIR */
#include "../common/check.h"
#include "kiln_frontend.h"

#include <stdlib.h>
#include <string.h>

static const char *src_dir;

static char *slurp(const char *rel, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", src_dir, rel);
  char *buf = kiln_file_read(path, len);
  if (!buf) {
    printf("cannot open %s\n", path);
    exit(1);
  }
  return buf;
}

static KilnCompilation *open_file(const char *rel) {
  size_t len;
  char *text = slurp(rel, &len);
  KilnCompilation *c = kiln_frontend_create(rel, text, len);
  free(text);
  return c;
}

static const char *ty(const KilnType *t) {
  static char buf[8][128];
  static int i;
  i = (i + 1) % 8;
  return kiln_type_str(t, buf[i], sizeof buf[i]);
}

static KilnStmt *stmt_named(KilnBlock *b, const char *name) {
  for (int i = 0; i < b->nstmts; i++) {
    KilnStmt *s = b->stmts[i];
    if ((s->kind == KILN_STMT_LET || s->kind == KILN_STMT_VAR) && strcmp(s->decl->name, name) == 0)
      return s;
  }
  return NULL;
}

static const char *decl_type(KilnBlock *b, const char *name) {
  KilnStmt *s = stmt_named(b, name);
  return s ? ty(s->decl->type) : "<none>";
}

static void dump_diags(KilnCompilation *c) {
  if (kiln_diag_count(c)) kiln_diag_render(c, stdout);
}

static void test_sketch(void) {
  KilnCompilation *c = open_file("tests/frontend/kernels/sketch.kiln");
  CHECK(kiln_frontend_parse(c));
  CHECK(kiln_kernel_count(c) == 2);
  CHECK(kiln_tune_count(c) == 2);

  KilnBinding b1[] = {{"BLOCK", 1024}, {"num_warps", 8}};
  KilnKernel *k;
  CHECK(kiln_sema_check_kernel(c, "bias_gelu_fwd", b1, 2, &k));
  dump_diags(c);
  CHECK(k && k->num_warps == 8 && k->num_stages == 2);
  CHECK(k->min_blocks == 0 && k->wgmma == 0); /* not bound: their defaults */
  /* the meta names set the kernel's fields; a later sema call starts from the defaults again */
  KilnBinding bm[] = {{"BLOCK", 1024}, {"min_blocks", 2}, {"wgmma", 1}, {"num_stages", 3}};
  CHECK(kiln_sema_check_kernel(c, "bias_gelu_fwd", bm, 4, &k));
  CHECK(k && k->wgmma == 1 && k->min_blocks == 2 && k->num_stages == 3 && k->num_warps == 4);
  KilnBinding b0[] = {{"BLOCK", 1024}, {"wgmma", 0}};
  CHECK(kiln_sema_check_kernel(c, "bias_gelu_fwd", b0, 2, &k));
  CHECK(k && k->wgmma == 0 && k->min_blocks == 0 && k->num_stages == 2);
  CHECK(kiln_meta_param_is("wgmma") && kiln_meta_param_is("min_blocks") &&
        !kiln_meta_param_is("BLOCK") && !kiln_meta_param_is(NULL));
  CHECK(kiln_meta_param_min("wgmma") == 0 && kiln_meta_param_max("wgmma") == 1);
  CHECK(kiln_meta_param_min("min_blocks") == 1 && kiln_meta_param_max("min_blocks") == 32);
  CHECK(kiln_sema_check_kernel(c, "bias_gelu_fwd", b1, 2, &k));
  CHECK(strcmp(decl_type(k->body, "offs"), "tile<1024xi32>") == 0);
  CHECK(strcmp(decl_type(k->body, "mask"), "tile<1024xi1>") == 0);
  CHECK(strcmp(decl_type(k->body, "v"), "tile<1024xf32>") == 0);
  CHECK(strcmp(decl_type(k->body, "g"), "tile<1024xf32>") == 0);
  /* 0.5 (weak) adopts f32: the literal node itself is retyped */
  KilnExpr *g = stmt_named(k->body, "g")->init;
  CHECK(g->kind == KILN_EXPR_BINARY && g->lhs->kind == KILN_EXPR_BINARY);
  CHECK(strcmp(ty(g->lhs->lhs->type), "f32") == 0);
  /* params: const BLOCK is bound, non-const ones are numbered */
  CHECK(k->nparams == 6 && k->params[5]->kind == KILN_DECL_CONST_PARAM &&
        k->params[5]->value == 1024);
  CHECK(k->params[4]->kind == KILN_DECL_PARAM && k->params[4]->index == 4);

  KilnBinding b2[] = {{"BM", 128}, {"BN", 64}, {"BK", 32}};
  CHECK(kiln_sema_check_kernel(c, "matmul", b2, 3, &k));
  dump_diags(c);
  CHECK(strcmp(decl_type(k->body, "acc"), "tile<128x64xf32>") == 0);
  CHECK(strcmp(decl_type(k->body, "rm"), "tile<128xi32>") == 0);
  KilnStmt *loop = NULL;
  for (int i = 0; i < k->body->nstmts; i++)
    if (k->body->stmts[i]->kind == KILN_STMT_FOR) loop = k->body->stmts[i];
  CHECK(loop && loop->ncarried == 1 && strcmp(loop->carried[0]->name, "acc") == 0);
  CHECK(loop && strcmp(decl_type(loop->body, "ta"), "tile<128x32xf16>") == 0);
  CHECK(loop && strcmp(decl_type(loop->body, "tb"), "tile<32x64xf16>") == 0);
  /* rm[:, None] < M && ... : broadcast i1 mask of the load */
  KilnExpr *ld = stmt_named(loop->body, "ta")->init;
  CHECK(strcmp(ty(ld->args[1]->type), "tile<128x32xi1>") == 0);
  CHECK(strcmp(ty(ld->args[0]->operand_type), "tile<128x32xi32>") == 0);

  /* the same kernel under another configuration */
  KilnBinding b3[] = {{"BM", 64}, {"BN", 256}, {"BK", 64}};
  CHECK(kiln_sema_check_kernel(c, "matmul", b3, 3, &k));
  CHECK(strcmp(decl_type(k->body, "acc"), "tile<64x256xf32>") == 0);

  /* tune: 3*3*2*2*4 points, `where` prunes BM=256,BN=256,BK=64 */
  KilnTune *t = kiln_kernel_find(c, "matmul")->tune;
  CHECK(t && t->nkeys == 3 && t->nwheres == 1);
  CHECK(kiln_tune_config_count(t) == 3 * 3 * 2 * 2 * 4);
  size_t ok = 0;
  for (size_t i = 0; i < kiln_tune_config_count(t); i++) {
    KilnTuneConfig cfg;
    CHECK(kiln_tune_config_get(t, i, &cfg));
    int64_t bm = 0, bn = 0, bk = 0;
    for (int j = 0; j < cfg.nbindings; j++) {
      if (!strcmp(cfg.bindings[j].name, "BM")) bm = cfg.bindings[j].value;
      if (!strcmp(cfg.bindings[j].name, "BN")) bn = cfg.bindings[j].value;
      if (!strcmp(cfg.bindings[j].name, "BK")) bk = cfg.bindings[j].value;
    }
    bool want = bm * bk + bk * bn <= 32768;
    CHECK(kiln_tune_where_ok(c, t, &cfg) == want);
    ok += want;
  }
  CHECK(ok == kiln_tune_config_count(t)); /* the sketch's where never prunes its space */
  KilnTuneConfig first;
  CHECK(kiln_tune_config_get(t, 0, &first) && first.num_warps == 4 && first.num_stages == 2);
  CHECK(kiln_sema_check_all(c));
  dump_diags(c);
  kiln_frontend_destroy(c);
}

static void test_typing(void) {
  KilnCompilation *c = open_file("tests/frontend/kernels/typing.kiln");
  CHECK(kiln_frontend_parse(c));
  KilnBinding b[] = {{"B", 64}};
  KilnKernel *k;
  CHECK(kiln_sema_check_kernel(c, "typing", b, 1, &k));
  dump_diags(c);
  if (!k) {
    kiln_frontend_destroy(c);
    return;
  }
  KilnBlock *body = k->body;
  CHECK(strcmp(decl_type(body, "xv"), "tile<64xf16>") == 0);
  CHECK(strcmp(decl_type(body, "half"), "tile<64xf16>") == 0);  /* weak 0.5 adopts f16 */
  CHECK(strcmp(decl_type(body, "mixed"), "tile<64xf32>") == 0); /* f16 + bf16 -> f32 */
  KilnExpr *neg = stmt_named(body, "neg")->init; /* xv * -2: the negated literal becomes f16 */
  CHECK(strcmp(ty(neg->type), "tile<64xf16>") == 0 && strcmp(ty(neg->rhs->type), "f16") == 0 &&
        strcmp(ty(neg->rhs->lhs->type), "f16") == 0 && neg->rhs->is_const && neg->rhs->ival == -2);
  CHECK(strcmp(decl_type(body, "wide"), "tile<64xi64>") == 0); /* weak 1 adopts i64 */
  CHECK(strcmp(decl_type(body, "cmp"), "tile<64xi1>") == 0);
  CHECK(strcmp(decl_type(body, "col"), "tile<64x1xi32>") == 0);
  CHECK(strcmp(decl_type(body, "grid"), "tile<64x64xi32>") == 0);
  CHECK(strcmp(decl_type(body, "s"), "tile<64xi32>") == 0);
  CHECK(strcmp(decl_type(body, "m"), "tile<64xi32>") == 0);
  CHECK(strcmp(decl_type(body, "total"), "i32") == 0);
  CHECK(strcmp(decl_type(body, "count"), "i32") == 0);
  CHECK(strcmp(decl_type(body, "r"), "tile<64xf32>") == 0);
  CHECK(strcmp(decl_type(body, "e"), "tile<64xf32>") == 0);
  KilnStmt *h = stmt_named(body, "h");
  CHECK(h && h->decl->is_const && h->decl->value == 22); /* cdiv(64, 3) */
  /* the for carries acc and count; the if inside it too (through its else-if) */
  KilnStmt *loop = NULL;
  for (int i = 0; i < body->nstmts; i++)
    if (body->stmts[i]->kind == KILN_STMT_FOR) loop = body->stmts[i];
  CHECK(loop && loop->ncarried == 2);
  if (loop && loop->ncarried == 2) {
    CHECK(strcmp(loop->carried[0]->name, "acc") == 0 &&
          strcmp(loop->carried[1]->name, "count") == 0);
    KilnStmt *ifs = loop->body->stmts[0];
    CHECK(ifs->kind == KILN_STMT_IF && ifs->ncarried == 2);
    KilnStmt *elif = ifs->else_body->stmts[0];
    CHECK(elif->kind == KILN_STMT_IF && elif->ncarried == 2);
  }
  /* `half as f32` inside the loop: binary operand type broadcasts acc + scalar-free tile */
  KilnExpr *st = NULL;
  for (int i = 0; i < body->nstmts; i++)
    if (body->stmts[i]->kind == KILN_STMT_EXPR && !strcmp(body->stmts[i]->value->name, "store"))
      st = body->stmts[i]->value;
  CHECK(st && st->builtin == KILN_BUILTIN_STORE &&
        strcmp(ty(st->operand_type), "tile<64xf32>") == 0);
  /* every use points at its declaration */
  KilnExpr *ofs = stmt_named(body, "xv")->init->args[0]->rhs;
  CHECK(ofs->kind == KILN_EXPR_NAME && ofs->decl == stmt_named(body, "offs")->decl);

  /* the AST dump names types */
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  kiln_ast_dump(k, mem);
  fclose(mem);
  CHECK(strstr(buf, "Let half #") && strstr(buf, ": tile<64xf16>"));
  CHECK(strstr(buf, "carried: acc#"));
  free(buf);

  /* a where that prunes, and a preset */
  KilnTune *t = k->tune;
  CHECK(t && kiln_tune_config_count(t) == 6);
  int pass = 0;
  for (size_t i = 0; t && i < kiln_tune_config_count(t); i++) {
    KilnTuneConfig cfg;
    CHECK(kiln_tune_config_get(t, i, &cfg));
    pass += kiln_tune_where_ok(c, t, &cfg);
  }
  CHECK(pass == 5);
  KilnTuneConfig pre;
  CHECK(t && kiln_tune_preset_get(t, "small", &pre) && pre.num_warps == 2 && pre.num_stages == 2);
  CHECK(t && !kiln_tune_preset_get(t, "large", &pre));

  /* re-checking per configuration must not grow memory without bound */
  for (int i = 0; i < 200; i++) {
    KilnBinding bb[] = {{"B", 16 << (i % 4)}};
    CHECK(kiln_sema_check_kernel(c, "typing", bb, 1, &k));
  }
  CHECK(strcmp(decl_type(k->body, "grid"), "tile<128x128xi32>") == 0);
  kiln_frontend_destroy(c);
}

/* Reductions of i1/i8/i16 run in i32: a sum is i32 (a mask's sum is its count, not the count's
 * parity in i1), max/min keep the element type, argmax/argmin are i32; the widening shows as
 * the call's operand_type.  An i1 cast widens to 0 or 1 (`true as i32` is the constant 1). */
static void test_reduce_types(void) {
  KilnCompilation *c = open_file("tests/frontend/kernels/reduce_types.kiln");
  CHECK(kiln_frontend_parse(c));
  KilnBinding b[] = {{"B", 64}};
  KilnKernel *k;
  CHECK(kiln_sema_check_kernel(c, "reduce_types", b, 1, &k));
  dump_diags(c);
  if (!k) {
    kiln_frontend_destroy(c);
    return;
  }
  KilnBlock *body = k->body;
  static const struct {
    const char *name, *type, *operand;
  } want[] = {
      {"count", "i32", "tile<64xi32>"},
      {"rows", "tile<64xi32>", "tile<64x64xi32>"},
      {"sb", "i32", "tile<64xi32>"},
      {"sh", "i32", "tile<64xi32>"},
      {"sw", "i64", NULL},
      {"sf", "f16", NULL},
      {"si", "i32", NULL},
      {"any", "i1", "tile<64xi32>"},
      {"all", "tile<64xi1>", "tile<64x64xi32>"},
      {"mb", "i8", "tile<64xi32>"},
      {"nh", "i16", "tile<64xi32>"},
      {"ab", "i32", "tile<64xi32>"},
      {"am", "i32", "tile<64xi32>"},
      {"ones", "tile<64xi32>", NULL},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    KilnStmt *s = stmt_named(body, want[i].name);
    const char *got = s ? ty(s->decl->type) : "<none>";
    const KilnType *ot = s && s->init->kind == KILN_EXPR_CALL ? s->init->operand_type : NULL;
    const char *got_ot = ot ? ty(ot) : NULL;
    bool ok = strcmp(got, want[i].type) == 0 &&
              (want[i].operand ? got_ot && strcmp(got_ot, want[i].operand) == 0 : !got_ot);
    if (!ok) {
      printf("reduce_types: %s is %s (operands %s), want %s (operands %s)\n", want[i].name, got,
             got_ot ? got_ot : "-", want[i].type, want[i].operand ? want[i].operand : "-");
      failures++;
    }
  }
  KilnStmt *one = stmt_named(body, "one");
  CHECK(one && strcmp(ty(one->decl->type), "i32") == 0 && one->init->is_const &&
        one->init->ival == 1);
  kiln_frontend_destroy(c);
}

static void test_render(void) {
  const char *src = "kernel k(x: *f32, const B: i32) {\n"
                    "    let a = zeros([64, 32], f32);\n"
                    "    let b = zeros([32, 64], f32);\n"
                    "    let c = a + b;\n"
                    "}\n";
  KilnCompilation *c = kiln_frontend_create("r.kiln", src, strlen(src));
  CHECK(kiln_frontend_parse(c));
  KilnBinding b[] = {{"B", 1}};
  CHECK(!kiln_sema_check_kernel(c, "k", b, 1, NULL));
  CHECK(kiln_diag_count_errors(c) == 1);
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  kiln_diag_render(c, mem);
  fclose(mem);
  const char *want = "r.kiln:4:13: error: tile shapes [64,32] and [32,64] do not broadcast\n"
                     "        let c = a + b;\n"
                     "                ^~~~~\n";
  CHECK(strcmp(buf, want) == 0);
  if (strcmp(buf, want) != 0) printf("got:\n%s", buf);
  free(buf);
  kiln_frontend_destroy(c);
}

/* A `where` naming a key is a condition on the call: skipped without the call's values,
 * evaluated (with the tuner's checked arithmetic) with them. */
static void test_call_conditions(void) {
  const char *src = "kernel k(x: *f32, cols: i32, const B: i32) {\n}\n"
                    "tune k {\n    key cols;\n    B in [64, 1024];\n"
                    "    where B >= 64;\n    where B >= cols && 100000 / cols > 0;\n}\n";
  KilnCompilation *c = kiln_frontend_create("w.kiln", src, strlen(src));
  CHECK(kiln_frontend_parse(c) && kiln_sema_check_all(c));
  KilnTune *t = kiln_kernel_find(c, "k")->tune;
  CHECK(t && !kiln_tune_where_is_call(t, 0) && kiln_tune_where_is_call(t, 1));
  KilnTuneConfig small;
  CHECK(kiln_tune_config_get(t, 0, &small)); /* B = 64 */
  CHECK(kiln_tune_where_ok(c, t, &small));   /* the call's condition is not checked */
  KilnBinding cols100[] = {{"cols", 100}}, cols50[] = {{"cols", 50}}, cols0[] = {{"cols", 0}};
  CHECK(!kiln_tune_where_ok_call(NULL, t, &small, cols100, 1));
  CHECK(kiln_tune_where_ok_call(NULL, t, &small, cols50, 1));
  CHECK(!kiln_tune_where_ok_call(NULL, t, &small, cols0, 1)); /* 100000 / 0: false, not a crash */
  kiln_frontend_destroy(c);
}

/* Inputs that once could hurt a frontend: none may crash; all must report errors. */
static void test_hostile(void) {
  size_t n = 200000;
  char *s = malloc(n + 64);
  /* deep parentheses, deep unary minus, long + chains, deep else-if, huge line, NULs */
  const char *shapes[] = {"(", "-", "1+", "if true {} else "};
  for (int v = 0; v < 4; v++) {
    size_t p = (size_t)sprintf(s, "kernel k() { let a = ");
    if (v == 3) p = (size_t)sprintf(s, "kernel k() { ");
    size_t w = strlen(shapes[v]);
    while (p + w < n) {
      memcpy(s + p, shapes[v], w);
      p += w;
    }
    p += (size_t)sprintf(s + p, "1; }");
    KilnCompilation *c = kiln_frontend_create("h.kiln", s, p);
    CHECK(!kiln_frontend_parse(c));
    CHECK(kiln_diag_count_errors(c) >= 1);
    FILE *null = fopen("/dev/null", "w");
    kiln_diag_render(c, null);
    fclose(null);
    kiln_frontend_destroy(c);
  }
  memset(s, 0, n);
  KilnCompilation *c = kiln_frontend_create("nul.kiln", s, n);
  CHECK(!kiln_frontend_parse(c));
  CHECK(kiln_diag_count(c) == KILN_MAX_ERRORS && kiln_diag_count_errors(c) > KILN_MAX_ERRORS);
  kiln_frontend_destroy(c);
  free(s);
}

static void test_recovery(void) {
  const char *src = "kernel k(x: *f32) {\n"
                    "    let a = ;\n"
                    "    let b = 1 +;\n"
                    "    let c = 2;\n"
                    "}\n"
                    "kernel j(x: *f32) { let d = ) ; }\n";
  KilnCompilation *c = kiln_frontend_create("s.kiln", src, strlen(src));
  CHECK(!kiln_frontend_parse(c));
  CHECK(kiln_diag_count_errors(c) == 3);
  CHECK(kiln_diag_get(c, 0)->span.line == 2 && kiln_diag_get(c, 1)->span.line == 3 &&
        kiln_diag_get(c, 2)->span.line == 6);
  kiln_frontend_destroy(c);
}

/* dsl/reference.md must document every builtin of builtins.def with the same table row
 * (signature, result type included, and meaning). */
static void test_reference_lists_builtins(void) {
  size_t len;
  char *ref = slurp("dsl/reference.md", &len);
  for (int b = 1; b < KILN_BUILTIN_COUNT; b++) {
    char row[512];
    snprintf(row, sizeof row, "| `%s` | %s |", kiln_builtin_signature((KilnBuiltin)b),
             kiln_builtin_doc((KilnBuiltin)b));
    if (!strstr(ref, row)) {
      printf("dsl/reference.md does not have the row of builtin %s: %s\n",
             kiln_builtin_name((KilnBuiltin)b), row);
      failures++;
    }
  }
  free(ref);
}

/* A function called with tiles of a bound size and a builtin given keyword arguments out of
 * order, checked twice under different bindings (as the tuner does): the call's type follows
 * each binding (the body is checked per call), and the builtin's arguments stay in positional
 * order (they are reordered once, in the AST's arena, not in the scratch arena that each check
 * resets). */
static void test_functions_rechecked(void) {
  const char *src = "def twice(v, by = 2.0) { return v * by; }\n"
                    "kernel k(x: *f32, n: i32, const B: i32) {\n"
                    "    let o = arange(0, B);\n"
                    "    let t = twice(load(x + o, mask = o < n, other = 0.0), by = 3.0);\n"
                    "    store(x + o, mask = o < n, value = t);\n"
                    "}\n";
  KilnCompilation *c = kiln_frontend_create("f.kiln", src, strlen(src));
  CHECK(kiln_frontend_parse(c));
  static const int64_t sizes[] = {64, 128, 64};
  for (int i = 0; i < 3; i++) {
    KilnBinding b[] = {{"B", sizes[i]}};
    KilnKernel *k = NULL;
    CHECK(kiln_sema_check_kernel(c, "k", b, 1, &k));
    if (!k) {
      dump_diags(c);
      break;
    }
    char want[64];
    snprintf(want, sizeof want, "tile<%lldxf32>", (long long)sizes[i]);
    CHECK(strcmp(decl_type(k->body, "t"), want) == 0);
    KilnExpr *call = stmt_named(k->body, "t")->init;
    CHECK(call->kind == KILN_EXPR_CALL && call->inlined && call->result);
    KilnExpr *st = k->body->stmts[2]->value;
    CHECK(st->kind == KILN_EXPR_CALL && st->nargs == 3 && strcmp(st->args[1]->kw, "value") == 0 &&
          strcmp(st->args[2]->kw, "mask") == 0);
  }
  kiln_frontend_destroy(c);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_frontend SOURCE_DIR\n");
    return 2;
  }
  src_dir = argv[1];
  test_sketch();
  test_typing();
  test_reduce_types();
  test_render();
  test_call_conditions();
  test_hostile();
  test_recovery();
  test_reference_lists_builtins();
  test_functions_rechecked();
  printf("test_frontend: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
