/* wgmma.c — sm_90's wgmma.mma_async m64nNk16 (f16/bf16 operands) and m64nNk8 (tf32 operands:
 * f32 words read as tf32), f32 accumulators, A and B read from shared memory through 64-bit
 * matrix descriptors.
 *
 * How it works. No rendezvous: each thread reads from the arena the rows of A and the columns of
 * B its own accumulator fragment needs and updates only its own n / 2 registers (the program
 * has a barrier before the MMA, and the arena is not written while the warpgroup computes).
 * The instruction is asynchronous on the GPU; here the MMA completes at once, so its fence is
 * nothing and its accumulators are final at issue, but under racecheck the chunks it read stay
 * pending until the wgmma.wait_group that retires its group (wgmma_async.c), and a write to them
 * before then is a race. With tw = tid % 128, w = tw / 32, lane l,
 * g = l / 4, q = l % 4, register 4j + i (j < n / 8, i < 4) is D(16w + g + 8 (i / 2),
 * 8j + 2q + (i % 2)), accumulated in f32 in k order (0..15, or 0..7 for tf32) as mma.sync is
 * (matrix.c).  A tf32 element is the 4-byte word with its 13 low mantissa bits ignored
 * (truncation, kiln_emu_tf32_value); tf32 operands are K-major only (no transposes, no RS form).
 *
 * Descriptors (docs/emulator.md, "wgmma", has the table): start S, leading byte offset LBO and
 * stride byte offset SBO, each 14 bits of 16-byte units; base_offset (bits 49-51) must be 0;
 * bits 62-63 the swizzle mode: 0 none (the interleaved core matrices of 8 rows x 16 bytes),
 * 1 128-byte, 2 64-byte, 3 32-byte. S is the shared address, whose 18 bits the arena's
 * 2^18-byte alignment (launch.c) makes equal to the offset in the block's arena; every element
 * read is checked against the arena's size (MEMORY) and shown to racecheck and initcheck as
 * ldmatrix rows are.
 */
#include "emu_internal.h"

#include <string.h>

#define WGMMA_THREADS 128 /* a warpgroup: four consecutive warps, the first a multiple of 4 */

typedef struct WgmmaDesc {
  uint64_t raw;
  uint32_t start, lbo, sbo; /* bytes */
  uint32_t width;           /* swizzle width W in bytes (0: the interleaved layout) */
  uint32_t bits;            /* swizzle bits: 3, 2, 1 for W = 128, 64, 32 */
} WgmmaDesc;

static WgmmaDesc decode(EmuWorker *w, EmuFiber *f, uint64_t raw, char which) {
  uint32_t base_offset = (uint32_t)(raw >> 49) & 7;
  if (base_offset != 0)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP,
                  "wgmma: descriptor of %c 0x%016llx has base_offset %u (bits 49-51); the "
                  "emulator supports only 0",
                  which, (unsigned long long)raw, base_offset);
  static const uint32_t widths[4] = {0, 128, 64, 32}, bits[4] = {0, 3, 2, 1};
  uint32_t mode = (uint32_t)(raw >> 62);
  WgmmaDesc d = {.raw = raw,
                 .start = (uint32_t)(raw & 0x3fff) << 4,
                 .lbo = (uint32_t)((raw >> 16) & 0x3fff) << 4,
                 .sbo = (uint32_t)((raw >> 32) & 0x3fff) << 4,
                 .width = widths[mode],
                 .bits = bits[mode]};
  return d;
}

/* The operand types of kiln_emu_wgmma (KilnEmuWgmmaType). */
static uint32_t element_bytes(uint32_t type) { return type == KILN_EMU_WGMMA_TF32 ? 4 : 2; }
static uint32_t k_of(uint32_t type) { return type == KILN_EMU_WGMMA_TF32 ? 8 : 16; }

/* The arena offset of element (x, k) of `bytes` bytes: x the row m of A or the column n of B,
 * k < 16 (k < 8 for 4-byte tf32); trans 0 K-major, 1 MN-major (16-bit types only). The canonical
 * layouts of the PTX ISA, then the mode's swizzle (bits 7.. of the address XORed into the
 * 16-byte chunk bits 4..). A K-major row is the same 32 bytes for either size. */
