/* Atomics from many blocks on several OS threads: totals must be exact, so a non-atomic update
 * anywhere loses increments. Shared atomics per block as well. */
#include "emu_test.h"

enum { BLOCKS = 64, THREADS = 128, OS = 4 };

typedef struct Acc {
  int32_t add_i32;
  float add_f32;
  int32_t max_i32, min_i32;
  uint32_t max_u32, cas_count, xor_b32, or_b32;
  uint32_t exch_hits[BLOCKS * THREADS];
  uint32_t exch_slot;
  int32_t per_block[BLOCKS];
  uint64_t sum64;
} Acc;

static void atomic_kernel(void **args) {
  Acc *acc = *(Acc **)args[0];
  uint32_t t = kiln_emu_tid_x(), b = kiln_emu_ctaid_x();
  uint32_t gid = b * THREADS + t;
  int32_t *shared_count = kiln_emu_shared_base();
  if (t == 0) *shared_count = 0;
  kiln_emu_barrier0();
  kiln_emu_atom_add_i32(&acc->add_i32, (int32_t)gid);
  kiln_emu_atom_add_f32(&acc->add_f32, 1.0f);
  kiln_emu_atom_max_i32(&acc->max_i32, (int32_t)(gid * 37 % 5000) - 2000);
  kiln_emu_atom_min_i32(&acc->min_i32, (int32_t)(gid * 37 % 5000) - 2000);
  kiln_emu_atom_max_u32(&acc->max_u32, gid ^ 0x1234);
  kiln_emu_atom_xor_b32(&acc->xor_b32, gid * 2654435761u);
  kiln_emu_atom_or_b32(&acc->or_b32, 1u << (gid % 32));
  kiln_emu_atom_add_u64(&acc->sum64, (uint64_t)gid << 20);
  /* an increment built from cas, retried until it lands */
  uint32_t old = __atomic_load_n(&acc->cas_count, __ATOMIC_RELAXED);
  for (;;) {
    uint32_t seen = kiln_emu_atom_cas_b32(&acc->cas_count, old, old + 1);
    if (seen == old) break;
    old = seen;
  }
  /* exch hands every previous holder on exactly once */
  uint32_t prev = kiln_emu_atom_exch_b32(&acc->exch_slot, gid + 1);
  if (prev) kiln_emu_atom_add_u32(&acc->exch_hits[prev - 1], 1);
  kiln_emu_atom_shared_add_i32(shared_count, (int32_t)t + 1);
  kiln_emu_barrier0();
  if (t == 0) acc->per_block[b] = *shared_count;
}

int main(void) {
  Acc *acc = calloc(1, sizeof *acc);
  acc->max_i32 = INT32_MIN;
  acc->min_i32 = INT32_MAX;
  void *args[] = {&acc};
  KilnEmuLaunch cfg = emu_cfg(BLOCKS, 1, 1, THREADS, 16, OS);
  CHECK_LAUNCH(KILN_EMU_OK, atomic_kernel, &cfg, args);
  const uint32_t n = BLOCKS * THREADS;
  int32_t mx = INT32_MIN, mn = INT32_MAX;
  uint32_t umax = 0, x = 0, hits = 0;
  uint64_t s64 = 0;
  for (uint32_t g = 0; g < n; g++) {
    int32_t v = (int32_t)(g * 37 % 5000) - 2000;
    mx = v > mx ? v : mx;
    mn = v < mn ? v : mn;
    umax = (g ^ 0x1234) > umax ? (g ^ 0x1234) : umax;
    x ^= g * 2654435761u;
    s64 += (uint64_t)g << 20;
    hits += acc->exch_hits[g];
    CHECK(acc->exch_hits[g] <= 1);
  }
  CHECK_EQ_U(acc->add_i32, (int32_t)(n * (n - 1) / 2));
  CHECK(acc->add_f32 == (float)n);
  CHECK_EQ_U(acc->max_i32, mx);
  CHECK_EQ_U(acc->min_i32, mn);
  CHECK_EQ_U(acc->max_u32, umax);
  CHECK_EQ_U(acc->xor_b32, x);
  CHECK_EQ_U(acc->or_b32, 0xffffffffu);
  CHECK_EQ_U(acc->cas_count, n);
  CHECK_EQ_U(acc->sum64, s64);
  CHECK_EQ_U(hits, n - 1); /* every value but the last one left in the slot was displaced once */
  CHECK(acc->exch_slot >= 1 && acc->exch_slot <= n && acc->exch_hits[acc->exch_slot - 1] == 0);
  for (int b = 0; b < BLOCKS; b++) CHECK_EQ_U(acc->per_block[b], THREADS * (THREADS + 1) / 2);
  free(acc);
  return kiln_check_result("emu.atomics");
}
