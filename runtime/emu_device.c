/* emu_device.c — the `emu` device: kernels lowered for the GPU, run by the GPU emulator.
 *
 * How this works. Everything but kernels is the cpu device's: device memory is host memory, copies
 * are memmoves, streams are already-finished queues, events are timestamps. So the device starts
 * as a cpu device (kiln_rt_cpu_device_init) and swaps in a vtable that is the cpu one with the
 * kernel entries replaced:
 *
 * - module_load takes the host object of the `emu` target (kiln compile --target emu --emit obj),
 *   links and opens it exactly as the cpu device does (cpu_module.c). The object calls the
 *   emulator's intrinsics (kiln_emu_*), which it leaves undefined: they resolve at dlopen from the
 *   emulator linked into this runtime. For that they must be in the process's global scope: with
 *   libkilnrt.so they are exported (KILN_EMU_API is default visibility) and the library is made
 *   RTLD_GLOBAL before the module opens (it may itself have been dlopen'ed RTLD_LOCAL); with the
 *   static libkilnrt.a the executable exports them (the link option of emu_exports.list, which
 *   the kilnrt target, in this tree or installed, and `pkg-config --static kilnrt` add to every
 *   executable linking libkilnrt.a). `keep_intrinsics` below references every intrinsic so a
 *   static link pulls all of them in, used or not.
 * - get_function finds `kiln_emu_entry_NAME` and the kernel's metadata `kiln_emu_meta_NAME`
 *   (version, threads per block, static shared bytes, parameter count, dynamic shared bytes,
 *   offset bits, registers per thread; written by mlir-dialect/gpu/emu_lower.c), with the
 *   per-parameter tables kiln_emu_args_NAME (alignments) and kiln_emu_elems_NAME (pointee bytes).
 * - launch runs kiln_emu_launch over the grid, synchronously. block_threads must be 0 (use the
 *   kernel's) or equal to the kernel's: the lowering assumed exactly 32 * num_warps threads.
 *   Before any thread runs it refuses what a GPU would refuse: pointer arguments not aligned as
 *   the lowering assumed (kiln_emu_args_NAME) and static shared memory above 48 KiB. Registers,
 *   the grid and, for a kernel compiled with 32-bit offsets, pointer arguments that reach 2^31
 *   elements (or KILN_EMU_INDEX_LIMIT) are checked by kiln_rt_launch (device.c,
 *   offset_check.c), for cuda and cpu too, from the record get_function hands over. A
 *   failure inside the kernel (deadlock, trap, bad shared access, misused warp op) comes back as
 *   KILN_RT_ERROR_LAUNCH with the emulator's message naming block and thread.
 * - The sanitizers (runtime/emu/check.c) are on unless KILN_EMU_CHECK says otherwise; memcheck
 *   learns the allocations through track_alloc / track_free, at the sizes the caller asked for.
 *   KILN_EMU_SEED picks a random schedule of the fibers.
 * - Stream capture is refused (UNSUPPORTED): graphs of emulated launches have no user yet.
 */
#include "device_impl.h"

#include "kiln_emu.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The layout of kiln_emu_meta_NAME; KILN_GPU_EMU_META_VERSION in mlir-dialect/gpu/kiln_gpu.h.
 * Version 2 adds a fifth word, the dynamic shared bytes the kernel's arena needs (above 48 KiB
 * it is `.extern .shared`); version 1 modules (4 words) have none. Version 3 adds the offset
 * bits and the registers per thread (0: unknown). */
enum { META_VERSION = 3, META_WORDS = 7 };

/* A GPU's limit on static shared memory (`.shared` variables); more needs dynamic shared memory
 * and an opt-in. The emulator's arena could hold more, but a GPU would refuse the module. */
#define EMU_STATIC_SHARED_LIMIT (48u * 1024u)

