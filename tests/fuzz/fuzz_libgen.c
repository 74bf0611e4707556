/* libFuzzer target: what reaches a generated library's C from user text (issues 15 and 17).
 *
 * A generated library is made from parsed values only: grid rules are parsed and printed from
 * their tree (autotune/problem.c), names are checked and rewritten, comments and strings
 * escaped (autotune/libgen_names.c). The input is cut at NUL bytes into a grid rule, a comment
 * text, a string text and two names; the rules checked:
 *   - a rule that parses prints as text that parses to the same print (a fixed point), that
 *     evaluates like the original, and that holds nothing that could leave a comment or change
 *     the C's meaning ("--", comment delimiters, "??", backslashes, newlines);
 *   - escaped comment text cannot end the comment or splice a line; an escaped string is one
 *     C string literal;
 *   - the header name of an identifier is an identifier, the name itself when it is safe, and
 *     two different names never get the same header name.
 * A broken rule aborts (the fuzzer's finding). Kept small: the whole input is a few strings. */
#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(bool ok, const char *what, const char *text) {
  if (ok) return;
  fprintf(stderr, "fuzz_libgen: %s: '%s'\n", what, text);
  abort();
}

/* What fputs-style printer f writes for text, as a malloc'ed string. */
static char *printed(void (*f)(FILE *, const char *), const char *text) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return NULL;
  f(m, text);
  fclose(m);
  return buf;
}

static char *expr_text(const TuneExpr *e) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return NULL;
  tune_expr_print(e, m);
  fclose(m);
  return buf;
}

static bool has_any(const char *s, const char *const *bad) {
  for (; *bad; bad++)
    if (strstr(s, *bad)) return true;
  return false;
}

static void check_grid(const char *rule) {
  static TuneExpr a, b;
  static const char *const bad[] = {"--", "*/", "/*", "??", "\\", "\n", "//", NULL};
  if (tune_expr_parse(rule, &a, NULL, 0)) return;
  char *t1 = expr_text(&a);
  if (!t1) return;
  require(!has_any(t1, bad), "printed rule holds unsafe text", t1);
  require(tune_expr_parse(t1, &b, NULL, 0) == 0, "printed rule does not parse", t1);
  char *t2 = expr_text(&b);
  require(t2 && !strcmp(t1, t2), "printing is no fixed point", t1);
  const char *names[] = {"n", "BLOCK", "num_warps"};
  const int64_t vals[] = {1000, 64, 4};
  int64_t va = 0, vb = 0;
  bool oka = tune_expr_eval(&a, names, vals, 3, &va, NULL, 0);
  bool okb = tune_expr_eval(&b, names, vals, 3, &vb, NULL, 0);
  require(oka == okb && (!oka || va == vb), "the printed rule evaluates differently", t1);
  free(t1);
  free(t2);
}

static void check_comment(const char *text) {
  char *out = printed(libgen_comment, text);
  if (!out) return;
  static const char *const bad[] = {"*/", "/*", "??", "\\", NULL};
  require(!has_any(out, bad), "escaped comment can end or splice", out);
  for (const char *p = out; *p; p++)
    require(*p >= 0x20 && *p <= 0x7e, "unprintable in comment", out);
  size_t n = strlen(out);
  require(n == 0 || (out[n - 1] != '*' && out[n - 1] != '/'), "comment ends in * or /", out);
  free(out);
}

static void check_string(const char *text) {
  char *out = printed(libgen_c_string, text);
  if (!out) return;
  size_t n = strlen(out);
  require(n >= 2 && out[0] == '"' && out[n - 1] == '"', "string not quoted", out);
  for (size_t i = 1; i + 1 < n; i++) {
    require(out[i] >= 0x20 && out[i] <= 0x7e && out[i] != '"' && out[i] != '?',
            "raw character in string", out);
    if (out[i] == '\\') i++; /* an escape: the next character is its */
    require(i + 1 < n, "escape at the end of a string", out);
  }
  free(out);
}

static void check_names(const char *L, const char *x, const char *y) {
  if (!libgen_is_ident(x) || !libgen_is_ident(y) || strlen(x) > 60 || strlen(y) > 60) return;
  char cx[80], cy[80];
  libgen_c_name(L, x, cx, sizeof cx);
  libgen_c_name(L, y, cy, sizeof cy);
  require(libgen_is_ident(cx), "header name is no identifier", cx);
  require(!libgen_name_is_safe(L, x) || !strcmp(cx, x), "safe name rewritten", x);
  require(libgen_name_is_safe(L, x) || !strncmp(cx, "kiln_", 5), "unsafe name kept", x);
  require(!strcmp(x, y) || strcmp(cx, cy), "two names, one header name", cx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  const char *part[5] = {"", "", "", "", ""};
  for (size_t i = 0, k = 0; k < 5 && i <= size; k++) {
    part[k] = buf + i;
    i += strlen(buf + i) + 1;
  }
  check_grid(part[0]);
  check_comment(part[1]);
  check_string(part[2]);
  check_names("hostile", part[3], part[4]);
  free(buf);
  return 0;
}
