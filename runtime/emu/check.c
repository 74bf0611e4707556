/* check.c — the emulator's sanitizers: memcheck, racecheck and initcheck.
 *
 * How it works. The emu lowering emits kiln_emu_global_access / kiln_emu_shared_access before
 * every global and shared load, store and atomic, with the bytes and the alignment the
 * instruction needs. Which checks act is the launch's choice (KilnEmuLaunch.checks):
 *
 * - memcheck: a global access must lie inside one allocation of the table the runtime keeps
 *   (kiln_emu_mem_register, called by the emu device for every kiln_rt_malloc), and be aligned;
 *   each launch reads a sorted snapshot of the table, so lookups take no lock. A shared access
 *   must lie in the arena. A masked-off lane never reaches the check: the lowering branches
 *   around masked accesses, so a lane that touched memory anyway is an access like any other.
 * - racecheck: shadow state per byte of the arena (EmuShadow: the last writer and a reader, with
 *   the barrier epoch and warp epoch of each, and the value written). A store meeting another
 *   thread's read in the same epoch, or a read meeting another thread's write, is a race; so is
 *   a store meeting another thread's store of a different value (checked after the store, when
 *   the new value is in memory: replicated layouts have several lanes store the same value,
 *   which a GPU does without harm). Whatever order the fibers ran in, the same pairs meet, so
 *   one schedule finds what any schedule of the same interval would. A store or an atomic to
 *   bytes that an issued wgmma of any thread may still be reading (its group not retired by a
 *   wgmma.wait_group) is a race too, across barriers (wgmma_async.c).
 * - initcheck: per arena byte, the block that last wrote it; a read of a byte no thread of this
 *   block wrote is reported (the arena also holds 0xff bytes, so the values show it too).
 *
 * Every report fails the block (kiln_emu_fail): the thread is named by the prefix, the access,
 * the address and what it met by the rest.
 */
#include "emu_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the allocation table ------------------------------------------------------------------ */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static EmuRange *table;
static size_t table_n, table_cap;

static void table_remove_at(size_t i) {
  memmove(&table[i], &table[i + 1], (table_n - i - 1) * sizeof *table);
  table_n--;
}

void kiln_emu_mem_register(const void *p, size_t bytes) {
  uintptr_t base = (uintptr_t)p;
  if (!p || bytes == 0) return;
  pthread_mutex_lock(&table_lock);
  for (size_t i = 0; i < table_n;) { /* a stale entry over the same bytes is forgotten */
    bool overlaps = table[i].base < base + bytes && base < table[i].base + table[i].bytes;
    if (overlaps)
      table_remove_at(i);
    else
      i++;
  }
  if (table_n == table_cap) {
    size_t cap = table_cap ? 2 * table_cap : 64;
    EmuRange *grown = realloc(table, cap * sizeof *grown);
    if (!grown) { /* memcheck then reports this block as unknown: loud, not silent */
      pthread_mutex_unlock(&table_lock);
      return;
    }
    table = grown;
    table_cap = cap;
  }
  size_t at = table_n;
  while (at > 0 && table[at - 1].base > base) at--;
  memmove(&table[at + 1], &table[at], (table_n - at) * sizeof *table);
  table[at] = (EmuRange){base, bytes};
  table_n++;
  pthread_mutex_unlock(&table_lock);
}

void kiln_emu_mem_unregister(const void *p) {
  pthread_mutex_lock(&table_lock);
  for (size_t i = 0; i < table_n; i++) {
    if (table[i].base == (uintptr_t)p) {
      table_remove_at(i);
      break;
    }
  }
  pthread_mutex_unlock(&table_lock);
}

bool kiln_emu_mem_find(const void *p, const void **base, size_t *bytes) {
  uintptr_t a = (uintptr_t)p;
  bool found = false;
  pthread_mutex_lock(&table_lock);
  for (size_t i = 0; i < table_n && table[i].base <= a; i++) {
    if (a < table[i].base + table[i].bytes) {
      if (base) *base = (const void *)table[i].base;
      if (bytes) *bytes = table[i].bytes;
      found = true;
      break;
    }
  }
  pthread_mutex_unlock(&table_lock);
  return found;
}