typedef struct EmuFunction {
  KilnEmuKernelFn entry;
  uint32_t block_threads, shared_bytes, num_params;
  uint32_t dyn_shared_bytes; /* what every launch needs at least (a GPU launch passes it) */
  const uint32_t *arg_align; /* kiln_emu_args_NAME: num_params entries; NULL in older modules */
  const uint32_t *arg_elems; /* kiln_emu_elems_NAME: pointee bytes; NULL in older modules */
  uint32_t index_bits;       /* 32 or 64; 0 unknown (hand-written IR, older modules) */
} EmuFunction;

/* Every intrinsic, referenced so that a static link of libkilnrt.a takes the emulator whole:
 * a kernel module may call any of them, and the linker cannot know which. */
#define KEEP(f) (void (*)(void))(f)
__attribute__((used)) static void (*const keep_intrinsics[])(void) = {
    KEEP(kiln_emu_tid_x),
    KEEP(kiln_emu_tid_y),
    KEEP(kiln_emu_tid_z),
    KEEP(kiln_emu_ntid_x),
    KEEP(kiln_emu_ntid_y),
    KEEP(kiln_emu_ntid_z),
    KEEP(kiln_emu_ctaid_x),
    KEEP(kiln_emu_ctaid_y),
    KEEP(kiln_emu_ctaid_z),
    KEEP(kiln_emu_nctaid_x),
    KEEP(kiln_emu_nctaid_y),
    KEEP(kiln_emu_nctaid_z),
    KEEP(kiln_emu_laneid),
    KEEP(kiln_emu_warpid),
    KEEP(kiln_emu_warpsize),
    KEEP(kiln_emu_shared_base),
    KEEP(kiln_emu_shared_bytes),
    KEEP(kiln_emu_shared_check),
    KEEP(kiln_emu_global_access),
    KEEP(kiln_emu_shared_access),
    KEEP(kiln_emu_approx_f32),
    KEEP(kiln_emu_barrier0),
    KEEP(kiln_emu_barrier_sync),
    KEEP(kiln_emu_bar_warp_sync),
    KEEP(kiln_emu_membar),
    KEEP(kiln_emu_trap),
    KEEP(kiln_emu_assertfail),
    KEEP(kiln_emu_exit),
    KEEP(kiln_emu_vprintf),
    KEEP(kiln_emu_shfl_sync_i32),
    KEEP(kiln_emu_shfl_sync_f32),
    KEEP(kiln_emu_vote_sync),
    KEEP(kiln_emu_redux_sync),
    KEEP(kiln_emu_mma_m16n8k16_f32_f16),
    KEEP(kiln_emu_mma_m16n8k16_f32_bf16),
    KEEP(kiln_emu_mma_m16n8k8_f32_tf32),
    KEEP(kiln_emu_mma_m16n8k32_s32_s8),
    KEEP(kiln_emu_ldmatrix),
    KEEP(kiln_emu_stmatrix),
    KEEP(kiln_emu_wgmma),
    KEEP(kiln_emu_wgmma_rs),
    KEEP(kiln_emu_wgmma_commit),
    KEEP(kiln_emu_wgmma_wait),
    KEEP(kiln_emu_cp_async),
    KEEP(kiln_emu_cp_async_commit_group),
    KEEP(kiln_emu_cp_async_wait_group),
    KEEP(kiln_emu_cp_async_wait_all),
    KEEP(kiln_emu_atom_cas_b32),
    KEEP(kiln_emu_atom_shared_cas_b32),
    KEEP(kiln_emu_atom_cas_b64),
    KEEP(kiln_emu_atom_shared_cas_b64),
    KEEP(kiln_emu_f16_to_f32),
    KEEP(kiln_emu_f32_to_f16),
    KEEP(kiln_emu_bf16_to_f32),
    KEEP(kiln_emu_f32_to_bf16),
#define KEEP_ATOMIC(op, T) KEEP(kiln_emu_atom_##op), KEEP(kiln_emu_atom_shared_##op),
    KILN_EMU_ATOMIC_OPS(KEEP_ATOMIC)
#undef KEEP_ATOMIC
};
#undef KEEP

