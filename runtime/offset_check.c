/* offset_check.c — the 32-bit offset promise, checked at every launch on every device.
 *
 * Why. A kernel compiled with 32-bit offsets (kiln compile --index-bits 32, the default) builds
 * each element offset from a pointer argument in i32: past 2^31 elements it wraps to a negative
 * offset and a GPU (or the host, on cpu) reads and writes 2 GiB before the buffer, silently.
 * The kernel cannot know its buffers' sizes; the runtime can, because every device buffer comes
 * from kiln_rt_malloc and the allocation cache keeps the bytes asked for. So a launch is refused
 * when a pointer argument of a 32-bit kernel has more elements of its type between it and the
 * end of its allocation than 2^31, before anything runs.
 *
 * What the check needs comes from the module: per kernel the offset bits and the element size of
 * each pointer parameter (`kiln_offsets_NAME` = {bits, n, bytes[n]}, emitted for host objects
 * and PTX alike by mlir-dialect/emit.c; the emu device takes the same words from its own
 * metadata). Each device's get_function hands them to kiln_rt_function_set_offsets; kernels
 * without the record (hand-written IR, older modules) stay unchecked.
 *
 * The limit is 2^31, or KILN_INDEX_LIMIT (elements) to test the refusal on scaled-down buffers;
 * on emu KILN_EMU_INDEX_LIMIT, the emulator's in-kernel index check, lowers it too, so that one
 * variable scales down both. It counts to the end of the allocation, not to the last element the
 * kernel touches, or to the end of the pointer's part where the allocation was carved into
 * tensors with kiln_rt_mem_set_parts (one arena of many tensors is judged tensor by tensor).
 * Pointers into memory the device did not allocate are not checked. */
#include "device_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

KilnRtStatus kiln_rt_function_set_offsets(KilnRtFunction *fn, uint32_t bits, uint32_t n,
                                          const uint32_t *elem_bytes) {
  if (bits != 32 && bits != 64)
    return kiln_rt_fail(KILN_RT_ERROR_LOAD,
                        "kernel '%s': its offset record says %u bits (32 or 64 "
                        "expected): a damaged module",
                        fn->name, bits);
  if (n > 4096)
    return kiln_rt_fail(KILN_RT_ERROR_LOAD, "kernel '%s': its offset record lists %u parameters",
                        fn->name, n);
  uint32_t *copy = calloc(n + 1u, sizeof *copy);
  if (!copy) return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a function");
  if (n) memcpy(copy, elem_bytes, n * sizeof *copy);
  free(fn->arg_elem_bytes);
  fn->arg_elem_bytes = copy;
  fn->num_offset_args = n;
  fn->index_bits = bits;
  return KILN_RT_OK;
}

/* A limit variable's value: 0 when unset or empty, else a positive integer. */
static KilnRtStatus limit_from_env(const char *var, uint64_t *limit) {
  const char *s = getenv(var);
  *limit = 0;
  if (!s || !*s) return KILN_RT_OK;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno != 0 || *end != '\0' || s[0] == '-')
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "%s='%s': expected a non-negative integer (elements)", var, s);
  *limit = v;
  return KILN_RT_OK;
}

/* 2^31, or the lowered limit of a scaled-down run. */
static KilnRtStatus offset_limit(const KilnRtDevice *dev, uint64_t *limit) {
  KilnRtStatus st = limit_from_env("KILN_INDEX_LIMIT", limit);
  if (st == KILN_RT_OK && *limit == 0 && dev->kind == KILN_RT_DEVICE_EMU)
    st = limit_from_env("KILN_EMU_INDEX_LIMIT", limit);
  if (st == KILN_RT_OK && *limit == 0) *limit = (uint64_t)1 << 31;
  return st;
}

KilnRtStatus kiln_rt_check_offsets(const KilnRtFunction *fn, void **args) {
  if (fn->index_bits != 32 || !args) return KILN_RT_OK;
  KilnRtDevice *dev = fn->module->dev;
  uint64_t limit = 0;
  KilnRtStatus st = offset_limit(dev, &limit);
  if (st != KILN_RT_OK) return st;
  for (uint32_t i = 0; i < fn->num_offset_args; i++) {
    uint32_t elem = fn->arg_elem_bytes[i];
    if (elem == 0 || !args[i]) continue;
    char *p;
    memcpy(&p, args[i], sizeof p); /* a device pointer, as cuLaunchKernel's params hold it */
    void *base;
    size_t bytes;
    if (kiln_rt_cache_find_part(dev->cache, p, &base, &bytes) != KILN_RT_OK) continue;
    uint64_t elems = (uint64_t)((char *)base + bytes - p) / elem;
    if (elems > limit)
      return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                          "launch of '%s': pointer argument %u has %llu elements of %u bytes to "
                          "the end of its allocation, more than the %llu its 32-bit offsets can "
                          "reach (recompile with --index-bits 64)",
                          fn->name, i, (unsigned long long)elems, elem, (unsigned long long)limit);
  }
  return KILN_RT_OK;
}
