/* test_emu_sanitize.c — the emu device as a GPU sanitizer: launch limits and checked accesses.
 *
 * Each kernel is hand-written llvm + nvvm IR of the kind convert-kiln-gpu-to-llvm produces, run
 * through kiln-gpu-to-emu, loaded on the runtime's `emu` device and launched. Most are broken on
 * purpose: the launch must fail with a status and a message naming the kernel and the thread (or
 * the argument), never crash the host, and the same kernel launched correctly must give the
 * right numbers. Kiln source cannot express per-thread bugs (control flow is uniform per program),
 * which is why these kernels are written below the language.
 *
 * Launch limits (on emu as on a GPU):
 *   - emu_vec: 16-byte vector loads and stores through pointer arguments; pointers offset by
 *     4 bytes (a view into a flat buffer) are refused before any thread runs (they crashed the
 *     process with SIGSEGV before: an aligned vmovaps on the host);
 *   - grid y or z above 65535 is refused;
 *   - emu_big_smem: 50000 bytes of static shared memory, over a GPU's 48 KiB, is refused;
 *   - emu_regs: the registers per thread a module records (module attribute kiln.gpu.registers,
 *     carried by the emu metadata): 1024 threads x 128 registers overflow the 65536-register
 *     file, 256 per thread are over 255; 32 x 255 launch and copy right.
 *
 * Sanitizers (KILN_EMU_CHECK, on by default; set per launch here):
 *   - memcheck: emu_oob reads one element past a 128-byte allocation (inside the allocation
 *     cache's larger block, so without the check it read garbage silently); emu_misaligned does
 *     a 16-byte vector load 4 bytes into a buffer (a host SIGSEGV without the check); emu_masked
 *     guards its loads by a mask, so lanes past the end must not be reported;
 *   - racecheck: emu_race writes smem[t] and reads smem[t + 1] with no barrier between
 *     (write-after-read); emu_race_ww has every thread write smem[0] (write-after-write);
 *     emu_norace is emu_race with the barrier and must pass with the right numbers;
 *   - initcheck: emu_uninit reads shared memory nobody wrote;
 *   - schedules: emu_race_ww with the checks off leaves the last writer's id in smem[0]; under
 *     KILN_EMU_SEED the writers run in another order, so the seeds must not all agree, and one
 *     seed must give the same answer twice.
 */
#include "emu_ir_load.h"
#include "kiln_gpu.h"
#include "kiln_mlir.h"

#include <kiln/kilnrt.h>

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check.h"

/* 32 threads; thread t copies in[4t .. 4t+3] to out[4t .. 4t+3] with one 16-byte load and one
 * 16-byte store, as the lowering does for a contiguous f32 tile on aligned pointers. */
static const char *const VEC_IR =
    "module {\n"
    "  llvm.func @emu_vec(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel, "
    "nvvm.maxntid = array<i32: 32, 1, 1>} {\n"
    "    %c4 = llvm.mlir.constant(4 : i32) : i32\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %i = llvm.mul %t, %c4 : i32\n"
    "    %p = llvm.getelementptr %in[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    %v = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>\n"
    "    %q = llvm.getelementptr %out[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %v, %q {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

/* emu_vec's body at THREADS threads per block, in a module that records REGS registers per
 * thread (as hand-written IR can; the driver records 0) (printf template: threads, registers). */
static const char *const REGS_IR_FMT =
    "module attributes {kiln.gpu.registers = %u : i32} {\n"
    "  llvm.func @emu_regs(%%in: !llvm.ptr<1>, %%out: !llvm.ptr<1>) attributes {nvvm.kernel, "
    "nvvm.maxntid = array<i32: %u, 1, 1>} {\n"
    "    %%c4 = llvm.mlir.constant(4 : i32) : i32\n"
    "    %%t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %%i = llvm.mul %%t, %%c4 : i32\n"
    "    %%p = llvm.getelementptr %%in[%%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    %%v = llvm.load %%p {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>\n"
    "    %%q = llvm.getelementptr %%out[%%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %%v, %%q {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

/* Static shared memory of 50000 bytes: more than a GPU's 48 KiB of `.shared` variables. */
static const char *const BIG_SMEM_IR =
    "module attributes {kiln.gpu.smem_bytes = 50000 : i64} {\n"
    "  llvm.mlir.global internal @kiln_smem() {addr_space = 3 : i32, alignment = 16 : i64} : "
    "!llvm.array<50000 x i8> {\n"
    "    %0 = llvm.mlir.undef : !llvm.array<50000 x i8>\n"
    "    llvm.return %0 : !llvm.array<50000 x i8>\n"
    "  }\n"
    "  llvm.func @emu_big_smem(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = "
    "array<i32: 32, 1, 1>} {\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %smem = llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>\n"
    "    %p = llvm.getelementptr %smem[%t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
    "    llvm.store %t, %p : i32, !llvm.ptr<3>\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

