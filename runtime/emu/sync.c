/* sync.c — barriers and warp collectives (shfl, vote, redux, bar.warp.sync).
 *
 * A collective is a rendezvous: each lane stores its operands in its EmuCollective and blocks;
 * the last lane of the mask to arrive computes every lane's result, clears their arrival and
 * marks them runnable. Lanes only meet when kind, variant and mask agree; lanes that wait on
 * different collectives never complete, which the scheduler then reports as a deadlock.
 */
#include "emu_internal.h"

#include <stdatomic.h>
#include <string.h>

const char *kiln_emu_coll_name(EmuCollKind kind) {
  static const char *const names[EMU_COLL_COUNT] = {
      [EMU_COLL_SHFL] = "shfl.sync",
      [EMU_COLL_VOTE] = "vote.sync",
      [EMU_COLL_REDUX] = "redux.sync",
      [EMU_COLL_WARP_SYNC] = "bar.warp.sync",
      [EMU_COLL_MMA] = "mma.sync.aligned",
      [EMU_COLL_LDMATRIX] = "ldmatrix.sync.aligned",
      [EMU_COLL_STMATRIX] = "stmatrix.sync.aligned",
      [EMU_COLL_WGMMA_RS] = "wgmma.mma_async.sync.aligned (A from registers)",
  };
  return (unsigned)kind < EMU_COLL_COUNT ? names[kind] : "?";
}

void kiln_emu_check_shared_range(EmuWorker *w, EmuFiber *f, const void *p, size_t bytes,
                                 size_t align, const char *what) {
  uintptr_t lo = (uintptr_t)w->shared, a = (uintptr_t)p;
  if (a < lo || a - lo > w->cfg.shared_bytes || bytes > w->cfg.shared_bytes - (a - lo))
    kiln_emu_fail(w, f, KILN_EMU_ERROR_MEMORY,
                  "%s: %zu bytes at %p are outside shared memory (offset %td of %u bytes)", what,
                  bytes, p, (ptrdiff_t)(a - lo), w->cfg.shared_bytes);
  if (align > 1 && (a - lo) % align != 0)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_MEMORY, "%s: shared offset %td is not %zu-byte aligned",
                  what, (ptrdiff_t)(a - lo), align);
}

void kiln_emu_shared_check(const void *p, uint32_t bytes) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  size_t align = (bytes & (bytes - 1)) == 0 && bytes <= 16 ? bytes : 1;
  kiln_emu_check_shared_range(kiln_emu_worker(), f, p, bytes, align, "shared access");
}

void kiln_emu_membar(uint32_t level) {
  (void)level;
  atomic_thread_fence(memory_order_seq_cst);
}

/* ---- barriers ------------------------------------------------------------------------------ */

static void barrier_release(EmuWorker *w, uint32_t id) {
  for (uint32_t i = 0; i < w->nthreads; i++) {
    EmuFiber *f = &w->fibers[i];
    if (f->state == EMU_BLOCKED && f->wait == EMU_WAIT_BARRIER && f->barrier_id == id)
      f->state = EMU_RUNNABLE;
  }
  w->bars[id].arrived = 0;
  w->bars[id].expected = 0;
  w->epoch++; /* racecheck: accesses before and after are ordered */
}

static bool barrier_complete(const EmuWorker *w, uint32_t id) {
  const EmuBarrier *b = &w->bars[id];
  return b->arrived > 0 && b->arrived >= (b->expected ? b->expected : w->live);
}

void kiln_emu_barriers_on_exit(EmuWorker *w) {
  for (uint32_t id = 0; id < EMU_NUM_BARRIERS; id++) {
    if (w->bars[id].expected == 0 && barrier_complete(w, id)) barrier_release(w, id);
  }
}

void kiln_emu_barrier_sync(uint32_t id, uint32_t nthreads) {
  EmuWorker *w = kiln_emu_worker();
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  if (id >= EMU_NUM_BARRIERS)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP, "bar.sync: barrier id %u is not below 16", id);
  if (nthreads % KILN_EMU_WARP_SIZE != 0 || nthreads > w->nthreads)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP,
                  "bar.sync %u, %u: the thread count must be a multiple of 32 up to the block's %u",
                  id, nthreads, w->nthreads);
  EmuBarrier *b = &w->bars[id];
  if (b->arrived > 0 && b->expected != nthreads)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP,
                  "bar.sync %u: thread count %u differs from the %u of threads already waiting", id,
                  nthreads, b->expected);
  b->expected = nthreads;
  b->arrived++;
  if (barrier_complete(w, id)) {
    barrier_release(w, id);
    return;
  }
  f->barrier_id = id;
  kiln_emu_block(w, f, EMU_WAIT_BARRIER);
}

