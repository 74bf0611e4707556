/* cleanup.c - temp files and directories removed when the process is interrupted.
 *
 * `kiln tune` keeps a temp directory of built variants and every atomic write keeps a temp file
 * beside its target until the rename; an ordinary exit removes them, but SIGINT (Ctrl-C),
 * SIGTERM and SIGHUP used to end the process with them left behind.  Paths registered here are
 * removed by a handler for those signals, which then ends the process by the same signal with
 * its default action (so the exit status a shell sees is unchanged).
 *
 * The handler may interrupt anything, malloc included, so it uses only async-signal-safe calls:
 * the registry is a fixed table of slots claimed with atomic operations (no allocation), and a
 * directory is emptied with open/getdents64/unlinkat on a stack buffer (Linux; elsewhere an
 * empty directory is removed).  Each slot records the process that registered it: a forked
 * child shares the table but removes only what it registered itself, never its parent's
 * directory.  The handlers are installed on the first registration and only for signals whose
 * action is still the default: a program with its own handler keeps it (and its duty to clean
 * up). */
#include "kiln_base.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

enum { SLOTS = 64, PATH_CAP = 4096, MAX_DEPTH = 8 };

typedef struct Slot {
  atomic_int state; /* 0 free, 1 being filled or emptied, 2 live */
  pid_t owner;
  char path[PATH_CAP];
} Slot;

static Slot slots[SLOTS];
static atomic_int installed;
static const int signals[] = {SIGINT, SIGTERM, SIGHUP};

/* ---------------------------------------------------------------- removal (signal-safe) */

#ifdef __linux__
struct dirent64_raw {
  unsigned long long ino;
  long long off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

/* Removes everything inside the directory fd (depth-limited: the tuner's directories are one or
 * two levels deep). Entries are unlinked as they are listed, so the listing is re-read until
 * it has nothing left to remove. */
static void empty_dir(int fd, int depth) {
  char buf[4096] __attribute__((aligned(8)));
  for (;;) {
    long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) return;
    for (long off = 0; off < n;) {
      struct dirent64_raw *d = (struct dirent64_raw *)(buf + off);
      off += d->reclen;
      const char *name = d->name;
      if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
      if (unlinkat(fd, name, 0) == 0 || depth >= MAX_DEPTH) continue;
      int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) continue;
      empty_dir(sub, depth + 1);
      close(sub);
      unlinkat(fd, name, AT_REMOVEDIR);
    }
  }
}
#endif

static void remove_path(const char *path) {
  if (unlink(path) == 0 || errno == ENOENT) return;
#ifdef __linux__
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  /* A child of ours that is still dying may add a file between the listing and rmdir: list
   * again from the start, a few times. */
  for (int tries = 0; tries < 20; tries++) {
    lseek(fd, 0, SEEK_SET);
    empty_dir(fd, 0);
    if (rmdir(path) == 0 || errno != ENOTEMPTY) break;
    struct timespec pause = {0, 5000000};
    nanosleep(&pause, NULL);
  }
  close(fd);
#else
  rmdir(path);
#endif
}

static void on_signal(int sig) {
  int saved = errno;
  pid_t self = getpid();
  for (int i = 0; i < SLOTS; i++)
    if (atomic_load(&slots[i].state) == 2 && slots[i].owner == self) remove_path(slots[i].path);
  errno = saved;
  /* SA_RESETHAND restored the default action; the signal is blocked until we return, and then
   * ends the process as if no handler had run. */
  raise(sig);
}

/* ---------------------------------------------------------------- the registry */

static void install_handlers(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&installed, &expected, 1)) return;
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
    struct sigaction old;
    if (sigaction(signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigfillset(&sa.sa_mask); /* no second signal while the table is walked */
    sigaction(signals[i], &sa, NULL);
  }
}

int kiln_cleanup_register(const char *path) {
  if (!path || strlen(path) >= PATH_CAP) return -1;
  install_handlers();
  for (int i = 0; i < SLOTS; i++) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&slots[i].state, &expected, 1)) continue;
    slots[i].owner = getpid();
    memcpy(slots[i].path, path, strlen(path) + 1);
    atomic_store(&slots[i].state, 2);
    return i;
  }
  return -1; /* full: the path is still removed on every ordinary exit path */
}

void kiln_cleanup_unregister(int id) {
  if (id >= 0 && id < SLOTS) atomic_store(&slots[id].state, 0);
}
