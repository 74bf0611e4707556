/* ptx_stat_test.c — unit test of the static performance report (mlir-dialect/gpu/ptx_stat.c)
 * on small hand-written PTX whose counts are known: a kernel with a two-deep loop nest (the
 * inner loop's mix counted apart from the kernel's), a loop with a block placed out of line,
 * access widths of every size, a cp.async
 * ring's wait_group, dynamic shared memory, a ptxas -v log, occupancy against hand-computed
 * limits and the roofline's arithmetic.  Exact integers; the two floating-point results are
 * checked to 1e-9 relative (they are a division or two of exact inputs). */
#include "ptx_stat.h"

#include <math.h>
#include <string.h>

#include "../common/check.h"

/* Line numbers matter (loops report them): the label $L__BB0_1 is line 14, its branch 27. */
static const char *const nest_ptx =
    "//\n"
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".shared .align 16 .b8 kiln_smem[8192];\n"
    ".visible .entry k(\n"
    "\t.param .u64 k_param_0\n"
    ")\n"
    ".maxntid 128, 1, 1\n"
    "{\n"
    "\t.reg .b32 %r<9>;\n"
    "\tld.param.u64 %rd1, [k_param_0];\n"
    "\tmov.u32 %r1, 0;\n"
    "$L__BB0_1:\n"
    "\tld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1];\n"
    "\tbar.sync 0;\n"
    "$L__BB0_2:\n"
    "\tst.shared.v4.b32 [%r5], {%r1, %r2, %r3, %r4};\n"
    "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r6];\n"
    "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, "
    "%r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};\n"
    "\tcp.async.cg.shared.global [%r7], [%rd2], 16;\n"
    "\tcp.async.wait_group 2;\n"
    "\t@%p1 bra $L__BB0_2;\n"
    "\tfma.rn.f32 %f5, %f1, %f2, %f3;   // a comment; with a semicolon\n"
    "\tld.shared.f32 %f6, [%r8];\n"
    "\tsetp.lt.s32 %p2, %r1, 4;\n"
    "\t@!%p2 bra.uni $L__BB0_1;\n"
    "\tst.global.b16 [%rd1], %rs1;\n"
    "\tst.global.v2.f32 [%rd1], {%f1, %f2};\n"
    "\tld.global.nc.u8 %rs2, [%rd1];\n"
    "\tld.global.v2.u32 {%r1, %r2}, [%rd1];\n"
    "\tdiv.rn.f32 %f7, %f1, %f2;\n"
    "\tshfl.sync.bfly.b32 %r3, %r4, 1, 31, -1;\n"
    "\tatom.global.add.u32 %r1, [%rd1], 1;\n"
    "\t// begin inline asm\n"
    "\t{ .reg .pred p; ex2.approx.f32 %f8, %f7; }\n"
    "\t// end inline asm\n"
    "\tret;\n"
    "}\n";