void kiln_emu_barrier0(void) { kiln_emu_barrier_sync(0, 0); }

/* ---- the rendezvous ------------------------------------------------------------------------ */

static bool all_arrived(const EmuFiber *warp, EmuCollKind kind, uint32_t sub, uint32_t mask) {
  for (uint32_t l = 0; l < KILN_EMU_WARP_SIZE; l++) {
    if (!(mask >> l & 1)) continue;
    const EmuCollective *c = &warp[l].coll;
    if (!c->arrived || c->kind != kind || c->sub != sub || c->mask != mask) return false;
  }
  return true;
}

void kiln_emu_collective(EmuWorker *w, EmuFiber *f, EmuCollKind kind, uint32_t sub, uint32_t mask,
                         EmuCollFn compute) {
  uint32_t lane = f->tid % KILN_EMU_WARP_SIZE;
  EmuFiber *warp = f - lane;
  const char *name = kiln_emu_coll_name(kind);
  if (!(mask >> lane & 1))
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP, "%s: mask 0x%08x does not hold the calling lane",
                  name, mask);
  for (uint32_t l = 0; l < KILN_EMU_WARP_SIZE; l++) {
    if (mask >> l & 1 && warp[l].state == EMU_EXITED)
      kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP,
                    "%s: mask 0x%08x holds lane %u, which has exited", name, mask, l);
  }
  f->coll.kind = kind;
  f->coll.sub = sub;
  f->coll.mask = mask;
  f->coll.arrived = true;
  if (!all_arrived(warp, kind, sub, mask)) {
    kiln_emu_block(w, f, EMU_WAIT_COLLECTIVE);
    return; /* the last lane computed our result and woke us */
  }
  compute(warp, mask, sub);
  for (uint32_t l = 0; l < KILN_EMU_WARP_SIZE; l++) {
    if (!(mask >> l & 1)) continue;
    warp[l].coll.arrived = false;
    if (&warp[l] != f) warp[l].state = EMU_RUNNABLE;
  }
}

/* ---- shfl.sync ----------------------------------------------------------------------------- */

/* The ISA's rule, per lane: c packs the clamp value (bits 0-4) and the segment mask (bits 8-12). */
static void shfl_compute(EmuFiber *warp, uint32_t mask, uint32_t mode) {
  for (uint32_t lane = 0; lane < KILN_EMU_WARP_SIZE; lane++) {
    if (!(mask >> lane & 1)) continue;
    EmuCollective *me = &warp[lane].coll;
    int32_t b = (int32_t)(me->in[1] & 31);
    int32_t cval = (int32_t)(me->in[2] & 31);
    int32_t seg = (int32_t)(me->in[2] >> 8 & 31);
    int32_t l = (int32_t)lane;
    int32_t max_lane = (l & seg) | (cval & ~seg);
    int32_t min_lane = l & seg;
    int32_t j;
    bool pval;
    switch (mode) {
    case KILN_EMU_SHFL_UP:
      j = l - b;
      pval = j >= max_lane;
      break;
    case KILN_EMU_SHFL_DOWN:
      j = l + b;
      pval = j <= max_lane;
      break;
    case KILN_EMU_SHFL_BFLY:
      j = l ^ b;
      pval = j <= max_lane;
      break;
    default:
      j = min_lane | (b & ~seg);
      pval = j <= max_lane;
      break;
    }
    if (!pval) j = l;
    /* A source outside mask is undefined in the ISA; 0 makes such reads visible in tests. */
    me->out[0] = mask >> j & 1 ? warp[j].coll.in[0] : 0;
    me->pred = pval;
  }
}

uint32_t kiln_emu_shfl_sync_i32(uint32_t mode, uint32_t mask, uint32_t a, uint32_t b, uint32_t c,
                                uint32_t *pred) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return 0;
  if (mode > KILN_EMU_SHFL_IDX)
    kiln_emu_fail(kiln_emu_worker(), f, KILN_EMU_ERROR_INVALID_OP, "shfl.sync: bad mode %u", mode);
  f->coll.in[0] = a;
  f->coll.in[1] = b;
  f->coll.in[2] = c;
  kiln_emu_collective(kiln_emu_worker(), f, EMU_COLL_SHFL, mode, mask, shfl_compute);
  if (pred) *pred = f->coll.pred;
  return f->coll.out[0];
}

