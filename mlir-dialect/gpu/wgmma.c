/* wgmma.c - the inline PTX of sm_90's warpgroup MMA (wgmma.mma_async), written and read here.
 *
 * LLVM 19's NVPTX back end has no wgmma intrinsic the dialect reaches, so the dot of f16/bf16
 * tiles on sm_90 is inline PTX.  The lowering writes the text with kiln_gpu_wgmma_ptx and the
 * emu rewrite (emu_lower.c) recognizes it with kiln_gpu_wgmma_parse; both live in this one file
 * so that what is emitted is exactly what is recognized.  The parser reads the four parameters
 * out of the text, writes the text again from them and compares, so anything the writer would
 * not have produced (another operand numbering, a scale, a missing brace) is refused.
 *
 * The MMA is m64nNk16 with f32 accumulators, A and B both from shared-memory descriptors:
 *   {\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n
 *    wgmma.mma_async.sync.aligned.m64n<N>k16.f32.<T>.<T> {$0, ..., $<R-1>}, $<2R>, $<2R+1>,
 *    p, 1, 1, <TA>, <TB>;\n}
 * with R = N / 2 accumulator registers tied to operands R..2R-1 (constraints "=f" x R, "0".."R-1",
 * "l,l"), the scale-d predicate p always true (D = A B + D), scales of A and B 1, and TA / TB the
 * immediate transposes (0: K-major, 1: MN-major).  The emulator's semantics of the instruction
 * are in docs/emulator.md ("wgmma").
 *
 * The RS form (A from registers, B from a descriptor) has its own writer and parser:
 *   ... {$0, ..., $<R-1>}, {$<2R>, $<2R+1>, $<2R+2>, $<2R+3>}, $<2R+4>, p, 1, 1, <TB>;\n}
 * with four 32-bit A registers "r" (two 16-bit elements each, the m16n8k16 A fragment of the
 * warp's 16 rows) and B's descriptor "l"; A in registers is always K-major, so the text has no
 * imm-trans-a.
 *
 * The tf32 form (an f32 dot with the tf32 flag) is m64nNk8, A and B from descriptors, and has
 * no immediate transposes at all: the PTX ISA takes tf32 operands K-major only.
 *   ... m64n<N>k8.f32.tf32.tf32 {$0, ..., $<R-1>}, $<2R>, $<2R+1>, p, 1, 1;\n}
 * with the SS form's constraints.
 *
 * Each form has a variant whose scale-d predicate is false (D = A B: the accumulator's registers
 * are not read), the head's setp written "setp.eq.u32 p, 1, 0;" (kiln_gpu_wgmma_set_zero_d): a
 * dot whose accumulator starts at zero takes it on its first k step and passes its registers
 * undefined, where zeroing them took one move each (attention's S and dP, every KV block). */
#include "gpu_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The text up to N, and the separator from N to the element type. */
#define WGMMA_HEAD    "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n"
#define WGMMA_LONGEST 2048 /* the n = 256 text is about 760 characters */
/* The scale-d predicate's setp in the head, and its form that makes p false (D = A B). */
#define WGMMA_SCALE_D_ON  "setp.eq.u32 p, 1, 1;"
#define WGMMA_SCALE_D_OFF "setp.eq.u32 p, 1, 0;"

static bool wgmma_args_ok(int n, int trans_a, int trans_b) {
  return n >= 8 && n <= 256 && n % 8 == 0 && (trans_a == 0 || trans_a == 1) &&
         (trans_b == 0 || trans_b == 1);
}

/* snprintf onto the end of buf (*len so far); false once it no longer fits. */
static bool put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool put(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
  if (*len >= cap) return false;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf + *len, cap - *len, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= cap - *len) {
    *len = cap;
    return false;
  }
  *len += (size_t)k;
  return true;
}

