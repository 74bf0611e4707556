/* cp_async.c — cp.async with commit and wait groups.
 *
 * Copies are only queued when issued and performed when a wait_group covers their group (or the
 * thread exits), so a kernel that reads shared memory before waiting sees the old bytes, as it
 * may on a GPU: a missing wait shows up as wrong numbers instead of passing by luck.
 */
#include "emu_internal.h"

#include <stdlib.h>
#include <string.h>

static void perform(EmuFiber *f, const EmuCopy *c) {
  EmuWorker *w = kiln_emu_worker();
  if (w) /* the bytes land now: a write by the issuing thread in this barrier interval */
    kiln_emu_check_shadow(w, f, c->dst, c->cp_size, KILN_EMU_ACCESS_STORE, "cp.async landing");
  if (c->src_size > 0) memcpy(c->dst, c->src, c->src_size);
  memset((unsigned char *)c->dst + c->src_size, 0, c->cp_size - c->src_size);
  if (w)
    kiln_emu_check_shadow(w, f, c->dst, c->cp_size, KILN_EMU_ACCESS_STORED, "cp.async landing");
}

/* keep_recent: the number of most recent committed groups left pending; `all` also performs
 * the copies not committed yet (at thread exit). Order of issue is kept. */
void kiln_emu_copies_flush(EmuFiber *f, bool all, uint32_t keep_recent) {
  size_t kept = 0;
  for (size_t i = 0; i < f->ncopies; i++) {
    const EmuCopy *c = &f->copies[i];
    bool due = all || (c->group != EMU_GROUP_OPEN &&
                       (uint64_t)c->group + keep_recent < (uint64_t)f->next_group);
    if (due)
      perform(f, c);
    else
      f->copies[kept++] = *c;
  }
  f->ncopies = kept;
}

void kiln_emu_cp_async(void *dst_shared, const void *src_global, uint32_t cp_size,
                       uint32_t src_size, uint32_t cache_global) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  EmuWorker *w = kiln_emu_worker();
  if (cp_size != 4 && cp_size != 8 && cp_size != 16)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP, "cp.async: size %u is not 4, 8 or 16", cp_size);
  if (cache_global && cp_size != 16)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP, "cp.async.cg: size %u, only 16 is allowed",
                  cp_size);
  if (src_size > cp_size)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP, "cp.async: src-size %u exceeds cp-size %u",
                  src_size, cp_size);
  kiln_emu_check_shared_range(w, f, dst_shared, cp_size, cp_size, "cp.async destination");
  if ((uintptr_t)src_global % cp_size != 0)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_MEMORY, "cp.async: source %p is not %u-byte aligned",
                  src_global, cp_size);
  if (src_size > 0) kiln_emu_check_global(w, f, src_global, src_size, cp_size, "cp.async source");
  /* the bytes may land any time from now to the wait: a pending wgmma read of them races */
  kiln_emu_wgmma_check_write(w, f, dst_shared, cp_size, "cp.async destination (at issue)");
  if (f->ncopies == f->cap_copies) {
    size_t cap = f->cap_copies ? 2 * f->cap_copies : 16;
    EmuCopy *grown = realloc(f->copies, cap * sizeof *grown);
    if (!grown)
      kiln_emu_fail(w, f, KILN_EMU_ERROR_OUT_OF_MEMORY, "cp.async: out of memory for the queue");
    f->copies = grown;
    f->cap_copies = cap;
  }
  f->copies[f->ncopies++] = (EmuCopy){dst_shared, src_global, cp_size, src_size, EMU_GROUP_OPEN};
}

void kiln_emu_cp_async_commit_group(void) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  for (size_t i = 0; i < f->ncopies; i++) {
    if (f->copies[i].group == EMU_GROUP_OPEN) f->copies[i].group = f->next_group;
  }
  f->next_group++; /* an empty group still counts, as in the ISA */
}

void kiln_emu_cp_async_wait_group(uint32_t n) {
  EmuFiber *f = kiln_emu_current();
  if (f) kiln_emu_copies_flush(f, false, n);
}

void kiln_emu_cp_async_wait_all(void) {
  kiln_emu_cp_async_commit_group();
  kiln_emu_cp_async_wait_group(0);
}
