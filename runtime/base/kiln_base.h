/* kiln_base.h - the vocabulary every Kiln layer shares, in one small module that depends on
 * nothing but libc: the targets, the scalar kinds, tune configurations and what ptxas reports,
 * whole-file reads, atomic file writes, memory sizes and the f16/bf16 conversions.
 *
 * Each of these once existed per stage (a file reader in the driver, the tuner, kiln-opt, the
 * runtime, the benchmarks; an atomic writer in the commands, the trainer and a test harness,
 * with different file modes; f16/bf16 conversions in the emulator, the tuner and the tests).
 * Here they are written once, so a fix reaches every caller.  The module is compiled into
 * libkilnrt (hidden) and, as kiln_base, into everything else; it includes no other Kiln header.
 *
 * Errors: functions that touch files return 0 / a pointer, or -1 / NULL with errno set; none
 * prints or exits. */
#ifndef KILN_BASE_H
#define KILN_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- targets (vocab.c) */

typedef enum KilnTarget {
  KILN_TARGET_CPU,
  KILN_TARGET_EMU,
  KILN_TARGET_SM80,
  KILN_TARGET_SM90,
  KILN_TARGET_COUNT
} KilnTarget;

/* "cpu", "emu", "sm_80", "sm_90"; "?" for no target. */
const char *kiln_target_name(KilnTarget t);
/* KILN_TARGET_COUNT when `name` (may be NULL) names no target. */
KilnTarget kiln_target_from_name(const char *name);

/* ---------------------------------------------------------------- scalar kinds (vocab.c) */

typedef enum KilnScalarKind {
  KILN_SCALAR_I1,
  KILN_SCALAR_I8,
  KILN_SCALAR_I16,
  KILN_SCALAR_I32,
  KILN_SCALAR_I64,
  KILN_SCALAR_F16,
  KILN_SCALAR_BF16,
  KILN_SCALAR_F32,
  /* appended after f32 so that the numbers 0..7 of the kinds above, which caches, bindings and
   * reports hold, keep their meaning */
  KILN_SCALAR_F64,
  KILN_SCALAR_U8,
  KILN_SCALAR_U16,
  KILN_SCALAR_U32,
  KILN_SCALAR_U64,
  KILN_SCALAR_COUNT
} KilnScalarKind;

/* The language's spelling: "i1" ... "f32", "f64", "u8" ... "u64"; "?" out of range. */
const char *kiln_scalar_name(KilnScalarKind k);
/* false when `name` is no scalar kind's spelling. */
bool kiln_scalar_from_name(const char *name, KilnScalarKind *out);
bool kiln_scalar_is_float(KilnScalarKind k);
/* u8, u16, u32, u64 (not i1, which conversions also zero-extend). */
bool kiln_scalar_is_unsigned(KilnScalarKind k);

/* ---------------------------------------------------------------- tune configurations
 * Shared by the frontend (which enumerates a tune block's space), the driver and the tuner,
 * whose runtime-only runner (no frontend) reads, times and ranks configs too. */

/* The reserved ("meta") tune names, which every kernel takes besides its const parameters:
 * num_warps, num_stages, min_blocks and wgmma. A tune block, a preset and -D may bind them; the
 * one list of them is here, so the frontend, the driver and the tuner (the runner included,
 * which has no frontend) recognize the same names. */
bool kiln_meta_param_is(const char *name);
/* The smallest and largest value meta name `name` may take: 1..64 for num_warps and num_stages,
 * 1..32 for min_blocks, 0..1 for wgmma. */
int64_t kiln_meta_param_min(const char *name);
int64_t kiln_meta_param_max(const char *name);

/* A name -> integer binding for a const parameter (or a meta name: num_warps, num_stages...). */
typedef struct KilnBinding {
  const char *name;
  int64_t value;
} KilnBinding;

/* One point of a tune block's space: a value for every tune parameter (const params listed in
 * the block, then num_warps and num_stages, which default to 4 and 2 when not listed). */
typedef struct KilnTuneConfig {
  KilnBinding bindings[32];
  int nbindings;
  int num_warps;
  int num_stages;
} KilnTuneConfig;

/* What ptxas -v reported for a cubin: the limits a launch must fit (registers per thread times
 * threads per program, static shared memory) and the spills that cost speed.  The driver fills
 * it; the tuner checks candidates against it. */
typedef struct KilnGpuUsage {
  bool valid;       /* set when a cubin was emitted */
  int registers;    /* per thread */
  int shared_bytes; /* static shared memory per program */
  int spill_bytes;  /* spill stores + spill loads */
  int stack_bytes;  /* stack frame per thread */
} KilnGpuUsage;

/* ---------------------------------------------------------------- files (file.c) */

/* The whole file (or stream) as a malloc'd, NUL-terminated buffer (the caller frees it), its
 * length in *len (may be NULL).  NULL with errno on failure (ENOMEM when it does not fit). */
char *kiln_file_read(const char *path, size_t *len);
char *kiln_file_read_stream(FILE *f, size_t *len);
/* The same, refusing more than `max` bytes: NULL with errno EFBIG as soon as the read passes
 * max (so /dev/zero, a FIFO or a huge file costs at most max bytes of memory).  Readers of
 * inputs a user names (sources, caches, manifests) use this with a named limit. */
char *kiln_file_read_max(const char *path, size_t *len, size_t max);
char *kiln_file_read_stream_max(FILE *f, size_t *len, size_t max);