KilnEmuStatus kiln_emu_mem_snapshot(EmuRange **out, size_t *n) {
  *out = NULL;
  *n = 0;
  pthread_mutex_lock(&table_lock);
  KilnEmuStatus st = KILN_EMU_OK;
  if (table_n > 0) {
    *out = malloc(table_n * sizeof **out);
    if (*out) {
      memcpy(*out, table, table_n * sizeof **out);
      *n = table_n;
    } else {
      st = KILN_EMU_ERROR_OUT_OF_MEMORY;
    }
  }
  pthread_mutex_unlock(&table_lock);
  return st;
}

int kiln_emu_parse_checks(const char *text, uint32_t *out) {
  uint32_t bits = 0;
  const char *p = text ? text : "";
  while (*p) {
    size_t n = strcspn(p, ",");
    if (n == 3 && strncmp(p, "mem", 3) == 0)
      bits |= KILN_EMU_CHECK_MEM;
    else if (n == 4 && strncmp(p, "race", 4) == 0)
      bits |= KILN_EMU_CHECK_RACE;
    else if (n == 4 && strncmp(p, "init", 4) == 0)
      bits |= KILN_EMU_CHECK_INIT;
    else if (n == 3 && strncmp(p, "all", 3) == 0)
      bits |= KILN_EMU_CHECK_ALL;
    else if (!(n == 4 && strncmp(p, "none", 4) == 0) && n != 0)
      return -1;
    p += n;
    if (*p == ',') p++;
  }
  *out = bits;
  return 0;
}

/* ---- memcheck ------------------------------------------------------------------------------ */

/* The last range starting at or below a, or NULL. */
static const EmuRange *range_below(const EmuWorker *w, uintptr_t a) {
  size_t lo = 0, hi = w->nranges;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (w->ranges[mid].base <= a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo ? &w->ranges[lo - 1] : NULL;
}

/* "allocation 0x... of N bytes (the access starts K bytes into it)" or the nearest one. */
static void describe_nearest(const EmuWorker *w, uintptr_t a, size_t bytes, char *buf, size_t n) {
  const EmuRange *below = range_below(w, a);
  const EmuRange *above = below ? (below + 1 < w->ranges + w->nranges ? below + 1 : NULL)
                                : (w->nranges ? &w->ranges[0] : NULL);
  if (below && a < below->base + below->bytes) {
    snprintf(buf, n,
             "it starts %zu bytes into allocation %#lx of %zu bytes, %zu bytes past its end",
             (size_t)(a - below->base), (unsigned long)below->base, below->bytes,
             (size_t)(a + bytes - (below->base + below->bytes)));
    return;
  }
  uintptr_t gap_below = below ? a - (below->base + below->bytes) : UINTPTR_MAX;
  uintptr_t gap_above = above ? above->base - a : UINTPTR_MAX;
  if (!below && !above)
    snprintf(buf, n, "no device memory is allocated");
  else if (gap_below <= gap_above)
    snprintf(buf, n,
             "in no allocation; it starts %zu bytes past the end of the nearest, %#lx of "
             "%zu bytes",
             (size_t)gap_below, (unsigned long)below->base, below->bytes);
  else
    snprintf(buf, n, "in no allocation; it starts %zu bytes before the nearest, %#lx of %zu bytes",
             (size_t)gap_above, (unsigned long)above->base, above->bytes);
}

void kiln_emu_check_global(EmuWorker *w, EmuFiber *f, const void *p, size_t bytes, size_t align,
                           const char *what) {
  if (!(w->cfg.checks & KILN_EMU_CHECK_MEM)) return;
  uintptr_t a = (uintptr_t)p;
  const EmuRange *r = range_below(w, a);
  bool inside = r && a + bytes <= r->base + r->bytes && a + bytes >= a;
  if (inside && (align <= 1 || a % align == 0)) return;
  char where[256];
  if (inside)
    snprintf(where, sizeof where, "%zu bytes into allocation %#lx of %zu bytes",
             (size_t)(a - r->base), (unsigned long)r->base, r->bytes);
  else
    describe_nearest(w, a, bytes, where, sizeof where);
  if (!inside)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_MEMORY, "memcheck: %s of %zu bytes at %p out of bounds: %s",
                  what, bytes, p, where);
  kiln_emu_fail(w, f, KILN_EMU_ERROR_MEMORY,
                "memcheck: %s of %zu bytes at %p misaligned (the instruction needs %zu-byte "
                "alignment; %s)",
                what, bytes, p, align, where);
}

