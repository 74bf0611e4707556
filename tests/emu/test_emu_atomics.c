/* Atomics from many blocks on several OS threads: totals must be exact, so a non-atomic update
 * anywhere loses increments. Shared atomics per block as well, 32 and 64 bits. The 64-bit values
 * reach past 2^32, so an operation done on the low word alone gives another total. */
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
  int64_t add_i64, max_i64, min_i64;
  uint64_t max_u64, min_u64, cas64, exch64_slot, xor_b64;
  double add_f64;
  uint32_t exch64_hits[BLOCKS * THREADS];
  uint64_t per_block64[BLOCKS];
} Acc;

/* A value of thread g with bits above 2^32, of both signs. */
static int64_t wide_value(uint32_t g) {
  return ((int64_t)(g * 37 % 5000) - 2000) * ((int64_t)1 << 33) + (int64_t)g;
}

/* The 64-bit operations from every thread: exact integer results, an f64 sum of integers below
 * 2^53 (exact in any order), a CAS counter starting at 2^40 and an exchange chain. */
static void atomic64_part(Acc *acc, uint32_t gid, uint64_t *shared64) {
  int64_t w = wide_value(gid);
  kiln_emu_atom_add_i64(&acc->add_i64, w);
  kiln_emu_atom_max_i64(&acc->max_i64, w);
  kiln_emu_atom_min_i64(&acc->min_i64, w);
  kiln_emu_atom_max_u64(&acc->max_u64, (uint64_t)w);
  kiln_emu_atom_min_u64(&acc->min_u64, (uint64_t)w);
  kiln_emu_atom_xor_b64(&acc->xor_b64, (uint64_t)gid * 0x9e3779b97f4a7c15ull);
  kiln_emu_atom_add_f64(&acc->add_f64, (double)gid * 4096.0);
  uint64_t old = __atomic_load_n(&acc->cas64, __ATOMIC_RELAXED);
  for (;;) {
    uint64_t seen = kiln_emu_atom_cas_b64(&acc->cas64, old, old + 1);
    if (seen == old) break;
    old = seen;
  }
  uint64_t prev = kiln_emu_atom_exch_b64(&acc->exch64_slot, ((uint64_t)1 << 40) | (gid + 1));
  if (prev) kiln_emu_atom_add_u32(&acc->exch64_hits[(prev & 0xffffffffu) - 1], 1);
  kiln_emu_atom_shared_add_u64(shared64, (uint64_t)1 << 32 | 1);
}

static void atomic_kernel(void **args) {
  Acc *acc = *(Acc **)args[0];
  uint32_t t = kiln_emu_tid_x(), b = kiln_emu_ctaid_x();
  uint32_t gid = b * THREADS + t;
  int32_t *shared_count = kiln_emu_shared_base();
  uint64_t *shared64 = (uint64_t *)(void *)((char *)kiln_emu_shared_base() + 8);
  if (t == 0) *shared_count = 0, *shared64 = 0;
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
  atomic64_part(acc, gid, shared64);
  kiln_emu_barrier0();
  if (t == 0) acc->per_block[b] = *shared_count, acc->per_block64[b] = *shared64;
}

int main(void) {
  Acc *acc = calloc(1, sizeof *acc);
  acc->max_i32 = INT32_MIN;
  acc->min_i32 = INT32_MAX;
  acc->max_i64 = INT64_MIN;
  acc->min_i64 = INT64_MAX;
  acc->min_u64 = UINT64_MAX;
  acc->cas64 = (uint64_t)1 << 40;
  void *args[] = {&acc};
  KilnEmuLaunch cfg = emu_cfg(BLOCKS, 1, 1, THREADS, 16, OS);
  CHECK_LAUNCH(KILN_EMU_OK, atomic_kernel, &cfg, args);
  const uint32_t n = BLOCKS * THREADS;
  int32_t mx = INT32_MIN, mn = INT32_MAX;
  uint32_t umax = 0, x = 0, hits = 0;
  uint64_t s64 = 0;
  int64_t add64 = 0, max64 = INT64_MIN, min64 = INT64_MAX;
  uint64_t umax64 = 0, umin64 = UINT64_MAX, x64 = 0, hits64 = 0;
  double f64 = 0;
  for (uint32_t g = 0; g < n; g++) {
    int64_t w = wide_value(g);
    add64 += w;
    max64 = w > max64 ? w : max64;
    min64 = w < min64 ? w : min64;
    umax64 = (uint64_t)w > umax64 ? (uint64_t)w : umax64;
    umin64 = (uint64_t)w < umin64 ? (uint64_t)w : umin64;
    x64 ^= (uint64_t)g * 0x9e3779b97f4a7c15ull;
    f64 += (double)g * 4096.0;
    hits64 += acc->exch64_hits[g];
    CHECK(acc->exch64_hits[g] <= 1);
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
  CHECK(acc->add_i64 == add64);
  CHECK(acc->max_i64 == max64 && acc->min_i64 == min64);
  CHECK(acc->max_u64 == umax64 && acc->min_u64 == umin64);
  CHECK(acc->xor_b64 == x64);
  CHECK(acc->add_f64 == f64); /* integers below 2^53: exact in any order */
  CHECK(acc->cas64 == ((uint64_t)1 << 40) + n);
  CHECK_EQ_U(hits64, n - 1);
  CHECK(acc->exch64_slot >> 32 == 1 << 8);
  for (int b = 0; b < BLOCKS; b++)
    CHECK(acc->per_block64[b] == ((uint64_t)THREADS << 32 | THREADS));
  free(acc);
  return kiln_check_result("emu.atomics");
}
