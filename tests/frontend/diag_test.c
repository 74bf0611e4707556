/* diag_test: the table-driven diagnostics test.  Every diag/NN_name.kiln holds a malformed or
 * ill-typed program with its expected diagnostics written inline:
 *
 *   // bind: B=64 C=2          bindings for kiln_sema_check_kernel (may be empty)
 *   // kernel: k               the kernel to check
 *   // check: all              instead of the two above: kiln_sema_check_all
 *   // expect-error@+1:17: tile shapes [64,32] and [32,64] do not broadcast
 *   // expect-note@+1:5: in this call of 'f'      (and expect-warning@...)
 *
 * `@+N:COL` is the line N below the comment and the column there.  Every expected diagnostic
 * must be reported exactly (line, column, text) and nothing else may be reported.
 *   diag_test DIR */
#include "kiln_frontend.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

typedef struct Expect {
  int line, col;
  KilnSeverity sev;
  char msg[512];
  bool seen;
} Expect;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs one file; returns the number of mismatches (printed). */
static int run_file(const char *path) {
  size_t len;
  char *text = kiln_file_read(path, &len);
  if (!text) {
    printf("%s: cannot read\n", path);
    return 1;
  }
  Expect exp[64];
  int nexp = 0;
  KilnBinding b[16];
  char names[16][64];
  size_t nb = 0;
  char kernel[128] = "";
  bool all = false;
  int line = 1;
  for (const char *p = text; p < text + len; line++) {
    const char *eol = memchr(p, '\n', (size_t)(text + len - p));
    size_t ll = eol ? (size_t)(eol - p) : (size_t)(text + len - p);
    char buf[1024];
    size_t n = ll < sizeof buf - 1 ? ll : sizeof buf - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    char *s = strstr(buf, "//");
    int off, col;
    if (s && strncmp(s, "// bind:", 8) == 0) {
      for (char *tok = strtok(s + 8, " "); tok && nb < 16; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = 0;
        snprintf(names[nb], sizeof names[nb], "%s", tok);
        b[nb].name = names[nb];
        KilnScalarKind sk; /* a type parameter's value: T=bf16 */
        b[nb].value = kiln_scalar_from_name(eq + 1, &sk) ? (int64_t)sk : strtoll(eq + 1, NULL, 0);
        nb++;
      }
    } else if (s && sscanf(s, "// kernel: %127s", kernel) == 1) {
    } else if (s && strncmp(s, "// check: all", 13) == 0) {
      all = true;
    } else if (s && nexp < 64 &&
               (sscanf(s, "// expect-error@+%d:%d: %n", &off, &col, &(int){0}) == 2 ||
                sscanf(s, "// expect-warning@+%d:%d: %n", &off, &col, &(int){0}) == 2 ||
                sscanf(s, "// expect-note@+%d:%d: %n", &off, &col, &(int){0}) == 2)) {
      Expect *e = &exp[nexp++];
      e->sev = strncmp(s, "// expect-error", 15) == 0  ? KILN_SEV_ERROR
               : strncmp(s, "// expect-note", 14) == 0 ? KILN_SEV_NOTE
                                                       : KILN_SEV_WARNING;
      e->line = line + off;
      e->col = col;
      e->seen = false;
      const char *m = strstr(strchr(s, '@'), ": ");
      snprintf(e->msg, sizeof e->msg, "%s", m ? m + 2 : "");
    }
    p = eol ? eol + 1 : text + len;
  }
  KilnCompilation *c = kiln_frontend_create(path, text, len);
  free(text);
  if (!c) return 1;
  if (kiln_frontend_parse(c)) {
    KilnKernel *k;
    if (all)
      kiln_sema_check_all(c);
    else
      kiln_sema_check_kernel(c, kernel, b, nb, &k);
  }
  int bad = 0;
  for (size_t i = 0; i < kiln_diag_count(c); i++) {
    const KilnDiag *d = kiln_diag_get(c, i);
    bool found = false;
    for (int j = 0; j < nexp && !found; j++) {
      Expect *e = &exp[j];
      if (!e->seen && e->sev == d->severity && e->line == d->span.line && e->col == d->span.col &&
          strcmp(e->msg, d->message) == 0)
        e->seen = found = true;
    }
    if (!found) {
      printf("%s:%d:%d: unexpected %s: %s\n", path, d->span.line, d->span.col,
             d->severity == KILN_SEV_ERROR  ? "error"
             : d->severity == KILN_SEV_NOTE ? "note"
                                            : "warning",
             d->message);
      bad++;
    }
  }
  for (int j = 0; j < nexp; j++)
    if (!exp[j].seen) {
      printf("%s:%d:%d: expected diagnostic not reported: %s\n", path, exp[j].line, exp[j].col,
             exp[j].msg);
      bad++;
    }
  if (nexp == 0) {
    printf("%s: no expectations\n", path);
    bad++;
  }
  kiln_frontend_destroy(c);
  return bad;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: diag_test DIR\n");
    return 2;
  }
  DIR *dir = opendir(argv[1]);
  if (!dir) {
    fprintf(stderr, "diag_test: cannot open %s\n", argv[1]);
    return 2;
  }
  char *files[512];
  int nfiles = 0;
  struct dirent *de;
  while ((de = readdir(dir)) && nfiles < 512) {
    size_t n = strlen(de->d_name);
    if (n > 5 && strcmp(de->d_name + n - 5, ".kiln") == 0) {
      size_t sz = strlen(argv[1]) + n + 2;
      files[nfiles] = malloc(sz);
      snprintf(files[nfiles++], sz, "%s/%s", argv[1], de->d_name);
    }
  }
  closedir(dir);
  qsort(files, (size_t)nfiles, sizeof files[0], cmp_str);
  int failed = 0;
  for (int i = 0; i < nfiles; i++) {
    if (run_file(files[i])) failed++;
    free(files[i]);
  }
  printf("diag_test: %d files, %d failed\n", nfiles, failed);
  /* the table must stay big enough to mean something */
  if (nfiles < 40) {
    printf("diag_test: expected at least 40 cases\n");
    return 1;
  }
  return failed ? 1 : 0;
}
