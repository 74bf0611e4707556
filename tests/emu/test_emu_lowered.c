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
 *   - emu_trap: one thread traps: KILN_RT_ERROR_LAUNCH naming the trap;
 *   - emu_wgmma: sm_90's wgmma as the lowering writes it (gpu/wgmma.c's texts), descriptors
 *     built from the low bits of the shared arena's address (ptrtoint), D against a matmul;
 *   - emu_wgmma_rs: its RS form, A from four registers per thread in mma.sync's A fragment.
 * Kiln source cannot express per-thread divergence (control flow is uniform per program), which
 * is why these kernels are written below the language.
 */
#include "../common/check.h"
#include "emu_ir_load.h"
#include "kiln_base.h"
#include "kiln_gpu.h"
#include "kiln_mlir.h"

#include <kiln/kilnrt.h>

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <math.h>
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

/* 128 threads, one warpgroup: the 640 words of `in` (A, 64x16 f16, K-major core matrices with
 * LBO 128 and SBO 256 at byte 0; B, 16x8, the same at byte 2048) go to shared memory; after the
 * barrier and the async-proxy fence each thread runs m64n8k16 on accumulators 1.0 with
 * descriptors whose start is the low 18 bits of the arena's address, and stores its four
 * results to out[4 t + i]. */
