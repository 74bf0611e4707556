/* file.c — whole-file reads, read-only mappings and atomic writes (see bert_file.h for why each
 * exists). An atomic write is: mkstemp next to the target, write, fflush + fsync, rename over
 * the target, fsync the directory so that the rename itself survives a crash. */
#include "bert_file.h"
#include "bert_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

KilnBertStatus kiln_bert_file_read(const char *path, char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", path, strerror(errno));
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (kiln_bert_grow((void **)&buf, &cap, n + 65536 + 1, 1) != 0) {
      free(buf);
      fclose(f);
      return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory reading it", path);
    }
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
  }
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (err) {
    free(buf);
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", path, strerror(err ? err : EIO));
  }
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_file_map(const char *path, KilnBertFileMap *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: not a regular file", path);
  }
  KilnBertFileMap m = {NULL, (size_t)st.st_size};
  if (m.size > 0) {
    void *p = mmap(NULL, m.size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      close(fd);
      return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: cannot map it: %s", path, strerror(e));
    }
    m.data = p;
  }
  close(fd);
  *out = m;
  return KILN_BERT_OK;
}

void kiln_bert_file_unmap(KilnBertFileMap *map) {
  if (map->data) munmap((void *)map->data, map->size);
  map->data = NULL;
  map->size = 0;
}

KilnBertStatus kiln_bert_file_begin(const char *path, KilnBertAtomicFile *af) {
  memset(af, 0, sizeof *af);
  size_t n = strlen(path);
  af->path = strdup(path);
  af->tmp = malloc(n + sizeof ".tmp.XXXXXX");
  if (!af->path || !af->tmp) {
    free(af->path);
    free(af->tmp);
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  memcpy(af->tmp, path, n);
  memcpy(af->tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
  int fd = mkstemp(af->tmp);
  if (fd < 0) {
    int e = errno;
    free(af->path);
    free(af->tmp);
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: cannot create a temporary file next to it: %s",
                          path, strerror(e));
  }
  mode_t mask = umask(0); /* mkstemp makes 0600; give the file the mode a plain create would */
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) != 0 || !(af->f = fdopen(fd, "wb"))) {
    int e = errno;
    close(fd);
    unlink(af->tmp);
    free(af->path);
    free(af->tmp);
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", path, strerror(e));
  }
  return KILN_BERT_OK;
}

void kiln_bert_file_write(KilnBertAtomicFile *af, const void *data, size_t n) {
  if (af->err || n == 0) return;
  if (fwrite(data, 1, n, af->f) != n) af->err = errno ? errno : EIO;
}

static void release(KilnBertAtomicFile *af) {
  free(af->path);
  free(af->tmp);
  memset(af, 0, sizeof *af);
}

void kiln_bert_file_abort(KilnBertAtomicFile *af) {
  if (af->f) fclose(af->f);
  if (af->tmp) unlink(af->tmp);
  release(af);
}

/* Makes the rename durable; a file system that cannot sync directories is not an error. */
static void sync_dir(const char *path) {
  char *copy = strdup(path);
  if (!copy) return;
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(copy);
}

KilnBertStatus kiln_bert_file_commit(KilnBertAtomicFile *af) {
  int err = af->err;
  if (!err && (fflush(af->f) != 0 || fsync(fileno(af->f)) != 0)) err = errno ? errno : EIO;
  if (fclose(af->f) != 0 && !err) err = errno ? errno : EIO;
  af->f = NULL;
  if (!err && rename(af->tmp, af->path) != 0) err = errno ? errno : EIO;
  if (err) {
    KilnBertStatus st = kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", af->path, strerror(err));
    kiln_bert_file_abort(af);
    return st;
  }
  sync_dir(af->path);
  release(af);
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_file_write_atomic(const char *path, const void *data, size_t n) {
  KilnBertAtomicFile af;
  KilnBertStatus st = kiln_bert_file_begin(path, &af);
  if (st != KILN_BERT_OK) return st;
  kiln_bert_file_write(&af, data, n);
  return kiln_bert_file_commit(&af);
}