static KilnRtDeviceOps emu_ops;
static pthread_once_t emu_ops_once = PTHREAD_ONCE_INIT;
static const KilnRtDeviceOps *cpu_ops_seen;

/* ---- modules ------------------------------------------------------------------------------ */

/* Puts the object that holds the emulator into the global symbol scope, so that the kernel
 * module's undefined kiln_emu_* resolve at dlopen. A no-op for an executable (its exported
 * symbols are global already) and for a library loaded RTLD_GLOBAL. */
static void export_emulator(void) {
  Dl_info info;
  void *addr;
  KilnEmuStatus (*launch)(KilnEmuKernelFn, const KilnEmuLaunch *, void **) = kiln_emu_launch;
  memcpy(&addr, &launch, sizeof addr);
  if (!dladdr(addr, &info) || !info.dli_fname) return;
  void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  if (h) dlclose(h); /* NOLOAD took a reference; the promotion to global stays */
}

static KilnRtStatus emu_module_load(KilnRtDevice *dev, KilnRtModuleFormat format, const void *image,
                                    size_t size, KilnRtModule *mod) {
  (void)dev;
  if (format != KILN_RT_MODULE_HOST_OBJECT && format != KILN_RT_MODULE_HOST_SHARED)
    return kiln_rt_fail(KILN_RT_ERROR_UNSUPPORTED,
                        "the emu device loads host objects of the emu target "
                        "(kiln compile --target emu --emit obj)");
  export_emulator();
  KilnRtStatus st = kiln_rt_cpu_module_open(format, image, size, &mod->impl);
  if (st != KILN_RT_OK && strstr(kiln_rt_last_error(), "kiln_emu_"))
    return kiln_rt_fail(st,
                        "%s (the GPU emulator's symbols are not visible: link the program "
                        "with libkilnrt.so, or with libkilnrt.a through CMake's kilnrt "
                        "target or `pkg-config --static kilnrt`, which export them)",
                        kiln_rt_last_error());
  return st;
}

static void emu_module_unload(KilnRtModule *mod) {
  for (KilnRtFunction *fn = mod->functions; fn; fn = fn->next) {
    free(fn->impl);
    fn->impl = NULL;
  }
  dlclose(mod->impl);
}

