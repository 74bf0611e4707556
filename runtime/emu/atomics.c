/* atomics.c — global and shared atomics, 32 and 64 bits. Blocks run on several OS threads, so
 * global atomics are real host atomics (relaxed, like PTX atom without a memory-order qualifier);
 * operations without a host instruction (float add/max/min, integer max/min) are compare-and-swap
 * loops on the bits.  The shared forms check the word against the arena first and show racecheck
 * an atomic access of the word's size, as the emu lowering's calls do for its own atomics. */
#include "emu_internal.h"
#include "kiln_base.h"

#include <math.h>
#include <string.h>

/* Applies op to *p atomically through a CAS loop; returns the old value. */
#define EMU_CAS_LOOP(type, p, v, combine)                                                          \
  do {                                                                                             \
    type old_ = __atomic_load_n(p, __ATOMIC_RELAXED);                                              \
    for (;;) {                                                                                     \
      type new_ = combine(old_, v);                                                                \
      if (__atomic_compare_exchange_n(p, &old_, new_, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))   \
        return old_;                                                                               \
    }                                                                                              \
  } while (0)

static int32_t max_i(int32_t a, int32_t b) { return a > b ? a : b; }
static int32_t min_i(int32_t a, int32_t b) { return a < b ? a : b; }
static uint32_t max_u(uint32_t a, uint32_t b) { return a > b ? a : b; }
static uint32_t min_u(uint32_t a, uint32_t b) { return a < b ? a : b; }
static uint32_t add_fb(uint32_t a, float b) { return kiln_f32_bits(kiln_f32_from_bits(a) + b); }
static uint32_t max_fb(uint32_t a, float b) {
  return kiln_f32_bits(fmaxf(kiln_f32_from_bits(a), b));
}
static uint32_t min_fb(uint32_t a, float b) {
  return kiln_f32_bits(fminf(kiln_f32_from_bits(a), b));
}

static int32_t atom_max_i32(int32_t *p, int32_t v) { EMU_CAS_LOOP(int32_t, p, v, max_i); }
static int32_t atom_min_i32(int32_t *p, int32_t v) { EMU_CAS_LOOP(int32_t, p, v, min_i); }
static uint32_t atom_max_u32(uint32_t *p, uint32_t v) { EMU_CAS_LOOP(uint32_t, p, v, max_u); }
static uint32_t atom_min_u32(uint32_t *p, uint32_t v) { EMU_CAS_LOOP(uint32_t, p, v, min_u); }
static uint32_t atom_f32_bits(uint32_t *p, float v, uint32_t (*combine)(uint32_t, float)) {
  EMU_CAS_LOOP(uint32_t, p, v, combine);
}