int kiln_gpu_wgmma_ptx(char *buf, size_t cap, int n, bool bf16, int trans_a, int trans_b) {
  if (!buf || cap == 0 || !wgmma_args_ok(n, trans_a, trans_b)) return -1;
  const char *t = bf16 ? "bf16" : "f16";
  int regs = n / 2;
  size_t len = 0;
  bool ok = put(buf, cap, &len, WGMMA_HEAD "%dk16.f32.%s.%s {", n, t, t);
  for (int i = 0; ok && i < regs; i++) ok = put(buf, cap, &len, "%s$%d", i ? ", " : "", i);
  if (ok)
    ok = put(buf, cap, &len, "}, $%d, $%d, p, 1, 1, %d, %d;\n}", 2 * regs, 2 * regs + 1, trans_a,
             trans_b);
  return ok ? (int)len : -1;
}

/* The accumulator list of the MMA text, "{$0, ..., $<regs-1>}". */
static bool put_accumulators(char *buf, size_t cap, size_t *len, int regs) {
  bool ok = put(buf, cap, len, "{");
  for (int i = 0; ok && i < regs; i++) ok = put(buf, cap, len, "%s$%d", i ? ", " : "", i);
  return ok && put(buf, cap, len, "}");
}

int kiln_gpu_wgmma_rs_ptx(char *buf, size_t cap, int n, bool bf16, int trans_b) {
  if (!buf || cap == 0 || !wgmma_args_ok(n, 0, trans_b)) return -1;
  const char *t = bf16 ? "bf16" : "f16";
  int regs = n / 2, a = 2 * regs;
  size_t len = 0;
  bool ok = put(buf, cap, &len, WGMMA_HEAD "%dk16.f32.%s.%s ", n, t, t) &&
            put_accumulators(buf, cap, &len, regs) &&
            put(buf, cap, &len, ", {$%d, $%d, $%d, $%d}, $%d, p, 1, 1, %d;\n}", a, a + 1, a + 2,
                a + 3, a + 4, trans_b);
  return ok ? (int)len : -1;
}

int kiln_gpu_wgmma_tf32_ptx(char *buf, size_t cap, int n) {
  if (!buf || cap == 0 || !wgmma_args_ok(n, 0, 0)) return -1;
  int regs = n / 2;
  size_t len = 0;
  bool ok = put(buf, cap, &len, WGMMA_HEAD "%dk8.f32.tf32.tf32 ", n) &&
            put_accumulators(buf, cap, &len, regs) &&
            put(buf, cap, &len, ", $%d, $%d, p, 1, 1;\n}", 2 * regs, 2 * regs + 1);
  return ok ? (int)len : -1;
}

/* Where the scale-d setp sits in a text that starts as WGMMA_HEAD does up to it. */
static size_t scale_d_at(void) { return strstr(WGMMA_HEAD, WGMMA_SCALE_D_ON) - WGMMA_HEAD; }

bool kiln_gpu_wgmma_set_zero_d(char *text) {
  size_t at = scale_d_at(), n = strlen(WGMMA_SCALE_D_ON);
  if (!text || strncmp(text, WGMMA_HEAD, strlen(WGMMA_HEAD)) != 0) return false;
  memcpy(text + at, WGMMA_SCALE_D_OFF, n);
  return true;
}

bool kiln_gpu_wgmma_zero_d(const char *text, char *buf, size_t cap) {
  size_t at = scale_d_at(), n = strlen(WGMMA_SCALE_D_OFF), len = text ? strlen(text) : 0;
  if (!text || len < at + n || strncmp(text, WGMMA_HEAD, at) != 0 ||
      strncmp(text + at, WGMMA_SCALE_D_OFF, n) != 0 || len >= cap)
    return false;
  memcpy(buf, text, len + 1);
  memcpy(buf + at, WGMMA_SCALE_D_ON, n);
  return true;
}

bool kiln_gpu_wgmma_tf32_parse(const char *text, int *n) {
  size_t head = strlen(WGMMA_HEAD);
  int pn = 0;
  if (!text || strncmp(text, WGMMA_HEAD, head) != 0 || sscanf(text + head, "%dk8.", &pn) != 1)
    return false;
  char again[WGMMA_LONGEST];
  if (kiln_gpu_wgmma_tf32_ptx(again, sizeof again, pn) < 0 || strcmp(again, text) != 0)
    return false;
  *n = pn;
  return true;
}