/* 32 threads; thread t copies in[t + off] to out[t]: off = 1 reads one element past `in`. */
static const char *const OOB_IR =
    "module {\n"
    "  llvm.func @emu_oob(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>, %off: i32) attributes "
    "{nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>} {\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %i = llvm.add %t, %off : i32\n"
    "    %p = llvm.getelementptr %in[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    %v = llvm.load %p {alignment = 4 : i64} : !llvm.ptr<1> -> f32\n"
    "    %q = llvm.getelementptr %out[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %v, %q {alignment = 4 : i64} : f32, !llvm.ptr<1>\n"
    "    llvm.return\n"
    "  }\n"
    "  llvm.func @emu_masked(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>, %n: i32) attributes "
    "{nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>} {\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %m = llvm.icmp \"ult\" %t, %n : i32\n"
    "    llvm.cond_br %m, ^load, ^done\n"
    "  ^load:\n"
    "    %p = llvm.getelementptr %in[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    %v = llvm.load %p {alignment = 4 : i64} : !llvm.ptr<1> -> f32\n"
    "    %q = llvm.getelementptr %out[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %v, %q {alignment = 4 : i64} : f32, !llvm.ptr<1>\n"
    "    llvm.br ^done\n"
    "  ^done:\n"
    "    llvm.return\n"
    "  }\n"
    "  llvm.func @emu_misaligned(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes "
    "{nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>} {\n"
    "    %c1 = llvm.mlir.constant(1 : i32) : i32\n"
    "    %p = llvm.getelementptr %in[%c1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    %v = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>\n"
    "    llvm.store %v, %out {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

#define SMEM_256                                                                                   \
  "  llvm.mlir.global internal @kiln_smem() {addr_space = 3 : i32, alignment = 16 : i64} : "       \
  "!llvm.array<256 x i8> {\n"                                                                      \
  "    %0 = llvm.mlir.undef : !llvm.array<256 x i8>\n"                                             \
  "    llvm.return %0 : !llvm.array<256 x i8>\n"                                                   \
  "  }\n"

/* 64 threads and 256 bytes of shared memory. emu_race / emu_norace: smem[t] = t, then
 * out[t] = smem[(t + 1) % 64], without / with the barrier between. emu_race_ww: every thread
 * stores t to smem[0], then out[t] = smem[0] after a barrier. emu_uninit: out[t] = smem[t],
 * which no thread wrote. */
#define SHARED_KERNEL(name, barrier)                                                               \
  "  llvm.func @" name "(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = "             \
  "array<i32: 64, 1, 1>} {\n"                                                                      \
  "    %c1 = llvm.mlir.constant(1 : i32) : i32\n"                                                  \
  "    %c63 = llvm.mlir.constant(63 : i32) : i32\n"                                                \
  "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"                                                      \
  "    %smem = llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>\n"                                    \
  "    %p = llvm.getelementptr %smem[%t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"             \
  "    llvm.store %t, %p : i32, !llvm.ptr<3>\n" barrier "    %t1 = llvm.add %t, %c1 : i32\n"       \
  "    %u = llvm.and %t1, %c63 : i32\n"                                                            \
  "    %q = llvm.getelementptr %smem[%u] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"             \
  "    %v = llvm.load %q : !llvm.ptr<3> -> i32\n"                                                  \
  "    %o = llvm.getelementptr %out[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"              \
  "    llvm.store %v, %o : i32, !llvm.ptr<1>\n"                                                    \
  "    llvm.return\n"                                                                              \
  "  }\n"

static const char *const SHARED_IR =
    "module attributes {kiln.gpu.smem_bytes = 256 : i64} {\n" SMEM_256 SHARED_KERNEL("emu_race", "")
        SHARED_KERNEL(
            "emu_norace",
            "    nvvm.barrier0\n") "  llvm.func @emu_race_ww(%out: !llvm.ptr<1>) attributes "
                                   "{nvvm.kernel, nvvm.maxntid = "
                                   "array<i32: 64, 1, 1>} {\n"
                                   "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
                                   "    %smem = llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>\n"
                                   "    llvm.store %t, %smem : i32, !llvm.ptr<3>\n"
                                   "    nvvm.barrier0\n"
                                   "    %v = llvm.load %smem : !llvm.ptr<3> -> i32\n"
                                   "    %o = llvm.getelementptr %out[%t] : (!llvm.ptr<1>, i32) -> "
                                   "!llvm.ptr<1>, i32\n"
                                   "    llvm.store %v, %o : i32, !llvm.ptr<1>\n"
                                   "    llvm.return\n"
                                   "  }\n"
                                   "  llvm.func @emu_uninit(%out: !llvm.ptr<1>) attributes "
                                   "{nvvm.kernel, nvvm.maxntid = "
                                   "array<i32: 64, 1, 1>} {\n"
                                   "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
                                   "    %smem = llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>\n"
                                   "    nvvm.barrier0\n"
                                   "    %p = llvm.getelementptr %smem[%t] : (!llvm.ptr<3>, i32) -> "
                                   "!llvm.ptr<3>, i32\n"
                                   "    %v = llvm.load %p : !llvm.ptr<3> -> i32\n"
                                   "    %o = llvm.getelementptr %out[%t] : (!llvm.ptr<1>, i32) -> "
                                   "!llvm.ptr<1>, i32\n"
                                   "    llvm.store %v, %o : i32, !llvm.ptr<1>\n"
                                   "    llvm.return\n"
                                   "  }\n"
                                   "}\n";

