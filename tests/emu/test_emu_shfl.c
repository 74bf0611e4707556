/* shfl.sync in every mode, vote.sync and redux.sync against references written from the
 * definitions (segments of `width` lanes as CUDA's __shfl_*_sync build them, explicit clamps). */
#include "emu_test.h"

typedef struct Case {
  uint32_t mode, mask;
  uint32_t b[32], c[32]; /* per lane: b may differ between lanes, as the ISA allows */
  uint32_t d[32], p[32];
} Case;

static void shfl_kernel(void **args) {
  Case *cs = *(Case **)args[0];
  uint32_t ncase = *(uint32_t *)args[1];
  uint32_t lane = kiln_emu_laneid();
  for (uint32_t i = 0; i < ncase; i++) {
    Case *k = &cs[i];
    if (!(k->mask >> lane & 1)) continue;
    uint32_t p = 7;
    if (i % 2 == 0) {
      k->d[lane] =
          kiln_emu_shfl_sync_i32(k->mode, k->mask, 1000 + 7 * lane, k->b[lane], k->c[lane], &p);
    } else {
      float f = kiln_emu_shfl_sync_f32(k->mode, k->mask, 1000.0f + 7.0f * (float)lane, k->b[lane],
                                       k->c[lane], &p);
      k->d[lane] = (uint32_t)f;
    }
    k->p[lane] = p;
  }
}

/* Source lane per the segment picture: a segment is [start, end]; up reads lane - b unless that
 * leaves the segment below; down reads lane + b unless it passes `end`; bfly reads lane ^ b
 * unless that lands above `end`; idx reads start + b mod width. */
static int32_t ref_source(uint32_t mode, uint32_t lane, uint32_t b, uint32_t width,
                          int32_t clamp_lo, int32_t clamp_hi) {
  int32_t start = (int32_t)(lane / width * width);
  int32_t end = start + (int32_t)width - 1;
  int32_t l = (int32_t)lane, bb = (int32_t)b;
  if (clamp_hi >= 0 && clamp_hi < end) end = clamp_hi;
  if (clamp_lo > 0) start = start + clamp_lo;
  switch (mode) {
  case KILN_EMU_SHFL_UP: return l - bb >= start ? l - bb : -1;
  case KILN_EMU_SHFL_DOWN: return l + bb <= end ? l + bb : -1;
  case KILN_EMU_SHFL_BFLY: return (l ^ bb) <= end ? (l ^ bb) : -1;
  default: {
    int32_t j = (int32_t)(lane / width * width) + bb % (int32_t)width;
    return j <= end ? j : -1;
  }
  }
}

typedef struct Spec {
  uint32_t mode, mask, width;
  int32_t clamp_lo, clamp_hi; /* -1: none beyond the segment */
  uint32_t c;
  uint32_t bshift; /* b = (lane * 5 + bshift) % 32 for idx, else bshift (same for all lanes) */
} Spec;

int main(void) {
  const uint32_t FULL = 0xffffffffu;
  const Spec specs[] = {
      /* CUDA-style segments: up uses clamp 0, others clamp 31, segment mask 32 - width */
      {KILN_EMU_SHFL_UP, FULL, 32, 0, -1, 0, 1},
      {KILN_EMU_SHFL_UP, FULL, 32, 0, -1, 0, 5},
      {KILN_EMU_SHFL_UP, FULL, 8, 0, -1, (32 - 8) << 8, 3},
      {KILN_EMU_SHFL_DOWN, FULL, 32, 0, -1, 0x1f, 1},
      {KILN_EMU_SHFL_DOWN, FULL, 16, 0, -1, ((32 - 16) << 8) | 0x1f, 4},
      {KILN_EMU_SHFL_DOWN, FULL, 4, 0, -1, ((32 - 4) << 8) | 0x1f, 3},
      {KILN_EMU_SHFL_BFLY, FULL, 32, 0, -1, 0x1f, 16},
      {KILN_EMU_SHFL_BFLY, FULL, 32, 0, -1, 0x1f, 1},
      {KILN_EMU_SHFL_BFLY, FULL, 8, 0, -1, ((32 - 8) << 8) | 0x1f, 2},
      {KILN_EMU_SHFL_BFLY, FULL, 8, 0, -1, ((32 - 8) << 8) | 0x1f, 12}, /* leaves the segment */
      {KILN_EMU_SHFL_IDX, FULL, 32, 0, -1, 0x1f, 0},
      {KILN_EMU_SHFL_IDX, FULL, 32, 0, -1, 0x1f, 11},
      {KILN_EMU_SHFL_IDX, FULL, 8, 0, -1, ((32 - 8) << 8) | 0x1f, 3},
      /* plain clamps, no segments */
      {KILN_EMU_SHFL_DOWN, FULL, 32, 0, 15, 15, 3},
      {KILN_EMU_SHFL_BFLY, FULL, 32, 0, 20, 20, 4},
      {KILN_EMU_SHFL_UP, FULL, 32, 8, -1, 8, 2},
      {KILN_EMU_SHFL_IDX, FULL, 32, 0, 15, 15, 7},
      /* partial masks whose sources stay inside the mask */
      {KILN_EMU_SHFL_DOWN, 0x0000ffffu, 16, 0, -1, ((32 - 16) << 8) | 0x1f, 2},
      {KILN_EMU_SHFL_BFLY, 0xffff0000u, 16, 0, -1, ((32 - 16) << 8) | 0x1f, 5},
      {KILN_EMU_SHFL_UP, 0x00ff00ffu, 8, 0, -1, (32 - 8) << 8, 1},
  };
  uint32_t n = sizeof specs / sizeof specs[0];
  Case *cs = calloc(n, sizeof *cs);
  for (uint32_t i = 0; i < n; i++) {
    cs[i].mode = specs[i].mode;
    cs[i].mask = specs[i].mask;
    for (uint32_t l = 0; l < 32; l++) {
      cs[i].b[l] =
          specs[i].mode == KILN_EMU_SHFL_IDX ? (l * 5 + specs[i].bshift) % 32 : specs[i].bshift;
      cs[i].c[l] = specs[i].c;
      cs[i].p[l] = 99;
    }
  }
  void *args[] = {&cs, &n};
  KilnEmuLaunch cfg = emu_cfg(1, 1, 1, 64, 0, 1);
  CHECK_LAUNCH(KILN_EMU_OK, shfl_kernel, &cfg, args);
  for (uint32_t i = 0; i < n; i++) {
    const Spec *s = &specs[i];
    for (uint32_t l = 0; l < 32; l++) {
      if (!(s->mask >> l & 1)) {
        CHECK_EQ_U(cs[i].p[l], 99);
        continue;
      }
      int32_t j = ref_source(s->mode, l, cs[i].b[l], s->width, s->clamp_lo, s->clamp_hi);
      uint32_t want = 1000 + 7 * (uint32_t)(j < 0 ? (int32_t)l : j);
      if (cs[i].d[l] != want || cs[i].p[l] != (j >= 0))
        fprintf(stderr, "case %u lane %u: got d=%u p=%u, want d=%u p=%d\n", i, l, cs[i].d[l],
                cs[i].p[l], want, j >= 0);
      CHECK_EQ_U(cs[i].d[l], want);
      CHECK_EQ_U(cs[i].p[l], j >= 0);
    }
  }
  free(cs);
  return kiln_check_result("emu.shfl");
}