static KilnRtStatus emu_get_function(KilnRtModule *mod, KilnRtFunction *fn) {
  char entry_name[512], meta_name[512];
  int n1 = snprintf(entry_name, sizeof entry_name, "kiln_emu_entry_%s", fn->name);
  int n2 = snprintf(meta_name, sizeof meta_name, "kiln_emu_meta_%s", fn->name);
  if (n1 < 0 || (size_t)n1 >= sizeof entry_name || n2 < 0 || (size_t)n2 >= sizeof meta_name)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT, "kernel name too long: %s", fn->name);
  dlerror();
  void *entry = dlsym(mod->impl, entry_name);
  const uint32_t *meta = dlsym(mod->impl, meta_name);
  if (!entry || !meta)
    return kiln_rt_fail(KILN_RT_ERROR_NOT_FOUND,
                        "no kernel '%s' in the module (symbols %s, %s; was it compiled with "
                        "--target emu?)",
                        fn->name, entry_name, meta_name);
  if (meta[0] < 1 || meta[0] > META_VERSION || meta[1] == 0 || meta[1] % 32 != 0 ||
      meta[1] > KILN_EMU_MAX_BLOCK_THREADS)
    return kiln_rt_fail(KILN_RT_ERROR_LOAD,
                        "kernel '%s': bad emulator metadata (version %u, %u threads per block)",
                        fn->name, meta[0], meta[1]);
  EmuFunction *ef = calloc(1, sizeof *ef);
  if (!ef) return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a function");
  _Static_assert(sizeof ef->entry == sizeof entry, "code and data pointers differ in size");
  memcpy(&ef->entry, &entry, sizeof entry); /* POSIX: dlsym's void * may hold code */
  ef->block_threads = meta[1];
  ef->shared_bytes = meta[2];
  ef->num_params = meta[3];
  ef->dyn_shared_bytes = meta[0] >= 2 ? meta[4] : 0;
  char args_name[512];
  snprintf(args_name, sizeof args_name, "kiln_emu_args_%s", fn->name); /* fits: as meta_name */
  ef->arg_align = dlsym(mod->impl, args_name);
  snprintf(args_name, sizeof args_name, "kiln_emu_elems_%s", fn->name);
  ef->arg_elems = meta[0] >= 3 ? dlsym(mod->impl, args_name) : NULL;
  ef->index_bits = meta[0] >= 3 ? meta[5] : 0;
  fn->registers = meta[0] >= 3 ? meta[6] : 0; /* checked by kiln_rt_launch */
  fn->block_threads = ef->block_threads;
  /* The offset record for kiln_rt_launch's check (offset_check.c), from this metadata. */
  if (ef->arg_elems && (ef->index_bits == 32 || ef->index_bits == 64)) {
    KilnRtStatus st =
        kiln_rt_function_set_offsets(fn, ef->index_bits, ef->num_params, ef->arg_elems);
    if (st != KILN_RT_OK) {
      free(ef);
      return st;
    }
  }
  fn->impl = ef;
  return KILN_RT_OK;
}

/* ---- launches ----------------------------------------------------------------------------- */

/* The lowering emitted vector loads and stores on the promise that every pointer argument is
 * aligned (kiln_emu_args_NAME); a pointer that breaks it would fault on the host (an aligned
 * vmovaps) where a GPU raises a misaligned-address error. Refused here, before any thread runs. */
static KilnRtStatus check_pointer_args(const KilnRtFunction *fn, const EmuFunction *ef,
                                       void **args) {
  if (!ef->arg_align) return KILN_RT_OK;
  for (uint32_t i = 0; i < ef->num_params; i++) {
    uint32_t align = ef->arg_align[i];
    if (align <= 1) continue;
    if (!args || !args[i])
      return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                          "launch of '%s': argument %u (a pointer) is missing", fn->name, i);
    void *p;
    memcpy(&p, args[i], sizeof p);
    if ((uintptr_t)p % align != 0)
      return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                          "launch of '%s': pointer argument %u = %p is not %u-byte aligned (the "
                          "compiled code assumes it; a GPU would fault with a misaligned address)",
                          fn->name, i, p, align);
  }
  return KILN_RT_OK;
}

/* A pointer argument's value (args[i] points at it). */
static void *pointer_arg(void **args, uint32_t i) {
  void *p;
  memcpy(&p, args[i], sizeof p);
  return p;
}

/* KILN_EMU_CHECK (default "all": the emulator is the GPU path's checker, so it checks unless
 * told not to) and KILN_EMU_SEED (default 0: thread order), read at every launch so that a test
 * driver can switch them between launches. */
static KilnRtStatus checks_from_env(uint32_t *checks, uint64_t *seed) {
  const char *text = getenv("KILN_EMU_CHECK");
  if (kiln_emu_parse_checks(text ? text : "all", checks) != 0)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "KILN_EMU_CHECK='%s': expected a comma-separated list of mem, race, init, "
                        "or all, or none",
                        text);
  const char *s = getenv("KILN_EMU_SEED");
  *seed = 0;
  if (s && *s) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0' || s[0] == '-')
      return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                          "KILN_EMU_SEED='%s': expected a non-negative integer", s);
    *seed = v;
  }
  return KILN_RT_OK;
}