static void test_nest(void) {
  KilnPtxStat s;
  char err[128];
  CHECK(kiln_ptx_stat_parse(nest_ptx, &s, err, sizeof err), "%s", err);
  if (s.nkernels != 1) {
    CHECK(s.nkernels == 1, "%d kernels", s.nkernels);
    kiln_ptx_stat_free(&s);
    return;
  }
  const KilnPtxKernel *k = &s.kernels[0];
  CHECK(strcmp(k->name, "k") == 0, "name '%s'", k->name);
  CHECK(k->threads == 128, "threads %d", k->threads);
  CHECK(k->smem_static_ptx == 8192, "smem %d", k->smem_static_ptx);
  CHECK(!k->smem_dynamic);
  /* 23 instructions: ld.param, mov, the outer loop's 12 (ld.global, bar.sync, the inner loop's
   * 6, fma, ld.shared, setp, bra), 4 global stores/loads, div, shfl, atom, ex2 (inline asm), ret */
  const KilnPtxMix *t = &k->mix;
  CHECK(t->insts == 23, "insts %d", t->insts);
  CHECK(t->bar_sync == 1 && t->mma == 1 && t->ldmatrix == 1 && t->cp_async == 1);
  CHECK(t->st_shared == 1 && t->ld_shared == 1, "shared st %d ld %d", t->st_shared, t->ld_shared);
  CHECK(t->fma == 1 && t->div_full == 1 && t->shfl == 1 && t->atom == 1);
  CHECK(t->wait_group_max == 2, "wait_group %d", t->wait_group_max);
  /* loads: v4.b32 and the 16-byte cp.async (128), u8 (8), v2.u32 (64) */
  CHECK(t->ld_global[KILN_PTX_WIDTH_128] == 2 && t->ld_global[KILN_PTX_WIDTH_8] == 1 &&
        t->ld_global[KILN_PTX_WIDTH_64] == 1 && t->ld_global[KILN_PTX_WIDTH_32] == 0);
  CHECK(t->st_global[KILN_PTX_WIDTH_16] == 1 && t->st_global[KILN_PTX_WIDTH_64] == 1);
  CHECK(k->nloops == 2, "loops %d", k->nloops);
  for (int i = 0; i < k->nloops; i++) {
    const KilnPtxLoop *L = &k->loops[i];
    if (L->first_line == 14) {
      CHECK(L->last_line == 27 && L->depth == 1 && !L->inner, "outer %d-%d depth %d", L->first_line,
            L->last_line, L->depth);
      CHECK(L->mix.insts == 12 && L->mix.bar_sync == 1 && L->mix.ld_shared == 1, "outer insts %d",
            L->mix.insts);
    } else {
      CHECK(L->first_line == 17 && L->last_line == 23 && L->depth == 2 && L->inner,
            "inner %d-%d depth %d", L->first_line, L->last_line, L->depth);
      CHECK(L->mix.insts == 6 && L->mix.mma == 1 && L->mix.bar_sync == 0 && L->mix.st_shared == 1 &&
                L->mix.wait_group_max == 2,
            "inner insts %d", L->mix.insts);
    }
  }
  kiln_ptx_stat_free(&s);
}

/* Two kernels, one with dynamic shared memory, and the ptxas -v log that goes with them. */
static const char *const two_ptx =
    ".extern .shared .align 16 .b8 kiln_smem[];\n"
    ".visible .const .align 4 .u32 kiln_dsmem_a = 65536;\n"
    ".visible .entry a(.param .u64 a_p)\n"
    ".maxntid 256, 1, 1\n"
    ".minnctapersm 2\n"
    "{\n\tret;\n}\n"
    ".visible .entry b(.param .u64 b_p)\n"
    ".maxntid 64, 2, 1\n"
    "{\n\t.shared .align 4 .b32 red[32];\n\tbar.sync 0;\n\tret;\n}\n";

static const char *const two_log =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'a' for 'sm_90'\n"
    "ptxas info    : Function properties for a\n"
    "    8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads\n"
    "ptxas info    : Used 168 registers, used 1 barriers, 380 bytes cmem[0]\n"
    "ptxas info    : Compiling entry function 'b' for 'sm_90'\n"
    "ptxas info    : Function properties for b\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 1 barriers, 128 bytes smem, 380 bytes cmem[0]\n";