static const char *const WGMMA_IR =
    "module attributes {kiln.gpu.smem_bytes = 2560 : i64} {\n"
    "  llvm.mlir.global internal @kiln_smem() {addr_space = 3 : i32, alignment = 16 : i64} : "
    "!llvm.array<2560 x i8> {\n"
    "    %0 = llvm.mlir.undef : !llvm.array<2560 x i8>\n"
    "    llvm.return %0 : !llvm.array<2560 x i8>\n"
    "  }\n"
    "  llvm.func @emu_wgmma(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel, "
    "nvvm.maxntid = array<i32: 128, 1, 1>} {\n"
    "    %c0 = llvm.mlir.constant(0 : i32) : i32\n"
    "    %c128 = llvm.mlir.constant(128 : i32) : i32\n"
    "    %c256 = llvm.mlir.constant(256 : i32) : i32\n"
    "    %c384 = llvm.mlir.constant(384 : i32) : i32\n"
    "    %c512 = llvm.mlir.constant(512 : i32) : i32\n"
    "    %c4 = llvm.mlir.constant(4 : i32) : i32\n"
    "    %c0x = llvm.mlir.constant(0 : i32) : i32\n"
    "    %c1x = llvm.mlir.constant(1 : i32) : i32\n"
    "    %c2x = llvm.mlir.constant(2 : i32) : i32\n"
    "    %c3x = llvm.mlir.constant(3 : i32) : i32\n"
    "    %one = llvm.mlir.constant(1.0 : f32) : f32\n"
    "    %low = llvm.mlir.constant(262143 : i64) : i64\n"
    "    %sh4 = llvm.mlir.constant(4 : i64) : i64\n"
    "    %b2048 = llvm.mlir.constant(2048 : i64) : i64\n"
    "    %fields = llvm.mlir.constant(68720001024 : i64) : i64\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %smem = llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>\n"
    "    %i0 = llvm.add %t, %c0 : i32\n"
    "    %g0 = llvm.getelementptr %in[%i0] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    %v0 = llvm.load %g0 : !llvm.ptr<1> -> i32\n"
    "    %s0 = llvm.getelementptr %smem[%i0] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
    "    llvm.store %v0, %s0 : i32, !llvm.ptr<3>\n"
    "    %i1 = llvm.add %t, %c128 : i32\n"
    "    %g1 = llvm.getelementptr %in[%i1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    %v1 = llvm.load %g1 : !llvm.ptr<1> -> i32\n"
    "    %s1 = llvm.getelementptr %smem[%i1] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
    "    llvm.store %v1, %s1 : i32, !llvm.ptr<3>\n"
    "    %i2 = llvm.add %t, %c256 : i32\n"
    "    %g2 = llvm.getelementptr %in[%i2] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    %v2 = llvm.load %g2 : !llvm.ptr<1> -> i32\n"
    "    %s2 = llvm.getelementptr %smem[%i2] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
    "    llvm.store %v2, %s2 : i32, !llvm.ptr<3>\n"
    "    %i3 = llvm.add %t, %c384 : i32\n"
    "    %g3 = llvm.getelementptr %in[%i3] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    %v3 = llvm.load %g3 : !llvm.ptr<1> -> i32\n"
    "    %s3 = llvm.getelementptr %smem[%i3] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
    "    llvm.store %v3, %s3 : i32, !llvm.ptr<3>\n"
    "    %i4 = llvm.add %t, %c512 : i32\n"
    "    %g4 = llvm.getelementptr %in[%i4] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    %v4 = llvm.load %g4 : !llvm.ptr<1> -> i32\n"
    "    %s4 = llvm.getelementptr %smem[%i4] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
    "    llvm.store %v4, %s4 : i32, !llvm.ptr<3>\n"
    "    nvvm.barrier0\n"
    "    llvm.inline_asm has_side_effects \"fence.proxy.async.shared::cta;\", \"\" : () -> ()\n"
    "    %sp = llvm.ptrtoint %smem : !llvm.ptr<3> to i64\n"
    "    %la = llvm.and %sp, %low : i64\n"
    "    %sa = llvm.lshr %la, %sh4 : i64\n"
    "    %da = llvm.or %sa, %fields : i64\n"
    "    %spb = llvm.add %sp, %b2048 : i64\n"
    "    %lb = llvm.and %spb, %low : i64\n"
    "    %sb = llvm.lshr %lb, %sh4 : i64\n"
    "    %db = llvm.or %sb, %fields : i64\n"
    "    %f = llvm.inline_asm has_side_effects \"wgmma.fence.sync.aligned;\", "
    "\"=f,=f,=f,=f,0,1,2,3\" %one, %one, %one, %one : (f32, f32, f32, f32) -> !llvm.struct<(f32, "
    "f32, f32, f32)>\n"
    "    %f0 = llvm.extractvalue %f[0] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %f1 = llvm.extractvalue %f[1] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %f2 = llvm.extractvalue %f[2] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %f3 = llvm.extractvalue %f[3] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %m = llvm.inline_asm has_side_effects \"{\\0A.reg .pred p;\\0Asetp.eq.u32 p, 1, "
    "1;\\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, $8, $9, p, 1, 1, "
    "0, 0;\\0A}\", \"=f,=f,=f,=f,0,1,2,3,l,l\" %f0, %f1, %f2, %f3, %da, %db : (f32, f32, f32, "
    "f32, i64, i64) -> !llvm.struct<(f32, f32, f32, f32)>\n"
    "    llvm.inline_asm has_side_effects \"wgmma.commit_group.sync.aligned;\", \"\" : () -> ()\n"
    "    %m0 = llvm.extractvalue %m[0] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %m1 = llvm.extractvalue %m[1] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %m2 = llvm.extractvalue %m[2] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %m3 = llvm.extractvalue %m[3] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %w = llvm.inline_asm has_side_effects \"wgmma.wait_group.sync.aligned 0;\", "
    "\"=f,=f,=f,=f,0,1,2,3\" %m0, %m1, %m2, %m3 : (f32, f32, f32, f32) -> !llvm.struct<(f32, f32, "
    "f32, f32)>\n"
    "    %base = llvm.mul %t, %c4 : i32\n"
    "    %w0 = llvm.extractvalue %w[0] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %j0 = llvm.add %base, %c0x : i32\n"
    "    %o0 = llvm.getelementptr %out[%j0] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %w0, %o0 : f32, !llvm.ptr<1>\n"
    "    %w1 = llvm.extractvalue %w[1] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %j1 = llvm.add %base, %c1x : i32\n"
    "    %o1 = llvm.getelementptr %out[%j1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %w1, %o1 : f32, !llvm.ptr<1>\n"
    "    %w2 = llvm.extractvalue %w[2] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %j2 = llvm.add %base, %c2x : i32\n"
    "    %o2 = llvm.getelementptr %out[%j2] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %w2, %o2 : f32, !llvm.ptr<1>\n"
    "    %w3 = llvm.extractvalue %w[3] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %j3 = llvm.add %base, %c3x : i32\n"
    "    %o3 = llvm.getelementptr %out[%j3] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %w3, %o3 : f32, !llvm.ptr<1>\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

