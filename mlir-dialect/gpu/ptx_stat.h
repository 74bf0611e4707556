/* ptx_stat.h — the static performance report of GPU code: what a kernel's PTX and ptxas -v say
 * about its speed, read without a GPU (`kiln stat`).
 *
 * The PTX is read as text: per kernel (`.entry`) and per loop (a natural loop of the kernel's
 * control-flow graph) the instruction mix that decides speed (barriers, shared-memory traffic, tensor-core
 * ops, global access widths, FMAs); ptxas -v adds registers, spills and static shared memory;
 * a device description turns those into occupancy and, with the work of a call (FLOPs and
 * bytes), a roofline bound.  Counts are static (instructions in the text, not executions).
 *
 * Pure C over strings: no MLIR, so the library is unit-tested on small PTX snippets.  It lives
 * beside ptx.c and ptxas.c because it reads exactly what they produce. */
#ifndef KILN_PTX_STAT_H
#define KILN_PTX_STAT_H

#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Global access widths, in bits: 8, 16, 32, 64, 128 (anything else counts in OTHER). */
enum {
  KILN_PTX_WIDTH_8,
  KILN_PTX_WIDTH_16,
  KILN_PTX_WIDTH_32,
  KILN_PTX_WIDTH_64,
  KILN_PTX_WIDTH_128,
  KILN_PTX_WIDTH_OTHER,
  KILN_PTX_WIDTH_COUNT
};

/* The instruction mix of a region (a kernel, or one loop's body), static counts. */
typedef struct KilnPtxMix {
  int insts;     /* instructions (labels, directives and braces excluded) */
  int bar_sync;  /* bar.sync / barrier.sync */
  int ld_shared; /* ld.shared (ldmatrix counted apart) */
  int st_shared; /* st.shared (stmatrix counted apart) */
  int ldmatrix, stmatrix;
  int cp_async;       /* cp.async copies (also in ld_global by their width) */
  int wait_group_max; /* the largest N of cp.async.wait_group N; -1 if none */
  int mma;            /* mma.sync */
  int wgmma;          /* wgmma.mma_async (sm_90: a warpgroup's m64nNk16, asynchronous) */
  int wgmma_k16;      /* their work in m16n8k16 steps per warp: N / 8 x K / 16 each */
  int fma;            /* fma.* (floating-point multiply-add) */
  int div_full;       /* div.rn / div.full on floats (IEEE or full-range division) */
  int shfl;           /* shfl.sync */
  int atom;           /* atom.* / red.* */
  int ld_global[KILN_PTX_WIDTH_COUNT]; /* by access width (vector length x element bits) */
  int st_global[KILN_PTX_WIDTH_COUNT];
} KilnPtxMix;

/* A loop: a natural loop of the kernel's control-flow graph (its blocks need not be contiguous
 * in the text).  `inner` when no other loop lies inside. */
typedef struct KilnPtxLoop {
  int first_line, last_line; /* 1-based: the header's label, the loop's last instruction */
  int depth;                 /* 1 for an outermost loop */
  bool inner;
  KilnPtxMix mix;
} KilnPtxLoop;

typedef struct KilnPtxKernel {
  char name[128];
  int threads;            /* .maxntid x*y*z; 0 if the PTX does not say */
  int min_blocks;         /* .minnctapersm (the config's min_blocks); 0 if the PTX does not say */
  int smem_static_ptx;    /* bytes of .shared arrays with a size (module and function scope) */
  bool smem_dynamic;      /* an `.extern .shared` array: the launch passes the size */
  int smem_dynamic_bytes; /* that size when the PTX records it (`.const .u32 kiln_dsmem_NAME`) */
  KilnPtxMix mix;
  KilnPtxLoop *loops;
  int nloops;
  /* From ptxas -v (has_ptxas when its report named this kernel). */
  bool has_ptxas;
  int registers, spill_stores, spill_loads, stack_bytes, smem_static;
} KilnPtxKernel;

typedef struct KilnPtxStat {
  KilnPtxKernel *kernels;
  int nkernels;
} KilnPtxStat;

/* Reads PTX text.  Returns false (with a message in err) on text that is not PTX with at least
 * one .entry, or when memory runs out; *out is then empty.  kiln_ptx_stat_free releases it. */
bool kiln_ptx_stat_parse(const char *ptx, KilnPtxStat *out, char *err, size_t errlen);

/* Adds what a `ptxas -v` log reports per entry ("Compiling entry function 'k'", then "Used N
 * registers ... N bytes smem", "N bytes stack frame, N bytes spill stores, N bytes spill loads")
 * to the kernels of the same name. */
void kiln_ptx_stat_add_ptxas(KilnPtxStat *s, const char *log);

void kiln_ptx_stat_free(KilnPtxStat *s);

/* What occupancy and the roofline need of a device (kiln_ptx_device_find: "sm_90" is an H200,
 * "sm_80" an A100 80GB; the numbers and their sources are in docs/gpu-lowering.md). */
typedef struct KilnPtxDevice {
  const char *arch, *name;
  int regs_per_sm, max_regs_per_thread, reg_alloc_unit; /* unit: registers per warp */
  int max_warps_per_sm, max_blocks_per_sm;
  int smem_per_sm, smem_per_block_max, smem_reserved_per_block; /* bytes */
  double tensor_tflops; /* dense f16/bf16 with f32 accumulation */
  double fp32_tflops;   /* non-tensor FMA throughput */
  double hbm_gbps;      /* HBM bandwidth, GB/s */
} KilnPtxDevice;

const KilnPtxDevice *kiln_ptx_device_find(const char *arch);

/* Resident blocks per SM and what limits them ("registers", "shared memory", "warps",
 * "blocks"); needs threads and, for registers, ptxas's count.  dyn_smem: dynamic shared bytes
 * of the launch (at least the kernel's own smem_dynamic_bytes).  0 blocks when the kernel cannot launch (too much shared memory). */
typedef struct KilnPtxOccupancy {
  int blocks_per_sm, warps_per_sm;
  double occupancy; /* warps_per_sm / max_warps_per_sm */
  const char *limit;
} KilnPtxOccupancy;

KilnPtxOccupancy kiln_ptx_occupancy(const KilnPtxKernel *k, const KilnPtxDevice *d, int dyn_smem);

/* The roofline bound of one call doing `flops` floating-point operations (tensor ops when
 * `tensor`) and moving `bytes` to and from HBM: the time at peak, which side bounds it. */
typedef struct KilnPtxRoofline {
  double intensity; /* flops per byte */
  double compute_us, memory_us, bound_us;
  const char *bound; /* "compute" or "memory" */
} KilnPtxRoofline;

KilnPtxRoofline kiln_ptx_roofline(const KilnPtxDevice *d, double flops, double bytes, bool tensor);

/* The report, text or JSON.  flops/bytes <= 0: no roofline section. */
typedef struct KilnPtxReportOptions {
  const KilnPtxDevice *device;
  int dyn_smem;
  double flops, bytes;
  bool tensor;
  bool json;
} KilnPtxReportOptions;

void kiln_ptx_stat_print(const KilnPtxStat *s, const KilnPtxReportOptions *o, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