static void test_two_kernels_and_occupancy(void) {
  KilnPtxStat s;
  char err[128];
  CHECK(kiln_ptx_stat_parse(two_ptx, &s, err, sizeof err), "%s", err);
  if (s.nkernels != 2) {
    CHECK(s.nkernels == 2, "%d kernels", s.nkernels);
    kiln_ptx_stat_free(&s);
    return;
  }
  KilnPtxKernel *a = &s.kernels[0], *b = &s.kernels[1];
  CHECK(a->smem_dynamic && b->smem_dynamic, "module-scope extern counts in every kernel");
  CHECK(a->smem_dynamic_bytes == 65536 && b->smem_dynamic_bytes == 0, "recorded sizes %d %d",
        a->smem_dynamic_bytes, b->smem_dynamic_bytes);
  CHECK(b->smem_static_ptx == 128 && b->threads == 128 && b->mix.bar_sync == 1);
  CHECK(a->min_blocks == 2 && b->min_blocks == 0, "min_blocks %d %d (.minnctapersm)", a->min_blocks,
        b->min_blocks);
  kiln_ptx_stat_add_ptxas(&s, two_log);
  CHECK(a->has_ptxas && a->registers == 168 && a->spill_stores == 12 && a->spill_loads == 16 &&
        a->stack_bytes == 8 && a->smem_static == 0);
  CHECK(b->registers == 32 && b->smem_static == 128 && b->spill_loads == 0);

  const KilnPtxDevice *h = kiln_ptx_device_find("sm_90");
  CHECK(h && !kiln_ptx_device_find("sm_75"));
  if (h) {
    /* a: 168 regs → 5376 per warp (already a multiple of 256); 65536/5376 = 12 warps → 1 block
     * of 8 warps; 100 KiB dynamic: 233472 / (102400 + 1024) = 2, so registers decide. */
    KilnPtxOccupancy o = kiln_ptx_occupancy(a, h, 100 * 1024);
    CHECK(o.blocks_per_sm == 1 && o.warps_per_sm == 8 && strcmp(o.limit, "registers") == 0,
          "a: %d blocks, %s", o.blocks_per_sm, o.limit);
    /* with no size given, a's own 64 KiB: 233472 / (65536 + 1024) = 3 blocks, registers still 1 */
    o = kiln_ptx_occupancy(a, h, 0);
    CHECK(o.blocks_per_sm == 1 && strcmp(o.limit, "registers") == 0);
    /* 228 KiB dynamic is over the 227 KiB a block may have: cannot launch */
    o = kiln_ptx_occupancy(a, h, 228 * 1024);
    CHECK(o.blocks_per_sm == 0, "a over the limit: %d blocks", o.blocks_per_sm);
    /* b: 4 warps of 32 regs (1024 per warp) → 16 blocks by registers, 16 by warps; 128 B
     * static + 64 KiB dynamic → 233472 / (65664 + 1024) = 3 blocks by shared memory */
    o = kiln_ptx_occupancy(b, h, 64 * 1024);
    CHECK(o.blocks_per_sm == 3 && o.warps_per_sm == 12 && strcmp(o.limit, "shared memory") == 0,
          "b: %d blocks, %s", o.blocks_per_sm, o.limit);
    CHECK(fabs(o.occupancy - 12.0 / 64.0) < 1e-12);
    o = kiln_ptx_occupancy(b, h, 0);
    CHECK(o.blocks_per_sm == 16 && strcmp(o.limit, "warps") == 0, "b: %d blocks, %s",
          o.blocks_per_sm, o.limit);

    /* roofline: a 4096^3 f16 GEMM (2 * 4096^3 flops, 3 * 4096^2 * 2 bytes) is compute-bound */
    double n = 4096.0, flops = 2 * n * n * n, bytes = 3 * n * n * 2;
    KilnPtxRoofline r = kiln_ptx_roofline(h, flops, bytes, true);
    double want_us = flops / (h->tensor_tflops * 1e12) * 1e6;
    CHECK(strcmp(r.bound, "compute") == 0 && fabs(r.bound_us - want_us) <= 1e-9 * want_us,
          "bound %s %.3f us, want %.3f", r.bound, r.bound_us, want_us);
    /* an elementwise f32 op on 2^24 elements: 8 bytes per flop is memory-bound */
    r = kiln_ptx_roofline(h, 16777216.0, 16777216.0 * 8, false);
    double mem_us = 16777216.0 * 8 / (h->hbm_gbps * 1e9) * 1e6;
    CHECK(strcmp(r.bound, "memory") == 0 && fabs(r.bound_us - mem_us) <= 1e-9 * mem_us);
  }
  kiln_ptx_stat_free(&s);
}

/* LLVM places a loop's cold block (a masked tail load) after the function's exit and jumps back
 * into the loop: the loop is blocks A (line 4), B (6-7) and D (10-11), not lines 3-7. */
static const char *const cold_ptx = ".visible .entry c()\n"
                                    "{\n"
                                    "$L__BB0_1:\n"
                                    "\t@%p1 bra $L__BB0_3;\n"
                                    "$L__BB0_2:\n"
                                    "\tld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1];\n"
                                    "\t@%p2 bra $L__BB0_1;\n"
                                    "\tret;\n"
                                    "$L__BB0_3:\n"
                                    "\tld.global.b16 %rs1, [%rd2];\n"
                                    "\tbra.uni $L__BB0_2;\n"
                                    "}\n";

