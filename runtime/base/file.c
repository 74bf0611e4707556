/* file.c - how every Kiln program reads a whole file and writes one atomically, and when two
 * paths are one file.
 *
 * Outputs (objects, libraries, caches, reports, manifests, checkpoints) are written to a temp
 * file in the target's directory, fsync'ed and renamed over the target: a reader sees the old
 * file or the new one, never half of one, and a failed write leaves the old file alone.  The
 * directory is synced after the rename so that the rename itself survives a crash.  Two things
 * a plain rename would get wrong are handled here once for all writers:
 *   - a symlink is followed: the file it points to is replaced (through a temp file in that
 *     file's directory), so a cache shared through a link stays shared;
 *   - the new file gets the mode an ordinary create would (0666 less the umask) rather than
 *     mkstemp's 0600, and a file that exists keeps its mode.
 * The temp file is registered with cleanup.c until it is renamed or removed, so SIGINT or
 * SIGTERM during a write leaves no temp file behind either. */
#include "kiln_base.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- reading */

/* Doubling stops short of overflowing size_t; memory runs out long before. */
#define READ_LIMIT (SIZE_MAX / 4)

/* A regular file says its size: one too large is refused before a byte is read (a sparse
 * file of a terabyte would otherwise cost `max` bytes of reading first).  Devices, FIFOs and
 * /proc files have no size to trust and are bounded as they are read. */
static bool known_too_large(FILE *f, size_t max) {
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  off_t at = ftello(f);
  return at >= 0 && st.st_size > at && (uintmax_t)(st.st_size - at) > (uintmax_t)max;
}

char *kiln_file_read_stream_max(FILE *f, size_t *len, size_t max) {
  if (known_too_large(f, max)) return errno = EFBIG, NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n > max) { /* checked as it grows: /dev/zero or a FIFO has no size to look at first */
      free(buf);
      buf = NULL;
      errno = EFBIG;
      break;
    }
    if (n < cap) break;
    char *bigger = cap >= READ_LIMIT ? NULL : realloc(buf, cap * 2 + 1);
    if (!bigger) {
      free(buf);
      buf = NULL;
      errno = cap >= READ_LIMIT ? EFBIG : ENOMEM;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  if (buf && ferror(f)) {
    free(buf);
    buf = NULL;
    errno = EIO;
  }
  if (buf) {
    buf[n] = '\0';
    if (len) *len = n;
  }
  return buf;
}

char *kiln_file_read_stream(FILE *f, size_t *len) {
  return kiln_file_read_stream_max(f, len, SIZE_MAX);
}

char *kiln_file_read_max(const char *path, size_t *len, size_t max) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = kiln_file_read_stream_max(f, len, max);
  int saved = errno;
  fclose(f);
  errno = saved;
  return buf;
}

char *kiln_file_read(const char *path, size_t *len) {
  return kiln_file_read_max(path, len, SIZE_MAX);
}

const char *kiln_file_read_error(char *buf, size_t cap, const char *what, const char *path,
                                 const char *limit_name, size_t limit) {
  if (errno == EFBIG)
    snprintf(buf, cap, "the %s '%s' is larger than %s (%zu MiB); refused", what, path, limit_name,
             limit >> 20);
  else
    snprintf(buf, cap, "cannot read the %s '%s': %s", what, path, strerror(errno));
  return buf;
}

/* ---------------------------------------------------------------- paths */

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

/* ---------------------------------------------------------------- atomic writes */

/* The mode of the file that replaces `target`: its own when it exists, else a plain create's. */
static mode_t new_mode(const char *target) {
  struct stat st;
  if (stat(target, &st) == 0) return st.st_mode & 07777;
  mode_t mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

static void release(KilnAtomicFile *af) {
  kiln_cleanup_unregister(af->cleanup - 1);
  free(af->target);
  free(af->tmp);
  memset(af, 0, sizeof *af);
}

int kiln_atomic_begin(KilnAtomicFile *af, const char *path) {
  memset(af, 0, sizeof *af);
  char target[PATH_MAX];
  if (kiln_file_resolve(path, target, sizeof target) != 0) return -1;
  size_t n = strlen(target);
  af->target = strdup(target);
  af->tmp = malloc(n + sizeof ".tmp.XXXXXX");
  if (!af->target || !af->tmp) {
    release(af);
    return errno = ENOMEM, -1;
  }
  memcpy(af->tmp, target, n);
  memcpy(af->tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
  int fd = mkstemp(af->tmp);
  if (fd < 0) {
    int saved = errno;
    release(af);
    return errno = saved, -1;
  }
  af->cleanup = kiln_cleanup_register(af->tmp) + 1; /* gone if a signal ends us before commit */
  if (fchmod(fd, new_mode(af->target)) != 0 || !(af->f = fdopen(fd, "wb"))) {
    int saved = errno;
    close(fd);
    unlink(af->tmp);
    release(af);
    return errno = saved, -1;
  }
  return 0;
}

void kiln_atomic_write(KilnAtomicFile *af, const void *data, size_t n) {
  if (af->err || n == 0) return;
  errno = 0;
  if (fwrite(data, 1, n, af->f) != n) af->err = errno ? errno : EIO;
}

void kiln_atomic_abort(KilnAtomicFile *af) {
  if (af->f) fclose(af->f);
  if (af->tmp) unlink(af->tmp);
  release(af);
}

/* Makes the rename durable; a file system that cannot sync directories is not an error. */
static void sync_dir(const char *target) {
  const char *slash = strrchr(target, '/');
  char dir[PATH_MAX];
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else
    snprintf(dir, sizeof dir, "%.*s", slash == target ? 1 : (int)(slash - target), target);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

int kiln_atomic_commit(KilnAtomicFile *af) {
  int err = af->err;
  errno = 0;
  if (!err && (fflush(af->f) != 0 || fsync(fileno(af->f)) != 0)) err = errno ? errno : EIO;
  if (fclose(af->f) != 0 && !err) err = errno ? errno : EIO;
  af->f = NULL;
  if (!err && rename(af->tmp, af->target) != 0) err = errno ? errno : EIO;
  if (err) {
    kiln_atomic_abort(af);
    return errno = err, -1;
  }
  sync_dir(af->target);
  release(af);
  return 0;
}

int kiln_file_write_atomic(const char *path, const void *data, size_t size) {
  KilnAtomicFile af;
  if (kiln_atomic_begin(&af, path) != 0) return -1;
  kiln_atomic_write(&af, data, size);
  return kiln_atomic_commit(&af);
}