/* emu_wgmma_rs: the RS form (A from registers). Thread t copies in[t] (B, 512 bytes of K-major
 * core matrices) into the arena, meets the block, loads its four A registers from
 * in[128 + 4t .. 128 + 4t + 3] and runs m64n8k16 on accumulators 1.0 with B's descriptor,
 * storing its four results to out[4 t + i]. */
static const char *const WGMMA_RS_IR =
    "module attributes {kiln.gpu.smem_bytes = 512 : i64} {\n"
    "  llvm.mlir.global internal @kiln_smem() {addr_space = 3 : i32, alignment = 16 : i64} : "
    "!llvm.array<512 x i8> {\n"
    "    %0 = llvm.mlir.undef : !llvm.array<512 x i8>\n"
    "    llvm.return %0 : !llvm.array<512 x i8>\n"
    "  }\n"
    "  llvm.func @emu_wgmma_rs(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel, "
    "nvvm.maxntid = array<i32: 128, 1, 1>} {\n"
    "    %c1 = llvm.mlir.constant(1 : i32) : i32\n"
    "    %c4 = llvm.mlir.constant(4 : i32) : i32\n"
    "    %c128 = llvm.mlir.constant(128 : i32) : i32\n"
    "    %one = llvm.mlir.constant(1.0 : f32) : f32\n"
    "    %low = llvm.mlir.constant(262143 : i64) : i64\n"
    "    %sh4 = llvm.mlir.constant(4 : i64) : i64\n"
    "    %fields = llvm.mlir.constant(68720001024 : i64) : i64\n"
    "    %t = nvvm.read.ptx.sreg.tid.x : i32\n"
    "    %smem = llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>\n"
    "    %g = llvm.getelementptr %in[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    %v = llvm.load %g : !llvm.ptr<1> -> i32\n"
    "    %s = llvm.getelementptr %smem[%t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32\n"
    "    llvm.store %v, %s : i32, !llvm.ptr<3>\n"
    "    nvvm.barrier0\n"
    "    llvm.inline_asm has_side_effects \"fence.proxy.async.shared::cta;\", \"\" : () -> ()\n"
    "    %sp = llvm.ptrtoint %smem : !llvm.ptr<3> to i64\n"
    "    %lb = llvm.and %sp, %low : i64\n"
    "    %sb = llvm.lshr %lb, %sh4 : i64\n"
    "    %db = llvm.or %sb, %fields : i64\n"
    "    %base = llvm.mul %t, %c4 : i32\n"
    "    %r0 = llvm.add %base, %c128 : i32\n"
    "    %r1 = llvm.add %r0, %c1 : i32\n"
    "    %r2 = llvm.add %r1, %c1 : i32\n"
    "    %r3 = llvm.add %r2, %c1 : i32\n"
    "    %p0 = llvm.getelementptr %in[%r0] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    %a0 = llvm.load %p0 : !llvm.ptr<1> -> i32\n"
    "    %p1 = llvm.getelementptr %in[%r1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    %a1 = llvm.load %p1 : !llvm.ptr<1> -> i32\n"
    "    %p2 = llvm.getelementptr %in[%r2] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    %a2 = llvm.load %p2 : !llvm.ptr<1> -> i32\n"
    "    %p3 = llvm.getelementptr %in[%r3] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
    "    %a3 = llvm.load %p3 : !llvm.ptr<1> -> i32\n"
    "    %m = llvm.inline_asm has_side_effects \"{\\0A.reg .pred p;\\0Asetp.eq.u32 p, 1, "
    "1;\\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, {$8, $9, $10, "
    "$11}, $12, p, 1, 1, 0;\\0A}\", \"=f,=f,=f,=f,0,1,2,3,r,r,r,r,l\" %one, %one, %one, %one, "
    "%a0, %a1, %a2, %a3, %db : (f32, f32, f32, f32, i32, i32, i32, i32, i64) -> "
    "!llvm.struct<(f32, f32, f32, f32)>\n"
    "    %m0 = llvm.extractvalue %m[0] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %o0 = llvm.getelementptr %out[%base] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %m0, %o0 : f32, !llvm.ptr<1>\n"
    "    %m1 = llvm.extractvalue %m[1] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %j1 = llvm.add %base, %c1 : i32\n"
    "    %o1 = llvm.getelementptr %out[%j1] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %m1, %o1 : f32, !llvm.ptr<1>\n"
    "    %m2 = llvm.extractvalue %m[2] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %j2 = llvm.add %j1, %c1 : i32\n"
    "    %o2 = llvm.getelementptr %out[%j2] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %m2, %o2 : f32, !llvm.ptr<1>\n"
    "    %m3 = llvm.extractvalue %m[3] : !llvm.struct<(f32, f32, f32, f32)>\n"
    "    %j3 = llvm.add %j2, %c1 : i32\n"
    "    %o3 = llvm.getelementptr %out[%j3] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
    "    llvm.store %m3, %o3 : f32, !llvm.ptr<1>\n"
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

