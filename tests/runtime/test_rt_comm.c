/* Collectives over several devices (kiln_rt_comm_*, runtime/comm.c and runtime/cuda_nccl.c).
 *
 *   test_rt_comm host   three cpu devices (and three emu devices where the runtime has them):
 *                       the host path's sum of 1, 2 and 3 buffers of 1 to 100003 floats (values
 *                       of every magnitude and sign) is the rank-order f32 sum, bit for bit, in
 *                       every buffer, on the devices' streams and on the default one; refusals
 *                       (no devices, a NULL or repeated device, mixed kinds, a NULL buffer, a
 *                       stream of another device).
 *   test_rt_comm nccl   two GPUs of the fake driver (KILN_FAKE_CUDA_DEVICES=2) and the fake
 *                       libnccl.so.2 (fake_nccl.c, through KILN_NCCL_LIBRARY): the communicator
 *                       takes NCCL's path, made by ncclCommInitAll over ordinals 0 and 1; an
 *                       all-reduce is one in-place ncclAllReduce per rank (f32: type 7, sum: op
 *                       0, the count given, each on its device's stream) inside one group; a
 *                       failing ncclCommInitAll is an error naming it. Skips (77) where
 *                       libcuda is a real driver.
 *   test_rt_comm no-nccl  the same two GPUs without NCCL (KILN_NCCL_LIBRARY names no file):
 *                       the host path. */
#include "rt_test.h"

#include <dlfcn.h>
#include <math.h>

/* A float of every magnitude and sign, from a counter (no two calls alike). */
static float value(uint64_t *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  uint32_t bits = (uint32_t)(*state >> 33);
  float mant = 1.0f + (float)(bits & 0xffff) / 65536.0f;
  int exp = (int)((bits >> 16) % 40) - 20;
  return ((bits >> 31) ? -1.0f : 1.0f) * ldexpf(mant, exp);
}

/* n devices of `kind`, their streams, and a sum over `count` floats, checked bit for bit. */
static void host_sum(const char *kind, int n, size_t count, int use_streams) {
  KilnRtDevice *devs[3] = {0};
  KilnRtStream *streams[3] = {0};
  float *bufs[3] = {0}, *host[3] = {0}, *want = calloc(count, sizeof *want), *got = NULL;
  uint64_t state = count * 7 + (uint64_t)n;
  for (int r = 0; r < n; r++) {
    CHECK_OK(kiln_rt_device_create(kind, &devs[r]));
    if (!devs[r]) return;
    if (use_streams) CHECK_OK(kiln_rt_stream_create(devs[r], &streams[r]));
    CHECK_OK(kiln_rt_malloc(devs[r], count * sizeof(float), (void **)&bufs[r]));
    host[r] = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++) host[r][i] = value(&state);
    CHECK_OK(kiln_rt_memcpy_htod(devs[r], bufs[r], host[r], count * sizeof(float), NULL));
  }
  /* the rank-order sum in f32 */
  for (size_t i = 0; i < count; i++) {
    float s = host[0][i];
    for (int r = 1; r < n; r++) s += host[r][i];
    want[i] = s;
  }
  KilnRtComm *comm = NULL;
  CHECK_OK(kiln_rt_comm_create(devs, n, &comm));
  CHECK(comm && !strcmp(kiln_rt_comm_path(comm), "host"), "%s: path %s", kind,
        comm ? kiln_rt_comm_path(comm) : "-");
  CHECK_OK(kiln_rt_comm_allreduce_sum_f32(comm, bufs, count, use_streams ? streams : NULL));
  got = malloc(count * sizeof *got);
  for (int r = 0; r < n; r++) {
    CHECK_OK(kiln_rt_memcpy_dtoh(devs[r], got, bufs[r], count * sizeof(float), NULL));
    size_t bad = count;
    for (size_t i = 0; i < count && bad == count; i++)
      if (memcmp(&got[i], &want[i], sizeof(float)) != 0) bad = i;
    CHECK(bad == count, "%s, %d devices, %zu floats: device %d float %zu is %.9g, want %.9g", kind,
          n, count, r, bad, bad < count ? (double)got[bad] : 0.0,
          bad < count ? (double)want[bad] : 0.0);
  }
  kiln_rt_comm_destroy(comm);
  for (int r = 0; r < n; r++) {
    kiln_rt_free(devs[r], bufs[r]);
    kiln_rt_stream_destroy(streams[r]);
    kiln_rt_device_destroy(devs[r]);
    free(host[r]);
  }
  free(want);
  free(got);
}