static uint32_t element_offset(const WgmmaDesc *d, uint32_t trans, uint32_t bytes, uint32_t x,
                               uint32_t k) {
  uint32_t pre, W = d->width, kb = bytes * k; /* k's byte offset in a K-major row */
  if (!trans && W)
    pre = d->start + (x % 8) * W + (x / 8) * d->sbo + kb;
  else if (!trans)
    pre = d->start + (x % 8) * 16 + (x / 8) * d->sbo + kb % 16 + (kb / 16) * d->lbo;
  else if (W)
    pre = d->start + (x % (W / 2)) * 2 + (x / (W / 2)) * d->lbo + (k % 8) * W + (k / 8) * d->sbo;
  else
    pre = d->start + (x % 8) * 2 + (x / 8) * d->sbo + (k % 8) * 16 + (k / 8) * d->lbo;
  return pre ^ (((pre >> 7) & ((1u << d->bits) - 1)) << 4);
}

/* Element (x, k) of operand `which` as f32: checked against the arena, shown to the checkers. */
static float read_element(EmuWorker *w, EmuFiber *f, const WgmmaDesc *d, char which, uint32_t trans,
                          uint32_t type, uint32_t x, uint32_t k) {
  uint32_t bytes = element_bytes(type), off = element_offset(d, trans, bytes, x, k);
  if ((uint64_t)off + bytes > w->cfg.shared_bytes)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_MEMORY,
                  "wgmma: %c element (%s %u, k %u) at shared offset %u is outside the %u-byte "
                  "arena (descriptor 0x%016llx)",
                  which, which == 'A' ? "m" : "n", x, k, off, w->cfg.shared_bytes,
                  (unsigned long long)d->raw);
  const unsigned char *p = w->shared + off;
  kiln_emu_wgmma_read_note(w, f, off, which == 'B');
  kiln_emu_check_shadow(w, f, p, bytes, KILN_EMU_ACCESS_LOAD,
                        which == 'A' ? "wgmma A element" : "wgmma B element");
  if (type == KILN_EMU_WGMMA_TF32) {
    uint32_t word;
    memcpy(&word, p, 4);
    return kiln_emu_tf32_value(word);
  }
  uint16_t h;
  memcpy(&h, p, 2);
  return type == KILN_EMU_WGMMA_BF16 ? kiln_emu_bf16_to_f32(h) : kiln_emu_f16_to_f32(h);
}

static void check_call(EmuWorker *w, EmuFiber *f, uint32_t n, uint32_t type, uint32_t trans_a,
                       uint32_t trans_b) {
  if (n < 8 || n > 256 || n % 8 != 0)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP, "wgmma: n = %u is not a multiple of 8 in 8..256",
                  n);
  if (type > KILN_EMU_WGMMA_TF32 || trans_a > 1 || trans_b > 1)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP,
                  "wgmma: type %u (0..2), trans_a %u, trans_b %u (0 or 1)", type, trans_a, trans_b);
  if (type == KILN_EMU_WGMMA_TF32 && (trans_a || trans_b))
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP,
                  "wgmma: tf32 operands are K-major only (trans_a %u, trans_b %u)", trans_a,
                  trans_b);
  if (w->nthreads % WGMMA_THREADS != 0)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP,
                  "wgmma: the block's %u threads are not whole warpgroups of 128", w->nthreads);
}

void kiln_emu_wgmma(float *acc, uint32_t n, uint32_t type, uint32_t trans_a, uint32_t trans_b,
                    uint64_t desc_a, uint64_t desc_b) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  EmuWorker *w = kiln_emu_worker();
  check_call(w, f, n, type, trans_a, trans_b);
  uint32_t K = k_of(type);
  WgmmaDesc da = decode(w, f, desc_a, 'A'), db = decode(w, f, desc_b, 'B');
  kiln_emu_wgmma_reads_begin(w, f, 32 + 4 * n); /* the elements it reads: chunks at most */
  uint32_t tw = f->tid % WGMMA_THREADS, warp = tw / KILN_EMU_WARP_SIZE;
  uint32_t lane = tw % KILN_EMU_WARP_SIZE, g = lane / 4, q = lane % 4;
  float a[2][16], b[2][16]; /* this thread's two rows of A; one n8 block's two columns of B */
  for (uint32_t h = 0; h < 2; h++)
    for (uint32_t k = 0; k < K; k++)
      a[h][k] = read_element(w, f, &da, 'A', trans_a, type, 16 * warp + g + 8 * h, k);
  for (uint32_t j = 0; j < n / 8; j++) {
    for (uint32_t c = 0; c < 2; c++)
      for (uint32_t k = 0; k < K; k++)
        b[c][k] = read_element(w, f, &db, 'B', trans_b, type, 8 * j + 2 * q + c, k);
    for (uint32_t i = 0; i < 4; i++) {
      float sum = acc[4 * j + i];
      for (uint32_t k = 0; k < K; k++)
        sum += a[i / 2][k] * b[i % 2][k]; /* products of 16-bit / tf32 values are exact in f32 */
      acc[4 * j + i] = sum;
    }
  }
}