static int32_t atom_add_i32(int32_t *p, int32_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static uint32_t atom_add_u32(uint32_t *p, uint32_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static float atom_add_f32(float *p, float v) {
  return kiln_f32_from_bits(atom_f32_bits((uint32_t *)(void *)p, v, add_fb));
}
static float atom_max_f32(float *p, float v) {
  return kiln_f32_from_bits(atom_f32_bits((uint32_t *)(void *)p, v, max_fb));
}
static float atom_min_f32(float *p, float v) {
  return kiln_f32_from_bits(atom_f32_bits((uint32_t *)(void *)p, v, min_fb));
}
static uint32_t atom_and_b32(uint32_t *p, uint32_t v) {
  return __atomic_fetch_and(p, v, __ATOMIC_RELAXED);
}
static uint32_t atom_or_b32(uint32_t *p, uint32_t v) {
  return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
}
static uint32_t atom_xor_b32(uint32_t *p, uint32_t v) {
  return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED);
}
static uint32_t atom_exch_b32(uint32_t *p, uint32_t v) {
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
static float atom_exch_f32(float *p, float v) {
  return kiln_f32_from_bits(atom_exch_b32((uint32_t *)(void *)p, kiln_f32_bits(v)));
}

/* ---- 64 bits: the same operations on 8-byte words (x86-64 and AArch64 have them lock-free) */

static uint64_t f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
static double f64_from_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}
static int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t add_db(uint64_t a, double b) { return f64_bits(f64_from_bits(a) + b); }
static uint64_t max_db(uint64_t a, double b) { return f64_bits(fmax(f64_from_bits(a), b)); }
static uint64_t min_db(uint64_t a, double b) { return f64_bits(fmin(f64_from_bits(a), b)); }

static int64_t atom_max_i64(int64_t *p, int64_t v) { EMU_CAS_LOOP(int64_t, p, v, max_i64); }
static int64_t atom_min_i64(int64_t *p, int64_t v) { EMU_CAS_LOOP(int64_t, p, v, min_i64); }
static uint64_t atom_max_u64(uint64_t *p, uint64_t v) { EMU_CAS_LOOP(uint64_t, p, v, max_u64); }
static uint64_t atom_min_u64(uint64_t *p, uint64_t v) { EMU_CAS_LOOP(uint64_t, p, v, min_u64); }
static uint64_t atom_f64_bits(uint64_t *p, double v, uint64_t (*combine)(uint64_t, double)) {
  EMU_CAS_LOOP(uint64_t, p, v, combine);
}

static int64_t atom_add_i64(int64_t *p, int64_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static uint64_t atom_add_u64(uint64_t *p, uint64_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static double atom_add_f64(double *p, double v) {
  return f64_from_bits(atom_f64_bits((uint64_t *)(void *)p, v, add_db));
}
static double atom_max_f64(double *p, double v) {
  return f64_from_bits(atom_f64_bits((uint64_t *)(void *)p, v, max_db));
}
static double atom_min_f64(double *p, double v) {
  return f64_from_bits(atom_f64_bits((uint64_t *)(void *)p, v, min_db));
}
static uint64_t atom_and_b64(uint64_t *p, uint64_t v) {
  return __atomic_fetch_and(p, v, __ATOMIC_RELAXED);
}
static uint64_t atom_or_b64(uint64_t *p, uint64_t v) {
  return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
}
static uint64_t atom_xor_b64(uint64_t *p, uint64_t v) {
  return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED);
}
static uint64_t atom_exch_b64(uint64_t *p, uint64_t v) {
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
static double atom_exch_f64(double *p, double v) {
  return f64_from_bits(atom_exch_b64((uint64_t *)(void *)p, f64_bits(v)));
}

/* A shared atomic of `bytes` at p: inside the arena and aligned to its size (memcheck), an
 * atomic access for racecheck (atomics do not race with each other, only with plain accesses). */
static void check_shared_word(const void *p, uint32_t bytes, const char *what) {
  EmuFiber *f = kiln_emu_current();
  if (f) {
    kiln_emu_check_shared_range(kiln_emu_worker(), f, p, bytes, bytes, what);
    kiln_emu_check_shadow(kiln_emu_worker(), f, p, bytes, KILN_EMU_ACCESS_ATOMIC, what);
  }
}

#define EMU_DEFINE_ATOMIC(name, type)                                                              \
  type kiln_emu_atom_##name(type *p, type v) { return atom_##name(p, v); }                         \
  type kiln_emu_atom_shared_##name(type *p, type v) {                                              \
    check_shared_word(p, (uint32_t)sizeof(type), "atom.shared." #name);                            \
    return atom_##name(p, v);                                                                      \
  }
KILN_EMU_ATOMIC_OPS(EMU_DEFINE_ATOMIC)
#undef EMU_DEFINE_ATOMIC

uint32_t kiln_emu_atom_cas_b32(uint32_t *p, uint32_t cmp, uint32_t v) {
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return cmp; /* on failure cmp was updated to the value found */
}

uint32_t kiln_emu_atom_shared_cas_b32(uint32_t *p, uint32_t cmp, uint32_t v) {
  check_shared_word(p, 4, "atom.shared.cas_b32");
  return kiln_emu_atom_cas_b32(p, cmp, v);
}

uint64_t kiln_emu_atom_cas_b64(uint64_t *p, uint64_t cmp, uint64_t v) {
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return cmp; /* on failure cmp was updated to the value found */
}

uint64_t kiln_emu_atom_shared_cas_b64(uint64_t *p, uint64_t cmp, uint64_t v) {
  check_shared_word(p, 8, "atom.shared.cas_b64");
  return kiln_emu_atom_cas_b64(p, cmp, v);
}
