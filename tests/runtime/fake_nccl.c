/* A stand-in libnccl.so.2 for machines without GPUs: the entry points the cuda device's
 * collectives resolve (runtime/cuda_nccl.c), each writing a line of what it was asked to the
 * file KILN_FAKE_NCCL_LOG names, so that a test can read how the runtime drives NCCL:
 *   init_all N D0 D1 ...           ncclCommInitAll over N devices of those ordinals
 *   group_start / group_end
 *   all_reduce R SEND RECV COUNT TYPE OP STREAM
 *                                  on the communicator of rank R (addresses in hex)
 *   destroy R
 * Nothing is summed: the fake driver's memory is not backed. KILN_FAKE_NCCL_FAIL=init makes
 * ncclCommInitAll fail (ncclSystemError, 2). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct FakeComm {
  int rank;
} FakeComm;

/* One line of the log. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...) {
  const char *path = getenv("KILN_FAKE_NCCL_LOG");
  FILE *f = path && *path ? fopen(path, "a") : NULL;
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

int ncclCommInitAll(FakeComm **comms, int ndev, const int *devlist) {
  const char *fail = getenv("KILN_FAKE_NCCL_FAIL");
  if (fail && !strcmp(fail, "init")) return 2;
  char line[512];
  int len = snprintf(line, sizeof line, "init_all %d", ndev);
  for (int r = 0; r < ndev && len < (int)sizeof line; r++)
    len += snprintf(line + len, sizeof line - (size_t)len, " %d", devlist[r]);
  say("%s", line);
  for (int r = 0; r < ndev; r++) {
    comms[r] = calloc(1, sizeof **comms);
    if (!comms[r]) return 1;
    comms[r]->rank = r;
  }
  return 0;
}

int ncclCommDestroy(FakeComm *comm) {
  say("destroy %d", comm->rank);
  free(comm);
  return 0;
}

int ncclGroupStart(void) {
  say("group_start");
  return 0;
}

int ncclGroupEnd(void) {
  say("group_end");
  return 0;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, FakeComm *comm,
                  void *stream) {
  say("all_reduce %d %#llx %#llx %zu %d %d %#llx", comm->rank, (unsigned long long)(uintptr_t)send,
      (unsigned long long)(uintptr_t)recv, count, type, op, (unsigned long long)(uintptr_t)stream);
  return 0;
}

const char *ncclGetErrorString(int result) {
  return result == 2 ? "fake NCCL: unhandled system error" : "fake NCCL: other";
}