/* 32 threads; out[2t] = tanh.approx(in[t]), out[2t + 1] = ex2.approx.ftz(in[t]),
 * out[64 + t] = rcp.approx.ftz(in[t]), as lower_math.c emits them. */
static const char *const APPROX_IR =
    "module {\n"
    "  llvm.func @emu_approx(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel, "
    "nvvm.maxntid = array<i32: 32, 1, 1>} {\n"
    "    %c1 = llvm.mlir.constant(1 : i32) : i32\n"
    "    %c2 = llvm.mlir.constant(2 : i32) : i32\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %p = llvm.getelementptr %in[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    %x = llvm.load %p {alignment = 4 : i64} : !llvm.ptr<1> -> f32\n"
    "    %y = llvm.inline_asm \"tanh.approx.f32 $0, $1;\", \"=f,f\" %x : (f32) -> f32\n"
    "    %z = llvm.inline_asm \"ex2.approx.ftz.f32 $0, $1;\", \"=f,f\" %x : (f32) -> f32\n"
    "    %i = llvm.mul %t, %c2 : i32\n"
    "    %j = llvm.add %i, %c1 : i32\n"
    "    %q = llvm.getelementptr %out[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %y, %q {alignment = 4 : i64} : f32, !llvm.ptr<1>\n"
    "    %r = llvm.getelementptr %out[%j] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %z, %r {alignment = 4 : i64} : f32, !llvm.ptr<1>\n"
    "    %w = llvm.inline_asm \"rcp.approx.ftz.f32 $0, $1;\", \"=f,f\" %x : (f32) -> f32\n"
    "    %c64 = llvm.mlir.constant(64 : i32) : i32\n"
    "    %k = llvm.add %t, %c64 : i32\n"
    "    %s = llvm.getelementptr %out[%k] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %w, %s {alignment = 4 : i64} : f32, !llvm.ptr<1>\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

/* One thread's predicated 128-bit load as lower_memory.c writes it (kiln_gpu_pred_access_ptx:
 * the words start as `other`, 7, and `@p ld.global.v4.b32` overwrites them where p holds) from
 * in + off floats under p = (on != 0); the four words go to out[0..3]. */
static const char *const PRED_IR =
    "module {\n"
    "  llvm.func @emu_pred(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>, %off: i32, %on: i32) "
    "attributes {nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>} {\n"
    "    %c0 = llvm.mlir.constant(0 : i32) : i32\n"
    "    %c7 = llvm.mlir.constant(7 : i32) : i32\n"
    "    %p = llvm.getelementptr %in[%off] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    %m = llvm.icmp \"ne\" %on, %c0 : i32\n"
    "    %r = llvm.inline_asm has_side_effects \"mov.b32 $0, $6; mov.b32 $1, $7; mov.b32 $2, $8; "
    "mov.b32 $3, $9; @$5 ld.global.v4.b32 {$0, $1, $2, $3}, [$4];\", "
    "\"=r,=r,=r,=r,l,b,r,r,r,r\" %p, %m, %c7, %c7, %c7, %c7 : (!llvm.ptr<1>, i1, i32, i32, i32, "
    "i32) "
    "-> !llvm.struct<(i32, i32, i32, i32)>\n"
    "    %w0 = llvm.extractvalue %r[0] : !llvm.struct<(i32, i32, i32, i32)>\n"
    "    %w3 = llvm.extractvalue %r[3] : !llvm.struct<(i32, i32, i32, i32)>\n"
    "    %c3 = llvm.mlir.constant(3 : i32) : i32\n"
    "    %q0 = llvm.getelementptr %out[%c0] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    %q3 = llvm.getelementptr %out[%c3] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    llvm.store %w0, %q0 {alignment = 4 : i64} : i32, !llvm.ptr<1>\n"
    "    llvm.store %w3, %q3 {alignment = 4 : i64} : i32, !llvm.ptr<1>\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

/* Launches kernel `name` of mod on a grid of blocks with args (pointers to the values). */
static KilnRtStatus launch(KilnRtModule *mod, const char *name, const uint32_t grid[3],
                           void **args) {
  KilnRtFunction *fn = NULL;
  KilnRtStatus st = kiln_rt_module_get_function(mod, name, &fn);
  if (st != KILN_RT_OK) return st;
  KilnRtLaunchConfig cfg = {.grid = {grid[0], grid[1], grid[2]}, .block_threads = 0};
  return kiln_rt_launch(fn, &cfg, args, NULL);
}

/* Whether the last error mentions every one of the NULL-terminated words. */
static bool message_has(const char *const *words) {
  for (; *words; words++)
    if (!strstr(kiln_rt_last_error(), *words)) return false;
  return true;
}

