/* emu_test.h — checks shared by the emulator tests. Kernels are plain C calling the intrinsics
 * exactly as lowered code does. A failed check prints where and makes the test exit 1. */
#ifndef KILN_EMU_TEST_H
#define KILN_EMU_TEST_H

#include "../common/check.h"
#include "kiln_emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Both on the one CHECK (tests/common/check.h). */
#define CHECK_EQ_U(a, b)                                                                           \
  do {                                                                                             \
    unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);                 \
    CHECK(a_ == b_, "%s == %s: 0x%llx vs 0x%llx", #a, #b, a_, b_);                                 \
  } while (0)

/* Launches and requires `want`; prints the emulator's message when it differs. */
#define CHECK_LAUNCH(want, fn, cfg, args)                                                          \
  do {                                                                                             \
    KilnEmuStatus st_ = kiln_emu_launch((fn), (cfg), (args));                                      \
    CHECK(st_ == (want), "launch gave %s, want %s: %s", kiln_emu_status_name(st_),                 \
          kiln_emu_status_name(want), kiln_emu_last_error());                                      \
  } while (0)

static inline KilnEmuLaunch emu_cfg(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t threads,
                                    uint32_t shared_bytes, uint32_t os_threads) {
  KilnEmuLaunch c = {.grid = {gx, gy, gz},
                     .block = {threads, 1, 1},
                     .shared_bytes = shared_bytes,
                     .num_os_threads = os_threads};
  return c;
}

/* A deterministic generator, so failures reproduce. */
static inline uint32_t emu_rand(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

#endif