static const char *access_name(uint32_t op, bool shared) {
  switch (op) {
  case KILN_EMU_ACCESS_LOAD: return shared ? "shared load" : "global load";
  case KILN_EMU_ACCESS_STORE: return shared ? "shared store" : "global store";
  default: return shared ? "shared atomic" : "global atomic";
  }
}

/* Where an access at a counts its elements from: the nearest pointer argument at or below it
 * inside its allocation r (a view deep into a buffer counts from the view, as the kernel's
 * offsets do), else r's start. */
static uintptr_t index_origin(const EmuWorker *w, const EmuRange *r, uintptr_t a) {
  uintptr_t origin = r->base;
  for (uint32_t i = 0; i < w->cfg.num_index_bases; i++) {
    uintptr_t b = (uintptr_t)w->cfg.index_bases[i];
    if (b > origin && b <= a) origin = b;
  }
  return origin;
}

/* An access inside its allocation that reaches element index_limit counted from its pointer
 * argument: the kernel's i32 offsets would wrap on a problem 2^31 / index_limit times larger
 * (the limit is lowered only for such scaled-down runs; the default checks nothing). */
static void check_index_limit(EmuWorker *w, EmuFiber *f, uintptr_t a, uint32_t bytes, uint32_t elem,
                              const char *what) {
  const EmuRange *r = range_below(w, a);
  if (!r || !elem || a >= r->base + r->bytes) return;
  uintptr_t origin = index_origin(w, r, a);
  uint64_t first = (uint64_t)(a - origin) / elem, end = first + (bytes + elem - 1) / elem;
  if (end <= w->cfg.index_limit) return;
  kiln_emu_fail(w, f, KILN_EMU_ERROR_MEMORY,
                "memcheck: %s of elements %llu..%llu from %s %#lx (%u-byte elements) reaches "
                "the index limit %llu: the kernel's 32-bit offsets wrap at 2^31 elements, which "
                "this access would pass on a problem %.3g times larger",
                what, (unsigned long long)first, (unsigned long long)(end - 1),
                origin == r->base ? "allocation" : "pointer argument", (unsigned long)origin, elem,
                (unsigned long long)w->cfg.index_limit, 2147483648.0 / (double)w->cfg.index_limit);
}

void kiln_emu_global_access(const void *p, uint32_t bytes, uint32_t align, uint32_t op) {
  EmuWorker *w = kiln_emu_worker();
  if (!w || !w->cur || !(w->cfg.checks & KILN_EMU_CHECK_MEM)) return;
  uint32_t kind = op & ((1u << KILN_EMU_ACCESS_ELEM_SHIFT) - 1);
  uint32_t elem = op >> KILN_EMU_ACCESS_ELEM_SHIFT;
  const char *what = access_name(kind, false);
  kiln_emu_check_global(w, w->cur, p, bytes, align, what);
  if (w->cfg.index_limit)
    check_index_limit(w, w->cur, (uintptr_t)p, bytes, elem ? elem : bytes, what);
}

/* ---- racecheck and initcheck --------------------------------------------------------------- */

static uint16_t warp_epoch_of(const EmuWorker *w, uint32_t tid) {
  return (uint16_t)w->warp_epoch[tid / KILN_EMU_WARP_SIZE];
}

/* Whether an access by `tid` now is unordered with one recorded by `other` at (epoch, wepoch):
 * the same barrier interval and, within one warp, no bar.warp.sync between. */
static bool concurrent(const EmuWorker *w, uint32_t tid, uint32_t other, uint32_t epoch,
                       uint16_t wepoch) {
  if (other == tid || epoch != w->epoch) return false;
  bool same_warp = other / KILN_EMU_WARP_SIZE == tid / KILN_EMU_WARP_SIZE;
  return !(same_warp && wepoch != warp_epoch_of(w, tid));
}

static _Noreturn void report_race(EmuWorker *w, EmuFiber *f, const char *what, uint32_t off,
                                  const char *kind, uint32_t other, const char *other_did) {
  kiln_emu_fail(w, f, KILN_EMU_ERROR_RACE,
                "racecheck: %s race: %s at shared offset %u, which thread %u (warp %u lane %u) %s "
                "in the same barrier interval",
                kind, what, off, other, other / KILN_EMU_WARP_SIZE, other % KILN_EMU_WARP_SIZE,
                other_did);
}

