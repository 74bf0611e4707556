/* libgen_names.c — what a generated library may call things, and how user text enters it.
 *
 * A generated library is C built from parsed values only, and none of its identifiers may meet
 * a name the user chose. The rules, which keep every kernel and parameter name Kiln accepts
 * (`[A-Za-z_][A-Za-z0-9_]*`, its keywords aside) valid in the C:
 *
 * - The source file never uses a user's name as an identifier: parameters are p0, p1, ... (the
 *   user's name in a comment) and the file's own statics are kiln_gen_* (kernels by index), so
 *   a parameter `v` or `d` cannot clash with or shadow a local of the dispatch code.
 * - The public names are NAME, NAME_create, NAME_destroy and NAME_K, NAME_K_config,
 *   NAME_K_grid_fn, NAME_K_pick per kernel K. NAME itself must be an identifier that is safe
 *   below and not the prefix of a C library or POSIX function family (pthread_create); kernels
 *   whose public names coincide (`create`; `a` and `a_pick`) are refused: they need separate
 *   libraries.
 * - Names the header shows (the parameters of the prototypes, the consts as fields of
 *   NAME_K_config) are kept when safe, else written kiln_<name>: safe means not a C or C++
 *   keyword, not reserved (a leading '_'), not in Kiln's namespace (kiln..., any case), not a
 *   name the standard headers define as a type or an object-like macro (..._t, NULL, errno,
 *   INT32_MAX, the E... error numbers), not one of the prototype's own names (lib, grid, ...)
 *   or the struct's fields, and not NAME or a NAME_ name. No kept name starts with kiln, so the
 *   rewritten ones are distinct from them and from each other.
 * - Text in a comment is escaped so that it cannot end the comment or splice lines: no "*" "/"
 *   or "/" "*" pairs, no "??" (trigraphs), no backslash, only printable ASCII. Text in a string
 *   literal is escaped likewise. */
#include "internal.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static bool in_list(const char *name, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(name, *list)) return true;
  return false;
}

/* C17, C23 and C++ keywords and the lower-case names of standard headers that are keywords or
 * object-like macros (iso646.h, stdbool.h, complex.h, errno.h, stdio.h), predefined macros of
 * GNU modes, and the names the launch prototype and the config structs use themselves. */
// clang-format off: a word table, kept packed
static const char *const unsafe_words[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "alignas", "alignof", "bool", "constexpr",
    "false", "nullptr", "static_assert", "thread_local", "true", "typeof", "typeof_unqual",
    "asm", "catch", "char8_t", "char16_t", "char32_t", "class", "concept", "const_cast",
    "consteval", "constinit", "co_await", "co_return", "co_yield", "decltype", "delete",
    "dynamic_cast", "explicit", "export", "friend", "mutable", "namespace", "new", "noexcept",
    "operator", "private", "protected", "public", "reinterpret_cast", "requires",
    "static_cast", "template", "this", "throw", "try", "typeid", "typename", "using", "virtual",
    "wchar_t", "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq",
    "xor", "xor_eq", "noreturn", "complex", "imaginary", "errno", "stdin", "stdout", "stderr",
    "linux", "unix", "i386", "math_errhandling", "offsetof",
    "lib", "grid", "grid_user", "stream", "num_warps", "num_stages", "signature", NULL};
// clang-format on

/* What a library name must not be besides: the other prototypes' parameters (NAME_create
 * takes `dev` and `out` after NAME is a type) and functions the generated source calls. */
static const char *const unsafe_lib_words[] = {
    "dev",  "out",      "cfg",    "user",   "calloc", "malloc", "realloc", "free", "abort",
    "exit", "snprintf", "printf", "memcpy", "memset", "strlen", "main",    NULL};

/* Upper-case macro families of the C standard headers (limits, stdint, errno, stdio, math). */
// clang-format off: a word table, kept packed
static const char *const unsafe_macro_prefixes[] = {
    "INT", "UINT", "SIZE_", "PTRDIFF_", "SIG", "WCHAR_", "WINT_", "CHAR_", "SCHAR_", "UCHAR_",
    "SHRT_", "USHRT_", "LONG_", "ULONG_", "LLONG_", "ULLONG_", "FLT_", "DBL_", "LDBL_", "EXIT_",
    "RAND_MAX", "EOF", "BUFSIZ", "FILENAME_MAX", "FOPEN_MAX", "TMP_MAX", "SEEK_", "NULL", "NAN",
    "INFINITY", "HUGE_VAL", "FP_", "MATH_", "M_", "PTHREAD_", "PRI", "SCN", "MB_", "LC_",
    "ATOMIC_", "CLOCKS_PER_SEC", "TIME_UTC", "WEOF", "BITINT_", "ONCE_FLAG_INIT", NULL};