/* KILN_EMU_INDEX_LIMIT: memcheck's element index limit (KilnEmuLaunch.index_limit), unset or 0
 * for none: a positive integer, lowered on scaled-down problems to find the accesses whose
 * 32-bit offsets would wrap at full size. */
static KilnRtStatus index_limit_from_env(uint64_t *limit) {
  const char *s = getenv("KILN_EMU_INDEX_LIMIT");
  *limit = 0;
  if (!s || !*s) return KILN_RT_OK;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno != 0 || *end != '\0' || s[0] == '-')
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "KILN_EMU_INDEX_LIMIT='%s': expected a non-negative integer (elements)", s);
  *limit = v;
  return KILN_RT_OK;
}

/* KILN_EMU_MATH: exact (default) or pessimistic (docs/emulator.md, "Approximate math"). */
static KilnRtStatus math_from_env(uint32_t *math) {
  const char *text = getenv("KILN_EMU_MATH");
  if (!text || !*text || strcmp(text, "exact") == 0)
    *math = KILN_EMU_MATH_EXACT;
  else if (strcmp(text, "pessimistic") == 0)
    *math = KILN_EMU_MATH_PESSIMISTIC;
  else
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "KILN_EMU_MATH='%s': expected exact or pessimistic", text);
  return KILN_RT_OK;
}

/* The pointer arguments' values (at most cap), from which memcheck's index limit counts. */
static uint32_t pointer_bases(const EmuFunction *ef, void **args, const void **out, uint32_t cap) {
  uint32_t n = 0;
  for (uint32_t i = 0; ef->arg_align && args && i < ef->num_params && n < cap; i++)
    if (ef->arg_align[i] > 1 && args[i]) out[n++] = pointer_arg(args, i);
  return n;
}

static KilnRtStatus emu_launch(KilnRtFunction *fn, const KilnRtLaunchConfig *cfg, void **args,
                               KilnRtStream *stream) {
  const EmuFunction *ef = fn->impl;
  if (stream && stream->capturing)
    return kiln_rt_fail(KILN_RT_ERROR_UNSUPPORTED, "the emu device cannot capture launches");
  if (cfg->block_threads != 0 && cfg->block_threads != ef->block_threads)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "launch of '%s': block_threads = %u, but the kernel was compiled for %u "
                        "(32 * num_warps)",
                        fn->name, cfg->block_threads, ef->block_threads);
  if (fn->arg_sizes && fn->num_args != ef->num_params)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "launch of '%s': %zu argument sizes set, the kernel takes %u parameters",
                        fn->name, fn->num_args, ef->num_params);
  /* The kernel's own dynamic arena is passed for the caller, as the cuda device does. */
  uint32_t dyn =
      cfg->shared_bytes > ef->dyn_shared_bytes ? cfg->shared_bytes : ef->dyn_shared_bytes;
  uint64_t shared = (uint64_t)ef->shared_bytes + dyn;
  if (shared > KILN_EMU_MAX_SHARED_BYTES)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "launch of '%s': %llu bytes of shared memory (%u static + %u dynamic) "
                        "exceed %u",
                        fn->name, (unsigned long long)shared, ef->shared_bytes, dyn,
                        KILN_EMU_MAX_SHARED_BYTES);
  if (ef->shared_bytes > EMU_STATIC_SHARED_LIMIT)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "launch of '%s': %u bytes of static shared memory exceed a GPU's %u "
                        "(more must be dynamic shared memory)",
                        fn->name, ef->shared_bytes, EMU_STATIC_SHARED_LIMIT);
  /* The offset extents of a 32-bit kernel were checked by kiln_rt_launch (offset_check.c), with
   * KILN_EMU_INDEX_LIMIT lowering the limit there too. */
  KilnRtStatus ast = check_pointer_args(fn, ef, args);
  uint64_t index_limit = 0;
  if (ast == KILN_RT_OK) ast = index_limit_from_env(&index_limit);
  if (ast != KILN_RT_OK) return ast;
  KilnEmuLaunch lc;
  memset(&lc, 0, sizeof lc);
  memcpy(lc.grid, cfg->grid, sizeof lc.grid);
  lc.block[0] = ef->block_threads;
  lc.block[1] = lc.block[2] = 1;
  lc.shared_bytes = (uint32_t)shared;
  lc.num_os_threads = (uint32_t)kiln_rt_cpu_default_threads();
  KilnRtStatus est = checks_from_env(&lc.checks, &lc.seed);
  if (est == KILN_RT_OK) est = math_from_env(&lc.math);
  if (est != KILN_RT_OK) return est;
  /* The in-kernel index check is for code whose offsets may wrap: not a 64-bit kernel's. */
  const void *bases[64];
  lc.index_limit = ef->index_bits == 64 ? 0 : index_limit;
  lc.index_bases = bases;
  lc.num_index_bases = pointer_bases(ef, args, bases, 64);
  KilnEmuStatus st = kiln_emu_launch(ef->entry, &lc, args);
  if (st == KILN_EMU_OK) return KILN_RT_OK;
  return kiln_rt_fail(st == KILN_EMU_ERROR_OUT_OF_MEMORY ? KILN_RT_ERROR_OUT_OF_MEMORY
                                                         : KILN_RT_ERROR_LAUNCH,
                      "emu launch of '%s' failed: %s: %s", fn->name, kiln_emu_status_name(st),
                      kiln_emu_last_error());
}