#define EXPECT_FAILURE(st, want, ...)                                                              \
  do {                                                                                             \
    const char *const words_[] = {__VA_ARGS__, NULL};                                              \
    CHECK((st) == (want), "gave %s, want %s (%s)", kiln_rt_status_name(st),                        \
          kiln_rt_status_name(want), kiln_rt_last_error());                                        \
    CHECK(message_has(words_), "message: %s", kiln_rt_last_error());                               \
    printf("  reported: %s\n", kiln_rt_last_error());                                              \
  } while (0)

/* ---- launch limits ------------------------------------------------------------------------- */

static void test_pointer_alignment(KilnRtDevice *dev, float *buf) {
  printf("emu_vec: pointer arguments aligned as the code assumes\n");
  KilnRtModule *mod = emu_ir_load(dev, VEC_IR, "emu_vec");
  if (!mod) return;
  const uint32_t one[3] = {1, 1, 1};
  for (int i = 0; i < 512; i++) buf[i] = (float)i;
  float *in = buf, *out = buf + 256;
  void *args[] = {&in, &out};
  KilnRtStatus st = launch(mod, "emu_vec", one, args);
  CHECK(st == KILN_RT_OK, "aligned launch: %s", kiln_rt_last_error());
  for (int i = 0; st == KILN_RT_OK && i < 128; i++)
    CHECK(out[i] == (float)i, "out[%d] = %g, want %d (exact copy)", i, out[i], i);

  float *in1 = buf + 1, *out1 = buf + 257; /* views 4 bytes into the buffers */
  void *bad_in[] = {&in1, &out};
  st = launch(mod, "emu_vec", one, bad_in);
  EXPECT_FAILURE(st, KILN_RT_ERROR_INVALID_ARGUMENT, "emu_vec", "argument 0", "16-byte aligned");
  void *bad_out[] = {&in, &out1};
  st = launch(mod, "emu_vec", one, bad_out);
  EXPECT_FAILURE(st, KILN_RT_ERROR_INVALID_ARGUMENT, "emu_vec", "argument 1", "16-byte aligned");
  kiln_rt_module_destroy(mod);
}

/* KILN_EMU_INDEX_LIMIT: emu_vec copies elements 0..127 of `in` (the start of buf's allocation)
 * to an allocation of its own; with the limit at 64 the load of elements 64..67 (thread 16) is
 * reported, at 128 none is, and a bad value is refused. The limit counts from the kernel's
 * pointer argument, as its offsets do: with `in` a view 64 floats into buf, thread 16 is still
 * the first reported (counted from buf's start, thread 0 would be, at elements 64..67, which
 * its 32-bit offset 0 never wraps at). Hand-written IR records no offset bits, so the launch
 * check of 32-bit kernels (test_emu_offsets.c) does not act here. */
static void test_index_limit(KilnRtDevice *dev, float *buf) {
  printf("emu_vec: the 32-bit index limit, lowered (KILN_EMU_INDEX_LIMIT)\n");
  KilnRtModule *mod = emu_ir_load(dev, VEC_IR, "emu_vec");
  float *out = NULL;
  if (!mod || kiln_rt_malloc(dev, 128 * sizeof *out, (void **)&out) != KILN_RT_OK) {
    CHECK(mod == NULL, "kiln_rt_malloc: %s", kiln_rt_last_error());
    if (mod) kiln_rt_module_destroy(mod);
    return;
  }
  const uint32_t one[3] = {1, 1, 1};
  float *in = buf;
  void *args[] = {&in, &out};
  setenv("KILN_EMU_INDEX_LIMIT", "64", 1);
  EXPECT_FAILURE(launch(mod, "emu_vec", one, args), KILN_RT_ERROR_LAUNCH, "emu_vec", "thread 16",
                 "global load of elements 64..67", "index limit 64", "4-byte elements");
  float *view = buf + 64;
  void *view_args[] = {&view, &out};
  EXPECT_FAILURE(launch(mod, "emu_vec", one, view_args), KILN_RT_ERROR_LAUNCH, "emu_vec",
                 "thread 16", "global load of elements 64..67 from pointer argument",
                 "index limit 64");
  setenv("KILN_EMU_INDEX_LIMIT", "128", 1);
  KilnRtStatus st = launch(mod, "emu_vec", one, args);
  CHECK(st == KILN_RT_OK, "limit 128: %s", kiln_rt_last_error());
  st = launch(mod, "emu_vec", one, view_args);
  CHECK(st == KILN_RT_OK, "limit 128, a view 64 elements in: %s", kiln_rt_last_error());
  setenv("KILN_EMU_INDEX_LIMIT", "-1", 1);
  EXPECT_FAILURE(launch(mod, "emu_vec", one, args), KILN_RT_ERROR_INVALID_ARGUMENT,
                 "KILN_EMU_INDEX_LIMIT='-1'");
  unsetenv("KILN_EMU_INDEX_LIMIT");
  kiln_rt_free(dev, out);
  kiln_rt_module_destroy(mod);
}

