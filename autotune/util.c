/* util.c — clocks, hashes and read-error messages shared by the tuner's stages (files:
 * kiln_base.h). */
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

double tune_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t tune_fnv1a(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/* Offset of the start of 1-based line `line`. */
static size_t line_start(const char *src, size_t len, int line) {
  size_t off = 0;
  for (int l = 1; l < line && off < len; off++)
    if (src[off] == '\n') l++;
  return off;
}

/* The kernel's text without its tune block: a config added to the block keeps the hash, so
 * its cached records stay valid and only the new configs are timed. */
void tune_kernel_hash(const char *src, size_t len, const KilnKernel *k, char out[20]) {
  size_t a = line_start(src, len, k->span.line);
  size_t b = k->body ? line_start(src, len, k->body->span.end_line + 1) : len;
  if (b < a) b = len;
  snprintf(out, 20, "%016llx", (unsigned long long)tune_fnv1a(src + a, b - a));
}

void tune_child_dies_with_parent(pid_t parent) {
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  if (getppid() != parent) _exit(1); /* the tuner died between fork and here */
}

void tune_report_read_error(FILE *err, const char *who, const char *what, const char *path,
                            const char *limit_name, size_t limit) {
  if (errno == EFBIG)
    fprintf(err, "%s: error: the %s '%s' is larger than %s (%zu MiB); refused\n", who, what,
            path, limit_name, limit >> 20);
  else
    fprintf(err, "%s: error: cannot read the %s '%s': %s\n", who, what, path, strerror(errno));
}