/* What both forms' texts start and end with: N and the element type after the head, and the
 * last "p, 1, 1, " (the immediates follow it); false when text has neither. */
static bool parse_frame(const char *text, int *n, bool *bf16, const char **tail) {
  size_t head = strlen(WGMMA_HEAD);
  if (!text || strncmp(text, WGMMA_HEAD, head) != 0) return false;
  int used = 0;
  if (sscanf(text + head, "%dk16.f32.%n", n, &used) != 1 || used == 0) return false;
  *bf16 = strncmp(text + head + used, "bf16", 4) == 0;
  *tail = NULL;
  for (const char *s = strstr(text, "p, 1, 1, "); s; s = strstr(s + 1, "p, 1, 1, ")) *tail = s;
  return *tail != NULL;
}

bool kiln_gpu_wgmma_rs_parse(const char *text, int *n, bool *bf16, int *trans_b) {
  int pn = 0, tb = -1;
  bool pbf16 = false;
  const char *tail;
  if (!parse_frame(text, &pn, &pbf16, &tail) || sscanf(tail, "p, 1, 1, %d", &tb) != 1) return false;
  char again[WGMMA_LONGEST];
  if (kiln_gpu_wgmma_rs_ptx(again, sizeof again, pn, pbf16, tb) < 0 || strcmp(again, text) != 0)
    return false;
  *n = pn;
  *bf16 = pbf16;
  *trans_b = tb;
  return true;
}

bool kiln_gpu_wgmma_parse(const char *text, int *n, bool *bf16, int *trans_a, int *trans_b) {
  int pn = 0, ta = -1, tb = -1;
  bool pbf16 = false;
  const char *tail;
  if (!parse_frame(text, &pn, &pbf16, &tail) || sscanf(tail, "p, 1, 1, %d, %d;", &ta, &tb) != 2)
    return false;
  char again[WGMMA_LONGEST];
  if (kiln_gpu_wgmma_ptx(again, sizeof again, pn, pbf16, ta, tb) < 0 || strcmp(again, text) != 0)
    return false;
  *n = pn;
  *bf16 = pbf16;
  *trans_a = ta;
  *trans_b = tb;
  return true;
}

int kiln_gpu_wgmma_constraints(char *buf, size_t cap, int regs, bool descriptors) {
  if (!buf || cap == 0 || regs < 0) return -1;
  size_t len = 0;
  bool ok = put(buf, cap, &len, "%s", "");
  for (int i = 0; ok && i < regs; i++) ok = put(buf, cap, &len, "%s=f", i ? "," : "");
  for (int i = 0; ok && i < regs; i++) ok = put(buf, cap, &len, ",%d", i);
  if (ok && descriptors) ok = put(buf, cap, &len, "%s", regs ? ",l,l" : "l,l");
  return ok ? (int)len : -1;
}

int kiln_gpu_wgmma_rs_constraints(char *buf, size_t cap, int regs) {
  int len = kiln_gpu_wgmma_constraints(buf, cap, regs, false);
  if (len < 0) return -1;
  size_t at = (size_t)len;
  return put(buf, cap, &at, "%sr,r,r,r,l", regs ? "," : "") ? (int)at : -1;
}

bool kiln_gpu_wgmma_wait_parse(const char *text, int *k) {
  size_t head = strlen(KILN_GPU_WGMMA_WAIT_PTX);
  if (!text || strncmp(text, KILN_GPU_WGMMA_WAIT_PTX, head) != 0) return false;
  int pk = -1, used = 0;
  if (sscanf(text + head, "%d;%n", &pk, &used) != 1 || used == 0 || text[head + used] != '\0' ||
      pk < 0 || pk > 63 || text[head] < '0' || text[head] > '9')
    return false;
  *k = pk;
  return true;
}