static void test_grid_limits(KilnRtDevice *dev, float *buf) {
  printf("emu_vec: grid y and z at most 65535\n");
  KilnRtModule *mod = emu_ir_load(dev, VEC_IR, "emu_vec");
  if (!mod) return;
  float *in = buf, *out = buf + 256;
  void *args[] = {&in, &out};
  const uint32_t y[3] = {1, 65536, 1}, z[3] = {1, 1, 70000};
  EXPECT_FAILURE(launch(mod, "emu_vec", y, args), KILN_RT_ERROR_INVALID_ARGUMENT, "emu_vec",
                 "grid[1] = 65536", "65535");
  EXPECT_FAILURE(launch(mod, "emu_vec", z, args), KILN_RT_ERROR_INVALID_ARGUMENT, "emu_vec",
                 "grid[2] = 70000");
  kiln_rt_module_destroy(mod);
}

/* emu_regs at `threads` x `regs`, launched on one block copying buf[0..) to buf[256..). */
static KilnRtStatus launch_regs(KilnRtDevice *dev, float *buf, unsigned threads, unsigned regs) {
  char ir[2048];
  snprintf(ir, sizeof ir, REGS_IR_FMT, regs, threads);
  KilnRtModule *mod = emu_ir_load(dev, ir, "emu_regs");
  if (!mod) return KILN_RT_ERROR_LOAD;
  float *in = buf, *out = buf + 256;
  void *args[] = {&in, &out};
  const uint32_t one[3] = {1, 1, 1};
  KilnRtStatus st = launch(mod, "emu_regs", one, args);
  kiln_rt_module_destroy(mod);
  return st;
}

static void test_register_limits(KilnRtDevice *dev, float *buf) {
  printf("emu_regs: threads x registers within the register file, at most 255 per thread\n");
  EXPECT_FAILURE(launch_regs(dev, buf, 1024, 128), KILN_RT_ERROR_INVALID_ARGUMENT, "emu_regs",
                 "1024 threads x 128 registers = 131072", "65536");
  EXPECT_FAILURE(launch_regs(dev, buf, 32, 256), KILN_RT_ERROR_INVALID_ARGUMENT, "emu_regs",
                 "256 registers per thread", "255");
  for (int i = 0; i < 128; i++) buf[i] = (float)(3 * i);
  KilnRtStatus st = launch_regs(dev, buf, 32, 255);
  CHECK(st == KILN_RT_OK, "32 threads x 255 registers: %s", kiln_rt_last_error());
  for (int i = 0; st == KILN_RT_OK && i < 128; i++)
    CHECK(buf[256 + i] == (float)(3 * i), "out[%d] = %g, want %d", i, buf[256 + i], 3 * i);
}

static void test_static_shared_limit(KilnRtDevice *dev, float *buf) {
  printf("emu_big_smem: static shared memory at most 48 KiB\n");
  KilnRtModule *mod = emu_ir_load(dev, BIG_SMEM_IR, "emu_big_smem");
  if (!mod) return;
  const uint32_t one[3] = {1, 1, 1};
  void *args[] = {&buf};
  EXPECT_FAILURE(launch(mod, "emu_big_smem", one, args), KILN_RT_ERROR_INVALID_ARGUMENT,
                 "emu_big_smem", "50000 bytes of static shared memory");
  kiln_rt_module_destroy(mod);
}

/* ---- memcheck ------------------------------------------------------------------------------ */

