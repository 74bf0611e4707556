/* test_emu_lowered.c — the emu target end to end on hand-written SIMT kernels.
 *
 * Each kernel is llvm + nvvm dialect IR of the kind convert-kiln-gpu-to-llvm produces (special
 * registers, the static @kiln_smem arena in address space 3, barrier0, shfl.sync, trap). The test
 * runs kiln-gpu-to-emu on it, emits a host object, loads it on the runtime's `emu` device and
 * launches it, so the pass, the module interface (kiln_emu_entry_NAME / kiln_emu_meta_NAME),
 * symbol resolution of the intrinsics at dlopen and the error path are all exercised:
 *   - emu_ok: shared memory exchange across warps and a butterfly shuffle, values checked;
 *   - emu_diverge: half a warp at bar.sync, the other half at a warp shuffle: the launch must
 *     fail with KILN_RT_ERROR_LAUNCH and the emulator's deadlock report, not hang;
 *   - emu_trap: one thread traps: KILN_RT_ERROR_LAUNCH naming the trap.
 * Kiln source cannot express per-thread divergence (control flow is uniform per program), which
 * is why these kernels are written below the language.
 */
#include "../common/check.h"
#include "emu_ir_load.h"
#include "kiln_gpu.h"
#include "kiln_mlir.h"

#include <kiln/kilnrt.h>

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 64 threads per block. Thread t stores t + 1 to smem[t]; after the barrier it reads
 * smem[63 - t], takes lane ^ 1's value by shfl.sync.bfly and stores 1000 * ctaid + that value to
 * out[64 * ctaid + t]. */
static const char *const OK_IR =
    "module attributes {kiln.gpu.smem_bytes = 256 : i64} {\n"
    "  llvm.mlir.global internal @kiln_smem() {addr_space = 3 : i32, alignment = 16 : i64} : "
    "!llvm.array<256 x i8> {\n"
    "    %0 = llvm.mlir.undef : !llvm.array<256 x i8>\n"
    "    llvm.return %0 : !llvm.array<256 x i8>\n"
    "  }\n"
    "  llvm.func @emu_ok(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = array<i32: "
    "64, 1, 1>} {\n"
    "    %c1 = llvm.mlir.constant(1 : i32) : i32\n"
    "    %c31 = llvm.mlir.constant(31 : i32) : i32\n"
    "    %c63 = llvm.mlir.constant(63 : i32) : i32\n"
    "    %c64 = llvm.mlir.constant(64 : i32) : i32\n"
    "    %c1000 = llvm.mlir.constant(1000 : i32) : i32\n"
    "    %full = llvm.mlir.constant(-1 : i32) : i32\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %b = nvvm.read.ptx.sreg.ctaid.x : i32\n"
    "    %smem = llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>\n"
    "    %p = llvm.getelementptr %smem[%t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
    "    %t1 = llvm.add %t, %c1 : i32\n"
    "    llvm.store %t1, %p : i32, !llvm.ptr<3>\n"
    "    nvvm.barrier0\n"
    "    %u = llvm.sub %c63, %t : i32\n"
    "    %q = llvm.getelementptr %smem[%u] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
    "    %v = llvm.load %q : !llvm.ptr<3> -> i32\n"
    "    %w = nvvm.shfl.sync bfly %full, %v, %c1, %c31 : i32 -> i32\n"
    "    %base = llvm.mul %b, %c1000 : i32\n"
    "    %r = llvm.add %base, %w : i32\n"
    "    %row = llvm.mul %b, %c64 : i32\n"
    "    %i = llvm.add %row, %t : i32\n"
    "    %o = llvm.getelementptr %out[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    llvm.store %r, %o : i32, !llvm.ptr<1>\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

/* Lanes 0-15 wait at bar.sync 0 while lanes 16-31 wait in a full-warp shuffle: nothing can
 * ever proceed. */
static const char *const DIVERGE_IR =
    "module {\n"
    "  llvm.func @emu_diverge(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = "
    "array<i32: 32, 1, 1>} {\n"
    "    %c1 = llvm.mlir.constant(1 : i32) : i32\n"
    "    %c16 = llvm.mlir.constant(16 : i32) : i32\n"
    "    %c31 = llvm.mlir.constant(31 : i32) : i32\n"
    "    %full = llvm.mlir.constant(-1 : i32) : i32\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %lo = llvm.icmp \"ult\" %t, %c16 : i32\n"
    "    llvm.cond_br %lo, ^bar, ^shfl\n"
    "  ^bar:\n"
    "    nvvm.barrier0\n"
    "    llvm.br ^done\n"
    "  ^shfl:\n"
    "    %w = nvvm.shfl.sync bfly %full, %t, %c1, %c31 : i32 -> i32\n"
    "    llvm.store %w, %out : i32, !llvm.ptr<1>\n"
    "    llvm.br ^done\n"
    "  ^done:\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

