/* A block reduction (warp butterflies, shared memory, barriers), a shared-memory tree reduction
 * with a barrier per level, and vote.sync / redux.sync against host computations. */
#include "emu_test.h"

#include <math.h>

enum { THREADS = 256, BLOCKS = 6, N = THREADS * BLOCKS };

static void block_sum_kernel(void **args) {
  const float *x = *(const float **)args[0];
  float *out = *(float **)args[1];
  float *tree_out = *(float **)args[2];
  float *sh = kiln_emu_shared_base();
  uint32_t t = kiln_emu_tid_x(), lane = kiln_emu_laneid(), warp = kiln_emu_warpid();
  uint32_t nwarps = kiln_emu_ntid_x() / 32, b = kiln_emu_ctaid_x();
  float v = x[b * THREADS + t];

  /* warp butterflies, then one partial per warp through shared memory */
  float s = v;
  for (uint32_t off = 16; off > 0; off /= 2)
    s += kiln_emu_shfl_sync_f32(KILN_EMU_SHFL_BFLY, 0xffffffffu, s, off, 0x1f, NULL);
  if (lane == 0) sh[warp] = s;
  kiln_emu_barrier0();
  if (warp == 0) {
    float p = lane < nwarps ? sh[lane] : 0.0f;
    for (uint32_t off = 16; off > 0; off /= 2)
      p += kiln_emu_shfl_sync_f32(KILN_EMU_SHFL_DOWN, 0xffffffffu, p, off, 0x1f, NULL);
    if (lane == 0) out[b] = p;
  }
  kiln_emu_barrier0();

  /* tree in shared memory: a barrier between levels, or partial sums are read too early */
  float *tree = sh + 32;
  tree[t] = v;
  kiln_emu_barrier0();
  for (uint32_t half = THREADS / 2; half > 0; half /= 2) {
    if (t < half) tree[t] += tree[t + half];
    kiln_emu_barrier0();
  }
  if (t == 0) tree_out[b] = tree[0];
}

static void vote_kernel(void **args) {
  uint32_t *out = *(uint32_t **)args[0];
  uint32_t lane = kiln_emu_laneid(), w = kiln_emu_warpid();
  uint32_t *o = out + w * 32 * 8 + lane * 8;
  uint32_t pred = (lane * 7 + w) % 3 == 0;
  o[0] = kiln_emu_vote_sync(KILN_EMU_VOTE_BALLOT, 0xffffffffu, pred);
  o[1] = kiln_emu_vote_sync(KILN_EMU_VOTE_ANY, 0xffffffffu, pred);
  o[2] = kiln_emu_vote_sync(KILN_EMU_VOTE_ALL, 0xffffffffu, lane < 40);
  o[3] = kiln_emu_vote_sync(KILN_EMU_VOTE_UNI, 0xffffffffu, pred);
  if (lane % 2 == 0) /* partial mask: only even lanes take part */
    o[4] = kiln_emu_vote_sync(KILN_EMU_VOTE_BALLOT, 0x55555555u, lane % 4 == 0);
  o[5] = kiln_emu_redux_sync(KILN_EMU_REDUX_ADD, 0xffffffffu, lane * lane + w);
  o[6] = kiln_emu_redux_sync(KILN_EMU_REDUX_MIN, 0xffffffffu, (uint32_t)((int32_t)lane - 20));
  o[7] = kiln_emu_redux_sync(KILN_EMU_REDUX_UMAX, 0xffffffffu, lane ^ 0x15);
}

int main(void) {
  float *x = malloc(N * sizeof *x), out[BLOCKS], tree[BLOCKS];
  uint32_t seed = 7;
  for (int i = 0; i < N; i++) x[i] = (float)(emu_rand(&seed) % 2001) / 1000.0f - 1.0f;
  void *args[] = {&x, &(float *){out}, &(float *){tree}};
  KilnEmuLaunch cfg = emu_cfg(BLOCKS, 1, 1, THREADS, (32 + THREADS) * sizeof(float), 2);
  CHECK_LAUNCH(KILN_EMU_OK, block_sum_kernel, &cfg, args);
  for (int b = 0; b < BLOCKS; b++) {
    double ref = 0, mag = 0;
    for (int i = 0; i < THREADS; i++) {
      ref += x[b * THREADS + i];
      mag += fabs(x[b * THREADS + i]);
    }
    double tol = 1e-6 * mag;
    if (fabs(out[b] - ref) > tol || fabs(tree[b] - ref) > tol)
      fprintf(stderr, "block %d: shfl %g tree %g ref %g\n", b, out[b], tree[b], ref);
    CHECK(fabs(out[b] - ref) <= tol);
    CHECK(fabs(tree[b] - ref) <= tol);
  }
  free(x);

  uint32_t *v = calloc(2 * 32 * 8, sizeof *v);
  void *vargs[] = {&v};
  KilnEmuLaunch vcfg = emu_cfg(1, 1, 1, 64, 0, 1);
  CHECK_LAUNCH(KILN_EMU_OK, vote_kernel, &vcfg, vargs);
  for (uint32_t w = 0; w < 2; w++) {
    uint32_t ballot = 0, even = 0, sum = 0, umax = 0;
    for (uint32_t l = 0; l < 32; l++) {
      ballot |= (uint32_t)((l * 7 + w) % 3 == 0) << l;
      even |= (uint32_t)(l % 4 == 0) << l;
      sum += l * l + w;
      umax = (l ^ 0x15) > umax ? (l ^ 0x15) : umax;
    }
    for (uint32_t l = 0; l < 32; l++) {
      const uint32_t *o = v + w * 32 * 8 + l * 8;
      CHECK_EQ_U(o[0], ballot);
      CHECK_EQ_U(o[1], 1);
      CHECK_EQ_U(o[2], 1);
      CHECK_EQ_U(o[3], 0);
      CHECK_EQ_U(o[4], l % 2 == 0 ? even : 0);
      CHECK_EQ_U(o[5], sum);
      CHECK_EQ_U(o[6], (uint32_t)-20);
      CHECK_EQ_U(o[7], umax);
    }
  }
  free(v);
  return kiln_check_result("emu.reduce");
}