static void test_memcheck(KilnRtDevice *dev, float *buf) {
  printf("memcheck: out of bounds, misaligned, masked\n");
  KilnRtModule *mod = emu_ir_load(dev, OOB_IR, "memcheck kernels");
  float *in = NULL; /* exactly 32 floats: the allocation cache hands out a larger block */
  if (!mod || kiln_rt_malloc(dev, 32 * sizeof *in, (void **)&in) != KILN_RT_OK) {
    CHECK(0, "setup: %s", kiln_rt_last_error());
    kiln_rt_module_destroy(mod);
    return;
  }
  for (int i = 0; i < 32; i++) in[i] = (float)(i + 1);
  float *out = buf + 256;
  const uint32_t one[3] = {1, 1, 1};
  setenv("KILN_EMU_CHECK", "mem", 1);

  int32_t off = 0;
  void *args[] = {&in, &out, &off};
  KilnRtStatus st = launch(mod, "emu_oob", one, args);
  CHECK(st == KILN_RT_OK, "emu_oob in bounds: %s", kiln_rt_last_error());
  for (int t = 0; st == KILN_RT_OK && t < 32; t++)
    CHECK(out[t] == (float)(t + 1), "emu_oob out[%d] = %g, want %d", t, out[t], t + 1);
  off = 1; /* thread 31 reads in[32], the first float past the allocation */
  EXPECT_FAILURE(launch(mod, "emu_oob", one, args), KILN_RT_ERROR_LAUNCH, "'emu_oob'",
                 "KILN_EMU_ERROR_MEMORY", "thread 31", "global load of 4 bytes", "out of bounds",
                 "of 128 bytes");
  /* What the check is for: without it the same launch "succeeds", reading the allocation
   * cache's spare bytes (a GPU would fault or read a neighbour's data). */
  setenv("KILN_EMU_CHECK", "none", 1);
  CHECK(launch(mod, "emu_oob", one, args) == KILN_RT_OK, "unchecked emu_oob: %s",
        kiln_rt_last_error());
  setenv("KILN_EMU_CHECK", "mem", 1);

  int32_t n = 20; /* lanes 20..31 are masked off: they must not load in[20..31] */
  float *in20 = NULL;
  CHECK(kiln_rt_malloc(dev, 20 * sizeof *in20, (void **)&in20) == KILN_RT_OK, "malloc");
  for (int i = 0; in20 && i < 20; i++) in20[i] = (float)(100 + i);
  void *margs[] = {&in20, &out, &n};
  memset(out, 0, 32 * sizeof *out);
  st = launch(mod, "emu_masked", one, margs);
  CHECK(st == KILN_RT_OK, "emu_masked: %s", kiln_rt_last_error());
  for (int t = 0; st == KILN_RT_OK && t < 32; t++)
    CHECK(out[t] == (t < 20 ? (float)(100 + t) : 0.0f), "emu_masked out[%d] = %g", t, out[t]);
  n = 21; /* a mask one lane too wide: lane 20 reads past the end */
  EXPECT_FAILURE(launch(mod, "emu_masked", one, margs), KILN_RT_ERROR_LAUNCH, "'emu_masked'",
                 "thread 20", "out of bounds");

  void *vargs[] = {&in, &out};
  EXPECT_FAILURE(launch(mod, "emu_misaligned", one, vargs), KILN_RT_ERROR_LAUNCH,
                 "'emu_misaligned'", "KILN_EMU_ERROR_MEMORY", "thread 0", "global load of 16 bytes",
                 "misaligned", "16-byte alignment", "4 bytes into allocation");
  kiln_rt_free(dev, in20);
  kiln_rt_free(dev, in);
  kiln_rt_module_destroy(mod);
}

/* ---- racecheck, initcheck, schedules -------------------------------------------------------- */

static void test_shared_checks(KilnRtDevice *dev, int32_t *out) {
  printf("racecheck / initcheck\n");
  KilnRtModule *mod = emu_ir_load(dev, SHARED_IR, "shared kernels");
  if (!mod) return;
  const uint32_t two[3] = {2, 1, 1};
  void *args[] = {&out};
  setenv("KILN_EMU_CHECK", "all", 1);
  KilnRtStatus st = launch(mod, "emu_norace", two, args);
  CHECK(st == KILN_RT_OK, "emu_norace: %s", kiln_rt_last_error());
  for (int t = 0; st == KILN_RT_OK && t < 64; t++)
    CHECK(out[t] == ((t + 1) & 63), "emu_norace out[%d] = %d, want %d", t, out[t], (t + 1) & 63);

  /* Without initcheck, thread 0 reads smem[1] first; thread 1's store then meets that read.
   * (In thread order the last thread to reach a barrier goes on first: emu_uninit's first
   * read is thread 63's.) */
  setenv("KILN_EMU_CHECK", "race", 1);
  EXPECT_FAILURE(launch(mod, "emu_race", two, args), KILN_RT_ERROR_LAUNCH, "'emu_race'",
                 "KILN_EMU_ERROR_RACE", "thread 1 (warp 0 lane 1)", "write-after-read",
                 "shared store", "offset 4", "thread 0 (warp 0 lane 0) read");
  EXPECT_FAILURE(launch(mod, "emu_race_ww", two, args), KILN_RT_ERROR_LAUNCH, "'emu_race_ww'",
                 "KILN_EMU_ERROR_RACE", "thread 1 ", "write-after-write", "offset 0",
                 "thread 0 (warp 0 lane 0) wrote");
  setenv("KILN_EMU_CHECK", "init", 1);
  EXPECT_FAILURE(launch(mod, "emu_uninit", two, args), KILN_RT_ERROR_LAUNCH, "'emu_uninit'",
                 "KILN_EMU_ERROR_UNINIT", "thread 63 ", "shared load", "offset 252",
                 "no thread of the block wrote");
  /* With every check on, emu_race is caught too (initcheck first: smem[1] is not written yet). */
  setenv("KILN_EMU_CHECK", "all", 1);
  EXPECT_FAILURE(launch(mod, "emu_race", two, args), KILN_RT_ERROR_LAUNCH, "'emu_race'",
                 "thread 0 ");

  /* One block: both blocks write out[0..63], so with two the answer would depend on which OS
   * thread finished last. */
  const uint32_t one[3] = {1, 1, 1};
  printf("schedules: KILN_EMU_SEED\n");
  setenv("KILN_EMU_CHECK", "none", 1);
  int32_t seen[8];
  int distinct = 0;
  for (int seed = 1; seed <= 8; seed++) {
    char text[16];
    snprintf(text, sizeof text, "%d", seed);
    setenv("KILN_EMU_SEED", text, 1);
    st = launch(mod, "emu_race_ww", one, args);
    CHECK(st == KILN_RT_OK, "emu_race_ww seed %d: %s", seed, kiln_rt_last_error());
    seen[seed - 1] = out[0];
    bool is_new = true;
    for (int k = 0; k < seed - 1; k++) is_new = is_new && seen[k] != out[0];
    distinct += is_new;
  }
  printf("  last writer under seeds 1..8: %d distinct\n", distinct);
  CHECK(distinct >= 2, "8 seeds gave %d distinct last writers: the order is not random", distinct);
  setenv("KILN_EMU_SEED", "3", 1);
  st = launch(mod, "emu_race_ww", one, args);
  CHECK(st == KILN_RT_OK && out[0] == seen[2], "seed 3 again gave %d, first %d", out[0], seen[2]);
  unsetenv("KILN_EMU_SEED");
  st = launch(mod, "emu_race_ww", one, args);
  CHECK(st == KILN_RT_OK && out[0] == 63, "thread order: last writer %d, want 63", out[0]);

  setenv("KILN_EMU_CHECK", "mem,bogus", 1);
  EXPECT_FAILURE(launch(mod, "emu_norace", two, args), KILN_RT_ERROR_INVALID_ARGUMENT,
                 "KILN_EMU_CHECK='mem,bogus'");
  setenv("KILN_EMU_CHECK", "all", 1);
  setenv("KILN_EMU_SEED", "-4", 1);
  EXPECT_FAILURE(launch(mod, "emu_norace", two, args), KILN_RT_ERROR_INVALID_ARGUMENT,
                 "KILN_EMU_SEED='-4'");
  unsetenv("KILN_EMU_SEED");
  unsetenv("KILN_EMU_CHECK");
  kiln_rt_module_destroy(mod);
}