/* Byte offset of element (x, k) in WGMMA_IR's layout: K-major 8x8 core matrices, LBO 128 (the
 * k halves), SBO 256 (the groups of 8 rows or columns). */
static uint32_t core_offset(uint32_t x, uint32_t k) {
  return (x / 8) * 256 + (k / 8) * 128 + (x % 8) * 16 + (k % 8) * 2;
}

/* Launches kernel `name` of mod (128 threads, args in and out) and checks D = 1 + A B, D in
 * the accumulator fragment (thread t's register i at row 16 (t / 32) + (t % 32) / 4 + 8 (i / 2),
 * column 2 (t % 4) + i % 2), within 1e-5 of the sum of |products|; then frees everything. */
static void launch_and_check(KilnRtDevice *dev, KilnRtModule *mod, const char *name, void *in,
                             float *out, float a[64][16], float b[16][8]) {
  KilnRtFunction *fn = NULL;
  KilnRtStatus st = kiln_rt_module_get_function(mod, name, &fn);
  if (st == KILN_RT_OK) {
    KilnRtLaunchConfig cfg = {.grid = {1, 1, 1}, .block_threads = 128};
    void *args[] = {&in, &out};
    st = kiln_rt_launch(fn, &cfg, args, NULL);
  }
  CHECK(st == KILN_RT_OK, "%s launch: %s", name, kiln_rt_last_error());
  int bad = 0;
  for (uint32_t t = 0; st == KILN_RT_OK && t < 128; t++)
    for (uint32_t i = 0; i < 4; i++) {
      uint32_t row = 16 * (t / 32) + (t % 32) / 4 + 8 * (i / 2), col = 2 * (t % 4) + i % 2;
      double ref = 1, mag = 1;
      for (uint32_t k = 0; k < 16; k++) {
        ref += (double)a[row][k] * b[k][col];
        mag += fabs((double)a[row][k] * b[k][col]);
      }
      bad += !(fabs(out[4 * t + i] - ref) <= 1e-5 * mag);
    }
  CHECK(bad == 0, "%s: %d of 512 results wrong", name, bad);
  kiln_rt_module_destroy(mod);
  kiln_rt_free(dev, in);
  kiln_rt_free(dev, out);
}

/* emu_wgmma: A and B placed on the host, D = 1 + A B checked per thread's fragment (register i
 * of thread t: row 16 (t / 32) + (t % 32) / 4 + 8 (i / 2), column 2 (t % 4) + i % 2) within
 * 1e-5 of |1| + sum |A B| (f32 sums of 17 terms err by at most 17 * 2^-24 of that). */