float kiln_emu_shfl_sync_f32(uint32_t mode, uint32_t mask, float a, uint32_t b, uint32_t c,
                             uint32_t *pred) {
  uint32_t bits, r;
  float out;
  memcpy(&bits, &a, 4);
  r = kiln_emu_shfl_sync_i32(mode, mask, bits, b, c, pred);
  memcpy(&out, &r, 4);
  return out;
}

/* ---- vote, redux, bar.warp.sync ------------------------------------------------------------ */

static void vote_compute(EmuFiber *warp, uint32_t mask, uint32_t mode) {
  uint32_t ballot = 0;
  for (uint32_t l = 0; l < KILN_EMU_WARP_SIZE; l++) {
    if (mask >> l & 1 && warp[l].coll.in[0] != 0) ballot |= 1u << l;
  }
  uint32_t r;
  switch (mode) {
  case KILN_EMU_VOTE_ALL: r = ballot == mask; break;
  case KILN_EMU_VOTE_ANY: r = ballot != 0; break;
  case KILN_EMU_VOTE_UNI: r = ballot == 0 || ballot == mask; break;
  default: r = ballot; break;
  }
  for (uint32_t l = 0; l < KILN_EMU_WARP_SIZE; l++) {
    if (mask >> l & 1) warp[l].coll.out[0] = r;
  }
}

uint32_t kiln_emu_vote_sync(uint32_t mode, uint32_t mask, uint32_t pred) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return 0;
  if (mode > KILN_EMU_VOTE_BALLOT)
    kiln_emu_fail(kiln_emu_worker(), f, KILN_EMU_ERROR_INVALID_OP, "vote.sync: bad mode %u", mode);
  f->coll.in[0] = pred;
  kiln_emu_collective(kiln_emu_worker(), f, EMU_COLL_VOTE, mode, mask, vote_compute);
  return f->coll.out[0];
}

static uint32_t redux_step(uint32_t op, uint32_t acc, uint32_t v) {
  switch (op) {
  case KILN_EMU_REDUX_ADD: return acc + v;
  case KILN_EMU_REDUX_MIN: return (int32_t)v < (int32_t)acc ? v : acc;
  case KILN_EMU_REDUX_MAX: return (int32_t)v > (int32_t)acc ? v : acc;
  case KILN_EMU_REDUX_UMIN: return v < acc ? v : acc;
  case KILN_EMU_REDUX_UMAX: return v > acc ? v : acc;
  case KILN_EMU_REDUX_AND: return acc & v;
  case KILN_EMU_REDUX_OR: return acc | v;
  default: return acc ^ v;
  }
}

static void redux_compute(EmuFiber *warp, uint32_t mask, uint32_t op) {
  bool first = true;
  uint32_t acc = 0;
  for (uint32_t l = 0; l < KILN_EMU_WARP_SIZE; l++) {
    if (!(mask >> l & 1)) continue;
    acc = first ? warp[l].coll.in[0] : redux_step(op, acc, warp[l].coll.in[0]);
    first = false;
  }
  for (uint32_t l = 0; l < KILN_EMU_WARP_SIZE; l++) {
    if (mask >> l & 1) warp[l].coll.out[0] = acc;
  }
}

uint32_t kiln_emu_redux_sync(uint32_t op, uint32_t mask, uint32_t value) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return 0;
  if (op > KILN_EMU_REDUX_XOR)
    kiln_emu_fail(kiln_emu_worker(), f, KILN_EMU_ERROR_INVALID_OP, "redux.sync: bad op %u", op);
  f->coll.in[0] = value;
  kiln_emu_collective(kiln_emu_worker(), f, EMU_COLL_REDUX, op, mask, redux_compute);
  return f->coll.out[0];
}

/* racecheck: the warp's accesses before and after the bar.warp.sync are ordered. */
static void warp_synced(EmuFiber *warp, uint32_t mask, uint32_t sub) {
  (void)mask;
  (void)sub;
  EmuWorker *w = kiln_emu_worker();
  w->warp_epoch[warp->tid / KILN_EMU_WARP_SIZE]++;
}

void kiln_emu_bar_warp_sync(uint32_t mask) {
  EmuFiber *f = kiln_emu_current();
  if (f) kiln_emu_collective(kiln_emu_worker(), f, EMU_COLL_WARP_SYNC, 0, mask, warp_synced);
}