/* ---- predicated vector accesses ------------------------------------------------------------ */

/* The emu rewrite of `@p ld.global.v4.b32`: where p holds, the whole 16 bytes are checked
 * (bounds, 16-byte alignment) and loaded; where it does not, nothing is touched, however far
 * outside every allocation the address is, and the words keep their `other`. */
static void test_pred_access(KilnRtDevice *dev, float *buf) {
  printf("predicated vector loads: masked-off lanes touch no memory\n");
  KilnRtModule *mod = emu_ir_load(dev, PRED_IR, "emu_pred");
  int32_t *in = NULL; /* exactly 32 words */
  if (!mod || kiln_rt_malloc(dev, 32 * sizeof *in, (void **)&in) != KILN_RT_OK) {
    CHECK(0, "setup: %s", kiln_rt_last_error());
    kiln_rt_module_destroy(mod);
    return;
  }
  for (int i = 0; i < 32; i++) in[i] = 100 + i;
  int32_t *out = (int32_t *)(buf + 128);
  const uint32_t one[3] = {1, 1, 1};
  setenv("KILN_EMU_CHECK", "mem", 1);
  int32_t off = 4, on = 1;
  void *args[] = {&in, &out, &off, &on};
  KilnRtStatus st = launch(mod, "emu_pred", one, args);
  CHECK(st == KILN_RT_OK && out[0] == 104 && out[3] == 107, "on: %s, words %d %d, want 104 107",
        kiln_rt_last_error(), out[0], out[3]);
  off = 1 << 20, on = 0; /* 4 MiB past the allocation, predicated off */
  st = launch(mod, "emu_pred", one, args);
  CHECK(st == KILN_RT_OK && out[0] == 7 && out[3] == 7, "off: %s, words %d %d, want 7 7",
        kiln_rt_last_error(), out[0], out[3]);
  off = 30, on = 1; /* words 30..33: the vector crosses the allocation's end */
  EXPECT_FAILURE(launch(mod, "emu_pred", one, args), KILN_RT_ERROR_LAUNCH, "'emu_pred'",
                 "KILN_EMU_ERROR_MEMORY", "global load of 16 bytes", "out of bounds");
  off = 2; /* 8 bytes into the allocation: not the 16 the vector needs */
  EXPECT_FAILURE(launch(mod, "emu_pred", one, args), KILN_RT_ERROR_LAUNCH, "'emu_pred'",
                 "global load of 16 bytes", "misaligned");
  unsetenv("KILN_EMU_CHECK");
  kiln_rt_free(dev, in);
  kiln_rt_module_destroy(mod);
}

/* ---- approximate math ------------------------------------------------------------------------ */

/* Exact mode gives host math bit for bit; pessimistic mode moves tanh.approx by its documented
 * 2^-10.987 relative error (within 2%: the f32 rounding of a bound ~2^13 ulp wide), ex2.approx
 * by at most 4 ulp, rcp.approx by 1 to 2 ulps, and flushes ex2.approx.ftz's subnormal result 2^-130
 * to zero. */
