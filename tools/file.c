/* file.c — how every Kiln command writes a file, and when two paths are one file.
 *
 * Outputs (objects, libraries, caches, reports, manifests) are written to a temp file in the
 * target's directory, fsync'ed and renamed over the target: a reader sees the old file or the
 * new one, never half of one, and a failed write leaves the old file alone. Two things a plain
 * rename would get wrong are handled here once for all writers:
 *   - a symlink is followed: the file it points to is replaced (through a temp file in that
 *     file's directory), so a cache shared through a link stays shared;
 *   - the new file gets the mode an ordinary create would (0666 less the umask) rather than
 *     mkstemp's 0600, and a file that exists keeps its mode.
 * No MLIR here: the runtime-only tuner (kiln-tune-runner) compiles this file too. */
#include "kiln_driver.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool kiln_file_same(const char *a, const char *b) {
  struct stat sa, sb;
  return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

int kiln_file_resolve(const char *path, char *out, size_t cap) {
  if (snprintf(out, cap, "%s", path) >= (int)cap) return errno = ENAMETOOLONG, -1;
  for (int hops = 0;; hops++) {
    struct stat st;
    if (lstat(out, &st) != 0 || !S_ISLNK(st.st_mode)) return 0; /* a file, or none yet */
    if (hops == 40) return errno = ELOOP, -1;
    char link[PATH_MAX];
    ssize_t n = readlink(out, link, sizeof link - 1);
    if (n < 0) return -1;
    link[n] = '\0';
    char next[PATH_MAX];
    const char *slash = strrchr(out, '/');
    int w = link[0] == '/' || !slash
                ? snprintf(next, sizeof next, "%s", link)
                : snprintf(next, sizeof next, "%.*s/%s", (int)(slash - out), out, link);
    if (w < 0 || (size_t)w >= sizeof next || (size_t)w >= cap) return errno = ENAMETOOLONG, -1;
    memcpy(out, next, (size_t)w + 1);
  }
}

/* The mode of the file that replaces `target`: its own when it exists, else a plain create's. */
static mode_t new_mode(const char *target) {
  struct stat st;
  if (stat(target, &st) == 0) return st.st_mode & 07777;
  mode_t mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

int kiln_file_write_atomic(const char *path, const void *data, size_t size) {
  char target[PATH_MAX], tmp[PATH_MAX + 16];
  if (kiln_file_resolve(path, target, sizeof target) != 0) return -1;
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", target);
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  FILE *f = fchmod(fd, new_mode(target)) == 0 ? fdopen(fd, "wb") : NULL;
  if (!f) {
    int saved = errno;
    close(fd);
    unlink(tmp);
    errno = saved;
    return -1;
  }
  errno = 0;
  size_t put = fwrite(data, 1, size, f);
  int bad = put != size || fflush(f) != 0 || fsync(fileno(f)) != 0;
  if (fclose(f) != 0 || bad || rename(tmp, target) != 0) {
    int saved = errno ? errno : EIO;
    unlink(tmp);
    errno = saved;
    return -1;
  }
  return 0;
}
