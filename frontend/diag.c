/* diag.c: collecting diagnostics and rendering them gcc-style with the source line and a
 * caret line under the span (the chibicc way: find the line, print it, pad, print ^~~). */
#include "frontend_internal.h"

#include <stdlib.h>
#include <string.h>

/* Lines longer than this are shown as a window around the span. */
#define RENDER_WIDTH 160

KilnSpan kiln_span_join(KilnSpan a, KilnSpan b) {
  KilnSpan s = a;
  s.end_line = b.end_line;
  s.end_col = b.end_col;
  return s;
}

static bool push_diag(KilnCompilation *c, KilnSeverity sev, KilnSpan span, const char *msg) {
  if (sev == KILN_SEV_ERROR) {
    c->nerrors++;
    if (c->nerrors > KILN_MAX_ERRORS) return false;
  }
  if (c->ndiags == c->diag_cap) {
    size_t cap = c->diag_cap ? c->diag_cap * 2 : 16;
    KilnDiag *d = realloc(c->diags, cap * sizeof *d);
    if (!d) return false; /* out of memory: the error is still counted */
    c->diags = d;
    c->diag_cap = cap;
  }
  c->diags[c->ndiags++] = (KilnDiag){sev, span, msg};
  return true;
}

void kiln_diag_vadd(KilnCompilation *c, KilnSeverity sev, KilnSpan span, const char *fmt,
                    va_list ap) {
  if (sev == KILN_SEV_ERROR && c->nerrors >= KILN_MAX_ERRORS) {
    c->nerrors++; /* counted, not kept: no need to format it */
    return;
  }
  KilnArena *ar = c->in_sema ? &c->scratch : &c->ar;
  const char *msg = kiln_arena_vprintf(ar, fmt, ap);
  push_diag(c, sev, span, msg ? msg : "(out of memory)");
}

void kiln_diag_error(KilnCompilation *c, KilnSpan span, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_diag_vadd(c, KILN_SEV_ERROR, span, fmt, ap);
  va_end(ap);
}

void kiln_diag_warning(KilnCompilation *c, KilnSpan span, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_diag_vadd(c, KILN_SEV_WARNING, span, fmt, ap);
  va_end(ap);
}

bool kiln_diag_add(KilnCompilation *c, KilnSeverity sev, KilnSpan span, const char *message) {
  if (sev == KILN_SEV_ERROR && c->nerrors >= KILN_MAX_ERRORS) {
    c->nerrors++;
    return false;
  }
  KilnArena *ar = c->in_sema ? &c->scratch : &c->ar;
  const char *msg = kiln_arena_strndup(ar, message, strlen(message));
  return push_diag(c, sev, span, msg ? msg : "(out of memory)");
}

void kiln_diag_reset_sema(KilnCompilation *c) {
  c->ndiags = c->nparse_diags;
  c->nerrors = c->nparse_errors;
}

size_t kiln_diag_count(const KilnCompilation *c) { return c->ndiags; }

size_t kiln_diag_count_errors(const KilnCompilation *c) { return c->nerrors; }

const KilnDiag *kiln_diag_get(const KilnCompilation *c, size_t i) {
  return i < c->ndiags ? &c->diags[i] : NULL;
}

static const char *sev_name(KilnSeverity s) {
  switch (s) {
  case KILN_SEV_ERROR: return "error";
  case KILN_SEV_WARNING: return "warning";
  case KILN_SEV_NOTE: return "note";
  }
  return "error";
}

/* Finds line `line` (1-based) of the source; returns false if there is no such line. */
static bool find_line(const KilnCompilation *c, int line, const char **start, size_t *len) {
  const char *p = c->text, *end = c->text + c->len;
  for (int l = 1; l < line; l++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) return false;
    p = nl + 1;
  }
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  *start = p;
  *len = (size_t)((nl ? nl : end) - p);
  if (*len && (*start)[*len - 1] == '\r') (*len)--;
  return true;
}

static void put_visible(FILE *out, char ch) {
  unsigned char u = (unsigned char)ch;
  fputc(u == '\t' || (u >= 32 && u != 127) ? ch : '?', out);
}

void kiln_diag_render_one(const KilnCompilation *c, const KilnDiag *d, FILE *out) {
  if (d->span.line < 1) { /* not tied to a place in the file */
    fprintf(out, "%s: %s: %s\n", c->path, sev_name(d->severity), d->message);
    return;
  }
  fprintf(out, "%s:%d:%d: %s: %s\n", c->path, d->span.line, d->span.col, sev_name(d->severity),
          d->message);
  const char *ls;
  size_t llen;
  if (d->span.line < 1 || d->span.col < 1 || !find_line(c, d->span.line, &ls, &llen)) return;
  size_t col0 = (size_t)d->span.col - 1; /* 0-based start of the span */
  size_t col1 = d->span.end_line == d->span.line && d->span.end_col >= d->span.col
                    ? (size_t)d->span.end_col - 1
                    : (llen ? llen - 1 : 0);
  if (col0 > llen) col0 = llen;
  if (col1 < col0) col1 = col0;
  /* Show a window of the line when it is long, keeping the span's start in view. */
  size_t from = 0, to = llen;
  if (llen > RENDER_WIDTH) {
    from = col0 > RENDER_WIDTH / 4 ? col0 - RENDER_WIDTH / 4 : 0;
    to = from + RENDER_WIDTH < llen ? from + RENDER_WIDTH : llen;
  }
  fputs("    ", out);
  for (size_t i = from; i < to; i++) put_visible(out, ls[i]);
  fputs("\n    ", out);
  for (size_t i = from; i < col0 && i < to; i++) fputc(ls[i] == '\t' ? '\t' : ' ', out);
  fputc('^', out);
  for (size_t i = col0 + 1; i <= col1 && i < to; i++) fputc('~', out);
  fputc('\n', out);
}

void kiln_diag_render(const KilnCompilation *c, FILE *out) {
  for (size_t i = 0; i < c->ndiags; i++) kiln_diag_render_one(c, &c->diags[i], out);
  if (c->nerrors > KILN_MAX_ERRORS)
    fprintf(out, "%s: too many errors (%zu), only the first %d are shown\n", c->path, c->nerrors,
            KILN_MAX_ERRORS);
}