static void test_approx(KilnRtDevice *dev, float *buf) {
  printf("approximate math: KILN_EMU_MATH\n");
  KilnRtModule *mod = emu_ir_load(dev, APPROX_IR, "emu_approx");
  if (!mod) return;
  float *in = buf, *out = buf + 256;
  for (int t = 0; t < 31; t++) in[t] = 0.25f + 0.1f * (float)t;
  in[31] = -130.0f; /* 2^-130 is subnormal */
  const uint32_t one[3] = {1, 1, 1};
  void *args[] = {&in, &out};
  setenv("KILN_EMU_MATH", "exact", 1);
  KilnRtStatus st = launch(mod, "emu_approx", one, args);
  CHECK(st == KILN_RT_OK, "exact: %s", kiln_rt_last_error());
  for (int t = 0; st == KILN_RT_OK && t < 32; t++)
    CHECK(out[2 * t] == tanhf(in[t]) && out[2 * t + 1] == exp2f(in[t]),
          "exact t=%d: tanh %a (host %a), ex2 %a (host %a)", t, out[2 * t], tanhf(in[t]),
          out[2 * t + 1], exp2f(in[t]));
  for (int t = 0; st == KILN_RT_OK && t < 32; t++)
    CHECK(out[64 + t] == 1.0f / in[t], "exact rcp(%g) = %a, host %a", in[t], out[64 + t],
          1.0f / in[t]);

  setenv("KILN_EMU_MATH", "pessimistic", 1);
  st = launch(mod, "emu_approx", one, args);
  CHECK(st == KILN_RT_OK, "pessimistic: %s", kiln_rt_last_error());
  const double tanh_bound = pow(2.0, -10.987);
  int up = 0;
  for (int t = 0; st == KILN_RT_OK && t < 31; t++) {
    double host = tanh((double)in[t]);
    double rel = fabs(out[2 * t] - host) / host;
    CHECK(rel > 0.98 * tanh_bound && rel < 1.02 * tanh_bound,
          "pessimistic tanh(%g): relative error %.3e, want %.3e", in[t], rel, tanh_bound);
    up += out[2 * t] > host;
    float e = exp2f(in[t]);
    CHECK(fabsf(out[2 * t + 1] - e) <= 4 * (nextafterf(e, INFINITY) - e),
          "pessimistic ex2(%g) = %a, host %a: more than 4 ulp", in[t], out[2 * t + 1], e);
  }
  CHECK(up > 0 && up < 31, "tanh errors all lean one way (%d of 31 up)", up);
  /* rcp.approx.ftz: its 1 ulp applied as 2^-23 relative, which is 1 to 2 ulps of the result
   * (pessimistic at the top of a binade), so each result moves, by at most 2 ulps */
  int moved = 0;
  for (int t = 0; st == KILN_RT_OK && t < 32; t++) {
    float r = 1.0f / in[t], ulp = fabsf(nextafterf(r, INFINITY) - r);
    CHECK(fabsf(out[64 + t] - r) <= 2 * ulp, "pessimistic rcp(%g) = %a, host %a: more than 2 ulp",
          in[t], out[64 + t], r);
    moved += out[64 + t] != r;
  }
  CHECK(moved == 32, "pessimistic rcp moved only %d of 32 results", moved);
  CHECK(st != KILN_RT_OK || (out[63] == 0.0f && exp2f(-130.0f) > 0.0f),
        "ex2.approx.ftz(-130) = %a, want 0 (flushed)", out[63]);
  printf("  tanh.approx off by 2^-10.987 relative, %d of 31 up; ex2.approx.ftz(-130) = %g\n", up,
         out[63]);
  setenv("KILN_EMU_MATH", "fast", 1);
  EXPECT_FAILURE(launch(mod, "emu_approx", one, args), KILN_RT_ERROR_INVALID_ARGUMENT,
                 "KILN_EMU_MATH='fast'");
  unsetenv("KILN_EMU_MATH");
  kiln_rt_module_destroy(mod);
}

int main(void) {
  KilnRtDevice *dev = NULL;
  if (kiln_rt_device_create("emu", &dev) != KILN_RT_OK) {
    fprintf(stderr, "cannot open the emu device: %s\n", kiln_rt_last_error());
    return 1;
  }
  float *buf = NULL;
  if (kiln_rt_malloc(dev, 512 * sizeof *buf, (void **)&buf) != KILN_RT_OK) {
    fprintf(stderr, "kiln_rt_malloc: %s\n", kiln_rt_last_error());
    kiln_rt_device_destroy(dev);
    return 1;
  }
  test_pointer_alignment(dev, buf);
  test_grid_limits(dev, buf);
  test_index_limit(dev, buf);
  test_static_shared_limit(dev, buf);
  test_register_limits(dev, buf);
  test_memcheck(dev, buf);
  test_shared_checks(dev, (int32_t *)(buf + 256));
  test_pred_access(dev, buf);
  test_approx(dev, buf);

  kiln_rt_free(dev, buf);
  kiln_rt_device_destroy(dev);
  return kiln_check_result("test_emu_sanitize");
}
