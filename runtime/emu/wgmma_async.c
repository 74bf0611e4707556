/* wgmma_async.c — racecheck of wgmma's asynchronous reads of shared memory.
 *
 * Why. On the GPU wgmma.mma_async reads A and B from shared memory at some time between its
 * issue and the wgmma.wait_group that retires its group; a write to those bytes in between (a
 * store, a landing cp.async, stmatrix, an atomic, by any thread) gives wrong numbers on hardware.
 * The emulator computes the MMA at issue (wgmma.c), so without this the race would be invisible.
 *
 * How it works (only under racecheck). Each issued wgmma leaves a record in its thread: the
 * 16-byte chunks of the arena it read (each counted once per wgmma) and its commit group, open
 * until wgmma.commit_group. Per chunk the worker counts the records that hold it (wg_pending).
 * wgmma.wait_group n retires the records of every committed group but the n most recent, which
 * in issue order is a prefix, and takes their chunks off the counts; records of a thread that
 * exits are dropped. Every write racecheck sees (check.c, and cp.async at issue and landing)
 * looks its chunks up: a nonzero count is a race, reported with the writer, the offset and a
 * thread and wgmma that still read the chunk. Chunks are exact for what the warpgroup reads:
 * the descriptors' core matrices and swizzle atoms cover whole 16-byte chunks.
 */
#include "emu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SHIFT 4 /* 16-byte chunks */

static uint32_t chunks_of(uint32_t shared_bytes) { return (shared_bytes >> CHUNK_SHIFT) + 1; }

bool kiln_emu_wgmma_reads_init(EmuWorker *w) {
  if (!(w->cfg.checks & KILN_EMU_CHECK_RACE)) return true;
  uint32_t n = chunks_of(w->cfg.shared_bytes);
  w->wg_pending = calloc(n, sizeof *w->wg_pending);
  w->wg_stamp = calloc(n, sizeof *w->wg_stamp);
  return w->wg_pending && w->wg_stamp;
}

void kiln_emu_wgmma_reads_reset(EmuWorker *w) {
  if (!w->wg_pending || w->wg_pending_total == 0) return;
  memset(w->wg_pending, 0, chunks_of(w->cfg.shared_bytes) * sizeof *w->wg_pending);
  w->wg_pending_total = 0;
}

/* Grows *buf (elements of `size` bytes) to hold `need`; false when out of memory. */
static bool reserve(void **buf, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return true;
  size_t cap2 = *cap ? *cap : 16;
  while (cap2 < need) cap2 *= 2;
  void *grown = realloc(*buf, cap2 * size);
  if (!grown) return false;
  *buf = grown;
  *cap = cap2;
  return true;
}

void kiln_emu_wgmma_reads_begin(EmuWorker *w, EmuFiber *f, uint32_t max_chunks) {
  f->wg_issued++;
  if (!w->wg_pending) return;
  bool ok = reserve((void **)&f->wg_reads, &f->cap_wg_reads, f->n_wg_reads + 1, sizeof(EmuWgRead));
  ok = ok && reserve((void **)&f->wg_chunks, &f->cap_wg_chunks, f->n_wg_chunks + max_chunks,
                     sizeof(uint32_t));
  if (!ok)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_OUT_OF_MEMORY,
                  "wgmma: out of memory for racecheck's record of its pending reads");
  uint32_t at = (uint32_t)f->n_wg_chunks;
  f->wg_reads[f->n_wg_reads++] = (EmuWgRead){f->wg_issued, EMU_GROUP_OPEN, at, at};
  if (++w->wg_stamp_gen == 0) { /* after 2^32 wgmmas: old stamps could match again */
    memset(w->wg_stamp, 0, chunks_of(w->cfg.shared_bytes) * sizeof *w->wg_stamp);
    w->wg_stamp_gen = 1;
  }
}

void kiln_emu_wgmma_read_note(EmuWorker *w, EmuFiber *f, uint32_t off, bool b_operand) {
  if (!w->wg_pending) return;
  uint32_t c = off >> CHUNK_SHIFT; /* an element is 2 bytes at an even offset: one chunk */
  if (w->wg_stamp[c] == w->wg_stamp_gen) return;
  w->wg_stamp[c] = w->wg_stamp_gen;
  w->wg_pending[c]++;
  w->wg_pending_total++;
  f->wg_chunks[f->n_wg_chunks++] = c | (b_operand ? EMU_WG_CHUNK_B : 0);
  f->wg_reads[f->n_wg_reads - 1].end++;
}