/* The most bytes read from one text file a user hands a Kiln command: a Kiln source (`kiln
 * compile`, `check`, `stat`, `tune`, `lib`), a PTX file (`kiln stat`), an MLIR file
 * (`kiln-opt`).  Past it the file is refused with its name and the limit's, so /dev/zero or a
 * runaway file costs at most this much memory.  Far above real inputs: the BERT kernels are a
 * few KiB each, a whole model's PTX a few MiB. */
#define KILN_MAX_SOURCE_BYTES ((size_t)64 << 20)
#define KILN_MAX_PTX_BYTES    ((size_t)256 << 20)
#define KILN_MAX_MLIR_BYTES   ((size_t)256 << 20)
/* The most bytes of one module image read from a file: a bundle's host object, shared object,
 * cubin or PTX (runtime/bundle.c), and the shared object the C compiler links from a host
 * object (runtime/cpu_module.c).  A whole BERT library's images are a few MiB; past this, a
 * file that is a link to /dev/zero or a runaway linker output is refused, not read. */
#define KILN_MAX_MODULE_BYTES ((size_t)256 << 20)
/* The most bytes of a tool's output read back as text: the log of ptxas -v (KILN_PTXAS may name
 * any program), a few KiB in practice. */
#define KILN_MAX_TOOL_LOG_BYTES ((size_t)16 << 20)

/* The message for a read that failed (errno as kiln_file_read_max left it), written into buf
 * and returned: "the WHAT 'PATH' is larger than LIMIT_NAME (N MiB); refused" for EFBIG, else
 * "cannot read the WHAT 'PATH': <strerror>".  Every reader words it alike. */
const char *kiln_file_read_error(char *buf, size_t cap, const char *what, const char *path,
                                 const char *limit_name, size_t limit);

/* Whether paths a and b name one existing file (same device and inode, so links, symlinks and
 * other spellings of a path count): commands refuse an output that is one of their inputs
 * before doing any work, since writing it would destroy the input.  False when either does
 * not exist. */
bool kiln_file_same(const char *a, const char *b);
/* The file that writing `path` replaces: path with its symlinks followed (the last link's
 * target may not exist yet).  0, or -1 with errno (a loop, a name too long). */
int kiln_file_resolve(const char *path, char *out, size_t cap);

/* An atomic write in steps, for outputs written piece by piece: a temp file next to the target
 * (symlinks followed), written, fsync'ed and renamed over it on commit; the directory is synced
 * so the rename survives a crash.  The new file keeps the old one's mode, or gets 0666 less the
 * umask, as a plain create would.  Nothing a user saved is ever half-written: a failure or an
 * abort leaves the old file intact and no temp file behind. */
typedef struct KilnAtomicFile {
  FILE *f;
  char *target; /* the resolved path */
  char *tmp;
  int err;     /* the first write error (errno), reported by commit */
  int cleanup; /* kiln_cleanup_register's id of tmp, + 1 (0: none) */
} KilnAtomicFile;
/* 0, or -1 with errno (nothing to clean up then). */
int kiln_atomic_begin(KilnAtomicFile *af, const char *path);
void kiln_atomic_write(KilnAtomicFile *af, const void *data, size_t n);
/* Renames the temp file over the target: 0, or -1 with errno (then as kiln_atomic_abort). */
int kiln_atomic_commit(KilnAtomicFile *af);
void kiln_atomic_abort(KilnAtomicFile *af);
/* The whole of data as the file at path, by the steps above: 0, or -1 with errno. */
int kiln_file_write_atomic(const char *path, const void *data, size_t size);

/* ---------------------------------------------------------------- memory sizes (memory.c) */

/* A positive byte count, optionally with K, M, G or T (or KiB ... TiB), powers of 1024: the
 * syntax of KILN_DEVICE_MEMORY and of the commands' size options.  0, or -1 (no number, zero,
 * a sign, another suffix, more than size_t holds). */
int kiln_parse_bytes(const char *s, size_t *out);
/* The host's physical memory in bytes (the cpu and emu devices' memory); SIZE_MAX when the
 * system does not say. */
size_t kiln_host_memory_bytes(void);
/* "1.5 GiB", "96.0 MiB", "512 bytes" into buf, returned. */
const char *kiln_bytes_text(size_t bytes, char *buf, size_t cap);

/* ---------------------------------------------------------------- cleanup on signals (cleanup.c) */

/* Temp files and directories removed if SIGINT, SIGTERM or SIGHUP ends the process (then the
 * process still dies of that signal).  The atomic writer registers its temp file; `kiln tune`
 * its build directory (a directory is removed with its contents).  The first registration
 * installs the handlers, only for signals whose action is the default.  A forked child removes
 * only what it registered itself.  Returns an id for kiln_cleanup_unregister, or -1 (a path of
 * 4096 bytes or more, or all 64 slots in use: the path is then only removed on ordinary exits).
 * Unregister once the path is renamed or removed. */
int kiln_cleanup_register(const char *path);
void kiln_cleanup_unregister(int id);

/* ---------------------------------------------------------------- f16 / bf16 (half.c) */

/* IEEE binary16 and bfloat16 to and from float by bit manipulation (the result does not depend
 * on the host compiler's _Float16): exact widening; narrowing rounds to nearest, ties to even,
 * with subnormals, overflow to inf, and NaNs kept NaN (quiet, top payload bits kept). */
float kiln_f16_to_f32(uint16_t h);
uint16_t kiln_f32_to_f16(float f);
float kiln_bf16_to_f32(uint16_t h);
uint16_t kiln_f32_to_bf16(float f);

/* A float's bit pattern and back, without aliasing through pointers (memcpy, which compilers
 * turn into a register move): the conversions above and the emulator's float atomics and
 * matrix fragments read floats as bits. */
static inline uint32_t kiln_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float kiln_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

#ifdef __cplusplus
}
#endif
#endif