static void refusals(void) {
  KilnRtDevice *a = NULL, *b = NULL, *e = NULL;
  CHECK_OK(kiln_rt_device_create("cpu", &a));
  CHECK_OK(kiln_rt_device_create("cpu", &b));
  KilnRtComm *comm = NULL;
  KilnRtDevice *none[1] = {NULL}, *twice[2] = {a, a}, *pair[2] = {a, b};
  CHECK_STATUS(kiln_rt_comm_create(pair, 0, &comm), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_rt_comm_create(none, 1, &comm), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_rt_comm_create(twice, 2, &comm), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(kiln_rt_last_error(), "are one");
  if (kiln_rt_device_create("emu", &e) == KILN_RT_OK) {
    KilnRtDevice *mixed[2] = {a, e};
    CHECK_STATUS(kiln_rt_comm_create(mixed, 2, &comm), KILN_RT_ERROR_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_rt_last_error(), "another kind");
  }
  CHECK(comm == NULL, "a refused communicator was handed out");
  CHECK_OK(kiln_rt_comm_create(pair, 2, &comm));
  float *x = NULL, *y = NULL;
  KilnRtStream *sb = NULL;
  CHECK_OK(kiln_rt_malloc(a, 16, (void **)&x));
  CHECK_OK(kiln_rt_malloc(b, 16, (void **)&y));
  CHECK_OK(kiln_rt_stream_create(b, &sb));
  float *one[2] = {x, NULL}, *both[2] = {x, y};
  KilnRtStream *wrong[2] = {sb, NULL};
  CHECK_STATUS(kiln_rt_comm_allreduce_sum_f32(comm, one, 4, NULL), KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kiln_rt_comm_allreduce_sum_f32(comm, both, 4, wrong),
               KILN_RT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(kiln_rt_last_error(), "another device's");
  CHECK_OK(kiln_rt_comm_allreduce_sum_f32(comm, both, 0, NULL)); /* nothing to sum */
  kiln_rt_comm_destroy(comm);
  kiln_rt_comm_destroy(NULL);
  kiln_rt_stream_destroy(sb);
  kiln_rt_free(a, x);
  kiln_rt_free(b, y);
  kiln_rt_device_destroy(e);
  kiln_rt_device_destroy(b);
  kiln_rt_device_destroy(a);
}

/* The fake NCCL's log, whole. */
static char *read_log(const char *path) {
  size_t n = 0;
  char *text = (char *)rt_test_read_file(path, &n);
  return text ? text : calloc(1, 1);
}

/* The fake driver's symbol `name`, or NULL where libcuda is a real driver. */
static void *fake_symbol(const char *name) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h ? dlsym(h, name) : NULL;
}

/* Two GPUs of the fake driver, or exit 77 where it is not the fake. */
static void two_fake_gpus(KilnRtDevice **devs) {
  if (kiln_rt_device_create("cuda:0", &devs[0]) != KILN_RT_OK ||
      !fake_symbol("fake_cuda_streams_made")) {
    printf("skipped: libcuda is not the fake driver\n");
    kiln_rt_device_destroy(devs[0]);
    exit(77);
  }
  CHECK_OK(kiln_rt_device_create("cuda:1", &devs[1]));
}

static void nccl_path(const char *log, const char *fake_nccl) {
  KilnRtDevice *devs[2] = {0};
  two_fake_gpus(devs);
  void **made = fake_symbol("fake_cuda_streams");
  int *nmade = fake_symbol("fake_cuda_streams_made");
  KilnRtStream *streams[2] = {0};
  void *native[2] = {0};
  float *bufs[2] = {0};
  for (int r = 0; r < 2; r++) {
    CHECK_OK(kiln_rt_stream_create(devs[r], &streams[r]));
    native[r] = made && nmade && *nmade >= 1 && *nmade <= 64 ? made[*nmade - 1] : NULL;
    CHECK_OK(kiln_rt_malloc(devs[r], 1000 * sizeof(float), (void **)&bufs[r]));
  }
  remove(log);
  setenv("KILN_FAKE_NCCL_LOG", log, 1);
  setenv("KILN_NCCL_LIBRARY", fake_nccl, 1);
  KilnRtComm *comm = NULL;
  CHECK_OK(kiln_rt_comm_create(devs, 2, &comm));
  CHECK(comm && !strcmp(kiln_rt_comm_path(comm), "nccl"), "path %s, expected nccl",
        comm ? kiln_rt_comm_path(comm) : "-");
  CHECK_OK(kiln_rt_comm_allreduce_sum_f32(comm, bufs, 1000, streams));
  kiln_rt_comm_destroy(comm);
  char want[1024];
  snprintf(want, sizeof want,
           "init_all 2 0 1\ngroup_start\n"
           "all_reduce 0 %#llx %#llx 1000 7 0 %#llx\n"
           "all_reduce 1 %#llx %#llx 1000 7 0 %#llx\n"
           "group_end\ndestroy 0\ndestroy 1\n",
           (unsigned long long)(uintptr_t)bufs[0], (unsigned long long)(uintptr_t)bufs[0],
           (unsigned long long)(uintptr_t)native[0], (unsigned long long)(uintptr_t)bufs[1],
           (unsigned long long)(uintptr_t)bufs[1], (unsigned long long)(uintptr_t)native[1]);
  char *got = read_log(log);
  CHECK(!strcmp(got, want), "the fake NCCL was asked:\n%s\nexpected:\n%s", got, want);
  free(got);

  /* a failing ncclCommInitAll is an error, not a silent fallback */
  setenv("KILN_FAKE_NCCL_FAIL", "init", 1);
  comm = NULL;
  CHECK_STATUS(kiln_rt_comm_create(devs, 2, &comm), KILN_RT_ERROR_DRIVER);
  CHECK_CONTAINS(kiln_rt_last_error(), "ncclCommInitAll");
  unsetenv("KILN_FAKE_NCCL_FAIL");
  for (int r = 0; r < 2; r++) {
    kiln_rt_free(devs[r], bufs[r]);
    kiln_rt_stream_destroy(streams[r]);
    kiln_rt_device_destroy(devs[r]);
  }
}

/* Without NCCL (KILN_NCCL_LIBRARY names no file) two GPUs take the host path. */
static void no_nccl(void) {
  KilnRtDevice *devs[2] = {0};
  two_fake_gpus(devs);
  setenv("KILN_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  KilnRtComm *comm = NULL;
  CHECK_OK(kiln_rt_comm_create(devs, 2, &comm));
  CHECK(comm && !strcmp(kiln_rt_comm_path(comm), "host"), "path %s, expected host",
        comm ? kiln_rt_comm_path(comm) : "-");
  kiln_rt_comm_destroy(comm);
  kiln_rt_device_destroy(devs[1]);
  kiln_rt_device_destroy(devs[0]);
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "host")) {
    for (int n = 1; n <= 3; n++)
      for (size_t count = 1; count <= 100003; count = count * 17 + 3) {
        host_sum("cpu", n, count, 1);
        host_sum("cpu", n, count, 0);
      }
    KilnRtDevice *e = NULL;
    if (kiln_rt_device_create("emu", &e) == KILN_RT_OK) {
      kiln_rt_device_destroy(e);
      host_sum("emu", 3, 4099, 1);
    }
    refusals();
  } else if (argc >= 4 && !strcmp(argv[1], "nccl")) {
    nccl_path(argv[2], argv[3]);
  } else if (argc >= 2 && !strcmp(argv[1], "no-nccl")) {
    no_nccl();
  } else {
    fprintf(stderr, "usage: test_rt_comm host | nccl LOG FAKE_NCCL | no-nccl\n");
    return 2;
  }
  return kiln_check_result("test_rt_comm");
}