static void shadow_read(EmuWorker *w, EmuFiber *f, EmuShadow *s, uint32_t off, const char *what,
                        bool racecheck) {
  uint32_t tid = f->tid;
  if ((w->cfg.checks & KILN_EMU_CHECK_INIT) && s->init_block != w->block_gen)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_UNINIT,
                  "initcheck: %s reads shared offset %u, which no thread of the block wrote", what,
                  off);
  if (!racecheck) return;
  if (concurrent(w, tid, s->w_tid, s->w_epoch, s->w_wepoch))
    report_race(w, f, what, off, "read-after-write", s->w_tid, "wrote");
  if (s->r_epoch == w->epoch) {
    if (s->r_tid != tid) s->r_many = 1;
    return;
  }
  s->r_epoch = w->epoch;
  s->r_tid = (uint16_t)tid;
  s->r_wepoch = warp_epoch_of(w, tid);
  s->r_many = 0;
}

/* Before a store: the bytes must not have been read by another thread in this interval. */
static void shadow_before_write(EmuWorker *w, EmuFiber *f, const EmuShadow *s, uint32_t off,
                                const char *what) {
  uint32_t tid = f->tid;
  if (s->r_epoch != w->epoch) return;
  if (concurrent(w, tid, s->r_tid, s->r_epoch, s->r_wepoch))
    report_race(w, f, what, off, "write-after-read", s->r_tid, "read");
  if (s->r_many) /* one reader is known; at least one of the others is not this thread */
    kiln_emu_fail(w, f, KILN_EMU_ERROR_RACE,
                  "racecheck: write-after-read race: %s at shared offset %u, which other threads "
                  "(thread %u among them) read in the same barrier interval",
                  what, off, s->r_tid);
}

/* After a store (or a landing copy): another thread's write of a different value in this
 * interval is a race; the same value is what replicated layouts write and is not. */
static void shadow_after_write(EmuWorker *w, EmuFiber *f, EmuShadow *s, uint32_t off, uint8_t now,
                               const char *what, bool racecheck) {
  uint32_t tid = f->tid;
  if (racecheck && concurrent(w, tid, s->w_tid, s->w_epoch, s->w_wepoch) &&
      s->init_block == w->block_gen && s->value != now) {
    char did[64];
    snprintf(did, sizeof did, "wrote another value (byte 0x%02x, now 0x%02x)", s->value, now);
    report_race(w, f, what, off, "write-after-write", s->w_tid, did);
  }
  s->w_epoch = w->epoch;
  s->w_tid = (uint16_t)tid;
  s->w_wepoch = warp_epoch_of(w, tid);
  s->value = now;
  s->init_block = w->block_gen;
}

void kiln_emu_check_shadow(EmuWorker *w, EmuFiber *f, const void *p, size_t bytes, KilnEmuAccess op,
                           const char *what) {
  if (!w->shadow) return;
  bool racecheck = (w->cfg.checks & KILN_EMU_CHECK_RACE) != 0;
  if (racecheck && (op == KILN_EMU_ACCESS_STORE || op == KILN_EMU_ACCESS_ATOMIC))
    kiln_emu_wgmma_check_write(w, f, p, bytes, what); /* bytes a wgmma may still be reading */
  const unsigned char *bp = p;
  uint32_t start = (uint32_t)(bp - w->shared);
  for (uint32_t i = 0; i < bytes; i++) {
    EmuShadow *s = &w->shadow[start + i];
    switch (op) {
    case KILN_EMU_ACCESS_LOAD: shadow_read(w, f, s, start + i, what, racecheck); break;
    case KILN_EMU_ACCESS_STORE:
      if (racecheck) shadow_before_write(w, f, s, start + i, what);
      break;
    case KILN_EMU_ACCESS_STORED:
      shadow_after_write(w, f, s, start + i, bp[i], what, racecheck);
      break;
    default: /* atomics are ordered among themselves: only initcheck looks at them */
      shadow_read(w, f, s, start + i, what, false);
      s->init_block = w->block_gen;
      s->value = bp[i];
      break;
    }
  }
}

void kiln_emu_shared_access(const void *p, uint32_t bytes, uint32_t align, uint32_t op) {
  EmuWorker *w = kiln_emu_worker();
  if (!w || !w->cur || w->cfg.checks == 0) return;
  const char *what = access_name(op == KILN_EMU_ACCESS_STORED ? KILN_EMU_ACCESS_STORE : op, true);
  kiln_emu_check_shared_range(w, w->cur, p, bytes, align, what);
  kiln_emu_check_shadow(w, w->cur, p, bytes, (KilnEmuAccess)op, what);
}
