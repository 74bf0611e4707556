/* probe.c — the device the tuner times on: its cache identity, compiler target and limits,
 * learned in a child process. Shared by `kiln tune` and the runtime-only bundle runner. */
#include "tune_core.h"

#include <kiln/kilnrt.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void cpu_model(char *buf, size_t cap) {
  snprintf(buf, cap, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
      char *v = strchr(line, ':') + 1;
      while (*v == ' ') v++;
      v[strcspn(v, "\n")] = '\0';
      snprintf(buf, cap, "%s", v);
      break;
    }
  if (f) fclose(f);
}

typedef struct ProbeShared {
  int ok;
  KilnRtDeviceInfo info;
  char err[256];
} ProbeShared;

/* The device is opened in a child: the tuner forks children later, and a CUDA context (or a
 * started CPU thread pool) must never be inherited across fork. */
int tune_target_probe(TuneTarget *t, char *err, size_t cap) {
  ProbeShared *sh =
      mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return snprintf(err, cap, "cannot map shared memory"), -1;
  fflush(NULL);
  pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    tune_child_dies_with_parent(parent);
    KilnRtDevice *dev;
    if (kiln_rt_device_create(t->spec, &dev) == KILN_RT_OK &&
        kiln_rt_device_info(dev, &sh->info) == KILN_RT_OK)
      sh->ok = 1;
    else
      snprintf(sh->err, sizeof sh->err, "%s", kiln_rt_last_error());
    _exit(0);
  }
  int status = 0;
  if (pid > 0)
    while (waitpid(pid, &status, 0) < 0) continue;
  int rc = 0;
  const KilnRtDeviceInfo *in = &sh->info;
  if (!sh->ok) {
    snprintf(err, cap, "device '%s': %s", t->spec, sh->err[0] ? sh->err : "probe failed");
    rc = -1;
  } else if (in->kind == KILN_RT_DEVICE_CUDA) {
    t->device_mem = in->total_mem;
    snprintf(t->device_id, sizeof t->device_id, "cuda:%s:sm_%d%d:sms=%d:drv=%d", in->name,
             in->cc_major, in->cc_minor, in->sm_count, in->driver_version);
    t->target = in->cc_major >= 9 ? KILN_TARGET_SM90 : KILN_TARGET_SM80;
    t->limits = (TuneDeviceLimits){1024, 256 * 1024};
    t->flush_bytes =
        256u << 20; /* several times the L2 of any GPU Kiln targets (H100/H200: 50-60 MiB) */
  } else {
    char model[200];
    cpu_model(model, sizeof model);
    snprintf(t->device_id, sizeof t->device_id, "%s:%s:threads=%d:cpu=%s",
             in->kind == KILN_RT_DEVICE_EMU ? "emu" : "cpu", model, in->num_threads,
             t->cpu[0] ? t->cpu : "native");
    t->target = in->kind == KILN_RT_DEVICE_EMU ? KILN_TARGET_EMU : KILN_TARGET_CPU;
    t->device_mem = in->total_mem; /* the host's */
    /* cpu programs keep tiles on 64 MiB worker stacks, several tiles live at once */
    t->limits = (TuneDeviceLimits){1024, in->kind == KILN_RT_DEVICE_EMU ? 256 * 1024 : 8u << 20};
  }
  /* 64-bit variants are other code: their timings are another device's, for the cache. */
  if (rc == 0 && t->index_bits == 64) {
    size_t n = strlen(t->device_id);
    snprintf(t->device_id + n, sizeof t->device_id - n, "%s", TUNE_INDEX_BITS_64_ID);
  }
  munmap(sh, sizeof *sh);
  return rc;
}
