/* outputs.c — the folders `kiln tune` and `kiln lib` write into, made ready before any work.
 *
 * A user names outputs in folders that may not exist yet (`--cache runs/x.json`, `--emit-lib
 * gen/lib`). They are created (with their parents, as `mkdir -p`), and each is checked to take a
 * new file by creating and removing one: a tuning run that wrote nothing after minutes of
 * timing because its output folder was read-only or missing lost that work. Paths through
 * symlinks are checked where the atomic writer will write, the link's target's folder. */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Creates dir and its missing parents (mode 0777 less the umask, as mkdir -p). 0 or -1 with
 * errno. */
static int make_dirs(const char *dir) {
  char p[PATH_MAX];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return errno = ENAMETOOLONG, -1;
  for (char *s = p + 1;; s++) {
    bool end = *s == '\0';
    if (*s != '/' && !end) continue;
    *s = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) return -1;
    struct stat st;
    if (stat(p, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
    if (end) return 0;
    *s = '/';
  }
}

/* Whether a new file can be made in dir: one is created and removed. */
static int takes_files(const char *dir) {
  char probe[PATH_MAX];
  if (snprintf(probe, sizeof probe, "%s/.kiln-write-probe-XXXXXX", dir) >= (int)sizeof probe)
    return errno = ENAMETOOLONG, -1;
  int fd = mkstemp(probe);
  if (fd < 0) return -1;
  close(fd);
  unlink(probe);
  return 0;
}

/* The folder that output `path` is written in: a file's (its symlinks followed), or the path
 * itself when it is a folder output (is_dir). */
static void folder_of(const char *path, bool is_dir, char *out, size_t cap) {
  char real[PATH_MAX];
  if (is_dir || kiln_file_resolve(path, real, sizeof real) != 0)
    snprintf(real, sizeof real, "%s", path);
  if (is_dir) {
    snprintf(out, cap, "%s", real);
    return;
  }
  char *slash = strrchr(real, '/');
  if (!slash)
    snprintf(out, cap, ".");
  else if (slash == real)
    snprintf(out, cap, "/");
  else
    snprintf(out, cap, "%.*s", (int)(slash - real), real);
}

static int ready(const char *cmd, const char *opt, const char *path, bool is_dir) {
  char dir[PATH_MAX];
  folder_of(path, is_dir, dir, sizeof dir);
  if (make_dirs(dir) == 0 && takes_files(dir) == 0) return 0;
  fprintf(stderr, "kiln %s: error: %s '%s': cannot write in '%s': %s (nothing was done)\n", cmd,
          opt, path, dir, strerror(errno));
  return 2;
}

int tune_prepare_outputs(const TuneOpts *o) {
  const char *cmd = tune_flow_command(o->flow);
  bool lib = o->flow == TUNE_FLOW_LIB;
  int rc = 0;
  if (!rc && o->cache && !lib)
    rc = ready(cmd, "--cache", o->cache, false); /* kiln lib only reads it */
  if (!rc && o->svg) rc = ready(cmd, "--report-svg", o->svg, false);
  if (!rc && o->lib_dir) rc = ready(cmd, lib ? "-o" : "--emit-lib", o->lib_dir, true);
  if (!rc && o->bundle_dir) rc = ready(cmd, "--emit-bundle", o->bundle_dir, true);
  return rc;
}