/* ---- the RS form: A from registers ---------------------------------------------------------
 *
 * A (64 x 16, K-major) comes in registers: warp w of the warpgroup holds rows 16w .. 16w + 15 in
 * mma.sync's m16n8k16 A fragment (matrix.c): lane q of a quad holds, in registers 0..3, columns
 * 2q, 2q + 1 of rows g and g + 8, then columns 2q + 8, 2q + 9 of the same rows (the low half the
 * first column).  A thread's accumulators need its rows g and g + 8 for all 16 k, which the four
 * lanes of its quad hold between them: so the warp meets (a collective, as mma.sync does) and
 * each lane receives its quad's 16 registers; then, as in the SS form, each thread reads B
 * through its descriptor (those reads pending for racecheck until their wait) and updates only
 * its own registers. */

/* Every lane receives the registers of the four lanes of its quad, lane by lane. */
static void rs_gather_quads(EmuFiber *warp, uint32_t mask, uint32_t sub) {
  (void)mask;
  (void)sub;
  for (uint32_t lane = 0; lane < KILN_EMU_WARP_SIZE; lane++)
    for (uint32_t q = 0; q < 4; q++)
      memcpy(warp[lane].coll.quad + 4 * q, warp[lane / 4 * 4 + q].coll.in, 4 * sizeof(uint32_t));
}

/* Element (row g + 8h of the warp's 16, column k) of A out of the quad's registers. */
static float rs_element(const uint32_t quad[16], uint32_t bf16, uint32_t h, uint32_t k) {
  uint32_t reg = quad[4 * ((k % 8) / 2) + 2 * (k / 8) + h];
  uint16_t bits = (uint16_t)(reg >> (16 * (k % 2)));
  return bf16 ? kiln_emu_bf16_to_f32(bits) : kiln_emu_f16_to_f32(bits);
}

/* acc += the thread's two rows a of A times B (n columns through db), in f32 in k order. */
static void rs_multiply(EmuWorker *w, EmuFiber *f, const WgmmaDesc *db, uint32_t n, uint32_t bf16,
                        uint32_t trans_b, const float a[2][16], float *acc) {
  uint32_t q = f->tid % KILN_EMU_WARP_SIZE % 4;
  float b[2][16]; /* one n8 block's two columns of B */
  for (uint32_t j = 0; j < n / 8; j++) {
    for (uint32_t c = 0; c < 2; c++)
      for (uint32_t k = 0; k < 16; k++)
        b[c][k] = read_element(w, f, db, 'B', trans_b, bf16, 8 * j + 2 * q + c, k);
    for (uint32_t i = 0; i < 4; i++) {
      float sum = acc[4 * j + i];
      for (uint32_t k = 0; k < 16; k++)
        sum += a[i / 2][k] * b[i % 2][k]; /* products of 16-bit floats are exact in f32 */
      acc[4 * j + i] = sum;
    }
  }
}

void kiln_emu_wgmma_rs(float *acc, uint32_t n, uint32_t bf16, uint32_t trans_b, uint32_t a0,
                       uint32_t a1, uint32_t a2, uint32_t a3, uint64_t desc_b) {
  EmuFiber *f = kiln_emu_current();
  if (!f) return;
  EmuWorker *w = kiln_emu_worker();
  check_call(w, f, n, bf16, 0, trans_b);
  if (bf16 > KILN_EMU_WGMMA_BF16)
    kiln_emu_fail(w, f, KILN_EMU_ERROR_INVALID_OP, "wgmma: no RS form for tf32 (type %u)", bf16);
  WgmmaDesc db = decode(w, f, desc_b, 'B');
  uint32_t quad[16];
  const uint32_t in[4] = {a0, a1, a2, a3};
  memcpy(f->coll.in, in, sizeof in);
  f->coll.quad = quad;
  /* lanes that disagree on the shape or the types never meet: the launch reports the hang */
  kiln_emu_collective(w, f, EMU_COLL_WGMMA_RS, n << 2 | bf16 << 1 | trans_b, 0xffffffffu,
                      rs_gather_quads);
  f->coll.quad = NULL;
  /* after the rendezvous: nothing may switch fibers between the record's opening and its reads */
  kiln_emu_wgmma_reads_begin(w, f, 4 * n); /* B's elements: chunks at most */
  float a[2][16];                          /* this thread's rows g and g + 8 of its warp's 16 */
  for (uint32_t h = 0; h < 2; h++)
    for (uint32_t k = 0; k < 16; k++) a[h][k] = rs_element(quad, bf16, h, k);
  rs_multiply(w, f, &db, n, bf16, trans_b, a, acc);
}