// clang-format on

static bool is_upper_macro_like(const char *s) {
  for (; *s; s++)
    if (islower((unsigned char)*s)) return false;
  return true;
}

bool libgen_name_is_safe(const char *L, const char *name) {
  size_t n = strlen(name), ln = L ? strlen(L) : 0;
  if (!libgen_is_ident(name) || name[0] == '_' || !strncasecmp(name, "kiln", 4)) return false;
  if (in_list(name, unsafe_words)) return false;
  if (n >= 2 && !strcmp(name + n - 2, "_t")) return false;
  if (!strcmp(name, "I")) return false;                                   /* complex.h */
  if (name[0] == 'E' && n > 1 && is_upper_macro_like(name)) return false; /* errno.h */
  if (is_upper_macro_like(name))
    for (const char *const *p = unsafe_macro_prefixes; *p; p++)
      if (!strncmp(name, *p, strlen(*p))) return false;
  if (L && (!strcmp(name, L) || (n > ln && !strncmp(name, L, ln) && name[ln] == '_'))) return false;
  return true;
}

void libgen_c_name(const char *L, const char *name, char *out, size_t cap) {
  snprintf(out, cap, "%s%s", libgen_name_is_safe(L, name) ? "" : "kiln_", name);
}

/* Families whose NAME_create / NAME_destroy (or NAME_K) are C library or POSIX functions. */
static const char *const reserved_lib_prefixes[] = {
    "pthread", "thrd", "mtx", "cnd", "tss", "timer", "sem", "atomic", "str", "mem", NULL};

/* The public names of one kernel, in the order libgen writes them. */
static void public_names(const char *L, const char *k, char names[4][160]) {
  static const char *const suffix[4] = {"", "_config", "_grid_fn", "_pick"};
  for (int i = 0; i < 4; i++) snprintf(names[i], 160, "%s_%s%s", L, k, suffix[i]);
}

int libgen_check_names(const char *L, const LibKernel *ks, int nk, FILE *err) {
  if (!libgen_is_ident(L) || !libgen_name_is_safe(NULL, L) || in_list(L, unsafe_lib_words)) {
    fprintf(err,
            "kiln: error: library name '%s' is not a C identifier of its own (it must not "
            "be a C keyword, start with '_' or 'kiln', or name a type or macro of the "
            "standard headers)\n",
            L);
    return 64;
  }
  for (const char *const *p = reserved_lib_prefixes; *p; p++) {
    size_t n = strlen(*p);
    if (!strncmp(L, *p, n) && (L[n] == '\0' || L[n] == '_')) {
      fprintf(err,
              "kiln: error: library name '%s': %s_create and the like are C library "
              "functions; choose another name\n",
              L, L);
      return 64;
    }
  }
  for (int i = 0; i < nk; i++) {
    if (!libgen_is_ident(ks[i].name)) { /* the frontend's lexer admits no other kernel name */
      fprintf(err, "kiln: error: internal: kernel name '%s' is not an identifier\n", ks[i].name);
      return 2;
    }
    if (!strcmp(ks[i].name, "create") || !strcmp(ks[i].name, "destroy")) {
      fprintf(err,
              "kiln: error: kernel '%s' would be the library's own %s_%s; put it in a "
              "library with a kernel of another name or rename it\n",
              ks[i].name, L, ks[i].name);
      return 1;
    }
    char a[4][160];
    public_names(L, ks[i].name, a);
    for (int j = 0; j < i; j++) {
      char b[4][160];
      public_names(L, ks[j].name, b);
      for (int x = 0; x < 4; x++)
        for (int y = 0; y < 4; y++)
          if (!strcmp(a[x], b[y])) {
            fprintf(err,
                    "kiln: error: kernels '%s' and '%s' would both define '%s' in library "
                    "'%s'; generate them into separate libraries\n",
                    ks[j].name, ks[i].name, a[x], L);
            return 1;
          }
    }
  }
  return 0;
}

void libgen_comment(FILE *f, const char *text) {
  char prev = ' ';
  for (const unsigned char *s = (const unsigned char *)text; *s; s++) {
    char c = *s < 0x20 || *s > 0x7e || *s == '\\' ? '_' : (char)*s;
    if ((prev == '*' && c == '/') || (prev == '/' && c == '*') || (prev == '?' && c == '?'))
      fputc(' ', f);
    fputc(c, f);
    prev = c;
  }
  if (prev == '*' || prev == '/') fputc(' ', f); /* the comment's own end follows */
}
