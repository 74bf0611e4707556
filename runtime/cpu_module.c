/* cpu_module.c — turns a host object or shared object image into a dlopen handle.
 *
 * dlopen needs a file, so the image goes into a private directory made by mkdtemp under $TMPDIR
 * (or /tmp). A relocatable object is first linked into a shared object by the system C compiler,
 * run through posix_spawnp with an explicit argv (no shell, so no quoting issues) and its output
 * captured into the directory so that a failed link reports the linker's own words. Every file
 * and the directory are removed right after dlopen: the mapping keeps the code alive, and nothing
 * is left behind even if the process later crashes. A host shared object (what generated
 * libraries embed: kiln_rt_host_object_link ran the compiler when the library was built) is
 * opened as it is, so a program that uses a generated library needs no compiler.
 */
#include "device_impl.h"
#include "kiln_base.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct TempDir {
  char dir[4096];
  char obj[4200], so[4200], log[4200];
} TempDir;

static KilnRtStatus temp_dir_make(TempDir *t) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  int n = snprintf(t->dir, sizeof t->dir, "%s/kilnrt-XXXXXX", base);
  if (n < 0 || (size_t)n >= sizeof t->dir)
    return kiln_rt_fail(KILN_RT_ERROR_IO, "TMPDIR is too long: %s", base);
  if (!mkdtemp(t->dir))
    return kiln_rt_fail(KILN_RT_ERROR_IO, "cannot create a temp directory in %s: %s", base,
                        strerror(errno));
  snprintf(t->obj, sizeof t->obj, "%s/m.o", t->dir);
  snprintf(t->so, sizeof t->so, "%s/m.so", t->dir);
  snprintf(t->log, sizeof t->log, "%s/cc.log", t->dir);
  return KILN_RT_OK;
}

static void temp_dir_remove(TempDir *t) {
  unlink(t->obj);
  unlink(t->so);
  unlink(t->log);
  rmdir(t->dir);
}

static KilnRtStatus write_file(const char *path, const void *data, size_t size) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return kiln_rt_fail(KILN_RT_ERROR_IO, "cannot create %s: %s", path, strerror(errno));
  const char *p = data;
  while (size > 0) {
    ssize_t w = write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      return kiln_rt_fail(KILN_RT_ERROR_IO, "cannot write %s: %s", path, strerror(e));
    }
    p += w;
    size -= (size_t)w;
  }
  if (close(fd) != 0)
    return kiln_rt_fail(KILN_RT_ERROR_IO, "cannot write %s: %s", path, strerror(errno));
  return KILN_RT_OK;
}

/* The start of the compiler's log, for the error message. */
static void read_log(const char *path, char *buf, size_t cap) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = '\0';
}

/* Runs `$KILN_CC -shared -o m.so m.o -lm` (KILN_CC defaults to cc), output into cc.log. */
static KilnRtStatus link_shared(TempDir *t) {
  const char *cc = getenv("KILN_CC");
  if (!cc || !*cc) cc = "cc";
  char *argv[] = {(char *)cc, "-shared", "-o", t->so, t->obj, "-lm", NULL};

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, t->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid;
  int err = posix_spawnp(&pid, cc, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err)
    return kiln_rt_fail(KILN_RT_ERROR_LOAD, "cannot run the C compiler '%s' (set KILN_CC): %s", cc,
                        strerror(err));

  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR)
      return kiln_rt_fail(KILN_RT_ERROR_LOAD, "waiting for '%s': %s", cc, strerror(errno));
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return KILN_RT_OK;

  char log[2048];
  read_log(t->log, log, sizeof log);
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127)
    return kiln_rt_fail(KILN_RT_ERROR_LOAD, "cannot run the C compiler '%s' (set KILN_CC): %s", cc,
                        log);
  return kiln_rt_fail(KILN_RT_ERROR_LOAD,
                      "linking the host object failed ('%s -shared', %s %d): %s", cc,
                      WIFEXITED(wstatus) ? "exit status" : "signal",
                      WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus), log);
}

/* The linked shared object, bounded by KILN_MAX_MODULE_BYTES: KILN_CC is whatever program the
 * user named, and its output is read into memory whole (then embedded in a library). */
static KilnRtStatus read_file(const char *path, void **data, size_t *size) {
  char *buf = kiln_file_read_max(path, size, KILN_MAX_MODULE_BYTES);
  if (!buf || *size == 0) {
    char why[4400];
    free(buf);
    if (buf) return kiln_rt_fail(KILN_RT_ERROR_IO, "cannot read %s: empty file", path);
    return kiln_rt_fail(KILN_RT_ERROR_IO, "%s",
                        kiln_file_read_error(why, sizeof why, "linked shared object", path,
                                             "KILN_MAX_MODULE_BYTES", KILN_MAX_MODULE_BYTES));
  }
  *data = buf;
  return KILN_RT_OK;
}

KilnRtStatus kiln_rt_host_object_link(const void *object, size_t size, void **so, size_t *so_size) {
  if (!object || !size || !so || !so_size)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "kiln_rt_host_object_link: object, so and so_size must not be NULL");
  *so = NULL;
  *so_size = 0;
  TempDir t;
  KilnRtStatus st = temp_dir_make(&t);
  if (st != KILN_RT_OK) return st;
  st = write_file(t.obj, object, size);
  if (st == KILN_RT_OK) st = link_shared(&t);
  if (st == KILN_RT_OK) st = read_file(t.so, so, so_size);
  temp_dir_remove(&t);
  return st;
}

KilnRtStatus kiln_rt_cpu_module_open(KilnRtModuleFormat format, const void *image, size_t size,
                                     void **handle) {
  if (format != KILN_RT_MODULE_HOST_OBJECT && format != KILN_RT_MODULE_HOST_SHARED)
    return kiln_rt_fail(KILN_RT_ERROR_UNSUPPORTED,
                        "the cpu device loads host objects and host shared objects only");
  TempDir t;
  KilnRtStatus st = temp_dir_make(&t);
  if (st != KILN_RT_OK) return st;

  bool is_object = format == KILN_RT_MODULE_HOST_OBJECT;
  st = write_file(is_object ? t.obj : t.so, image, size);
  if (st == KILN_RT_OK && is_object) st = link_shared(&t);
  if (st == KILN_RT_OK) {
    dlerror();
    void *h = dlopen(t.so, RTLD_LOCAL | RTLD_NOW);
    if (h) {
      *handle = h;
    } else {
      const char *why = dlerror();
      st = kiln_rt_fail(KILN_RT_ERROR_LOAD, "cannot load the module: %s",
                        why ? why : "dlopen failed");
    }
  }
  temp_dir_remove(&t);
  return st;
}
