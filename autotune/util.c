/* util.c — clocks, hashes and read-error messages shared by the tuner's stages (files:
 * kiln_base.h). */
#include "tune_core.h"

#include <ctype.h>
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

double tune_default_timeout(const char *device_spec) {
  if (device_spec && !strcmp(device_spec, "emu")) return 300;
  if (device_spec && !strncmp(device_spec, "cuda", 4)) return 10;
  return 30;
}

uint64_t tune_fnv1a(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

void tune_child_dies_with_parent(pid_t parent) {
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  if (getppid() != parent) _exit(1); /* the tuner died between fork and here */
}

void tune_report_read_error(FILE *err, const char *who, const char *what, const char *path,
                            const char *limit_name, size_t limit) {
  char msg[PATH_MAX + 256];
  fprintf(err, "%s: error: %s\n", who,
          kiln_file_read_error(msg, sizeof msg, what, path, limit_name, limit));
}

/* The generated library's text rules (libgen_names.c says why), here because kiln-tune-runner
 * writes rows of generated libraries too (bundle_lib.c). */
bool libgen_is_ident(const char *s) {
  if (!*s || isdigit((unsigned char)*s)) return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return false;
  return true;
}

void libgen_c_string(FILE *f, const char *text) {
  fputc('"', f);
  for (const unsigned char *s = (const unsigned char *)text; *s; s++) {
    if (*s == '"' || *s == '\\' || *s == '?')
      fprintf(f, "\\%c", *s);
    else if (*s < 0x20 || *s > 0x7e)
      fprintf(f, "\\%03o", *s);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

int tune_read_versioned_lines(const char *path, size_t max, const char *limit_name,
                              const char *what, const char *version,
                              int (*line)(void *ctx, char *text), void *ctx, uint64_t *hash,
                              FILE *log) {
  size_t len = 0;
  char *text = kiln_file_read_max(path, &len, max);
  if (!text) {
    tune_report_read_error(log, "kiln-tune-runner", what, path, limit_name, max);
    return -1;
  }
  if (hash) *hash = tune_fnv1a(text, len);
  size_t vlen = strlen(version), word = strcspn(version, " ");
  int rc = 0, line_no = 1;
  if (strncmp(text, version, vlen) || text[vlen] != '\n') {
    if (!strncmp(text, version, word + 1)) /* the same format, another version */
      fprintf(log,
              "kiln-tune-runner: error: %s: '%.*s' is another version's %s; this runner "
              "reads %s\n",
              path, (int)strcspn(text, "\n"), text, what, version);
    else
      fprintf(log, "kiln-tune-runner: error: %s: not a %s (%s)\n", path, what, version);
    free(text);
    return -1;
  }
  for (char *save = NULL, *l = strtok_r(text + vlen + 1, "\n", &save); l && rc == 0;
       l = strtok_r(NULL, "\n", &save)) {
    line_no++;
    rc = line(ctx, l);
  }
  if (rc) fprintf(log, "kiln-tune-runner: error: %s:%d: not a %s line\n", path, line_no, what);
  free(text);
  return rc ? -1 : 0;
}
