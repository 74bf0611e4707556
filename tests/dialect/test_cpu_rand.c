/* kiln.rand against a C Philox4x32-10 reference (docs/internals.md): bit-exact.  rand(seed, o)
 * is word (o & 3) of the block at counter o >> 2, so the 200 offsets cover every word.  Offsets
 * pid * 64 + range are runs of 4 from multiples of 4, which the cpu lowering computes as one
 * block per 4 elements (cpu_ops.c, lower_rand_groups); shifted by an argument the analysis
 * knows nothing of (3, and 8, aligned in fact), one block per element. */
#include "harness.h"

#include <stdbool.h>
#include <stdlib.h>

static float philox_ref(uint32_t seed, uint32_t offset) {
  uint32_t c[4] = {offset >> 2, 0, 0, 0}, k0 = seed, k1 = 0;
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
    c[1] = (uint32_t)p1, c[3] = (uint32_t)p0, c[0] = n0, c[2] = n2;
    k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
  }
  return (float)(c[offset & 3] >> 8) * 0x1p-24f;
}

enum { N = 200, BLOCK = 64 };

/* Builds rnd(out, seed, n, shift): out[i] = rand(seed, i + shift) for i < n (shift an argument
 * when `shifted`, else none), and checks it against the reference for three seeds. */
static int run_case(bool shifted) {
  T t;
  t_init(&t);
  MlirType f32 = t_f32(&t), i32 = t_i32(&t);
  MlirType args[4] = {t_ptr(&t, f32), i32, i32, i32};
  t_kernel(&t, "rnd", args, shifted ? 4 : 3);
  MlirValue offs = t_offsets(&t, 0, BLOCK);
  MlirValue mask =
      kiln_ir_build_cmpi(&t.b, t.loc, "slt", offs,
                         kiln_ir_build_splat(&t.b, t.loc, t_arg(&t, 2), mlirValueGetType(offs)));
  MlirValue o = offs;
  if (shifted)
    o = t_op(&t, "arith.addi", offs,
             kiln_ir_build_splat(&t.b, t.loc, t_arg(&t, 3), mlirValueGetType(offs)));
  MlirValue r = kiln_ir_build_rand(&t.b, t.loc, t_arg(&t, 1), o);
  kiln_ir_build_store(&t.b, t.loc, t_ptrs(&t, t_arg(&t, 0), offs), r, mask);
  KilnCpuFn fn = t_compile(&t);
  float out[N];
  float *po = out;
  int32_t n_ = N;
  int32_t seeds[3] = {0, 1234, -7}, shifts[2] = {3, 8};
  for (int s = 0; s < 3; s++)
    for (int k = 0; k < (shifted ? 2 : 1); k++) {
      int32_t shift = shifted ? shifts[k] : 0;
      void *argv[4] = {&po, &seeds[s], &n_, &shift};
      t_run(fn, argv, (N + BLOCK - 1) / BLOCK, 1);
      int bad = 0;
      for (int i = 0; i < N; i++) {
        float want = philox_ref((uint32_t)seeds[s], (uint32_t)(i + shift));
        bad += out[i] != want || out[i] < 0 || out[i] >= 1;
      }
      T_CHECK(&t, bad == 0, "seed %d, shift %d: %d values differ from the Philox reference",
              seeds[s], shift, bad);
    }
  int fails = t.failures;
  t_fini(&t);
  return fails;
}

int main(void) { return run_case(false) + run_case(true) ? 1 : 0; }
