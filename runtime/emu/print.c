/* print.c — vprintf, the PTX system call behind device_print, for the emulator.
 *
 * Why: the GPU lowering prints with `vprintf(fmt, args)`, CUDA's device printf ABI: `args` is a
 * local buffer holding the arguments one after another, each at its natural alignment (4 bytes
 * for int, 8 for long long and double; floats arrive promoted to double as C varargs promote
 * them).  The emu rewrite turns that call into kiln_emu_vprintf with the same two pointers, so
 * this file walks the format the way the driver's printf does, takes each argument from the
 * buffer at the offset the ABI gives it, and formats it with the host's snprintf.  The whole line
 * is written with one fputs: stdio locks the stream per call, so lines of threads that print at
 * the same time never interleave mid-line.
 */
#include "emu_internal.h"

#include <stdio.h>
#include <string.h>

/* The argument of `bytes` bytes at the next offset aligned to them. */
static const unsigned char *next_arg(const unsigned char *args, size_t *off, size_t bytes) {
  *off = (*off + bytes - 1) / bytes * bytes;
  const unsigned char *p = args + *off;
  *off += bytes;
  return p;
}

/* One conversion spec starting at fmt[0] == '%': its length, and what it reads ('i' int,
 * 'l' long long, 'd' double, 0 nothing: "%%" or an unknown conversion, copied as text). */
static size_t spec_length(const char *fmt, char *kind) {
  size_t i = 1;
  int longs = 0;
  *kind = 0;
  if (fmt[i] == '%') return 2;
  while (fmt[i] && strchr("-+ #0", fmt[i])) i++;
  while (fmt[i] >= '0' && fmt[i] <= '9') i++;
  if (fmt[i] == '.')
    for (i++; fmt[i] >= '0' && fmt[i] <= '9';) i++;
  while (fmt[i] == 'l' || fmt[i] == 'h') longs += fmt[i++] == 'l';
  if (!fmt[i]) return i;
  if (strchr("diuxXoc", fmt[i]))
    *kind = longs ? 'l' : 'i';
  else if (strchr("eEfFgGaA", fmt[i]))
    *kind = 'd';
  return i + 1;
}

int kiln_emu_vprintf(const char *fmt, const void *args) {
  char line[1024], spec[64];
  size_t n = 0, off = 0;
  const unsigned char *a = args;
  for (const char *f = fmt; *f && n < sizeof line - 1;) {
    if (*f != '%') {
      line[n++] = *f++;
      continue;
    }
    char kind;
    size_t len = spec_length(f, &kind);
    if (kind == 0 || len >= sizeof spec) { /* "%%" prints one '%'; anything else as it is */
      size_t copy = f[1] == '%' ? 1 : len;
      for (size_t i = 0; i < copy && n < sizeof line - 1; i++) line[n++] = f[i];
      f += len;
      continue;
    }
    memcpy(spec, f, len);
    spec[len] = '\0';
    size_t room = sizeof line - n;
    int w;
    if (kind == 'i') {
      int v;
      memcpy(&v, next_arg(a, &off, sizeof v), sizeof v);
      w = snprintf(line + n, room, spec, v);
    } else if (kind == 'l') {
      long long v;
      memcpy(&v, next_arg(a, &off, sizeof v), sizeof v);
      w = snprintf(line + n, room, spec, v);
    } else {
      double v;
      memcpy(&v, next_arg(a, &off, sizeof v), sizeof v);
      w = snprintf(line + n, room, spec, v);
    }
    n += w < 0 ? 0 : (size_t)w < room ? (size_t)w : room - 1;
    f += len;
  }
  line[n] = '\0';
  fputs(line, stdout);
  return (int)n;
}