static void run_wgmma(KilnRtDevice *dev) {
  uint16_t *in = NULL;
  float *out = NULL;
  CHECK(kiln_rt_malloc(dev, 2560, (void **)&in) == KILN_RT_OK, "malloc");
  CHECK(kiln_rt_malloc(dev, 512 * sizeof *out, (void **)&out) == KILN_RT_OK, "malloc");
  KilnRtModule *mod = in && out ? emu_ir_load(dev, WGMMA_IR, "emu_wgmma") : NULL;
  if (!mod) return;
  float a[64][16], b[16][8];
  uint32_t seed = 7;
  memset(in, 0, 2560);
  for (uint32_t x = 0; x < 64; x++)
    for (uint32_t k = 0; k < 16; k++) {
      seed = seed * 1664525u + 1013904223u;
      uint16_t h = kiln_f32_to_f16((float)((seed >> 8) % 2001) / 1000.0f - 1.0f);
      a[x][k] = kiln_f16_to_f32(h);
      in[core_offset(x, k) / 2] = h;
      if (x < 8) {
        seed = seed * 1664525u + 1013904223u;
        h = kiln_f32_to_f16((float)((seed >> 8) % 2001) / 1000.0f - 1.0f);
        b[k][x] = kiln_f16_to_f32(h);
        in[(2048 + core_offset(x, k)) / 2] = h;
      }
    }
  launch_and_check(dev, mod, "emu_wgmma", in, out, a, b);
}

/* A random f16 in [-1, 1] from an LCG step, and its value. */
static uint16_t random_f16(uint32_t *seed, float *value) {
  *seed = *seed * 1664525u + 1013904223u;
  uint16_t h = kiln_f32_to_f16((float)((*seed >> 8) % 2001) / 1000.0f - 1.0f);
  *value = kiln_f16_to_f32(h);
  return h;
}

/* emu_wgmma_rs: B placed as in emu_wgmma, A's registers from mma.sync's A fragment (register i
 * of thread t, lane l, warp w: A(16w + l / 4 + 8 (i % 2), 2 (l % 4) + 8 (i / 2)) and the next
 * column in the high half); D = 1 + A B checked as in run_wgmma. */
static void run_wgmma_rs(KilnRtDevice *dev) {
  uint32_t *in = NULL;
  float *out = NULL;
  CHECK(kiln_rt_malloc(dev, 2560, (void **)&in) == KILN_RT_OK, "malloc");
  CHECK(kiln_rt_malloc(dev, 512 * sizeof *out, (void **)&out) == KILN_RT_OK, "malloc");
  KilnRtModule *mod = in && out ? emu_ir_load(dev, WGMMA_RS_IR, "emu_wgmma_rs") : NULL;
  if (!mod) return;
  float a[64][16], b[16][8];
  uint16_t abits[64][16];
  uint32_t seed = 11;
  memset(in, 0, 2560);
  uint16_t *bhalves = (uint16_t *)in;
  for (uint32_t k = 0; k < 16; k++)
    for (uint32_t x = 0; x < 8; x++) bhalves[core_offset(x, k) / 2] = random_f16(&seed, &b[k][x]);
  for (uint32_t m = 0; m < 64; m++)
    for (uint32_t k = 0; k < 16; k++) abits[m][k] = random_f16(&seed, &a[m][k]);
  for (uint32_t t = 0; t < 128; t++)
    for (uint32_t i = 0; i < 4; i++) {
      uint32_t l = t % 32, row = 16 * (t / 32) + l / 4 + 8 * (i % 2),
               col = 2 * (l % 4) + 8 * (i / 2);
      in[128 + 4 * t + i] = abits[row][col] | (uint32_t)abits[row][col + 1] << 16;
    }
  launch_and_check(dev, mod, "emu_wgmma_rs", in, out, a, b);
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

  run_wgmma(dev);
  run_wgmma_rs(dev);

  kiln_rt_free(dev, out);
  kiln_rt_device_destroy(dev);
  return kiln_check_result("test_emu_lowered");
}