static void test_out_of_line_block(void) {
  KilnPtxStat s;
  char err[128];
  CHECK(kiln_ptx_stat_parse(cold_ptx, &s, err, sizeof err), "%s", err);
  if (s.nkernels == 1 && s.kernels[0].nloops == 1) {
    const KilnPtxLoop *L = &s.kernels[0].loops[0];
    CHECK(L->first_line == 3 && L->last_line == 11 && L->depth == 1 && L->inner,
          "loop %d-%d depth %d", L->first_line, L->last_line, L->depth);
    CHECK(L->mix.insts == 5 && L->mix.ld_global[KILN_PTX_WIDTH_128] == 1 &&
              L->mix.ld_global[KILN_PTX_WIDTH_16] == 1,
          "loop insts %d", L->mix.insts);
  } else {
    CHECK(s.nkernels == 1 && s.kernels[0].nloops == 1, "%d kernels", s.nkernels);
  }
  kiln_ptx_stat_free(&s);
}

static void test_bad_input(void) {
  KilnPtxStat s;
  char err[128] = "";
  CHECK(!kiln_ptx_stat_parse("not ptx at all\n", &s, err, sizeof err));
  CHECK(strstr(err, ".entry") != NULL, "message '%s'", err);
  CHECK(s.nkernels == 0 && s.kernels == NULL);
  CHECK(!kiln_ptx_stat_parse(NULL, &s, err, sizeof err));
  /* a body cut short (no closing brace) still reports what it read, loops excluded */
  CHECK(kiln_ptx_stat_parse(".entry t()\n{\n$L1:\n\tadd.s32 %r1, %r1, 1;\n\tbra $L1;\n", &s, err,
                            sizeof err));
  CHECK(s.nkernels == 1 && s.kernels[0].mix.insts == 2 && s.kernels[0].nloops == 1);
  kiln_ptx_stat_free(&s);
}

/* mma.sync as LLVM prints it: the opcode on one line, each operand list on a line of its own
 * up to the `;`. One instruction, whose braces are operands, not blocks: a second kernel after
 * it must still be found (the braces used to be counted as blocks and the lines as
 * instructions, 5 per mma). */
static const char *const multiline_ptx = ".visible .entry m()\n"
                                         "{\n"
                                         "$L__BB0_1:\n"
                                         "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32\n"
                                         "\t\t{%f1, %f2, %f3, %f4},\n"
                                         "\t\t{%r1, %r2, %r3, %r4},\n"
                                         "\t\t{%r5, %r6},\n"
                                         "\t\t{%f1, %f2, %f3, %f4};\n"
                                         "\tadd.s32 %r7, %r7, 1;\n"
                                         "\t@%p1 bra $L__BB0_1;\n"
                                         "\tret;\n"
                                         "}\n"
                                         ".visible .entry n()\n"
                                         "{\n"
                                         "\tret;\n"
                                         "}\n";

static void test_multiline_instruction(void) {
  KilnPtxStat s;
  char err[128];
  CHECK(kiln_ptx_stat_parse(multiline_ptx, &s, err, sizeof err), "%s", err);
  CHECK(s.nkernels == 2, "%d kernels", s.nkernels);
  if (s.nkernels >= 1) {
    const KilnPtxKernel *k = &s.kernels[0];
    CHECK(k->mix.insts == 4 && k->mix.mma == 1, "insts %d mma %d", k->mix.insts, k->mix.mma);
    CHECK(k->nloops == 1 && k->loops[0].mix.insts == 3, "loops %d", k->nloops);
  }
  if (s.nkernels == 2)
    CHECK(strcmp(s.kernels[1].name, "n") == 0 && s.kernels[1].mix.insts == 1, "second '%s' %d",
          s.kernels[1].name, s.kernels[1].mix.insts);
  kiln_ptx_stat_free(&s);
}

int main(void) {
  test_nest();
  test_two_kernels_and_occupancy();
  test_out_of_line_block();
  test_bad_input();
  test_multiline_instruction();
  if (failures == 0) puts("ptx_stat: all checks passed");
  return failures ? 1 : 0;
}
