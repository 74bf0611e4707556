/* comm.c — collectives over several devices (kilnrt.h, "collectives"): the checked public layer,
 * the device kind's own path where it has one (cuda: NCCL, cuda_nccl.c), and the host path
 * every kind shares.
 *
 * The host path reads each device's buffer into host memory after its stream's work (a copy on
 * that stream, then a wait), adds them in rank order into one f32 buffer and writes the sum back
 * to every device. Adding in a fixed order makes its result a function of the inputs alone, so
 * a data-parallel run is reproducible and its copies stay equal bit for bit. It costs two
 * copies of the buffer per device and call, and two host buffers of its size, kept by the
 * communicator from its first call on (allocating gigabytes anew each step would fault their
 * pages in each time). */
#include "device_impl.h"

#include <stdlib.h>
#include <string.h>

struct KilnRtComm {
  KilnRtDevice **devs;
  int n;
  void *native;      /* the kind's own communicator (comm_create's), NULL on the host path */
  float *sum, *part; /* the host path's buffers, of `cap` floats */
  size_t cap;
};

#define BAD(...) kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

KilnRtStatus kiln_rt_comm_create(KilnRtDevice *const *devs, int n, KilnRtComm **out) {
  if (!out) return BAD("kiln_rt_comm_create: out is NULL");
  if (!devs || n < 1) return BAD("kiln_rt_comm_create: %d devices", n);
  for (int r = 0; r < n; r++) {
    if (!devs[r]) return BAD("kiln_rt_comm_create: device %d is NULL", r);
    if (devs[r]->kind != devs[0]->kind)
      return BAD("kiln_rt_comm_create: device %d is of another kind than device 0", r);
    for (int q = 0; q < r; q++)
      if (devs[q] == devs[r]) return BAD("kiln_rt_comm_create: devices %d and %d are one", q, r);
  }
  KilnRtComm *c = calloc(1, sizeof *c);
  if (c) c->devs = malloc((size_t)n * sizeof *c->devs);
  if (!c || !c->devs) {
    free(c);
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a communicator");
  }
  memcpy(c->devs, devs, (size_t)n * sizeof *devs);
  c->n = n;
  const KilnRtDeviceOps *ops = devs[0]->ops;
  if (ops->comm_create) {
    KilnRtStatus st = ops->comm_create(devs, n, &c->native);
    /* UNSUPPORTED: the kind has no path of its own here (no NCCL): the host path serves */
    if (st != KILN_RT_OK && st != KILN_RT_ERROR_UNSUPPORTED) {
      free(c->devs);
      free(c);
      return st;
    }
    if (st != KILN_RT_OK) c->native = NULL;
  }
  *out = c;
  return KILN_RT_OK;
}

void kiln_rt_comm_destroy(KilnRtComm *comm) {
  if (!comm) return;
  if (comm->native) comm->devs[0]->ops->comm_destroy(comm->native);
  free(comm->sum);
  free(comm->part);
  free(comm->devs);
  free(comm);
}

const char *kiln_rt_comm_path(const KilnRtComm *comm) {
  return comm && comm->native ? "nccl" : "host";
}

/* Device r's buffer into dst, after its stream's work. */
static KilnRtStatus read_buffer(KilnRtComm *c, int r, float *dst, const float *src, size_t count,
                                KilnRtStream *stream) {
  KilnRtStatus st = kiln_rt_memcpy_dtoh(c->devs[r], dst, src, count * sizeof *dst, stream);
  return st == KILN_RT_OK && stream ? kiln_rt_stream_synchronize(stream) : st;
}

/* The host buffers, grown to count floats. */
static KilnRtStatus host_buffers(KilnRtComm *c, size_t count) {
  if (count <= c->cap) return KILN_RT_OK;
  free(c->sum);
  free(c->part);
  c->sum = malloc(count * sizeof *c->sum);
  c->part = malloc(count * sizeof *c->part);
  c->cap = c->sum && c->part ? count : 0;
  if (c->cap) return KILN_RT_OK;
  free(c->sum);
  free(c->part);
  c->sum = c->part = NULL;
  return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY,
                      "out of host memory for an all-reduce of %zu floats", count);
}

static KilnRtStatus host_allreduce(KilnRtComm *c, float *const *bufs, size_t count,
                                   KilnRtStream *const *streams) {
  KilnRtStatus st = host_buffers(c, count);
  float *sum = c->sum, *part = c->part;
  if (st == KILN_RT_OK) st = read_buffer(c, 0, sum, bufs[0], count, streams ? streams[0] : NULL);
  for (int r = 1; r < c->n && st == KILN_RT_OK; r++) {
    st = read_buffer(c, r, part, bufs[r], count, streams ? streams[r] : NULL);
    for (size_t i = 0; st == KILN_RT_OK && i < count; i++) sum[i] += part[i];
  }
  for (int r = 0; r < c->n && st == KILN_RT_OK; r++) {
    KilnRtStream *s = streams ? streams[r] : NULL;
    st = kiln_rt_memcpy_htod(c->devs[r], bufs[r], sum, count * sizeof *sum, s);
    /* the copy reads `sum`, which the next call overwrites */
    if (st == KILN_RT_OK && s) st = kiln_rt_stream_synchronize(s);
  }
  return st;
}

KilnRtStatus kiln_rt_comm_allreduce_sum_f32(KilnRtComm *comm, float *const *bufs, size_t count,
                                            KilnRtStream *const *streams) {
  if (!comm || !bufs) return BAD("kiln_rt_comm_allreduce_sum_f32: NULL communicator or buffers");
  for (int r = 0; r < comm->n; r++) {
    if (!bufs[r]) return BAD("kiln_rt_comm_allreduce_sum_f32: buffer %d is NULL", r);
    if (streams && streams[r] && streams[r]->dev != comm->devs[r])
      return BAD("kiln_rt_comm_allreduce_sum_f32: stream %d is another device's", r);
  }
  if (count == 0) return KILN_RT_OK;
  if (comm->native)
    return comm->devs[0]->ops->comm_allreduce_sum_f32(comm->native, bufs, count, streams);
  return host_allreduce(comm, bufs, count, streams);
}
