/* file.c — whole-file reads, read-only mappings and atomic writes (see bert_file.h for why each
 * exists). Reads and atomic writes are the shared ones (kiln_base.h: mkstemp next to the
 * target, write, fflush + fsync, rename over the target, fsync the directory so that the
 * rename itself survives a crash); here they gain the trainer's status and messages. */
#include "bert_file.h"
#include "bert_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

KilnBertStatus kiln_bert_file_read(const char *path, size_t max, const char *limit_name,
                                   char **data, size_t *len) {
  char *buf = kiln_file_read_max(path, len, max);
  if (!buf && errno == EFBIG)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: larger than %s (%zu MiB); refused", path,
                          limit_name, max >> 20);
  if (!buf)
    return kiln_bert_fail(errno == ENOMEM ? KILN_BERT_ERROR_OUT_OF_MEMORY : KILN_BERT_ERROR_IO,
                          "%s: %s", path, strerror(errno));
  *data = buf;
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
  if (!(af->path = strdup(path)))
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  if (kiln_atomic_begin(&af->file, path) != 0) {
    int e = errno;
    free(af->path);
    af->path = NULL;
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: cannot create a temporary file next to it: %s",
                          path, strerror(e));
  }
  return KILN_BERT_OK;
}

void kiln_bert_file_write(KilnBertAtomicFile *af, const void *data, size_t n) {
  kiln_atomic_write(&af->file, data, n);
}

void kiln_bert_file_abort(KilnBertAtomicFile *af) {
  kiln_atomic_abort(&af->file);
  free(af->path);
  af->path = NULL;
}

KilnBertStatus kiln_bert_file_commit(KilnBertAtomicFile *af) {
  KilnBertStatus st = KILN_BERT_OK;
  if (kiln_atomic_commit(&af->file) != 0)
    st = kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", af->path, strerror(errno));
  free(af->path);
  af->path = NULL;
  return st;
}

KilnBertStatus kiln_bert_file_write_atomic(const char *path, const void *data, size_t n) {
  KilnBertAtomicFile af;
  KilnBertStatus st = kiln_bert_file_begin(path, &af);
  if (st != KILN_BERT_OK) return st;
  kiln_bert_file_write(&af, data, n);
  return kiln_bert_file_commit(&af);
}