static const char *const TRAP_IR =
    "module {\n"
    "  llvm.func @emu_trap(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.maxntid = "
    "array<i32: 32, 1, 1>} {\n"
    "    %c5 = llvm.mlir.constant(5 : i32) : i32\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %is5 = llvm.icmp \"eq\" %t, %c5 : i32\n"
    "    llvm.cond_br %is5, ^trap, ^done\n"
    "  ^trap:\n"
    "    \"llvm.intr.trap\"() : () -> ()\n"
    "    llvm.br ^done\n"
    "  ^done:\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

static KilnRtStatus launch(KilnRtModule *mod, const char *name, uint32_t grid, uint32_t block,
                           void *out) {
  KilnRtFunction *fn = NULL;
  KilnRtStatus st = kiln_rt_module_get_function(mod, name, &fn);
  if (st != KILN_RT_OK) return st;
  KilnRtLaunchConfig cfg = {.grid = {grid, 1, 1}, .block_threads = block};
  void *args[] = {&out};
  return kiln_rt_launch(fn, &cfg, args, NULL);
}

int main(void) {
  KilnRtDevice *dev = NULL;
  if (kiln_rt_device_create("emu", &dev) != KILN_RT_OK) {
    fprintf(stderr, "cannot open the emu device: %s\n", kiln_rt_last_error());
    return 1;
  }
  int32_t *out = NULL;
  CHECK(kiln_rt_malloc(dev, 3 * 64 * sizeof *out, (void **)&out) == KILN_RT_OK, "malloc");

  KilnRtModule *mod = emu_ir_load(dev, OK_IR, "emu_ok");
  if (mod && out) {
    memset(out, 0xff, 3 * 64 * sizeof *out);
    KilnRtStatus st = launch(mod, "emu_ok", 3, 0, out); /* 0: the kernel's 64 threads */
    CHECK(st == KILN_RT_OK, "emu_ok launch: %s", kiln_rt_last_error());
    for (int b = 0; st == KILN_RT_OK && b < 3; b++)
      for (int t = 0; t < 64; t++) {
        int32_t want = 1000 * b + (63 - (t ^ 1)) + 1;
        CHECK(out[64 * b + t] == want, "emu_ok block %d thread %d: got %d want %d", b, t,
              out[64 * b + t], want);
      }
    /* The kernel was compiled for 64 threads: another block size is refused, not run wrongly. */
    st = launch(mod, "emu_ok", 1, 128, out);
    CHECK(st == KILN_RT_ERROR_INVALID_ARGUMENT, "emu_ok at 128 threads gave %s",
          kiln_rt_status_name(st));
    kiln_rt_module_destroy(mod);
  }

  mod = emu_ir_load(dev, DIVERGE_IR, "emu_diverge");
  if (mod) {
    KilnRtStatus st = launch(mod, "emu_diverge", 2, 32, out);
    CHECK(st == KILN_RT_ERROR_LAUNCH, "emu_diverge gave %s", kiln_rt_status_name(st));
    CHECK(strstr(kiln_rt_last_error(), "deadlock") != NULL, "message: %s", kiln_rt_last_error());
    printf("emu_diverge: %s\n", kiln_rt_last_error());
    kiln_rt_module_destroy(mod);
  }

  mod = emu_ir_load(dev, TRAP_IR, "emu_trap");
  if (mod) {
    KilnRtStatus st = launch(mod, "emu_trap", 4, 32, out);
    CHECK(st == KILN_RT_ERROR_LAUNCH, "emu_trap gave %s", kiln_rt_status_name(st));
    CHECK(strstr(kiln_rt_last_error(), "trap") != NULL &&
              strstr(kiln_rt_last_error(), "thread 5") != NULL,
          "message: %s", kiln_rt_last_error());
    printf("emu_trap: %s\n", kiln_rt_last_error());
    kiln_rt_module_destroy(mod);
  }

  kiln_rt_free(dev, out);
  kiln_rt_device_destroy(dev);
  return kiln_check_result("test_emu_lowered");
}