/* Retires the fiber's first `count` records: their chunks leave the counts. */
static void retire_prefix(EmuWorker *w, EmuFiber *f, size_t count) {
  if (count == 0) return;
  size_t cut = count < f->n_wg_reads ? f->wg_reads[count].begin : f->n_wg_chunks;
  for (size_t i = 0; i < cut; i++) w->wg_pending[f->wg_chunks[i] & ~EMU_WG_CHUNK_B]--;
  w->wg_pending_total -= cut;
  memmove(f->wg_chunks, f->wg_chunks + cut, (f->n_wg_chunks - cut) * sizeof *f->wg_chunks);
  f->n_wg_chunks -= cut;
  memmove(f->wg_reads, f->wg_reads + count, (f->n_wg_reads - count) * sizeof *f->wg_reads);
  f->n_wg_reads -= count;
  for (size_t i = 0; i < f->n_wg_reads; i++) {
    f->wg_reads[i].begin -= (uint32_t)cut;
    f->wg_reads[i].end -= (uint32_t)cut;
  }
}

void kiln_emu_wgmma_reads_drop(EmuWorker *w, EmuFiber *f) {
  if (w->wg_pending) retire_prefix(w, f, f->n_wg_reads);
}

void kiln_emu_wgmma_commit(void) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  for (size_t i = f->n_wg_reads; i > 0 && f->wg_reads[i - 1].group == EMU_GROUP_OPEN; i--)
    f->wg_reads[i - 1].group = f->wg_next_group;
  f->wg_next_group++; /* an empty group still counts, as in the ISA */
}

void kiln_emu_wgmma_wait(uint32_t n) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  EmuWorker *w = kiln_emu_worker();
  if (!w->wg_pending) return;
  size_t due = 0;
  while (due < f->n_wg_reads && f->wg_reads[due].group != EMU_GROUP_OPEN &&
         (uint64_t)f->wg_reads[due].group + n < (uint64_t)f->wg_next_group)
    due++;
  retire_prefix(w, f, due);
}

/* A record of a thread of the block that holds chunk c, another thread than `writer` when one
 * does; false when none does. */
static bool find_reader(const EmuWorker *w, uint32_t c, uint32_t writer, const EmuFiber **who,
                        const EmuWgRead **r, bool *b_operand) {
  for (uint32_t k = 0; k <= w->nthreads; k++) {
    uint32_t t = k < w->nthreads ? k : writer; /* the writer itself last */
    if (k < w->nthreads && t == writer) continue;
    const EmuFiber *u = &w->fibers[t];
    for (size_t i = 0; i < u->n_wg_reads; i++)
      for (uint32_t j = u->wg_reads[i].begin; j < u->wg_reads[i].end; j++)
        if ((u->wg_chunks[j] & ~EMU_WG_CHUNK_B) == c) {
          *who = u;
          *r = &u->wg_reads[i];
          *b_operand = (u->wg_chunks[j] & EMU_WG_CHUNK_B) != 0;
          return true;
        }
  }
  return false;
}

static _Noreturn void report_pending(EmuWorker *w, EmuFiber *f, const char *what, uint32_t off,
                                     uint32_t c) {
  const EmuFiber *u = NULL;
  const EmuWgRead *r = NULL;
  bool b_operand = false;
  if (!find_reader(w, c, f->tid, &u, &r, &b_operand)) /* the counts and the records disagree */
    kiln_emu_fail(w, f, KILN_EMU_ERROR_RACE,
                  "racecheck: write during a pending wgmma read: %s at shared offset %u", what,
                  off);
  char group[48];
  if (r->group == EMU_GROUP_OPEN)
    snprintf(group, sizeof group, "not committed yet");
  else
    snprintf(group, sizeof group, "in its wgmma group %u", r->group);
  kiln_emu_fail(w, f, KILN_EMU_ERROR_RACE,
                "racecheck: write during a pending wgmma read: %s at shared offset %u, which "
                "thread %u (warp %u lane %u) reads as the %c operand of its wgmma #%u (%s), "
                "which no wgmma.wait_group of that thread has retired",
                what, off, u->tid, u->tid / KILN_EMU_WARP_SIZE, u->tid % KILN_EMU_WARP_SIZE,
                b_operand ? 'B' : 'A', r->seq, group);
}

void kiln_emu_wgmma_check_write(EmuWorker *w, EmuFiber *f, const void *p, size_t bytes,
                                const char *what) {
  if (w->wg_pending_total == 0 || bytes == 0) return;
  uint32_t start = (uint32_t)((const unsigned char *)p - w->shared);
  uint32_t last = (uint32_t)(start + bytes - 1);
  for (uint32_t c = start >> CHUNK_SHIFT; c <= last >> CHUNK_SHIFT; c++) {
    if (w->wg_pending[c] == 0) continue;
    uint32_t first = c << CHUNK_SHIFT;
    report_pending(w, f, what, first > start ? first : start, c);
  }
}