/* memcheck's allocation table follows the runtime's allocations, at the sizes asked for. */
static void emu_track_alloc(KilnRtDevice *dev, void *ptr, size_t bytes) {
  (void)dev;
  kiln_emu_mem_register(ptr, bytes);
}

static void emu_track_free(KilnRtDevice *dev, void *ptr) {
  (void)dev;
  kiln_emu_mem_unregister(ptr);
}

static KilnRtStatus emu_begin_capture(KilnRtStream *stream) {
  (void)stream;
  return kiln_rt_fail(KILN_RT_ERROR_UNSUPPORTED, "the emu device does not capture graphs");
}

static KilnRtStatus emu_info(KilnRtDevice *dev, KilnRtDeviceInfo *out) {
  KilnRtStatus st = cpu_ops_seen->info(dev, out);
  if (st != KILN_RT_OK) return st;
  out->kind = KILN_RT_DEVICE_EMU;
  snprintf(out->name, sizeof out->name, "emu");
  out->cc_major = 8; /* the emulator implements the sm_80 instructions the lowering uses */
  out->cc_minor = 0;
  out->shared_mem_per_block = KILN_EMU_MAX_SHARED_BYTES;
  return KILN_RT_OK;
}

/* ---- the device --------------------------------------------------------------------------- */

static void build_ops(void) {
  emu_ops = *cpu_ops_seen;
  emu_ops.info = emu_info;
  emu_ops.module_load = emu_module_load;
  emu_ops.module_unload = emu_module_unload;
  emu_ops.get_function = emu_get_function;
  emu_ops.launch = emu_launch;
  emu_ops.begin_capture = emu_begin_capture;
  emu_ops.track_alloc = emu_track_alloc;
  emu_ops.track_free = emu_track_free;
}

KilnRtStatus kiln_rt_emu_device_init(KilnRtDevice *dev, int ordinal) {
  if (ordinal != 0)
    return kiln_rt_fail(KILN_RT_ERROR_NO_DEVICE, "there is one emu device: emu:0, not emu:%d",
                        ordinal);
  KilnRtStatus st = kiln_rt_cpu_device_init(dev, 0);
  if (st != KILN_RT_OK) return st;
  cpu_ops_seen = dev->ops; /* the same static table on every call */
  pthread_once(&emu_ops_once, build_ops);
  dev->ops = &emu_ops;
  dev->kind = KILN_RT_DEVICE_EMU;
  return KILN_RT_OK;
}
